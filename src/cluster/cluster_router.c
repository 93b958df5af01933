/*
 * The cluster routers: member groups (routing/member_group.h) whose
 * driver turns the cluster's MemberEvents into the routee set.
 *
 * The router subscribes itself to the cluster when it starts (and again
 * after a restart, when its set starts empty and the cluster replays its
 * members as Up events). Per member, by its address:
 *   Up          (with the role, if one is asked for; this node's own
 *               only without exclude_self) the actor at the path on it,
 *               resolved as actorc://<system>@<address><path> (this
 *               node's own resolves to the local actor), joins the set at
 *               its place by address;
 *   Unreachable it leaves the set at once, and is remembered;
 *   Reachable   it comes back, resolved afresh (the old connection may
 *               have been given up, and its refs with it);
 *   Down        it leaves the set and is forgotten.
 * The routees are not watched: membership decides the set, so a member
 * without an actor at the path stays in it, and its requests are
 * answered as undeliverable by that node, which a scatter shows as that
 * member's error instead of a timeout.
 *
 * For smallest-mailbox, the driver also keeps each member's last
 * published depth (depth.h) and what it routed there since; any routee
 * path, nested ones too, is watched on the member, where it is resolved.
 *
 * The table of members lives in the driver's user data and is touched
 * only in the router's turn (every hook runs there), so it needs no
 * lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actorc/cluster.h"
#include "cluster/cluster_internal.h"
#include "cluster/depth.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "routing/member_group.h"

typedef struct member_entry {
    char *address;
    char *system;
    ac_ref *routee; /* retained; NULL when it could not be resolved */
    bool in_set;    /* up and reachable */
    bool self;
    /* smallest-mailbox */
    int32_t depth;
    uint64_t depth_at_ns; /* 0: never reported */
    int32_t routed_since;
} member_entry;

typedef struct cluster_router {
    ac_cluster *cluster;
    char *path;
    char *role; /* NULL: every member */
    bool exclude_self;
    bool depths; /* smallest-mailbox: watch each member's depth */
    ac_ref *self; /* borrowed, between start and stop */
    member_entry *members;
    size_t n, cap;
} cluster_router;

/* ---- the member table ------------------------------------------------- */

static member_entry *entry_of(cluster_router *cr, const char *address)
{
    for (size_t i = 0; i < cr->n; i++)
        if (strcmp(cr->members[i].address, address) == 0)
            return &cr->members[i];
    return NULL;
}

static void entry_clear(member_entry *e)
{
    ac_ref_release(e->routee);
    free(e->address);
    free(e->system);
}

static member_entry *entry_add(ac_ctx *ctx, cluster_router *cr, const ac_member *m)
{
    if (cr->n == cr->cap) {
        size_t cap = cr->cap ? cr->cap * 2 : 8;
        member_entry *members = ac__realloc(cr->members, cap * sizeof *members);
        if (!members)
            goto oom;
        cr->members = members;
        cr->cap = cap;
    }
    member_entry *e = &cr->members[cr->n];
    *e = (member_entry){.address = ac__strdup(m->address),
                        .system = ac__strdup(m->system),
                        .self = m->self,
                        .depth = AC__DEPTH_UNKNOWN};
    if (!e->address || !e->system) {
        entry_clear(e);
        goto oom;
    }
    cr->n++;
    return e;
oom:
    ac_log_error(ctx, "member %s left out: out of memory", m->address);
    return NULL;
}

static void entry_forget(cluster_router *cr, member_entry *e)
{
    entry_clear(e);
    *e = cr->members[--cr->n];
}

/* ---- depths ----------------------------------------------------------- */

/* Does the routee on e need its depths published? Not this node's own
 * top-level one: it resolves to the local actor, whose depth the router
 * reads directly; a nested one resolves through the node, as a remote
 * ref would, so this node's publisher reports it too. */
static bool needs_publisher(const cluster_router *cr, const member_entry *e)
{
    return cr->depths && (!e->self || strchr(cr->path + 6, '/'));
}

static void tell_publisher(ac_ctx *ctx, cluster_router *cr, const member_entry *e, bool unwatch)
{
    if (!needs_publisher(cr, e))
        return;
    char path[512];
    snprintf(path, sizeof path, "actorc://%s@%s/user/%s", e->system, e->address,
             AC__DEPTH_PUBLISHER);
    ac_node *node = ac_system_node(ac_ctx_system(ctx));
    ac_ref *publisher = node ? ac_node_resolve(node, path) : NULL;
    ac_msg *m = publisher ? ac__depth_watch_new(cr->path, unwatch) : NULL;
    if (m)
        ac_tell(publisher, m, ac_self(ctx));
    else if (!unwatch)
        ac_log_warn(ctx, "the depths of %s%s will be unknown: %s", e->address, cr->path,
                    publisher ? "out of memory" : ac_last_error());
    ac_ref_release(publisher);
}

static void on_depth(cluster_router *cr, const ac__depth_report *r)
{
    member_entry *e = strcmp(r->path, cr->path) == 0 ? entry_of(cr, r->address) : NULL;
    if (!e)
        return; /* a member since gone, or another router's path */
    e->depth = r->depth;
    e->depth_at_ns = ac__now_ns();
    e->routed_since = 0;
}

static member_entry *entry_of_routee(cluster_router *cr, const ac_ref *routee)
{
    for (size_t i = 0; i < cr->n; i++)
        if (cr->members[i].routee == routee)
            return &cr->members[i];
    return NULL;
}

static int routee_depth(void *user, const ac_ref *routee)
{
    cluster_router *cr = user;
    const member_entry *e = entry_of_routee(cr, routee);
    if (!e || e->depth < 0 || !e->depth_at_ns ||
        ac__now_ns() - e->depth_at_ns > (uint64_t)AC__DEPTH_STALE_MS * 1000000ull)
        return -2; /* AC__MAILBOX_UNKNOWN */
    return e->depth + e->routed_since;
}

static void routee_routed(void *user, const ac_ref *routee)
{
    member_entry *e = entry_of_routee(user, routee);
    if (e && e->routed_since < INT32_MAX)
        e->routed_since++;
}

/* ---- member events ---------------------------------------------------- */

static bool wanted(const cluster_router *cr, const ac_member *m)
{
    if (m->self && cr->exclude_self)
        return false;
    return !cr->role || ac_member_has_role(m, cr->role);
}

/* The routee on member e, resolved afresh into e->routee. */
static bool resolve(ac_ctx *ctx, cluster_router *cr, member_entry *e)
{
    ac_node *node = ac_system_node(ac_ctx_system(ctx));
    char path[1024];
    snprintf(path, sizeof path, "actorc://%s@%s%s", e->system, e->address, cr->path);
    ac_ref *r = node ? ac_node_resolve(node, path) : NULL;
    if (!r) {
        ac_log_warn(ctx, "member %s left out: %s does not resolve (%s)", e->address, path,
                    node ? ac_last_error() : "this system has no node");
        return false;
    }
    ac_ref_release(e->routee);
    e->routee = r;
    return true;
}

static void join_set(ac_ctx *ctx, cluster_router *cr, member_entry *e)
{
    if (!resolve(ctx, cr, e))
        return;
    e->in_set = ac__member_group_add(ctx, e->routee, e->address);
    e->depth = AC__DEPTH_UNKNOWN;
    e->depth_at_ns = 0;
    if (e->in_set)
        ac_log_info(ctx, "routee %s joined; %zu routees", ac_ref_path(e->routee),
                    ac__member_group_size(ctx));
}

static void leave_set(ac_ctx *ctx, member_entry *e, const char *why)
{
    if (!e->in_set)
        return;
    e->in_set = false;
    (void)ac__member_group_remove(ctx, e->address);
    ac_log_info(ctx, "routee on %s left (%s); %zu routees", e->address, why,
                ac__member_group_size(ctx));
}

static void on_up(ac_ctx *ctx, cluster_router *cr, const ac_member *m)
{
    member_entry *e = entry_of(cr, m->address);
    if (!e)
        e = entry_add(ctx, cr, m);
    if (!e)
        return;
    join_set(ctx, cr, e);
    tell_publisher(ctx, cr, e, false);
}

static void on_event(ac_ctx *ctx, cluster_router *cr, const ac_member_event *ev)
{
    const ac_member *m = &ev->member;
    if (!wanted(cr, m))
        return;
    member_entry *e = entry_of(cr, m->address);
    switch (ev->kind) {
    case AC_MEMBER_EVENT_UP:
        on_up(ctx, cr, m);
        break;
    case AC_MEMBER_EVENT_UNREACHABLE:
        if (e)
            leave_set(ctx, e, "unreachable");
        break;
    case AC_MEMBER_EVENT_REACHABLE:
        if (e && !e->in_set) {
            join_set(ctx, cr, e);
            /* A lost connection ended the publisher's watch of this
             * router: ask again (a watch it still has is kept once). */
            tell_publisher(ctx, cr, e, false);
        }
        break;
    case AC_MEMBER_EVENT_DOWN:
        if (e) {
            leave_set(ctx, e, "down");
            entry_forget(cr, e);
        }
        break;
    }
}

/* ---- the hooks -------------------------------------------------------- */

static void router_start(ac_ctx *ctx, void *user)
{
    cluster_router *cr = user;
    cr->self = ac_self(ctx);
    ac_system *sys = ac_ctx_system(ctx);
    /* The Depth reports must decode here (the publisher on this node is
     * the other nodes' business, but is started too if missing). */
    if (cr->depths && ac_system_node(sys) &&
        ac__depth_publisher_start(sys, ac_system_node(sys)) != AC_OK)
        ac_log_warn(ctx, "depth reports cannot be received (%s); other members' depths will "
                    "be unknown", ac_last_error());
    ac_status st = ac_cluster_subscribe(cr->cluster, cr->self);
    if (st != AC_OK)
        ac_log_warn(ctx, "cluster router could not subscribe to the members (%s: %s); it has "
                    "no routees", ac_strerror(st), ac_last_error());
}

static bool router_hook(ac_ctx *ctx, void *user, ac_msg *msg)
{
    cluster_router *cr = user;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev) {
        on_event(ctx, cr, ev);
        return true;
    }
    ac__depth_report r;
    if (ac__depth_report_read(msg, &r)) {
        on_depth(cr, &r);
        return true;
    }
    return false;
}

static void router_stop(ac_ctx *ctx, void *user)
{
    cluster_router *cr = user;
    (void)ac_cluster_unsubscribe(cr->cluster, ac_self(ctx));
    for (size_t i = 0; i < cr->n; i++) {
        tell_publisher(ctx, cr, &cr->members[i], true);
        entry_clear(&cr->members[i]);
    }
    cr->n = 0;
    cr->self = NULL;
}

static void router_free(void *user)
{
    cluster_router *cr = user;
    for (size_t i = 0; i < cr->n; i++)
        entry_clear(&cr->members[i]);
    free(cr->members);
    free(cr->path);
    free(cr->role);
    free(cr);
}

static const ac__member_group_ops cluster_ops = {
    .start = router_start,
    .receive = router_hook,
    .stop = router_stop,
    .free = router_free,
    .depth = routee_depth,
    .routed = routee_routed,
};

/* ---- the factories ---------------------------------------------------- */

static bool name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

static ac_status check_role(const char *fn, const char *role)
{
    if (ac__cluster_name_ok(role))
        return AC_OK;
    return ac__fail(AC_EINVAL, "%s: role \"%s\" is not a role name; use [A-Za-z0-9._-]{1,64}, or "
                               "NULL for every member",
                    fn, role);
}

/* "/user/<name>(/<name>)*", each name of the characters an actor name
 * takes here. */
static ac_status check_path(const char *fn, const char *path)
{
    if (!path)
        return ac__fail(AC_EINVAL, "%s: options->path is NULL; give the routees' path, such as "
                                   "\"/user/replica\"",
                        fn);
    bool ok = strncmp(path, "/user/", 6) == 0 && path[6] != '\0' && strlen(path) < 256;
    for (const char *p = path + 6; ok && *p; p++)
        ok = name_char(*p) || (*p == '/' && p[-1] != '/' && p[1] != '\0');
    if (ok)
        return AC_OK;
    return ac__fail(AC_EINVAL,
                    "%s: path \"%s\" is not an actor path under /user (such as \"/user/replica\")",
                    fn, path);
}

static ac_status check_common(const char *fn, ac_cluster *cluster,
                              const ac_cluster_router_options *o)
{
    if (!cluster)
        return ac__fail(AC_EINVAL, "%s: cluster is NULL", fn);
    if (!o)
        return ac__fail(AC_EINVAL, "%s: options is NULL; options->path is required", fn);
    ac_status st = check_path(fn, o->path);
    if (st == AC_OK && o->role)
        st = check_role(fn, o->role);
    if (st != AC_OK)
        return st;
    ac_cluster_status status;
    if (ac_cluster_status_get(cluster, &status) == AC_OK && status.state == AC_CLUSTER_LEFT)
        return ac__fail(AC_ESTOPPED, "%s: the cluster has been left", fn);
    return AC_OK;
}

static cluster_router *driver_new(const char *fn, ac_cluster *cluster,
                                  const ac_cluster_router_options *o, bool depths)
{
    cluster_router *cr = ac__calloc(1, sizeof *cr);
    if (cr) {
        cr->cluster = cluster;
        cr->exclude_self = o->exclude_self;
        cr->depths = depths;
        cr->path = ac__strdup(o->path);
        cr->role = o->role ? ac__strdup(o->role) : NULL;
    }
    if (!cr || !cr->path || (o->role && !cr->role)) {
        if (cr)
            router_free(cr);
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    }
    return cr;
}

static ac_props *make(ac__member_group_spec spec, ac_cluster *cluster,
                      const ac_cluster_router_options *o)
{
    ac_clear_error();
    if (check_common(spec.fn, cluster, o) != AC_OK)
        return NULL;
    bool depths = spec.strategy == AC__MEMBER_SMALLEST_MAILBOX;
    spec.ops = &cluster_ops;
    spec.breaker = o->breaker;
    spec.user = driver_new(spec.fn, cluster, o, depths);
    if (!spec.user)
        return NULL;
    return ac__member_group_props(&spec);
}

ac_props *ac_cluster_router_round_robin(ac_cluster *cluster, const ac_cluster_router_options *o)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_round_robin",
                                        .strategy = AC__MEMBER_ROUND_ROBIN},
                cluster, o);
}

ac_props *ac_cluster_router_random(ac_cluster *cluster, const ac_cluster_router_options *o)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_random",
                                        .strategy = AC__MEMBER_RANDOM},
                cluster, o);
}

ac_props *ac_cluster_router_broadcast(ac_cluster *cluster, const ac_cluster_router_options *o)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_broadcast",
                                        .strategy = AC__MEMBER_BROADCAST},
                cluster, o);
}

ac_props *ac_cluster_router_smallest_mailbox(ac_cluster *cluster,
                                             const ac_cluster_router_options *o)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_smallest_mailbox",
                                        .strategy = AC__MEMBER_SMALLEST_MAILBOX},
                cluster, o);
}

ac_props *ac_cluster_router_consistent_hashing(ac_cluster *cluster,
                                               const ac_cluster_router_options *o,
                                               ac_hash_key_fn key, void *user)
{
    static const char fn[] = "ac_cluster_router_consistent_hashing";
    if (!key) {
        ac_clear_error();
        return ac__fail_null(AC_EINVAL, "%s: key is NULL", fn);
    }
    return make((ac__member_group_spec){.fn = fn,
                                        .strategy = AC__MEMBER_CONSISTENT_HASHING,
                                        .key = key,
                                        .key_user = user},
                cluster, o);
}

ac_props *ac_cluster_router_scatter_gather_first_completed(ac_cluster *cluster,
                                                           const ac_cluster_router_options *o,
                                                           const ac_scatter_gather_options *sg)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_scatter_gather_first_completed",
                                        .strategy = AC__MEMBER_SCATTER_GATHER,
                                        .scatter = sg},
                cluster, o);
}

ac_props *ac_cluster_router_hedged(ac_cluster *cluster, const ac_cluster_router_options *o,
                                   const ac_hedged_options *hedge)
{
    return make((ac__member_group_spec){.fn = "ac_cluster_router_hedged",
                                        .strategy = AC__MEMBER_HEDGED,
                                        .hedged = hedge},
                cluster, o);
}
