/*
 * Smallest-mailbox pools: work steers around a busy routee; an idle pool
 * rotates ties instead of pinning routee-1; a stopped routee is never
 * chosen, not even before it is pruned.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

static ac_ref *spawn_sm(ac_system *sys, rt_pool *p, int n)
{
    ac_routee_options ro = {.user_data = p};
    ac_ref *router = rt_spawn(sys, ac_router_smallest_mailbox(n, &rt_routee_def, &ro), "pool");
    assert_non_null(router);
    return router;
}

/* routee-2 sleeps 50 ms per message. Messages are sent one at a time, each
 * once the previous one has begun to be handled: whenever routee-2 is busy,
 * an idle routee has a smaller mailbox. */
#define SLOW_MSGS 200

static void test_steers_around_slow_routee(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    p->slow = 2;
    p->slow_ms = 50;
    ac_system *sys = ts_fx_system(fx, "sm_slow", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_sm(sys, p, 4);

    for (int i = 0; i < SLOW_MSGS; i++) {
        assert_true(rt_tell_ints(router, i, 1));
        /* Bounded by 50 ms per message queued at the slow routee. */
        assert_eventually(rt_wait_arrived(p, i + 1, TS_WAIT_S), "message taken up");
    }
    assert_eventually(rt_wait_total(p, SLOW_MSGS, TS_WAIT_S), "every message handled");

    long long slow = rt_got(p, 2);
    /* Typically 1-5: one each time the slow routee is idle again. */
    if (slow > SLOW_MSGS / 10) {
        fail_msg("the slow routee got %lld of %d messages (1: %lld, 3: %lld, 4: %lld)", slow,
                 SLOW_MSGS, rt_got(p, 1), rt_got(p, 3), rt_got(p, 4));
    }
    for (int k = 1; k <= 4; k++) {
        if (k != 2 && rt_got(p, k) < SLOW_MSGS / 10) {
            fail_msg("routee-%d got only %lld of %d messages", k, rt_got(p, k), SLOW_MSGS);
        }
    }
    assert_int_equal(rt_total(p), SLOW_MSGS);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_int_equal(rt_bad(p, NULL, 0), 0);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Each message handled before the next is sent: every mailbox is empty
 * each time, and the ties rotate over the whole pool. A routee counts as
 * busy until its turn has ended, which may take a while when its worker
 * thread is preempted; the test gives each turn a millisecond to end, and
 * the bound leaves room for the odd longer preemption. */
#define IDLE_MSGS 80

static void test_idle_pool_rotates(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sm_idle", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_sm(sys, p, 4);

    for (int i = 0; i < IDLE_MSGS; i++) {
        assert_true(rt_tell_ints(router, i, 1));
        assert_eventually(rt_wait_total(p, i + 1, TS_WAIT_S), "message handled");
        ts_sleep_ms(1);
    }
    /* 20 each in practice. */
    for (int k = 1; k <= 4; k++) {
        if (rt_got(p, k) < IDLE_MSGS / 8) {
            fail_msg("routee-%d got %lld of %d (1: %lld, 2: %lld, 3: %lld, 4: %lld)", k,
                     rt_got(p, k), IDLE_MSGS, rt_got(p, 1), rt_got(p, 2), rt_got(p, 3),
                     rt_got(p, 4));
        }
    }
    assert_int_equal(rt_total(p), IDLE_MSGS);
    assert_int_equal(rt_bad(p, NULL, 0), 0);

    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Once routee-2 has stopped, no message goes to it (it would be a dead
 * letter), whether or not the router has pruned it yet (which of the two
 * holds when the burst starts is up to the scheduler). */
static void test_stopped_routee_never_chosen(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "sm_stopped", NULL);
    assert_non_null(sys);
    ac_ref *router = spawn_sm(sys, p, 4);

    ac_ref *second = NULL;
    for (int i = 0; i < 100 && second == NULL; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        if (rt_routee_number(ac_ref_name(who)) == 2) {
            second = who;
        } else {
            ac_ref_release(who);
        }
    }
    assert_non_null(second);
    assert_status(ac_stop(second), AC_OK);
    /* An ask straight to it fails once it has stopped (the request is a
     * dead letter): after that it is known dead. */
    ac_answer a;
    assert_status(ac_ask_wait(second, rt_ping(), RT_ASK_MS, &a), AC_EDEAD);
    ac_answer_release(&a);
    assert_int_equal(rt_stopped(p, 2), 1);

    uint64_t dl = ac_dead_letter_count(sys);
    assert_true(rt_tell_ints(router, 0, 400));
    assert_eventually(rt_wait_total(p, 400, TS_WAIT_S), "400 messages handled");
    assert_int_equal(rt_got(p, 2), 0);
    assert_int_equal(rt_got(p, 1) + rt_got(p, 3) + rt_got(p, 4), 400);
    assert_int_equal(ac_dead_letter_count(sys), dl);

    /* And one at a time, when every mailbox is empty and ties rotate over
     * the pool (with routee-2 in it until the router has pruned it). */
    for (int i = 0; i < 30; i++) {
        assert_true(rt_tell_ints(router, 1000 + i, 1));
        assert_eventually(rt_wait_total(p, 401 + i, TS_WAIT_S), "message handled");
    }
    assert_int_equal(rt_got(p, 2), 0);
    for (int k = 1; k <= 4; k++) {
        if (k != 2) {
            assert_true(rt_got(p, k) > 0);
        }
    }
    assert_int_equal(ac_dead_letter_count(sys), dl);
    assert_int_equal(rt_bad(p, NULL, 0), 0);

    ac_ref_release(second);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_steers_around_slow_routee),
        TS_UNIT(test_idle_pool_rotates),
        TS_UNIT(test_stopped_routee_never_chosen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
