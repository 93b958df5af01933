/*
 * Scatter/gather with a circuit breaker per routee: a routee that times
 * out opens its breaker and the next scatters go to the healthy routees
 * only; after the reset timeout one scatter probes it, and once the probe
 * succeeds it is asked again. When every breaker is open a scatter fails
 * at once with an AggregateError of CircuitBreakerOpenErrors. The
 * breakers' state is in the metrics, labelled by routee path.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

static ac_ref *spawn_guarded(sg_data *d, int size, int64_t timeout_ms, int max_failures)
{
    ac_breaker_options bo = {.max_failures = max_failures, .reset_timeout_ms = 1000};
    ac_routee_options ro = {.user_data = d, .breaker = &bo};
    ac_scatter_gather_options o = {.timeout_ms = timeout_ms};
    ac_props *p = ac_router_scatter_gather_first_completed(size, &sg_routee_def, &o, &ro);
    if (p == NULL) {
        fail_msg("factory: %s", ac_last_error());
    }
    ac_ref *r = ac_spawn(d->sys, p, "replicas");
    assert_non_null(r);
    atomic_store(&d->router, r);
    for (int k = 1; k <= size; k++) {
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "routees started");
    }
    return r;
}

static ac_status ask(ac_ref *router, const char *key, ac_answer *a)
{
    ac_future *f = ac_ask(router, sg_key_new(key, 0), SG_WAIT_MS);
    ac_status st = sg_wait_future(f, a);
    ac_future_release(f);
    return st;
}

/* The value of the state gauge of routee k's breaker, from the exposition. */
static double breaker_gauge(sg_data *d, int k)
{
    char needle[256];
    snprintf(needle, sizeof needle, "circuit_breaker_state{breaker=\"%s\"} ",
             ac_ref_path(atomic_load(&d->refs[k][0])));
    char *page = ac_metrics_format(d->sys);
    assert_non_null(page);
    const char *at = strstr(page, needle);
    double v = at ? strtod(at + strlen(needle), NULL) : -1;
    free(page);
    return v;
}

static void test_open_routee_left_out_until_probe(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-breaker", true);
    assert_status(ac_metrics_enable(d->sys), AC_OK);
    sg_set(d, 3, SG_SILENT, 0); /* a dead replica */
    ac_ref *router = spawn_guarded(d, 3, 100, 1);
    ac_answer a;
    ac_future *f = ac_ask(router, sg_key_new("k0", 0), SG_WAIT_MS);
    sg_wait_seen_all(d, 3, 1);
    assert_status(sg_wait_future(f, &a), AC_OK); /* routee-1 or -2 won */
    ac_answer_release(&a);
    ac_future_release(f);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK); /* routee-3's call times out */
    assert_int_equal(breaker_gauge(d, 3), 2.0);
    assert_int_equal(breaker_gauge(d, 1), 0.0);

    for (int i = 0; i < 5; i++) {
        assert_status(ask(router, "k", &a), AC_OK);
        ac_answer_release(&a);
    }
    sg_wait_seen(d, 1, 6);
    sg_wait_seen(d, 2, 6);
    assert_int_equal(atomic_load(&d->seen[3]), 1); /* left out */
    assert_int_equal(ac_timers_armed(d->sys), 1);  /* its probe timer only: no scatter waits */

    sg_set(d, 3, SG_ECHO, 0);
    assert_status(ac_clock_advance(d->sys, 1000), AC_OK);
    assert_int_equal(breaker_gauge(d, 3), 1.0);
    assert_status(ask(router, "probe", &a), AC_OK);
    ac_answer_release(&a);
    sg_wait_seen(d, 3, 2); /* the probe */
    assert_eventually(ts_wait_ge(&d->replies[3], 1, TS_WAIT_S), "the probe's reply");
    for (double end = ts_now() + TS_WAIT_S; breaker_gauge(d, 3) != 0.0;) {
        if (ts_now() > end) {
            fail_msg("routee-3's breaker did not close");
        }
        ts_sleep_ms(1);
    }
    assert_status(ask(router, "again", &a), AC_OK);
    ac_answer_release(&a);
    sg_wait_seen(d, 3, 3); /* included again */
    sg_assert_routees_ok(d);
    ac_ref_release(router);
}

static void test_all_open_fails_at_once(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-breaker-all", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_ERROR, 0);
    }
    ac_ref *router = spawn_guarded(d, 3, 100, 2);
    ac_answer a;
    for (int i = 0; i < 2; i++) {
        assert_status(ask(router, "k", &a), AC_EFAILED); /* all 3 failed */
        ac_answer_release(&a);
    }
    /* a routee counts a request after its reply, which may have answered
     * the scatter already */
    sg_wait_seen_all(d, 3, 2);
    long long before = atomic_load(&d->seen[1]) + atomic_load(&d->seen[2]) +
                       atomic_load(&d->seen[3]);
    ac_status st = ask(router, "refused", &a); /* no clock moves: answered at once */
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: the circuit breakers of all 3 routees are open",
             ac_ref_path(router));
    sg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        ac_error *m = ac_error_member(a.error, i);
        assert_true(ac_error_is(m, AC_CIRCUIT_BREAKER_OPEN_ERROR));
        assert_non_null(strstr(ac_error_message(m), ac_ref_path(atomic_load(&d->refs[i + 1][0]))));
    }
    ac_answer_release(&a);
    ts_sleep_ms(5);
    assert_int_equal(atomic_load(&d->seen[1]) + atomic_load(&d->seen[2]) +
                         atomic_load(&d->seen[3]),
                     before);
    ac_ref_release(router);
}

static void test_bad_breaker_options_refused(void **state)
{
    (void)state;
    ac_breaker_options bo = {.max_failures = -3};
    ac_routee_options ro = {.breaker = &bo};
    assert_null(ac_router_scatter_gather_first_completed(3, &sg_routee_def, NULL, &ro));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "max_failures = -3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_open_routee_left_out_until_probe),
        TS_UNIT(test_all_open_fails_at_once),
        TS_UNIT(test_bad_breaker_options_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
