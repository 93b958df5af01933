/*
 * The timing wheel under stress, on the manual clock: thousands of one-shot
 * timers at delays from 1 ms to 10 hours (many of them landing on, or next
 * to, the wheel's level boundaries at 64, 4096, 262144 and 2^24 ms),
 * scheduled at several points in time, with the clock moved in random
 * steps, many of which stop exactly at a deadline or one tick before it.
 * Every timer must fire exactly once, never before its deadline, and in the
 * advance during which it became due.
 *
 * ACTORC_TEST_SEED picks another random sequence; a failure prints the
 * seed in use.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define MAX_TIMERS 6000
#define HOURS_10 (10LL * 3600 * 1000)

static const int64_t levels[] = {64, 4096, 262144, 16777216};

typedef struct wheel_data {
    ac_system *sys;
    atomic_llong pongs;
    atomic_llong bad;
    atomic_int count[MAX_TIMERS];  /* deliveries per timer */
    atomic_llong at[MAX_TIMERS];   /* clock when delivered */
    int64_t deadline[MAX_TIMERS];  /* test thread only */
    int64_t expect_at[MAX_TIMERS]; /* end of the advance it became due in */
    int n;
} wheel_data;

static void receiver_receive(ac_ctx *ctx, ac_msg *msg)
{
    wheel_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str)) {
        atomic_fetch_add(&d->pongs, 1);
        return;
    }
    int64_t id = ac_msg_int64(msg);
    if (id < 0 || id >= MAX_TIMERS) {
        atomic_fetch_add(&d->bad, 1);
        return;
    }
    atomic_store(&d->at[id], ac_clock_now_ms(ac_ctx_system(ctx)));
    atomic_fetch_add(&d->count[id], 1);
}

static const ac_actor_def receiver_def = {.name = "WheelReceiver", .receive = receiver_receive};

/* xorshift64*: a small, reproducible generator. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi]. */
static int64_t rnd_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* Roughly log-uniform in [1, max]: as many short delays as long ones. */
static int64_t rnd_log(int64_t max)
{
    int bits = 1;
    while ((1LL << bits) < max) {
        bits++;
    }
    int64_t hi = 1LL << rnd_range(0, bits);
    int64_t v = rnd_range(1, hi);
    return v > max ? max : v;
}

static void schedule_at(wheel_data *d, ac_ref *r, int64_t now, int64_t deadline)
{
    if (d->n >= MAX_TIMERS || deadline <= now) {
        return;
    }
    int id = d->n++;
    d->deadline[id] = deadline;
    d->expect_at[id] = -1;
    ac_cancellable *c = ac_schedule_once(r, deadline - now, ac_msg_int64_new(id), NULL);
    assert_non_null(c);
    ac_cancellable_release(c);
}

/* A batch of timers scheduled at `now`: random delays, and deadlines on and
 * around the next few multiples of each level's span. */
static void schedule_batch(wheel_data *d, ac_ref *r, int64_t now, int random_count)
{
    static const int64_t fixed[] = {1, 2, 3, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097,
                                    262143, 262144, 262145, 16777215, 16777216, 16777217,
                                    33554432, HOURS_10 - 1, HOURS_10};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        schedule_at(d, r, now, now + fixed[i]);
    }
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        int64_t span = levels[l];
        for (int64_t k = 1; k <= 3; k++) {
            int64_t edge = (now / span + k) * span;
            if (edge - now > HOURS_10) {
                break;
            }
            schedule_at(d, r, now, edge - 1);
            schedule_at(d, r, now, edge);
            schedule_at(d, r, now, edge);
            schedule_at(d, r, now, edge + 1);
        }
    }
    for (int i = 0; i < random_count; i++) {
        schedule_at(d, r, now, now + rnd_log(HOURS_10));
    }
}

static void sync_with(wheel_data *d, ac_ref *r)
{
    long long before = atomic_load(&d->pongs);
    assert_status(ac_tell(r, ac_msg_str_new("ping"), NULL), AC_OK);
    assert_eventually(ts_wait_ge(&d->pongs, before + 1, TS_WAIT_S), "the receiver to handle a ping");
}

/* The earliest deadline after `now`, or -1. */
static int64_t next_deadline(const wheel_data *d, int64_t now)
{
    int64_t best = -1;
    for (int i = 0; i < d->n; i++) {
        if (d->deadline[i] > now && (best < 0 || d->deadline[i] < best)) {
            best = d->deadline[i];
        }
    }
    return best;
}

/* After an advance to `now`: everything due fired once, in this advance if
 * it became due in it; nothing else fired. */
static void check(wheel_data *d, int64_t prev, int64_t now, unsigned long long seed)
{
    size_t pending = 0;
    for (int i = 0; i < d->n; i++) {
        int count = atomic_load(&d->count[i]);
        int64_t dl = d->deadline[i];
        if (dl > now) {
            pending++;
            if (count != 0) {
                fail_msg("seed %llu: timer %d (deadline %lld) fired early: by %lld, at %lld",
                         seed, i, (long long)dl, (long long)now, (long long)atomic_load(&d->at[i]));
            }
            continue;
        }
        if (dl > prev) {
            d->expect_at[i] = now;
        }
        if (count != 1) {
            fail_msg("seed %llu: timer %d (deadline %lld) fired %d times by %lld", seed, i,
                     (long long)dl, count, (long long)now);
        }
        /* Handled at a clock reading between its deadline and the end of
         * the advance that made it due. */
        int64_t at = atomic_load(&d->at[i]);
        if (at < dl || at > d->expect_at[i]) {
            fail_msg("seed %llu: timer %d (deadline %lld) fired with the clock at %lld, "
                     "expected %lld..%lld",
                     seed, i, (long long)dl, (long long)at, (long long)dl,
                     (long long)d->expect_at[i]);
        }
    }
    if (ac_timers_armed(d->sys) != pending) {
        fail_msg("seed %llu: at %lld, %zu timers armed, expected %zu", seed, (long long)now,
                 ac_timers_armed(d->sys), pending);
    }
}

static void test_wheel_stress(void **state)
{
    ts_fixture *fx = *state;
    wheel_data *d = ts_fx_data(fx, sizeof *d, NULL);
    unsigned long long seed = (unsigned long long)ts_env_long("ACTORC_TEST_SEED", 20240611);
    rng_state = seed * 2654435761ULL + 1;
    ac_system_options o = {.manual_clock = true};
    d->sys = ts_fx_system(fx, "wheel", &o);
    assert_non_null(d->sys);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    /* Batches at 0 and at a few later, odd times. */
    int64_t batch_at[] = {0, 1, 37, 4100, 300000, 16777000, 20000000};
    size_t next_batch = 0;
    int64_t now = 0;
    int steps = 0;
    for (;;) {
        while (next_batch < sizeof batch_at / sizeof batch_at[0] && batch_at[next_batch] <= now) {
            schedule_batch(d, r, now, 600);
            next_batch++;
        }
        int64_t next = next_deadline(d, now);
        if (next < 0 && next_batch >= sizeof batch_at / sizeof batch_at[0]) {
            break;
        }
        /* Random steps; some land exactly on, or just before, a deadline or
         * a batch time. */
        int64_t step;
        int64_t target = next;
        if (next_batch < sizeof batch_at / sizeof batch_at[0] &&
            (target < 0 || batch_at[next_batch] < target)) {
            target = batch_at[next_batch];
        }
        switch (rnd() % 4) {
        case 0:
            step = target - now;
            break;
        case 1:
            step = target - now > 1 ? target - now - 1 : 1;
            break;
        default:
            step = rnd_log(1 << 21);
            break;
        }
        int64_t prev = now;
        assert_status(ac_clock_advance(d->sys, step), AC_OK);
        now += step;
        assert_int_equal(ac_clock_now_ms(d->sys), now);
        sync_with(d, r);
        check(d, prev, now, seed);
        steps++;
    }
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    for (int i = 0; i < d->n; i++) {
        assert_int_equal(atomic_load(&d->count[i]), 1);
    }
    /* Enough happened to mean something. */
    assert_true(d->n > 4000);
    assert_true(now >= HOURS_10);
    assert_true(steps > 100);
    ac_ref_release(r);
}

/* Timers armed while the clock sits just before each level boundary, due
 * just past it, fire on time: they must be carried down across the
 * boundary, not lost in a higher level. */
static void test_wheel_boundaries(void **state)
{
    ts_fixture *fx = *state;
    wheel_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_system_options o = {.manual_clock = true};
    d->sys = ts_fx_system(fx, "wheel-edges", &o);
    assert_non_null(d->sys);
    ac_ref *r = ts_spawn(d->sys, &receiver_def, d, "r");
    assert_non_null(r);

    int64_t now = 0;
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        int64_t edge = (now / levels[l] + 1) * levels[l];
        /* move to just before the edge */
        int64_t prev = now;
        assert_status(ac_clock_advance(d->sys, edge - 2 - now), AC_OK);
        now = edge - 2;
        sync_with(d, r);
        check(d, prev, now, 0);
        int first = d->n;
        for (int64_t delay = 1; delay <= 4; delay++) {
            schedule_at(d, r, now, now + delay);
        }
        schedule_at(d, r, now, now + levels[l]);
        schedule_at(d, r, now, now + levels[l] + 1);
        /* one tick at a time across the edge */
        for (int t = 0; t < 6; t++) {
            prev = now;
            assert_status(ac_clock_advance(d->sys, 1), AC_OK);
            now++;
            sync_with(d, r);
            check(d, prev, now, 0);
        }
        for (int i = first; i < first + 4; i++) {
            assert_int_equal(atomic_load(&d->at[i]), d->deadline[i]);
        }
        /* and the two one span later, in one go */
        prev = now;
        assert_status(ac_clock_advance(d->sys, levels[l]), AC_OK);
        now += levels[l];
        sync_with(d, r);
        check(d, prev, now, 0);
    }
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_ref_release(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_wheel_boundaries),
        TS_UNIT(test_wheel_stress),
    };
    return cmocka_run_group_tests_name("wheel", tests, NULL, NULL);
}
