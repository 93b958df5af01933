/*
 * The adaptive hedge delay. The window alone (white-box): the fixed value
 * until it has enough samples, then the nearest-rank percentile of the
 * last W, within the floor and the ceiling, following the distribution as
 * it shifts. Then the hedged router on the manual clock: its delay is the
 * percentile of its own observed latencies, down when the routees speed
 * up (to the floor), up when they slow down (to the ceiling), each time
 * honoured to the millisecond.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"
#include "routing/latency_window.h"

#define MS 1000000ull

static void test_window_follows_a_shifting_distribution(void **state)
{
    (void)state;
    ac__latency_window w;
    assert_status(ac__latency_window_init(&w, 50, 10, 95.0, 7 * MS, 1 * MS, 1000 * MS), AC_OK);
    for (uint64_t i = 1; i <= 9; i++) {
        ac__latency_window_record(&w, i * MS);
        assert_int_equal(ac__latency_window_delay(&w), 7 * MS); /* not enough yet */
    }
    for (uint64_t i = 10; i <= 50; i++)
        ac__latency_window_record(&w, i * MS);
    assert_int_equal(ac__latency_window_delay(&w), 48 * MS); /* rank ceil(.95 * 50) of 1..50 */
    /* a slower distribution takes over as it fills the window */
    for (uint64_t i = 100; i < 125; i++)
        ac__latency_window_record(&w, i * MS);
    assert_int_equal(ac__latency_window_delay(&w), 122 * MS); /* 26..50 and 100..124 */
    for (uint64_t i = 125; i < 150; i++)
        ac__latency_window_record(&w, i * MS);
    assert_int_equal(ac__latency_window_delay(&w), 147 * MS); /* 100..149 */
    /* a much faster one: down to the floor */
    for (int i = 0; i < 50; i++)
        ac__latency_window_record(&w, MS / 10);
    assert_int_equal(ac__latency_window_delay(&w), 1 * MS);
    ac__latency_window_fini(&w);
}

static void test_window_ceiling_and_equal_samples(void **state)
{
    (void)state;
    ac__latency_window w;
    assert_status(ac__latency_window_init(&w, 1000, 100, 99.0, 5 * MS, 0, 30 * MS), AC_OK);
    for (int i = 0; i < 5000; i++)
        ac__latency_window_record(&w, 40 * MS); /* all equal, all above the ceiling */
    assert_int_equal(ac__latency_window_delay(&w), 30 * MS);
    for (int i = 0; i < 1000; i++)
        ac__latency_window_record(&w, 2 * MS);
    assert_int_equal(ac__latency_window_delay(&w), 2 * MS);
    ac__latency_window_fini(&w);
}

/* One request whose routees answer after the set latencies; waits for
 * every reply (`ms` is past the last). */
static void request(hg_data *d, const char *key, int64_t ms)
{
    ac_future *f = hg_ask(d, key, 0);
    hg_advance(d, ms);
    ac_answer a;
    assert_status(hg_wait(f, &a), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
}

/* The next message's primary is routee `slow` (silent for 100 ms): the
 * hedge to the other goes out exactly `delay` ms later. */
static void check_delay(hg_data *d, int slow, int64_t delay, long long other_latency)
{
    int other = 3 - slow;
    hg_set(d, slow, 100, false);
    hg_set(d, other, other_latency, false);
    long long before = atomic_load(&d->seen[other]);
    ac_future *f = hg_ask(d, "probe", 0);
    hg_advance(d, delay - 1);
    if (atomic_load(&d->seen[other]) != before)
        fail_msg("the hedge went out before %lld ms", (long long)delay);
    hg_advance(d, 1);
    if (atomic_load(&d->seen[other]) != before + 1)
        fail_msg("no hedge at %lld ms", (long long)delay);
    hg_advance(d, 100);
    ac_answer a;
    assert_status(hg_wait(f, &a), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
}

static void set_both(hg_data *d, long long latency)
{
    hg_set(d, 1, latency, false);
    hg_set(d, 2, latency, false);
}

/* p50 over the last 10 replies, 50 ms until there are 10, within 9..24 ms. */
static void test_router_delay_tracks_its_latency(void **state)
{
    hg_data *d = hg_setup(*state, "hg-adaptive", true, 0);
    ac_hedged_options o = {.timeout_ms = 1000,
                           .delay_kind = AC_HEDGE_DELAY_ADAPTIVE,
                           .delay_us = 50000,
                           .percentile = 50,
                           .window = 10,
                           .min_samples = 10,
                           .floor_us = 9000,
                           .ceiling_us = 24000};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, &o, &ro), 2);
    /* 20 ms replies, below the initial 50: no hedge; then the delay is 20 */
    set_both(d, 20);
    for (int i = 0; i < 10; i++)
        request(d, "warm", 20);
    assert_int_equal(hg_counter(d, "router_hedges_sent_total", NULL, 0), 0);
    check_delay(d, 1, 20, 20); /* message 10 starts at routee-1 */
    /* faster routees: the delay follows them down, to the floor */
    set_both(d, 8);
    for (int i = 0; i < 10; i++)
        request(d, "fast", 8);
    check_delay(d, 2, 9, 8); /* message 21 starts at routee-2 */
    /* slower ones: up, to the ceiling (every message hedged meanwhile) */
    set_both(d, 30);
    for (int i = 0; i < 6; i++)
        request(d, "slow", 70);
    check_delay(d, 1, 24, 30); /* message 28 starts at routee-1 */
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_follows_a_shifting_distribution),
        cmocka_unit_test(test_window_ceiling_and_equal_samples),
        TS_UNIT(test_router_delay_tracks_its_latency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
