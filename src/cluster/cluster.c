/*
 * The cluster API (cluster.h, the membership half): joining and leaving,
 * the options and their checks, the hooks the remote layer calls, and
 * what any thread reads (members, status, subscriptions).
 *
 * A joined system holds its cluster as a part (extension.h), so that it
 * lives until the system's termination: the part's stop clears the
 * hooks, stops the provider and drops every ref the cluster holds while
 * the system can still take them back; its free frees the rest. Hooks
 * and provider threads reach the actor through `actor` under the lock,
 * which the stop clears, so nothing tells it after that.
 *
 * The provider (provider.h) is chosen from the options and reached only
 * through its ops: its options checked, created and started at join,
 * stopped once (leave or the part's stop, whichever comes first), freed
 * with the cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster_internal.h"
#include "cluster/depth.h"

#define PART_KEY "actorc.cluster"

/* ---- options ------------------------------------------------------------- */

/* Split-brain resolution: the static provider's (the others have their
 * own answer to a partition: etcd's lease, DNS's records). */
static ac_status check_downing(const ac_cluster_options *o, const ac__provider_ops *provider)
{
    if ((unsigned)o->downing > AC_CLUSTER_DOWNING_OFF)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.downing %d is not a downing "
                                   "strategy (0..%d)", (int)o->downing, AC_CLUSTER_DOWNING_OFF);
    if (o->stable_after_ms && (o->stable_after_ms < 100 || o->stable_after_ms > 600000))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.stable_after_ms %d is not 0 or "
                                   "100..600000", o->stable_after_ms);
    bool quorum = o->downing == AC_CLUSTER_DOWNING_STATIC_QUORUM;
    if (quorum && (o->quorum_size < 1 || o->quorum_size > 1024))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.quorum_size %zu is not 1..1024 "
                                   "(static-quorum needs one)", o->quorum_size);
    if (!quorum && o->quorum_size)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.quorum_size is set but "
                                   "options.downing is not static-quorum");
    if (provider->listed_only &&
        (o->downing != AC_CLUSTER_DOWNING_KEEP_MAJORITY || o->stable_after_ms))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s applies to the static provider "
                                   "only (%s decides membership itself)",
                        o->stable_after_ms ? "stable_after_ms" : "downing", provider->name);
    return AC_OK;
}

static ac_status check_options(const ac_cluster_options *o, const ac__provider_ops **provider,
                               const void **provider_options)
{
    if (!o->name || !ac__cluster_name_ok(o->name))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.name \"%.80s\" is not "
                                   "[A-Za-z0-9._-]{1,64}", o->name ? o->name : "(null)");
    if (ac__provider_check_list(o->roles, o->roles_count, "roles", AC__CLUSTER_MAX_ROLES,
                                ac__cluster_name_ok, "[A-Za-z0-9._-]{1,64}") != AC_OK)
        return ac_last_status();
    if (o->retry_initial_ms < 0 || o->retry_max_ms < 0 || o->retry_initial_ms > 600000 ||
        o->retry_max_ms > 600000)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s is not 0..600000",
                        o->retry_initial_ms < 0 || o->retry_initial_ms > 600000 ? "retry_initial_ms"
                                                                                : "retry_max_ms");
    if (o->retry_initial_ms && o->retry_max_ms && o->retry_max_ms < o->retry_initial_ms)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.retry_max_ms %d is below "
                                   "options.retry_initial_ms %d", o->retry_max_ms,
                        o->retry_initial_ms);
    if (!(*provider = ac__provider_choose(o, provider_options)))
        return ac_last_status();
    if (check_downing(o, *provider) != AC_OK)
        return ac_last_status();
    return (*provider)->check(*provider_options);
}

/* ---- the cluster's memory ----------------------------------------------- */

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static bool copy_strings(char ***dst, const char *const *src, size_t n)
{
    *dst = NULL;
    if (!n)
        return true;
    char **v = ac__calloc(n, sizeof *v);
    if (!v)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = ac__strdup(src[i]))) {
            free_strings(v, n);
            return false;
        }
    *dst = v;
    return true;
}

static void cluster_free(ac_cluster *c)
{
    if (!c)
        return;
    ac_observe_remove(c->observed);
    for (size_t i = 0; i < c->member_count; i++)
        ac__rec_free(c->members[i]);
    free(c->members);
    if (c->provider)
        c->provider->free(c->provider_state);
    ac__listings_free(c);
    free(c->active);
    free(c->subs);
    free(c->view.members);
    free(c->card_text);
    free(c->card_leaving);
    free(c->card_downed);
    free(c->name);
    free_strings(c->roles, c->roles_count);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static bool copy_options(ac_cluster *c, const ac_cluster_options *o)
{
    c->retry_initial_ms = o->retry_initial_ms ? o->retry_initial_ms : 100;
    c->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : 5000;
    if (c->retry_max_ms < c->retry_initial_ms)
        c->retry_max_ms = c->retry_initial_ms;
    c->downing = o->downing;
    c->stable_after_ms = o->stable_after_ms;
    c->quorum_size = o->quorum_size;
    c->roles_count = o->roles_count;
    c->name = ac__strdup(o->name);
    return c->name && copy_strings(&c->roles, o->roles, o->roles_count);
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* This node's card, and its three texts. */
static bool make_card(ac_cluster *c)
{
    ac__card *k = &c->card;
    snprintf(k->cluster, sizeof k->cluster, "%s", c->name);
    snprintf(k->system, sizeof k->system, "%s", ac_system_name(c->system));
    snprintf(k->address, sizeof k->address, "%s", ac_node_address(c->node));
    k->incarnation = ac_node_incarnation(c->node);
    k->up_since = wall_ms();
    k->roles_count = c->roles_count;
    for (size_t i = 0; i < c->roles_count; i++)
        snprintf(k->roles[i], sizeof k->roles[i], "%s", c->roles[i]);
    c->card_text = ac__card_encode(k, &c->card_len);
    k->flags = AC__CARD_LEAVING;
    c->card_leaving = ac__card_encode(k, &c->card_leaving_len);
    k->flags = AC__CARD_DOWNED;
    c->card_downed = ac__card_encode(k, &c->card_downed_len);
    k->flags = 0;
    return c->card_text && c->card_leaving && c->card_downed;
}

/* ---- the node's hooks (transport thread) ---------------------------------- */

static void note(ac_cluster *c, ac__note_kind kind, const ac__node_peer_info *p, const char *why,
                 ac__wire_span data)
{
    ac_msg *msg = ac__note_new(kind, p->system, p->address, p->incarnation, why, data.ptr,
                               data.len);
    if (!msg)
        ac_system_log(c->system, AC_LOG_ERROR, "cluster %s: out of memory: a note on %s is lost",
                      c->name, p->address);
    ac__cluster_tell_actor(c, msg);
}

static bool span_is(ac__wire_span s, const char *text)
{
    return s.len == strlen(text) && memcmp(s.ptr, text, s.len) == 0;
}

static void hook_up(void *ctx, const ac__node_peer_info *peer)
{
    ac__wire_span card = span_is(peer->hello_type, AC__CLUSTER_CARD_TYPE) ? peer->hello_body
                                                                          : (ac__wire_span){0};
    note(ctx, AC__NOTE_PEER_UP, peer, NULL, card);
}

static void hook_down(void *ctx, const ac__node_peer_info *peer, const char *why)
{
    note(ctx, AC__NOTE_PEER_DOWN, peer, why, (ac__wire_span){0});
}

static void hook_tell(void *ctx, const ac__node_peer_info *from, ac__wire_span path,
                      ac__wire_span type_name, ac__wire_span body)
{
    if (span_is(path, AC__CLUSTER_PATH) && span_is(type_name, AC__CLUSTER_CARD_TYPE))
        note(ctx, AC__NOTE_BEAT, from, NULL, body);
    else if (span_is(path, AC__CLUSTER_PATH) && span_is(type_name, AC__CLUSTER_INTRO_TYPE))
        note(ctx, AC__NOTE_INTRO, from, NULL, body);
}

/* ---- the part ---------------------------------------------------------- */

/* Stop the provider, once (leave, the part's stop, a failed join). */
static void provider_stop(ac_cluster *c)
{
    if (!atomic_exchange_explicit(&c->provider_stopped, true, memory_order_acq_rel))
        c->provider->stop(c->provider_state);
}

/* Stop everything that could call in, and give back the system's refs. */
static void cluster_shut(ac_cluster *c)
{
    ac__node_hooks_set(c->node, NULL);
    provider_stop(c);
    pthread_mutex_lock(&c->lock); /* against the actor's next tick (cluster_tick.c) */
    if (c->tick) {
        ac_cancel(c->tick);
        ac_cancellable_release(c->tick);
        c->tick = NULL;
    }
    pthread_mutex_unlock(&c->lock);
}

/* The system terminates without a leave: tell the members this node
 * leaves, as the leave does, so that they down it at once instead of
 * resolving a lost node (with two nodes, a tie). The frames go before
 * the node's own stop closes the connections. */
static void farewell(ac_cluster *c)
{
    if (atomic_load_explicit(&c->left, memory_order_acquire))
        return; /* the leave said so */
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->view.count; i++) {
        const ac_member *m = &c->view.members[i];
        if (!m->self)
            (void)ac__node_tell_system(c->node, m->address, m->incarnation, AC__CLUSTER_PATH,
                                       AC__CLUSTER_CARD_TYPE, (const uint8_t *)c->card_leaving,
                                       c->card_leaving_len);
    }
    pthread_mutex_unlock(&c->lock);
}

static void cluster_stop_part(void *ctx)
{
    ac_cluster *c = ctx;
    farewell(c);
    atomic_store_explicit(&c->stopped, true, memory_order_release);
    cluster_shut(c);
    pthread_mutex_lock(&c->lock);
    ac_ref *actor = c->actor;
    c->actor = NULL;
    for (size_t i = 0; i < c->subs_count; i++)
        ac_ref_release(c->subs[i]);
    c->subs_count = 0;
    pthread_mutex_unlock(&c->lock);
    ac_ref_release(actor);
}

static void cluster_free_part(void *ctx) { cluster_free(ctx); }

/* ---- join, leave ----------------------------------------------------------- */

/* The provider's state, made before the actor exists (its turns read
 * it). */
static bool provider_create(ac_cluster *c, const ac__provider_ops *ops, const void *options)
{
    ac__provider_env env = {.system = c->system,
                            .cluster = c,
                            .name = c->name,
                            .self = &c->card,
                            .retry_initial_ms = c->retry_initial_ms,
                            .retry_max_ms = c->retry_max_ms};
    if (ops->create(&env, options, &c->provider_state) != AC_OK)
        return false;
    c->provider = ops;
    return true;
}

/* The cluster, its provider created; NULL with the error. */
static ac_cluster *cluster_new(ac_system *system, ac_node *node, const ac_cluster_options *o,
                               const ac__provider_ops *provider, const void *provider_options)
{
    ac_cluster *c = ac__calloc(1, sizeof *c);
    if (!c)
        return ac__fail_null(AC_ENOMEM, "ac_cluster_join: out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->system = system;
    c->node = node;
    atomic_init(&c->left, false);
    atomic_init(&c->stopped, false);
    atomic_init(&c->provider_stopped, false);
    int hb = ac__node_heartbeat_timeout_ms(node);
    c->unreachable_ms = hb / 2 > 3 * AC__CLUSTER_BEAT_MS ? hb / 2 : 3 * AC__CLUSTER_BEAT_MS;
    /* Longer heartbeats, fewer beats: a member is told five times in
     * unreachable_ms, every tick with the defaults (as small clusters
     * always were). */
    c->beat_every = (unsigned)(c->unreachable_ms / 5 / AC__CLUSTER_BEAT_MS);
    if (c->beat_every < 1)
        c->beat_every = 1;
    c->status.state = AC_CLUSTER_JOINING;
    if (!copy_options(c, o) || !make_card(c)) {
        cluster_free(c);
        return ac__fail_null(AC_ENOMEM, "ac_cluster_join: out of memory");
    }
    if (provider->listed_only)
        c->downing = AC_CLUSTER_DOWNING_OFF;
    if (!c->stable_after_ms)
        c->stable_after_ms = hb;
    if (!provider_create(c, provider, provider_options)) {
        cluster_free(c);
        return NULL; /* the provider said why */
    }
    c->hooks = (ac__node_hooks){.hello_type = AC__CLUSTER_CARD_TYPE,
                                .hello_body = (const uint8_t *)c->card_text,
                                .hello_len = c->card_len,
                                .peer_up = hook_up,
                                .peer_down = hook_down,
                                .system_tell = hook_tell,
                                .ctx = c};
    c->part = (ac__ext_part){.key = PART_KEY,
                             .stop = cluster_stop_part,
                             .free = cluster_free_part,
                             .ctx = c};
    return c;
}

/* Attach, spawn, hook in, start the timer and the provider. On failure
 * the last error says why; *owned says whether the part holds the
 * cluster now (the actor was spawned: it is freed with the system, left)
 * or the caller must free it. */
static ac_status cluster_start(ac_cluster *c, bool *owned)
{
    *owned = false;
    if (ac__ext_attach(c->system, &c->part) != AC_OK) {
        if (ac_last_status() == AC_EEXIST)
            return ac__fail(AC_EEXIST, "ac_cluster_join: system %s has joined a cluster already",
                            ac_system_name(c->system));
        return ac__fail(AC_ESTOPPED, "ac_cluster_join: system %s is terminating",
                        ac_system_name(c->system));
    }
    ac_ref *actor = ac__cluster_actor_spawn(c);
    if (!actor) {
        ac_status st = ac_last_status() == AC_ETERMINATED ? AC_ESTOPPED : ac_last_status();
        char why[256];
        snprintf(why, sizeof why, "%s", ac_last_error());
        ac__ext_detach(c->system, &c->part);
        return ac_set_error(st, "ac_cluster_join: %s", why);
    }
    *owned = true;
    pthread_mutex_lock(&c->lock);
    c->actor = actor;
    pthread_mutex_unlock(&c->lock);
    /* The provider first: the timer's turns read what it sets up. */
    if (c->provider->start(c->provider_state) != AC_OK)
        goto undo;
    if (ac__node_hooks_set(c->node, &c->hooks) != AC_OK) {
        ac__fail(AC_EEXIST, "ac_cluster_join: the node of system %s serves another cluster",
                 ac_system_name(c->system));
        goto undo;
    }
    if (ac__cluster_tick_start(c))
        return AC_OK;
    ac__fail(AC_ENOMEM, "ac_cluster_join: cannot start the cluster's timer");
undo:;
    /* Undone as far as it can be: left, its actor stopped. */
    ac_status st = ac_last_status();
    char why[256];
    snprintf(why, sizeof why, "%s", ac_last_error());
    atomic_store_explicit(&c->left, true, memory_order_release);
    cluster_shut(c);
    pthread_mutex_lock(&c->lock);
    c->status.state = AC_CLUSTER_LEFT;
    pthread_mutex_unlock(&c->lock);
    ac_stop(actor);
    return ac_set_error(st, "%s", why);
}

ac_cluster *ac_cluster_join(ac_system *system, const ac_cluster_options *options)
{
    ac_clear_error();
    if (!system || !options)
        return ac__fail_null(AC_EINVAL, "ac_cluster_join: %s is NULL",
                             system ? "options" : "system");
    const ac__provider_ops *provider = NULL;
    const void *provider_options = NULL;
    if (check_options(options, &provider, &provider_options) != AC_OK)
        return NULL;
    ac_node *node = ac_system_node(system);
    if (!node)
        return ac__fail_null(AC_ENOTFOUND, "ac_cluster_join: system %s has no node "
                                           "(ac_node_start first)", ac_system_name(system));
    if (ac__node_stopping(node))
        return ac__fail_null(AC_ESTOPPED, "ac_cluster_join: the node of system %s is stopped",
                             ac_system_name(system));
    if (ac__downing_check_stable(options, ac__node_heartbeat_timeout_ms(node)) != AC_OK)
        return NULL;
    ac_cluster *c = cluster_new(system, node, options, provider, provider_options);
    if (!c)
        return NULL;
    bool owned;
    if (cluster_start(c, &owned) != AC_OK) {
        if (!owned)
            cluster_free(c);
        return NULL;
    }
    ac__cluster_observe_start(c);
    /* The mailbox depths smallest-mailbox cluster routers ask of every
     * member (depth.h); without them those routers see unknown depths. */
    if (ac__depth_publisher_start(system, node) != AC_OK)
        ac_system_log(system, AC_LOG_WARN, "cluster %s: no depth publisher on this node (%s)",
                      c->name, ac_last_error());
    ac_system_log(system, AC_LOG_INFO, "cluster %s: %s@%s joined (%s provider)", c->name,
                  ac_system_name(system), c->card.address, c->provider->name);
    return c;
}

/* AC_OK while usable; else the failure, recorded for `fn`. */
static ac_status usable(ac_cluster *c, const char *fn)
{
    if (!c)
        return ac__fail(AC_EINVAL, "%s: cluster is NULL", fn);
    if (atomic_load_explicit(&c->stopped, memory_order_acquire))
        return ac__fail(AC_ESTOPPED, "%s: the system of cluster %s is terminating", fn, c->name);
    if (atomic_load_explicit(&c->left, memory_order_acquire))
        return ac__fail(AC_ESTOPPED, "%s: this node has left cluster %s", fn, c->name);
    return AC_OK;
}

bool ac__cluster_leave_begin(ac_cluster *c, const char *why)
{
    bool was = false;
    if (!atomic_compare_exchange_strong_explicit(&c->left, &was, true, memory_order_acq_rel,
                                                 memory_order_acquire))
        return false;
    ac__node_hooks_set(c->node, NULL);
    provider_stop(c);
    pthread_mutex_lock(&c->lock);
    if (c->tick)
        ac_cancel(c->tick); /* released with the rest at the system's end */
    for (size_t i = 0; i < c->subs_count; i++)
        ac_ref_release(c->subs[i]);
    c->subs_count = 0;
    c->status.state = AC_CLUSTER_LEFT;
    if (why)
        snprintf(c->status.last_error, sizeof c->status.last_error, "%s", why);
    pthread_mutex_unlock(&c->lock);
    return true;
}

ac_status ac_cluster_leave(ac_cluster *c)
{
    if (usable(c, "ac_cluster_leave") != AC_OK)
        return ac_last_status();
    if (!ac__cluster_leave_begin(c, NULL))
        return ac__fail(AC_ESTOPPED, "ac_cluster_leave: this node has left cluster %s", c->name);
    ac__cluster_tell_actor(c,
                           ac__note_new(AC__NOTE_LEAVE, NULL, NULL, 0, NULL, NULL, 0));
    ac_system_log(c->system, AC_LOG_INFO, "cluster %s: %s left", c->name, c->card.address);
    return AC_OK;
}

ac_cluster *ac_system_cluster(ac_system *system)
{
    return system ? ac__ext_find(system, PART_KEY) : NULL;
}

/* ---- reading ------------------------------------------------------------ */

ac_status ac_cluster_members(ac_cluster *c, ac_member_list *out)
{
    if (out)
        *out = (ac_member_list){0};
    if (!out)
        return ac__fail(AC_EINVAL, "ac_cluster_members: out is NULL");
    if (usable(c, "ac_cluster_members") != AC_OK)
        return ac_last_status();
    const ac__member_rec **recs = NULL;
    ac__member_rec *flat = NULL;
    pthread_mutex_lock(&c->lock);
    size_t n = c->view.count;
    recs = ac__calloc(n ? n : 1, sizeof *recs);
    flat = ac__calloc(n ? n : 1, sizeof *flat);
    if (recs && flat) {
        for (size_t i = 0; i < n; i++) {
            const ac_member *m = &c->view.members[i];
            flat[i] = (ac__member_rec){.system = (char *)m->system,
                                       .address = (char *)m->address,
                                       .incarnation = m->incarnation,
                                       .roles = (char **)m->roles,
                                       .roles_count = m->roles_count,
                                       .status = m->status,
                                       .self = m->self};
            recs[i] = &flat[i];
        }
        *out = ac__member_list_pack((const ac__member_rec *const *)recs, n);
    }
    pthread_mutex_unlock(&c->lock);
    free(recs);
    free(flat);
    if (!out->members)
        return ac__fail(AC_ENOMEM, "ac_cluster_members: out of memory");
    return AC_OK;
}

ac_status ac_cluster_status_get(ac_cluster *c, ac_cluster_status *out)
{
    if (!c || !out)
        return ac__fail(AC_EINVAL, "ac_cluster_status_get: %s is NULL", c ? "out" : "cluster");
    pthread_mutex_lock(&c->lock);
    *out = c->status;
    pthread_mutex_unlock(&c->lock);
    return AC_OK;
}

/* ---- subscriptions -------------------------------------------------------- */

static ac_status subs_add(ac_cluster *c, ac_ref *sub)
{
    for (size_t i = 0; i < c->subs_count; i++)
        if (c->subs[i] == sub)
            return ac__fail(AC_EEXIST, "ac_cluster_subscribe: %s is subscribed already",
                            ac_ref_path(sub));
    if (c->subs_count == c->subs_cap) {
        size_t cap = c->subs_cap ? c->subs_cap * 2 : 4;
        ac_ref **s = ac__realloc(c->subs, cap * sizeof *s);
        if (!s)
            return ac__fail(AC_ENOMEM, "ac_cluster_subscribe: out of memory");
        c->subs = s;
        c->subs_cap = cap;
    }
    c->subs[c->subs_count++] = ac_ref_retain(sub);
    return AC_OK;
}

ac_status ac_cluster_subscribe(ac_cluster *c, ac_ref *subscriber)
{
    if (usable(c, "ac_cluster_subscribe") != AC_OK)
        return ac_last_status();
    if (!subscriber)
        return ac__fail(AC_EINVAL, "ac_cluster_subscribe: subscriber is NULL");
    if (ac_ref_is_remote(subscriber))
        return ac__fail(AC_EINVAL, "ac_cluster_subscribe: subscriber %s is on another node: "
                                   "MemberEvents do not cross the wire (subscribe there)",
                        ac_ref_path(subscriber));
    ac_msg *wake = ac__note_new(AC__NOTE_SUBSCRIBERS, NULL, NULL, 0, NULL, NULL, 0);
    if (!wake)
        return ac__fail(AC_ENOMEM, "ac_cluster_subscribe: out of memory");
    pthread_mutex_lock(&c->lock);
    ac_status st = subs_add(c, subscriber);
    pthread_mutex_unlock(&c->lock);
    if (st != AC_OK) {
        ac_msg_release(wake);
        return st;
    }
    ac__cluster_tell_actor(c, wake);
    return AC_OK;
}

ac_status ac_cluster_unsubscribe(ac_cluster *c, ac_ref *subscriber)
{
    if (usable(c, "ac_cluster_unsubscribe") != AC_OK)
        return ac_last_status();
    if (!subscriber)
        return ac__fail(AC_EINVAL, "ac_cluster_unsubscribe: subscriber is NULL");
    ac_msg *wake = ac__note_new(AC__NOTE_SUBSCRIBERS, NULL, NULL, 0, NULL, NULL, 0);
    if (!wake)
        return ac__fail(AC_ENOMEM, "ac_cluster_unsubscribe: out of memory");
    ac_ref *gone = NULL;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->subs_count; i++)
        if (c->subs[i] == subscriber) {
            gone = c->subs[i];
            c->subs[i] = c->subs[--c->subs_count];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    if (!gone) {
        ac_msg_release(wake);
        return ac__fail(AC_ENOTFOUND, "ac_cluster_unsubscribe: %s is not subscribed",
                        ac_ref_path(subscriber));
    }
    ac_ref_release(gone);
    ac__cluster_tell_actor(c, wake);
    return AC_OK;
}
