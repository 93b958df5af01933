/*
 * The four directives, one-for-one: restart (the default when no strategy
 * is set), resume, stop (as ac_stop: children first, post_stop, Terminated,
 * leftovers to dead letters), escalate (the grandparent's strategy decides
 * about the parent, which fails with the same error), escalation up to the
 * user guardian, and a decider choosing by error name.
 *
 * Each node writes its lifecycle to a recorder (see sv_support.h); the test
 * waits for the last event it expects and then compares every node's whole
 * event list, so that a missing, extra or reordered hook fails the test.
 */
#define _POSIX_C_SOURCE 200809L

#include "sv_support.h"

/* No strategy set: restart. With pre_restart given, post_stop does not run
 * on the restart; the state is zeroed and init runs again, then pre_start
 * (the default post_restart). Messages after the failure reach the new
 * incarnation through the same ref. */
static void test_restart_is_the_default(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_restart", false);
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, NULL, NULL);
    sv_node *worker = sv_node_add(w, "worker", &sv_pre_only_def, NULL, sup);
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);

    sv_tell(wr, "inc");
    sv_tell(wr, "inc");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail BoomError");
    sv_tell(wr, "inc");
    sv_wait_event(w, "worker recv 1", 2);

    static const char *const worker_events[] = {
        "init zeroed", "pre_start", "recv 1", "recv 2", "recv 3", "saw fail BoomError",
        "pre_restart BoomError [fail BoomError]", "init zeroed", "pre_start", "recv 1", NULL};
    sv_assert_events(w, "worker", worker_events);
    static const char *const sup_events[] = {"init zeroed", "pre_start", NULL};
    sv_assert_events(w, "sup", sup_events);
    assert_int_equal(atomic_load(&worker->nrefs), 1); /* the same actor, not a respawn */
    assert_int_equal(atomic_load(&worker->inits), 2);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Resume: the state is kept and the next message is handled; no hook runs. */
static void test_resume_keeps_state(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_resume", false);
    ac_supervisor_strategy resume = {.directive = AC_RESUME};
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &resume, NULL);
    sv_node *worker = sv_node_add(w, "worker", &sv_full_def, NULL, sup);
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);

    sv_tell(wr, "inc");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail ResumeMe");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail ResumeMe");
    sv_tell(wr, "inc");
    sv_wait_event(w, "worker recv 4", 1);

    static const char *const worker_events[] = {
        "init zeroed", "pre_start", "recv 1", "recv 2", "saw fail ResumeMe", "recv 3",
        "saw fail ResumeMe", "recv 4", NULL};
    sv_assert_events(w, "worker", worker_events);
    assert_int_equal(atomic_load(&worker->inits), 1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Stop: as ac_stop. The failing handler blocks until K more messages are
 * queued behind it; then: the worker's child stops first, then the
 * worker's post_stop (no dead letters yet; it sends the watcher a note,
 * which must reach it before the Terminated), then Terminated to the
 * watcher, then the K leftovers become dead letters (the watcher is
 * subscribed, so it sees them after the Terminated). The sibling and the
 * supervisor are untouched (one-for-one). */
static void test_stop_behaves_like_ac_stop(void **state)
{
    enum { K = 5 };
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_stop", false);
    ac_supervisor_strategy stop = {.directive = AC_STOP};
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &stop, NULL);
    sv_node *worker = sv_node_add(w, "worker", &sv_plain_def, NULL, sup);
    sv_node *leaf = sv_node_add(w, "leaf", &sv_plain_def, NULL, worker);
    sv_node *other = sv_node_add(w, "other", &sv_plain_def, NULL, sup);
    sv_node *watcher = sv_node_add(w, "watcher", &sv_watcher_def, NULL, NULL);
    ac_ref *wa = sv_spawn(watcher);
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);
    sv_wait_spawned(other, 1);
    sv_wait_spawned(leaf, 1);
    sv_wait_event(w, "leaf pre_start", 1);

    w->note_post_stop_name = "worker";
    w->note_to = wa;
    w->watch_target = wr;
    sv_tell(wa, "watch");
    sv_tell(wa, "subscribe");
    sv_wait_event(w, "watcher watching worker AC_OK", 1);
    sv_wait_event(w, "watcher subscribed AC_OK", 1);

    uint64_t dl_before = ac_dead_letter_count(w->sys);
    sv_tell(wr, "block_fail StopError");
    assert_eventually(ts_gate_wait_for_waiter(&w->gate, TS_WAIT_S), "worker in its handler");
    for (int i = 0; i < K; i++) {
        sv_tell(wr, "inc");
    }
    ts_gate_open(&w->gate);

    sv_wait_event(w, "watcher terminated worker", 1);
    assert_eventually(ts_wait_dead_letters(w->sys, dl_before + K, TS_WAIT_S),
                      "the leftovers to become dead letters");
    sv_wait_event(w, "watcher dead letter worker [inc]", K);

    static const char *const worker_events[] = {"init zeroed", "pre_start", "saw fail StopError",
                                                "post_stop", NULL};
    sv_assert_events(w, "worker", worker_events);
    static const char *const leaf_events[] = {"init zeroed", "pre_start", "post_stop", NULL};
    sv_assert_events(w, "leaf", leaf_events);
    long leaf_stop = sv_index_nth(w, "leaf post_stop", 1);
    long worker_stop = sv_index_nth(w, "worker post_stop", 1);
    long terminated = sv_index_nth(w, "watcher terminated worker", 1);
    long first_dl = sv_index_nth(w, "watcher dead letter worker [inc]", 1);
    assert_true(leaf_stop < worker_stop);
    assert_true(worker_stop < terminated);
    assert_true(terminated < first_dl);
    /* post_stop ran before the Terminated was sent: its note came first. */
    long note = sv_index_nth(w, "watcher note post_stop worker", 1);
    assert_true(note >= 0);
    assert_true(note < terminated);
    assert_int_equal(atomic_load(&worker->dl_at_post_stop), (long long)dl_before);
    assert_int_equal(ac_dead_letter_count(w->sys), dl_before + K);

    /* One-for-one: the sibling and the supervisor carry on. */
    sv_tell(sv_ref(other), "inc");
    sv_wait_event(w, "other recv 1", 1);
    sv_tell(sv_ref(sup), "children");
    sv_wait_event(w, "sup children 1", 1);
    static const char *const sup_events[] = {"init zeroed", "pre_start", "children 1", NULL};
    sv_assert_events(w, "sup", sup_events);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Escalate: the leaf fails; mid (strategy escalate) fails with the same
 * error; top's decider sees mid and that error and restarts mid, which
 * stops the old leaf and spawns a new one. top itself carries on. */
static void test_escalate_to_grandparent(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_escalate", false);
    ac_supervisor_strategy by_name = {.decider = sv_decide_by_name};
    ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    sv_node *top = sv_node_add(w, "top", &sv_plain_def, &by_name, NULL);
    sv_node *mid = sv_node_add(w, "mid", &sv_full_def, &escalate, top);
    sv_node *leaf = sv_node_add(w, "leaf", &sv_plain_def, NULL, mid);
    sv_spawn(top);
    sv_wait_spawned(mid, 1);
    ac_ref *old_leaf = sv_wait_spawned(leaf, 1);

    sv_tell(old_leaf, "fail DeepError");
    ac_ref *new_leaf = sv_wait_spawned(leaf, 2);
    sv_wait_event(w, "leaf pre_start", 2);
    assert_ptr_not_equal(new_leaf, old_leaf);
    sv_tell(new_leaf, "inc");
    sv_tell(sv_ref(top), "inc");
    sv_wait_event(w, "leaf recv 1", 1);
    sv_wait_event(w, "top recv 1", 1);

    static const char *const top_events[] = {
        "init zeroed", "pre_start", "decide mid DeepError: leaf failed on purpose", "recv 1",
        NULL};
    sv_assert_events(w, "top", top_events);
    static const char *const mid_events[] = {
        "init zeroed", "pre_start", "pre_restart DeepError [none]", "init zeroed",
        "post_restart DeepError", NULL};
    sv_assert_events(w, "mid", mid_events);
    static const char *const leaf_events[] = {
        "init zeroed", "pre_start", "saw fail DeepError", "post_stop", "init zeroed",
        "pre_start", "recv 1", NULL};
    sv_assert_events(w, "leaf", leaf_events);
    assert_int_equal(atomic_load(&mid->nrefs), 1); /* restarted in place */

    /* Both failures are logged, each with its own path and the error. */
    char leaf_path[128], mid_path[128];
    snprintf(leaf_path, sizeof leaf_path, "actorc://sv_escalate/user/top/mid/leaf");
    snprintf(mid_path, sizeof mid_path, "actorc://sv_escalate/user/top/mid");
    size_t n = ts_log_count(w->log);
    bool leaf_logged = false, mid_logged = false;
    for (size_t i = 0; i < n; i++) {
        ts_log_line l;
        if (!ts_log_get(w->log, i, &l)) {
            continue;
        }
        if (l.level == AC_LOG_ERROR && l.path != NULL && l.text != NULL &&
            strstr(l.text, "DeepError") != NULL &&
            strstr(l.text, "leaf failed on purpose") != NULL) {
            leaf_logged |= strcmp(l.path, leaf_path) == 0;
            mid_logged |= strcmp(l.path, mid_path) == 0;
        }
        ts_log_line_clear(&l);
    }
    if (!leaf_logged || !mid_logged) {
        ts_log_dump(w->log, "log");
        fail_msg("failure lines: leaf %d, mid %d", leaf_logged, mid_logged);
    }

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Escalation to the top: grandchild fails, child and top escalate, the
 * user guardian restarts top (its default strategy): top's post_stop (the
 * default pre_restart), then its children stop (grandchild before child),
 * then top's pre_start runs again and rebuilds the tree. */
static void test_escalate_to_guardian(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_to_top", false);
    ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    sv_node *top = sv_node_add(w, "top", &sv_plain_def, &escalate, NULL);
    sv_node *child = sv_node_add(w, "child", &sv_plain_def, &escalate, top);
    sv_node *grandchild = sv_node_add(w, "grandchild", &sv_plain_def, NULL, child);
    ac_ref *tr = sv_spawn(top);
    sv_wait_spawned(child, 1);
    ac_ref *g = sv_wait_spawned(grandchild, 1);
    sv_wait_event(w, "grandchild pre_start", 1);

    sv_tell(g, "fail TopError");
    sv_wait_spawned(grandchild, 2);
    sv_wait_event(w, "grandchild pre_start", 2);
    sv_tell(tr, "inc");
    sv_wait_event(w, "top recv 1", 1);

    static const char *const top_events[] = {"init zeroed", "pre_start", "post_stop",
                                             "init zeroed", "pre_start", "recv 1", NULL};
    sv_assert_events(w, "top", top_events);
    static const char *const child_events[] = {"init zeroed", "pre_start", "post_stop",
                                               "init zeroed", "pre_start", NULL};
    sv_assert_events(w, "child", child_events);
    static const char *const gc_events[] = {"init zeroed", "pre_start", "saw fail TopError",
                                            "post_stop",   "init zeroed", "pre_start", NULL};
    sv_assert_events(w, "grandchild", gc_events);
    long top_stop = sv_index_nth(w, "top post_stop", 1);
    long gc_stop = sv_index_nth(w, "grandchild post_stop", 1);
    long child_stop = sv_index_nth(w, "child post_stop", 1);
    long top_restarted = sv_index_nth(w, "top pre_start", 2);
    assert_true(top_stop < gc_stop);
    assert_true(gc_stop < child_stop);
    assert_true(child_stop < top_restarted);
    assert_int_equal(atomic_load(&top->nrefs), 1);
    assert_int_equal(atomic_load(&child->nrefs), 2);

    /* Each level logged its failure with its path. */
    const char *paths[] = {"actorc://sv_to_top/user/top/child/grandchild",
                           "actorc://sv_to_top/user/top/child", "actorc://sv_to_top/user/top"};
    for (size_t p = 0; p < 3; p++) {
        bool found = false;
        size_t n = ts_log_count(w->log);
        for (size_t i = 0; i < n && !found; i++) {
            ts_log_line l;
            if (ts_log_get(w->log, i, &l)) {
                found = l.level == AC_LOG_ERROR && l.path != NULL &&
                        strcmp(l.path, paths[p]) == 0 && l.text != NULL &&
                        strstr(l.text, "TopError") != NULL;
                ts_log_line_clear(&l);
            }
        }
        if (!found) {
            ts_log_dump(w->log, "log");
            fail_msg("no error line for %s naming TopError", paths[p]);
        }
    }

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A decider chooses per error name: resume, restart, then stop. */
static void test_decider_by_error_name(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_decider", false);
    ac_supervisor_strategy by_name = {.decider = sv_decide_by_name};
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, &by_name, NULL);
    sv_node *worker = sv_node_add(w, "worker", &sv_plain_def, NULL, sup);
    sv_node *watcher = sv_node_add(w, "watcher", &sv_watcher_def, NULL, NULL);
    ac_ref *wa = sv_spawn(watcher);
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);
    w->watch_target = wr;
    sv_tell(wa, "watch");
    sv_wait_event(w, "watcher watching worker AC_OK", 1);

    sv_tell(wr, "inc");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail ResumeError");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail RestartError");
    sv_tell(wr, "inc");
    sv_tell(wr, "fail StopError");
    sv_wait_event(w, "watcher terminated worker", 1);

    static const char *const worker_events[] = {
        "init zeroed", "pre_start", "recv 1", "recv 2", "saw fail ResumeError", "recv 3",
        "saw fail RestartError", "post_stop", "init zeroed", "pre_start", "recv 1",
        "saw fail StopError", "post_stop", NULL};
    sv_assert_events(w, "worker", worker_events);
    static const char *const sup_events[] = {
        "init zeroed", "pre_start", "decide worker ResumeError: worker failed on purpose",
        "decide worker RestartError: worker failed on purpose",
        "decide worker StopError: worker failed on purpose", NULL};
    sv_assert_events(w, "sup", sup_events);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_restart_is_the_default),
        TS_UNIT(test_resume_keeps_state),
        TS_UNIT(test_stop_behaves_like_ac_stop),
        TS_UNIT(test_escalate_to_grandparent),
        TS_UNIT(test_escalate_to_guardian),
        TS_UNIT(test_decider_by_error_name),
    };
    return cmocka_run_group_tests_name("supervision.directives", tests, NULL, NULL);
}
