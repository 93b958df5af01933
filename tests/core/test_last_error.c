/*
 * The last-error channel tells the truth: a call that clears it on entry
 * reports its own outcome, never an earlier call's, and a system that
 * starts despite an unknown ACTORC_LOG_LEVEL leaves no error behind.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

static void le_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def le_def = {.name = "le", .receive = le_receive};

/* Make this thread's last error a failure unrelated to what follows. */
static void fail_unsubscribe(ac_system *sys)
{
    assert_status(ac_dead_letters_unsubscribe(sys, NULL), AC_EINVAL);
    assert_true(ac_last_status() != AC_OK);
}

/* ac_spawn with NULL props after an unrelated failure says props is NULL
 * with AC_EINVAL, not the earlier call's status or message. */
static void test_spawn_null_props_after_failure(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "le-spawn", NULL);
    ac_ref *r = ac_spawn(sys, ac_props_new(&le_def, NULL), "a");
    assert_non_null(r);
    assert_status(ac_dead_letters_unsubscribe(sys, r), AC_ENOTFOUND);
    ac_ref_release(r);
    assert_null(ac_spawn(sys, NULL, "b"));
    assert_status(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "props is NULL"));
    assert_null(strstr(ac_last_error(), "unsubscribe"));
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* An unknown ACTORC_LOG_LEVEL after a failure: the system starts, the
 * channel reads AC_OK and "", and one warning names the value and the
 * accepted ones. */
static void test_unknown_log_level_leaves_no_error(void **state)
{
    ts_fixture *fx = *state;
    ts_log_capture *cap = ts_fx_log(fx);
    assert_null(ac_msg_new(NULL, 0)); /* a failure left behind, on purpose */
    const char *old = getenv("ACTORC_LOG_LEVEL");
    char *saved = old ? strdup(old) : NULL;
    setenv("ACTORC_LOG_LEVEL", "verbose", 1);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "le-env", &o);
    if (saved)
        setenv("ACTORC_LOG_LEVEL", saved, 1);
    else
        unsetenv("ACTORC_LOG_LEVEL");
    free(saved);
    assert_non_null(sys);
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");
    assert_int_equal(ts_log_count_text(cap, "verbose"), 1);
    long i = ts_log_find_text(cap, "\"verbose\"");
    assert_true(i >= 0);
    ts_log_line line;
    assert_true(ts_log_get(cap, (size_t)i, &line));
    assert_int_equal(line.level, AC_LOG_WARN);
    assert_non_null(strstr(line.text, "debug, info, warn, error or off"));
    ts_log_line_clear(&line);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A success after a failure reads AC_OK, for a sample of calls. */
static void test_success_after_failure_reads_ok(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "le-sample", NULL);

    fail_unsubscribe(sys);
    ac_props *p = ac_props_new(&le_def, NULL);
    assert_non_null(p);
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");

    fail_unsubscribe(sys);
    ac_ref *r = ac_spawn(sys, p, "s");
    assert_non_null(r);
    assert_status(ac_last_status(), AC_OK);

    fail_unsubscribe(sys);
    ac_msg *m = ac_msg_str_new("x");
    assert_non_null(m);
    assert_status(ac_last_status(), AC_OK);

    fail_unsubscribe(sys);
    assert_non_null(ac_msg_str(m));
    assert_status(ac_last_status(), AC_OK);
    ac_msg_release(m);

    fail_unsubscribe(sys);
    ac_error *e = ac_error_new("E", "e");
    assert_non_null(e);
    assert_status(ac_last_status(), AC_OK);
    ac_error_release(e);

    fail_unsubscribe(sys);
    ac_future *f = ac_ask(r, ac_msg_int64_new(1), 50);
    assert_non_null(f);
    assert_status(ac_last_status(), AC_OK);
    ac_future_release(f);

    fail_unsubscribe(sys);
    ac_props *rp = ac_router_round_robin(2, &le_def, NULL);
    assert_non_null(rp);
    assert_status(ac_last_status(), AC_OK);
    ac_props_free(rp);

    fail_unsubscribe(sys);
    ac_log_level lv;
    assert_int_equal(ac_log_level_parse("warn", &lv), AC_OK);
    assert_status(ac_last_status(), AC_OK);

    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ac_clear_error forgets both the status and the message. */
static void test_clear_error(void **state)
{
    (void)state;
    assert_null(ac_msg_new(NULL, 0));
    assert_status(ac_last_status(), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    ac_clear_error();
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spawn_null_props_after_failure, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_log_level_leaves_no_error, ts_setup,
                                        ts_teardown),
        cmocka_unit_test_setup_teardown(test_success_after_failure_reads_ok, ts_setup, ts_teardown),
        cmocka_unit_test(test_clear_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
