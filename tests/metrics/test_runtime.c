/*
 * The runtime's own instrumentation: actors started and stopped, messages
 * processed, dead letters, ask timeouts and restarts; and the
 * scatter/gather families, one scatter of each outcome (first, timeout,
 * all-failed, stopped, no-reply-target), on the manual clock.
 */
#define _POSIX_C_SOURCE 200809L

#include "metrics_test_util.h"
#include "ts_test.h"

#define RESOLVED "router_scatter_gather_resolved_total"
#define LATENCY "router_scatter_gather_latency_seconds"

static double metric(ac_system *sys, const char *series)
{
    char *text = ac_metrics_format(sys);
    assert_non_null(text);
    double v = mt_sample(text, series);
    free(text);
    return v;
}

typedef struct metric_cond {
    ac_system *sys;
    const char *series;
    double value;
} metric_cond;

static bool metric_reached(void *arg)
{
    metric_cond *c = arg;
    return metric(c->sys, c->series) == c->value;
}

static bool metric_at_least(void *arg)
{
    metric_cond *c = arg;
    return metric(c->sys, c->series) >= c->value;
}

/* The sample comes to `value` within the bound (counts land at the end of
 * a turn, a little after what the test waits for). */
static void assert_metric_eventually(ac_system *sys, const char *series, double value)
{
    metric_cond c = {sys, series, value};
    if (!ts_wait_until(metric_reached, &c, TS_WAIT_S))
        fail_msg("%s is %g, expected %g", series, metric(sys, series), value);
}

/* ---- actors ------------------------------------------------------------- */

static atomic_llong g_handled;

static void counter_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    if (ac_msg_is(msg, &ac_msg_type_int64))
        atomic_fetch_add(&g_handled, 1);
}

static const ac_actor_def counter_def = {.name = "Counter", .receive = counter_receive};

static void silent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def silent_def = {.name = "Silent", .receive = silent_receive};

static void failing_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_fail(ctx, ac_error_new("TestError", "failing on purpose"));
}

static const ac_actor_def failing_def = {.name = "Failing", .receive = failing_receive};

/* Routees: "reply" replies with the routee's name, "fail" replies with an
 * error, anything else gets no answer. */
static atomic_llong g_replica_handled;

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    const char *cmd = ac_msg_str(msg);
    atomic_fetch_add(&g_replica_handled, 1);
    if (cmd && strcmp(cmd, "reply") == 0)
        ac_reply(ctx, ac_msg_str_new(ac_self_name(ctx)));
    else if (cmd && strcmp(cmd, "fail") == 0)
        ac_reply(ctx, ac_msg_error_new(ac_error_new("TestError", "no")));
}

static const ac_actor_def replica_def = {.name = "Replica", .receive = replica_receive};

/* ---- the runtime counters ---------------------------------------------- */

static ac_system *system_with_metrics(void **state, const char *name)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2, .metrics = true, .manual_clock = true};
    ac_system *sys = ts_fx_system(fx, name, &o);
    assert_non_null(sys);
    return sys;
}

static void test_runtime_counters(void **state)
{
    ac_system *sys = system_with_metrics(state, "runtime");
    atomic_store(&g_handled, 0);

    /* Tells. */
    ac_ref *counter = ts_spawn(sys, &counter_def, NULL, "counter");
    assert_non_null(counter);
    for (int i = 0; i < 1000; i++)
        assert_status(ac_tell(counter, ac_msg_int64_new(i), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&g_handled, 1000, TS_WAIT_S), "1000 messages handled");
    assert_metric_eventually(sys, "actorc_messages_processed_total", 1000);
    assert_metric_eventually(sys, "actorc_actors_started_total", 1);

    /* A dead letter. */
    ac_ref *silent = ts_spawn(sys, &silent_def, NULL, "silent");
    assert_non_null(silent);
    assert_status(ac_stop(silent), AC_OK);
    assert_metric_eventually(sys, "actorc_actors_stopped_total", 1);
    assert_status(ac_tell(silent, ac_msg_str_new("too late"), NULL), AC_OK);
    assert_true(ts_wait_dead_letters(sys, 1, TS_WAIT_S));
    assert_metric_eventually(sys, "actorc_dead_letters_total", 1);
    assert_metric_eventually(sys, "actorc_actors_started_total", 2);

    /* An ask timeout, on the manual clock. */
    ac_ref *mute = ts_spawn(sys, &silent_def, NULL, "mute");
    ac_future *f = ac_ask(mute, ac_msg_str_new("anyone?"), 100);
    assert_non_null(f);
    assert_true(metric(sys, "actorc_ask_timeouts_total") == 0);
    assert_status(ac_clock_advance(sys, 100), AC_OK);
    ac_answer a;
    assert_status(ac_future_wait(f, (int64_t)(TS_WAIT_S * 1000), &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_future_release(f);
    assert_true(metric(sys, "actorc_ask_timeouts_total") == 1);
    /* An answered ask is no timeout. */
    f = ac_ask(counter, ac_msg_int64_new(0), 100);
    assert_eventually(ts_wait_eq(&g_handled, 1001, TS_WAIT_S), "the ask handled");
    ac_future_release(f);

    /* A restart. */
    ac_ref *failing = ts_spawn(sys, &failing_def, NULL, "failing");
    assert_status(ac_tell(failing, ac_msg_str_new("fail"), NULL), AC_OK);
    assert_metric_eventually(sys, "actorc_restarts_total", 1);
    assert_true(metric(sys, "actorc_actors_stopped_total") == 1); /* a restart is no stop */

    assert_metric_eventually(sys, "actorc_messages_processed_total", 1003);
    assert_metric_eventually(sys, "actorc_actors_started_total", 4);
    assert_true(metric(sys, "actorc_dead_letters_total") == (double)ac_dead_letter_count(sys));
    ac_ref_release(counter);
    ac_ref_release(silent);
    ac_ref_release(mute);
    ac_ref_release(failing);
}

static void test_enabled_later_counts_from_then_on(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "later", &(ac_system_options){.workers = 2});
    assert_non_null(sys);
    atomic_store(&g_handled, 0);
    ac_ref *counter = ts_spawn(sys, &counter_def, NULL, "counter");
    for (int i = 0; i < 10; i++)
        ac_tell(counter, ac_msg_int64_new(i), NULL);
    assert_eventually(ts_wait_eq(&g_handled, 10, TS_WAIT_S), "10 handled");
    assert_status(ac_metrics_enable(sys), AC_OK);
    for (int i = 0; i < 5; i++)
        ac_tell(counter, ac_msg_int64_new(i), NULL);
    assert_eventually(ts_wait_eq(&g_handled, 15, TS_WAIT_S), "15 handled");
    /* The 5 sent after are counted. A turn still in flight when metrics
     * came on is counted whole when it ends, so up to the 10 before may be
     * too; never more than the 15. */
    metric_cond c = {sys, "actorc_messages_processed_total", 5};
    assert_eventually(ts_wait_until(metric_at_least, &c, TS_WAIT_S), "5 messages counted");
    double n = metric(sys, "actorc_messages_processed_total");
    assert_true(n >= 5 && n <= 15);
    ac_ref_release(counter);
}

/* ---- scatter/gather ----------------------------------------------------- */

typedef struct sg_env {
    ac_system *sys;
    ac_ref *router;
} sg_env;

static sg_env scatter_system(void **state, const char *name)
{
    sg_env env = {.sys = system_with_metrics(state, name)};
    ac_scatter_gather_options o = {.timeout_ms = 100};
    env.router = ac_spawn(env.sys, ac_router_scatter_gather_first_completed(3, &replica_def, &o,
                                                                            NULL),
                          "replicas");
    assert_non_null(env.router);
    return env;
}

typedef struct armed_cond {
    ac_system *sys;
    size_t n;
} armed_cond;

static bool armed_is(void *arg)
{
    armed_cond *c = arg;
    return ac_timers_armed(c->sys) == c->n;
}

/* Wait until exactly n timers are armed: 0 once the previous scatter has
 * let go of its timer (losers' replies may still be arriving), 2 once a
 * new ask and its scatter have armed theirs. */
static void wait_armed(ac_system *sys, size_t n)
{
    armed_cond c = {sys, n};
    if (!ts_wait_until(armed_is, &c, TS_WAIT_S))
        fail_msg("%zu timers armed, expected %zu", ac_timers_armed(sys), n);
}

static ac_status scatter(sg_env *env, const char *cmd, int64_t advance_ms, ac_answer *a)
{
    wait_armed(env->sys, 0);
    ac_future *f = ac_ask(env->router, ac_msg_str_new(cmd), 10000);
    assert_non_null(f);
    if (advance_ms) {
        wait_armed(env->sys, 2); /* the ask's and the scatter's */
        assert_status(ac_clock_advance(env->sys, advance_ms), AC_OK);
    }
    ac_status st = ac_future_wait(f, (int64_t)(TS_WAIT_S * 1000), a);
    ac_future_release(f);
    return st;
}

static double outcome(ac_system *sys, const char *name)
{
    char series[96];
    snprintf(series, sizeof series, RESOLVED "{outcome=\"%s\"}", name);
    return metric(sys, series);
}

static void assert_outcomes(ac_system *sys, double first, double timeout, double all_failed,
                            double stopped, double no_reply_target)
{
    double got[] = {outcome(sys, "first"), outcome(sys, "timeout"), outcome(sys, "all-failed"),
                    outcome(sys, "stopped"), outcome(sys, "no-reply-target")};
    double want[] = {first, timeout, all_failed, stopped, no_reply_target};
    for (int i = 0; i < 5; i++)
        if (got[i] != want[i])
            fail_msg("outcomes (first, timeout, all-failed, stopped, no-reply-target): got "
                     "%g %g %g %g %g, expected %g %g %g %g %g",
                     got[0], got[1], got[2], got[3], got[4], want[0], want[1], want[2], want[3],
                     want[4]);
}

static void test_scatter_gather_outcomes(void **state)
{
    sg_env env = scatter_system(state, "scatter");
    ac_system *sys = env.sys;
    ac_answer a;
    assert_outcomes(sys, 0, 0, 0, 0, 0);

    /* first: three replies, one wins, the losers count nothing. */
    assert_status(scatter(&env, "reply", 0, &a), AC_OK);
    ac_answer_release(&a);
    assert_outcomes(sys, 1, 0, 0, 0, 0);
    assert_true(metric(sys, LATENCY "_count") == 1);

    /* timeout: nobody answers within the scatter's 100 ms. */
    assert_status(scatter(&env, "silent", 100, &a), AC_EFAILED);
    assert_true(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    assert_outcomes(sys, 1, 1, 0, 0, 0);

    /* all-failed: every routee answers with an error. */
    assert_status(scatter(&env, "fail", 0, &a), AC_EFAILED);
    assert_false(ac_error_all_timeouts(a.error));
    ac_answer_release(&a);
    assert_outcomes(sys, 1, 1, 1, 0, 0);

    /* no-reply-target: a bare tell scatters nothing. */
    assert_status(ac_tell(env.router, ac_msg_str_new("reply"), NULL), AC_OK);
    assert_metric_eventually(sys, RESOLVED "{outcome=\"no-reply-target\"}", 1);
    assert_outcomes(sys, 1, 1, 1, 0, 1);

    /* stopped: the router stops while a scatter is open, its routees
     * having taken the requests (a request still queued when a routee
     * stops fails that routee's ask at once instead). */
    wait_armed(sys, 0);
    long long handled = atomic_load(&g_replica_handled);
    ac_future *f = ac_ask(env.router, ac_msg_str_new("silent"), 10000);
    assert_eventually(ts_wait_ge(&g_replica_handled, handled + 3, TS_WAIT_S),
                      "the routees took the requests");
    assert_status(ac_stop(env.router), AC_OK);
    assert_status(ac_future_wait(f, (int64_t)(TS_WAIT_S * 1000), &a), AC_EFAILED);
    assert_non_null(strstr(ac_error_message(a.error), "stopped"));
    ac_answer_release(&a);
    ac_future_release(f);
    assert_outcomes(sys, 1, 1, 1, 1, 1);

    /* One latency sample per answered scatter, none for no-reply-target;
     * on the manual clock every answer came well within 10 s. */
    assert_true(metric(sys, LATENCY "_count") == 4);
    assert_true(metric(sys, LATENCY "_bucket{le=\"10\"}") == 4);
    assert_true(metric(sys, LATENCY "_bucket{le=\"+Inf\"}") == 4);
    assert_true(metric(sys, LATENCY "_sum") >= 0);
    ac_ref_release(env.router);
}

static void test_no_routees_left_counts_as_all_failed(void **state)
{
    ac_system *sys = system_with_metrics(state, "empty");
    /* Routees that stop on their first message. */
    ac_ref *router = ac_spawn(sys, ac_router_scatter_gather_first_completed(2, &replica_def, NULL,
                                                                            NULL),
                              "replicas");
    assert_non_null(router);
    assert_status(ac_tell(router, ac_broadcast_new(ac_poison_pill()), NULL), AC_OK);
    ac_answer a;
    ac_status st;
    /* Until the router has pruned both routees, a scatter reaches a
     * stopped routee, which fails at once (all-failed too); then the
     * router answers "no routees left" without scattering. */
    for (int tries = 0;; tries++) {
        st = ac_ask_wait(router, ac_msg_str_new("reply"), 10000, &a);
        if (st == AC_EFAILED && ac_error_member_count(a.error) == 0)
            break;
        assert_status(st, AC_EFAILED);
        ac_answer_release(&a);
        assert_true(tries < 10000);
        ts_sleep_ms(1);
    }
    assert_non_null(strstr(ac_error_message(a.error), "no routees left"));
    ac_answer_release(&a);
    double failed = outcome(sys, "all-failed");
    assert_true(failed >= 1);
    assert_true(outcome(sys, "first") == 0);
    assert_true(outcome(sys, "timeout") == 0);
    /* It answered the caller, so it has a latency sample like the rest. */
    assert_true(metric(sys, LATENCY "_count") == failed);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_runtime_counters),
        TS_UNIT(test_enabled_later_counts_from_then_on),
        TS_UNIT(test_scatter_gather_outcomes),
        TS_UNIT(test_no_routees_left_counts_as_all_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
