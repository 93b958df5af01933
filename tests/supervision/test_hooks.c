/*
 * Restart hooks and their defaults (pre_restart defaults to post_stop,
 * post_restart to pre_start; given hooks run instead), what a failure
 * leaves in the log (error level, the actor's path, the error's name and
 * message), the failed message never being retried, and bad input to
 * ac_fail and ac_props_set_supervisor.
 */
#define _POSIX_C_SOURCE 200809L

#include "sv_support.h"

/* Four top-level actors (the user guardian restarts them), one per
 * combination of restart hooks, each failing once and then counting. */
static void test_default_and_given_hooks(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_hooks", false);
    sv_node *plain = sv_node_add(w, "plain", &sv_plain_def, NULL, NULL);
    sv_node *full = sv_node_add(w, "full", &sv_full_def, NULL, NULL);
    sv_node *pre = sv_node_add(w, "pre", &sv_pre_only_def, NULL, NULL);
    sv_node *post = sv_node_add(w, "post", &sv_post_only_def, NULL, NULL);
    sv_node *nodes[] = {plain, full, pre, post};
    for (size_t i = 0; i < 4; i++) {
        ac_ref *r = sv_spawn(nodes[i]);
        sv_tell(r, "inc");
        sv_tell(r, "fail HookError");
        sv_tell(r, "inc");
    }
    for (size_t i = 0; i < 4; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s recv 1", nodes[i]->name);
        sv_wait_event(w, label, 2);
    }

    /* No pre_restart, no post_restart: post_stop, then pre_start. */
    static const char *const plain_events[] = {
        "init zeroed", "pre_start", "recv 1", "saw fail HookError", "post_stop", "init zeroed",
        "pre_start", "recv 1", NULL};
    sv_assert_events(w, "plain", plain_events);
    /* Both given: they run instead; post_stop and pre_start do not. */
    static const char *const full_events[] = {
        "init zeroed", "pre_start", "recv 1", "saw fail HookError",
        "pre_restart HookError [fail HookError]", "init zeroed", "post_restart HookError",
        "recv 1", NULL};
    sv_assert_events(w, "full", full_events);
    /* pre_restart only: it replaces post_stop; pre_start still follows. */
    static const char *const pre_events[] = {
        "init zeroed", "pre_start", "recv 1", "saw fail HookError",
        "pre_restart HookError [fail HookError]", "init zeroed", "pre_start", "recv 1", NULL};
    sv_assert_events(w, "pre", pre_events);
    /* post_restart only: post_stop still runs; it replaces pre_start. */
    static const char *const post_events[] = {
        "init zeroed", "pre_start", "recv 1", "saw fail HookError", "post_stop", "init zeroed",
        "post_restart HookError", "recv 1", NULL};
    sv_assert_events(w, "post", post_events);

    /* A real stop still runs post_stop when pre_restart is given. */
    assert_status(ac_stop(sv_ref(full)), AC_OK);
    sv_wait_event(w, "full post_stop", 1);
    assert_int_equal(sv_count(w, "full", "pre_start"), 1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

typedef struct found_line {
    bool found;
    ac_log_level level;
    char path[160];
    char text[512];
} found_line;

static found_line find_log(ts_log_capture *c, const char *needle)
{
    found_line f = {0};
    size_t n = ts_log_count(c);
    for (size_t i = 0; i < n && !f.found; i++) {
        ts_log_line l;
        if (!ts_log_get(c, i, &l)) {
            continue;
        }
        if (l.text != NULL && strstr(l.text, needle) != NULL) {
            f.found = true;
            f.level = l.level;
            snprintf(f.path, sizeof f.path, "%s", l.path ? l.path : "(null)");
            snprintf(f.text, sizeof f.text, "%s", l.text);
        }
        ts_log_line_clear(&l);
    }
    return f;
}

/* The failure is logged at error level with the path, the error's name and
 * message; the failed message is not retried, neither after a restart nor
 * after a resume. */
static void test_failure_logged_and_not_retried(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_log", false);
    ac_supervisor_strategy resume = {.directive = AC_RESUME};
    sv_node *restarted = sv_node_add(w, "restarted", &sv_plain_def, NULL, NULL);
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &resume, NULL);
    sv_node *resumed = sv_node_add(w, "resumed", &sv_plain_def, NULL, sup);
    ac_ref *rr = sv_spawn(restarted);
    sv_spawn(sup);
    ac_ref *sr = sv_wait_spawned(resumed, 1);

    sv_tell(rr, "fail LogError");
    sv_tell(sr, "fail LogError");
    for (int i = 0; i < 3; i++) {
        sv_tell(rr, "inc");
        sv_tell(sr, "inc");
    }
    sv_wait_event(w, "restarted recv 3", 1);
    sv_wait_event(w, "resumed recv 3", 1);
    assert_int_equal(sv_count(w, "restarted", "saw fail LogError"), 1);
    assert_int_equal(sv_count(w, "resumed", "saw fail LogError"), 1);
    assert_int_equal(sv_count(w, "restarted", "pre_start"), 2);
    assert_int_equal(sv_count(w, "resumed", "pre_start"), 1);

    const char *who[] = {"restarted", "resumed"};
    const char *paths[] = {"actorc://sv_log/user/restarted", "actorc://sv_log/user/sup/resumed"};
    for (size_t i = 0; i < 2; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "%s failed on purpose", who[i]);
        found_line f = find_log(w->log, needle);
        if (!f.found) {
            ts_log_dump(w->log, "log");
            fail_msg("no log line with \"%s\"", needle);
        }
        assert_int_equal(f.level, AC_LOG_ERROR);
        assert_string_equal(f.path, paths[i]);
        if (strstr(f.text, "LogError") == NULL) {
            fail_msg("the failure line \"%s\" does not name the error", f.text);
        }
    }

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ac_fail with NULL arguments: AC_EINVAL, the cause released, and the
 * handler does not fail. */
static void test_ac_fail_bad_arguments(void **state)
{
    ts_fixture *fx = *state;
    ac_clear_error();
    assert_status(ac_fail(NULL, ac_error_new("OrphanError", "outside any actor")), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_status(ac_fail(NULL, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);

    sv_world *w = sv_world_new(fx, "sv_badfail", false);
    sv_node *worker = sv_node_add(w, "worker", &sv_plain_def, NULL, NULL);
    ac_ref *wr = sv_spawn(worker);
    sv_tell(wr, "inc");
    sv_tell(wr, "bad_fail");
    sv_tell(wr, "inc");
    sv_wait_event(w, "worker recv 2", 1);
    static const char *const events[] = {
        "init zeroed", "pre_start", "recv 1", "bad_fail AC_EINVAL AC_EINVAL", "recv 2", NULL};
    sv_assert_events(w, "worker", events);
    assert_int_equal(ts_log_find_text(w->log, "OrphanError"), -1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A second ac_fail in the same handler is ignored: one failure, with the
 * first cause (the second is released: ASan's leak check sees to that). */
static void test_second_ac_fail_ignored(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_twice", false);
    sv_node *worker = sv_node_add(w, "worker", &sv_full_def, NULL, NULL);
    ac_ref *wr = sv_spawn(worker);
    sv_tell(wr, "fail_twice FirstError SecondError");
    sv_tell(wr, "inc");
    sv_wait_event(w, "worker recv 1", 1);
    static const char *const events[] = {
        "init zeroed", "pre_start", "saw fail_twice",
        "pre_restart FirstError [fail_twice FirstError SecondError]", "init zeroed",
        "post_restart FirstError", "recv 1", NULL};
    sv_assert_events(w, "worker", events);
    assert_true(ts_log_find_text(w->log, "FirstError") >= 0);
    assert_int_equal(ts_log_find_text(w->log, "SecondError"), -1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_set_supervisor_bad_input(void **state)
{
    (void)state;
    ac_props *p = ac_props_new(&sv_plain_def, NULL);
    assert_non_null(p);
    const int bad[] = {-1, AC_ESCALATE + 1, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ac_supervisor_strategy s = {.directive = (ac_directive)bad[i]};
        ac_clear_error();
        assert_status(ac_props_set_supervisor(p, &s), AC_EINVAL);
        assert_last_error(AC_EINVAL);
    }
    ac_supervisor_strategy good = {.directive = AC_ESCALATE, .max_restarts = 2,
                                   .within_ms = 500};
    ac_clear_error();
    assert_status(ac_props_set_supervisor(NULL, &good), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_status(ac_props_set_supervisor(p, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    for (int d = AC_RESTART; d <= AC_ESCALATE; d++) {
        ac_supervisor_strategy s = {.directive = (ac_directive)d};
        assert_status(ac_props_set_supervisor(p, &s), AC_OK);
    }
    assert_status(ac_props_set_supervisor(p, &good), AC_OK);
    ac_props_free(p);

    assert_string_equal(ac_directive_name(AC_RESTART), "restart");
    assert_string_equal(ac_directive_name(AC_RESUME), "resume");
    assert_string_equal(ac_directive_name(AC_STOP), "stop");
    assert_string_equal(ac_directive_name(AC_ESCALATE), "escalate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_default_and_given_hooks),
        TS_UNIT(test_failure_logged_and_not_retried),
        TS_UNIT(test_ac_fail_bad_arguments),
        TS_UNIT(test_second_ac_fail_ignored),
        TS_UNIT(test_set_supervisor_bad_input),
    };
    return cmocka_run_group_tests_name("supervision.hooks", tests, NULL, NULL);
}
