/*
 * Timers on the manual clock: one-shot and repeating schedules, cancelling,
 * the armed count, repeats to a stopped actor, handles and bad input;
 * microsecond delays (rounded up to the whole ms the manual clock moves
 * in), timers sharing a deadline, and a timer that cascades down the
 * wheel as the clock steps towards it.
 *
 * Due timers fire on the thread that advances the clock, so a ping sent by
 * that thread afterwards is handled after every message the advance
 * delivered: the tests use it as a barrier instead of sleeping.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define MAX_DELIVERIES 256

static atomic_llong g_destroyed;

static void counted_destroy(void *payload, size_t size)
{
    (void)payload;
    (void)size;
    atomic_fetch_add(&g_destroyed, 1);
}

static const ac_msg_type counted_type = {.name = "test.Tick", .destroy = counted_destroy};

static ac_msg *tick_new(int64_t value)
{
    ac_msg *m = ac_msg_new(&counted_type, sizeof value);
    assert_non_null(m);
    memcpy(ac_msg_payload(m), &value, sizeof value);
    return m;
}

typedef struct tm_data {
    ac_system *sys;
    atomic_llong got;     /* tick messages received */
    atomic_llong pongs;
    atomic_llong finished;
    atomic_llong bad;
    /* deliveries, in order: the clock when each was handled, its value,
     * the message's address (a repeat shares one message) and its sender */
    int64_t at[MAX_DELIVERIES];
    int64_t value[MAX_DELIVERIES];
    const void *msg[MAX_DELIVERIES];
    char sender[MAX_DELIVERIES][64];
    ac_ref *target;
    ac_cancellable *handle; /* for the self-scheduling actor */
} tm_data;

static tm_data *setup(ts_fixture *fx)
{
    tm_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_system_options o = {.manual_clock = true};
    d->sys = ts_fx_system(fx, "timers", &o);
    assert_non_null(d->sys);
    atomic_store(&g_destroyed, 0);
    return d;
}

/* Records every tick with the clock at the moment it is handled. */
static void receiver_receive(ac_ctx *ctx, ac_msg *msg)
{
    tm_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), "ping") == 0) {
        atomic_fetch_add(&d->pongs, 1);
        return;
    }
    if (!ac_msg_is(msg, &counted_type)) {
        atomic_fetch_add(&d->bad, 1);
        return;
    }
    long long n = atomic_load(&d->got);
    if (n < MAX_DELIVERIES) {
        d->at[n] = ac_clock_now_ms(ac_ctx_system(ctx));
        memcpy(&d->value[n], ac_msg_data(msg), sizeof(int64_t));
        d->msg[n] = msg;
        snprintf(d->sender[n], sizeof d->sender[n], "%s",
                 ac_sender(ctx) ? ac_ref_name(ac_sender(ctx)) : "");
    }
    atomic_fetch_add(&d->got, 1); /* publishes the record above */
}

static const ac_actor_def receiver_def = {.name = "Receiver", .receive = receiver_receive};

static void sync_with(tm_data *d, ac_ref *ref)
{
    long long before = atomic_load(&d->pongs);
    assert_status(ac_tell(ref, ac_msg_str_new("ping"), NULL), AC_OK);
    assert_eventually(ts_wait_ge(&d->pongs, before + 1, TS_WAIT_S), "the receiver to handle a ping");
}

/* Advance and wait until the receiver has handled what the advance sent. */
static void advance(tm_data *d, ac_ref *r, int64_t ms)
{
    assert_status(ac_clock_advance(d->sys, ms), AC_OK);
    sync_with(d, r);
}

/* Advance one millisecond at a time. */
static void advance_steps(tm_data *d, ac_ref *r, int64_t ms)
{
    for (int64_t i = 0; i < ms; i++) {
        advance(d, r, 1);
    }
}

static void test_once(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    ac_ref *s = ts_spawn(d->sys, &receiver_def, d, "s");
    assert_non_null(r);
    assert_non_null(s);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);

    ac_cancellable *c = ac_schedule_once(r, 100, tick_new(7), s);
    assert_non_null(c);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    advance(d, r, 99);
    assert_int_equal(ac_clock_now_ms(d->sys), 99);
    assert_int_equal(atomic_load(&d->got), 0);
    assert_int_equal(ac_timers_armed(d->sys), 1);

    advance(d, r, 1);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(atomic_load(&d->got), 1);
    assert_int_equal(d->at[0], 100);
    assert_int_equal(d->value[0], 7);
    assert_string_equal(d->sender[0], "s");

    /* Once means once. */
    advance(d, r, 1000);
    assert_int_equal(atomic_load(&d->got), 1);
    /* It fired for the last time: nothing left to cancel. */
    assert_false(ac_cancel(c));
    ac_cancellable_release(c);
    assert_int_equal(atomic_load(&g_destroyed), 1);

    /* Scheduled when the clock is not at zero: relative to now. */
    c = ac_schedule_once(r, 5, tick_new(8), NULL);
    assert_non_null(c);
    advance(d, r, 4);
    assert_int_equal(atomic_load(&d->got), 1);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 2);
    assert_int_equal(d->at[1], 1105);
    assert_string_equal(d->sender[1], "");
    ac_cancellable_release(c);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(r);
    ac_ref_release(s);
}

/* The manual clock moves in whole ms: a delay in us fires at the first ms
 * at or after it, never before; timers due at the same time fire in the
 * order they were armed; a cancel before the deadline holds, one after it
 * reports false; a timer far enough to sit high in the wheel fires at its
 * ms exactly, the clock stepping 1 ms at a time through its cascades. */
static void test_us_delays_on_the_manual_clock(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);
    ac_cancellable *c[12];
    int n = 0;
    c[n++] = ac_schedule_once_us(r, 300, tick_new(1), NULL);   /* -> 1 ms */
    c[n++] = ac_schedule_once_us(r, 1000, tick_new(2), NULL);  /* -> 1 ms */
    c[n++] = ac_schedule_once_us(r, 1001, tick_new(3), NULL);  /* -> 2 ms */
    for (int i = 0; i < 5; i++)                                  /* -> 2 ms */
        c[n++] = ac_schedule_once_us(r, 2000, tick_new(10 + i), NULL);
    c[n++] = ac_schedule_once_us(r, 3000, tick_new(5), NULL);  /* cancelled */
    c[n++] = ac_schedule_once_us(r, 70000, tick_new(4), NULL); /* -> 70 ms */
    for (int i = 0; i < n; i++)
        assert_non_null(c[i]);
    assert_int_equal(ac_timers_armed(d->sys), n);

    advance(d, r, 0);
    assert_int_equal(atomic_load(&d->got), 0); /* 300 us is not now */
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 2);
    assert_int_equal(d->value[0], 1);
    assert_int_equal(d->value[1], 2);
    assert_int_equal(d->at[0], 1);
    assert_int_equal(d->at[1], 1);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 8);
    assert_int_equal(d->value[2], 3);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(d->value[3 + i], 10 + i); /* the order they were armed in */
        assert_int_equal(d->at[3 + i], 2);
    }
    assert_false(ac_cancel(c[2])); /* fired: nothing to cancel */
    assert_true(ac_cancel(c[8]));  /* due at 3 ms: cancelled before */
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 8);
    assert_int_equal(ac_timers_armed(d->sys), 1);

    advance_steps(d, r, 66); /* to 69 ms */
    assert_int_equal(atomic_load(&d->got), 8);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 9);
    assert_int_equal(d->value[8], 4);
    assert_int_equal(d->at[8], 70);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    for (int i = 0; i < n; i++)
        ac_cancellable_release(c[i]);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(r);
}

static void test_cancel_before_firing(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    ac_cancellable *c = ac_schedule_once(r, 100, tick_new(1), NULL);
    assert_non_null(c);
    advance(d, r, 50);
    assert_true(ac_cancel(c));
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_false(ac_cancel(c));
    advance(d, r, 100);
    assert_int_equal(atomic_load(&d->got), 0);
    ac_cancellable_release(c);
    assert_int_equal(atomic_load(&g_destroyed), 1);

    /* Released before cancelled, cancelled at the last tick. */
    c = ac_schedule_once(r, 10, tick_new(2), NULL);
    assert_non_null(c);
    advance(d, r, 9);
    assert_true(ac_cancel(c));
    ac_cancellable_release(c);
    advance(d, r, 100);
    assert_int_equal(atomic_load(&d->got), 0);
    assert_int_equal(atomic_load(&g_destroyed), 2);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_ref_release(r);
}

static void test_repeat(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    ac_cancellable *c = ac_schedule_repeat(r, 10, 5, tick_new(3), NULL);
    assert_non_null(c);
    for (int64_t t = 1; t <= 60; t++) {
        advance(d, r, 1);
        long long expected = t < 10 ? 0 : 1 + (t - 10) / 5;
        if (atomic_load(&d->got) != expected) {
            fail_msg("at %lld ms: %lld deliveries, expected %lld", (long long)t,
                     atomic_load(&d->got), expected);
        }
        assert_int_equal(ac_timers_armed(d->sys), 1);
    }
    long long n = atomic_load(&d->got);
    assert_int_equal(n, 11);
    for (long long i = 0; i < n; i++) {
        assert_int_equal(d->at[i], 10 + 5 * i);
        assert_int_equal(d->value[i], 3);
        /* shared, not copied */
        assert_ptr_equal(d->msg[i], d->msg[0]);
    }
    assert_true(ac_cancel(c));
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_false(ac_cancel(c));
    advance(d, r, 100);
    assert_int_equal(atomic_load(&d->got), 11);
    assert_int_equal(atomic_load(&g_destroyed), 0); /* the handle still holds it */
    ac_cancellable_release(c);
    assert_int_equal(atomic_load(&g_destroyed), 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(r);
}

/* "First after initial_ms, then every interval_ms": one advance that
 * passes several deliveries makes them all, before it returns. */
static void test_repeat_big_advance(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    ac_cancellable *c = ac_schedule_repeat(r, 10, 7, tick_new(4), NULL);
    assert_non_null(c);
    advance(d, r, 30); /* due at 10, 17 and 24 */
    if (atomic_load(&d->got) != 3) {
        fail_msg("advancing 30 ms over a repeat due at 10, 17, 24 delivered %lld, expected 3",
                 atomic_load(&d->got));
    }
    advance(d, r, 1); /* 31 */
    assert_int_equal(atomic_load(&d->got), 4);
    advance(d, r, 6); /* 37 */
    assert_int_equal(atomic_load(&d->got), 4);
    advance(d, r, 1); /* 38 */
    assert_int_equal(atomic_load(&d->got), 5);
    assert_true(ac_cancel(c));
    ac_cancellable_release(c);
    ac_ref_release(r);
}

/* The clock refuses to run past its end, and stays where it was. */
static void test_clock_end(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    assert_status(ac_clock_advance(d->sys, AC_CLOCK_MAX_MS - 10), AC_OK);
    assert_true(ac_clock_now_ms(d->sys) == AC_CLOCK_MAX_MS - 10);
    assert_status(ac_clock_advance(d->sys, 11), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "AC_CLOCK_MAX_MS"));
    assert_status(ac_clock_advance(d->sys, INT64_MAX), AC_EINVAL);
    assert_true(ac_clock_now_ms(d->sys) == AC_CLOCK_MAX_MS - 10);
    assert_status(ac_clock_advance(d->sys, 10), AC_OK);
    assert_true(ac_clock_now_ms(d->sys) == AC_CLOCK_MAX_MS);
    assert_status(ac_clock_advance(d->sys, 1), AC_EINVAL);
    assert_status(ac_clock_advance(d->sys, 0), AC_OK);
    assert_true(ac_clock_now_ms(d->sys) == AC_CLOCK_MAX_MS);
}

/* Long jumps over a far timer: it fires once, at its deadline, however
 * the clock gets there (the wheel jumps between events, it does not tick
 * through 2^40 ms). */
static void test_far_timer_long_jumps(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);
    const int64_t far = 1LL << 40;
    ac_cancellable *c = ac_schedule_once(r, far, tick_new(1), NULL);
    assert_non_null(c);
    advance(d, r, 100000000); /* 1e8 */
    assert_int_equal(atomic_load(&d->got), 0);
    advance(d, r, far - 100000000 - 1);
    assert_int_equal(atomic_load(&d->got), 0);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 1);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_cancellable_release(c);
    ac_ref_release(r);
}

static void test_armed_count(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);
    assert_int_equal(ac_timers_armed(d->sys), 0);

    ac_cancellable *a = ac_schedule_once(r, 10, tick_new(1), NULL);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    ac_cancellable *b = ac_schedule_once(r, 20, tick_new(2), NULL);
    assert_int_equal(ac_timers_armed(d->sys), 2);
    ac_cancellable *c = ac_schedule_repeat(r, 5, 5, tick_new(3), NULL);
    assert_int_equal(ac_timers_armed(d->sys), 3);
    ac_cancellable *e = ac_schedule_once(r, 30, tick_new(4), NULL);
    assert_int_equal(ac_timers_armed(d->sys), 4);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(e);

    advance_steps(d, r, 9);
    assert_int_equal(ac_timers_armed(d->sys), 4); /* the repeat fired and re-armed */
    advance_steps(d, r, 1);
    assert_int_equal(ac_timers_armed(d->sys), 3); /* a fired */
    assert_true(ac_cancel(e));
    assert_int_equal(ac_timers_armed(d->sys), 2);
    assert_false(ac_cancel(a));
    assert_int_equal(ac_timers_armed(d->sys), 2);
    advance_steps(d, r, 10);
    assert_int_equal(ac_timers_armed(d->sys), 1); /* b fired; the repeat is left */
    assert_true(ac_cancel(c));
    assert_int_equal(ac_timers_armed(d->sys), 0);
    advance_steps(d, r, 20);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    /* a, b and the repeat at 5, 10, 15, 20 */
    assert_int_equal(atomic_load(&d->got), 6);

    /* Asks count too, and settling them disarms. */
    ac_future *f = ac_ask(r, ac_msg_str_new("ping"), 100);
    assert_non_null(f);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_future_release(f);

    ac_cancellable_release(a);
    ac_cancellable_release(b);
    ac_cancellable_release(c);
    ac_cancellable_release(e);
    ac_ref_release(r);
}

/* ---- repeats to a stopped actor ------------------------------------------ */

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    tm_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        atomic_fetch_add(&d->finished, 1);
    } else {
        ac_watch(ctx, d->target);
    }
}

static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

static void stop_and_wait(tm_data *d, ac_ref *target)
{
    d->target = target;
    ac_ref *w = ts_spawn(d->sys, &watcher_def, d, NULL);
    assert_non_null(w);
    assert_status(ac_tell(w, ac_msg_str_new("watch"), NULL), AC_OK);
    assert_status(ac_stop(target), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the target to stop");
    ac_ref_release(w);
}

static ac_cancellable *repeat_then_stop(tm_data *d, ac_ref *r, ac_ref *other)
{
    ac_cancellable *c = ac_schedule_repeat(r, 10, 10, tick_new(5), NULL);
    assert_non_null(c);
    advance_steps(d, other, 30);
    sync_with(d, r);
    assert_int_equal(atomic_load(&d->got), 3);
    stop_and_wait(d, r);
    return c;
}

static void test_repeat_to_stopped_actor_ceases(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    ac_ref *other = ts_spawn(d->sys, &receiver_def, d, "other");
    assert_non_null(r);
    assert_non_null(other);
    ac_cancellable *c = repeat_then_stop(d, r, other);
    uint64_t dl = ac_dead_letter_count(d->sys);

    advance_steps(d, other, 10); /* the first delivery after the stop */
    assert_int_equal(ac_timers_armed(d->sys), 0);
    uint64_t after_one = ac_dead_letter_count(d->sys);
    assert_true(after_one <= dl + 1);
    advance_steps(d, other, 100);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), after_one);
    assert_int_equal(atomic_load(&d->got), 3);
    ac_cancellable_release(c);
    /* The message is released once the repeat has ceased. */
    assert_int_equal(atomic_load(&g_destroyed), 1);
    ac_ref_release(r);
    ac_ref_release(other);
}

/* A repeat that ceased because its target stopped has fired for the last
 * time: cancelling it then cancels nothing. */
static void test_cancel_after_repeat_ceased(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    ac_ref *other = ts_spawn(d->sys, &receiver_def, d, "other");
    assert_non_null(r);
    assert_non_null(other);
    ac_cancellable *c = repeat_then_stop(d, r, other);
    advance_steps(d, other, 20);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_false(ac_cancel(c));
    ac_cancellable_release(c);
    ac_ref_release(r);
    ac_ref_release(other);
}

/* ---- handles ----------------------------------------------------------------- */

static void test_release_does_not_cancel(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    ac_cancellable *once = ac_schedule_once(r, 50, tick_new(1), NULL);
    assert_non_null(once);
    ac_cancellable_release(once);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    advance(d, r, 49);
    assert_int_equal(atomic_load(&d->got), 0);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 1);
    assert_int_equal(d->at[0], 50);
    assert_int_equal(d->value[0], 1);
    assert_int_equal(atomic_load(&g_destroyed), 1);

    ac_cancellable *rep = ac_schedule_repeat(r, 10, 10, tick_new(2), NULL);
    assert_non_null(rep);
    ac_cancellable_release(rep);
    advance_steps(d, r, 30);
    assert_int_equal(atomic_load(&d->got), 4);
    assert_int_equal(d->at[3], 80);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    /* The system takes it down (the sanitizer build checks for leaks). */
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&g_destroyed), 2);
}

/* ---- from inside an actor ------------------------------------------------------ */

static void self_scheduler_receive(ac_ctx *ctx, ac_msg *msg)
{
    tm_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), "arm") == 0) {
        ac_cancellable *keep = ac_schedule_once(ac_self(ctx), 20, tick_new(1), ac_self(ctx));
        ac_cancellable *drop = ac_schedule_once(ac_self(ctx), 20, tick_new(2), ac_self(ctx));
        if (keep == NULL || drop == NULL || !ac_cancel(drop)) {
            atomic_fetch_add(&d->bad, 1);
        }
        ac_cancellable_release(drop);
        d->handle = keep;
        atomic_fetch_add(&d->finished, 1);
        return;
    }
    receiver_receive(ctx, msg);
}

static const ac_actor_def self_scheduler_def = {.name = "SelfScheduler",
                                                .receive = self_scheduler_receive};

static void test_schedule_from_actor(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &self_scheduler_def, d, "me");
    assert_non_null(r);
    assert_status(ac_tell(r, ac_msg_str_new("arm"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the actor to schedule");
    assert_int_equal(ac_timers_armed(d->sys), 1);
    advance(d, r, 19);
    assert_int_equal(atomic_load(&d->got), 0);
    advance(d, r, 1);
    assert_int_equal(atomic_load(&d->got), 1);
    assert_int_equal(d->value[0], 1);
    assert_string_equal(d->sender[0], "me");
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_cancellable_release(d->handle);
    ac_ref_release(r);
}

/* ---- bad input ------------------------------------------------------------------- */

static void test_bad_input(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup(fx);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);
    long long freed = 0;

    ac_clear_error();
    assert_null(ac_schedule_once(r, -1, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_once(NULL, 10, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_once(r, 10, NULL, NULL));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_schedule_repeat(r, 10, 0, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_repeat(r, 10, -5, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_repeat(r, -1, 10, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_repeat(NULL, 10, 10, tick_new(1), NULL));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_schedule_repeat(r, 10, 10, NULL, NULL));
    assert_last_error(AC_EINVAL);

    assert_false(ac_cancel(NULL));
    ac_cancellable_release(NULL);

    ac_clear_error();
    assert_status(ac_clock_advance(d->sys, -1), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    ac_clear_error();
    assert_status(ac_clock_advance(NULL, 1), AC_EINVAL);
    assert_last_error(AC_EINVAL);

    assert_int_equal(ac_timers_armed(d->sys), 0);
    advance(d, r, 1000);
    assert_int_equal(atomic_load(&d->got), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);

    /* On a real clock, time cannot be moved. */
    ac_system *real = ac_system_create("timers-real", NULL);
    assert_non_null(real);
    ac_clear_error();
    assert_status(ac_clock_advance(real, 10), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_status(ac_system_terminate(real), AC_OK);
    ac_ref_release(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_once),
        TS_UNIT(test_us_delays_on_the_manual_clock),
        TS_UNIT(test_cancel_before_firing),
        TS_UNIT(test_repeat),
        TS_UNIT(test_repeat_big_advance),
        TS_UNIT(test_clock_end),
        TS_UNIT(test_far_timer_long_jumps),
        TS_UNIT(test_armed_count),
        TS_UNIT(test_repeat_to_stopped_actor_ceases),
        TS_UNIT(test_cancel_after_repeat_ceased),
        TS_UNIT(test_release_does_not_cancel),
        TS_UNIT(test_schedule_from_actor),
        TS_UNIT(test_bad_input),
    };
    return cmocka_run_group_tests_name("timers", tests, NULL, NULL);
}
