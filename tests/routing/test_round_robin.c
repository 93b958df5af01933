/*
 * Round-robin pools: exact distribution in pool order; a stopped routee is
 * pruned and the rotation goes on over the others; with every routee
 * stopped, messages go to dead letters and one warning is logged.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

static ac_ref *spawn_rr(ac_system *sys, rt_pool *p, int n, const char *name)
{
    ac_routee_options ro = {.user_data = p};
    ac_ref *router = rt_spawn(sys, ac_router_round_robin(n, &rt_routee_def, &ro), name);
    assert_non_null(router);
    return router;
}

static void assert_no_bad(rt_pool *p)
{
    char what[160];
    if (rt_bad(p, what, sizeof what) != 0) {
        fail_msg("routees saw something wrong: %s", what);
    }
}

/* 4 routees, 400 messages from one sender: 100 each, routee-k gets k-1,
 * k+3, k+7, ... in order. */
static void test_exact_distribution(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "rr_exact", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_rr(sys, p, 4, "pool");

    assert_true(rt_tell_ints(router, 0, 400));
    assert_eventually(rt_wait_total(p, 400, TS_WAIT_S), "400 messages handled");

    for (int k = 1; k <= 4; k++) {
        assert_int_equal(rt_got(p, k), 100);
        assert_int_equal(rt_started(p, k), 1);
        for (long long j = 0; j < 100; j++) {
            int64_t want = (k - 1) + 4 * j;
            if (rt_val(p, k, j) != want) {
                fail_msg("routee-%d's message %lld is %lld, expected %lld", k, j,
                         (long long)rt_val(p, k, j), (long long)want);
            }
        }
    }
    assert_int_equal(rt_got(p, 5), 0);
    assert_int_equal(rt_total(p), 400);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);

    /* Another batch continues the rotation where it was. */
    int ids[4] = {1, 2, 3, 4};
    long long before[4] = {100, 100, 100, 100};
    char why[160];
    assert_true(rt_tell_ints(router, 0, 40));
    assert_eventually(rt_wait_total(p, 440, TS_WAIT_S), "40 more handled");
    if (!rt_check_round_robin(p, ids, 4, before, 10, why, sizeof why)) {
        fail_msg("second batch: %s", why);
    }
    assert_int_equal(rt_val(p, 1, 100), 0);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
    for (int k = 1; k <= 4; k++) {
        assert_int_equal(rt_stopped(p, k), 1);
    }
}

/* Stop routee-2: later messages never reach it, and round-robin goes on
 * over routee-1, routee-3, routee-4. */
static void test_pruned_routee(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "rr_prune", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_rr(sys, p, 4, "pool");

    /* The first four asks go to routee-1..4 in turn. */
    ac_ref *second = NULL;
    for (int k = 1; k <= 4; k++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_non_null(who);
        assert_int_equal(rt_routee_number(ac_ref_name(who)), k);
        if (k == 2) {
            second = who;
        } else {
            ac_ref_release(who);
        }
    }
    assert_status(ac_stop(second), AC_OK);
    assert_eventually(rt_wait_stopped(p, 2, 1, TS_WAIT_S), "routee-2 stopped");
    /* Once four asks in a row are answered, routee-2 is out of the pool. */
    int asks = rt_ask_until_run(router, 4, 200);
    assert_true(asks > 0);

    uint64_t dl = ac_dead_letter_count(sys);
    long long got2 = rt_got(p, 2);
    int ids[3] = {1, 3, 4};
    long long before[3] = {rt_got(p, 1), rt_got(p, 3), rt_got(p, 4)};
    assert_true(rt_tell_ints(router, 0, 300));
    assert_eventually(rt_wait_total(p, 300, TS_WAIT_S), "300 messages handled");
    char why[160];
    if (!rt_check_round_robin(p, ids, 3, before, 100, why, sizeof why)) {
        fail_msg("after pruning routee-2: %s", why);
    }
    assert_int_equal(rt_got(p, 2), got2);
    assert_int_equal(rt_got(p, 2), 0);
    assert_int_equal(ac_dead_letter_count(sys), dl);
    assert_int_equal(rt_started(p, 2), 1);
    assert_no_bad(p);

    ac_ref_release(second);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Every routee stopped: messages go to dead letters, one each, and the
 * router warns exactly once. */
static void test_all_stopped(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "rr_empty", &o);
    assert_non_null(sys);
    ac_ref *router = spawn_rr(sys, p, 3, "pool");
    char router_path[256];
    snprintf(router_path, sizeof router_path, "%s", ac_ref_path(router));

    ac_ref *routees[3];
    for (int k = 1; k <= 3; k++) {
        ac_status st;
        routees[k - 1] = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_int_equal(rt_routee_number(ac_ref_name(routees[k - 1])), k);
    }
    assert_int_equal(rt_log_count_at(cap, AC_LOG_WARN, router_path), 0);
    for (int k = 0; k < 3; k++) {
        assert_status(ac_stop(routees[k]), AC_OK);
    }
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_stopped(p, k, 1, TS_WAIT_S), "routee stopped");
    }

    /* Probe until the router says its pool is empty. Each ask fails (it
     * reaches a stopped routee or dead letters); none hangs. */
    double deadline = ts_now() + TS_WAIT_S;
    while (rt_log_count_at(cap, AC_LOG_WARN, router_path) == 0 && ts_now() < deadline) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        if (who != NULL) {
            fail_msg("a stopped routee answered: %s", ac_ref_path(who));
        }
        assert_true(st == AC_EDEAD || st == AC_ETIMEOUT);
    }
    if (rt_log_count_at(cap, AC_LOG_WARN, router_path) != 1) {
        ts_log_dump(cap, "captured");
        fail_msg("expected one warning from %s", router_path);
    }

    uint64_t dl = ac_dead_letter_count(sys);
    assert_true(rt_tell_ints(router, 0, 50));
    assert_eventually(ts_wait_dead_letters(sys, dl + 50, TS_WAIT_S), "50 dead letters");
    /* An ask is a barrier: the router handled the 50 before it. It fails
     * at once, saying why: the router is alive but has no routees. */
    ac_answer a;
    ac_status st = ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a);
    assert_status(st, AC_EDEAD);
    assert_true(ac_error_is(a.error, AC_UNDELIVERABLE_ERROR));
    assert_non_null(strstr(ac_error_message(a.error), "no routees left"));
    assert_non_null(strstr(ac_error_message(a.error), router_path));
    ac_answer_release(&a);
    assert_int_equal(ac_dead_letter_count(sys), dl + 51);
    assert_int_equal(rt_total(p), 0);
    if (rt_log_count_at(cap, AC_LOG_WARN, router_path) != 1) {
        ts_log_dump(cap, "captured");
        fail_msg("expected still one warning from %s", router_path);
    }
    assert_no_bad(p);

    for (int k = 0; k < 3; k++) {
        ac_ref_release(routees[k]);
    }
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_exact_distribution),
        TS_UNIT(test_pruned_routee),
        TS_UNIT(test_all_stopped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
