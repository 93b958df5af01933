/*
 * Member groups: a group router whose set a driver fills, sorted by the
 * identities it gives (member_group.h has the contract).
 *
 * The set is the router's state, as for every group, so add and remove
 * run in the router's turn: the driver's hooks are called from
 * router_receive, and a strategy sees one set per message. The keys are
 * st->keys, kept in step with st->routees by ac__router_drop and
 * ac__router_make_room, and so are the breakers, when there are any;
 * the sort is by strcmp, so two nodes' routers over the same members
 * hold the same order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather.h"
#include "routing/member_group.h"

/* The first place whose key is not below `key` (binary search). */
static size_t sorted_place(const ac__router_state *st, const char *key)
{
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(st->keys[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool has_key(const ac__router_state *st, size_t i, const char *key)
{
    return i < st->n && strcmp(st->keys[i], key) == 0;
}

static void replace(ac_ctx *ctx, ac__router_state *st, size_t i, ac_ref *routee)
{
    ac_log_debug(ctx, "routee %s replaces %s", ac_ref_path(routee), ac_ref_path(st->routees[i]));
    ac_ref *old = st->routees[i];
    st->routees[i] = ac_ref_retain(routee);
    ac_ref_release(old);
}

static const ac_breaker_options *cfg_breaker(ac_ctx *ctx)
{
    const ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    return cfg->breaker;
}

/* The breaker of a joining routee, named after its path (its options
 * were checked by the factory: only memory can fail). */
static ac_breaker *new_breaker(ac_ctx *ctx, ac_ref *routee)
{
    ac_breaker_options o = *cfg_breaker(ctx);
    o.name = ac_ref_path(routee);
    return ac_breaker_create(ac_ctx_system(ctx), &o);
}

bool ac__member_group_add(ac_ctx *ctx, ac_ref *routee, const char *key)
{
    ac__router_state *st = ac_ctx_state(ctx);
    size_t i = sorted_place(st, key);
    if (has_key(st, i, key)) {
        replace(ctx, st, i, routee);
        return true;
    }
    char *copy = st->n < AC__ROUTER_MAX_ROUTEES ? ac__strdup(key) : NULL;
    if (!copy || !ac__router_make_room(st)) {
        ac_log_error(ctx, "routee %s (%s) left out: %s", ac_ref_path(routee), key,
                     copy ? "out of memory" : "no room or no memory for another routee");
        free(copy);
        return false;
    }
    ac_breaker *breaker = NULL;
    if (cfg_breaker(ctx) && !(breaker = new_breaker(ctx, routee))) {
        ac_log_error(ctx, "routee %s (%s) left out: no breaker (%s)", ac_ref_path(routee), key,
                     ac_last_error());
        free(copy);
        return false;
    }
    size_t tail = st->n - i;
    memmove(&st->routees[i + 1], &st->routees[i], tail * sizeof *st->routees);
    memmove(&st->keys[i + 1], &st->keys[i], tail * sizeof *st->keys);
    if (st->breakers) {
        memmove(&st->breakers[i + 1], &st->breakers[i], tail * sizeof *st->breakers);
        st->breakers[i] = breaker;
    }
    st->routees[i] = ac_ref_retain(routee);
    st->keys[i] = copy;
    st->n++;
    st->warned_empty = false; /* emptied again, the router says so again */
    ac_log_debug(ctx, "routee %s (%s) added; %zu routees", ac_ref_path(routee), key, st->n);
    return true;
}

bool ac__member_group_remove(ac_ctx *ctx, const char *key)
{
    ac__router_state *st = ac_ctx_state(ctx);
    size_t i = sorted_place(st, key);
    if (!has_key(st, i, key))
        return false;
    ac__router_drop(st, i);
    ac_log_debug(ctx, "routee of %s removed; %zu left", key, st->n);
    return true;
}

size_t ac__member_group_size(ac_ctx *ctx)
{
    const ac__router_state *st = ac_ctx_state(ctx);
    return st->n;
}

/* ---- the factory ------------------------------------------------------ */

static const ac__router_kind *kind_of(ac__member_group_strategy s)
{
    switch (s) {
    case AC__MEMBER_ROUND_ROBIN:
        return &ac__round_robin_kind;
    case AC__MEMBER_RANDOM:
        return &ac__random_kind;
    case AC__MEMBER_BROADCAST:
        return &ac__broadcast_kind;
    case AC__MEMBER_SMALLEST_MAILBOX:
        return &ac__smallest_mailbox_kind;
    case AC__MEMBER_CONSISTENT_HASHING:
        return &ac__consistent_hashing_kind;
    case AC__MEMBER_SCATTER_GATHER:
        return &ac__scatter_gather_kind;
    case AC__MEMBER_HEDGED:
        return &ac__hedged_kind;
    }
    return NULL;
}

/* The strategy's own options into cfg: -1 for a set of any size. */
static ac_status setup_strategy(ac__router_cfg *cfg, const ac__member_group_spec *spec)
{
    switch (spec->strategy) {
    case AC__MEMBER_CONSISTENT_HASHING:
        if (!spec->key)
            return ac__fail(AC_EINVAL, "%s: key is NULL", spec->fn);
        cfg->hash_key = spec->key;
        cfg->hash_user = spec->key_user;
        return AC_OK;
    case AC__MEMBER_SCATTER_GATHER:
        return ac__scatter_gather_setup(cfg, spec->scatter, spec->fn);
    case AC__MEMBER_HEDGED:
        return ac__hedged_setup(cfg, spec->hedged, spec->fn);
    default:
        return AC_OK;
    }
}

ac_props *ac__member_group_props(const ac__member_group_spec *spec)
{
    const ac__router_kind *kind = kind_of(spec->strategy);
    ac__router_cfg *cfg = kind ? ac__calloc(1, sizeof *cfg) : NULL;
    if (!cfg) {
        if (spec->ops->free)
            spec->ops->free(spec->user);
        return ac__fail_null(kind ? AC_ENOMEM : AC_EINVAL, "%s: %s", spec->fn,
                             kind ? "out of memory" : "unknown strategy");
    }
    cfg->kind = kind;
    cfg->is_group = true;
    cfg->members = spec->ops;
    cfg->members_user = spec->user; /* freed with cfg from here on */
    ac_routee_options breakers = {.breaker = spec->breaker};
    if (setup_strategy(cfg, spec) != AC_OK ||
        (spec->breaker && (ac_breaker_options_check(spec->fn, spec->breaker, false) != AC_OK ||
                           ac__router_copy_breaker(cfg, &breakers, spec->fn) != AC_OK))) {
        ac_status st = ac_last_status();
        char why[512];
        snprintf(why, sizeof why, "%s", ac_last_error());
        ac__router_cfg_free(cfg); /* may log or clear nothing, but keep the error */
        return ac__fail_null(st, "%s", why);
    }
    return ac__router_props(cfg, NULL, spec->fn);
}
