/*
 * Deadlines and timers, all on the manual clock: the default timeout
 * (NULL options, or 0) is 4,500 ms and a set one (250 ms) is kept to the
 * millisecond; with every default the caller receives the AggregateError,
 * not its own AskTimeoutError; one timer per scatter, and once the
 * deadline has passed no timer of the scatter is left armed and no
 * message of it is held, even though losers are not cancelled.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

/* Silent routees: pending one millisecond before the deadline, the
 * "none replied" AggregateError exactly at it. */
static void deadline_case(ts_fixture *fx, const char *name,
                          const ac_scatter_gather_options *opts, int64_t expected_ms)
{
    sg_data *d = sg_setup(fx, name, true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *router = sg_spawn_pool(d, 3, opts);
    /* the caller's own ask timeout: the default 5,000 ms (above 4,500) */
    ac_future *f = ac_ask(router, sg_key_new("k", 1), 0);
    assert_non_null(f);
    sg_wait_seen_all(d, 3, 1);
    assert_status(ac_clock_advance(d->sys, expected_ms - 1), AC_OK);
    sg_assert_pending(f, "one millisecond before the deadline");
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: none of 3 routees replied within %lldms",
             ac_ref_path(router), (long long)expected_ms);
    sg_assert_aggregate(st, &a, want, 3);
    assert_true(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

static void test_null_options_default_4500(void **state)
{
    deadline_case(*state, "sg-default", NULL, 4500);
}

static void test_zero_timeout_is_default(void **state)
{
    ac_scatter_gather_options o = {.timeout_ms = 0};
    deadline_case(*state, "sg-zero", &o, AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
    assert_int_equal(AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS, 4500);
}

static void test_timeout_250(void **state)
{
    ac_scatter_gather_options o = {.timeout_ms = 250};
    deadline_case(*state, "sg-250", &o, 250);
}

/* Every default (router 4,500, caller ask 5,000), silent routees: at
 * 4,500 ms the caller has the AggregateError (AC_EFAILED), and its own ask
 * timer was cancelled, never fired. */
static void test_defaults_give_aggregate_not_ask_timeout(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-defaults", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    size_t base = ac_timers_armed(d->sys);
    ac_future *f = ac_ask(router, sg_key_new("k", 1), 0);
    assert_non_null(f);
    sg_wait_seen_all(d, 3, 1);
    assert_int_equal(ac_timers_armed(d->sys), base + 2); /* the caller's ask + the scatter */

    assert_status(ac_clock_advance(d->sys, 4500), AC_OK);
    ac_answer a;
    assert_true(ac_future_poll(f, &a)); /* already there */
    assert_null(a.reply);
    assert_string_equal(ac_error_name(a.error), AC_AGGREGATE_ERROR);
    ac_answer_release(&a);
    ac_status st = sg_wait_future(f, &a);
    assert_status(st, AC_EFAILED);
    assert_string_equal(ac_error_name(a.error), AC_AGGREGATE_ERROR);
    assert_true(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    /* the caller's 5,000 ms timer is gone with the scatter's */
    assert_int_equal(ac_timers_armed(d->sys), base);

    /* past the caller's own deadline nothing changes */
    assert_status(ac_clock_advance(d->sys, 1000), AC_OK);
    st = sg_wait_future(f, &a);
    assert_status(st, AC_EFAILED);
    assert_string_equal(ac_error_name(a.error), AC_AGGREGATE_ERROR);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* While a scatter over 3 silent routees is open, exactly one timer more
 * is armed (not three); two scatters, two. At the deadline both are gone
 * and the caller (an actor, no ask timers) got two AggregateErrors. */
static void test_one_timer_per_scatter(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-onetimer", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_ref *caller = sg_spawn_caller(d, router);
    size_t base = ac_timers_armed(d->sys);

    sg_caller_cmd(d, SG_CMD_TELL, "one");
    sg_wait_seen_all(d, 3, 1);
    assert_int_equal(ac_timers_armed(d->sys), base + 1);
    sg_caller_cmd(d, SG_CMD_TELL, "two");
    sg_wait_seen_all(d, 3, 2);
    assert_int_equal(ac_timers_armed(d->sys), base + 2);

    assert_status(ac_clock_advance(d->sys, 250), AC_OK);
    assert_eventually(ts_wait_eq(&d->caller_got, 2, TS_WAIT_S), "two AggregateErrors");
    assert_int_equal(ac_timers_armed(d->sys), base);
    ac_msg *m = atomic_load(&d->caller_first);
    ac_error *err = ac_msg_error(m);
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: none of 3 routees replied within 250ms",
             ac_ref_path(router));
    assert_non_null(err);
    assert_string_equal(ac_error_name(err), AC_AGGREGATE_ERROR);
    assert_string_equal(ac_error_message(err), want);
    size_t aggregates = 0;
    for (size_t i = 0; i < ts_rec_count(d->rec); i++) {
        char label[TS_REC_LABEL];
        ts_rec_get(d->rec, i, label, sizeof label);
        aggregates += strncmp(label, "caller got AggregateError", 25) == 0;
    }
    assert_int_equal(aggregates, 2);
    ac_ref_release(caller);
    ac_ref_release(router);
}

static bool messages_settled(void *arg)
{
    (void)arg;
    /* everything created is gone but the winner the caller keeps */
    return atomic_load(&sg_created) - atomic_load(&sg_destroyed) == 1;
}

/* A scatter won early keeps its timer until the deadline (losers are not
 * cancelled: one of them still replies, late); after the deadline nothing
 * of it remains — no timer armed, no message held, no dead letter, no
 * log line. */
static void test_nothing_remains_after_deadline(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-remains", true);
    sg_set(d, 1, SG_ECHO, 0);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_LATER, 400);
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_ref *caller = sg_spawn_caller(d, router);
    size_t base = ac_timers_armed(d->sys);

    sg_caller_cmd(d, SG_CMD_TELL, "k");
    assert_eventually(ts_wait_eq(&d->caller_got, 1, TS_WAIT_S), "the winner's reply");
    sg_wait_seen_all(d, 3, 1);
    size_t lines = ts_log_count(ts_fx_log(fx));
    /* the open scatter's timer and routee-3's own schedule */
    assert_int_equal(ac_timers_armed(d->sys), base + 2);

    assert_status(ac_clock_advance(d->sys, 250), AC_OK);
    assert_int_equal(ac_timers_armed(d->sys), base + 1); /* routee-3's schedule only */
    assert_int_equal(atomic_load(&d->replies[3]), 0);

    assert_status(ac_clock_advance(d->sys, 150), AC_OK);
    assert_eventually(ts_wait_ge(&d->replies[3], 1, TS_WAIT_S), "routee-3's late reply");
    assert_int_equal(ac_timers_armed(d->sys), base);
    if (!ts_wait_until(messages_settled, NULL, TS_WAIT_S)) {
        fail_msg("%lld of %lld messages still alive; expected only the winner",
                 (long long)(atomic_load(&sg_created) - atomic_load(&sg_destroyed)),
                 (long long)atomic_load(&sg_created));
    }
    assert_int_equal(atomic_load(&d->caller_got), 1);
    assert_string_equal(sg_key_text(atomic_load(&d->caller_first)), "routee-1:k");
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    if (ts_log_count(ts_fx_log(fx)) != lines) {
        ts_log_dump(ts_fx_log(fx), "log");
        fail_msg("the scatter's end logged something");
    }
    ac_ref_release(caller);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_null_options_default_4500),
        TS_UNIT(test_zero_timeout_is_default),
        TS_UNIT(test_timeout_250),
        TS_UNIT(test_defaults_give_aggregate_not_ask_timeout),
        TS_UNIT(test_one_timer_per_scatter),
        TS_UNIT(test_nothing_remains_after_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
