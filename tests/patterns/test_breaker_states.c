/*
 * The state machine, on the manual clock: consecutive failures open the
 * breaker and a success resets the count; an open breaker refuses at once
 * without reaching the target and says when the next probe is allowed;
 * after the reset timeout one probe closes it or opens it again, with the
 * reset timeout backed off up to its ceiling and jittered within bounds;
 * callbacks and subscribers see every change, in order; the filter keeps
 * "not found" from counting; the gauge and counters follow.
 */
#define _POSIX_C_SOURCE 200809L

#include "bk_support.h"

static ac_breaker *open_breaker(bk_data *d, ac_breaker_options *o)
{
    ac_breaker *b = bk_breaker(d, o);
    bk_set(d, BK_OUTAGE);
    int n = o->max_failures ? o->max_failures : AC_BREAKER_DEFAULT_MAX_FAILURES;
    for (int i = 0; i < n; i++) {
        assert_status(bk_call_st(d, b), AC_EFAILED);
    }
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    return b;
}

static int failures(ac_breaker *b)
{
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    return info.failures;
}

static void test_consecutive_failures_open_and_success_resets(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-count", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 3;
    ac_breaker *b = bk_breaker(d, &o);
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_int_equal(failures(b), 2);
    bk_set(d, BK_ECHO);
    ac_answer a;
    assert_status(bk_call(d, b, &a), AC_OK);
    assert_string_equal(ac_msg_str(a.reply), "x");
    assert_ptr_equal(a.sender, d->server); /* who answered, as with ac_ask */
    ac_answer_release(&a);
    assert_int_equal(failures(b), 0);
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_CLOSED);
    assert_int_equal(ts_rec_count(d->rec), 0);
    assert_status(bk_call_st(d, b), AC_EFAILED); /* the third in a row */
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    assert_int_equal(ts_rec_count(d->rec), 1);
    assert_int_equal(ts_rec_index_of(d->rec, "closed->open"), 0);
    assert_int_equal(atomic_load(&d->requests), 6);
    ac_breaker_release(b);
}

static void test_open_refuses_without_reaching_target(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-open", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 2;
    o.reset_timeout_ms = 1000;
    ac_breaker *b = open_breaker(d, &o);
    bk_set(d, BK_ECHO);
    long long before = atomic_load(&d->requests);
    for (int i = 0; i < 5; i++) {
        bk_assert_refused(d, b);
    }
    ac_answer a;
    assert_status(bk_call(d, b, &a), AC_EFAILED);
    assert_non_null(strstr(ac_error_message(a.error), "\"db\" is open"));
    assert_non_null(strstr(ac_error_message(a.error), "next probe is allowed in 1000 ms"));
    ac_answer_release(&a);
    assert_status(ac_clock_advance(d->sys, 400), AC_OK);
    assert_status(bk_call(d, b, &a), AC_EFAILED);
    assert_non_null(strstr(ac_error_message(a.error), "next probe is allowed in 600 ms"));
    ac_answer_release(&a);

    /* the future is refused at once, too */
    ac_future *f = ac_breaker_ask(b, d->server, ac_msg_str_new("x"), BK_WAIT_MS);
    assert_non_null(f);
    assert_true(ac_future_poll(f, &a));
    assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR));
    ac_answer_release(&a);
    ac_future_release(f);

    /* and by the permit API */
    ac_breaker_permit p;
    ac_error *e = NULL;
    assert_false(ac_breaker_acquire(b, &p, &e));
    assert_true(ac_error_is(e, AC_CIRCUIT_BREAKER_OPEN_ERROR));
    ac_error_release(e);
    assert_int_equal(atomic_load(&d->requests), before);
    ac_breaker_release(b);
}

/* The subscriber records what it is told. */
static void subscriber_receive(ac_ctx *ctx, ac_msg *msg)
{
    bk_data *d = ac_ctx_user_data(ctx);
    const ac_breaker_transition *t = ac_breaker_transition_of(msg);
    if (t == NULL) {
        ts_rec_add(d->rec, "sub: unexpected %s", ac_msg_type_name(msg));
        return;
    }
    ts_rec_add(d->rec, "sub %s %s->%s at %lld", ac_breaker_name(t->breaker),
               ac_breaker_state_name(t->from), ac_breaker_state_name(t->to), (long long)t->at_ms);
}

static const ac_actor_def subscriber_def = {.name = "Subscriber", .receive = subscriber_receive};

static void expect_events(bk_data *d, const char *const *want, size_t n)
{
    if (!ts_rec_wait_count(d->rec, n, TS_WAIT_S)) {
        ts_rec_dump(d->rec, "events");
        fail_msg("expected %zu events", n);
    }
    ts_sleep_ms(5);
    if (ts_rec_count(d->rec) != n) {
        ts_rec_dump(d->rec, "events");
        fail_msg("expected exactly %zu events", n);
    }
    /* callbacks run in order; so do the subscriber's messages */
    long last_cb = -1, last_sub = -1;
    for (size_t i = 0; i < n; i++) {
        long at = ts_rec_index_of(d->rec, want[i]);
        if (at < 0) {
            ts_rec_dump(d->rec, "events");
            fail_msg("missing event \"%s\"", want[i]);
        }
        long *last = strncmp(want[i], "sub", 3) == 0 ? &last_sub : &last_cb;
        if (at < *last) {
            ts_rec_dump(d->rec, "events");
            fail_msg("event \"%s\" out of order", want[i]);
        }
        *last = at;
    }
}

static void test_probe_closes_and_events_in_order(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-probe", true, false);
    ac_ref *sub = ts_spawn(d->sys, &subscriber_def, d, "sub");
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 1000;
    ac_breaker *b = bk_breaker(d, &o);
    assert_status(ac_breaker_subscribe(b, sub), AC_OK);
    assert_status(ac_breaker_subscribe(b, sub), AC_OK); /* once is enough */
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED); /* opens at 0 */
    assert_status(ac_clock_advance(d->sys, 999), AC_OK);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    bk_assert_refused(d, b);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK); /* 1000: half-open, on time */
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_HALF_OPEN);
    assert_true(ts_rec_index_of(d->rec, "open->half-open") > 0);
    bk_set(d, BK_ECHO);
    long long before = atomic_load(&d->requests);
    assert_status(bk_call_st(d, b), AC_OK); /* the probe */
    assert_int_equal(atomic_load(&d->requests), before + 1);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_CLOSED);
    assert_status(bk_call_st(d, b), AC_OK);
    const char *const want[] = {"closed->open", "open->half-open", "half-open->closed",
                                "sub db closed->open at 0", "sub db open->half-open at 1000",
                                "sub db half-open->closed at 1000"};
    expect_events(d, want, 6);
    assert_status(ac_breaker_unsubscribe(b, sub), AC_OK);
    ac_ref_release(sub);
    ac_breaker_release(b);
}

/* Open periods: 100, then doubled by each failed probe up to 800, and back
 * to 100 once a probe succeeds. */
static int64_t fail_probe(bk_data *d, ac_breaker *b)
{
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.state, AC_BREAKER_OPEN);
    assert_status(ac_clock_advance(d->sys, info.next_probe_ms - ac_clock_now_ms(d->sys) - 1),
                  AC_OK);
    bk_assert_refused(d, b); /* not a ms early */
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED); /* the probe fails: open again */
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.state, AC_BREAKER_OPEN);
    return info.next_probe_ms - info.opened_at_ms;
}

static void test_backoff_doubles_to_its_ceiling(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-backoff", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 100;
    o.max_reset_timeout_ms = 800;
    ac_breaker *b = open_breaker(d, &o);
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.next_probe_ms - info.opened_at_ms, 100);
    const int64_t want[] = {200, 400, 800, 800, 800};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(fail_probe(d, b), want[i]);
    }
    assert_status(ac_clock_advance(d->sys, 800), AC_OK);
    bk_set(d, BK_ECHO);
    assert_status(bk_call_st(d, b), AC_OK); /* the probe succeeds */
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    assert_int_equal(info.next_probe_ms - info.opened_at_ms, 100);
    assert_int_equal(info.opened, 7);
    ac_breaker_release(b);
}

static void test_random_factor_within_bounds(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-jitter", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 1000;
    o.max_reset_timeout_ms = 4000;
    o.random_factor = 0.5;
    o.seed = 12345;
    ac_breaker *b = open_breaker(d, &o);
    ac_breaker_info info;
    assert_status(ac_breaker_get_info(b, &info), AC_OK);
    int64_t first = info.next_probe_ms - info.opened_at_ms;
    assert_in_range(first, 1000, 1500);
    const int64_t base[] = {2000, 4000, 4000, 4000, 4000, 4000};
    int jittered = first != 1000;
    for (size_t i = 0; i < 6; i++) {
        int64_t period = fail_probe(d, b);
        assert_in_range(period, base[i], base[i] + base[i] / 2);
        jittered += period != base[i];
    }
    assert_true(jittered >= 5); /* the factor does spread them */
    ac_breaker_release(b);
    o.max_reset_timeout_ms = 0;

    /* the same seed, the same periods */
    o.name = "db2";
    ac_breaker *b2 = open_breaker(d, &o);
    assert_status(ac_breaker_get_info(b2, &info), AC_OK);
    assert_int_equal(info.next_probe_ms - info.opened_at_ms, first);
    ac_breaker_release(b2);
}

static void test_probe_failure_reopens_and_refuses_during_probe(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-inflight", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 100;
    o.call_timeout_ms = 50;
    ac_breaker *b = open_breaker(d, &o);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    bk_set(d, BK_SILENT);
    long long before = atomic_load(&d->requests);
    ac_future *probe = ac_breaker_ask(b, d->server, ac_msg_str_new("probe"), BK_WAIT_MS);
    assert_non_null(probe);
    bk_wait_requests(d, before + 1);
    /* while the probe is out, everybody else is refused */
    ac_answer a;
    assert_status(bk_call(d, b, &a), AC_EFAILED);
    assert_non_null(strstr(ac_error_message(a.error), "half-open with its probe in flight"));
    ac_answer_release(&a);
    assert_status(ac_clock_advance(d->sys, 50), AC_OK); /* the probe times out */
    assert_status(ac_future_wait(probe, BK_WAIT_MS, &a), AC_EFAILED);
    assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR));
    ac_answer_release(&a);
    ac_future_release(probe);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    const char *const want[] = {"closed->open", "open->half-open", "half-open->open"};
    expect_events(d, want, 3);
    ac_breaker_release(b);
}

static void test_filter_keeps_not_found_from_counting(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-filter", true, true);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 2;
    o.is_failure = bk_not_found_is_no_failure;
    ac_breaker *b = bk_breaker(d, &o);
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    assert_int_equal(failures(b), 1);
    bk_set(d, BK_NOT_FOUND);
    for (int i = 0; i < 10; i++) {
        ac_answer a;
        assert_status(bk_call(d, b, &a), AC_EFAILED); /* the caller still sees the error */
        assert_true(ac_error_is(a.error, "NotFoundError"));
        ac_answer_release(&a);
    }
    assert_int_equal(failures(b), 0); /* an answer: it reset the count */
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_CLOSED);
    char *page = ac_metrics_format(d->sys);
    assert_non_null(page);
    assert_non_null(strstr(page, "circuit_breaker_calls_total{breaker=\"db\",outcome=\"ignored\"} 10"));
    assert_non_null(strstr(page, "circuit_breaker_calls_total{breaker=\"db\",outcome=\"failure\"} 1"));
    free(page);
    ac_breaker_release(b);
}

static void test_metrics_follow_the_state(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-metrics", true, true);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 100;
    ac_breaker *b = bk_breaker(d, &o);
    char *page = ac_metrics_format(d->sys);
    assert_non_null(strstr(page, "circuit_breaker_state{breaker=\"db\"} 0"));
    free(page);
    bk_set(d, BK_OUTAGE);
    assert_status(bk_call_st(d, b), AC_EFAILED);
    bk_assert_refused(d, b);
    bk_assert_refused(d, b);
    page = ac_metrics_format(d->sys);
    assert_non_null(strstr(page, "circuit_breaker_state{breaker=\"db\"} 2"));
    assert_non_null(strstr(page, "circuit_breaker_calls_total{breaker=\"db\",outcome=\"rejected\"} 2"));
    assert_non_null(strstr(page, "circuit_breaker_transitions_total{breaker=\"db\",to=\"open\"} 1"));
    free(page);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    page = ac_metrics_format(d->sys);
    assert_non_null(strstr(page, "circuit_breaker_state{breaker=\"db\"} 1"));
    free(page);
    bk_set(d, BK_ECHO);
    assert_status(bk_call_st(d, b), AC_OK);
    page = ac_metrics_format(d->sys);
    assert_non_null(strstr(page, "circuit_breaker_state{breaker=\"db\"} 0"));
    assert_non_null(strstr(page, "circuit_breaker_calls_total{breaker=\"db\",outcome=\"success\"} 1"));
    free(page);
    ac_breaker_release(b);
}

/* An open breaker arms a timer to half-open after its reset timeout. Once
 * the last reference is released nobody can call through it again: the
 * timer is cancelled, not left armed (and the breaker alive) for the rest
 * of the timeout. A second reference keeps it armed; a call in flight
 * when the last goes keeps the breaker, not the timer. */
static void test_released_breaker_leaves_no_timer(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-release", true, false);
    size_t base = ac_timers_armed(d->sys);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.reset_timeout_ms = 3600000;
    ac_breaker *b = open_breaker(d, &o);
    assert_int_equal(ac_timers_armed(d->sys), base + 1);
    ac_breaker *again = ac_breaker_retain(b);
    ac_breaker_release(b);
    assert_int_equal(ac_timers_armed(d->sys), base + 1); /* one reference left */
    assert_int_equal(ac_breaker_state_of(again), AC_BREAKER_OPEN);
    ac_breaker_release(again);
    assert_int_equal(ac_timers_armed(d->sys), base);

    /* Reopened after a failed probe: still one timer, gone with the breaker. */
    o.reset_timeout_ms = 1000;
    b = open_breaker(d, &o);
    assert_status(ac_clock_advance(d->sys, 1000), AC_OK);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_HALF_OPEN);
    assert_status(bk_call_st(d, b), AC_EFAILED); /* the probe fails */
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    assert_int_equal(ac_timers_armed(d->sys), base + 1);
    ac_breaker_release(b);
    assert_int_equal(ac_timers_armed(d->sys), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_consecutive_failures_open_and_success_resets),
        TS_UNIT(test_open_refuses_without_reaching_target),
        TS_UNIT(test_probe_closes_and_events_in_order),
        TS_UNIT(test_backoff_doubles_to_its_ceiling),
        TS_UNIT(test_random_factor_within_bounds),
        TS_UNIT(test_probe_failure_reopens_and_refuses_during_probe),
        TS_UNIT(test_filter_keeps_not_found_from_counting),
        TS_UNIT(test_metrics_follow_the_state),
        TS_UNIT(test_released_breaker_leaves_no_timer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
