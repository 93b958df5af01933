/*
 * The real clock: a timeout never settles before it has elapsed, and does
 * settle (well within the generous bound). The exact behaviour of timeouts
 * is covered on the manual clock; these only check that the timer thread
 * drives the same machinery in real time.
 *
 * Timers armed from actors are mostly fired by a worker that parked to
 * watch for them (src/core/timers.c), the rest by the timer thread: a
 * burst and a chain of sub-millisecond timers check, on either path,
 * that none fires early, none is lost or doubled, a cancelled one never
 * fires, and the system terminates cleanly with timers about to fire.
 * Timers that wake many actors at once check the firing worker's queue
 * against other senders, and that an actor a timer woke is not left
 * behind another's long turn.
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

/* ---- sub-millisecond timers armed from actors ------------------------- */

enum {
    BURST = 200,   /* timers armed in one turn, 100 us .. 2 ms */
    CANCELLED = 50, /* of which cancelled at once (the last ones) */
    CHAIN = 100,   /* 200 us timers, each armed when the last arrived */
};
#define CANCELLED_DELAY_US 100000 /* 100 ms */

static const ac_msg_type ARM_BURST = {.name = "test.ArmBurst"};
static const ac_msg_type ARM_CHAIN = {.name = "test.ArmChain"};
static const ac_msg_type FIRED = {.name = "test.Fired"}; /* {armed_ns, delay_us, index} */

typedef struct sub_ms_data {
    atomic_llong fired;
    atomic_llong early;        /* arrived before arm time + delay */
    atomic_llong wrong;        /* a cancelled timer, or one arriving twice */
    atomic_llong chain_left;
    atomic_char seen[BURST];
} sub_ms_data;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* In a turn: no cmocka asserts off the test's thread; failures count. */
static void arm_us(ac_ctx *ctx, sub_ms_data *d, int64_t delay_us, int64_t index, bool cancel)
{
    ac_msg *m = ac_msg_new(&FIRED, 3 * sizeof(int64_t));
    if (!m) {
        atomic_fetch_add(&d->wrong, 1);
        return;
    }
    int64_t *v = ac_msg_payload(m);
    v[0] = mono_ns();
    v[1] = delay_us;
    v[2] = index;
    ac_cancellable *c = ac_schedule_once_us(ac_self(ctx), delay_us, m, NULL);
    if (!c || (cancel && !ac_cancel(c)))
        atomic_fetch_add(&d->wrong, 1);
    ac_cancellable_release(c);
}

static void sub_ms_receive(ac_ctx *ctx, ac_msg *msg)
{
    sub_ms_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ARM_BURST)) {
        for (int i = 0; i < BURST; i++) {
            /* The cancelled ones far enough not to fire before the cancel
             * right after the arm, however slow the build. */
            bool cancel = i >= BURST - CANCELLED;
            int64_t us = cancel ? CANCELLED_DELAY_US : 100 + (int64_t)(i % 20) * 100;
            arm_us(ctx, d, us, i, cancel);
        }
        return;
    }
    if (ac_msg_is(msg, &ARM_CHAIN)) {
        arm_us(ctx, d, 200, -1, false);
        return;
    }
    if (!ac_msg_is(msg, &FIRED)) {
        atomic_fetch_add(&d->wrong, 1);
        return;
    }
    const int64_t *v = ac_msg_data(msg);
    if (mono_ns() < v[0] + v[1] * 1000)
        atomic_fetch_add(&d->early, 1);
    if (v[2] >= 0 && (v[2] >= BURST - CANCELLED || atomic_exchange(&d->seen[v[2]], 1)))
        atomic_fetch_add(&d->wrong, 1);
    atomic_fetch_add(&d->fired, 1);
    if (v[2] < 0 && atomic_fetch_sub(&d->chain_left, 1) > 1)
        arm_us(ctx, d, 200, -1, false);
}

static const ac_actor_def sub_ms_def = {.name = "SubMs", .receive = sub_ms_receive};

static bool none_armed(void *p)
{
    return ac_timers_armed(p) == 0;
}

static void test_sub_ms_timers_from_actors(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "sub_ms", &o);
    assert_non_null(sys);
    sub_ms_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_ref *a = ts_spawn(sys, &sub_ms_def, d, "armer");
    assert_non_null(a);

    assert_status(ac_tell(a, ac_msg_new(&ARM_BURST, 0), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->fired, BURST - CANCELLED, TS_WAIT_S),
                      "every timer of the burst that was not cancelled fired");
    assert_eventually(ts_wait_until(none_armed, sys, TS_WAIT_S), "no timer left armed");

    atomic_store(&d->chain_left, CHAIN);
    assert_status(ac_tell(a, ac_msg_new(&ARM_CHAIN, 0), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->fired, BURST - CANCELLED + CHAIN, TS_WAIT_S),
                      "every timer of the chain fired");
    assert_eventually(ts_wait_until(none_armed, sys, TS_WAIT_S), "no timer left armed");

    ts_sleep_ms(CANCELLED_DELAY_US / 1000 + 50); /* the cancelled ones' deadline has passed */
    assert_int_equal(atomic_load(&d->fired), BURST - CANCELLED + CHAIN);
    assert_int_equal(atomic_load(&d->early), 0);
    assert_int_equal(atomic_load(&d->wrong), 0);
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Terminating while timers are about to fire, some on workers: every
 * timer fires or is discarded, nothing is touched after (ASan and TSan
 * builds check the rest). */
static void test_terminate_with_timers_due(void **state)
{
    ts_fixture *fx = *state;
    for (int round = 0; round < 5; round++) {
        ac_system_options o = {.workers = 2};
        ac_system *sys = ac_system_create("due_at_exit", &o);
        assert_non_null(sys);
        sub_ms_data *d = calloc(1, sizeof *d);
        assert_non_null(d);
        ac_ref *a = ts_spawn(sys, &sub_ms_def, d, "armer");
        assert_non_null(a);
        assert_status(ac_tell(a, ac_msg_new(&ARM_BURST, 0), NULL), AC_OK);
        ts_sleep_ms(round); /* 0..4 ms: before, during and after the burst fires */
        ac_ref_release(a);
        assert_status(ac_system_terminate(sys), AC_OK);
        assert_int_equal(atomic_load(&d->early), 0);
        assert_int_equal(atomic_load(&d->wrong), 0);
        free(d);
    }
    (void)fx;
}

/* ---- timers that wake many actors at once ---------------------------- */

enum {
    CATCHERS = 16, /* actors woken by one round's timers */
    ROUNDS_MANY = 40,
    PLAIN = 2000, /* messages the test's thread sends them meanwhile */
};
#define MANY_DELAY_US 300

static const ac_msg_type ARM_ROUND = {.name = "test.ArmRound"};
static const ac_msg_type CAUGHT = {.name = "test.Caught"}; /* {armed_ns} */

typedef struct many_data {
    ac_ref *armer;
    ac_ref *catchers[CATCHERS];
    atomic_llong caught, plain, early, wrong;
    atomic_llong rounds_left;
} many_data;

/* Schedule a message of `type` carrying the time it was armed (mono_ns)
 * to `to` after delay_us. False if it could not. */
static bool schedule_stamped(ac_ref *to, const ac_msg_type *type, int64_t delay_us)
{
    ac_msg *m = ac_msg_new(type, sizeof(int64_t));
    if (!m)
        return false;
    *(int64_t *)ac_msg_payload(m) = mono_ns();
    ac_cancellable *c = ac_schedule_once_us(to, delay_us, m, NULL);
    bool armed = c != NULL;
    ac_cancellable_release(c);
    return armed;
}

/* One turn arms a timer per catcher, all with the same delay: they fall
 * due together and are fired in one batch, which wakes every catcher at
 * once (the first to run next on the firing worker, the rest queued). */
static void many_armer_receive(ac_ctx *ctx, ac_msg *msg)
{
    many_data *d = ac_ctx_user_data(ctx);
    if (!ac_msg_is(msg, &ARM_ROUND)) {
        atomic_fetch_add(&d->wrong, 1);
        return;
    }
    for (int i = 0; i < CATCHERS; i++)
        if (!schedule_stamped(d->catchers[i], &CAUGHT, MANY_DELAY_US))
            atomic_fetch_add(&d->wrong, 1);
}

static void catcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    many_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        atomic_fetch_add(&d->plain, 1);
        return;
    }
    if (!ac_msg_is(msg, &CAUGHT)) {
        atomic_fetch_add(&d->wrong, 1);
        return;
    }
    if (mono_ns() < *(const int64_t *)ac_msg_data(msg) + MANY_DELAY_US * 1000)
        atomic_fetch_add(&d->early, 1);
    /* The round's last catch starts the next round. */
    long long n = atomic_fetch_add(&d->caught, 1) + 1;
    if (n % CATCHERS == 0 && atomic_fetch_sub(&d->rounds_left, 1) > 1 &&
        ac_tell(d->armer, ac_msg_new(&ARM_ROUND, 0), NULL) != AC_OK)
        atomic_fetch_add(&d->wrong, 1);
}

static const ac_actor_def many_armer_def = {.name = "ManyArmer", .receive = many_armer_receive};
static const ac_actor_def catcher_def = {.name = "Catcher", .receive = catcher_receive};

/* Rounds of timers that wake 16 actors at once, fired on workers between
 * turns and by the timer thread, while another thread sends the same
 * actors messages: every timer fires once and never early, every message
 * arrives (TSan sees the firing worker's queue meet the senders' and the
 * thieves'). */
static void test_timers_waking_many_actors(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "many", &o);
    assert_non_null(sys);
    many_data *d = ts_fx_data(fx, sizeof *d, NULL);
    for (int i = 0; i < CATCHERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        d->catchers[i] = ts_spawn(sys, &catcher_def, d, name);
        assert_non_null(d->catchers[i]);
    }
    d->armer = ts_spawn(sys, &many_armer_def, d, "armer");
    assert_non_null(d->armer);
    atomic_store(&d->rounds_left, ROUNDS_MANY);
    assert_status(ac_tell(d->armer, ac_msg_new(&ARM_ROUND, 0), NULL), AC_OK);
    for (int i = 0; i < PLAIN; i++) {
        assert_status(ac_tell(d->catchers[i % CATCHERS], ac_msg_int64_new(i), NULL), AC_OK);
        if (i % 100 == 99)
            ts_sleep_ms(1);
    }
    assert_eventually(ts_wait_eq(&d->caught, (long long)CATCHERS * ROUNDS_MANY, TS_WAIT_S),
                      "every round's timers fired");
    assert_eventually(ts_wait_eq(&d->plain, PLAIN, TS_WAIT_S), "every plain message arrived");
    assert_eventually(ts_wait_until(none_armed, sys, TS_WAIT_S), "no timer left armed");
    assert_int_equal(atomic_load(&d->caught), (long long)CATCHERS * ROUNDS_MANY);
    assert_int_equal(atomic_load(&d->early), 0);
    assert_int_equal(atomic_load(&d->wrong), 0);
    for (int i = 0; i < CATCHERS; i++)
        ac_ref_release(d->catchers[i]);
    ac_ref_release(d->armer);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- a timer-woken actor queued behind a long turn -------------------- */

/* The long turn lasts until the quick actor has run, or LONG_TURN_MS: a
 * quick actor stranded behind it shows as a turn that ran out. Not a
 * latency bound: on a loaded machine another worker may wait for a core,
 * but within seconds it steals. */
enum { STRAND_ROUNDS = 5, LONG_TURN_MS = 3000 };
#define STRAND_DELAY_US 500

static const ac_msg_type ARM_PAIR = {.name = "test.ArmPair"};
static const ac_msg_type PAIR_FIRED = {.name = "test.PairFired"}; /* {armed_ns} */

typedef struct strand_data {
    ac_ref *slow, *quick;
    atomic_llong quick_fired, slow_fired, wrong;
    atomic_llong stranded;      /* long turns that ran out waiting for the quick one */
    atomic_llong worst_late_ns; /* the quick one's */
} strand_data;

static void pair_armer_receive(ac_ctx *ctx, ac_msg *msg)
{
    strand_data *d = ac_ctx_user_data(ctx);
    if (!ac_msg_is(msg, &ARM_PAIR)) {
        atomic_fetch_add(&d->wrong, 1);
        return;
    }
    ac_ref *to[2] = {d->slow, d->quick}; /* the slow one first: it fires first */
    for (int i = 0; i < 2; i++)
        if (!schedule_stamped(to[i], &PAIR_FIRED, STRAND_DELAY_US))
            atomic_fetch_add(&d->wrong, 1);
}

static void slow_receive(ac_ctx *ctx, ac_msg *msg)
{
    strand_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    long long round = atomic_load(&d->slow_fired) + 1;
    int64_t until = mono_ns() + LONG_TURN_MS * 1000000ll;
    while (atomic_load(&d->quick_fired) < round && mono_ns() < until)
        ;
    if (atomic_load(&d->quick_fired) < round)
        atomic_fetch_add(&d->stranded, 1);
    atomic_fetch_add(&d->slow_fired, 1);
}

static void quick_receive(ac_ctx *ctx, ac_msg *msg)
{
    strand_data *d = ac_ctx_user_data(ctx);
    long long late = mono_ns() - *(const int64_t *)ac_msg_data(msg) - STRAND_DELAY_US * 1000;
    long long worst = atomic_load(&d->worst_late_ns);
    while (late > worst && !atomic_compare_exchange_weak(&d->worst_late_ns, &worst, late))
        ;
    atomic_fetch_add(&d->quick_fired, 1);
}

static const ac_actor_def pair_armer_def = {.name = "PairArmer", .receive = pair_armer_receive};
static const ac_actor_def slow_def = {.name = "Slow", .receive = slow_receive};
static const ac_actor_def quick_def = {.name = "Quick", .receive = quick_receive};

/* Two timers fall due together; the actor the first wakes runs a long
 * turn on the worker that fired them. The second actor must not wait for
 * that turn's end: another worker takes it. */
static void test_timer_woken_actor_not_stranded(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "strand", &o);
    assert_non_null(sys);
    strand_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->slow = ts_spawn(sys, &slow_def, d, "slow");
    d->quick = ts_spawn(sys, &quick_def, d, "quick");
    ac_ref *armer = ts_spawn(sys, &pair_armer_def, d, "armer");
    assert_true(d->slow && d->quick && armer);
    for (int r = 1; r <= STRAND_ROUNDS; r++) {
        assert_status(ac_tell(armer, ac_msg_new(&ARM_PAIR, 0), NULL), AC_OK);
        assert_eventually(ts_wait_eq(&d->slow_fired, r, TS_WAIT_S), "the long turn ended");
        assert_eventually(ts_wait_eq(&d->quick_fired, r, TS_WAIT_S), "the quick one ran");
        ts_sleep_ms(5); /* let the workers park again */
    }
    if (atomic_load(&d->stranded))
        fail_msg("%lld of %d times an actor its timer woke waited for another's long turn to "
                 "end (%.1f ms late at worst)",
                 atomic_load(&d->stranded), STRAND_ROUNDS,
                 (double)atomic_load(&d->worst_late_ns) / 1e6);
    print_message("the quick one ran %.2f ms late at worst\n",
                  (double)atomic_load(&d->worst_late_ns) / 1e6);
    assert_int_equal(atomic_load(&d->wrong), 0);
    ac_ref_release(armer);
    ac_ref_release(d->slow);
    ac_ref_release(d->quick);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_ask_timeout_real_clock),
        TS_UNIT(test_schedule_once_real_clock),
        TS_UNIT(test_future_wait_beyond_the_clock),
        TS_UNIT(test_sub_ms_timers_from_actors),
        TS_UNIT(test_terminate_with_timers_due),
        TS_UNIT(test_timers_waking_many_actors),
        TS_UNIT(test_timer_woken_actor_not_stranded),
    };
    return cmocka_run_group_tests_name("real_clock", tests, NULL, NULL);
}
