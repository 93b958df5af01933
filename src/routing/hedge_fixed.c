/*
 * The fixed hedging policy (hedge_policy.h): the next attempt goes
 * delay_us after the previous one, always. It learns nothing, so it
 * reads no clock for successes, and its state is one word written once.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/hedge_policy.h"

typedef struct fixed_delay {
    uint64_t ns;
} fixed_delay;

/* A fixed delay takes no adaptive option: one set says delay_kind was
 * forgotten. */
static ac_status check_unset(const char *fn, const ac_hedged_options *o)
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

static ac_status fixed_create(const char *fn, const ac_hedged_options *o, uint64_t delay_ns,
                              uint32_t timeout_ms, void **state)
{
    (void)timeout_ms;
    ac_status st = check_unset(fn, o);
    if (st != AC_OK)
        return st;
    fixed_delay *d = ac__malloc(sizeof *d);
    if (!d)
        return ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    d->ns = delay_ns;
    *state = d;
    return AC_OK;
}

static uint64_t fixed_delay_ns(void *state) { return ((const fixed_delay *)state)->ns; }

static void fixed_destroy(void *state) { free(state); }

const ac__hedge_policy ac__hedge_fixed_policy = {
    .kind = AC_HEDGE_DELAY_FIXED,
    .name = "AC_HEDGE_DELAY_FIXED",
    .label = "fixed",
    .create = fixed_create,
    .delay_ns = fixed_delay_ns,
    .destroy = fixed_destroy,
};
