/*
 * Random pools: every message reaches exactly one routee, and the spread
 * over the routees passes a chi-square bound.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

#define N_ROUTEES 4
#define N_MSGS 40000

/* Chi-square with 3 degrees of freedom exceeds 30.7 with probability
 * 1e-6: a fair router fails this once in a million runs. */
#define CHI2_BOUND_DF3 30.7

static void test_spread(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "random", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_ref *router = rt_spawn(sys, ac_router_random(N_ROUTEES, &rt_routee_def, &ro), "pool");
    assert_non_null(router);

    assert_true(rt_tell_ints(router, 0, N_MSGS));
    assert_eventually(rt_wait_total(p, N_MSGS, 30.0), "every message handled");

    double expected = (double)N_MSGS / N_ROUTEES;
    double chi2 = 0.0;
    long long sum = 0;
    for (int k = 1; k <= N_ROUTEES; k++) {
        long long got = rt_got(p, k);
        sum += got;
        double d = (double)got - expected;
        chi2 += d * d / expected;
        /* Within 5% of the fair share (over 5 standard deviations). */
        if (got < (long long)(expected * 0.95) || got > (long long)(expected * 1.05)) {
            fail_msg("routee-%d got %lld of %d messages", k, got, N_MSGS);
        }
    }
    assert_int_equal(sum, N_MSGS);
    assert_int_equal(rt_got(p, 0), 0);
    if (chi2 > CHI2_BOUND_DF3) {
        fail_msg("chi-square %.2f over %d routees exceeds %.1f", chi2, N_ROUTEES,
                 CHI2_BOUND_DF3);
    }

    /* Each routee saw its messages in send order: one sender, one router. */
    for (int k = 1; k <= N_ROUTEES; k++) {
        long long n = rt_got(p, k);
        if (n > RT_MAXV) {
            n = RT_MAXV;
        }
        for (long long j = 1; j < n; j++) {
            if (rt_val(p, k, j) <= rt_val(p, k, j - 1)) {
                fail_msg("routee-%d: message %lld out of order", k, j);
            }
        }
    }
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_int_equal(rt_bad(p, NULL, 0), 0);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Sequential asks (each answered before the next) are spread too. */
static void test_sequential_asks_spread(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "random2", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_ref *a = rt_spawn(sys, ac_router_random(N_ROUTEES, &rt_routee_def, &ro), "a");
    assert_non_null(a);

    /* 64 sequential asks: the chance that all pick the same routee is
     * 4^-63. */
    int seen[N_ROUTEES + 1] = {0};
    for (int i = 0; i < 64; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(a, &st);
        assert_status(st, AC_OK);
        seen[rt_routee_number(ac_ref_name(who))]++;
        ac_ref_release(who);
    }
    int distinct = 0;
    for (int k = 1; k <= N_ROUTEES; k++) {
        distinct += seen[k] > 0;
    }
    assert_int_equal(seen[0], 0);
    assert_true(distinct >= 2);

    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_spread),
        TS_UNIT(test_sequential_asks_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
