/*
 * Eight threads tell 1,000,000 messages in all into one actor. Each value
 * is unique; the actor marks it in a bitmap so that a lost or duplicated
 * message is caught, and also checks the count and the sum.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define THREADS 8
#define TOTAL 1000000LL
#define PER_THREAD (TOTAL / THREADS)

typedef struct tp_data {
    unsigned char *bitmap; /* touched by the actor only */
    atomic_llong progress; /* published now and then */
    atomic_llong final_count;
    atomic_llong final_sum;
    atomic_llong duplicates;
    atomic_llong out_of_range;
    atomic_llong stopped;
    atomic_llong send_failures;
    ac_ref *target;
} tp_data;

typedef struct tp_state {
    long long count;
    long long sum;
} tp_state;

static void tp_receive(ac_ctx *ctx, ac_msg *msg)
{
    tp_data *d = ac_ctx_user_data(ctx);
    tp_state *s = ac_ctx_state(ctx);
    int64_t v;
    if (ac_msg_int64_get(msg, &v) != AC_OK || v < 1 || v > TOTAL) {
        atomic_fetch_add(&d->out_of_range, 1);
        return;
    }
    unsigned char bit = (unsigned char)(1u << (v & 7));
    if (d->bitmap[v >> 3] & bit) {
        atomic_fetch_add(&d->duplicates, 1);
    }
    d->bitmap[v >> 3] |= bit;
    s->count++;
    s->sum += v;
    if ((s->count & 1023) == 0 || s->count == TOTAL) {
        atomic_store_explicit(&d->progress, s->count, memory_order_release);
    }
}

static void tp_post_stop(ac_ctx *ctx)
{
    tp_data *d = ac_ctx_user_data(ctx);
    tp_state *s = ac_ctx_state(ctx);
    atomic_store(&d->final_count, s->count);
    atomic_store(&d->final_sum, s->sum);
    atomic_store(&d->stopped, 1);
}

static const ac_actor_def tp_def = {
    .name = "Counter", .state_size = sizeof(tp_state), .receive = tp_receive,
    .post_stop = tp_post_stop,
};

typedef struct tp_thread {
    tp_data *d;
    long long first;
} tp_thread;

static void *tp_sender(void *arg)
{
    tp_thread *a = arg;
    for (long long i = 0; i < PER_THREAD; i++) {
        if (ac_tell(a->d->target, ac_msg_int64_new(a->first + i), NULL) != AC_OK) {
            atomic_fetch_add(&a->d->send_failures, 1);
        }
    }
    return NULL;
}

static void free_tp(void *p)
{
    tp_data *d = p;
    free(d->bitmap);
}

static void run(ts_fixture *fx, const ac_system_options *opts)
{
    tp_data *d = ts_fx_data(fx, sizeof *d, free_tp);
    d->bitmap = calloc((size_t)(TOTAL / 8 + 1), 1);
    assert_non_null(d->bitmap);
    ac_system *sys = ts_fx_system(fx, "throughput", opts);
    assert_non_null(sys);
    d->target = ts_spawn(sys, &tp_def, d, "counter");
    assert_non_null(d->target);

    double t0 = ts_now();
    pthread_t th[THREADS];
    tp_thread args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (tp_thread){d, 1 + (long long)i * PER_THREAD};
        assert_int_equal(pthread_create(&th[i], NULL, tp_sender, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    double t_sent = ts_now();
    /* a generous bound: the run is far faster even under sanitizers */
    assert_eventually(ts_wait_eq(&d->progress, TOTAL, 100.0), "all messages handled");
    double t_done = ts_now();
    print_message("%lld messages: sent in %.3f s, handled in %.3f s (%.0f msg/s)\n", TOTAL,
                  t_sent - t0, t_done - t0, (double)TOTAL / (t_done - t0));

    /* stop it in order: anything extra would be counted before post_stop */
    assert_status(ac_tell(d->target, ac_poison_pill(), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->stopped, 1, TS_WAIT_S), "post_stop");
    assert_int_equal(atomic_load(&d->send_failures), 0);
    assert_int_equal(atomic_load(&d->out_of_range), 0);
    assert_int_equal(atomic_load(&d->duplicates), 0);
    assert_int_equal(atomic_load(&d->final_count), TOTAL);
    assert_int_equal(atomic_load(&d->final_sum), TOTAL * (TOTAL + 1) / 2);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    ac_ref_release(d->target);
    assert_status(ts_fx_terminate(fx), AC_OK);

    /* every value arrived: all bits set (the actor is gone, reading is safe) */
    for (long long v = 1; v <= TOTAL; v++) {
        if (!(d->bitmap[v >> 3] & (1u << (v & 7)))) {
            fail_msg("value %lld never arrived", v);
        }
    }
}

static void test_million_messages_eight_threads(void **state)
{
    run(*state, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_million_messages_eight_threads),
    };
    return cmocka_run_group_tests_name("throughput", tests, NULL, NULL);
}
