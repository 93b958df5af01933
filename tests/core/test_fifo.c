/*
 * Order per sender-receiver pair: several senders (actors and plain
 * threads) send numbered messages to one receiver at once; each sender's
 * sequence must arrive complete and in order.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define ACTOR_SENDERS 4
#define THREAD_SENDERS 4
#define SENDERS (ACTOR_SENDERS + THREAD_SENDERS)
#define PER_SENDER 20000

typedef struct seq_msg {
    int sender;
    int64_t seq;
} seq_msg;

static const ac_msg_type seq_type = {.name = "test.Seq"};

typedef struct fifo_data {
    ac_ref *receiver; /* written before any "go" */
    atomic_llong received;
    atomic_llong out_of_order;
    atomic_llong wrong_sender;
    atomic_llong send_failures;
    char sender_paths[SENDERS][128]; /* written before any "go" */
} fifo_data;

typedef struct recv_state {
    int64_t next[SENDERS];
} recv_state;

static void receiver_receive(ac_ctx *ctx, ac_msg *msg)
{
    fifo_data *d = ac_ctx_user_data(ctx);
    recv_state *s = ac_ctx_state(ctx);
    if (!ac_msg_is(msg, &seq_type)) {
        return;
    }
    const seq_msg *m = ac_msg_data(msg);
    if (m->sender < 0 || m->sender >= SENDERS) {
        atomic_fetch_add(&d->wrong_sender, 1);
        return;
    }
    if (m->seq != s->next[m->sender]) {
        atomic_fetch_add(&d->out_of_order, 1);
    }
    s->next[m->sender] = m->seq + 1;
    /* actor senders pass themselves as sender; thread senders pass none */
    ac_ref *snd = ac_sender(ctx);
    if (m->sender < ACTOR_SENDERS) {
        if (snd == NULL || strcmp(ac_ref_path(snd), d->sender_paths[m->sender]) != 0) {
            atomic_fetch_add(&d->wrong_sender, 1);
        }
    } else if (snd != NULL) {
        atomic_fetch_add(&d->wrong_sender, 1);
    }
    atomic_fetch_add(&d->received, 1);
}

static const ac_actor_def receiver_def = {
    .name = "Receiver", .state_size = sizeof(recv_state), .receive = receiver_receive,
};

static ac_msg *seq_new(int sender, int64_t seq)
{
    ac_msg *m = ac_msg_new(&seq_type, sizeof(seq_msg));
    if (m != NULL) {
        seq_msg *p = ac_msg_payload(m);
        p->sender = sender;
        p->seq = seq;
    }
    return m;
}

/* An actor sender: "go" carries its id; it then sends its whole sequence
 * from inside one handler. */
static void sender_receive(ac_ctx *ctx, ac_msg *msg)
{
    fifo_data *d = ac_ctx_user_data(ctx);
    int id = (int)ac_msg_int64(msg);
    for (int64_t i = 0; i < PER_SENDER; i++) {
        if (ac_tell(d->receiver, seq_new(id, i), ac_self(ctx)) != AC_OK) {
            atomic_fetch_add(&d->send_failures, 1);
        }
    }
}

static const ac_actor_def sender_def = {.name = "Sender", .receive = sender_receive};

typedef struct thread_arg {
    fifo_data *d;
    int id;
} thread_arg;

static void *thread_sender(void *arg)
{
    thread_arg *a = arg;
    for (int64_t i = 0; i < PER_SENDER; i++) {
        if (ac_tell(a->d->receiver, seq_new(a->id, i), NULL) != AC_OK) {
            atomic_fetch_add(&a->d->send_failures, 1);
        }
    }
    return NULL;
}

static void run_fifo(ts_fixture *fx, const ac_system_options *opts)
{
    fifo_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_system *sys = ts_fx_system(fx, "fifo", opts);
    assert_non_null(sys);

    d->receiver = ts_spawn(sys, &receiver_def, d, "receiver");
    assert_non_null(d->receiver);
    ac_ref *senders[ACTOR_SENDERS];
    for (int i = 0; i < ACTOR_SENDERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "sender-%d", i);
        senders[i] = ts_spawn(sys, &sender_def, d, name);
        assert_non_null(senders[i]);
        snprintf(d->sender_paths[i], sizeof d->sender_paths[i], "%s", ac_ref_path(senders[i]));
    }

    pthread_t threads[THREAD_SENDERS];
    thread_arg args[THREAD_SENDERS];
    for (int i = 0; i < ACTOR_SENDERS; i++) {
        assert_status(ac_tell(senders[i], ac_msg_int64_new(i), NULL), AC_OK);
    }
    for (int i = 0; i < THREAD_SENDERS; i++) {
        args[i].d = d;
        args[i].id = ACTOR_SENDERS + i;
        assert_int_equal(pthread_create(&threads[i], NULL, thread_sender, &args[i]), 0);
    }
    for (int i = 0; i < THREAD_SENDERS; i++) {
        pthread_join(threads[i], NULL);
    }

    const long long total = (long long)SENDERS * PER_SENDER;
    assert_eventually(ts_wait_eq(&d->received, total, 6 * TS_WAIT_S), "all messages");
    assert_int_equal(atomic_load(&d->send_failures), 0);
    assert_int_equal(atomic_load(&d->out_of_order), 0);
    assert_int_equal(atomic_load(&d->wrong_sender), 0);
    assert_int_equal(ac_dead_letter_count(sys), 0);

    for (int i = 0; i < ACTOR_SENDERS; i++) {
        ac_ref_release(senders[i]);
    }
    ac_ref_release(d->receiver);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_fifo_defaults(void **state)
{
    run_fifo(*state, NULL);
}

/* Many workers and the smallest batch make interleaving as likely as it
 * gets. */
static void test_fifo_four_workers_batch_one(void **state)
{
    ac_system_options o = {.workers = 4, .batch = 1};
    run_fifo(*state, &o);
}

static void test_fifo_one_worker(void **state)
{
    ac_system_options o = {.workers = 1};
    run_fifo(*state, &o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_fifo_defaults),
        TS_UNIT(test_fifo_four_workers_batch_one),
        TS_UNIT(test_fifo_one_worker),
    };
    return cmocka_run_group_tests_name("fifo", tests, NULL, NULL);
}
