/*
 * Group routers: routers over refs the caller gives, and a routee set that
 * changes at run time (AddRoutee, RemoveRoutee).
 *
 * A group is the same router actor as a pool (router.c) with the same
 * strategies; only where its routees come from differs. The factory checks
 * the refs (none NULL, none twice, none a reply ref, all of one system) and
 * retains a copy in the configuration. pre_start moves them into the
 * router's state and watches each; a Terminated prunes a routee as in a
 * pool. The router never stops a routee: they are not its children.
 *
 * The set is the router's state, changed only in its own turn, so a
 * strategy sees one set per message and needs no lock. It keeps the order
 * in which routees were added; a removal closes the gap. A scatter holds
 * its own references to the routees it asked, so removing one leaves the
 * open scatters as they were.
 *
 * When the router stops, its set goes back to the configuration, and is
 * released with it. A group has no children to fail and escalate, so it
 * restarts only when its start failed (out of memory); should it restart
 * after it ran, the restart (whose default pre_restart is post_stop)
 * starts from the set as it was changed, not as it was given.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/router_internal.h"

/* ---- AddRoutee and RemoveRoutee --------------------------------------- */

static void change_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(*(ac_ref **)payload);
}

const ac_msg_type ac_msg_type_add_routee = {.name = "actorc.AddRoutee",
                                            .destroy = change_destroy};
const ac_msg_type ac_msg_type_remove_routee = {.name = "actorc.RemoveRoutee",
                                               .destroy = change_destroy};

static ac_msg *change_new(const ac_msg_type *type, ac_ref *routee, const char *fn)
{
    ac__clear_status();
    if (!routee)
        return ac__fail_null(AC_EINVAL, "%s: routee is NULL", fn);
    ac_msg *m = ac_msg_new(type, sizeof routee);
    if (!m)
        return NULL;
    ac_ref *held = ac_ref_retain(routee);
    memcpy(ac_msg_payload(m), &held, sizeof held);
    return m;
}

ac_msg *ac_router_add_routee_msg(ac_ref *routee)
{
    return change_new(&ac_msg_type_add_routee, routee, "ac_router_add_routee_msg");
}

ac_msg *ac_router_remove_routee_msg(ac_ref *routee)
{
    return change_new(&ac_msg_type_remove_routee, routee, "ac_router_remove_routee_msg");
}

static ac_ref *change_routee(const ac_msg *msg)
{
    ac_ref *r;
    memcpy(&r, ac_msg_data(msg), sizeof r);
    return r;
}

bool ac__router_is_change(const ac_msg *msg)
{
    return ac_msg_is(msg, &ac_msg_type_add_routee) || ac_msg_is(msg, &ac_msg_type_remove_routee);
}

/* ---- the set at run time ---------------------------------------------- */

static size_t find(const ac__router_state *st, const ac_ref *r)
{
    size_t i = 0;
    while (i < st->n && st->routees[i] != r)
        i++;
    return i;
}

bool ac__router_make_room(ac__router_state *st)
{
    if (st->n < st->cap)
        return true;
    size_t cap = st->cap * 2;
    ac_ref **routees = ac__realloc(st->routees, cap * sizeof *routees);
    if (!routees)
        return false;
    st->routees = routees; /* a larger array kept on a later failure: harmless */
    ac_ref **scratch = ac__realloc(st->scratch, cap * sizeof *scratch);
    if (!scratch)
        return false;
    st->scratch = scratch;
    if (st->keys) {
        char **keys = ac__realloc(st->keys, cap * sizeof *keys);
        if (!keys)
            return false;
        st->keys = keys;
    }
    if (st->breakers) {
        ac_breaker **breakers = ac__realloc(st->breakers, cap * sizeof *breakers);
        if (!breakers)
            return false;
        st->breakers = breakers;
    }
    if (st->numbers) {
        uint32_t *numbers = ac__realloc(st->numbers, cap * sizeof *numbers);
        if (!numbers)
            return false;
        st->numbers = numbers;
    }
    st->cap = cap;
    return true;
}

/* Why `r` cannot join the set, or NULL when it can (it is not in it). */
static const char *refusal(ac_ctx *ctx, const ac__router_state *st, const ac_ref *r)
{
    if (r == ac_self(ctx))
        return "it is the router itself";
    if (ac_ref_system(r) != ac_ctx_system(ctx))
        return "it belongs to another actor system";
    if (st->n >= AC__ROUTER_MAX_ROUTEES)
        return "the group has as many routees as a router takes";
    return NULL;
}

/* Append `r` (borrowed) to the set, watched. When it cannot be, false
 * and a line that says why, starting with `what`. */
static bool admit(ac_ctx *ctx, ac__router_state *st, ac_ref *r, const char *what)
{
    const char *why = refusal(ctx, st, r);
    if (why) {
        ac_log_warn(ctx, "%s %s: %s", what, ac_ref_path(r), why);
        return false;
    }
    if (!ac__router_make_room(st)) {
        ac_log_error(ctx, "%s %s: out of memory", what, ac_ref_path(r));
        return false;
    }
    /* Pruning needs the Terminated a watch brings: a routee whose watch
     * cannot be set up would take messages after it stopped. */
    ac_status watched = ac_watch(ctx, r);
    if (watched != AC_OK) {
        ac_log_warn(ctx, "%s %s: it could not be watched (%s)", what, ac_ref_path(r),
                    ac_strerror(watched));
        return false;
    }
    st->routees[st->n++] = ac_ref_retain(r);
    st->warned_empty = false; /* emptied again, the router says so again */
    return true;
}

void ac__router_group_start(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st)
{
    for (size_t i = 0; i < cfg->group_n; i++) {
        (void)admit(ctx, st, cfg->group[i], "routee dropped:");
        ac_ref_release(cfg->group[i]);
    }
    free(cfg->group);
    cfg->group = NULL;
    cfg->group_n = 0;
}

void ac__router_group_stop(ac__router_cfg *cfg, ac__router_state *st)
{
    if (cfg->group) /* the start failed before it took them: they stay */
        return;
    cfg->group = st->routees;
    cfg->group_n = st->n;
    st->routees = NULL;
    st->n = 0;
}

void ac__router_group_free(ac__router_cfg *cfg)
{
    for (size_t i = 0; i < cfg->group_n; i++)
        ac_ref_release(cfg->group[i]);
    free(cfg->group);
    cfg->group = NULL;
    cfg->group_n = 0;
}

static void add_routee(ac_ctx *ctx, ac__router_state *st, ac_ref *r)
{
    if (find(st, r) < st->n) {
        ac_log_debug(ctx, "AddRoutee of %s: already a routee", ac_ref_path(r));
        return;
    }
    if (admit(ctx, st, r, "AddRoutee refused for"))
        ac_log_debug(ctx, "routee %s added; %zu routees", ac_ref_path(r), st->n);
}

static void remove_routee(ac_ctx *ctx, ac__router_state *st, ac_ref *r)
{
    size_t i = find(st, r);
    if (i == st->n) {
        ac_log_debug(ctx, "RemoveRoutee of %s: not a routee", ac_ref_path(r));
        return;
    }
    /* Should the unwatch fail, a Terminated still comes, and matches no
     * routee. */
    (void)ac_unwatch(ctx, r);
    ac__router_drop(st, i);
    ac_log_debug(ctx, "routee %s removed; %zu left", ac_ref_path(r), st->n);
}

void ac__router_change(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    ac_ref *r = change_routee(msg);
    bool add = ac_msg_is(msg, &ac_msg_type_add_routee);
    if (cfg->members) {
        ac_log_warn(ctx,
                    "%s of %s ignored: this router's routees follow its members, one per "
                    "member",
                    add ? "AddRoutee" : "RemoveRoutee", ac_ref_path(r));
        return;
    }
    if (!cfg->is_group) {
        ac_log_warn(ctx,
                    "%s of %s ignored: a pool spawns and owns its routees; only a group "
                    "router's routees change at run time",
                    add ? "AddRoutee" : "RemoveRoutee", ac_ref_path(r));
        return;
    }
    if (add)
        add_routee(ctx, st, r);
    else
        remove_routee(ctx, st, r);
}

/* ---- factories -------------------------------------------------------- */

static ac_status check_routee(const char *fn, ac_ref *const *routees, size_t i)
{
    const ac_ref *r = routees[i];
    if (!r)
        return ac__fail(AC_EINVAL, "%s: routees[%zu] is NULL", fn, i);
    if (r->ops->kind == AC__REF_REPLY)
        return ac__fail(AC_EINVAL,
                        "%s: routees[%zu] (%s) is a reply ref, not an actor: a group watches "
                        "its routees",
                        fn, i, ac_ref_path(r));
    if (r->system != routees[0]->system)
        return ac__fail(AC_EINVAL,
                        "%s: routees[%zu] (%s) is in another actor system than routees[0] "
                        "(%s); a group's routees share one",
                        fn, i, ac_ref_path(r), ac_ref_path(routees[0]));
    return AC_OK;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (ac_ref *const *)a, y = (uintptr_t) * (ac_ref *const *)b;
    return (x > y) - (x < y);
}

/* The first two places where one ref appears twice. */
static ac_status fail_duplicate(const char *fn, ac_ref *const *routees, size_t n, const ac_ref *r)
{
    size_t i = 0, j;
    while (routees[i] != r)
        i++;
    for (j = i + 1; j < n && routees[j] != r; j++)
        ;
    return ac__fail(AC_EINVAL, "%s: routees[%zu] and routees[%zu] are the same ref (%s)", fn, i,
                    j, ac_ref_path(r));
}

/* `copy` holds routees[0..n) (all checked): sorted, a duplicate sits
 * beside its twin. Restores nothing: the caller re-copies. */
static ac_status check_duplicates(const char *fn, ac_ref *const *routees, size_t n, ac_ref **copy)
{
    qsort(copy, n, sizeof *copy, by_address);
    for (size_t i = 1; i < n; i++)
        if (copy[i] == copy[i - 1])
            return fail_duplicate(fn, routees, n, copy[i]);
    return AC_OK;
}

static ac_status check_group(const char *fn, ac_ref *const *routees, size_t n, ac_ref **copy)
{
    if (n == 0)
        return AC_OK; /* routees may be NULL */
    for (size_t i = 0; i < n; i++) {
        ac_status st = check_routee(fn, routees, i);
        if (st != AC_OK)
            return st;
    }
    memcpy(copy, routees, n * sizeof *copy);
    ac_status st = check_duplicates(fn, routees, n, copy);
    memcpy(copy, routees, n * sizeof *copy); /* back in the caller's order */
    return st;
}

/* A group's configuration holding a retained copy of the routees, after
 * checking them; NULL with the error. */
static ac__router_cfg *group_cfg_new(const char *fn, const ac__router_kind *kind,
                                     ac_ref *const *routees, size_t n)
{
    if (n > AC__ROUTER_MAX_ROUTEES)
        return ac__fail_null(AC_EINVAL, "%s: n = %zu; at most %d routees", fn, n,
                             AC__ROUTER_MAX_ROUTEES);
    if (n > 0 && !routees)
        return ac__fail_null(AC_EINVAL, "%s: routees is NULL, with n = %zu", fn, n);
    ac__router_cfg *cfg = ac__calloc(1, sizeof *cfg);
    ac_ref **copy = ac__malloc((n ? n : 1) * sizeof *copy);
    if (!cfg || !copy) {
        ac__fail(AC_ENOMEM, "%s: out of memory for %zu routees", fn, n);
        goto fail;
    }
    if (check_group(fn, routees, n, copy) != AC_OK)
        goto fail;
    for (size_t i = 0; i < n; i++)
        ac_ref_retain(copy[i]);
    cfg->kind = kind;
    cfg->is_group = true;
    cfg->group = copy;
    cfg->group_n = n;
    return cfg;
fail:
    free(copy);
    free(cfg);
    return NULL;
}

static ac_props *make_group(const char *fn, const ac__router_kind *kind, ac_ref *const *routees,
                            size_t n, ac_routing_fn strategy, void *user)
{
    ac__router_cfg *cfg = group_cfg_new(fn, kind, routees, n);
    if (!cfg)
        return NULL;
    cfg->fn = strategy;
    cfg->fn_user = user;
    return ac__router_props(cfg, NULL, fn);
}

ac_props *ac_router_group_round_robin(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_round_robin", &ac__round_robin_kind, routees, n, NULL,
                      NULL);
}

ac_props *ac_router_group_random(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_random", &ac__random_kind, routees, n, NULL, NULL);
}

ac_props *ac_router_group_broadcast(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_broadcast", &ac__broadcast_kind, routees, n, NULL, NULL);
}

ac_props *ac_router_group_smallest_mailbox(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_smallest_mailbox", &ac__smallest_mailbox_kind, routees, n,
                      NULL, NULL);
}

ac_props *ac_router_group_custom(ac_ref *const *routees, size_t n, ac_routing_fn strategy,
                                 void *user_data)
{
    ac__clear_status();
    if (!strategy)
        return ac__fail_null(AC_EINVAL, "ac_router_group_custom: strategy is NULL");
    return make_group("ac_router_group_custom", &ac__custom_kind, routees, n, strategy,
                      user_data);
}

ac_props *ac_router_group_scatter_gather_first_completed(ac_ref *const *routees, size_t n,
                                                         const ac_scatter_gather_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_scatter_gather_first_completed";
    ac__router_cfg *cfg = group_cfg_new(fn, &ac__scatter_gather_kind, routees, n);
    if (!cfg)
        return NULL;
    if (ac__scatter_gather_setup(cfg, options, fn, (int)n, 0) != AC_OK) {
        ac__router_cfg_free(cfg);
        return NULL;
    }
    return ac__router_props(cfg, NULL, fn);
}

ac_props *ac_router_group_consistent_hashing(ac_ref *const *routees, size_t n,
                                             ac_hash_key_fn key_fn, void *user)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_consistent_hashing";
    if (!key_fn)
        return ac__fail_null(AC_EINVAL, "%s: key_fn is NULL", fn);
    ac__router_cfg *cfg = group_cfg_new(fn, &ac__consistent_hashing_kind, routees, n);
    if (!cfg)
        return NULL;
    cfg->hash_key = key_fn;
    cfg->hash_user = user;
    return ac__router_props(cfg, NULL, fn);
}

ac_props *ac_router_group_hedged(ac_ref *const *routees, size_t n,
                                 const ac_hedged_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_hedged";
    ac__router_cfg *cfg = group_cfg_new(fn, &ac__hedged_kind, routees, n);
    if (!cfg)
        return NULL;
    if (ac__hedged_setup(cfg, options, fn, (int)n) != AC_OK) {
        ac__router_cfg_free(cfg);
        return NULL;
    }
    return ac__router_props(cfg, NULL, fn);
}
