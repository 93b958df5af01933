/*
 * What an ask through each router kind answers, as router.h lists it:
 * the status, the error's kind and the answer's sender, for a reply, an
 * error reply, an empty pool, a routee that stopped and is not pruned yet,
 * a stopped router, a custom strategy that picks nobody, a routee that
 * fails, and the Broadcast wrapper sent to a scatter/gather router.
 * Timeouts run on the manual clock.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define ASK_MS 5000

/* "ping": replies with its name; "err": replies with a test.Nope error;
 * "fail": fails (ac_fail); anything else: no answer. */
static atomic_llong g_started;

static void answerer_pre_start(ac_ctx *ctx)
{
    (void)ctx;
    atomic_fetch_add(&g_started, 1);
}

static void answerer_receive(ac_ctx *ctx, ac_msg *msg)
{
    const char *cmd = ac_msg_str(msg);
    if (!cmd) {
        return;
    }
    if (strcmp(cmd, "ping") == 0) {
        ac_reply(ctx, ac_msg_str_new(ac_self_name(ctx)));
    } else if (strcmp(cmd, "err") == 0) {
        ac_reply(ctx, ac_msg_error_new(ac_error_new("test.Nope", "%s says no", ac_self_name(ctx))));
    } else if (strcmp(cmd, "fail") == 0) {
        ac_fail(ctx, ac_error_new("test.Boom", "failing on purpose"));
    }
}

static const ac_actor_def answerer = {
    .name = "Answerer", .pre_start = answerer_pre_start, .receive = answerer_receive};

/* A custom strategy: "block" waits on the gate and picks nobody, "none"
 * picks nobody, anything else goes to the first routee. */
static ts_gate g_gate;

static size_t first_or_none(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                            void *user, ac_ref **out)
{
    (void)n;
    (void)index;
    (void)user;
    const char *cmd = ac_msg_str(msg);
    if (cmd && strcmp(cmd, "block") == 0) {
        ts_gate_wait(&g_gate, TS_WAIT_S);
        return 0;
    }
    if (cmd && strcmp(cmd, "none") == 0) {
        return 0;
    }
    out[0] = routees[0];
    return 1;
}

enum { K_ROUND_ROBIN, K_RANDOM, K_BROADCAST, K_SMALLEST_MAILBOX, K_CUSTOM, K_SG, K_KINDS };

static ac_props *pool(int kind, int n)
{
    switch (kind) {
    case K_ROUND_ROBIN:
        return ac_router_round_robin(n, &answerer, NULL);
    case K_RANDOM:
        return ac_router_random(n, &answerer, NULL);
    case K_BROADCAST:
        return ac_router_broadcast(n, &answerer, NULL);
    case K_SMALLEST_MAILBOX:
        return ac_router_smallest_mailbox(n, &answerer, NULL);
    case K_CUSTOM:
        return ac_router_custom(n, &answerer, first_or_none, NULL, NULL);
    default:
        return ac_router_scatter_gather_first_completed(n, &answerer, NULL, NULL);
    }
}

static ac_ref *spawn_pool(ac_system *sys, int kind, int n, const char *name)
{
    ac_ref *r = ac_spawn(sys, pool(kind, n), name);
    assert_non_null(r);
    return r;
}

static ac_status ask(ac_ref *target, const char *cmd, ac_answer *a)
{
    return ac_ask_wait(target, ac_msg_str_new(cmd), ASK_MS, a);
}

/* The parent of `child` is `router`: its path is the router's plus one. */
static bool is_routee_of(const ac_ref *child, const ac_ref *router)
{
    size_t n = strlen(ac_ref_path(router));
    return child && strncmp(ac_ref_path(child), ac_ref_path(router), n) == 0 &&
           strncmp(ac_ref_path(child) + n, "/routee-", 8) == 0;
}

static size_t routees_now(ac_ref *router)
{
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), ASK_MS, &a), AC_OK);
    size_t n = ac_routees_count(a.reply);
    ac_answer_release(&a);
    return n;
}

/* Stop every routee and wait until the router has pruned them all. */
static void empty_pool(ac_ref *router)
{
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), ASK_MS, &a), AC_OK);
    for (size_t i = 0; i < ac_routees_count(a.reply); i++) {
        assert_status(ac_stop(ac_routees_at(a.reply, i)), AC_OK);
    }
    ac_answer_release(&a);
    double end = ts_now() + TS_WAIT_S;
    while (routees_now(router) != 0) {
        if (ts_now() > end) {
            fail_msg("%s kept its routees", ac_ref_path(router));
        }
        ts_sleep_ms(1);
    }
}

static void test_reply_and_error_reply(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "answers_reply", NULL);
    assert_non_null(sys);
    for (int k = 0; k < K_KINDS; k++) {
        char name[32];
        snprintf(name, sizeof name, "pool-%d", k);
        ac_ref *router = spawn_pool(sys, k, 3, name);
        ac_answer a;
        assert_status(ask(router, "ping", &a), AC_OK);
        assert_true(is_routee_of(a.sender, router));
        assert_string_equal(ac_msg_str(a.reply), ac_ref_name(a.sender));
        ac_answer_release(&a);
        ac_status st = ask(router, "err", &a);
        assert_status(st, AC_EFAILED);
        if (k == K_SG) { /* every routee failed: the router's aggregate */
            assert_true(ac_error_is(a.error, AC_AGGREGATE_ERROR));
            assert_ptr_equal(a.sender, router);
            assert_int_equal(ac_error_member_count(a.error), 3);
        } else { /* the routee's own error, from the routee */
            assert_true(ac_error_is(a.error, "test.Nope"));
            assert_true(is_routee_of(a.sender, router));
        }
        ac_answer_release(&a);
        ac_ref_release(router);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_no_routees_left(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "answers_empty", NULL);
    assert_non_null(sys);
    for (int k = 0; k < K_KINDS; k++) {
        char name[32];
        snprintf(name, sizeof name, "pool-%d", k);
        ac_ref *router = spawn_pool(sys, k, 2, name);
        empty_pool(router);
        ac_answer a;
        ac_status st = ask(router, "ping", &a);
        if (k == K_SG) {
            assert_status(st, AC_EFAILED);
            assert_true(ac_error_is(a.error, AC_AGGREGATE_ERROR));
            assert_non_null(strstr(ac_error_message(a.error), "has no routees left to scatter to"));
            assert_int_equal(ac_error_member_count(a.error), 0);
            assert_ptr_equal(a.sender, router);
            ac_answer_release(&a);
            /* The Broadcast wrapper bypasses the scatter. */
            st = ac_ask_wait(router, ac_broadcast_new(ac_msg_str_new("ping")), ASK_MS, &a);
        }
        assert_status(st, AC_EDEAD);
        assert_true(ac_error_is(a.error, AC_UNDELIVERABLE_ERROR));
        assert_non_null(strstr(ac_error_message(a.error), "the router has no routees left"));
        assert_non_null(strstr(ac_error_message(a.error), ac_ref_path(router)));
        assert_null(a.sender);
        ac_answer_release(&a);
        ac_ref_release(router);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* The router is held in a turn (its custom strategy waits on a gate)
 * while a request queues behind it and the routee it will pick stops: the
 * request is handled before the Terminated that would prune the routee. */
static void test_stopped_routee_not_yet_pruned(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "answers_unpruned", NULL);
    assert_non_null(sys);
    for (int broadcast = 0; broadcast <= 1; broadcast++) {
        ts_gate_init(&g_gate);
        ac_ref *router = spawn_pool(sys, K_CUSTOM, 3, broadcast ? "bc" : "one");
        ac_answer a;
        assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), ASK_MS, &a), AC_OK);
        ac_ref *first = ac_ref_retain(ac_routees_at(a.reply, 0));
        ac_answer_release(&a);

        assert_status(ac_tell(router, ac_msg_str_new("block"), NULL), AC_OK);
        assert_eventually(ts_gate_wait_for_waiter(&g_gate, TS_WAIT_S), "the router blocked");
        ac_msg *req = ac_msg_str_new("ping");
        ac_future *f = ac_ask(router, broadcast ? ac_broadcast_new(req) : req, ASK_MS);
        assert_non_null(f);
        assert_status(ac_stop(first), AC_OK);
        ac_status st;
        do { /* known stopped once an ask straight to it fails */
            st = ac_ask_wait(first, ac_msg_str_new("ping"), ASK_MS, &a);
            ac_answer_release(&a);
        } while (st == AC_OK);
        assert_status(st, AC_EDEAD);
        ts_gate_open(&g_gate);

        /* Picked, or told first of all by the broadcast, the stopped
         * routee fails the ask at once. */
        assert_status(ac_future_wait(f, -1, &a), AC_EDEAD);
        assert_true(ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR));
        assert_non_null(strstr(ac_error_message(a.error), ac_ref_path(first)));
        assert_null(a.sender);
        ac_answer_release(&a);
        ac_future_release(f);
        ac_ref_release(first);
        ac_ref_release(router);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_router_stopped(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "answers_stopped", NULL);
    assert_non_null(sys);
    for (int k = 0; k < K_KINDS; k++) {
        char name[32];
        snprintf(name, sizeof name, "pool-%d", k);
        ac_ref *router = spawn_pool(sys, k, 2, name);
        assert_status(ac_stop(router), AC_OK);
        ac_answer a;
        ac_status st;
        do { /* stopping is asynchronous: until it is done, asks are answered */
            st = ask(router, "ping", &a);
            ac_answer_release(&a);
        } while (st == AC_OK);
        assert_status(st, AC_EDEAD);
        assert_status(ask(router, "ping", &a), AC_EDEAD);
        assert_true(ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR));
        assert_non_null(strstr(ac_error_message(a.error), ac_ref_path(router)));
        assert_null(a.sender);
        ac_answer_release(&a);
        ac_ref_release(router);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Asks that nothing answers time out, on the manual clock. */
static void test_unanswered_times_out(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.manual_clock = true};
    ac_system *sys = ts_fx_system(fx, "answers_timeout", &o);
    assert_non_null(sys);
    atomic_store(&g_started, 0);
    ac_ref *router = spawn_pool(sys, K_CUSTOM, 2, "custom");
    assert_eventually(ts_wait_eq(&g_started, 2, TS_WAIT_S), "two routees started");

    /* A strategy that picks nobody: dropped, silently. */
    uint64_t dl = ac_dead_letter_count(sys);
    ac_future *none = ac_ask(router, ac_msg_str_new("none"), 100);
    /* A routee that fails instead of answering: restarted, not retried. */
    ac_future *fail = ac_ask(router, ac_msg_str_new("fail"), 100);
    assert_eventually(ts_wait_eq(&g_started, 3, TS_WAIT_S), "the routee restarted");
    assert_int_equal(routees_now(router), 2); /* a barrier: both were routed */
    assert_status(ac_clock_advance(sys, 100), AC_OK);
    ac_answer a;
    ac_future *both[] = {none, fail};
    for (int i = 0; i < 2; i++) {
        assert_status(ac_future_wait(both[i], -1, &a), AC_ETIMEOUT);
        assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
        assert_null(a.sender);
        ac_answer_release(&a);
        ac_future_release(both[i]);
    }
    assert_int_equal(ac_dead_letter_count(sys), dl);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* The Broadcast wrapper to a scatter/gather router: no scatter; every
 * routee gets it and the first answer settles the ask. */
static void test_broadcast_wrapper_to_scatter_gather(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "answers_wrap", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_pool(sys, K_SG, 3, "sg");
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_broadcast_new(ac_msg_str_new("err")), ASK_MS, &a),
                  AC_EFAILED);
    /* A scatter would have answered with the router's aggregate. */
    assert_true(ac_error_is(a.error, "test.Nope"));
    assert_true(is_routee_of(a.sender, router));
    ac_answer_release(&a);
    assert_status(ac_ask_wait(router, ac_broadcast_new(ac_msg_str_new("ping")), ASK_MS, &a),
                  AC_OK);
    assert_true(is_routee_of(a.sender, router));
    ac_answer_release(&a);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_reply_and_error_reply),
        TS_UNIT(test_no_routees_left),
        TS_UNIT(test_stopped_routee_not_yet_pruned),
        TS_UNIT(test_router_stopped),
        TS_UNIT(test_unanswered_times_out),
        TS_UNIT(test_broadcast_wrapper_to_scatter_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
