/*
 * Opt-in loser cancellation. With cancel_losers, once a message has been
 * answered, its requests still queued at routees are dropped unhandled
 * (and counted), and a routee still working on one sees that nobody waits
 * (ac_request_cancelled, ac_reply_cancelled). Without it, nothing
 * changes: every routee handles every request. Requests that do not come
 * from such a router (a plain ask to a routee, even one that timed out)
 * are never dropped.
 *
 * Copies are made to queue by plugging a routee: a direct ask that blocks
 * its handler at a gate until the test opens it.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

/* Plug routees `from`..`to` with a blocking request each. */
static void plug(hg_data *d, int from, int to, ac_future **plugs)
{
    for (int k = from; k <= to; k++) {
        atomic_store(&d->block[k], 1);
        plugs[k] = ac_ask(atomic_load(&d->self[k]), ac_msg_str_new("plug"), HG_WAIT_MS);
        assert_non_null(plugs[k]);
        assert_eventually(ts_wait_ge(&d->blocked[k], 1, TS_WAIT_S), "the plug to block");
        atomic_store(&d->block[k], 0);
    }
}

static void unplug(hg_data *d, int from, int to, ac_future **plugs)
{
    ts_gate_open(&d->gate);
    for (int k = from; k <= to; k++) {
        ac_answer a;
        assert_status(hg_wait(plugs[k], &a), AC_OK);
        ac_answer_release(&a);
        ac_future_release(plugs[k]);
    }
}

static void scatter_behind_plugs(void **state, const char *name, bool cancel)
{
    hg_data *d = hg_setup(*state, name, false, 4);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    ac_scatter_gather_options o = {.timeout_ms = 5000, .cancel_losers = cancel};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(
        d, ac_router_scatter_gather_first_completed(3, &hg_routee_def, &o, &ro), 3);
    size_t base = ac_timers_armed(d->sys);
    ac_future *plugs[4] = {0};
    plug(d, 2, 3, plugs);
    /* and a plain ask queued behind the plug of routee-2, which times out */
    ac_future *plain = ac_ask(atomic_load(&d->self[2]), ac_msg_str_new("plain"), 1);
    ac_answer a;
    assert_status(hg_wait(plain, &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_future_release(plain);

    ac_future *f = hg_ask(d, "k", 0);
    hg_assert_reply(hg_wait(f, &a), &a, d, 1, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    unplug(d, 2, 3, plugs);
    hg_barrier(d, 3);

    const char *sg[] = {"scatter-gather"};
    long long copies = cancel ? 0 : 1; /* the scatter's request, handled or not */
    assert_int_equal(atomic_load(&d->seen[2]), 2 + copies); /* plug, plain ask */
    assert_int_equal(atomic_load(&d->seen[3]), 1 + copies);
    assert_int_equal(hg_counter(d, "router_losers_cancelled_total", sg, 1), cancel ? 2 : 0);
    assert_int_equal(atomic_load(&d->cancelled_in_receive[2]), 0);
    /* the skipped copies settled their slots: nothing waits for 5 s */
    if (cancel) {
        assert_int_equal(ac_timers_armed(d->sys), base);
        hg_wait_outcomes(d, "scatter-gather", 3, 3);
        assert_int_equal(hg_outcome(d, "scatter-gather", 1, "win"), 1);
        assert_int_equal(hg_outcome(d, "scatter-gather", 2, "loss"), 1);
        assert_int_equal(hg_outcome(d, "scatter-gather", 3, "loss"), 1);
    }
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(router);
}

static void test_queued_copies_are_skipped_when_opted_in(void **state)
{
    scatter_behind_plugs(state, "hg-cancel", true);
}

static void test_nothing_changes_without_opting_in(void **state)
{
    scatter_behind_plugs(state, "hg-nocancel", false);
}

/* A hedged router: routee-1 is mid-request when routee-2's hedge wins.
 * With cancel_losers it learns so, from its context and from the reply
 * target it kept; without, it does not. */
static void working_loser(void **state, const char *name, bool cancel)
{
    hg_data *d = hg_setup(*state, name, false, 4);
    hg_set(d, 1, 0, false);
    hg_set(d, 2, 0, false);
    atomic_store(&d->block[1], 1);
    atomic_store(&d->keep[1], 1);
    ac_hedged_options o = {.timeout_ms = 5000, .delay_us = 2000, .cancel_losers = cancel};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, &o, &ro), 2);
    ac_future *f = hg_ask(d, "k", 0);
    assert_eventually(ts_wait_ge(&d->blocked[1], 1, TS_WAIT_S), "routee-1 at work");
    ac_answer a;
    hg_assert_reply(hg_wait(f, &a), &a, d, 2, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    ts_gate_open(&d->gate);
    assert_eventually(ts_wait_ge(&d->seen[1], 1, TS_WAIT_S), "routee-1 to finish");
    assert_int_equal(atomic_load(&d->cancelled_in_receive[1]), cancel ? 1 : 0);
    ac_ref *kept = atomic_exchange(&d->kept[1], NULL);
    assert_non_null(kept);
    assert_int_equal(ac_reply_cancelled(kept), cancel);
    ac_ref_release(kept);
    assert_false(ac_reply_cancelled(NULL));
    assert_false(ac_reply_cancelled(router)); /* an actor: always wanted */
    ac_ref_release(router);
}

static void test_a_working_loser_learns_it_lost(void **state)
{
    working_loser(state, "hg-working", true);
}

static void test_a_working_loser_is_not_told_without_opting_in(void **state)
{
    working_loser(state, "hg-working-no", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_queued_copies_are_skipped_when_opted_in),
        TS_UNIT(test_nothing_changes_without_opting_in),
        TS_UNIT(test_a_working_loser_learns_it_lost),
        TS_UNIT(test_a_working_loser_is_not_told_without_opting_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
