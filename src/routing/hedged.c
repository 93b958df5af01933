/*
 * The hedged router: one routee at a time, the next when the hedge delay
 * passes without a success (hedge.h has the contract). This file is the
 * kind: its words, its router kind and its factories, which check the
 * options and make the policy's state. How it asks is its gathering
 * policy (gather_hedge.c); how long it waits, its hedging policy
 * (hedge_policy.h), chosen by delay_kind; everything after the send is
 * the gather core's (gather.h).
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather_hedge.h"

static const ac__gather_names hedged_names = {
    .title = "Hedged router",
    .noun = "request",
    .send_to = "send to",
    .sent = "sent",
    .label = "hedged",
    .resolved = "router_hedged_resolved_total",
    .resolved_help = "Hedged router messages resolved, by outcome.",
    .latency = "router_hedged_latency_seconds",
    .latency_help = "Seconds from a hedged router's first request to answering its caller.",
    .hedges_sent = "router_hedges_sent_total",
    .hedges_sent_help = "Requests a hedged router sent beyond the first per message.",
    .hedges_won = "router_hedges_won_total",
    .hedges_won_help = "Messages a hedged router's later request won.",
};

const ac__router_kind ac__hedged_kind = {
    .name = "hedged",
    .route = ac__gather_route,
    .on_start = ac__gather_on_start,
    .on_stop = ac__gather_on_stop,
    .on_spawn = ac__gather_on_spawn,
    .answers_empty = true,
    .own_view = true,
};

/* ---- the options ------------------------------------------------------ */

/* `size` < 0: a member group's set, of a size not known yet; every
 * max_attempts a set could use is taken, and caps the attempts. */
static ac_status check_attempts(const char *fn, int size, const ac_hedged_options *o)
{
    if (size < 0 && (o->max_attempts < 0 || o->max_attempts > AC__ROUTER_MAX_ROUTEES))
        return ac__fail(AC_EINVAL,
                        "%s: max_attempts = %d is not usable; use 1..%d, or 0 for every routee",
                        fn, o->max_attempts, AC__ROUTER_MAX_ROUTEES);
    if (size >= 0 && (o->max_attempts < 0 || o->max_attempts > size))
        return ac__fail(AC_EINVAL,
                        "%s: max_attempts = %d is not usable for a pool of %d routees; use "
                        "1..%d, or 0 for every routee",
                        fn, o->max_attempts, size, size);
    return AC_OK;
}

/* The hedging policy delay_kind names (hedge_policy.c). */
static const ac__hedge_policy *delay_policy(const char *fn, const ac_hedged_options *o)
{
    const ac__hedge_policy *policy = ac__hedge_policy_of(o->delay_kind);
    if (!policy) {
        char kinds[256];
        ac__hedge_policy_kinds(kinds, sizeof kinds);
        ac__fail(AC_EINVAL, "%s: delay_kind = %d is not an ac_hedge_delay_kind (%s)", fn,
                 (int)o->delay_kind, kinds);
    }
    return policy;
}

/* delay_us, which every hedging policy starts from, in ns into *ns. */
static ac_status check_delay(const char *fn, const ac_hedged_options *o, uint32_t timeout_ms,
                             uint64_t *ns)
{
    if (o->delay_us < 0)
        return ac__fail(AC_EINVAL,
                        "%s: delay_us = %lld is negative; use a hedge delay of 1 us or more, or "
                        "0 for the default (%d us)",
                        fn, (long long)o->delay_us, AC_HEDGE_DEFAULT_DELAY_US);
    int64_t us = o->delay_us ? o->delay_us : AC_HEDGE_DEFAULT_DELAY_US;
    if (us >= (int64_t)timeout_ms * 1000)
        return ac__fail(AC_EINVAL,
                        "%s: delay_us = %lld is not below the timeout (%u ms): no hedge would "
                        "ever be sent",
                        fn, (long long)us, timeout_ms);
    *ns = (uint64_t)us * 1000;
    return AC_OK;
}

/* The order of attempts and its probe interval, in ns into *probe_ns (0:
 * the rotation order, which has none). */
static ac_status check_order(const char *fn, const ac_hedged_options *o, uint64_t *probe_ns)
{
    if (o->order != AC_HEDGE_ORDER_LATENCY && o->order != AC_HEDGE_ORDER_ROTATION)
        return ac__fail(AC_EINVAL,
                        "%s: order = %d is not an ac_hedge_order (AC_HEDGE_ORDER_LATENCY or "
                        "AC_HEDGE_ORDER_ROTATION)",
                        fn, (int)o->order);
    if (o->probe_interval_ms < 0 || o->probe_interval_ms > INT32_MAX)
        return ac__fail(AC_EINVAL,
                        "%s: probe_interval_ms = %lld is not usable; use 1..%d ms, or 0 for the "
                        "default (%d ms)",
                        fn, (long long)o->probe_interval_ms, INT32_MAX, AC_HEDGE_DEFAULT_PROBE_MS);
    if (o->order == AC_HEDGE_ORDER_ROTATION && o->probe_interval_ms)
        return ac__fail(AC_EINVAL,
                        "%s: probe_interval_ms = %lld is for the latency order; the rotation "
                        "order probes nothing",
                        fn, (long long)o->probe_interval_ms);
    int64_t ms = o->probe_interval_ms ? o->probe_interval_ms : AC_HEDGE_DEFAULT_PROBE_MS;
    *probe_ns = o->order == AC_HEDGE_ORDER_ROTATION ? 0 : (uint64_t)ms * 1000000u;
    return AC_OK;
}

/* The per-router state from checked options, its hedging policy's state
 * made (which checks that policy's options); NULL with the error. */
static ac__hedging *hedging_new(const char *fn, const ac_hedged_options *o, uint32_t timeout_ms,
                                int size, int pool_size)
{
    uint64_t delay_ns = 0, probe_ns = 0;
    const ac__hedge_policy *delay = NULL;
    if (check_attempts(fn, size, o) != AC_OK || !(delay = delay_policy(fn, o)) ||
        check_delay(fn, o, timeout_ms, &delay_ns) != AC_OK ||
        check_order(fn, o, &probe_ns) != AC_OK)
        return NULL;
    ac__hedging *h = ac__calloc(1, sizeof *h);
    if (!h)
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    h->max_attempts = (uint32_t)o->max_attempts;
    h->delay = delay;
    if (pool_size > 0 && !(h->failing = ac__calloc((size_t)pool_size + 1, sizeof *h->failing))) {
        ac__fail(AC_ENOMEM, "%s: out of memory", fn);
        goto fail_failing;
    }
    if (probe_ns && ac__latency_table_init(&h->latency, size, probe_ns, fn) != AC_OK)
        goto fail_latency;
    if (delay->create(fn, o, delay_ns, timeout_ms, &h->delay_state) != AC_OK)
        goto fail_delay;
    if (ac__hedge_budget_check(fn, o->budget) != AC_OK)
        goto fail_budget;
    return h;
fail_budget:
    delay->destroy(h->delay_state);
fail_delay:
    ac__latency_table_fini(&h->latency);
fail_latency:
    free(h->failing);
fail_failing:
    free(h);
    return NULL;
}

/* ---- the factories ---------------------------------------------------- */

/* The one factory body of the kind, for pools, groups and member groups:
 * the shared state from `options` (NULL: defaults), checked against a
 * set of `size` routees (-1: any size), with routee numbers 1..pool_size
 * (0: none, a group's) to count by and to remember as failing; NULL with
 * the error. */
static ac__gather_shared *hedged_shared(const char *fn, const ac_hedged_options *options,
                                        int size, int pool_size)
{
    static const ac_hedged_options defaults = {0};
    const ac_hedged_options *o = options ? options : &defaults;
    if (ac__gather_check_timeout(fn, o->timeout_ms, "timeout_ms") != AC_OK)
        return NULL;
    uint32_t timeout_ms =
        (uint32_t)(o->timeout_ms ? o->timeout_ms : AC_HEDGED_DEFAULT_TIMEOUT_MS);
    ac__hedging *h = hedging_new(fn, o, timeout_ms, size, pool_size);
    if (!h)
        return NULL;
    ac__gather_shared *sh = ac__gather_shared_create(&hedged_names, &ac__hedge_gather_policy,
                                                     pool_size, timeout_ms, fn);
    if (!sh) {
        ac__hedge_gather_policy.free_state(h);
        return NULL;
    }
    sh->policy_state = h;
    sh->cancel_losers = o->cancel_losers;
    if (o->budget) {
        sh->has_budget = true;
        ac__hedge_budget_init(&sh->budget, o->budget);
    }
    return sh;
}

ac_props *ac_router_hedged(int size, const ac_actor_def *routee_def,
                           const ac_hedged_options *options, const ac_routee_options *routee_opts)
{
    ac__clear_status();
    static const char fn[] = "ac_router_hedged";
    ac__router_cfg *cfg = ac__router_pool_cfg_new(fn, &ac__hedged_kind, size, routee_def,
                                                  routee_opts);
    return ac__gather_props(fn, cfg, cfg ? hedged_shared(fn, options, size, size) : NULL,
                            routee_opts);
}

ac_props *ac_router_group_hedged(ac_ref *const *routees, size_t n,
                                 const ac_hedged_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_hedged";
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, &ac__hedged_kind, routees, n);
    return ac__gather_props(fn, cfg, cfg ? hedged_shared(fn, options, (int)n, 0) : NULL, NULL);
}

ac_status ac__hedged_setup(ac__router_cfg *cfg, const ac_hedged_options *options, const char *fn)
{
    ac__gather_shared *sh = hedged_shared(fn, options, -1, 0);
    if (!sh)
        return ac_last_status();
    ac__gather_attach(cfg, sh);
    return AC_OK;
}
