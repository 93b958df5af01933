/*
 * Concurrent callers collide on the breaker: eight threads calling a
 * half-open breaker at once let exactly one probe through, round after
 * round; eight threads recording the failures that open a closed breaker
 * open it exactly once. Run under ThreadSanitizer in CI.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "bk_support.h"

#define THREADS 8

#if defined(__SANITIZE_THREAD__)
#define ROUNDS 20
#else
#define ROUNDS 100
#endif

typedef struct race {
    bk_data *d;
    ac_breaker *b;
    pthread_barrier_t start, done;
    atomic_int stop;
    ac_future *futures[THREADS];
    atomic_llong admitted; /* permits granted, for the failure race */
} race;

typedef struct worker {
    race *r;
    int i;
} worker;

static void *caller_thread(void *arg)
{
    worker *w = arg;
    race *r = w->r;
    for (;;) {
        pthread_barrier_wait(&r->start);
        if (atomic_load(&r->stop)) {
            return NULL;
        }
        r->futures[w->i] = ac_breaker_ask(r->b, r->d->server, ac_msg_str_new("x"), BK_WAIT_MS);
        pthread_barrier_wait(&r->done);
    }
}

static void run_threads(race *r, void *(*fn)(void *), void (*round)(race *, int))
{
    pthread_t th[THREADS];
    worker w[THREADS];
    pthread_barrier_init(&r->start, NULL, THREADS + 1);
    pthread_barrier_init(&r->done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){r, i};
        pthread_create(&th[i], NULL, fn, &w[i]);
    }
    for (int k = 0; k < ROUNDS; k++) {
        pthread_barrier_wait(&r->start);
        pthread_barrier_wait(&r->done);
        round(r, k);
    }
    atomic_store(&r->stop, 1);
    pthread_barrier_wait(&r->start);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_barrier_destroy(&r->start);
    pthread_barrier_destroy(&r->done);
}

/* After a round: one future is the probe (still open), the other seven
 * were refused. The probe times out, the breaker re-opens; the reset
 * timeout passes, and the next round finds it half-open again. */
static void probe_round(race *r, int k)
{
    int probes = 0;
    ac_future *probe = NULL;
    for (int i = 0; i < THREADS; i++) {
        ac_answer a;
        assert_non_null(r->futures[i]);
        if (ac_future_poll(r->futures[i], &a)) {
            assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR));
            ac_answer_release(&a);
            ac_future_release(r->futures[i]);
        } else {
            probes++;
            probe = r->futures[i];
        }
    }
    if (probes != 1) {
        fail_msg("round %d: %d calls went through a half-open breaker", k, probes);
    }
    bk_wait_requests(r->d, k + 2); /* the opening call, then one per round */
    assert_status(ac_clock_advance(r->d->sys, 10), AC_OK); /* the probe's call timeout */
    ac_answer a;
    assert_status(ac_future_wait(probe, BK_WAIT_MS, &a), AC_EFAILED);
    assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR));
    ac_answer_release(&a);
    ac_future_release(probe);
    assert_status(ac_clock_advance(r->d->sys, 100), AC_OK); /* reset timeout */
    assert_int_equal(ac_breaker_state_of(r->b), AC_BREAKER_HALF_OPEN);
}

static void test_half_open_admits_one_probe(void **state)
{
    ts_fixture *fx = *state;
    static race races;
    race *r = &races;
    memset(r, 0, sizeof *r);
    r->d = bk_setup(fx, "bk-race", true, false);
    ac_breaker_options o = bk_options(r->d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 100;
    o.call_timeout_ms = 10;
    r->b = bk_breaker(r->d, &o);
    bk_set(r->d, BK_OUTAGE);
    assert_status(bk_call_st(r->d, r->b), AC_EFAILED);
    bk_set(r->d, BK_SILENT);
    assert_status(ac_clock_advance(r->d->sys, 100), AC_OK);
    run_threads(r, caller_thread, probe_round);
    assert_int_equal(atomic_load(&r->d->requests), ROUNDS + 1);
    ac_breaker_release(r->b);
}

/* Each thread takes a permit on the closed breaker and records a
 * failure: the ones that reach max_failures race to open it. */
static void *failure_thread(void *arg)
{
    worker *w = arg;
    race *r = w->r;
    for (;;) {
        pthread_barrier_wait(&r->start);
        if (atomic_load(&r->stop)) {
            return NULL;
        }
        ac_breaker_permit p;
        if (ac_breaker_acquire(r->b, &p, NULL)) {
            atomic_fetch_add(&r->admitted, 1);
            ac_error *e = ac_error_new("OutageError", "down");
            ac_breaker_record(r->b, &p, e);
            ac_error_release(e);
        }
        pthread_barrier_wait(&r->done);
    }
}

/* After a round of eight failures: open exactly once more; then a probe
 * closes it again for the next round. */
static void failure_round(race *r, int k)
{
    assert_int_equal(ac_breaker_state_of(r->b), AC_BREAKER_OPEN);
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(r->b, &info), AC_OK);
    assert_int_equal(info.opened, (uint64_t)k + 1);
    assert_status(ac_clock_advance(r->d->sys, 100), AC_OK);
    ac_breaker_permit p;
    assert_true(ac_breaker_acquire(r->b, &p, NULL));
    ac_breaker_record(r->b, &p, NULL);
    assert_int_equal(ac_breaker_state_of(r->b), AC_BREAKER_CLOSED);
}

static void test_failures_open_once(void **state)
{
    ts_fixture *fx = *state;
    static race races;
    race *r = &races;
    memset(r, 0, sizeof *r);
    r->d = bk_setup(fx, "bk-race-fail", true, false);
    ac_breaker_options o = bk_options(r->d, "db");
    o.max_failures = 3; /* reached by some of the eight, in any order */
    o.reset_timeout_ms = 100;
    r->b = bk_breaker(r->d, &o);
    run_threads(r, failure_thread, failure_round);
    assert_int_equal(ts_rec_count_of(r->d->rec, "closed->open"), ROUNDS);
    assert_int_equal(ts_rec_count_of(r->d->rec, "half-open->closed"), ROUNDS);
    ac_breaker_release(r->b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_half_open_admits_one_probe),
        TS_UNIT(test_failures_open_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
