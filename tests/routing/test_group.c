/*
 * Group routers over plain actors the test spawns: each one-shot strategy
 * routes to the refs it was given, in the order given (not by name);
 * round-robin exactly, random evenly, broadcast to all; a custom strategy
 * sees the group's set. The routees are not the router's children, a
 * routee that stops is pruned, and stopping the router leaves them
 * running.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

/* Chi-square with 3 degrees of freedom exceeds 30.7 with probability
 * 1e-6: a fair router fails this once in a million runs. */
#define CHI2_BOUND_DF3 30.7

static void assert_no_bad(rt_pool *p)
{
    char what[160];
    if (rt_bad(p, what, sizeof what) != 0) {
        fail_msg("routees saw something wrong: %s", what);
    }
}

/* routee-3, routee-1, routee-4, routee-2: an order that is not the names'. */
static void shuffled(ac_ref **r, ac_ref **order)
{
    order[0] = r[2];
    order[1] = r[0];
    order[2] = r[3];
    order[3] = r[1];
}

static void assert_routees(ac_ref *router, ac_ref *const *want, size_t n)
{
    ac_ref *got[16];
    long k = rt_routees(router, got, 16);
    assert_int_equal(k, (long)n);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("routee %zu is %s, expected %s", i, ac_ref_path(got[i]),
                     ac_ref_path(want[i]));
        }
    }
}

/* 400 messages over a group of 4 given as routee-3, -1, -4, -2: 100 each,
 * the first routee given gets 0, 4, 8, ... and so on in the given order. */
static void test_round_robin_in_given_order(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_rr", NULL);
    assert_non_null(sys);
    ac_ref *r[4], *order[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    shuffled(r, order);
    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(order, 4), "group");
    assert_non_null(router);
    assert_routees(router, order, 4);

    assert_true(rt_tell_ints(router, 0, 400));
    assert_eventually(rt_wait_total(p, 400, TS_WAIT_S), "400 messages handled");
    const int ids[4] = {3, 1, 4, 2};
    for (int pos = 0; pos < 4; pos++) {
        assert_int_equal(rt_got(p, ids[pos]), 100);
        for (long long j = 0; j < 100; j++) {
            int64_t want = pos + 4 * j;
            if (rt_val(p, ids[pos], j) != want) {
                fail_msg("routee-%d's message %lld is %lld, expected %lld", ids[pos], j,
                         (long long)rt_val(p, ids[pos], j), (long long)want);
            }
        }
    }
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);

    /* The routees are the test's actors, top-level, not children of the
     * router: asked directly they answer as themselves. */
    for (int k = 0; k < 4; k++) {
        char want[128];
        snprintf(want, sizeof want, "actorc://group_rr/user/routee-%d", k + 1);
        assert_string_equal(ac_ref_path(r[k]), want);
    }
    ac_ref_release(router);
    rt_release_all(r, 4);
}

static void test_random_spread(void **state)
{
    enum { N_MSGS = 40000 };
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_random", NULL);
    assert_non_null(sys);
    ac_ref *r[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    ac_ref *router = rt_spawn(sys, ac_router_group_random(r, 4), "group");
    assert_non_null(router);

    assert_true(rt_tell_ints(router, 0, N_MSGS));
    assert_eventually(rt_wait_total(p, N_MSGS, 30.0), "every message handled");
    double expected = N_MSGS / 4.0, chi2 = 0.0;
    for (int k = 1; k <= 4; k++) {
        double d = (double)rt_got(p, k) - expected;
        chi2 += d * d / expected;
    }
    if (chi2 > CHI2_BOUND_DF3) {
        fail_msg("chi-square %.2f over 4 routees exceeds %.1f (%lld %lld %lld %lld)", chi2,
                 CHI2_BOUND_DF3, rt_got(p, 1), rt_got(p, 2), rt_got(p, 3), rt_got(p, 4));
    }
    assert_int_equal(rt_total(p), N_MSGS);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);
    ac_ref_release(router);
    rt_release_all(r, 4);
}

/* Every message reaches every routee; an ask is answered by one of them. */
static void test_broadcast_reaches_all(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_bcast", NULL);
    assert_non_null(sys);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    ac_ref *router = rt_spawn(sys, ac_router_group_broadcast(r, 3), "group");
    assert_non_null(router);

    assert_true(rt_tell_ints(router, 0, 50));
    assert_eventually(rt_wait_total(p, 150, TS_WAIT_S), "150 deliveries");
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(rt_got(p, k), 50);
        for (long long j = 0; j < 50; j++) {
            assert_int_equal(rt_val(p, k, j), j);
        }
    }
    ac_status st;
    ac_ref *who = rt_ask_routee(router, &st);
    assert_status(st, AC_OK);
    assert_true(who == r[0] || who == r[1] || who == r[2]);
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_pings(p, k, 1, TS_WAIT_S), "every routee pinged");
    }
    ac_ref_release(who);
    assert_no_bad(p);
    ac_ref_release(router);
    rt_release_all(r, 3);
}

typedef struct seen_set {
    atomic_llong calls;
    atomic_llong n;        /* n of the last call */
    _Atomic(ac_ref *) first, last; /* routees[0], routees[n-1] of the last call */
} seen_set;

/* Picks the last routee of the set, and notes what it was shown. */
static size_t pick_last(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                        void *user, ac_ref **out)
{
    (void)index;
    (void)msg;
    seen_set *s = user;
    atomic_store(&s->n, (long long)n);
    atomic_store(&s->first, n ? routees[0] : NULL);
    atomic_store(&s->last, n ? routees[n - 1] : NULL);
    atomic_fetch_add(&s->calls, 1);
    if (n == 0) {
        return 0;
    }
    out[0] = routees[n - 1];
    return 1;
}

static void test_custom_sees_the_group(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    static seen_set seen; /* the fixture's data block holds the pool */
    seen_set *s = &seen;
    memset(s, 0, sizeof *s);
    ac_system *sys = ts_fx_system(fx, "group_custom", NULL);
    assert_non_null(sys);
    ac_ref *r[4], *order[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    shuffled(r, order);
    ac_ref *router = rt_spawn(sys, ac_router_group_custom(order, 4, pick_last, s), "group");
    assert_non_null(router);

    ac_status st;
    ac_ref *who = rt_ask_routee(router, &st);
    assert_status(st, AC_OK);
    assert_ptr_equal(who, order[3]); /* routee-2, the last given */
    ac_ref_release(who);
    assert_int_equal(atomic_load(&s->calls), 1);
    assert_int_equal(atomic_load(&s->n), 4);
    assert_ptr_equal(atomic_load(&s->first), order[0]);
    assert_ptr_equal(atomic_load(&s->last), order[3]);

    /* Once routee-2 is pruned, the strategy is shown the three left. */
    assert_status(ac_stop(r[1]), AC_OK);
    ac_ref *left[3] = {order[0], order[1], order[2]};
    assert_eventually(rt_wait_routees(router, left, 3, TS_WAIT_S), "routee-2 pruned");
    who = rt_ask_routee(router, &st);
    assert_status(st, AC_OK);
    assert_ptr_equal(who, order[2]);
    ac_ref_release(who);
    assert_int_equal(atomic_load(&s->n), 3);
    ac_ref_release(router);
    rt_release_all(r, 4);
}

/* A routee that stops is pruned: the rotation goes on over the others,
 * in the given order, and nothing reaches the stopped one. */
static void test_stopped_routee_pruned(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_prune", NULL);
    assert_non_null(sys);
    ac_ref *r[4], *order[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    shuffled(r, order);
    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(order, 4), "group");
    assert_non_null(router);

    assert_status(ac_stop(r[3]), AC_OK); /* routee-4, third in the group */
    assert_eventually(rt_wait_stopped(p, 4, 1, TS_WAIT_S), "routee-4 stopped");
    ac_ref *left[3] = {order[0], order[1], order[3]};
    assert_eventually(rt_wait_routees(router, left, 3, TS_WAIT_S), "routee-4 pruned");

    uint64_t dl = ac_dead_letter_count(sys);
    assert_true(rt_tell_ints(router, 0, 300));
    assert_eventually(rt_wait_total(p, 300, TS_WAIT_S), "300 handled");
    const int ids[3] = {3, 1, 2};
    long long before[3] = {0, 0, 0};
    char why[160];
    if (!rt_check_round_robin(p, ids, 3, before, 100, why, sizeof why)) {
        fail_msg("after pruning routee-4: %s", why);
    }
    assert_int_equal(rt_got(p, 4), 0);
    assert_int_equal(ac_dead_letter_count(sys), dl);
    assert_no_bad(p);
    ac_ref_release(router);
    rt_release_all(r, 4);
}

/* Stopping the router leaves its routees running: they were never its
 * children. Each still answers when asked directly. */
static void test_router_stop_leaves_routees(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_stop", NULL);
    assert_non_null(sys);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    static seen_set seen;
    ac_props *kinds[] = {
        ac_router_group_round_robin(r, 3),      ac_router_group_random(r, 3),
        ac_router_group_broadcast(r, 3),        ac_router_group_smallest_mailbox(r, 3),
        ac_router_group_custom(r, 3, pick_last, &seen),
        ac_router_group_scatter_gather_first_completed(r, 3, NULL),
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "group-%zu", i);
        ac_ref *router = rt_spawn(sys, kinds[i], name);
        assert_non_null(router);
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        ac_ref_release(who);
        assert_status(ac_stop(router), AC_OK);
        ac_answer a;
        double end = ts_now() + TS_WAIT_S;
        while ((st = ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a)) != AC_EDEAD) {
            ac_answer_release(&a);
            if (ts_now() > end) {
                fail_msg("%s did not stop", name);
            }
            ts_sleep_ms(1);
        }
        assert_true(ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR));
        ac_answer_release(&a);
        ac_ref_release(router);
    }
    for (int k = 0; k < 3; k++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(r[k], &st);
        assert_status(st, AC_OK);
        assert_ptr_equal(who, r[k]);
        ac_ref_release(who);
        assert_int_equal(rt_stopped(p, k + 1), 0);
        assert_int_equal(rt_started(p, k + 1), 1);
    }
    assert_no_bad(p);
    rt_release_all(r, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_round_robin_in_given_order),
        TS_UNIT(test_random_spread),
        TS_UNIT(test_broadcast_reaches_all),
        TS_UNIT(test_custom_sees_the_group),
        TS_UNIT(test_stopped_routee_pruned),
        TS_UNIT(test_router_stop_leaves_routees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
