/*
 * The endpoint slot, as a library that serves the exposition its own way
 * sees it: one endpoint per system, detached only by the stop function it
 * was attached with, and stopped exactly once by ac_system_terminate when
 * still attached. Also ac_set_error, the way such a library reports.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

typedef struct fake_endpoint {
    int stops;
} fake_endpoint;

static void fake_stop(void *endpoint)
{
    ((fake_endpoint *)endpoint)->stops++;
}

static void other_stop(void *endpoint)
{
    (void)endpoint;
}

static ac_system *metrics_system(void **state, bool metrics)
{
    ac_system *sys =
        ts_fx_system(*state, "slot", &(ac_system_options){.workers = 1, .metrics = metrics});
    assert_non_null(sys);
    return sys;
}

static void test_bad_arguments(void **state)
{
    fake_endpoint e = {0};
    ac_system *off = metrics_system(state, false);
    assert_status(ac_metrics_endpoint_attach(NULL, &e, 1, fake_stop), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_status(ac_metrics_endpoint_attach(off, NULL, 1, fake_stop), AC_EINVAL);
    assert_status(ac_metrics_endpoint_attach(off, &e, 1, NULL), AC_EINVAL);
    assert_status(ac_metrics_endpoint_attach(off, &e, 1, fake_stop), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "metrics are off"));
    assert_null(ac_metrics_endpoint_detach(NULL, fake_stop));
    assert_null(ac_metrics_endpoint_detach(off, fake_stop));
    assert_int_equal(ac_metrics_endpoint_port(NULL), 0);
    assert_int_equal(ac_metrics_endpoint_port(off), 0);
    assert_int_equal(e.stops, 0);
}

static void test_one_endpoint_per_system(void **state)
{
    fake_endpoint a = {0}, b = {0};
    ac_system *sys = metrics_system(state, true);
    assert_status(ac_metrics_endpoint_attach(sys, &a, 9100, fake_stop), AC_OK);
    assert_int_equal(ac_metrics_endpoint_port(sys), 9100);
    assert_status(ac_metrics_endpoint_attach(sys, &b, 9101, fake_stop), AC_EEXIST);
    assert_non_null(strstr(ac_last_error(), "9100"));

    assert_null(ac_metrics_endpoint_detach(sys, other_stop));
    assert_ptr_equal(ac_metrics_endpoint_detach(sys, fake_stop), &a);
    assert_int_equal(ac_metrics_endpoint_port(sys), 0);
    assert_null(ac_metrics_endpoint_detach(sys, fake_stop));
    assert_int_equal(a.stops + b.stops, 0);
}

static void test_terminate_stops_the_attached_one_once(void **state)
{
    fake_endpoint first = {0}, second = {0};
    ac_system *sys = metrics_system(state, true);
    assert_status(ac_metrics_endpoint_attach(sys, &first, 1, fake_stop), AC_OK);
    assert_ptr_equal(ac_metrics_endpoint_detach(sys, fake_stop), &first);
    assert_status(ac_metrics_endpoint_attach(sys, &second, 2, fake_stop), AC_OK);
    assert_status(ts_fx_terminate(*state), AC_OK);
    assert_int_equal(first.stops, 0);
    assert_int_equal(second.stops, 1);
}

static void test_set_error(void **state)
{
    (void)state;
    ac_clear_error();
    assert_status(ac_set_error(AC_ESYS, "mylib: cannot %s port %d", "bind", 80), AC_ESYS);
    assert_status(ac_last_status(), AC_ESYS);
    assert_string_equal(ac_last_error(), "mylib: cannot bind port 80");
    ac_clear_error();
    assert_status(ac_last_status(), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_bad_arguments),
        TS_UNIT(test_one_endpoint_per_system),
        TS_UNIT(test_terminate_stops_the_attached_one_once),
        TS_UNIT(test_set_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
