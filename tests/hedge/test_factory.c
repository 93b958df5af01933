/*
 * The factories refuse options they cannot use — a quorum beyond the
 * pool or below 1, a negative delay, a percentile outside (0, 100), a
 * budget ratio outside [0, 1], and the rest — with AC_EINVAL and a
 * message naming the option and its value, before anything is spawned;
 * zeroed options are the defaults.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "hg_support.h"

static const ac_actor_def routee = {.name = "R", .receive = NULL};

static void nop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def good = {.name = "R", .receive = nop_receive};

static void refused(ac_props *p, const char *fn, const char *needle)
{
    if (p != NULL) {
        ac_props_free(p);
        fail_msg("%s accepted options with %s", fn, needle);
    }
    assert_last_error(AC_EINVAL);
    if (strstr(ac_last_error(), fn) == NULL || strstr(ac_last_error(), needle) == NULL)
        fail_msg("the message \"%s\" should name %s and say \"%s\"", ac_last_error(), fn, needle);
}

static void accepted(ac_props *p)
{
    if (p == NULL)
        fail_msg("refused: %s", ac_last_error());
    assert_status(ac_last_status(), AC_OK);
    ac_props_free(p);
}

static ac_props *sg(int size, const ac_scatter_gather_options *o)
{
    return ac_router_scatter_gather_first_completed(size, &good, o, NULL);
}

static void test_scatter_quorum_and_budget(void **state)
{
    (void)state;
    static const char fn[] = "ac_router_scatter_gather_first_completed";
    refused(sg(3, &(ac_scatter_gather_options){.quorum = 4}), fn, "quorum = 4");
    refused(sg(3, &(ac_scatter_gather_options){.quorum = -1}), fn, "quorum = -1");
    accepted(sg(3, &(ac_scatter_gather_options){.quorum = 3}));
    accepted(sg(3, &(ac_scatter_gather_options){.quorum = 1}));
    accepted(sg(3, &(ac_scatter_gather_options){0})); /* quorum 0: the first reply */
    static const double bad_ratios[] = {-0.1, 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_ratios / sizeof bad_ratios[0]; i++) {
        ac_hedge_budget b = {.ratio = bad_ratios[i]};
        refused(sg(3, &(ac_scatter_gather_options){.budget = &b}), fn, "budget ratio");
    }
    ac_hedge_budget tokens = {.ratio = 0.1, .max_tokens = 0.5};
    refused(sg(3, &(ac_scatter_gather_options){.budget = &tokens}), fn, "max_tokens = 0.5");
    tokens.max_tokens = 2e6;
    refused(sg(3, &(ac_scatter_gather_options){.budget = &tokens}), fn, "max_tokens");
    ac_hedge_budget edges[] = {{.ratio = 0}, {.ratio = 1, .max_tokens = 1}, {.ratio = 0.05}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        accepted(sg(3, &(ac_scatter_gather_options){.budget = &edges[i]}));
    /* the pool is checked before the quorum */
    refused(sg(0, &(ac_scatter_gather_options){.quorum = 1}), fn, "size = 0");
}

static ac_props *hedged(int size, const ac_hedged_options *o)
{
    return ac_router_hedged(size, &good, o, NULL);
}

static void test_hedged_options(void **state)
{
    (void)state;
    static const char fn[] = "ac_router_hedged";
    accepted(hedged(3, NULL));
    accepted(hedged(3, &(ac_hedged_options){0}));
    accepted(hedged(3, &(ac_hedged_options){.delay_kind = AC_HEDGE_DELAY_ADAPTIVE}));
    refused(ac_router_hedged(3, &routee, NULL, NULL), fn, "has no receive");
    refused(ac_router_hedged(3, NULL, NULL, NULL), fn, "routee definition is NULL");
    refused(hedged(0, NULL), fn, "size = 0");
    refused(hedged(3, &(ac_hedged_options){.timeout_ms = -1}), fn, "timeout_ms = -1");
    refused(hedged(3, &(ac_hedged_options){.max_attempts = -1}), fn, "max_attempts = -1");
    refused(hedged(3, &(ac_hedged_options){.max_attempts = 4}), fn, "max_attempts = 4");
    refused(hedged(3, &(ac_hedged_options){.delay_us = -5}), fn, "delay_us = -5");
    refused(hedged(3, &(ac_hedged_options){.timeout_ms = 10, .delay_us = 10000}), fn,
            "not below the timeout");
    refused(hedged(3, &(ac_hedged_options){.delay_kind = (ac_hedge_delay_kind)7}), fn,
            "delay_kind = 7");
    refused(hedged(3, &(ac_hedged_options){.percentile = 95}), fn, "percentile is set");
    refused(hedged(3, &(ac_hedged_options){.floor_us = 5}), fn, "floor_us is set");
    ac_hedged_options a = {.delay_kind = AC_HEDGE_DELAY_ADAPTIVE};
    static const double bad_percentiles[] = {-1, 100, 150, NAN};
    for (size_t i = 0; i < sizeof bad_percentiles / sizeof bad_percentiles[0]; i++) {
        a.percentile = bad_percentiles[i];
        refused(hedged(3, &a), fn, "outside (0, 100)");
    }
    a.percentile = 99.9;
    accepted(hedged(3, &a));
    a.percentile = 0.1;
    accepted(hedged(3, &a));
    a.percentile = 0;
    a.window = -1;
    refused(hedged(3, &a), fn, "window = -1");
    a.window = AC_HEDGE_MAX_WINDOW + 1;
    refused(hedged(3, &a), fn, "window");
    a.window = 10;
    a.min_samples = 11;
    refused(hedged(3, &a), fn, "min_samples = 11");
    a.min_samples = 0; /* the default, capped at the window */
    accepted(hedged(3, &a));
    a.floor_us = 5000;
    a.ceiling_us = 4000;
    refused(hedged(3, &a), fn, "floor_us = 5000 is above ceiling_us = 4000");
    a.floor_us = -1;
    refused(hedged(3, &a), fn, "floor_us = -1");
    a.floor_us = 0;
    a.ceiling_us = 5000000; /* beyond the default 4,500 ms timeout */
    refused(hedged(3, &a), fn, "ceiling_us = 5000000");
    a.ceiling_us = 0;
    ac_hedge_budget b = {.ratio = 2};
    a.budget = &b;
    refused(hedged(3, &a), fn, "budget ratio = 2");
    b.ratio = 0.05;
    accepted(hedged(3, &a));
}

/* The order of attempts and its probe interval. */
static void test_hedged_order_options(void **state)
{
    (void)state;
    static const char fn[] = "ac_router_hedged";
    accepted(hedged(3, &(ac_hedged_options){.order = AC_HEDGE_ORDER_ROTATION}));
    accepted(hedged(3, &(ac_hedged_options){.order = AC_HEDGE_ORDER_LATENCY,
                                            .probe_interval_ms = 2000}));
    refused(hedged(3, &(ac_hedged_options){.order = (ac_hedge_order)9}), fn, "order = 9");
    refused(hedged(3, &(ac_hedged_options){.probe_interval_ms = -1}), fn,
            "probe_interval_ms = -1");
    refused(hedged(3, &(ac_hedged_options){.probe_interval_ms = (int64_t)INT32_MAX + 1}), fn,
            "probe_interval_ms = 2147483648");
    refused(hedged(3, &(ac_hedged_options){.order = AC_HEDGE_ORDER_ROTATION,
                                           .probe_interval_ms = 100}),
            fn, "the rotation order probes nothing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scatter_quorum_and_budget),
        cmocka_unit_test(test_hedged_options),
        cmocka_unit_test(test_hedged_order_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
