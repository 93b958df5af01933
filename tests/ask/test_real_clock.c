/*
 * The real clock: a timeout never settles before it has elapsed, and does
 * settle (well within the generous bound). The exact behaviour of timeouts
 * is covered on the manual clock; these only check that the timer thread
 * drives the same machinery in real time.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define ROUNDS 5

typedef struct rc_data {
    ac_system *sys;
    atomic_llong requests;
    atomic_llong got;
    _Atomic double got_at; /* ts_now() when the scheduled message arrived */
} rc_data;

static void silent_receive(ac_ctx *ctx, ac_msg *msg)
{
    rc_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str)) {
        atomic_store(&d->got_at, ts_now());
        atomic_fetch_add(&d->got, 1);
        return;
    }
    atomic_fetch_add(&d->requests, 1);
}

static const ac_actor_def silent_def = {.name = "Silent", .receive = silent_receive};

static rc_data *setup(ts_fixture *fx)
{
    rc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->sys = ts_fx_system(fx, "real", NULL);
    assert_non_null(d->sys);
    return d;
}

static void test_ask_timeout_real_clock(void **state)
{
    ts_fixture *fx = *state;
    rc_data *d = setup(fx);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);

    double shortest = 1e9, longest = 0;
    for (int i = 0; i < ROUNDS; i++) {
        ac_answer a;
        double t0 = ts_now();
        ac_status st = ac_ask_wait(silent, ac_msg_int64_new(i), 50, &a);
        double elapsed = ts_now() - t0;
        assert_status(st, AC_ETIMEOUT);
        assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
        assert_null(a.reply);
        ac_answer_release(&a);
        shortest = elapsed < shortest ? elapsed : shortest;
        longest = elapsed > longest ? elapsed : longest;
    }
    /* A timed-out ask may settle before the silent actor has even taken
     * its request off the mailbox: wait for the count, do not sample it. */
    assert_eventually(ts_wait_eq(&d->requests, ROUNDS, TS_WAIT_S), "every request handled");
    assert_true(ac_clock_now_ms(d->sys) >= 50);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    if (shortest < 0.050 || longest >= TS_WAIT_S) {
        fail_msg("an ask with a 50 ms timeout settled after %.3f..%.3f ms (expected >= 50 ms)",
                 shortest * 1e3, longest * 1e3);
    }

    /* A future settles the same way. */
    double t0 = ts_now();
    ac_future *f = ac_ask(silent, ac_msg_int64_new(99), 50);
    assert_non_null(f);
    ac_answer a;
    assert_status(ac_future_wait(f, (int64_t)(TS_WAIT_S * 1000), &a), AC_ETIMEOUT);
    double elapsed = ts_now() - t0;
    ac_answer_release(&a);
    ac_future_release(f);
    if (elapsed < 0.050) {
        fail_msg("a future with a 50 ms timeout settled after %.3f ms", elapsed * 1e3);
    }
    ac_ref_release(silent);
}

/* A wait longer than the clock can count waits for the answer; it does
 * not overflow into a deadline in the past. */
static void test_future_wait_beyond_the_clock(void **state)
{
    ts_fixture *fx = *state;
    rc_data *d = setup(fx);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);
    const int64_t waits[] = {INT64_MAX, INT64_MAX / 2, INT64_MAX / 1000000};
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
        double t0 = ts_now();
        ac_future *f = ac_ask(silent, ac_msg_int64_new((int64_t)i), 100);
        assert_non_null(f);
        ac_answer a;
        assert_status(ac_future_wait(f, waits[i], &a), AC_ETIMEOUT);
        double elapsed = ts_now() - t0;
        assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
        ac_answer_release(&a);
        ac_future_release(f);
        if (elapsed < 0.100)
            fail_msg("waiting %lld ms returned after %.3f ms, before the ask's 100 ms timeout",
                     (long long)waits[i], elapsed * 1e3);
    }
    ac_ref_release(silent);
}

static bool got_one(void *p)
{
    return atomic_load(&((rc_data *)p)->got) >= 1;
}

static void test_schedule_once_real_clock(void **state)
{
    ts_fixture *fx = *state;
    rc_data *d = setup(fx);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);

    double t0 = ts_now();
    ac_cancellable *c = ac_schedule_once(silent, 30, ac_msg_str_new("tick"), NULL);
    assert_non_null(c);
    assert_eventually(ts_wait_until(got_one, d, TS_WAIT_S), "the scheduled message");
    double elapsed = atomic_load(&d->got_at) - t0;
    if (elapsed < 0.030) {
        fail_msg("a message scheduled 30 ms ahead arrived after %.3f ms", elapsed * 1e3);
    }
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_false(ac_cancel(c));
    ac_cancellable_release(c);
    ac_ref_release(silent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_ask_timeout_real_clock),
        TS_UNIT(test_schedule_once_real_clock),
        TS_UNIT(test_future_wait_beyond_the_clock),
    };
    return cmocka_run_group_tests_name("real_clock", tests, NULL, NULL);
}
