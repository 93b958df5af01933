/*
 * The scheduler's run queues (src/core/scheduler.c), white-box. The ring
 * functions are static, so they are reached through the narrowest calls
 * that use them:
 *   - ac__scheduler_push from a thread that is not a worker goes to the
 *     injection list; ac__scheduler_stop on a scheduler that never started
 *     drains it, releasing each queued actor in FIFO order (stand-in
 *     actors whose destroy records the order);
 *   - on a system with one worker, a handler that wakes idle actors puts
 *     each in its worker's runnext, the one it displaces at the tail of
 *     the ring: they run last-woken first, then the rest in wake order;
 *     beyond the ring's 256 slots the overflow goes to the injection list,
 *     and every actor still runs exactly once, each queue in FIFO order;
 *   - on a system with two workers, an actor queued in a worker's ring by
 *     a push outside a turn (as a requeue after a full batch, or a timer
 *     fired on a worker, makes it) while the other worker sleeps runs on
 *     that other worker even though its owner then stays in one long turn;
 *   - two actors injected while a worker spins (which wakes no one): the
 *     first one's long turn does not strand the second.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "core/internal.h"

/* ---- the injection list, on a scheduler that never starts ------------ */

enum { N_STAND_INS = 40 };
static ac__actor *g_stand_ins[N_STAND_INS];
static int g_order[N_STAND_INS];
static int g_released;

/* A stand-in records its index when the queue lets go of it. */
static void stand_in_destroy(ac_ref *ref)
{
    for (int i = 0; i < N_STAND_INS; i++) {
        if (&g_stand_ins[i]->ref == ref) {
            g_order[g_released++] = i;
        }
    }
}

static const char *stand_in_path(const ac_ref *ref)
{
    (void)ref;
    return "stand-in";
}

static const ac__ref_ops stand_in_ops = {
    .kind = AC__REF_ACTOR, .destroy = stand_in_destroy, .path = stand_in_path};

static void test_injection_list_fifo(void **state)
{
    (void)state;
    ac__scheduler *s = ac__scheduler_create(NULL, 2, 16);
    assert_non_null(s);
    for (int i = 0; i < N_STAND_INS; i++) {
        g_stand_ins[i] = calloc(1, sizeof(ac__actor));
        assert_non_null(g_stand_ins[i]);
        atomic_init(&g_stand_ins[i]->ref.refs, 1); /* the queue's reference */
        g_stand_ins[i]->ref.ops = &stand_in_ops;
        /* `fresh` means nothing off a worker */
        ac__scheduler_push(s, g_stand_ins[i], i % 2 == 0);
    }
    g_released = 0;
    ac__scheduler_stop(s);
    assert_int_equal(g_released, N_STAND_INS);
    for (int i = 0; i < N_STAND_INS; i++) {
        assert_int_equal(g_order[i], i);
    }
    ac__scheduler_destroy(s);
    for (int i = 0; i < N_STAND_INS; i++) {
        free(g_stand_ins[i]);
    }
}

/* ---- runnext and the ring, on one worker ------------------------------ */

#define MAX_WOKEN 300

typedef struct order_data {
    atomic_int next;
    int ran[MAX_WOKEN]; /* ids in the order their turns ran */
    atomic_llong done;
    ac_ref *woken[MAX_WOKEN];
    int n;
} order_data;

static void woken_receive(ac_ctx *ctx, ac_msg *msg)
{
    order_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str)) { /* a ping: proves it is idle after */
        ac_reply(ctx, ac_msg_str_new("pong"));
        return;
    }
    d->ran[atomic_fetch_add(&d->next, 1)] = (int)ac_msg_int64(msg);
    atomic_fetch_add(&d->done, 1);
}

static const ac_actor_def woken_def = {.name = "Woken", .receive = woken_receive};

/* Wakes every actor in d->woken, in order, in one turn. */
static void waker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    order_data *d = ac_ctx_user_data(ctx);
    for (int i = 0; i < d->n; i++) {
        ac_tell(d->woken[i], ac_msg_int64_new(i), ac_self(ctx));
    }
}

static const ac_actor_def waker_def = {.name = "Waker", .receive = waker_receive};

static order_data *run_wake_up(ts_fixture *fx, int n)
{
    ac_system_options o = {.workers = 1};
    ac_system *sys = ts_fx_system(fx, "one_worker", &o);
    assert_non_null(sys);
    order_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->n = n;
    for (int i = 0; i < n; i++) {
        d->woken[i] = ts_spawn(sys, &woken_def, d, NULL);
        assert_non_null(d->woken[i]);
        ac_answer a; /* answered in its turn; the one worker ends that turn first */
        assert_status(ac_ask_wait(d->woken[i], ac_msg_str_new("ping"), 5000, &a), AC_OK);
        ac_answer_release(&a);
    }
    ac_ref *waker = ts_spawn(sys, &waker_def, d, "waker");
    assert_status(ac_tell(waker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->done, n, TS_WAIT_S), "every woken actor ran");
    ac_ref_release(waker);
    return d;
}

static void release_woken(order_data *d)
{
    for (int i = 0; i < d->n; i++) {
        ac_ref_release(d->woken[i]);
    }
}

static void test_runnext_then_ring_fifo(void **state)
{
    ts_fixture *fx = *state;
    enum { N = 200 }; /* the ring holds N - 1 */
    order_data *d = run_wake_up(fx, N);
    assert_int_equal(d->ran[0], N - 1); /* the last woken, from runnext */
    for (int i = 1; i < N; i++) {
        assert_int_equal(d->ran[i], i - 1); /* the displaced, in wake order */
    }
    release_woken(d);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_ring_overflow_goes_to_injection(void **state)
{
    ts_fixture *fx = *state;
    enum { N = MAX_WOKEN, RING = 256 };
    order_data *d = run_wake_up(fx, N);
    bool seen[MAX_WOKEN] = {false};
    int last_ring = -1, last_injected = RING - 1;
    for (int i = 0; i < N; i++) {
        int id = d->ran[i];
        assert_true(id >= 0 && id < N);
        assert_false(seen[id]);
        seen[id] = true;
        if (id == N - 1) {
            continue; /* runnext */
        }
        if (id < RING) {
            assert_int_equal(id, last_ring + 1);
            last_ring = id;
        } else {
            assert_int_equal(id, last_injected + 1);
            last_injected = id;
        }
    }
    assert_int_equal(last_ring, RING - 1);
    assert_int_equal(last_injected, N - 2);
    release_woken(d);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- an actor queued behind a long turn ------------------------------- */

/* How long the blocking turn waits for the queued actor before giving up.
 * It normally runs within a few ms (the idle worker naps in 1 ms slices
 * and takes from a worker stuck in one turn for 1 ms); only a stranded
 * actor waits this long. */
#define STRAND_GIVE_UP_S 5.0
#define STRAND_ROUNDS 5

typedef struct strand_data {
    ac_ref *queued;
    atomic_llong ran;     /* turns of the queued actor */
    atomic_llong rounds;  /* blocking turns done */
    atomic_llong in_time; /* of which saw the queued actor run */
} strand_data;

static void queued_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    strand_data *d = ac_ctx_user_data(ctx);
    atomic_fetch_add(&d->ran, 1);
}

static const ac_actor_def queued_def = {.name = "Queued", .receive = queued_receive};

/* Queues d->queued on this worker as code running on a worker outside any
 * turn does (a plain push to the ring, not runnext), then holds the worker
 * in this turn until the queued actor has run elsewhere, or gives up. */
static void blocker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    strand_data *d = ac_ctx_user_data(ctx);
    long long before = atomic_load(&d->ran);
    ac__actor *self = ac__tls_actor;
    ac__tls_actor = NULL; /* outside a turn: the push is not `fresh` */
    ac_status st = ac_tell(d->queued, ac_msg_int64_new(0), NULL);
    ac__tls_actor = self;
    if (st == AC_OK && ts_wait_ge(&d->ran, before + 1, STRAND_GIVE_UP_S))
        atomic_fetch_add(&d->in_time, 1);
    atomic_fetch_add(&d->rounds, 1);
}

static const ac_actor_def blocker_def = {.name = "Blocker", .receive = blocker_receive};

static void test_ring_not_stranded_behind_long_turn(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "two_workers", &o);
    assert_non_null(sys);
    strand_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->queued = ts_spawn(sys, &queued_def, d, "queued");
    ac_ref *blocker = ts_spawn(sys, &blocker_def, d, "blocker");
    assert_non_null(d->queued);
    assert_non_null(blocker);
    for (int i = 0; i < STRAND_ROUNDS; i++) {
        /* Idle long enough for both workers to sleep for good: the case
         * in which nothing else would come to look at the ring. */
        ts_sleep_ms(30);
        assert_status(ac_tell(blocker, ac_msg_int64_new(i), NULL), AC_OK);
        assert_eventually(ts_wait_eq(&d->rounds, i + 1, 2 * STRAND_GIVE_UP_S),
                          "the blocking turn ended");
    }
    assert_int_equal(atomic_load(&d->in_time), STRAND_ROUNDS);
    assert_true(ts_wait_eq(&d->ran, STRAND_ROUNDS, TS_WAIT_S));
    ac_ref_release(blocker);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- injected actors behind a spinner's long turn ---------------------- */

#define INJECT_ROUNDS 20

static void pinger_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_int64_new(1));
}

static const ac_actor_def pinger_def = {.name = "Pinger", .receive = pinger_receive};

/* Holds its worker until d->queued has run elsewhere, or gives up. */
static void holder_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    strand_data *d = ac_ctx_user_data(ctx);
    long long want = atomic_load(&d->rounds) + 1; /* the queued actor's run this round */
    if (ts_wait_ge(&d->ran, want, STRAND_GIVE_UP_S))
        atomic_fetch_add(&d->in_time, 1);
    atomic_fetch_add(&d->rounds, 1);
}

static const ac_actor_def holder_def = {.name = "Holder", .receive = holder_receive};

/* An answer to this thread leaves the worker that sent it spinning for
 * more work; two actors injected at once then see a spinner and wake no
 * one. The spinner takes the first, whose turn waits for the second: the
 * spinner must wake a sleeping worker for it when it stops spinning. */
static void test_injected_not_stranded_behind_spinner(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "spinner", &o);
    assert_non_null(sys);
    strand_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->queued = ts_spawn(sys, &queued_def, d, "queued");
    ac_ref *holder = ts_spawn(sys, &holder_def, d, "holder");
    ac_ref *pinger = ts_spawn(sys, &pinger_def, d, "pinger");
    assert_true(d->queued && holder && pinger);
    for (int i = 0; i < INJECT_ROUNDS; i++) {
        ts_sleep_ms(10); /* both workers asleep */
        ac_answer answer;
        assert_status(ac_ask_wait(pinger, ac_msg_int64_new(i), 1000, &answer), AC_OK);
        ac_answer_release(&answer);
        /* Its worker spins now: inject both while it does. */
        assert_status(ac_tell(holder, ac_msg_int64_new(i), NULL), AC_OK);
        assert_status(ac_tell(d->queued, ac_msg_int64_new(i), NULL), AC_OK);
        assert_eventually(ts_wait_eq(&d->rounds, i + 1, 2 * STRAND_GIVE_UP_S),
                          "the holding turn ended");
    }
    assert_int_equal(atomic_load(&d->in_time), INJECT_ROUNDS);
    ac_ref_release(holder);
    ac_ref_release(pinger);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_injection_list_fifo),
        TS_UNIT(test_runnext_then_ring_fifo),
        TS_UNIT(test_ring_overflow_goes_to_injection),
        TS_UNIT(test_ring_not_stranded_behind_long_turn),
        TS_UNIT(test_injected_not_stranded_behind_spinner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
