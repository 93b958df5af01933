/*
 * Stopping and restarting the pool: post_stop fails every open scatter at
 * once (not at its deadline), and so does a restart; after a restart the
 * pool scatters to all of its new routees, whatever stale Terminated
 * notices of the old ones arrive.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

#define OPEN_SCATTERS 1000

/* 1,000 open scatters (silent routees, 4,500 ms deadline, real clock):
 * stopping the router answers all 1,000 callers with the "stopped"
 * AggregateError within well under a second. */
static void test_stop_fails_every_open_scatter_at_once(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-stop", false);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_future **f = calloc(OPEN_SCATTERS, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < OPEN_SCATTERS; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        f[i] = ac_ask(router, sg_key_new(key, i), 10000);
        assert_non_null(f[i]);
    }
    /* every scatter is open once every routee has seen every request */
    sg_wait_seen_all(d, 3, OPEN_SCATTERS);
    for (int i = 0; i < OPEN_SCATTERS; i++) {
        assert_false(ac_future_poll(f[i], NULL));
    }

    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s stopped while the scatter was still open",
             ac_ref_path(router));
    double t0 = ts_now();
    assert_status(ac_stop(router), AC_OK);
    for (int i = 0; i < OPEN_SCATTERS; i++) {
        ac_answer a;
        ac_status st = sg_wait_future_until(f[i], &a, t0 + TS_WAIT_S);
        sg_assert_aggregate(st, &a, want, 0);
        ac_answer_release(&a);
    }
    double elapsed = ts_now() - t0;
    print_message("%d open scatters answered %.1f ms after the stop\n", OPEN_SCATTERS,
                  elapsed * 1000);
    if (elapsed >= 1.0) {
        fail_msg("answering %d open scatters took %.3f s after the stop", OPEN_SCATTERS, elapsed);
    }
    for (int i = 0; i < OPEN_SCATTERS; i++) {
        ac_future_release(f[i]);
    }
    free(f);
    ac_ref_release(router);
}

/* routee-1 fails with AC_ESCALATE as the routees' directive: the router
 * fails, its parent (default strategy) restarts it, its open scatters are
 * answered with "stopped" at once (the manual clock stands still), and the
 * router then works again with new routees — each of which sees the next
 * message, though the old routees' Terminated notices reach the restarted
 * router. */
static void test_restart_fails_open_scatters_and_pool_works_again(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-restart", true);
    static const ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    d->routee_sup = &escalate;
    d->size = 3;
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *parent = ts_spawn(d->sys, &sg_parent_def, d, "parent");
    assert_non_null(parent);
    for (int k = 1; k <= 3; k++) {
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "the first routees");
    }
    ac_ref *router = atomic_load(&d->router);
    assert_non_null(router);
    assert_string_equal(ac_ref_path(router), "actorc://sg-restart/user/parent/replicas");

    enum { OPEN = 10 };
    ac_future *f[OPEN];
    for (int i = 0; i < OPEN; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        f[i] = ac_ask(router, sg_key_new(key, i), 10000);
        assert_non_null(f[i]);
    }
    sg_wait_seen_all(d, 3, OPEN);
    sg_assert_pending(f[0], "before the failure");

    assert_status(ac_tell(atomic_load(&d->refs[1][0]), sg_key_new(SG_BOOM, 0), NULL), AC_OK);

    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s stopped while the scatter was still open",
             ac_ref_path(router));
    double end = ts_now() + TS_WAIT_S;
    for (int i = 0; i < OPEN; i++) {
        ac_answer a;
        ac_status st = sg_wait_future_until(f[i], &a, end);
        sg_assert_aggregate(st, &a, want, 0);
        ac_answer_release(&a);
        ac_future_release(f[i]);
    }
    assert_int_equal(ac_clock_now_ms(d->sys), 0);

    /* the router failed (escalation) and was restarted with new routees */
    for (int k = 1; k <= 3; k++) {
        assert_eventually(ts_wait_ge(&d->starts[k], 2, TS_WAIT_S), "the new routees");
        ac_ref *old = atomic_load(&d->refs[k][0]), *now = atomic_load(&d->refs[k][1]);
        assert_true(old != now);
        assert_string_equal(ac_ref_path(old), ac_ref_path(now));
    }
    assert_ptr_equal(atomic_load(&d->router), router); /* restarted, not respawned */
    bool router_failed = false;
    ts_log_capture *log = ts_fx_log(fx);
    for (size_t i = 0; i < ts_log_count(log); i++) {
        ts_log_line l;
        if (ts_log_get(log, i, &l) && l.level == AC_LOG_ERROR && l.path != NULL &&
            strcmp(l.path, ac_ref_path(router)) == 0) {
            router_failed = true;
        }
        ts_log_line_clear(&l);
    }
    if (!router_failed) {
        ts_log_dump(log, "log");
        fail_msg("no error line for the router's failure");
    }

    /* it works again, and every new routee sees each next message */
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_ECHO, 0);
    }
    for (int round = 1; round <= 3; round++) {
        char key[32];
        snprintf(key, sizeof key, "after-%d", round);
        ac_future *g = ac_ask(router, sg_key_new(key, round), 10000);
        ac_answer a;
        ac_status st = sg_wait_future(g, &a);
        int k = sg_routee_index(a.sender);
        if (k < 1 || k > 3) {
            char *e = ac_error_to_string(a.error);
            fail_msg("round %d after the restart: %s %s", round, ac_status_name(st),
                     e ? e : "");
        }
        sg_assert_reply_from(d, st, &a, k, 1, key);
        ac_answer_release(&a);
        ac_future_release(g);
        for (int j = 1; j <= 3; j++) {
            if (!ts_wait_ge(&d->seen_gen[j][1], round, TS_WAIT_S)) {
                fail_msg("round %d: new routee-%d saw %lld messages", round, j,
                         (long long)atomic_load(&d->seen_gen[j][1]));
            }
        }
    }
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(atomic_load(&d->seen_gen[k][0]), OPEN);
        assert_int_equal(atomic_load(&d->seen_gen[k][1]), 3);
        assert_int_equal(atomic_load(&d->starts[k]), 2);
    }
    sg_assert_routees_ok(d);
    ac_ref_release(parent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_stop_fails_every_open_scatter_at_once),
        TS_UNIT(test_restart_fails_open_scatters_and_pool_works_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
