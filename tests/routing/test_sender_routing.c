/*
 * Routing in the sender's thread (routing/router_front.h): a message to a
 * round-robin, random, broadcast, smallest-mailbox or consistent-hashing
 * router is delivered to its routee by the sender, from a snapshot of the
 * set that the router replaces as the set changes. What must hold, with
 * senders and changes colliding (under ThreadSanitizer too):
 *
 *   - nothing is lost: every message reaches a routee or, for a routee
 *     that stopped before it was pruned, the dead letters;
 *   - order per sender and routee: each routee sees a sender's messages
 *     in the order they were sent;
 *   - order with the router's own messages: a message sent after a
 *     RemoveRoutee never reaches the routee removed, and one sent after a
 *     Broadcast reaches its routee after the Broadcast did;
 *   - routers of routers (nested fronts) lose nothing either;
 *   - a set that empties (no snapshot) and fills again loses nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>

#include "rt_common.h"
#include "ts_test.h"

#if defined(__SANITIZE_THREAD__)
#define SR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SR_TSAN 1
#endif
#endif
#ifndef SR_TSAN
#define SR_TSAN 0
#endif

#define SENDERS 3
#define PER_SENDER (SR_TSAN ? 3000 : 20000)
#define ROUTEES 4
#define MAX_SENDERS 8

/* A message: sender (8 bits), phase (8 bits), sequence (32 bits). */
#define SR_MSG(s, phase, seq) (((int64_t)(s) << 40) | ((int64_t)(phase) << 32) | (int64_t)(seq))
#define SR_MARK 0xff /* the Broadcast marker's phase */

typedef struct slot {
    atomic_llong received;
    atomic_llong out_of_order;
    atomic_llong after_removal; /* messages of a phase sent after this routee's removal */
    atomic_llong before_mark;   /* a message of phase p seen before the marker of p */
    atomic_int removed_phase;   /* phase from which it is removed (-1: none) */
    bool check_marks;           /* set before the routees start */
    /* Its turn's only: */
    int64_t last_seq[MAX_SENDERS];
    int mark_phase[MAX_SENDERS];
} slot;

typedef struct board {
    slot slots[ROUTEES];
    ac_system *sys;
    ac_ref *routees[ROUTEES];
    ac_ref *router;
    atomic_int stop_writer;
    atomic_llong sent;
    atomic_int not_emptied; /* the set was not empty after a removal */
} board;

static void recorder_receive(ac_ctx *ctx, ac_msg *msg)
{
    slot *s = ac_ctx_user_data(ctx);
    int64_t v;
    if (ac_msg_int64_get(msg, &v) != AC_OK) {
        return;
    }
    int sender = (int)(v >> 40);
    int phase = (int)((v >> 32) & 0xff);
    int64_t seq = v & 0xffffffff;
    if (sender < 0 || sender >= MAX_SENDERS) {
        return;
    }
    if (phase == SR_MARK) {
        s->mark_phase[sender] = (int)seq;
        return;
    }
    atomic_fetch_add(&s->received, 1);
    if (seq <= s->last_seq[sender]) {
        atomic_fetch_add(&s->out_of_order, 1);
    }
    s->last_seq[sender] = seq;
    int removed = atomic_load(&s->removed_phase);
    if (removed >= 0 && phase >= removed) {
        atomic_fetch_add(&s->after_removal, 1);
    }
    if (s->check_marks && phase > 0 && s->mark_phase[sender] < phase) {
        atomic_fetch_add(&s->before_mark, 1);
    }
}

static const ac_actor_def recorder_def = {.name = "Recorder", .receive = recorder_receive};

static void spawn_recorders(board *b, bool check_marks)
{
    for (int i = 0; i < ROUTEES; i++) {
        b->slots[i].check_marks = check_marks;
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        atomic_init(&b->slots[i].removed_phase, -1);
        for (int k = 0; k < MAX_SENDERS; k++) {
            b->slots[i].last_seq[k] = -1;
        }
        b->routees[i] = ts_spawn(b->sys, &recorder_def, &b->slots[i], name);
        assert_non_null(b->routees[i]);
    }
}

static long long received_total(board *b)
{
    long long n = 0;
    for (int i = 0; i < ROUTEES; i++) {
        n += atomic_load(&b->slots[i].received);
    }
    return n;
}

static void check_slots(board *b)
{
    for (int i = 0; i < ROUTEES; i++) {
        slot *s = &b->slots[i];
        if (atomic_load(&s->out_of_order) || atomic_load(&s->after_removal) ||
            atomic_load(&s->before_mark)) {
            fail_msg("routee r%d: %lld out of order, %lld after its removal, %lld before their "
                     "Broadcast",
                     i, (long long)atomic_load(&s->out_of_order),
                     (long long)atomic_load(&s->after_removal),
                     (long long)atomic_load(&s->before_mark));
        }
    }
}

typedef struct sender_arg {
    board *b;
    int id;
} sender_arg;

/* Plain sequences to the router. */
static void *plain_sender(void *p)
{
    sender_arg *a = p;
    for (int64_t i = 0; i < PER_SENDER; i++) {
        if (ac_tell(a->b->router, ac_msg_int64_new(SR_MSG(a->id, 0, i)), NULL) == AC_OK) {
            atomic_fetch_add(&a->b->sent, 1);
        }
    }
    return NULL;
}

/* While senders send, remove a routee and add it back, over and over. */
static void *churner(void *p)
{
    board *b = p;
    for (int i = 0; !atomic_load(&b->stop_writer); i++) {
        ac_ref *r = b->routees[i % ROUTEES];
        ac_tell(b->router, ac_router_remove_routee_msg(r), NULL);
        ac_tell(b->router, ac_router_add_routee_msg(r), NULL);
        if (i % 16 == 15) {
            sched_yield();
        }
    }
    return NULL;
}

static void run_senders(board *b, void *(*fn)(void *), bool churn)
{
    pthread_t t[SENDERS], w;
    sender_arg args[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        args[i] = (sender_arg){.b = b, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, fn, &args[i]), 0);
    }
    if (churn) {
        assert_int_equal(pthread_create(&w, NULL, churner, b), 0);
    }
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&b->stop_writer, 1);
    if (churn) {
        pthread_join(w, NULL);
    }
}

static bool all_received(board *b, long long want)
{
    double end = ts_now() + TS_WAIT_S * 3;
    while (received_total(b) < want && ts_now() < end) {
        ts_sleep_ms(2);
    }
    return received_total(b) == want;
}

static void release_board(board *b)
{
    ac_ref_release(b->router);
    for (int i = 0; i < ROUTEES; i++) {
        ac_ref_release(b->routees[i]);
    }
}

/* Senders on three threads through each kind of group while another
 * thread keeps removing and adding routees: every message arrives, each
 * routee sees each sender's messages in order. */
static void churn_through(void **state, const char *name,
                          ac_props *(*make)(ac_ref *const *, size_t))
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    ac_system_options o = {.workers = 3};
    b->sys = ts_fx_system(fx, name, &o);
    assert_non_null(b->sys);
    spawn_recorders(b, false);
    b->router = rt_spawn(b->sys, make(b->routees, ROUTEES), "router");
    assert_non_null(b->router);
    run_senders(b, plain_sender, true);
    long long sent = atomic_load(&b->sent);
    assert_int_equal(sent, (long long)SENDERS * PER_SENDER);
    if (!all_received(b, sent)) {
        fail_msg("%s: %lld of %lld messages arrived", name, received_total(b), sent);
    }
    check_slots(b);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static uint64_t key_of(const ac_msg *msg, void *user)
{
    (void)user;
    return (uint64_t)ac_msg_int64(msg) & 0xffff;
}

static ac_props *hashing_group(ac_ref *const *r, size_t n)
{
    return ac_router_group_consistent_hashing(r, n, key_of, NULL);
}

static void test_round_robin_churn(void **state)
{
    churn_through(state, "sr_rr", ac_router_group_round_robin);
}

static void test_random_churn(void **state)
{
    churn_through(state, "sr_random", ac_router_group_random);
}

static void test_smallest_mailbox_churn(void **state)
{
    churn_through(state, "sr_smallest", ac_router_group_smallest_mailbox);
}

static void test_hashing_churn(void **state)
{
    churn_through(state, "sr_hashing", hashing_group);
}

/* One sender: RemoveRoutee(r), then messages of a new phase: none of them
 * reaches r; then AddRoutee(r) and on. */
static void test_removal_then_send(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    b->sys = ts_fx_system(fx, "sr_remove", NULL);
    assert_non_null(b->sys);
    spawn_recorders(b, false);
    b->router = rt_spawn(b->sys, ac_router_group_round_robin(b->routees, ROUTEES), "router");
    assert_non_null(b->router);
    const int phases = SR_TSAN ? 40 : 150, per_phase = 40;
    int64_t seq = 0;
    for (int phase = 1; phase <= phases; phase++) {
        int victim = phase % ROUTEES;
        /* Set before the removal is sent: the routee's checks see it. */
        atomic_store(&b->slots[victim].removed_phase, phase);
        assert_status(ac_tell(b->router, ac_router_remove_routee_msg(b->routees[victim]), NULL),
                      AC_OK);
        for (int k = 0; k < per_phase; k++) {
            assert_status(ac_tell(b->router, ac_msg_int64_new(SR_MSG(0, phase, seq++)), NULL),
                          AC_OK);
        }
        assert_status(ac_tell(b->router, ac_router_add_routee_msg(b->routees[victim]), NULL),
                      AC_OK);
        /* Wait for the phase to arrive before the victim may take messages
         * again (its flag is cleared once nothing of this phase is left). */
        if (!all_received(b, seq)) {
            fail_msg("phase %d: %lld of %lld arrived", phase, received_total(b), (long long)seq);
        }
        atomic_store(&b->slots[victim].removed_phase, -1);
    }
    check_slots(b);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A Broadcast then messages, from three senders at once: each routee
 * sees a sender's marker of phase p before that sender's messages of
 * phase p. */
static void *marking_sender(void *p)
{
    sender_arg *a = p;
    int64_t seq = 0;
    for (int phase = 1; phase <= (SR_TSAN ? 30 : 100); phase++) {
        ac_msg *mark = ac_msg_int64_new(SR_MSG(a->id, SR_MARK, phase));
        ac_tell(a->b->router, ac_broadcast_new(mark), NULL);
        for (int k = 0; k < 30; k++) {
            if (ac_tell(a->b->router, ac_msg_int64_new(SR_MSG(a->id, phase, seq++)), NULL) ==
                AC_OK) {
                atomic_fetch_add(&a->b->sent, 1);
            }
        }
    }
    return NULL;
}

static void test_broadcast_then_send(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    ac_system_options o = {.workers = 3};
    b->sys = ts_fx_system(fx, "sr_broadcast", &o);
    assert_non_null(b->sys);
    spawn_recorders(b, true);
    b->router = rt_spawn(b->sys, ac_router_group_round_robin(b->routees, ROUTEES), "router");
    assert_non_null(b->router);
    run_senders(b, marking_sender, false);
    if (!all_received(b, atomic_load(&b->sent))) {
        fail_msg("%lld of %lld arrived", received_total(b), (long long)atomic_load(&b->sent));
    }
    check_slots(b);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A round-robin group whose routees are round-robin groups of the
 * recorders (routers of routers, fronts nested two deep), while a thread
 * keeps changing the inner sets. */
static void test_nested_routers(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    ac_system_options o = {.workers = 3};
    b->sys = ts_fx_system(fx, "sr_nested", &o);
    assert_non_null(b->sys);
    spawn_recorders(b, false);
    ac_ref *inner[2];
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "inner-%d", i);
        inner[i] = rt_spawn(b->sys, ac_router_group_round_robin(b->routees, ROUTEES), name);
        assert_non_null(inner[i]);
    }
    b->router = rt_spawn(b->sys, ac_router_group_round_robin(inner, 2), "outer");
    assert_non_null(b->router);
    run_senders(b, plain_sender, false);
    long long sent = atomic_load(&b->sent);
    if (!all_received(b, sent)) {
        fail_msg("%lld of %lld arrived", received_total(b), sent);
    }
    /* Order per sender and recorder does not hold across two inner
     * routers (two paths); nothing is lost, and nothing is doubled. */
    assert_int_equal(received_total(b), (long long)SENDERS * PER_SENDER);
    ac_ref_release(inner[0]);
    ac_ref_release(inner[1]);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A pool whose routees stop while senders send: each message reaches a
 * routee or the dead letters, none is lost. */
static void *stopper(void *p)
{
    board *b = p;
    while (!atomic_load(&b->stop_writer)) {
        ac_answer a;
        if (ac_ask_wait(b->router, ac_router_get_routees_msg(), RT_ASK_MS, &a) == AC_OK &&
            ac_routees_count(a.reply) > 1) {
            ac_stop(ac_routees_at(a.reply, 0)); /* the answer holds it */
        }
        ac_answer_release(&a);
        ts_sleep_ms(1);
    }
    return NULL;
}

static void count_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    atomic_fetch_add((atomic_llong *)ac_ctx_user_data(ctx), 1);
}

static const ac_actor_def counting_def = {.name = "Counting", .receive = count_receive};

static void test_pool_routees_stopping(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    static atomic_llong counted;
    atomic_store(&counted, 0);
    ac_system_options o = {.workers = 3};
    b->sys = ts_fx_system(fx, "sr_pool_stop", &o);
    assert_non_null(b->sys);
    ac_routee_options ro = {.user_data = &counted};
    b->router = rt_spawn(b->sys, ac_router_round_robin(8, &counting_def, &ro), "pool");
    assert_non_null(b->router);
    pthread_t st;
    assert_int_equal(pthread_create(&st, NULL, stopper, b), 0);
    pthread_t t[SENDERS];
    sender_arg args[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        args[i] = (sender_arg){.b = b, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, plain_sender, &args[i]), 0);
    }
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&b->stop_writer, 1);
    pthread_join(st, NULL);
    long long sent = atomic_load(&b->sent);
    double end = ts_now() + TS_WAIT_S * 3;
    while (atomic_load(&counted) + (long long)ac_dead_letter_count(b->sys) < sent &&
           ts_now() < end) {
        ts_sleep_ms(2);
    }
    long long got = atomic_load(&counted), dead = (long long)ac_dead_letter_count(b->sys);
    if (got + dead != sent) {
        fail_msg("%lld sent, %lld handled, %lld dead letters", sent, got, dead);
    }
    ac_ref_release(b->router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Empty a one-routee group and fill it again, over and over; each time
 * until the router has answered that the set is empty. */
static void *emptying_churner(void *p)
{
    board *b = p;
    ac_ref *got[1];
    while (!atomic_load(&b->stop_writer)) {
        ac_tell(b->router, ac_router_remove_routee_msg(b->routees[0]), NULL);
        if (rt_routees(b->router, got, 1) != 0) {
            atomic_fetch_add(&b->not_emptied, 1);
        }
        ac_tell(b->router, ac_router_add_routee_msg(b->routees[0]), NULL);
        sched_yield(); /* let some messages find the set filled */
    }
    return NULL;
}

/* One sender, in steps: with the set emptied (as the router's answer
 * shows), every message is a dead letter; with it refilled, every one
 * reaches the routee. */
static void test_empty_set_then_refilled(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    b->sys = ts_fx_system(fx, "sr_empty_steps", NULL);
    assert_non_null(b->sys);
    spawn_recorders(b, false);
    b->router = rt_spawn(b->sys, ac_router_group_round_robin(b->routees, 1), "router");
    assert_non_null(b->router);
    ac_ref *got[1];
    const int rounds = 5, per_step = 50;
    int64_t seq = 0;
    for (int round = 1; round <= rounds; round++) {
        uint64_t dead0 = ac_dead_letter_count(b->sys);
        assert_status(ac_tell(b->router, ac_router_remove_routee_msg(b->routees[0]), NULL),
                      AC_OK);
        assert_int_equal(rt_routees(b->router, got, 1), 0);
        for (int k = 0; k < per_step; k++) {
            assert_status(ac_tell(b->router, ac_msg_int64_new(SR_MSG(0, 0, seq++)), NULL),
                          AC_OK);
        }
        assert_status(ac_tell(b->router, ac_router_add_routee_msg(b->routees[0]), NULL),
                      AC_OK);
        assert_int_equal(rt_routees(b->router, got, 1), 1);
        /* The router handled the empty step's messages before the answer. */
        assert_int_equal(ac_dead_letter_count(b->sys) - dead0, (uint64_t)per_step);
        for (int k = 0; k < per_step; k++) {
            assert_status(ac_tell(b->router, ac_msg_int64_new(SR_MSG(0, 0, seq++)), NULL),
                          AC_OK);
        }
        if (!all_received(b, (long long)round * per_step)) {
            fail_msg("round %d: %lld of %d arrived", round, received_total(b), round * per_step);
        }
    }
    check_slots(b);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A set that keeps becoming empty: while it is, senders find no snapshot
 * and the router's turn makes their messages dead letters; once it is
 * refilled they route again. Every message reaches the routee or the
 * dead letters (how many of each is the threads' timing), and the routee
 * sees each sender's in order. */
static void test_emptied_and_refilled(void **state)
{
    ts_fixture *fx = *state;
    board *b = ts_fx_data(fx, sizeof *b, NULL);
    ac_system_options o = {.workers = 3};
    b->sys = ts_fx_system(fx, "sr_emptied", &o);
    assert_non_null(b->sys);
    spawn_recorders(b, false);
    b->router = rt_spawn(b->sys, ac_router_group_round_robin(b->routees, 1), "router");
    assert_non_null(b->router);
    long long dead0 = (long long)ac_dead_letter_count(b->sys);
    pthread_t t[SENDERS], w;
    sender_arg args[SENDERS];
    assert_int_equal(pthread_create(&w, NULL, emptying_churner, b), 0);
    for (int i = 0; i < SENDERS; i++) {
        args[i] = (sender_arg){.b = b, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, plain_sender, &args[i]), 0);
    }
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&b->stop_writer, 1);
    pthread_join(w, NULL);
    long long sent = atomic_load(&b->sent);
    assert_int_equal(sent, (long long)SENDERS * PER_SENDER);
    double end = ts_now() + TS_WAIT_S * 3;
    while (received_total(b) + (long long)ac_dead_letter_count(b->sys) - dead0 < sent &&
           ts_now() < end) {
        ts_sleep_ms(2);
    }
    assert_int_equal(atomic_load(&b->not_emptied), 0);
    long long got = received_total(b), dead = (long long)ac_dead_letter_count(b->sys) - dead0;
    if (got + dead != sent) {
        fail_msg("%lld sent, %lld received, %lld dead letters", sent, got, dead);
    }
    check_slots(b);
    release_board(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_round_robin_churn),     TS_UNIT(test_random_churn),
        TS_UNIT(test_smallest_mailbox_churn), TS_UNIT(test_hashing_churn),
        TS_UNIT(test_removal_then_send),     TS_UNIT(test_broadcast_then_send),
        TS_UNIT(test_nested_routers),        TS_UNIT(test_pool_routees_stopping),
        TS_UNIT(test_empty_set_then_refilled), TS_UNIT(test_emptied_and_refilled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
