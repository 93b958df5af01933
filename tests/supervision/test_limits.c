/*
 * The restart budget, on the manual clock: by default at most 10 restarts
 * within 60 s (the 11th failure in the window stops the child, which its
 * watchers see as Terminated); once the clock has moved past the window
 * the budget is whole again. Custom max_restarts/within_ms, no limit, and
 * a budget per child. A pre_start that fails is restarted like any other
 * failure, and stopped when it keeps failing.
 *
 * Every restart is waited for (its pre_start recorded) before the clock
 * moves, so each decision reads the time the test meant. Every batch of
 * failures happens at a single instant, so the checks hold whether the
 * window is fixed or sliding.
 */
#define _POSIX_C_SOURCE 200809L

#include "sv_support.h"

static void fail_n(ac_ref *r, int n, const char *err)
{
    for (int i = 0; i < n; i++) {
        sv_tell(r, "fail %s", err);
    }
}

static void advance(sv_world *w, int64_t ms)
{
    assert_status(ac_clock_advance(w->sys, ms), AC_OK);
}

/* Default budget. a: 5 restarts at t=0 and 5 at t=59,999, then its 11th
 * failure stops it. b: 10 restarts at t=0, then at t=60,001 ten more are
 * allowed, and the 11th of those stops it. */
static void test_default_budget(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_budget", true);
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, NULL, NULL);
    sv_node *a = sv_node_add(w, "a", &sv_plain_def, NULL, sup);
    sv_node *b = sv_node_add(w, "b", &sv_plain_def, NULL, sup);
    sv_node *watcher = sv_node_add(w, "watcher", &sv_watcher_def, NULL, NULL);
    ac_ref *wa = sv_spawn(watcher);
    sv_spawn(sup);
    ac_ref *ar = sv_wait_spawned(a, 1);
    ac_ref *br = sv_wait_spawned(b, 1);
    w->watch_target = ar;
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher watching a AC_OK", 1);
    w->watch_target = br;
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher watching b AC_OK", 1);
    assert_int_equal(ac_clock_now_ms(w->sys), 0);

    fail_n(ar, 5, "LimitError");
    fail_n(br, AC_DEFAULT_MAX_RESTARTS, "LimitError");
    sv_wait_event(w, "a pre_start", 6);
    sv_wait_event(w, "b pre_start", 11);

    advance(w, AC_DEFAULT_RESTART_WINDOW_MS - 1); /* t = 59,999: same window */
    fail_n(ar, 5, "LimitError");
    sv_wait_event(w, "a pre_start", 11);
    sv_tell(ar, "inc"); /* 10 restarts: still alive */
    sv_wait_event(w, "a recv 1", 1);
    sv_tell(ar, "fail LimitError"); /* the 11th failure within 60 s */
    sv_tell(ar, "inc");
    sv_wait_event(w, "watcher terminated a", 1);
    assert_int_equal(sv_count(w, "a", "pre_start"), 11);
    assert_int_equal(sv_count(w, "a", "saw fail LimitError"), 11);
    assert_int_equal(sv_count(w, "a", "post_stop"), 11); /* 10 restarts + the stop */
    assert_int_equal(sv_count(w, "a", "recv 1"), 1);

    advance(w, 2); /* t = 60,001: b's window is over */
    fail_n(br, AC_DEFAULT_MAX_RESTARTS, "LimitError");
    sv_wait_event(w, "b pre_start", 21);
    sv_tell(br, "inc");
    sv_wait_event(w, "b recv 1", 1);
    assert_int_equal(sv_count(w, "watcher", "terminated b"), 0);
    sv_tell(br, "fail LimitError");
    sv_wait_event(w, "watcher terminated b", 1);
    assert_int_equal(sv_count(w, "b", "pre_start"), 21);
    assert_int_equal(sv_count(w, "b", "post_stop"), 21);

    /* The supervisor itself was never restarted, and has no children left. */
    sv_wait_children(w, sup, 0);
    assert_int_equal(sv_count(w, "sup", "init zeroed"), 1);
    assert_int_equal(sv_count(w, "sup", "post_stop"), 0);
    assert_true(ts_log_find_text(w->log, "LimitError") >= 0);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* max_restarts = 3 within 1,000 ms. a: 3 restarts at t=0, its 4th failure
 * at t=999 stops it. b: 3 restarts at t=0, 3 more at t=1,001, the 4th of
 * those stops it. */
static void test_custom_budget(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_custom", true);
    ac_supervisor_strategy three_per_s = {
        .directive = AC_RESTART, .max_restarts = 3, .within_ms = 1000};
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &three_per_s, NULL);
    sv_node *a = sv_node_add(w, "a", &sv_plain_def, NULL, sup);
    sv_node *b = sv_node_add(w, "b", &sv_plain_def, NULL, sup);
    sv_node *watcher = sv_node_add(w, "watcher", &sv_watcher_def, NULL, NULL);
    ac_ref *wa = sv_spawn(watcher);
    sv_spawn(sup);
    ac_ref *ar = sv_wait_spawned(a, 1);
    ac_ref *br = sv_wait_spawned(b, 1);
    w->watch_target = ar;
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher watching a AC_OK", 1);
    w->watch_target = br;
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher watching b AC_OK", 1);

    fail_n(ar, 3, "E");
    fail_n(br, 3, "E");
    sv_wait_event(w, "a pre_start", 4);
    sv_wait_event(w, "b pre_start", 4);

    advance(w, 999);
    sv_tell(ar, "fail E");
    sv_wait_event(w, "watcher terminated a", 1);
    assert_int_equal(sv_count(w, "a", "pre_start"), 4);

    advance(w, 2); /* t = 1,001 */
    fail_n(br, 3, "E");
    sv_wait_event(w, "b pre_start", 7);
    sv_tell(br, "inc");
    sv_wait_event(w, "b recv 1", 1);
    assert_int_equal(sv_count(w, "watcher", "terminated b"), 0);
    sv_tell(br, "fail E");
    sv_wait_event(w, "watcher terminated b", 1);
    assert_int_equal(sv_count(w, "b", "pre_start"), 7);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A negative max_restarts never stops the child. */
static void test_no_limit(void **state)
{
    enum { FAILURES = 40 };
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_unlimited", true);
    ac_supervisor_strategy unlimited = {.directive = AC_RESTART, .max_restarts = -1};
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &unlimited, NULL);
    sv_node *worker = sv_node_add(w, "worker", &sv_plain_def, NULL, sup);
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);
    fail_n(wr, FAILURES, "E");
    sv_tell(wr, "inc");
    sv_wait_event(w, "worker recv 1", 1);
    assert_int_equal(sv_count(w, "worker", "pre_start"), FAILURES + 1);
    assert_int_equal(sv_count(w, "worker", "saw fail E"), FAILURES);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A pre_start that always fails: restarted by the guardian (pre_start runs
 * again) until the budget is spent, then stopped; the watcher gets
 * Terminated. */
static void test_pre_start_keeps_failing(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_prestart", true);
    sv_node *watcher = sv_node_add(w, "watcher", &sv_watcher_def, NULL, NULL);
    sv_node *starter = sv_node_add(w, "starter", &sv_plain_def, NULL, NULL);
    w->pre_start_fail_name = "starter";
    atomic_store(&w->pre_start_failures, -1);
    ac_ref *wa = sv_spawn(watcher);
    w->watch_target = sv_spawn(starter);
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher terminated starter", 1);

    static const char *const one_try[] = {"init zeroed", "pre_start", "post_stop"};
    const char *expected[3 * (AC_DEFAULT_MAX_RESTARTS + 1) + 1];
    size_t k = 0;
    for (int i = 0; i <= AC_DEFAULT_MAX_RESTARTS; i++) {
        for (size_t j = 0; j < 3; j++) {
            expected[k++] = one_try[j];
        }
    }
    expected[k] = NULL;
    sv_assert_events(w, "starter", expected);
    assert_true(ts_log_find_text(w->log, "StartError") >= 0);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A pre_start that fails twice and then succeeds: the actor runs. */
static void test_pre_start_fails_then_recovers(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_recover", true);
    sv_node *starter = sv_node_add(w, "starter", &sv_plain_def, NULL, NULL);
    sv_node *kid = sv_node_add(w, "kid", &sv_plain_def, NULL, starter);
    w->pre_start_fail_name = "starter";
    atomic_store(&w->pre_start_failures, 2);
    ac_ref *sr = sv_spawn(starter);
    sv_tell(sr, "inc");
    sv_wait_event(w, "starter recv 1", 1);
    sv_wait_spawned(kid, 1);

    static const char *const expected[] = {
        "init zeroed", "pre_start", "post_stop", "init zeroed", "pre_start", "post_stop",
        "init zeroed", "pre_start", "recv 1", NULL};
    sv_assert_events(w, "starter", expected);
    assert_int_equal(atomic_load(&kid->nrefs), 1); /* children only once it started */

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_default_budget),
        TS_UNIT(test_custom_budget),
        TS_UNIT(test_no_limit),
        TS_UNIT(test_pre_start_keeps_failing),
        TS_UNIT(test_pre_start_fails_then_recovers),
    };
    return cmocka_run_group_tests_name("supervision.limits", tests, NULL, NULL);
}
