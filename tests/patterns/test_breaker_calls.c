/*
 * Calls through a breaker: a call slower than call_timeout_ms fails with
 * a CircuitBreakerTimeoutError and counts; the caller's own shorter
 * timeout counts too; a stopped target counts; ac_breaker_ask_in answers
 * in the asker's turn, refused or not; ac_breaker_tell passes the answer
 * on with the answering actor as sender; a breaker released with a call
 * in flight still settles it.
 */
#define _POSIX_C_SOURCE 200809L

#include "bk_support.h"

static void test_call_timeout_counts(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-calltimeout", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 2;
    o.call_timeout_ms = 50;
    ac_breaker *b = bk_breaker(d, &o);
    bk_set(d, BK_SILENT);
    for (int i = 1; i <= 2; i++) {
        ac_future *f = ac_breaker_ask(b, d->server, ac_msg_str_new("x"), 5000);
        assert_non_null(f);
        bk_wait_requests(d, i);
        assert_status(ac_clock_advance(d->sys, 49), AC_OK);
        ac_answer a;
        assert_status(ac_future_wait(f, 20, &a), AC_EPENDING);
        assert_status(ac_clock_advance(d->sys, 1), AC_OK);
        assert_status(ac_future_wait(f, BK_WAIT_MS, &a), AC_EFAILED);
        assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR));
        assert_non_null(strstr(ac_error_message(a.error), "after 50 ms"));
        assert_null(a.sender);
        ac_answer_release(&a);
        ac_future_release(f);
    }
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    ac_breaker_release(b);
}

static void test_callers_own_timeout_counts(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-asktimeout", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    o.call_timeout_ms = 1000; /* longer than the caller waits */
    ac_breaker *b = bk_breaker(d, &o);
    bk_set(d, BK_SILENT);
    ac_future *f = ac_breaker_ask(b, d->server, ac_msg_str_new("x"), 30);
    bk_wait_requests(d, 1);
    assert_status(ac_clock_advance(d->sys, 30), AC_OK);
    ac_answer a;
    assert_status(ac_future_wait(f, BK_WAIT_MS, &a), AC_ETIMEOUT);
    assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
    assert_non_null(strstr(ac_error_message(a.error), ac_ref_path(d->server)));
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    assert_int_equal(ac_timers_armed(d->sys), 1); /* only the probe timer */
    ac_breaker_release(b);
}

static void test_stopped_target_counts(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-stopped", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 2;
    ac_breaker *b = bk_breaker(d, &o);
    assert_status(ac_stop(d->server), AC_OK);
    ac_status st;
    for (double end = ts_now() + TS_WAIT_S; (st = bk_call_st(d, b)) != AC_EDEAD;) {
        if (ts_now() > end) {
            fail_msg("the server did not stop");
        }
        ts_sleep_ms(1);
    }
    assert_status(bk_call_st(d, b), AC_EDEAD); /* the second failure in a row */
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    bk_assert_refused(d, b);
    ac_breaker_release(b);
}

/* ---- from inside an actor ---------------------------------------------- */

typedef struct client_env {
    bk_data *d;
    ac_breaker *b;
    atomic_llong answers;
    atomic_llong replies, refused, in_turn, blocked_refused;
} client_env;

static void on_answer(ac_ctx *ctx, const ac_answer *a, void *user)
{
    client_env *env = user;
    if (ac_in_actor() && ac_ctx_user_data(ctx) == env) {
        atomic_fetch_add(&env->in_turn, 1);
    }
    if (a->reply != NULL && strcmp(ac_msg_str(a->reply), "x") == 0 && a->sender == env->d->server) {
        atomic_fetch_add(&env->replies, 1);
    }
    if (ac_error_is(a->error, AC_CIRCUIT_BREAKER_OPEN_ERROR)) {
        atomic_fetch_add(&env->refused, 1);
    }
    atomic_fetch_add(&env->answers, 1);
}

static void client_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    client_env *env = ac_ctx_user_data(ctx);
    ac_answer a;
    if (ac_breaker_ask_wait(env->b, env->d->server, ac_msg_str_new("x"), 0, &a) == AC_EINACTOR) {
        atomic_fetch_add(&env->blocked_refused, 1);
    }
    if (ac_breaker_ask_in(ctx, env->b, env->d->server, ac_msg_str_new("x"), 0, on_answer, env,
                          NULL) != AC_OK) {
        atomic_fetch_add(&env->answers, 1000); /* fails the test */
    }
}

static const ac_actor_def client_def = {.name = "Client", .receive = client_receive};

static void test_ask_in(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-askin", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    static client_env envs;
    client_env *env = &envs; /* outlives the system, which the teardown ends */
    memset(env, 0, sizeof *env);
    env->d = d;
    env->b = bk_breaker(d, &o);
    ac_ref *client = ts_spawn(d->sys, &client_def, env, "client");
    assert_status(ac_tell(client, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&env->answers, 1, TS_WAIT_S), "the first answer");
    assert_int_equal(atomic_load(&env->replies), 1);
    bk_set(d, BK_OUTAGE);
    assert_status(ac_tell(client, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&env->answers, 2, TS_WAIT_S), "the failing answer");
    assert_int_equal(ac_breaker_state_of(env->b), AC_BREAKER_OPEN);
    assert_status(ac_tell(client, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&env->answers, 3, TS_WAIT_S), "the refused answer");
    assert_int_equal(atomic_load(&env->refused), 1);
    assert_int_equal(atomic_load(&env->in_turn), 3);
    assert_int_equal(atomic_load(&env->blocked_refused), 3);
    assert_int_equal(atomic_load(&d->requests), 2);
    ac_ref_release(client);
    ac_breaker_release(env->b);
}

/* ---- tell: the answer goes on to a sender ------------------------------ */

typedef struct sink_env {
    atomic_llong got;
    _Atomic(ac_ref *) from;
    atomic_int error;
} sink_env;

static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    sink_env *env = ac_ctx_user_data(ctx);
    atomic_store(&env->from, ac_sender(ctx));
    atomic_store(&env->error, ac_msg_is(msg, &ac_msg_type_error));
    atomic_fetch_add(&env->got, 1);
}

static const ac_actor_def sink_def = {.name = "Sink", .receive = sink_receive};

static void test_tell_passes_the_answer_on(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-tell", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.max_failures = 1;
    ac_breaker *b = bk_breaker(d, &o);
    static sink_env envs;
    sink_env *env = &envs;
    memset(env, 0, sizeof *env);
    ac_ref *sink = ts_spawn(d->sys, &sink_def, env, "sink");
    ac_breaker_permit p;
    assert_true(ac_breaker_acquire(b, &p, NULL));
    assert_status(ac_breaker_tell(b, &p, d->server, ac_msg_str_new("x"), sink, 0), AC_OK);
    assert_eventually(ts_wait_eq(&env->got, 1, TS_WAIT_S), "the reply at the sink");
    assert_ptr_equal(atomic_load(&env->from), d->server);
    assert_false(atomic_load(&env->error));
    /* a cancelled permit counts nothing; the silent call times out */
    bk_set(d, BK_SILENT);
    assert_true(ac_breaker_acquire(b, &p, NULL));
    ac_breaker_cancel(b, &p);
    assert_true(ac_breaker_acquire(b, &p, NULL));
    assert_status(ac_breaker_tell(b, &p, d->server, ac_msg_str_new("x"), sink, 100), AC_OK);
    bk_wait_requests(d, 2);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    assert_eventually(ts_wait_eq(&env->got, 2, TS_WAIT_S), "the timeout at the sink");
    assert_true(atomic_load(&env->error));
    assert_int_equal(ac_breaker_state_of(b), AC_BREAKER_OPEN);
    ac_ref_release(sink);
    ac_breaker_release(b);
}

static void test_release_with_call_in_flight(void **state)
{
    ts_fixture *fx = *state;
    bk_data *d = bk_setup(fx, "bk-inflight-release", true, false);
    ac_breaker_options o = bk_options(d, "db");
    o.call_timeout_ms = 10;
    ac_breaker *b = bk_breaker(d, &o);
    bk_set(d, BK_SILENT);
    ac_future *f = ac_breaker_ask(b, d->server, ac_msg_str_new("x"), 0);
    bk_wait_requests(d, 1);
    ac_breaker_release(b); /* the call holds its own reference */
    assert_status(ac_clock_advance(d->sys, 10), AC_OK);
    ac_answer a;
    assert_status(ac_future_wait(f, BK_WAIT_MS, &a), AC_EFAILED);
    assert_true(ac_error_is(a.error, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR));
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_timers_armed(d->sys), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_call_timeout_counts),
        TS_UNIT(test_callers_own_timeout_counts),
        TS_UNIT(test_stopped_target_counts),
        TS_UNIT(test_ask_in),
        TS_UNIT(test_tell_passes_the_answer_on),
        TS_UNIT(test_release_with_call_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
