/*
 * Per-routee outcomes with metrics on: every routee asked ends as a win,
 * a loss, an error or a timeout, so the counts add up to the requests
 * sent, the wins to the messages answered; hedges sent and won count the
 * attempts beyond the first and the messages they won. The spec's two
 * scatter/gather families keep their names and labels beside them.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

static const char *const outcomes[] = {"win", "loss", "error", "timeout"};

static uint64_t outcome_total(hg_data *d, const char *router, int size, int which)
{
    uint64_t n = 0;
    for (int k = 1; k <= size; k++)
        for (int o = 0; o < 4; o++)
            if (which < 0 || which == o)
                n += hg_outcome(d, router, k, outcomes[o]);
    return n;
}

static void expect(hg_data *d, const char *router, int k, uint64_t win, uint64_t loss,
                   uint64_t error, uint64_t timeout)
{
    uint64_t got[4];
    for (int o = 0; o < 4; o++)
        got[o] = hg_outcome(d, router, k, outcomes[o]);
    if (got[0] != win || got[1] != loss || got[2] != error || got[3] != timeout)
        fail_msg("routee-%d: win %llu loss %llu error %llu timeout %llu, expected %llu %llu "
                 "%llu %llu",
                 k, (unsigned long long)got[0], (unsigned long long)got[1],
                 (unsigned long long)got[2], (unsigned long long)got[3],
                 (unsigned long long)win, (unsigned long long)loss, (unsigned long long)error,
                 (unsigned long long)timeout);
}

static void answered_by(hg_data *d, ac_future *f, int k, const char *key)
{
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, k, key);
    ac_answer_release(&a);
    ac_future_release(f);
}

/* Four messages, 10 ms delay, two attempts each at most, 100 ms deadline:
 *   a  routee-1 answers in 5 ms                      routee-1 win
 *   b  routee-2 silent; the hedge to routee-3 wins   routee-3 win, routee-2 timeout
 *   c  routee-3 fails; routee-1 at once, and wins    routee-3 error, routee-1 win
 *   d  routee-1 slow (30 ms), the hedge to routee-2
 *      (asked last: it had timed out) wins           routee-2 win, routee-1 loss */
static void test_hedged_outcomes_add_up(void **state)
{
    hg_data *d = hg_setup(*state, "hg-outcomes", true, 0);
    ac_hedged_options o = {.timeout_ms = 100, .delay_us = 10000, .max_attempts = 2};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(3, &hg_routee_def, &o, &ro), 3);
    hg_set(d, 1, 5, false);
    ac_future *f = hg_ask(d, "a", 0);
    hg_advance(d, 5);
    answered_by(d, f, 1, "a");

    hg_set(d, 2, HG_SILENT, false);
    hg_set(d, 3, 2, false);
    f = hg_ask(d, "b", 0);
    hg_advance(d, 12);
    answered_by(d, f, 3, "b");
    hg_advance(d, 88); /* routee-2's deadline */

    hg_set(d, 3, 1, true);
    f = hg_ask(d, "c", 0);
    hg_advance(d, 6);
    answered_by(d, f, 1, "c");

    hg_set(d, 1, 30, false);
    hg_set(d, 2, 5, false);
    f = hg_ask(d, "d", 0);
    hg_advance(d, 15);
    answered_by(d, f, 2, "d");
    hg_advance(d, 15); /* routee-1's late reply */

    hg_wait_outcomes(d, "hedged", 3, 7);
    expect(d, "hedged", 1, 2, 1, 0, 0);
    expect(d, "hedged", 2, 1, 0, 0, 1);
    expect(d, "hedged", 3, 1, 0, 1, 0);
    assert_int_equal(outcome_total(d, "hedged", 3, -1), (uint64_t)hg_seen_total(d));
    assert_int_equal(outcome_total(d, "hedged", 3, 0), 4);
    const char *first[] = {"first"};
    assert_int_equal(hg_counter(d, "router_hedged_resolved_total", first, 1), 4);
    assert_int_equal(hg_counter(d, "router_hedges_sent_total", NULL, 0), 3);
    assert_int_equal(hg_counter(d, "router_hedges_won_total", NULL, 0), 3);
    assert_int_equal(hg_seen_total(d), 7);
    ac_metric_value v;
    assert_status(ac_metrics_read(d->sys, "router_hedged_latency_seconds", NULL, 0, &v), AC_OK);
    assert_int_equal(v.count, 4);
    ac_ref_release(router);
}

/* Scatter/gather counts per routee too; its own two families stay. */
static void test_scatter_outcomes_beside_the_spec_families(void **state)
{
    hg_data *d = hg_setup(*state, "hg-sgoutcomes", true, 0);
    ac_scatter_gather_options o = {.timeout_ms = 100};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(
        d, ac_router_scatter_gather_first_completed(3, &hg_routee_def, &o, &ro), 3);
    hg_set(d, 1, 1, false);
    hg_set(d, 2, 2, true);
    hg_set(d, 3, HG_SILENT, false);
    for (int i = 0; i < 5; i++) {
        ac_future *f = hg_ask(d, "k", 0);
        hg_barrier(d, 3); /* every routee has scheduled its answer */
        assert_status(ac_clock_advance(d->sys, 1), AC_OK);
        answered_by(d, f, 1, "k");
        hg_advance(d, 99);
    }
    hg_wait_outcomes(d, "scatter-gather", 3, 15);
    expect(d, "scatter-gather", 1, 5, 0, 0, 0);
    expect(d, "scatter-gather", 2, 0, 0, 5, 0);
    expect(d, "scatter-gather", 3, 0, 0, 0, 5);
    assert_int_equal(outcome_total(d, "scatter-gather", 3, -1), 15);
    const char *first[] = {"first"};
    assert_int_equal(hg_counter(d, "router_scatter_gather_resolved_total", first, 1), 5);
    ac_metric_value v;
    assert_status(ac_metrics_read(d->sys, "router_scatter_gather_latency_seconds", NULL, 0, &v),
                  AC_OK);
    assert_int_equal(v.count, 5);
    /* a routee beyond the pool has no series */
    const char *beyond[] = {"scatter-gather", "routee-4", "win"};
    assert_status(ac_metrics_read(d->sys, "router_routee_outcomes_total", beyond, 3, &v),
                  AC_ENOTFOUND);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_hedged_outcomes_add_up),
        TS_UNIT(test_scatter_outcomes_beside_the_spec_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
