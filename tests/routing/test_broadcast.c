/*
 * Broadcast: the broadcast router sends every message to every routee; the
 * Broadcast wrapper (ac_broadcast_new) makes any pool send its inner
 * message once to every routee, keeping the original sender.
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

/* The number of times routee-k recorded value v. */
static int times_seen(rt_pool *p, int k, int64_t v)
{
    int n = 0;
    for (long long j = 0; j < rt_got(p, k); j++) {
        n += rt_val(p, k, j) == v;
    }
    return n;
}

/* Wait until every routee of 1..n answered `pings` pings in all: a
 * barrier, as each routee handles what the router sent it in order. */
static void await_pings(rt_pool *p, int n, long long pings)
{
    for (int k = 1; k <= n; k++) {
        assert_eventually(rt_wait_pings(p, k, pings, TS_WAIT_S), "a ping at every routee");
    }
}

static void test_broadcast_router(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "bcast", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_ref *router = rt_spawn(sys, ac_router_broadcast(4, &rt_routee_def, &ro), "pool");
    assert_non_null(router);

    assert_true(rt_tell_ints(router, 0, 50));
    assert_eventually(rt_wait_total(p, 200, TS_WAIT_S), "4 x 50 messages handled");
    for (int k = 1; k <= 4; k++) {
        assert_int_equal(rt_got(p, k), 50);
        for (long long j = 0; j < 50; j++) {
            assert_int_equal(rt_val(p, k, j), j);
        }
    }

    /* The wrapper through a broadcast router: still once each. */
    assert_status(ac_tell(router, ac_broadcast_new(ac_msg_int64_new(1000)), NULL), AC_OK);

    /* An ask through it is answered by one routee; the other replies reach
     * a settled ask and vanish without dead letters. */
    ac_status st;
    ac_ref *who = rt_ask_routee(router, &st);
    assert_status(st, AC_OK);
    assert_true(rt_routee_number(ac_ref_name(who)) >= 1);
    ac_ref_release(who);
    await_pings(p, 4, 1);

    for (int k = 1; k <= 4; k++) {
        assert_int_equal(times_seen(p, k, 1000), 1);
        assert_int_equal(rt_got(p, k), 51);
    }
    assert_int_equal(rt_total(p), 204);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void wrapper_through(ts_fixture *fx, const char *sysname, bool random_pool)
{
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, sysname, NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_props *props = random_pool ? ac_router_random(4, &rt_routee_def, &ro)
                                  : ac_router_round_robin(4, &rt_routee_def, &ro);
    ac_ref *router = rt_spawn(sys, props, "pool");
    assert_non_null(router);

    assert_true(rt_tell_ints(router, 0, 8));
    assert_status(ac_tell(router, ac_broadcast_new(ac_msg_int64_new(1000)), NULL), AC_OK);
    assert_true(rt_tell_ints(router, 8, 8));

    /* The original sender comes along: an ask wrapped in a Broadcast is
     * answered by a routee, and every routee gets the ping (after all the
     * above, which makes it a barrier). */
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_broadcast_new(rt_ping()), RT_ASK_MS, &a), AC_OK);
    assert_non_null(a.sender);
    assert_true(rt_routee_number(ac_ref_name(a.sender)) >= 1);
    assert_string_equal(ac_msg_str(a.reply), ac_ref_path(a.sender));
    ac_answer_release(&a);
    await_pings(p, 4, 1);

    assert_int_equal(rt_total(p), 20);
    for (int k = 1; k <= 4; k++) {
        assert_int_equal(times_seen(p, k, 1000), 1);
        assert_int_equal(rt_pings(p, k), 1);
    }
    if (!random_pool) {
        /* 16 consecutive round-robin messages: 4 each, whatever the
         * wrapper did to the rotation. */
        for (int k = 1; k <= 4; k++) {
            assert_int_equal(rt_got(p, k), 5);
        }
    }
    for (int v = 0; v < 16; v++) {
        int seen = 0;
        for (int k = 1; k <= 4; k++) {
            seen += times_seen(p, k, v);
        }
        assert_int_equal(seen, 1);
    }

    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_wrapper_round_robin(void **state)
{
    wrapper_through(*state, "wrap_rr", false);
}

static void test_wrapper_random(void **state)
{
    wrapper_through(*state, "wrap_random", true);
}

static void test_wrapper_null_inner(void **state)
{
    (void)state;
    ac_clear_error();
    assert_null(ac_broadcast_new(NULL));
    assert_last_error(AC_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_broadcast_router),
        TS_UNIT(test_wrapper_round_robin),
        TS_UNIT(test_wrapper_random),
        TS_UNIT(test_wrapper_null_inner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
