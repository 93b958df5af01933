/*
 * Failures: one AggregateError kind whose message names the cause and
 * whose members are in scatter order (routee-1 first) — nobody in time,
 * everybody failed (error replies, or errors and timeouts mixed), no
 * routees left, router stopped mid-scatter. An error reply rejects that
 * routee's ask at once and the scatter moves on; a routee whose handler
 * fails is restarted and its ask times out. An error reply too deep to
 * nest under the aggregate is kept as its name and message.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

static void expect(char *buf, size_t cap, ac_ref *router, const char *tail)
{
    snprintf(buf, cap, "Scatter/gather router %s%s", ac_ref_path(router), tail);
}

/* Member i is an AskTimeoutError about routee-(i+1). */
static void assert_timeout_member(sg_data *d, const ac_error *agg, size_t i)
{
    ac_error *m = ac_error_member(agg, i);
    const char *path = ac_ref_path(atomic_load(&d->refs[i + 1][0]));
    if (!ac_error_is(m, AC_ASK_TIMEOUT_ERROR) || strstr(ac_error_message(m), path) == NULL) {
        fail_msg("member %zu: expected an AskTimeoutError naming %s, got %s: %s", i, path,
                 ac_error_name(m), ac_error_message(m));
    }
}

/* Member i is routee-(i+1)'s own error reply. */
static void assert_routee_member(const ac_error *agg, size_t i, const char *key)
{
    ac_error *m = ac_error_member(agg, i);
    char want[96];
    snprintf(want, sizeof want, "routee-%zu failed on %s", i + 1, key);
    if (!ac_error_is(m, "RouteeError") || strcmp(ac_error_message(m), want) != 0) {
        fail_msg("member %zu: expected RouteeError \"%s\", got %s: %s", i, want, ac_error_name(m),
                 ac_error_message(m));
    }
}

static ac_future *ask_and_wait_seen(sg_data *d, ac_ref *router, const char *key, int size)
{
    long long before[SG_MAX + 1];
    for (int k = 1; k <= size; k++) {
        before[k] = atomic_load(&d->seen[k]);
    }
    ac_future *f = ac_ask(router, sg_key_new(key, 1), 10000);
    assert_non_null(f);
    for (int k = 1; k <= size; k++) {
        sg_wait_seen(d, k, before[k] + 1);
    }
    return f;
}

/* Nobody replies in time: "none of 3 routees replied within 250ms", three
 * AskTimeoutErrors in routee order. */
static void test_none_replied_in_time(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-none", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_future *f = ask_and_wait_seen(d, router, "k", 3);
    assert_status(ac_clock_advance(d->sys, 250), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": none of 3 routees replied within 250ms");
    sg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_timeout_member(d, a.error, i);
    }
    assert_true(ac_error_all_timeouts(a.error));
    assert_null(a.reply);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* Every routee replies with an error, in reverse order (routee-3 first):
 * "all 3 routees failed" as soon as the last one did, members in routee
 * order, long before the deadline. */
static void test_all_failed_members_in_routee_order(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-allfail", true);
    sg_set(d, 1, SG_ERROR_LATER, 20);
    sg_set(d, 2, SG_ERROR_LATER, 10);
    sg_set(d, 3, SG_ERROR, 0);
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_future *f = ask_and_wait_seen(d, router, "k", 3);

    assert_eventually(ts_wait_ge(&d->replies[3], 1, TS_WAIT_S), "routee-3's error");
    sg_assert_pending(f, "after routee-3's error");
    assert_status(ac_clock_advance(d->sys, 10), AC_OK);
    assert_eventually(ts_wait_ge(&d->replies[2], 1, TS_WAIT_S), "routee-2's error");
    sg_assert_pending(f, "after routee-2's error");
    assert_status(ac_clock_advance(d->sys, 10), AC_OK); /* now 20 ms: routee-1 */

    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    assert_int_equal(ac_clock_now_ms(d->sys), 20);
    char want[256];
    expect(want, sizeof want, router, ": all 3 routees failed");
    sg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_routee_member(a.error, i, "k");
    }
    assert_false(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* Errors and timeouts mixed: "all 3 routees failed" at the deadline,
 * members [timeout, routee-2's error, timeout]; ac_error_all_timeouts is
 * false for it. */
static void test_mixed_errors_and_timeouts(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-mixed", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_ERROR, 0);
    sg_set(d, 3, SG_SILENT, 0);
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_future *f = ask_and_wait_seen(d, router, "mix", 3);
    assert_eventually(ts_wait_ge(&d->replies[2], 1, TS_WAIT_S), "routee-2's error");
    assert_status(ac_clock_advance(d->sys, 249), AC_OK);
    sg_assert_pending(f, "at 249 ms");
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": all 3 routees failed");
    sg_assert_aggregate(st, &a, want, 3);
    assert_timeout_member(d, a.error, 0);
    assert_routee_member(a.error, 1, "mix");
    assert_timeout_member(d, a.error, 2);
    assert_false(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* Wait until `ref` has stopped: an ask to it then fails at once. */
static void wait_dead(ac_ref *ref)
{
    double end = ts_now() + TS_WAIT_S;
    for (;;) {
        ac_answer a;
        ac_status st = ac_ask_wait(ref, sg_key_new("ping", 0), SG_WAIT_MS, &a);
        ac_answer_release(&a);
        if (st == AC_EDEAD) {
            return;
        }
        if (ts_now() > end) {
            fail_msg("%s did not stop", ac_ref_path(ref));
        }
        ts_sleep_ms(1);
    }
}

/* Every routee stopped: "has no routees left to scatter to", no members. */
static void test_no_routees_left(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-empty", true);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    for (int k = 1; k <= 3; k++) {
        assert_status(ac_stop(atomic_load(&d->refs[k][0])), AC_OK);
    }
    for (int k = 1; k <= 3; k++) {
        wait_dead(atomic_load(&d->refs[k][0]));
    }
    /* the router has handled every Terminated once it lists no routees */
    double pruned_by = ts_now() + TS_WAIT_S;
    for (;;) {
        ac_answer g;
        assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), SG_WAIT_MS, &g), AC_OK);
        size_t left = ac_routees_count(g.reply);
        ac_answer_release(&g);
        if (left == 0) {
            break;
        }
        if (ts_now() > pruned_by) {
            fail_msg("the router still lists %zu routees", left);
        }
        ts_sleep_ms(1);
    }
    char want[256];
    expect(want, sizeof want, router, " has no routees left to scatter to");
    /* pruned: the very next scatter finds nobody to scatter to */
    ac_future *first = ac_ask(router, sg_key_new("k", 0), 10000);
    ac_answer fa;
    ac_status fst = sg_wait_future(first, &fa);
    sg_assert_aggregate(fst, &fa, want, 0);
    assert_false(ac_error_all_timeouts(fa.error));
    ac_answer_release(&fa);
    ac_future_release(first);
    /* and it stays so; the router itself keeps running */
    ac_future *f = ac_ask(router, sg_key_new("again", 0), 10000);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_aggregate(st, &a, want, 0);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

static void blocker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ts_gate_wait(ac_ctx_user_data(ctx), TS_WAIT_S);
}

static const ac_actor_def blocker_def = {.name = "Blocker", .receive = blocker_receive};

/* Every routee has stopped but the router has not handled their
 * Terminated notices yet (one worker, held by a blocked actor while the
 * routees are stopped and the ask is queued, so the ask is ahead of the
 * notices in the router's mailbox): the scatter reaches three stopped
 * routees, whose asks fail at once, so the caller gets "all 3 routees
 * failed" with an ActorStoppedError per routee (or, had the notices come
 * first, "no routees left"). Either way an answer, and no memory error. */
static void test_scatter_to_stopped_routees_not_yet_pruned(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup_workers(fx, "sg-unpruned", true, 1);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ts_gate gate;
    ts_gate_init(&gate);
    ac_ref *blocker = ts_spawn(d->sys, &blocker_def, &gate, "blocker");
    assert_non_null(blocker);
    assert_status(ac_tell(blocker, ac_msg_int64_new(1), NULL), AC_OK);
    assert_eventually(ts_gate_wait_for_waiter(&gate, TS_WAIT_S), "the blocker");

    for (int k = 1; k <= 3; k++) {
        assert_status(ac_stop(atomic_load(&d->refs[k][0])), AC_OK);
    }
    ac_future *f = ac_ask(router, sg_key_new("k", 1), 10000);
    assert_non_null(f);
    ts_gate_open(&gate);

    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char all_failed[256], empty[256];
    expect(all_failed, sizeof all_failed, router, ": all 3 routees failed");
    expect(empty, sizeof empty, router, " has no routees left to scatter to");
    if (a.error != NULL && strcmp(ac_error_message(a.error), empty) == 0) {
        print_message("the Terminated notices came first: no routees left\n");
        sg_assert_aggregate(st, &a, empty, 0);
    } else {
        sg_assert_aggregate(st, &a, all_failed, 3);
        for (size_t i = 0; i < 3; i++) {
            ac_error *m = ac_error_member(a.error, i);
            const char *path = ac_ref_path(atomic_load(&d->refs[i + 1][0]));
            if (!ac_error_is(m, AC_ACTOR_STOPPED_ERROR) ||
                strstr(ac_error_message(m), path) == NULL) {
                fail_msg("member %zu: expected an ActorStoppedError naming %s, got %s: %s", i,
                         path, ac_error_name(m), ac_error_message(m));
            }
        }
        assert_false(ac_error_all_timeouts(a.error));
    }
    ac_answer_release(&a);
    ac_future_release(f);

    /* then the notices are handled: nothing left */
    f = ac_ask(router, sg_key_new("again", 2), 10000);
    st = sg_wait_future(f, &a);
    sg_assert_aggregate(st, &a, empty, 0);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(blocker);
    ac_ref_release(router);
}

/* The router stops while a scatter is open: "stopped while the scatter was
 * still open", no members, with the clock standing still. */
static void test_router_stopped_mid_scatter(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-stopped", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_future *f = ask_and_wait_seen(d, router, "k", 3);
    sg_assert_pending(f, "before the stop");
    assert_status(ac_stop(router), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    char want[256];
    expect(want, sizeof want, router, " stopped while the scatter was still open");
    sg_assert_aggregate(st, &a, want, 0);
    assert_false(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* routee-1 errors after ~1 ms, routee-2 answers after ~20 ms, routee-3
 * never: the caller gets routee-2's answer at about 20 ms, not at the
 * 5,000 ms deadline (real clock). */
static void test_error_reply_moves_on_real_clock(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-moveon", false);
    sg_set(d, 1, SG_ERROR_LATER, 1);
    sg_set(d, 2, SG_LATER, 20);
    sg_set(d, 3, SG_SILENT, 0);
    ac_scatter_gather_options o = {.timeout_ms = 5000};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    double t0 = ts_now();
    ac_answer a;
    ac_status st = ac_ask_wait(router, sg_key_new("k", 1), 10000, &a);
    double elapsed = ts_now() - t0;
    print_message("routee-2's answer after %.1f ms (deadline 5000 ms)\n", elapsed * 1000);
    sg_assert_reply_from(d, st, &a, 2, 0, "k");
    ac_answer_release(&a);
    if (elapsed >= 2.0) {
        fail_msg("the answer took %.3f s; expected about 20 ms", elapsed);
    }
    assert_eventually(ts_wait_ge(&d->replies[1], 1, TS_WAIT_S), "routee-1's error reply");
    ac_ref_release(router);
}

/* The same on the manual clock, step by step: routee-1's error at 1 ms
 * settles nothing; routee-2's answer at 20 ms does. */
static void test_error_reply_moves_on_manual_clock(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-moveon-m", true);
    sg_set(d, 1, SG_ERROR_LATER, 1);
    sg_set(d, 2, SG_LATER, 20);
    sg_set(d, 3, SG_SILENT, 0);
    ac_scatter_gather_options o = {.timeout_ms = 5000};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_future *f = ask_and_wait_seen(d, router, "k", 3);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    assert_eventually(ts_wait_ge(&d->replies[1], 1, TS_WAIT_S), "routee-1's error reply");
    sg_assert_pending(f, "after routee-1's error");
    assert_status(ac_clock_advance(d->sys, 19), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 2, 0, "k");
    assert_int_equal(ac_clock_now_ms(d->sys), 20);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* A routee whose handler fails is restarted by its supervisor (its
 * pre_start runs again) and its ask simply times out. */
static void test_failing_routee_restarted_and_times_out(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-fail", true);
    sg_set(d, 1, SG_FAIL, 0);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_SILENT, 0);
    ac_scatter_gather_options o = {.timeout_ms = 250};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    ac_future *f = ask_and_wait_seen(d, router, "k", 3);
    assert_eventually(ts_wait_ge(&d->starts[1], 2, TS_WAIT_S), "routee-1's restart");
    /* the same routee, restarted in place */
    assert_ptr_equal(atomic_load(&d->refs[1][1]), atomic_load(&d->refs[1][0]));
    sg_assert_pending(f, "after routee-1 failed");
    assert_status(ac_clock_advance(d->sys, 249), AC_OK);
    sg_assert_pending(f, "at 249 ms");
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": none of 3 routees replied within 250ms");
    sg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_timeout_member(d, a.error, i);
    }
    assert_true(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    ac_future_release(f);

    /* the restarted routee is still in the pool */
    sg_set(d, 1, SG_ECHO, 0);
    f = ac_ask(router, sg_key_new("next", 2), 10000);
    st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 1, 1, "next");
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(atomic_load(&d->starts[1]), 2);
    ac_ref_release(router);
}

/* A routee replies with an error already nested as deep as errors may:
 * it has no room under the AggregateError, so the aggregate holds a
 * stand-in with its name and message, and the caller still hears "all 3
 * routees failed" (rather than the router refusing to build the answer). */
static void test_error_reply_too_deep_to_aggregate(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-deep", true);
    sg_set(d, 1, SG_ERROR, 0);
    sg_set(d, 2, SG_ERROR_DEEP, 0);
    sg_set(d, 3, SG_ERROR, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_future *f = ac_ask(router, sg_key_new("deep", 1), 10000);
    assert_non_null(f);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": all 3 routees failed");
    sg_assert_aggregate(st, &a, want, 3);
    assert_routee_member(a.error, 0, "deep");
    assert_routee_member(a.error, 2, "deep");
    ac_error *m = ac_error_member(a.error, 1);
    assert_string_equal(ac_error_name(m), "RouteeError");
    assert_non_null(strstr(ac_error_message(m), "routee-2 failed on deep"));
    assert_non_null(strstr(ac_error_message(m), "left out"));
    assert_true(ac_error_depth(a.error) <= AC_ERROR_MAX_DEPTH);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_none_replied_in_time),
        TS_UNIT(test_all_failed_members_in_routee_order),
        TS_UNIT(test_mixed_errors_and_timeouts),
        TS_UNIT(test_no_routees_left),
        TS_UNIT(test_scatter_to_stopped_routees_not_yet_pruned),
        TS_UNIT(test_router_stopped_mid_scatter),
        TS_UNIT(test_error_reply_moves_on_real_clock),
        TS_UNIT(test_error_reply_moves_on_manual_clock),
        TS_UNIT(test_failing_routee_restarted_and_times_out),
        TS_UNIT(test_error_reply_too_deep_to_aggregate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
