/*
 * GetRoutees (ac_router_get_routees_msg): every router kind answers it
 * itself, as a Routees message sent by the router, listing its live
 * routees in pool order; through ac_ask_wait, ac_ask and ac_ask_in. It
 * never reaches a routee or a custom strategy, and the Broadcast wrapper
 * refuses it. The list follows the pool: a stopped routee drops out once
 * pruned, a routee restarted in place keeps its ref, a restarted router
 * lists its new routees. Bad arguments to the accessors fail with a
 * reason.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

static void assert_no_bad(rt_pool *p)
{
    char what[160];
    if (rt_bad(p, what, sizeof what) != 0) {
        fail_msg("routees saw something wrong: %s", what);
    }
}

/* Several pool records in the fixture's one data block. */
#define N_POOLS 6

typedef struct pools {
    rt_pool p[N_POOLS];
} pools;

static void pools_fini(void *arg)
{
    pools *ps = arg;
    for (int i = 0; i < N_POOLS; i++) {
        rt_pool_fini(&ps->p[i]);
    }
}

static rt_pool *fx_pools(ts_fixture *fx)
{
    pools *ps = ts_fx_data(fx, sizeof *ps, pools_fini);
    for (int i = 0; i < N_POOLS; i++) {
        rt_pool_init(&ps->p[i]);
    }
    return ps->p;
}

/* A custom strategy that counts what it is shown and picks routee 0. */
static atomic_llong custom_calls;
static atomic_llong custom_saw_get_routees;

static size_t pick_first(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                         void *user, ac_ref **out)
{
    (void)n;
    (void)index;
    (void)user;
    atomic_fetch_add(&custom_calls, 1);
    if (ac_msg_is(msg, &ac_msg_type_get_routees)) {
        atomic_fetch_add(&custom_saw_get_routees, 1);
    }
    out[0] = routees[0];
    return 1;
}

typedef enum kind {
    K_ROUND_ROBIN,
    K_RANDOM,
    K_BROADCAST,
    K_SMALLEST_MAILBOX,
    K_CUSTOM,
    K_SCATTER_GATHER,
    K_KINDS
} kind;

static const char *const kind_names[K_KINDS] = {"round_robin",      "random", "broadcast",
                                                "smallest_mailbox", "custom", "scatter_gather"};

static ac_props *pool_props(kind k, int n, rt_pool *p, const ac_supervisor_strategy *sup)
{
    ac_routee_options ro = {.user_data = p, .supervisor = sup};
    switch (k) {
    case K_ROUND_ROBIN:
        return ac_router_round_robin(n, &rt_routee_def, &ro);
    case K_RANDOM:
        return ac_router_random(n, &rt_routee_def, &ro);
    case K_BROADCAST:
        return ac_router_broadcast(n, &rt_routee_def, &ro);
    case K_SMALLEST_MAILBOX:
        return ac_router_smallest_mailbox(n, &rt_routee_def, &ro);
    case K_CUSTOM:
        return ac_router_custom(n, &rt_routee_def, pick_first, NULL, &ro);
    default:
        return ac_router_scatter_gather_first_completed(n, &rt_routee_def, NULL, &ro);
    }
}

/* Ask `router` for its routees: the Routees message (the caller's), after
 * checking that the router itself sent it. */
static ac_msg *get_routees(ac_ref *router)
{
    ac_answer a;
    ac_status st = ac_ask_wait(router, ac_router_get_routees_msg(), RT_ASK_MS, &a);
    assert_status(st, AC_OK);
    assert_true(ac_msg_is(a.reply, &ac_msg_type_routees));
    assert_ptr_equal(a.sender, router);
    ac_msg *m = ac_msg_retain(a.reply);
    ac_answer_release(&a);
    return m;
}

/* The message lists routee-<ids[0]>, routee-<ids[1]>, ... under `router`. */
static void assert_lists(const ac_msg *m, ac_ref *router, const int *ids, size_t n)
{
    assert_int_equal(ac_routees_count(m), n);
    for (size_t i = 0; i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "%s/routee-%d", ac_ref_path(router), ids[i]);
        assert_string_equal(ac_ref_path(ac_routees_at(m, i)), want);
    }
}

/* Ask routee `r` directly for a ping and check that it answers itself. */
static void ping_directly(ac_ref *r)
{
    ac_answer a;
    assert_status(ac_ask_wait(r, rt_ping(), RT_ASK_MS, &a), AC_OK);
    assert_string_equal(ac_msg_str(a.reply), ac_ref_path(r));
    ac_answer_release(&a);
}

static void check_kind(ts_fixture *fx, rt_pool *p, kind k)
{
    ac_system *sys = fx->sys;
    ac_ref *router = rt_spawn(sys, pool_props(k, 3, p, NULL), kind_names[k]);
    assert_non_null(router);
    static const int all[] = {1, 2, 3};
    ac_msg *m = get_routees(router);
    assert_lists(m, router, all, 3);

    /* The same through a future. */
    ac_future *f = ac_ask(router, ac_router_get_routees_msg(), RT_ASK_MS);
    assert_non_null(f);
    ac_answer a;
    assert_status(ac_future_wait(f, -1, &a), AC_OK);
    assert_ptr_equal(a.sender, router);
    assert_lists(a.reply, router, all, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_ptr_equal(ac_routees_at(a.reply, i), ac_routees_at(m, i));
    }
    ac_answer_release(&a);
    ac_future_release(f);

    /* Had the router passed GetRoutees on, the routee would have it queued
     * before this ping (the router sends first, then answers us), and
     * would count it as bad. */
    for (size_t i = 0; i < 3; i++) {
        ping_directly(ac_routees_at(m, i));
    }
    for (int r = 1; r <= 3; r++) {
        assert_int_equal(rt_pings(p, r), 1);
    }
    assert_no_bad(p);
    ac_msg_release(m);
    assert_status(ac_stop(router), AC_OK);
    ac_ref_release(router);
}

static void test_every_kind_answers(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *ps = fx_pools(fx);
    assert_non_null(ts_fx_system(fx, "routees_kinds", NULL));
    for (kind k = 0; k < K_KINDS; k++) {
        check_kind(fx, &ps[k], k);
    }
    assert_int_equal(atomic_load(&custom_saw_get_routees), 0);
    /* The custom strategy saw nothing at all: the pings went straight. */
    assert_int_equal(atomic_load(&custom_calls), 0);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- from inside an actor --------------------------------------------- */

typedef struct asker_state {
    ac_ref *go_sender;
} asker_state;

static void on_routees(ac_ctx *ctx, const ac_answer *a, void *user)
{
    ac_ref *router = user;
    asker_state *st = ac_ctx_state(ctx);
    bool ok = a->reply && a->sender == router && ac_routees_count(a->reply) == 2;
    ac_tell(st->go_sender, ac_msg_printf("%s %zu %s", ok ? "ok" : "bad",
                                         ac_routees_count(a->reply),
                                         ac_ref_name(ac_routees_at(a->reply, 1))),
            ac_self(ctx));
    ac_ref_release(st->go_sender);
    st->go_sender = NULL;
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    asker_state *st = ac_ctx_state(ctx);
    st->go_sender = ac_ref_retain(ac_sender(ctx));
    ac_ref *router = ac_ctx_user_data(ctx);
    if (ac_ask_in(ctx, router, ac_router_get_routees_msg(), RT_ASK_MS, on_routees, router,
                  NULL) != AC_OK) {
        ac_reply(ctx, ac_msg_printf("ac_ask_in failed: %s", ac_last_error()));
        ac_ref_release(st->go_sender);
        st->go_sender = NULL;
    }
}

static const ac_actor_def asker_def = {
    .name = "Asker", .state_size = sizeof(asker_state), .receive = asker_receive};

static void test_ask_in(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "routees_in", NULL);
    assert_non_null(sys);
    ac_ref *router = rt_spawn(sys, pool_props(K_SCATTER_GATHER, 2, p, NULL), "sg");
    ac_ref *asker = ts_spawn(sys, &asker_def, router, "asker");
    assert_non_null(asker);
    ac_answer a;
    assert_status(ac_ask_wait(asker, ac_msg_str_new("go"), RT_ASK_MS, &a), AC_OK);
    assert_string_equal(ac_msg_str(a.reply), "ok 2 routee-2");
    ac_answer_release(&a);
    assert_no_bad(p);
    ac_ref_release(asker);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- the list follows the pool ---------------------------------------- */

/* Ask until the router lists `n` routees (it learns of a stop by a
 * message of its own): that answer, or NULL after the bound. */
static ac_msg *wait_count(ac_ref *router, size_t n)
{
    double end = ts_now() + TS_WAIT_S;
    for (;;) {
        ac_msg *m = get_routees(router);
        if (ac_routees_count(m) == n) {
            return m;
        }
        ac_msg_release(m);
        if (ts_now() > end) {
            return NULL;
        }
        ts_sleep_ms(1);
    }
}

static void check_pruning(ts_fixture *fx, rt_pool *p, kind k)
{
    ac_ref *router = rt_spawn(fx->sys, pool_props(k, 3, p, NULL), kind_names[k]);
    assert_non_null(router);
    ac_msg *before = get_routees(router);
    assert_status(ac_stop(ac_routees_at(before, 1)), AC_OK);
    ac_msg *after = wait_count(router, 2);
    assert_non_null(after);
    static const int left[] = {1, 3};
    assert_lists(after, router, left, 2);
    assert_ptr_equal(ac_routees_at(after, 0), ac_routees_at(before, 0));
    assert_ptr_equal(ac_routees_at(after, 1), ac_routees_at(before, 2));
    /* A ref held in an answer outlives its routee: still its path. */
    assert_string_equal(ac_ref_name(ac_routees_at(before, 1)), "routee-2");

    assert_status(ac_stop(ac_routees_at(after, 0)), AC_OK);
    assert_status(ac_stop(ac_routees_at(after, 1)), AC_OK);
    ac_msg *none = wait_count(router, 0);
    assert_non_null(none); /* an empty pool still answers: AC_OK, none */
    assert_int_equal(ac_routees_count(none), 0);
    assert_null(ac_routees_at(none, 0));
    assert_last_error(AC_EINVAL);
    ac_msg_release(none);
    ac_msg_release(after);
    ac_msg_release(before);
    assert_status(ac_stop(router), AC_OK);
    ac_ref_release(router);
}

static void test_pruned_routee_disappears(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *ps = fx_pools(fx);
    assert_non_null(ts_fx_system(fx, "routees_pruned", NULL));
    check_pruning(fx, &ps[0], K_ROUND_ROBIN);
    check_pruning(fx, &ps[1], K_SCATTER_GATHER);
    assert_no_bad(&ps[0]);
    assert_no_bad(&ps[1]);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_restarts(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = fx_pools(fx), *q = p + 1;
    ac_system *sys = ts_fx_system(fx, "routees_restart", NULL);
    assert_non_null(sys);

    /* A routee restarted by its supervisor keeps its place and its ref. */
    ac_ref *kept = rt_spawn(sys, pool_props(K_ROUND_ROBIN, 2, p, NULL), "kept");
    ac_msg *before = get_routees(kept);
    assert_status(ac_tell(ac_routees_at(before, 0), rt_fail(), NULL), AC_OK);
    assert_eventually(rt_wait_started(p, 1, 2, TS_WAIT_S), "routee-1 restarted");
    ac_msg *after = get_routees(kept);
    assert_int_equal(ac_routees_count(after), 2);
    assert_ptr_equal(ac_routees_at(after, 0), ac_routees_at(before, 0));
    assert_ptr_equal(ac_routees_at(after, 1), ac_routees_at(before, 1));
    ac_msg_release(after);
    ac_msg_release(before);
    assert_status(ac_stop(kept), AC_OK);
    assert_eventually(rt_wait_stopped(p, 2, 1, TS_WAIT_S), "the first pool stopped");
    ac_ref_release(kept);

    /* A router restarted (a routee's failure escalated) lists its new
     * routees: the same paths, other refs. */
    ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    ac_ref *router = rt_spawn(sys, pool_props(K_SCATTER_GATHER, 3, q, &escalate), "fresh");
    before = get_routees(router);
    assert_status(ac_tell(ac_routees_at(before, 0), rt_fail(), NULL), AC_OK);
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_started(q, k, 2, TS_WAIT_S), "a fresh routee");
    }
    /* Started anew means the router's pre_start has run again: an ask now
     * is handled after it. */
    after = get_routees(router);
    static const int all[] = {1, 2, 3};
    assert_lists(after, router, all, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_true(ac_routees_at(after, i) != ac_routees_at(before, i));
        ping_directly(ac_routees_at(after, i));
    }
    ac_msg_release(after);
    ac_msg_release(before);
    assert_no_bad(p);
    assert_no_bad(q);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- refusals and bad input ------------------------------------------- */

static void test_broadcast_refuses_it(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "routees_wrap", NULL);
    assert_non_null(sys);
    ac_clear_error();
    assert_null(ac_broadcast_new(ac_router_get_routees_msg()));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "GetRoutees"));

    /* The request is shared and static: releasing it is harmless, and it
     * still works afterwards. */
    ac_msg_release(ac_router_get_routees_msg());
    ac_ref *router = rt_spawn(sys, pool_props(K_BROADCAST, 2, p, NULL), "bc");
    ac_msg *m = get_routees(router);
    assert_int_equal(ac_routees_count(m), 2);
    ac_msg_release(m);

    /* Told without a sender, the answer has nowhere to go but dead
     * letters; the ask sent after it from this thread is a barrier. */
    uint64_t dl = ac_dead_letter_count(sys);
    assert_status(ac_tell(router, ac_router_get_routees_msg(), NULL), AC_OK);
    m = get_routees(router);
    ac_msg_release(m);
    assert_int_equal(ac_dead_letter_count(sys), dl + 1);
    assert_no_bad(p);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_accessors_bad_input(void **state)
{
    (void)state;
    ac_clear_error();
    assert_int_equal(ac_routees_count(NULL), 0);
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_null(ac_routees_at(NULL, 0));
    assert_last_error(AC_EINVAL);

    ac_msg *s = ac_msg_str_new("not routees");
    ac_clear_error();
    assert_int_equal(ac_routees_count(s), 0);
    assert_last_error(AC_ETYPE);
    assert_non_null(strstr(ac_last_error(), "actorc.String"));
    ac_clear_error();
    assert_null(ac_routees_at(s, 0));
    assert_last_error(AC_ETYPE);
    ac_msg_release(s);

    ac_clear_error();
    assert_int_equal(ac_routees_count(ac_router_get_routees_msg()), 0);
    assert_last_error(AC_ETYPE);
    assert_string_equal(ac_msg_type_name(ac_router_get_routees_msg()), "actorc.GetRoutees");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_every_kind_answers),  TS_UNIT(test_ask_in),
        TS_UNIT(test_pruned_routee_disappears), TS_UNIT(test_restarts),
        TS_UNIT(test_broadcast_refuses_it),     TS_UNIT(test_accessors_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
