/*
 * Dead letters: a tell to a stopped actor returns AC_OK, is counted once per
 * message, reaches every subscriber with the message, its sender and its
 * intended recipient, and its destroy hook runs once.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define K 100

typedef struct dl_data {
    ac_system *sys;
    ts_recorder *rec;
    atomic_llong created;
    atomic_llong destroyed;
    atomic_llong terminated;
    atomic_llong seen[2];           /* dead letters per subscriber */
    atomic_llong value_seen[2][K];  /* per subscriber, per value */
    atomic_llong bad[2];            /* wrong recipient/sender/type */
    atomic_llong probes[2];
    char target_path[128];          /* written before the target dies */
    char sender_path[128];          /* written before anything is sent */
    ac_ref *target;                 /* written before OP_WATCH */
} dl_data;

/* A user type whose destroy hook counts. */
typedef struct counted {
    dl_data *d;
    int value;
} counted;

static void counted_destroy(void *payload, size_t size)
{
    (void)size;
    counted *c = payload;
    atomic_fetch_add(&c->d->destroyed, 1);
}

static const ac_msg_type counted_type = {.name = "test.Counted", .destroy = counted_destroy};

static ac_msg *counted_new(dl_data *d, int value)
{
    ac_msg *m = ac_msg_new(&counted_type, sizeof(counted));
    assert_non_null(m);
    counted *c = ac_msg_payload(m);
    c->d = d;
    c->value = value;
    atomic_fetch_add(&d->created, 1);
    return m;
}

enum { OP_WATCH = -1, OP_PROBE = -2 };

static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def sink_def = {.name = "Sink", .receive = sink_receive};

/* Subscriber "s0"/"s1": checks and counts each dead letter. Also watches
 * the target on request. */
static void subscriber_receive(ac_ctx *ctx, ac_msg *msg)
{
    dl_data *d = ac_ctx_user_data(ctx);
    int id = ac_self_name(ctx)[1] - '0';
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        atomic_fetch_add(&d->terminated, 1);
        return;
    }
    if (ac_msg_is(msg, &ac_msg_type_dead_letter)) {
        ac_msg *inner = ac_dead_letter_msg(msg);
        ac_ref *rcpt = ac_dead_letter_recipient(msg);
        ac_ref *snd = ac_dead_letter_sender(msg);
        if (!ac_msg_is(inner, &counted_type)) {
            atomic_fetch_add(&d->bad[id], 1);
            ts_rec_add(d->rec, "s%d: dead letter of type %s", id, ac_msg_type_name(inner));
            return;
        }
        const counted *c = ac_msg_data(inner);
        if (c->value < 0 || c->value >= K) {
            atomic_fetch_add(&d->bad[id], 1);
            return;
        }
        atomic_fetch_add(&d->value_seen[id][c->value], 1);
        if (rcpt == NULL || strcmp(ac_ref_path(rcpt), d->target_path) != 0) {
            atomic_fetch_add(&d->bad[id], 1);
            ts_rec_add(d->rec, "s%d: recipient %s", id, rcpt ? ac_ref_path(rcpt) : "(null)");
        }
        /* even values were sent with a sender, odd ones without */
        if (c->value % 2 == 0) {
            if (snd == NULL || strcmp(ac_ref_path(snd), d->sender_path) != 0) {
                atomic_fetch_add(&d->bad[id], 1);
                ts_rec_add(d->rec, "s%d: sender %s for %d", id,
                           snd ? ac_ref_path(snd) : "(null)", c->value);
            }
        } else if (snd != NULL) {
            atomic_fetch_add(&d->bad[id], 1);
            ts_rec_add(d->rec, "s%d: unexpected sender %s", id, ac_ref_path(snd));
        }
        atomic_fetch_add(&d->seen[id], 1);
        return;
    }
    int64_t op = ac_msg_int64(msg);
    if (op == OP_WATCH) {
        ac_watch(ctx, d->target);
    } else if (op == OP_PROBE) {
        atomic_fetch_add(&d->probes[id], 1);
    }
}

static const ac_actor_def subscriber_def = {.name = "Subscriber", .receive = subscriber_receive};

static dl_data *setup(ts_fixture *fx)
{
    dl_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "deadletters", NULL);
    assert_non_null(d->sys);
    return d;
}

/* Spawn the target and stop it; return once it is known to be dead (a
 * watcher got Terminated). */
static ac_ref *dead_target(dl_data *d, ac_ref *watcher)
{
    ac_ref *t = ts_spawn(d->sys, &sink_def, d, "target");
    assert_non_null(t);
    snprintf(d->target_path, sizeof d->target_path, "%s", ac_ref_path(t));
    d->target = t;
    assert_status(ac_tell(watcher, ac_msg_int64_new(OP_WATCH), NULL), AC_OK);
    assert_status(ac_stop(t), AC_OK);
    assert_eventually(ts_wait_eq(&d->terminated, 1, TS_WAIT_S), "target dead");
    return t;
}

static void test_tell_after_stop_counts_each_once(void **state)
{
    ts_fixture *fx = *state;
    dl_data *d = setup(fx);
    ac_ref *w = ts_spawn(d->sys, &subscriber_def, d, "s0"); /* not subscribed */
    assert_non_null(w);
    ac_ref *t = dead_target(d, w);
    uint64_t base = ac_dead_letter_count(d->sys);
    assert_int_equal(base, 0);

    for (int i = 0; i < K; i++) {
        assert_status(ac_tell(t, counted_new(d, i), NULL), AC_OK);
    }
    assert_eventually(ts_wait_dead_letters(d->sys, base + K, TS_WAIT_S), "K dead letters");
    /* a second look: no message was counted twice */
    assert_int_equal(ac_dead_letter_count(d->sys), base + K);
    assert_int_equal(atomic_load(&d->seen[0]), 0); /* not subscribed */

    /* ac_stop on the dead target changes nothing */
    ac_stop(t);
    assert_int_equal(ac_dead_letter_count(d->sys), base + K);

    ac_ref_release(t);
    ac_ref_release(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->created), K);
    assert_int_equal(atomic_load(&d->destroyed), K);
}

static void test_subscribers_receive_each(void **state)
{
    ts_fixture *fx = *state;
    dl_data *d = setup(fx);
    ac_ref *s0 = ts_spawn(d->sys, &subscriber_def, d, "s0");
    ac_ref *s1 = ts_spawn(d->sys, &subscriber_def, d, "s1");
    ac_ref *snd = ts_spawn(d->sys, &sink_def, d, "sender");
    assert_non_null(s0);
    assert_non_null(s1);
    assert_non_null(snd);
    snprintf(d->sender_path, sizeof d->sender_path, "%s", ac_ref_path(snd));
    assert_status(ac_dead_letters_subscribe(d->sys, s0), AC_OK);
    assert_status(ac_dead_letters_subscribe(d->sys, s1), AC_OK);
    ac_ref *t = dead_target(d, s0);

    for (int i = 0; i < K; i++) {
        assert_status(ac_tell(t, counted_new(d, i), i % 2 == 0 ? snd : NULL), AC_OK);
    }
    assert_eventually(ts_wait_eq(&d->seen[0], K, TS_WAIT_S), "all dead letters at s0");
    assert_eventually(ts_wait_eq(&d->seen[1], K, TS_WAIT_S), "all dead letters at s1");
    assert_eventually(ts_wait_dead_letters(d->sys, K, TS_WAIT_S), "dead letter count");
    assert_int_equal(ac_dead_letter_count(d->sys), K);
    for (int id = 0; id < 2; id++) {
        if (atomic_load(&d->bad[id]) != 0) {
            ts_rec_dump(d->rec, "problems");
        }
        assert_int_equal(atomic_load(&d->bad[id]), 0);
        for (int i = 0; i < K; i++) {
            if (atomic_load(&d->value_seen[id][i]) != 1) {
                fail_msg("subscriber s%d saw message %d %lld times", id, i,
                         (long long)atomic_load(&d->value_seen[id][i]));
            }
        }
    }

    /* unsubscribed: s1 gets no more, s0 still does */
    assert_status(ac_dead_letters_unsubscribe(d->sys, s1), AC_OK);
    for (int i = 0; i < 10; i++) {
        assert_status(ac_tell(t, counted_new(d, i), i % 2 == 0 ? snd : NULL), AC_OK);
    }
    assert_eventually(ts_wait_eq(&d->seen[0], K + 10, TS_WAIT_S), "more dead letters at s0");
    assert_status(ac_tell(s1, ac_msg_int64_new(OP_PROBE), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->probes[1], 1, TS_WAIT_S), "probe");
    assert_int_equal(atomic_load(&d->seen[1]), K);
    assert_eventually(ts_wait_dead_letters(d->sys, K + 10, TS_WAIT_S), "dead letter count");
    assert_int_equal(ac_dead_letter_count(d->sys), K + 10);

    ac_ref_release(t);
    ac_ref_release(snd);
    ac_ref_release(s0);
    ac_ref_release(s1);
    assert_status(ts_fx_terminate(fx), AC_OK);
    /* subscribers borrowed the dead letters: each still destroyed once */
    assert_int_equal(atomic_load(&d->created), K + 10);
    assert_int_equal(atomic_load(&d->destroyed), K + 10);
}

/* Dead letters from many threads at once are all counted. */
#define DL_THREADS 4
#define DL_PER_THREAD 2000

typedef struct dl_thread {
    dl_data *d;
    ac_ref *t;
    atomic_llong *failures;
} dl_thread;

static void *dl_sender(void *arg)
{
    dl_thread *a = arg;
    for (int i = 0; i < DL_PER_THREAD; i++) {
        ac_msg *m = ac_msg_new(&counted_type, sizeof(counted));
        counted *c = ac_msg_payload(m);
        c->d = a->d;
        c->value = i % K;
        atomic_fetch_add(&a->d->created, 1);
        if (ac_tell(a->t, m, NULL) != AC_OK) {
            atomic_fetch_add(a->failures, 1);
        }
    }
    return NULL;
}

static void test_concurrent_dead_letters(void **state)
{
    ts_fixture *fx = *state;
    dl_data *d = setup(fx);
    ac_ref *w = ts_spawn(d->sys, &subscriber_def, d, "s0");
    assert_non_null(w);
    ac_ref *t = dead_target(d, w);
    atomic_llong failures;
    atomic_init(&failures, 0);

    pthread_t th[DL_THREADS];
    dl_thread args[DL_THREADS];
    for (int i = 0; i < DL_THREADS; i++) {
        args[i] = (dl_thread){d, t, &failures};
        assert_int_equal(pthread_create(&th[i], NULL, dl_sender, &args[i]), 0);
    }
    for (int i = 0; i < DL_THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    assert_int_equal(atomic_load(&failures), 0);
    const uint64_t total = (uint64_t)DL_THREADS * DL_PER_THREAD;
    assert_eventually(ts_wait_dead_letters(d->sys, total, TS_WAIT_S), "all dead letters");
    assert_int_equal(ac_dead_letter_count(d->sys), total);
    ac_ref_release(t);
    ac_ref_release(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->destroyed), (long long)total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_tell_after_stop_counts_each_once),
        TS_UNIT(test_subscribers_receive_each),
        TS_UNIT(test_concurrent_dead_letters),
    };
    return cmocka_run_group_tests_name("dead_letters", tests, NULL, NULL);
}
