#define _POSIX_C_SOURCE 200809L

#include "bk_support.h"

static void server_receive(ac_ctx *ctx, ac_msg *msg)
{
    bk_data *d = ac_ctx_user_data(ctx);
    /* counted before answering, so that a caller who has the answer sees
     * the count; the call's timer was armed before the request was sent */
    atomic_fetch_add(&d->requests, 1);
    switch ((bk_beh)atomic_load(&d->beh)) {
    case BK_ECHO:
        ac_reply(ctx, ac_msg_str_new(ac_msg_str(msg)));
        break;
    case BK_OUTAGE:
        ac_reply(ctx, ac_msg_error_new(ac_error_new("OutageError", "down")));
        break;
    case BK_NOT_FOUND:
        ac_reply(ctx, ac_msg_error_new(ac_error_new("NotFoundError", "no such key")));
        break;
    case BK_SILENT:
        break;
    }
}

static const ac_actor_def server_def = {.name = "Server", .receive = server_receive};

bk_data *bk_setup(ts_fixture *fx, const char *name, bool manual, bool metrics)
{
    bk_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system_options o = {.manual_clock = manual, .metrics = metrics, .workers = 2};
    d->sys = ts_fx_system(fx, name, &o);
    assert_non_null(d->sys);
    d->server = ts_spawn(d->sys, &server_def, d, "server");
    assert_non_null(d->server);
    return d;
}

void bk_set(bk_data *d, bk_beh beh) { atomic_store(&d->beh, (int)beh); }

static void on_transition(ac_breaker *b, ac_breaker_state from, ac_breaker_state to, void *user)
{
    bk_data *d = user;
    ac_breaker_info info; /* reading the state from the callback must not deadlock */
    if (ac_breaker_get_info(b, &info) != AC_OK || ac_breaker_state_of(b) != to) {
        ts_rec_add(d->rec, "callback saw the wrong state");
    }
    ts_rec_add(d->rec, "%s->%s", ac_breaker_state_name(from), ac_breaker_state_name(to));
}

ac_breaker_options bk_options(bk_data *d, const char *name)
{
    ac_breaker_options o = {.name = name, .on_transition = on_transition, .on_transition_user = d};
    return o;
}

ac_breaker *bk_breaker(bk_data *d, const ac_breaker_options *o)
{
    ac_breaker *b = ac_breaker_create(d->sys, o);
    if (b == NULL) {
        fail_msg("ac_breaker_create: %s (%s)", ac_status_name(ac_last_status()), ac_last_error());
    }
    return b;
}

ac_status bk_call(bk_data *d, ac_breaker *b, ac_answer *a)
{
    return ac_breaker_ask_wait(b, d->server, ac_msg_str_new("x"), BK_WAIT_MS, a);
}

ac_status bk_call_st(bk_data *d, ac_breaker *b)
{
    ac_answer a;
    ac_status st = bk_call(d, b, &a);
    ac_answer_release(&a);
    return st;
}

void bk_assert_refused(bk_data *d, ac_breaker *b)
{
    long long before = atomic_load(&d->requests);
    ac_answer a;
    ac_status st = bk_call(d, b, &a);
    if (st != AC_EFAILED || !ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR)) {
        char *e = ac_error_to_string(a.error);
        fail_msg("expected a CircuitBreakerOpenError, got %s: %s", ac_status_name(st),
                 e ? e : "(no error)");
    }
    assert_null(a.sender);
    ac_answer_release(&a);
    ts_sleep_ms(2); /* a request that slipped through would be counted by now */
    assert_int_equal(atomic_load(&d->requests), before);
}

bool bk_not_found_is_no_failure(const ac_error *err, void *user)
{
    (void)user;
    return !ac_error_is(err, "NotFoundError");
}

void bk_wait_requests(bk_data *d, long long n)
{
    if (!ts_wait_ge(&d->requests, n, TS_WAIT_S)) {
        fail_msg("the server saw %lld requests, expected %lld", (long long)atomic_load(&d->requests),
                 n);
    }
}
