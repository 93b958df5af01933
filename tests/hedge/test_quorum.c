/*
 * First-K (quorum) scatter/gather, on the manual clock: the answer comes
 * when the K-th routee succeeds, as one Quorum message holding the K
 * replies with their senders in arrival order, sent by the router; an
 * AggregateError comes as soon as fewer than K routees can still succeed
 * (not at the deadline), its members the failures so far in scatter
 * order; at the deadline, every routee that had not succeeded.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

static ac_ref *quorum_pool(hg_data *d, int size, int k, int64_t timeout_ms)
{
    ac_scatter_gather_options o = {.timeout_ms = timeout_ms, .quorum = k};
    ac_routee_options ro = hg_routee_options(d);
    return hg_spawn(d, ac_router_scatter_gather_first_completed(size, &hg_routee_def, &o, &ro),
                    size);
}

/* Ask the pool of 3, and wait until every routee has scheduled its
 * answer: hg_advance's quiescence counts one request per ask (a hedged
 * router's primary), and a scatter sends three; a routee scheduling after
 * the clock has moved would answer late. */
static ac_future *quorum_ask(hg_data *d, int64_t timeout_ms)
{
    ac_future *f = hg_ask(d, "k", timeout_ms);
    hg_barrier(d, 3);
    return f;
}

static void assert_quorum_entry(hg_data *d, const ac_msg *q, size_t i, int k, const char *key)
{
    char want[64];
    snprintf(want, sizeof want, "routee-%d:%s", k, key);
    assert_string_equal(ac_msg_str(ac_quorum_reply(q, i)), want);
    assert_ptr_equal(ac_quorum_sender(q, i), atomic_load(&d->self[k]));
}

static void three_latencies(hg_data *d, long long a, long long b, long long c)
{
    hg_set(d, 1, a, false);
    hg_set(d, 2, b, false);
    hg_set(d, 3, c, false);
}

/* Replies at 10, 20 and 30 ms: pending at 19, answered at 20 with the
 * first two. */
static void test_two_of_three_answers_on_the_second_success(void **state)
{
    hg_data *d = hg_setup(*state, "hg-q2", true, 0);
    three_latencies(d, 10, 20, 30);
    ac_ref *router = quorum_pool(d, 3, 2, 1000);
    ac_future *f = quorum_ask(d, 0);
    hg_advance(d, 19);
    hg_assert_pending(f, "after one success");
    hg_advance(d, 1);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    assert_null(a.error);
    assert_true(ac_msg_is(a.reply, &ac_msg_type_quorum));
    assert_int_equal(ac_quorum_count(a.reply), 2);
    assert_quorum_entry(d, a.reply, 0, 1, "k");
    assert_quorum_entry(d, a.reply, 1, 2, "k");
    assert_ptr_equal(a.sender, router);
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 10); /* the third, discarded */
    const char *first[] = {"first"};
    assert_int_equal(hg_counter(d, "router_scatter_gather_resolved_total", first, 1), 1);
    ac_ref_release(router);
}

/* Arrival order, not scatter order: routee-3 at 10, routee-2 at 20. */
static void test_replies_in_arrival_order(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qorder", true, 0);
    three_latencies(d, 30, 20, 10);
    ac_ref *router = quorum_pool(d, 3, 2, 1000);
    ac_future *f = quorum_ask(d, 0);
    hg_advance(d, 20);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    assert_int_equal(ac_quorum_count(a.reply), 2);
    assert_quorum_entry(d, a.reply, 0, 3, "k");
    assert_quorum_entry(d, a.reply, 1, 2, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 10);
    ac_ref_release(router);
}

/* routee-2 fails at 5 ms and routee-1 at 10: at 10 the quorum of 2 cannot
 * be reached, and the caller knows then, with both errors in scatter
 * order (routee-3 is still working). */
static void test_fails_as_soon_as_two_have_failed(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qfail", true, 0);
    hg_set(d, 1, 10, true);
    hg_set(d, 2, 5, true);
    hg_set(d, 3, 30, false);
    ac_ref *router = quorum_pool(d, 3, 2, 1000);
    ac_future *f = quorum_ask(d, 0);
    hg_advance(d, 9);
    hg_assert_pending(f, "after one failure");
    hg_advance(d, 1);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: 2 of 3 routees failed; a quorum of 2 can no longer be "
             "reached",
             ac_ref_path(router));
    hg_assert_aggregate(AC_EFAILED, &a, want, 2);
    assert_string_equal(ac_error_message(ac_error_member(a.error, 0)), "routee-1 failed on k");
    assert_string_equal(ac_error_message(ac_error_member(a.error, 1)), "routee-2 failed on k");
    assert_ptr_equal(a.sender, router);
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 20);
    const char *all_failed[] = {"all-failed"};
    assert_int_equal(hg_counter(d, "router_scatter_gather_resolved_total", all_failed, 1), 1);
    ac_ref_release(router);
}

/* One success and two silent routees: at the deadline the quorum fails
 * with both AskTimeoutErrors, an outcome of "timeout". */
static void test_deadline_names_every_routee_that_did_not_succeed(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qdeadline", true, 0);
    three_latencies(d, HG_SILENT, 10, HG_SILENT);
    ac_ref *router = quorum_pool(d, 3, 2, 100);
    size_t base = ac_timers_armed(d->sys);
    ac_future *f = quorum_ask(d, 1000);
    hg_advance(d, 99);
    hg_assert_pending(f, "before the deadline");
    hg_advance(d, 1);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: 2 of 3 routees failed; a quorum of 2 can no longer be "
             "reached",
             ac_ref_path(router));
    hg_assert_aggregate(AC_EFAILED, &a, want, 2);
    assert_true(ac_error_all_timeouts(a.error));
    char m[256];
    snprintf(m, sizeof m, "Ask timed out on %s after 100 ms",
             ac_ref_path(atomic_load(&d->self[3])));
    assert_string_equal(ac_error_message(ac_error_member(a.error, 1)), m);
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_timers_armed(d->sys), base);
    const char *timeout[] = {"timeout"};
    assert_int_equal(hg_counter(d, "router_scatter_gather_resolved_total", timeout, 1), 1);
    ac_ref_release(router);
}

/* All of them (3 of 3): one error fails it at once; a quorum of 1 is the
 * plain first reply, with the winner as sender. */
static void test_all_or_first(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qall", true, 0);
    three_latencies(d, 10, 20, 30);
    hg_set(d, 2, 0, true);
    ac_ref *router = quorum_pool(d, 3, 3, 1000);
    ac_future *f = quorum_ask(d, 0);
    ac_answer a;
    ac_status st = hg_wait(f, &a); /* routee-2's error comes at once */
    char want[256];
    snprintf(want, sizeof want,
             "Scatter/gather router %s: 1 of 3 routees failed; a quorum of 3 can no longer be "
             "reached",
             ac_ref_path(router));
    hg_assert_aggregate(st, &a, want, 1);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 30);
    ac_ref_release(router);
}

static void test_quorum_of_one_is_the_first_reply(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qone", true, 0);
    three_latencies(d, 30, 10, 20);
    ac_ref *router = quorum_pool(d, 3, 1, 1000);
    ac_future *f = quorum_ask(d, 0);
    hg_advance(d, 10);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    hg_assert_reply(AC_OK, &a, d, 2, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    hg_advance(d, 20);
    ac_ref_release(router);
}

/* The Quorum accessors refuse what is not a Quorum, and places beyond it. */
static void test_quorum_accessors(void **state)
{
    (void)state;
    assert_int_equal(ac_quorum_count(NULL), 0);
    assert_last_error(AC_EINVAL);
    ac_msg *s = ac_msg_str_new("x");
    assert_int_equal(ac_quorum_count(s), 0);
    assert_last_error(AC_ETYPE);
    assert_null(ac_quorum_reply(s, 0));
    assert_last_error(AC_ETYPE);
    assert_null(ac_quorum_sender(NULL, 0));
    assert_last_error(AC_EINVAL);
    ac_msg_release(s);
}

static void test_quorum_beyond_range(void **state)
{
    hg_data *d = hg_setup(*state, "hg-qrange", false, 0);
    three_latencies(d, 0, 0, 0);
    ac_ref *router = quorum_pool(d, 3, 2, 1000);
    ac_future *f = quorum_ask(d, 0);
    ac_answer a;
    assert_status(hg_wait(f, &a), AC_OK);
    assert_int_equal(ac_quorum_count(a.reply), 2);
    assert_null(ac_quorum_reply(a.reply, 2));
    assert_last_error(AC_EINVAL);
    assert_non_null(ac_quorum_sender(a.reply, 1));
    assert_status(ac_last_status(), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_two_of_three_answers_on_the_second_success),
        TS_UNIT(test_replies_in_arrival_order),
        TS_UNIT(test_fails_as_soon_as_two_have_failed),
        TS_UNIT(test_deadline_names_every_routee_that_did_not_succeed),
        TS_UNIT(test_all_or_first),
        TS_UNIT(test_quorum_of_one_is_the_first_reply),
        cmocka_unit_test(test_quorum_accessors),
        TS_UNIT(test_quorum_beyond_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
