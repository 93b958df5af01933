/*
 * Options: every bad option is refused at creation with AC_EINVAL and a
 * message naming it and its value; nothing is created. Zeroed options
 * but the name give the documented defaults.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "bk_support.h"

static void refused(ac_system *sys, const ac_breaker_options *o, const char *needle)
{
    ac_clear_error();
    ac_breaker *b = ac_breaker_create(sys, o);
    if (b != NULL) {
        ac_breaker_release(b);
        fail_msg("options with a bad %s were accepted", needle);
    }
    assert_last_error(AC_EINVAL);
    if (strstr(ac_last_error(), needle) == NULL) {
        fail_msg("the error does not name %s: \"%s\"", needle, ac_last_error());
    }
}

static void test_bad_options_refused(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "bk-opts", NULL);
    ac_breaker_options o = {.name = "db"};
    char long_name[300];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';

    refused(sys, NULL, "NULL");
    o.name = NULL;
    refused(sys, &o, "name");
    o.name = "";
    refused(sys, &o, "name");
    o.name = long_name;
    refused(sys, &o, "name");
    o.name = "db";

    o.max_failures = -1;
    refused(sys, &o, "max_failures = -1");
    o.max_failures = AC_BREAKER_MAX_FAILURES_LIMIT + 1;
    refused(sys, &o, "max_failures");
    o.max_failures = 0;

    o.call_timeout_ms = -5;
    refused(sys, &o, "call_timeout_ms = -5");
    o.call_timeout_ms = (int64_t)INT32_MAX + 1;
    refused(sys, &o, "call_timeout_ms");
    o.call_timeout_ms = 0;

    o.reset_timeout_ms = -1;
    refused(sys, &o, "reset_timeout_ms = -1");
    o.reset_timeout_ms = 1000;
    o.max_reset_timeout_ms = 999; /* below the reset timeout */
    refused(sys, &o, "max_reset_timeout_ms = 999");
    o.max_reset_timeout_ms = 0;

    o.backoff = 0.5;
    refused(sys, &o, "backoff = 0.5");
    o.backoff = NAN;
    refused(sys, &o, "backoff");
    o.backoff = 0;

    o.random_factor = 1.5;
    refused(sys, &o, "random_factor = 1.5");
    o.random_factor = -0.1;
    refused(sys, &o, "random_factor");
    o.random_factor = NAN;
    refused(sys, &o, "random_factor");
    o.random_factor = 0;

    ac_clear_error();
    assert_null(ac_breaker_create(NULL, &o));
    assert_last_error(AC_EINVAL);
}

static void test_defaults(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options so = {.manual_clock = true};
    ac_system *sys = ts_fx_system(fx, "bk-defaults", &so);
    ac_breaker_options o = {.name = "db"};
    ac_breaker *b = ac_breaker_create(sys, &o);
    assert_non_null(b);
    assert_string_equal(ac_breaker_name(b), "db");
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.state, AC_BREAKER_CLOSED);
    assert_int_equal(info.failures, 0);
    assert_int_equal(info.reset_timeout_ms, AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS);
    /* five failures (the default) open it */
    for (int i = 0; i < AC_BREAKER_DEFAULT_MAX_FAILURES; i++) {
        ac_breaker_permit p;
        assert_true(ac_breaker_acquire(b, &p, NULL));
        ac_error *e = ac_error_new("OutageError", "down");
        ac_breaker_record(b, &p, e);
        ac_error_release(e);
    }
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.next_probe_ms - info.opened_at_ms, AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS);
    ac_breaker_release(b);
}

/* Bad arguments to the calls: an error, the message released (the
 * sanitizer builds catch a leak), the breaker untouched. */
static void test_bad_call_arguments(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-badcall", true, false);
    ac_breaker_options o = bk_options(d, "db");
    ac_breaker *b = bk_breaker(d, &o);
    ac_answer a;
    assert_status(ac_breaker_ask_wait(NULL, d->server, ac_msg_str_new("x"), 0, &a), AC_EINVAL);
    assert_status(ac_breaker_ask_wait(b, NULL, ac_msg_str_new("x"), 0, &a), AC_EINVAL);
    assert_status(ac_breaker_ask_wait(b, d->server, NULL, 0, &a), AC_EINVAL);
    assert_status(ac_breaker_ask_wait(b, d->server, ac_msg_str_new("x"), -1, &a), AC_EINVAL);
    assert_status(ac_breaker_ask_wait(b, d->server, ac_msg_str_new("x"), 0, NULL), AC_EINVAL);
    assert_null(ac_breaker_ask(b, d->server, ac_msg_str_new("x"), (int64_t)INT32_MAX + 1));
    assert_last_error(AC_EINVAL);
    ac_system *other = ac_system_create("bk-other", NULL);
    assert_non_null(other);
    ac_breaker_options oo = {.name = "other"};
    ac_breaker *ob = ac_breaker_create(other, &oo);
    assert_status(ac_breaker_ask_wait(ob, d->server, ac_msg_str_new("x"), 0, &a), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "bk-other"));
    ac_breaker_release(ob);
    assert_status(ac_system_terminate(other), AC_OK);
    assert_status(ac_breaker_ask_in(NULL, b, d->server, ac_msg_str_new("x"), 0, NULL, NULL, NULL),
                  AC_EINVAL);
    ac_breaker_permit p;
    assert_false(ac_breaker_acquire(NULL, &p, NULL));
    assert_last_error(AC_EINVAL);
    assert_true(ac_breaker_acquire(b, &p, NULL));
    assert_status(ac_breaker_tell(b, &p, NULL, ac_msg_str_new("x"), NULL, 0), AC_EINVAL);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_CLOSED);
    assert_int_equal(atomic_load(&d->requests), 0);
    assert_status(ac_breaker_get_info(NULL, NULL), AC_EINVAL);
    assert_status(ac_breaker_subscribe(b, NULL), AC_EINVAL);
    assert_status(ac_breaker_unsubscribe(b, d->server), AC_ENOTFOUND);
    assert_null(ac_breaker_transition_of(NULL));
    ac_breaker_release(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_bad_options_refused),
        TS_UNIT(test_defaults),
        TS_UNIT(test_bad_call_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
