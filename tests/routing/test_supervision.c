/*
 * Supervision of routees (ac_routee_options.supervisor): AC_STOP stops and
 * prunes a failing routee; the default restarts it in place (pre_start runs
 * again) and keeps it in the pool; a decider sees the cause and the child;
 * AC_ESCALATE fails the router itself, whose restart by the guardian
 * spawns a fresh pool. The routee user data reaches every routee.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

static void assert_no_bad(rt_pool *p)
{
    char what[160];
    if (rt_bad(p, what, sizeof what) != 0) {
        fail_msg("routees saw something wrong: %s", what);
    }
}

static ac_ref *spawn_pool(ac_system *sys, rt_pool *p, int n, const ac_supervisor_strategy *sup)
{
    ac_routee_options ro = {.user_data = p, .supervisor = sup};
    ac_ref *router = rt_spawn(sys, ac_router_round_robin(n, &rt_routee_def, &ro), "pool");
    assert_non_null(router);
    return router;
}

/* The first n asks through a fresh round-robin pool reach routee-1..n:
 * their refs (the caller's). */
static void first_refs(ac_ref *router, int n, ac_ref **out)
{
    for (int k = 1; k <= n; k++) {
        ac_status st;
        out[k - 1] = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_int_equal(rt_routee_number(ac_ref_name(out[k - 1])), k);
    }
}

static void release_all(ac_ref **refs, int n)
{
    for (int i = 0; i < n; i++) {
        ac_ref_release(refs[i]);
    }
}

static void test_stop_directive_prunes(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sup_stop", NULL);
    assert_non_null(sys);
    ac_supervisor_strategy stop = {.directive = AC_STOP};
    ac_ref *router = spawn_pool(sys, p, 3, &stop);
    ac_ref *refs[3];
    first_refs(router, 3, refs);

    assert_status(ac_tell(refs[1], rt_fail(), NULL), AC_OK);
    assert_eventually(rt_wait_stopped(p, 2, 1, TS_WAIT_S), "routee-2 stopped");
    assert_true(rt_ask_until_run(router, 3, 200) > 0);

    int ids[2] = {1, 3};
    long long before[2] = {rt_got(p, 1), rt_got(p, 3)};
    assert_true(rt_tell_ints(router, 0, 200));
    assert_eventually(rt_wait_total(p, 200, TS_WAIT_S), "200 messages handled");
    char why[160];
    if (!rt_check_round_robin(p, ids, 2, before, 100, why, sizeof why)) {
        fail_msg("after routee-2 was stopped: %s", why);
    }
    assert_int_equal(rt_got(p, 2), 0);
    assert_int_equal(rt_started(p, 2), 1); /* not restarted */
    assert_int_equal(rt_stopped(p, 2), 1);
    assert_int_equal(rt_started(p, 1), 1);
    assert_int_equal(rt_started(p, 3), 1);
    assert_no_bad(p);

    release_all(refs, 3);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_default_restarts_in_place(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sup_default", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_pool(sys, p, 3, NULL);
    ac_ref *refs[3];
    first_refs(router, 3, refs);

    assert_status(ac_tell(refs[1], rt_fail(), NULL), AC_OK);
    /* Restarted: post_stop (the default pre_restart), then pre_start (the
     * default post_restart). */
    assert_eventually(rt_wait_started(p, 2, 2, TS_WAIT_S), "routee-2 restarted");
    assert_int_equal(rt_stopped(p, 2), 1);

    /* Still in the pool, as the same actor: 3 x 100, exact rotation. */
    int ids[3] = {1, 2, 3};
    long long before[3] = {rt_got(p, 1), rt_got(p, 2), rt_got(p, 3)};
    assert_true(rt_tell_ints(router, 0, 300));
    assert_eventually(rt_wait_total(p, 300, TS_WAIT_S), "300 messages handled");
    char why[160];
    if (!rt_check_round_robin(p, ids, 3, before, 100, why, sizeof why)) {
        fail_msg("after routee-2 restarted: %s", why);
    }
    bool found = false;
    for (int i = 0; i < 3; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        if (who == refs[1]) {
            found = true;
        }
        ac_ref_release(who);
    }
    assert_true(found);
    assert_int_equal(rt_started(p, 1), 1);
    assert_int_equal(rt_started(p, 3), 1);
    assert_int_equal(rt_started(p, 2), 2);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_no_bad(p);

    release_all(refs, 3);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- a decider ---------------------------------------------------------------- */

typedef struct decider_seen {
    pthread_mutex_t mu;
    int calls;
    char cause[64];
    char child[256];
} decider_seen;

static ac_directive resume_decider(const ac_error *cause, ac_ref *child, void *user)
{
    decider_seen *s = user;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    snprintf(s->cause, sizeof s->cause, "%s", ac_error_name(cause));
    snprintf(s->child, sizeof s->child, "%s", ac_ref_name(child));
    pthread_mutex_unlock(&s->mu);
    return AC_RESUME;
}

static void test_decider_resumes(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sup_decider", NULL);
    assert_non_null(sys);
    static decider_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ac_supervisor_strategy sup = {.decider = resume_decider, .decider_user = &seen};
    ac_ref *router = spawn_pool(sys, p, 3, &sup);
    ac_ref *refs[3];
    first_refs(router, 3, refs);

    assert_status(ac_tell(refs[2], rt_fail(), NULL), AC_OK);
    /* Resumed: the next message to it is handled, nothing restarted. */
    assert_true(rt_tell_ints(refs[2], 7, 1));
    assert_eventually(rt_wait_total(p, 1, TS_WAIT_S), "routee-3 carries on");
    assert_int_equal(rt_val(p, 3, 0), 7);
    pthread_mutex_lock(&seen.mu);
    assert_int_equal(seen.calls, 1);
    assert_string_equal(seen.cause, "test.Boom");
    assert_string_equal(seen.child, "routee-3");
    pthread_mutex_unlock(&seen.mu);
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(rt_started(p, k), 1);
        assert_int_equal(rt_stopped(p, k), 0);
    }
    assert_no_bad(p);

    release_all(refs, 3);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- escalation: the router restarts ------------------------------------------ */

static void test_escalate_restarts_router(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sup_escalate", NULL);
    assert_non_null(sys);
    ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    ac_ref *router = spawn_pool(sys, p, 3, &escalate);
    ac_ref *old[3];
    first_refs(router, 3, old);

    /* routee-1 fails; the router fails with it and the guardian restarts
     * the router: the old routees stop and routee-1..3 are spawned anew. */
    assert_status(ac_tell(old[0], rt_fail(), NULL), AC_OK);
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_started(p, k, 2, TS_WAIT_S), "a fresh routee");
        assert_eventually(rt_wait_stopped(p, k, 1, TS_WAIT_S), "the old routee stopped");
    }

    /* Three asks reach three fresh routees with the same names. */
    bool seen[4] = {false, false, false, false};
    for (int i = 0; i < 3; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        int k = rt_routee_number(ac_ref_name(who));
        assert_true(k >= 1 && k <= 3);
        assert_false(seen[k]);
        seen[k] = true;
        assert_string_equal(ac_ref_path(who), ac_ref_path(old[k - 1]));
        assert_true(who != old[k - 1]);
        ac_ref_release(who);
    }

    /* The late Terminated of the old routees pruned none of the new ones:
     * the rotation is exact over all three. */
    int ids[3] = {1, 2, 3};
    long long before[3] = {rt_got(p, 1), rt_got(p, 2), rt_got(p, 3)};
    assert_true(rt_tell_ints(router, 0, 300));
    assert_eventually(rt_wait_total(p, 300, TS_WAIT_S), "300 messages handled");
    char why[160];
    if (!rt_check_round_robin(p, ids, 3, before, 100, why, sizeof why)) {
        fail_msg("after the router restarted: %s", why);
    }
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(rt_started(p, k), 2);
        assert_int_equal(rt_stopped(p, k), 1);
    }
    /* The old routees are gone: a message to one is a dead letter,
     * counted at once when the routee has stopped for good, or drained on
     * its worker when it comes while the routee is finishing its stop
     * (post_stop has run, counting it stopped, but it is not dead yet). */
    uint64_t dl = ac_dead_letter_count(sys);
    assert_true(rt_tell_ints(old[1], 1, 1));
    assert_eventually(ts_wait_dead_letters(sys, dl + 1, TS_WAIT_S), "the dead letter");
    assert_int_equal(ac_dead_letter_count(sys), dl + 1);
    assert_no_bad(p);

    release_all(old, 3);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_stop_directive_prunes),
        TS_UNIT(test_default_restarts_in_place),
        TS_UNIT(test_decider_resumes),
        TS_UNIT(test_escalate_restarts_router),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
