/*
 * The hedged router with a fixed delay, on the manual clock: each next
 * routee is asked exactly when the delay has passed without a success,
 * at once when an attempt fails; the first success wins with its routee
 * as the sender; failures are one AggregateError with members in the
 * order the routees were asked; round-robin starts, and routees known to
 * be failing go last until they succeed again.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

static ac_ref *hedged(hg_data *d, int size, const ac_hedged_options *o)
{
    ac_routee_options ro = hg_routee_options(d);
    return hg_spawn(d, ac_router_hedged(size, &hg_routee_def, o, &ro), size);
}

/* A 20 ms delay: routee-2 is asked at 20 ms, routee-3 at 40 ms, not a
 * millisecond earlier; routee-3's reply (5 ms after it was asked) wins. */
static void test_delay_honoured_exactly(void **state)
{
    hg_data *d = hg_setup(*state, "hg-exact", true, 0);
    hg_set(d, 1, HG_SILENT, false);
    hg_set(d, 2, HG_SILENT, false);
    hg_set(d, 3, 5, false);
    ac_hedged_options o = {.timeout_ms = 1000, .delay_us = 20000};
    ac_ref *router = hedged(d, 3, &o);
    ac_future *f = hg_ask(d, "k", 0);
    hg_quiesce(d);
    assert_int_equal(atomic_load(&d->seen[1]), 1);
    hg_advance(d, 19);
    assert_int_equal(atomic_load(&d->seen[2]), 0);
    hg_advance(d, 1);
    assert_int_equal(atomic_load(&d->seen[2]), 1);
    hg_advance(d, 19);
    assert_int_equal(atomic_load(&d->seen[3]), 0);
    hg_advance(d, 1);
    assert_int_equal(atomic_load(&d->seen[3]), 1);
    hg_advance(d, 4);
    hg_assert_pending(f, "4 ms after routee-3 was asked");
    hg_advance(d, 1);
    ac_answer a;
    assert_true(ac_future_poll(f, &a)); /* answered inside the advance */
    hg_assert_reply(AC_OK, &a, d, 3, "k");
    ac_answer_release(&a);
    assert_int_equal(hg_counter(d, "router_hedges_sent_total", NULL, 0), 2);
    assert_int_equal(hg_counter(d, "router_hedges_won_total", NULL, 0), 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_future_release(f);
    ac_ref_release(router);
}

/* Zeroed options: a 10 ms delay. */
static void test_default_delay_is_10ms(void **state)
{
    hg_data *d = hg_setup(*state, "hg-default", true, 0);
    hg_set(d, 1, HG_SILENT, false);
    hg_set(d, 2, 0, false);
    ac_ref *router = hedged(d, 2, NULL);
    ac_future *f = hg_ask(d, "k", 0);
    hg_advance(d, 9);
    assert_int_equal(atomic_load(&d->seen[2]), 0);
    hg_advance(d, 1);
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, 2, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* An error answer sends the next attempt at once, not at the delay; so
 * does one that comes at once (from the routee's own turn). */
static void test_error_triggers_the_next_at_once(void **state)
{
    hg_data *d = hg_setup(*state, "hg-error", true, 0);
    hg_set(d, 1, 3, true);
    hg_set(d, 2, 5, false);
    ac_hedged_options o = {.timeout_ms = 1000, .delay_us = 20000};
    ac_ref *router = hedged(d, 3, &o);
    ac_future *f = hg_ask(d, "k", 0);
    hg_advance(d, 2);
    assert_int_equal(atomic_load(&d->seen[2]), 0);
    hg_advance(d, 1); /* routee-1's error at 3 ms */
    assert_int_equal(atomic_load(&d->seen[2]), 1);
    hg_advance(d, 5);
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, 2, "k");
    ac_answer_release(&a);
    ac_future_release(f);

    /* the next message starts at routee-2; its immediate error hands over
     * to routee-3 with the clock standing still */
    hg_set(d, 2, 0, true);
    hg_set(d, 3, 0, false);
    f = hg_ask(d, "k2", 0);
    hg_assert_reply(hg_wait(f, &a), &a, d, 3, "k2");
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_clock_now_ms(d->sys), 8);
    ac_ref_release(router);
}

/* Every routee fails: "all 3 routees failed", members in the order asked
 * (the start is routee-1 for the first message). */
static void test_all_failed(void **state)
{
    hg_data *d = hg_setup(*state, "hg-allfail", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, true);
    ac_ref *router = hedged(d, 3, NULL);
    ac_future *f = hg_ask(d, "k", 0);
    ac_answer a;
    ac_status st = hg_wait(f, &a);
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s: all 3 routees failed", ac_ref_path(router));
    hg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        char m[64];
        snprintf(m, sizeof m, "routee-%zu failed on k", i + 1);
        assert_string_equal(ac_error_message(ac_error_member(a.error, i)), m);
    }
    assert_ptr_equal(a.sender, router);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* max_attempts 2 of 3 silent routees, 30 ms delay, 100 ms deadline: two
 * routees asked, and at 100 ms "none of 2 routees replied within 100ms"
 * with their two AskTimeoutErrors; no timer of the request is left. */
static void test_timeout_and_max_attempts(void **state)
{
    hg_data *d = hg_setup(*state, "hg-timeout", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, HG_SILENT, false);
    ac_hedged_options o = {.timeout_ms = 100, .delay_us = 30000, .max_attempts = 2};
    ac_ref *router = hedged(d, 3, &o);
    size_t base = ac_timers_armed(d->sys);
    ac_future *f = hg_ask(d, "k", 1000);
    hg_advance(d, 99);
    hg_assert_pending(f, "before the deadline");
    assert_int_equal(atomic_load(&d->seen[2]), 1);
    assert_int_equal(atomic_load(&d->seen[3]), 0);
    hg_advance(d, 1);
    ac_answer a;
    ac_status st = hg_wait(f, &a);
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s: none of 2 routees replied within 100ms",
             ac_ref_path(router));
    hg_assert_aggregate(st, &a, want, 2);
    assert_true(ac_error_all_timeouts(a.error));
    for (size_t i = 0; i < 2; i++) {
        char m[256];
        snprintf(m, sizeof m, "Ask timed out on %s after 100 ms",
                 ac_ref_path(atomic_load(&d->self[i + 1])));
        assert_string_equal(ac_error_message(ac_error_member(a.error, i)), m);
    }
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_timers_armed(d->sys), base);
    assert_int_equal(atomic_load(&d->seen[3]), 0);
    ac_ref_release(router);
}

static void ask_expect(hg_data *d, const char *key, int k)
{
    ac_future *f = hg_ask(d, key, 0);
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, k, key);
    ac_answer_release(&a);
    ac_future_release(f);
    hg_quiesce(d);
}

/* In the rotation order, messages start at routee-1, -2, -3, -1 …
 * whatever the routees' latency; a routee whose last answer was an
 * error is asked last until it succeeds again. */
static void test_round_robin_and_failing_routees_last(void **state)
{
    hg_data *d = hg_setup(*state, "hg-rr", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    ac_hedged_options o = {
        .timeout_ms = 1000, .delay_us = 20000, .order = AC_HEDGE_ORDER_ROTATION};
    ac_ref *router = hedged(d, 3, &o);
    ask_expect(d, "a", 1);
    ask_expect(d, "b", 2);
    ask_expect(d, "c", 3);
    hg_set(d, 1, 0, true);
    ask_expect(d, "d", 2); /* routee-1 failed; routee-2 at once */
    hg_set(d, 1, 0, false);
    ask_expect(d, "e", 2);
    ask_expect(d, "f", 3);
    long long seen1 = atomic_load(&d->seen[1]);
    ask_expect(d, "g", 2); /* routee-1's turn, but it is known to be failing */
    assert_int_equal(atomic_load(&d->seen[1]), seen1);
    /* the healthy ones slow down: the hedge reaches routee-1, which wins
     * and is healthy again */
    hg_set(d, 2, 50, false);
    hg_set(d, 3, 50, false);
    ac_future *f = hg_ask(d, "h", 0); /* starts at routee-2 */
    hg_advance(d, 40); /* routee-3 at 20, routee-1 at 40, which answers at once */
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, 1, "h");
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 50); /* the losers' replies */
    hg_set(d, 2, 0, false);
    hg_set(d, 3, 0, false);
    ask_expect(d, "i", 3);
    ask_expect(d, "j", 1); /* routee-1's turn again, and it is asked first */
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_delay_honoured_exactly),
        TS_UNIT(test_default_delay_is_10ms),
        TS_UNIT(test_error_triggers_the_next_at_once),
        TS_UNIT(test_all_failed),
        TS_UNIT(test_timeout_and_max_attempts),
        TS_UNIT(test_round_robin_and_failing_routees_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
