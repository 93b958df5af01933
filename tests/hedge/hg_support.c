#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

static int index_of(ac_ctx *ctx)
{
    int k = 0;
    char tail;
    if (sscanf(ac_self_name(ctx), "routee-%d%c", &k, &tail) != 1 || k < 1 || k > HG_MAX)
        return 0;
    return k;
}

static void routee_pre_start(ac_ctx *ctx)
{
    hg_data *d = ac_ctx_user_data(ctx);
    int k = index_of(ctx);
    if (k == 0) {
        atomic_fetch_add(&d->bad, 1);
        return;
    }
    atomic_store(&d->self[k], ac_self(ctx));
    atomic_fetch_add(&d->starts[k], 1);
}

static ac_msg *answer_of(int k, hg_data *d, const char *key)
{
    if (atomic_load(&d->error[k]))
        return ac_msg_error_new(ac_error_new("RouteeError", "routee-%d failed on %s", k, key));
    return ac_msg_printf("routee-%d:%s", k, key);
}

static void keep_sender(hg_data *d, int k, ac_ref *sender)
{
    ac_ref *old = atomic_exchange(&d->kept[k], ac_ref_retain(sender));
    ac_ref_release(old);
}

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    hg_data *d = ac_ctx_user_data(ctx);
    int k = index_of(ctx);
    const char *key = ac_msg_str(msg);
    ac_ref *sender = ac_sender(ctx);
    if (key != NULL && strcmp(key, HG_BOOM) == 0) {
        ac_fail(ctx, ac_error_new("Boom", "%s was told to fail", ac_self_path(ctx)));
        return;
    }
    if (k == 0 || key == NULL || sender == NULL) {
        atomic_fetch_add(&d->bad, 1);
        return;
    }
    if (strcmp(key, HG_BARRIER) == 0) {
        ac_reply(ctx, ac_msg_str_new(HG_BARRIER)); /* not counted */
        return;
    }
    if (atomic_load(&d->block[k])) {
        atomic_fetch_add(&d->blocked[k], 1);
        if (!ts_gate_wait(&d->gate, TS_WAIT_S))
            atomic_fetch_add(&d->bad, 1);
    }
    if (ac_request_cancelled(ctx))
        atomic_fetch_add(&d->cancelled_in_receive[k], 1);
    if (atomic_load(&d->keep[k]))
        keep_sender(d, k, sender);
    long long latency = atomic_load(&d->latency_ms[k]);
    if (latency == 0) {
        ac_reply(ctx, answer_of(k, d, key));
    } else if (latency > 0) {
        ac_cancellable *c = ac_schedule_once(sender, latency, answer_of(k, d, key),
                                             ac_self(ctx));
        if (c == NULL)
            atomic_fetch_add(&d->bad, 1);
        ac_cancellable_release(c);
    }
    /* counted last: a test that saw the count may move the clock */
    atomic_fetch_add(&d->seen[k], 1);
}

static void routee_post_stop(ac_ctx *ctx)
{
    (void)ctx;
}

const ac_actor_def hg_routee_def = {
    .name = "HedgeRoutee",
    .pre_start = routee_pre_start,
    .receive = routee_receive,
    .post_stop = routee_post_stop,
};

static void hg_data_free(void *p)
{
    hg_data *d = p;
    (void)d; /* the system is gone, and the kept refs with it */
}

hg_data *hg_setup(ts_fixture *fx, const char *name, bool manual, int workers)
{
    hg_data *d = ts_fx_data(fx, sizeof *d, hg_data_free);
    ts_gate_init(&d->gate);
    ac_system_options o = {
        .workers = workers, .manual_clock = manual, .metrics = true, .log_level = AC_LOG_DEBUG};
    d->sys = ts_fx_system(fx, name, &o);
    assert_non_null(d->sys);
    return d;
}

void hg_set(hg_data *d, int k, long long latency_ms, bool error)
{
    atomic_store(&d->latency_ms[k], latency_ms);
    atomic_store(&d->error[k], error ? 1 : 0);
}

ac_routee_options hg_routee_options(hg_data *d)
{
    return (ac_routee_options){.user_data = d};
}

ac_ref *hg_spawn(hg_data *d, ac_props *props, int size)
{
    if (props == NULL)
        fail_msg("factory: %s (%s)", ac_status_name(ac_last_status()), ac_last_error());
    ac_ref *r = ac_spawn(d->sys, props, "replicas");
    if (r == NULL)
        fail_msg("spawn: %s (%s)", ac_status_name(ac_last_status()), ac_last_error());
    for (int k = 1; k <= size; k++)
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "a routee to start");
    d->router = r;
    return r;
}

ac_future *hg_ask(hg_data *d, const char *key, int64_t timeout_ms)
{
    ac_future *f = ac_ask(d->router, ac_msg_str_new(key), timeout_ms);
    assert_non_null(f);
    d->asks++;
    return f;
}

long long hg_seen_total(hg_data *d)
{
    long long n = 0;
    for (int k = 1; k <= HG_MAX; k++)
        n += atomic_load(&d->seen[k]);
    return n;
}

long long hg_sent(hg_data *d)
{
    return d->asks + (long long)hg_counter(d, "router_hedges_sent_total", NULL, 0);
}

void hg_quiesce(hg_data *d)
{
    for (double end = ts_now() + TS_WAIT_S; hg_seen_total(d) < hg_sent(d);) {
        if (ts_now() > end)
            fail_msg("routees handled %lld requests, %lld were sent", hg_seen_total(d),
                     hg_sent(d));
        ts_sleep_ms(1);
    }
}

void hg_barrier(hg_data *d, int size)
{
    ac_answer a;
    assert_status(ac_ask_wait(d->router, ac_router_get_routees_msg(), HG_WAIT_MS, &a), AC_OK);
    ac_answer_release(&a);
    for (int k = 1; k <= size; k++) {
        assert_status(ac_ask_wait(atomic_load(&d->self[k]), ac_msg_str_new(HG_BARRIER),
                                  HG_WAIT_MS, &a),
                      AC_OK);
        ac_answer_release(&a);
    }
}

void hg_advance(hg_data *d, int64_t ms)
{
    hg_quiesce(d);
    for (int64_t i = 0; i < ms; i++) {
        assert_status(ac_clock_advance(d->sys, 1), AC_OK);
        hg_quiesce(d);
    }
}

uint64_t hg_counter(hg_data *d, const char *name, const char *const *labels, size_t n)
{
    ac_metric_value v;
    if (ac_metrics_read(d->sys, name, labels, n, &v) != AC_OK)
        return 0;
    return v.count;
}

uint64_t hg_outcome(hg_data *d, const char *router, int k, const char *outcome)
{
    char routee[32];
    snprintf(routee, sizeof routee, "routee-%d", k);
    const char *labels[] = {router, routee, outcome};
    return hg_counter(d, "router_routee_outcomes_total", labels, 3);
}

static uint64_t outcomes_of(hg_data *d, const char *router, int size)
{
    static const char *const names[] = {"win", "loss", "error", "timeout"};
    uint64_t n = 0;
    for (int k = 1; k <= size; k++)
        for (int o = 0; o < 4; o++)
            n += hg_outcome(d, router, k, names[o]);
    return n;
}

void hg_wait_outcomes(hg_data *d, const char *router, int size, uint64_t total)
{
    for (double end = ts_now() + TS_WAIT_S; outcomes_of(d, router, size) < total;) {
        if (ts_now() > end)
            fail_msg("%s: %llu outcomes counted, expected %llu", router,
                     (unsigned long long)outcomes_of(d, router, size),
                     (unsigned long long)total);
        ts_sleep_ms(1);
    }
}

ac_status hg_wait(ac_future *f, ac_answer *a)
{
    assert_non_null(f);
    ac_status st = ac_future_wait(f, HG_WAIT_MS, a);
    if (st == AC_EPENDING)
        fail_msg("the ask was not answered within %.0f s", TS_WAIT_S);
    return st;
}

void hg_assert_pending(ac_future *f, const char *what)
{
    ac_answer a = {0};
    if (ac_future_poll(f, &a)) {
        char *e = ac_error_to_string(a.error);
        fail_msg("%s: expected the ask to be open, but it settled (%s; reply %s)", what,
                 e ? e : "no error", a.reply ? ac_msg_str(a.reply) : "none");
    }
}

void hg_assert_reply(ac_status st, const ac_answer *a, hg_data *d, int k, const char *key)
{
    char want[64];
    snprintf(want, sizeof want, "routee-%d:%s", k, key);
    if (st != AC_OK || a->reply == NULL) {
        char *e = ac_error_to_string(a->error);
        fail_msg("expected \"%s\", got %s: %s", want, ac_status_name(st), e ? e : "(no error)");
    }
    const char *got = ac_msg_str(a->reply);
    if (got == NULL || strcmp(got, want) != 0)
        fail_msg("expected \"%s\", got \"%s\"", want, got ? got : "?");
    if (a->sender != atomic_load(&d->self[k]))
        fail_msg("the reply's sender is %s, expected routee-%d",
                 a->sender ? ac_ref_path(a->sender) : "NULL", k);
}

void hg_assert_aggregate(ac_status st, const ac_answer *a, const char *message, size_t members)
{
    if (st != AC_EFAILED || a->error == NULL || !ac_error_is(a->error, AC_AGGREGATE_ERROR) ||
        strcmp(ac_error_message(a->error), message) != 0 ||
        ac_error_member_count(a->error) != members || a->reply != NULL) {
        char *e = ac_error_to_string(a->error);
        fail_msg("expected %s with AggregateError \"%s\" and %zu members;\n got %s with:\n%s",
                 ac_status_name(AC_EFAILED), message, members, ac_status_name(st),
                 e ? e : (a->reply ? ac_msg_str(a->reply) : "(nothing)"));
    }
}
