/*
 * The hedged router: one routee at a time, the next when the hedge delay
 * passes without a success (hedge.h has the contract). A message is one
 * gather (gather.c) whose slots are the routees in the order they will be
 * tried; gather_hedge.c sends them out one by one. What this file decides
 * is that order, and what the factory accepts.
 *
 * The order: round-robin from a start that moves by one per message,
 * with the routees known to be failing moved to the end — those whose
 * last outcome was an error or a timeout (the gathers' `failing` flags,
 * cleared by a success) and those whose breaker is open — so that a
 * failing routee is still tried when the healthy ones are slow, and can
 * show it has recovered.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather.h"

static bool known_failing(const ac__gather_shared *sh, const ac__router_state *st, size_t i)
{
    if (st->breakers && ac_breaker_state_of(st->breakers[i]) == AC_BREAKER_OPEN)
        return true;
    uint32_t k = st->numbers && sh->failing ? st->numbers[i] : 0;
    return k && atomic_load_explicit(&sh->failing[k], memory_order_relaxed);
}

/* The places in the set of the first m routees to try, into `picks`:
 * round-robin from the router's index, those not known to be failing
 * first. Whether a routee is failing is read once per routee: other
 * threads change it as slots fail, and a routee read as failing in one
 * pass and as healthy in another would be left out of both, leaving
 * places unfilled. */
static void order_attempts(const ac__gather_shared *sh, const ac__router_state *st, uint32_t m,
                           uint32_t *picks)
{
    size_t start = (size_t)(st->index % st->n);
    uint32_t k = 0, back = 0;
    /* The failing ones wait here, in order, for the places the healthy
     * ones leave. Out of memory for that: every routee in order. */
    size_t idx_small[16];
    size_t *idx = st->n <= 16 ? idx_small : ac__malloc(st->n * sizeof *idx);
    for (size_t j = 0; j < st->n && k < m; j++) {
        size_t i = (start + j) % st->n;
        if (idx && known_failing(sh, st, i)) {
            idx[back++] = i;
            continue;
        }
        picks[k++] = (uint32_t)i;
    }
    for (uint32_t b = 0; b < back && k < m; b++)
        picks[k++] = (uint32_t)idx[b];
    if (idx != idx_small)
        free(idx);
    AC__ASSERT(k == m);
}

static void route_hedged(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    ac__gather_shared *sh = cfg->extra;
    ac_ref *caller = ac_sender(ctx);
    if (!caller) {
        ac__gather_drop_unanswerable(ctx, sh, msg);
        return;
    }
    if (st->n == 0) {
        ac__gather_answer_empty(ctx, sh, caller);
        return;
    }
    if (sh->has_budget)
        ac__hedge_budget_deposit(&sh->budget);
    uint32_t m = sh->max_attempts && sh->max_attempts < st->n ? sh->max_attempts
                                                              : (uint32_t)st->n;
    uint32_t small[16];
    uint32_t *picks = m <= 16 ? small : ac__malloc(m * sizeof *picks);
    ac__gather *g = NULL;
    if (picks) {
        order_attempts(sh, st, m, picks);
        g = ac__gather_new(sh, st, picks, m, caller, msg, ac_ctx_system(ctx));
    }
    if (picks != small)
        free(picks);
    if (!g) {
        ac__gather_answer_no_memory(ctx, sh, caller, m);
        return;
    }
    ac__gather_hedge(g);
}

const ac__router_kind ac__hedged_kind = {
    .name = "hedged",
    .route = route_hedged,
    .on_start = ac__gather_on_start,
    .on_stop = ac__gather_on_stop,
    .on_spawn = ac__gather_on_spawn,
    .answers_empty = true,
};

/* ---- the factory ------------------------------------------------------ */

/* The options with their defaults filled in, as the router uses them. */
typedef struct hedged_config {
    uint32_t timeout_ms;
    uint64_t delay_ns, floor_ns, ceiling_ns;
    double percentile;
    uint32_t window, min_samples;
} hedged_config;

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
    if (o->delay_kind != AC_HEDGE_DELAY_FIXED && o->delay_kind != AC_HEDGE_DELAY_ADAPTIVE)
        return ac__fail(AC_EINVAL,
                        "%s: delay_kind = %d is not an ac_hedge_delay_kind (AC_HEDGE_DELAY_FIXED "
                        "or AC_HEDGE_DELAY_ADAPTIVE)",
                        fn, (int)o->delay_kind);
    return AC_OK;
}

static ac_status check_delay(const char *fn, const ac_hedged_options *o, hedged_config *c)
{
    if (o->delay_us < 0)
        return ac__fail(AC_EINVAL,
                        "%s: delay_us = %lld is negative; use a hedge delay of 1 us or more, or "
                        "0 for the default (%d us)",
                        fn, (long long)o->delay_us, AC_HEDGE_DEFAULT_DELAY_US);
    int64_t us = o->delay_us ? o->delay_us : AC_HEDGE_DEFAULT_DELAY_US;
    if (us >= (int64_t)c->timeout_ms * 1000)
        return ac__fail(AC_EINVAL,
                        "%s: delay_us = %lld is not below the timeout (%u ms): no hedge would "
                        "ever be sent",
                        fn, (long long)us, c->timeout_ms);
    c->delay_ns = (uint64_t)us * 1000;
    return AC_OK;
}

/* A fixed delay takes no adaptive option: one set says delay_kind was
 * forgotten. */
static ac_status check_fixed(const char *fn, const ac_hedged_options *o)
{
    const char *set = o->percentile != 0.0 ? "percentile"
                      : o->window        ? "window"
                      : o->min_samples   ? "min_samples"
                      : o->floor_us      ? "floor_us"
                      : o->ceiling_us    ? "ceiling_us"
                                         : NULL;
    if (!set)
        return AC_OK;
    return ac__fail(AC_EINVAL,
                    "%s: %s is set, but the delay is fixed; it is an option of the adaptive "
                    "delay (delay_kind = AC_HEDGE_DELAY_ADAPTIVE)",
                    fn, set);
}

static ac_status check_window(const char *fn, const ac_hedged_options *o, hedged_config *c)
{
    if (o->percentile != 0.0 && !(o->percentile > 0.0 && o->percentile < 100.0))
        return ac__fail(AC_EINVAL,
                        "%s: percentile = %g is outside (0, 100); use, say, 95 for p95, or 0 "
                        "for the default (%g)",
                        fn, o->percentile, AC_HEDGE_DEFAULT_PERCENTILE);
    c->percentile = o->percentile != 0.0 ? o->percentile : AC_HEDGE_DEFAULT_PERCENTILE;
    if (o->window < 0 || o->window > AC_HEDGE_MAX_WINDOW)
        return ac__fail(AC_EINVAL,
                        "%s: window = %d is not usable; use 1..%d samples, or 0 for the "
                        "default (%d)",
                        fn, o->window, AC_HEDGE_MAX_WINDOW, AC_HEDGE_DEFAULT_WINDOW);
    c->window = (uint32_t)(o->window ? o->window : AC_HEDGE_DEFAULT_WINDOW);
    uint32_t min_default = c->window < AC_HEDGE_DEFAULT_MIN_SAMPLES ? c->window
                                                                    : AC_HEDGE_DEFAULT_MIN_SAMPLES;
    if (o->min_samples < 0 || (uint32_t)o->min_samples > c->window)
        return ac__fail(AC_EINVAL,
                        "%s: min_samples = %d is not usable with a window of %u; use 1..%u, or "
                        "0 for the default (%u)",
                        fn, o->min_samples, c->window, c->window, min_default);
    c->min_samples = o->min_samples ? (uint32_t)o->min_samples : min_default;
    return AC_OK;
}

static ac_status check_bounds(const char *fn, const ac_hedged_options *o, hedged_config *c)
{
    int64_t timeout_us = (int64_t)c->timeout_ms * 1000;
    if (o->floor_us < 0 || o->ceiling_us < 0 || o->ceiling_us > timeout_us)
        return ac__fail(AC_EINVAL,
                        "%s: floor_us = %lld, ceiling_us = %lld: use 0..%lld us (the timeout), "
                        "0 for no floor and for a ceiling at the timeout",
                        fn, (long long)o->floor_us, (long long)o->ceiling_us,
                        (long long)timeout_us);
    int64_t ceiling = o->ceiling_us ? o->ceiling_us : timeout_us;
    if (o->floor_us > ceiling)
        return ac__fail(AC_EINVAL, "%s: floor_us = %lld is above ceiling_us = %lld", fn,
                        (long long)o->floor_us, (long long)ceiling);
    c->floor_ns = (uint64_t)o->floor_us * 1000;
    c->ceiling_ns = (uint64_t)ceiling * 1000;
    return AC_OK;
}

static ac_status check_options(const char *fn, int size, const ac_hedged_options *o,
                               hedged_config *c)
{
    ac_status st = check_attempts(fn, size, o);
    if (st == AC_OK)
        st = check_delay(fn, o, c);
    if (st == AC_OK && o->delay_kind == AC_HEDGE_DELAY_FIXED)
        st = check_fixed(fn, o);
    if (st == AC_OK && o->delay_kind == AC_HEDGE_DELAY_ADAPTIVE)
        st = check_window(fn, o, c);
    if (st == AC_OK && o->delay_kind == AC_HEDGE_DELAY_ADAPTIVE)
        st = check_bounds(fn, o, c);
    if (st == AC_OK)
        st = ac__hedge_budget_check(fn, o->budget);
    return st;
}

/* The router's shared state from checked options; NULL when out of
 * memory. */
static ac__gather_shared *shared_of(const char *fn, int size, const ac_hedged_options *o,
                                    const hedged_config *c)
{
    ac__gather_shared *sh = ac__gather_shared_create(&ac__hedged_names, size, fn);
    if (!sh)
        return NULL;
    sh->hedged = true;
    sh->timeout_ms = c->timeout_ms;
    sh->max_attempts = (uint32_t)o->max_attempts;
    sh->cancel_losers = o->cancel_losers;
    sh->delay.fixed_ns = c->delay_ns;
    if (o->budget) {
        sh->has_budget = true;
        ac__hedge_budget_init(&sh->budget, o->budget);
    }
    sh->failing = ac__calloc((size_t)size + 1, sizeof *sh->failing);
    if (!sh->failing) {
        ac__gather_shared_release(sh);
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    }
    if (o->delay_kind == AC_HEDGE_DELAY_ADAPTIVE) {
        if (ac__latency_window_init(&sh->delay.window, c->window, c->min_samples, c->percentile,
                                    c->delay_ns, c->floor_ns, c->ceiling_ns) != AC_OK) {
            ac__gather_shared_release(sh);
            return NULL;
        }
        sh->delay.adaptive = true;
    }
    return sh;
}

ac_props *ac_router_hedged(int size, const ac_actor_def *routee_def,
                           const ac_hedged_options *options, const ac_routee_options *routee_opts)
{
    ac__clear_status();
    static const char fn[] = "ac_router_hedged";
    static const ac_hedged_options defaults = {0};
    const ac_hedged_options *o = options ? options : &defaults;
    if (ac__gather_check_timeout(fn, o->timeout_ms, "timeout_ms") != AC_OK ||
        ac__router_check(fn, size, routee_def, routee_opts) != AC_OK)
        return NULL;
    hedged_config c = {
        .timeout_ms = (uint32_t)(o->timeout_ms ? o->timeout_ms : AC_HEDGED_DEFAULT_TIMEOUT_MS)};
    if (check_options(fn, size, o, &c) != AC_OK)
        return NULL;
    ac__gather_shared *sh = shared_of(fn, size, o, &c);
    if (!sh)
        return NULL;
    return ac__gather_props(fn, &ac__hedged_kind, sh, size, routee_def, routee_opts);
}

ac_status ac__hedged_setup(ac__router_cfg *cfg, const ac_hedged_options *options, const char *fn,
                           int size)
{
    static const ac_hedged_options defaults = {0};
    const ac_hedged_options *o = options ? options : &defaults;
    if (ac__gather_check_timeout(fn, o->timeout_ms, "timeout_ms") != AC_OK)
        return ac_last_status();
    hedged_config c = {
        .timeout_ms = (uint32_t)(o->timeout_ms ? o->timeout_ms : AC_HEDGED_DEFAULT_TIMEOUT_MS)};
    if (check_options(fn, size, o, &c) != AC_OK)
        return ac_last_status();
    /* pool_size 0: a group's routees have no routee-K names to count by
     * or to remember as failing. */
    ac__gather_shared *sh = shared_of(fn, 0, o, &c);
    if (!sh)
        return ac_last_status();
    cfg->kind = &ac__hedged_kind;
    cfg->extra = sh;
    cfg->extra_free = ac__gather_shared_release_void;
    cfg->skip_cancelled = sh->cancel_losers;
    return AC_OK;
}

ac_props *ac_router_group_hedged(ac_ref *const *routees, size_t n,
                                 const ac_hedged_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_hedged";
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, &ac__hedged_kind, routees, n);
    if (!cfg)
        return NULL;
    if (ac__hedged_setup(cfg, options, fn, (int)n) != AC_OK) {
        ac__router_cfg_free(cfg);
        return NULL;
    }
    return ac__router_props(cfg, NULL, fn);
}
