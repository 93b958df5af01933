/*
 * A restart keeps the mailbox: messages queued before the failure and
 * messages that arrive while the restart is in progress (the failing
 * handler, pre_restart, post_restart or a child's post_stop held on a gate
 * by the test) are all handled afterwards, in send order, by the new
 * incarnation; none is lost. And children are re-created by pre_start
 * after a restart: the old ones were stopped, new ones with the same names
 * are found by ac_child and are different refs.
 */
#define _POSIX_C_SOURCE 200809L

#include "sv_support.h"

enum { BEFORE = 100, DURING = 1000, AFTER = 900, TOTAL = BEFORE + DURING + AFTER };

typedef enum hold_point {
    HOLD_HANDLER,      /* the failing handler blocks before it fails */
    HOLD_PRE_RESTART,
    HOLD_POST_RESTART,
    HOLD_CHILD_STOP,   /* the restart waits for a child whose post_stop blocks */
} hold_point;

static void send_seq(ac_ref *r, int from, int to)
{
    for (int i = from; i < to; i++) {
        sv_tell(r, "seq %d", i);
    }
}

static bool seq_complete(void *arg)
{
    sv_world *w = arg;
    return atomic_load(&w->nseq) >= TOTAL;
}

static void check_mailbox_kept(void **state, hold_point hold)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_mailbox", false);
    const ac_actor_def *def = hold == HOLD_PRE_RESTART || hold == HOLD_POST_RESTART
                                  ? &sv_full_def
                                  : &sv_plain_def;
    sv_node *sup = sv_node_add(w, "sup", &sv_plain_def, NULL, NULL);
    sv_node *worker = sv_node_add(w, "worker", def, NULL, sup);
    if (hold == HOLD_CHILD_STOP) {
        sv_node_add(w, "slow", &sv_plain_def, NULL, worker);
        w->block_post_stop_name = "slow";
        atomic_store(&w->block_post_stop, 1);
    } else if (hold == HOLD_PRE_RESTART) {
        atomic_store(&w->block_pre_restart, 1);
    } else if (hold == HOLD_POST_RESTART) {
        atomic_store(&w->block_post_restart, 1);
    }
    sv_spawn(sup);
    ac_ref *wr = sv_wait_spawned(worker, 1);
    sv_wait_event(w, "worker pre_start", 1);
    if (hold == HOLD_CHILD_STOP) {
        sv_wait_event(w, "slow pre_start", 1);
    }
    uint64_t dl_before = ac_dead_letter_count(w->sys);

    send_seq(wr, 0, BEFORE);
    ts_gate *gate = &w->hook_gate;
    if (hold == HOLD_HANDLER) {
        sv_tell(wr, "block_fail MailError");
        gate = &w->gate;
    } else {
        sv_tell(wr, "fail MailError");
    }
    assert_eventually(ts_gate_wait_for_waiter(gate, TS_WAIT_S), "the restart to be held");
    send_seq(wr, BEFORE, BEFORE + DURING);
    ts_gate_open(gate);
    send_seq(wr, BEFORE + DURING, TOTAL); /* races with the rest of the restart */

    if (!ts_wait_until(seq_complete, w, TS_WAIT_S)) {
        ts_rec_dump(w->rec, "events");
        fail_msg("%lld of %d messages handled", (long long)atomic_load(&w->nseq), TOTAL);
    }
    for (int i = 0; i < TOTAL; i++) {
        if (w->seq[i] != i) {
            fail_msg("message %d handled in place %d (order broken)", (int)w->seq[i], i);
        }
        int64_t gen = i < BEFORE ? 1 : 2;
        if (w->seq_gen[i] != gen) {
            fail_msg("seq %d handled by incarnation %lld, expected %lld", i,
                     (long long)w->seq_gen[i], (long long)gen);
        }
    }
    assert_int_equal(ac_dead_letter_count(w->sys), dl_before);
    assert_int_equal(sv_count(w, "worker", "saw fail MailError"), 1);
    assert_int_equal(atomic_load(&worker->inits), 2);
    assert_int_equal(atomic_load(&worker->nrefs), 1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_mailbox_kept_handler_slow(void **state)
{
    check_mailbox_kept(state, HOLD_HANDLER);
}

static void test_mailbox_kept_pre_restart_slow(void **state)
{
    check_mailbox_kept(state, HOLD_PRE_RESTART);
}

static void test_mailbox_kept_post_restart_slow(void **state)
{
    check_mailbox_kept(state, HOLD_POST_RESTART);
}

static void test_mailbox_kept_child_slow_to_stop(void **state)
{
    check_mailbox_kept(state, HOLD_CHILD_STOP);
}

/* The default post_restart calls pre_start, which spawns the children
 * again: the old ones were stopped (post_stop) before it, the new ones
 * have the same names and paths and different refs. */
static void test_children_recreated(void **state)
{
    ts_fixture *fx = *state;
    sv_world *w = sv_world_new(fx, "sv_children", false);
    sv_node *worker = sv_node_add(w, "worker", &sv_plain_def, NULL, NULL);
    sv_node *c1 = sv_node_add(w, "c1", &sv_plain_def, NULL, worker);
    sv_node *c2 = sv_node_add(w, "c2", &sv_plain_def, NULL, worker);
    ac_ref *wr = sv_spawn(worker);
    sv_wait_spawned(c1, 1);
    sv_wait_spawned(c2, 1);
    sv_wait_event(w, "c1 pre_start", 1);
    sv_wait_event(w, "c2 pre_start", 1);

    sv_tell(wr, "probe_children");
    sv_tell(wr, "fail ChildError");
    sv_tell(wr, "probe_children");
    sv_tell(wr, "children");
    sv_wait_event(w, "worker children 2", 1);
    sv_wait_event(w, "c1 pre_start", 2);
    sv_wait_event(w, "c2 pre_start", 2);

    static const char *const worker_events[] = {
        "init zeroed", "pre_start", "child c1 first same_path", "child c2 first same_path",
        "saw fail ChildError", "post_stop", "init zeroed", "pre_start",
        "child c1 new same_path", "child c2 new same_path", "children 2", NULL};
    sv_assert_events(w, "worker", worker_events);
    static const char *const child_events[] = {"init zeroed", "pre_start", "post_stop",
                                               "init zeroed", "pre_start", NULL};
    sv_assert_events(w, "c1", child_events);
    sv_assert_events(w, "c2", child_events);
    long worker_restart = sv_index_nth(w, "worker pre_start", 2);
    assert_true(sv_index_nth(w, "worker post_stop", 1) < sv_index_nth(w, "c1 post_stop", 1));
    assert_true(sv_index_nth(w, "c1 post_stop", 1) < worker_restart);
    assert_true(sv_index_nth(w, "c2 post_stop", 1) < worker_restart);

    assert_int_equal(atomic_load(&c1->nrefs), 2);
    ac_ref *old_c1 = sv_ref_at(c1, 0), *new_c1 = sv_ref_at(c1, 1);
    assert_ptr_not_equal(old_c1, new_c1);
    assert_ptr_not_equal(sv_ref_at(c2, 0), sv_ref_at(c2, 1));
    assert_string_equal(ac_ref_path(old_c1), "actorc://sv_children/user/worker/c1");
    assert_string_equal(ac_ref_path(new_c1), "actorc://sv_children/user/worker/c1");

    /* The old child is gone for good; the new one works. */
    uint64_t dl_before = ac_dead_letter_count(w->sys);
    sv_tell(old_c1, "inc");
    assert_eventually(ts_wait_dead_letters(w->sys, dl_before + 1, TS_WAIT_S),
                      "a message to the old child to become a dead letter");
    sv_tell(new_c1, "inc");
    sv_wait_event(w, "c1 recv 1", 1);
    assert_int_equal(sv_count(w, "c1", "recv 1"), 1);

    sv_world_release_refs(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_mailbox_kept_handler_slow),
        TS_UNIT(test_mailbox_kept_pre_restart_slow),
        TS_UNIT(test_mailbox_kept_post_restart_slow),
        TS_UNIT(test_mailbox_kept_child_slow_to_stop),
        TS_UNIT(test_children_recreated),
    };
    return cmocka_run_group_tests_name("supervision.mailbox", tests, NULL, NULL);
}
