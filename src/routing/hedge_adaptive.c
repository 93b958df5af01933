/*
 * The adaptive hedging policy (hedge_policy.h): the next attempt goes
 * when the previous one has been out for the given percentile of the
 * router's own observed latencies (latency_window.c: the last `window`
 * successes, winners' and losers' alike), kept within [floor_us,
 * ceiling_us]; until min_samples successes have been seen, delay_us.
 * The window is the state; it records and recomputes without the
 * router's locks.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/hedge_policy.h"
#include "routing/latency_window.h"

/* The options with their defaults filled in. */
typedef struct window_config {
    double percentile;
    uint32_t window, min_samples;
    uint64_t floor_ns, ceiling_ns;
} window_config;

static ac_status check_window(const char *fn, const ac_hedged_options *o, window_config *c)
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

static ac_status check_bounds(const char *fn, const ac_hedged_options *o, uint32_t timeout_ms,
                              window_config *c)
{
    int64_t timeout_us = (int64_t)timeout_ms * 1000;
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

static ac_status adaptive_create(const char *fn, const ac_hedged_options *o, uint64_t delay_ns,
                                 uint32_t timeout_ms, void **state)
{
    window_config c = {0};
    ac_status st = check_window(fn, o, &c);
    if (st == AC_OK)
        st = check_bounds(fn, o, timeout_ms, &c);
    if (st != AC_OK)
        return st;
    ac__latency_window *w = ac__malloc(sizeof *w);
    if (!w)
        return ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    st = ac__latency_window_init(w, c.window, c.min_samples, c.percentile, delay_ns, c.floor_ns,
                                 c.ceiling_ns);
    if (st != AC_OK) {
        free(w);
        return st;
    }
    *state = w;
    return AC_OK;
}

static uint64_t adaptive_delay_ns(void *state) { return ac__latency_window_delay(state); }

static void adaptive_observe(void *state, uint64_t latency_ns)
{
    ac__latency_window_record(state, latency_ns);
}

/* Which percentile, of how many samples, and whether enough have been
 * seen for the delay to be that percentile rather than delay_us. */
static void adaptive_view(void *state, ac_json *out)
{
    const ac__latency_window *w = state;
    uint64_t written = atomic_load_explicit(&w->written, memory_order_relaxed);
    ac_json_key(out, "percentile");
    ac_json_double(out, w->percentile);
    ac_json_key(out, "window");
    ac_json_uint(out, w->cap);
    ac_json_key(out, "samples");
    ac_json_uint(out, written < w->cap ? written : w->cap);
    ac_json_key(out, "min_samples");
    ac_json_uint(out, w->min_samples);
    ac_json_key(out, "learned");
    ac_json_bool(out, written >= w->min_samples);
    ac_json_key(out, "floor_ms");
    ac_json_double(out, (double)w->floor_ns / 1e6);
    ac_json_key(out, "ceiling_ms");
    ac_json_double(out, (double)w->ceiling_ns / 1e6);
}

static void adaptive_destroy(void *state)
{
    ac__latency_window_fini(state);
    free(state);
}

const ac__hedge_policy ac__hedge_adaptive_policy = {
    .kind = AC_HEDGE_DELAY_ADAPTIVE,
    .name = "AC_HEDGE_DELAY_ADAPTIVE",
    .label = "adaptive",
    .create = adaptive_create,
    .delay_ns = adaptive_delay_ns,
    .observe = adaptive_observe,
    .view = adaptive_view,
    .destroy = adaptive_destroy,
};
