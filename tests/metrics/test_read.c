/*
 * ac_metrics_read: a series' value by family name and label values, the
 * same value the exposition prints; for user families of each kind and
 * for the runtime's own (messages processed, the scatter/gather
 * families). It never creates a series, and each bad argument fails with
 * its own status and a reason, leaving *out zeroed.
 */
#define _POSIX_C_SOURCE 200809L

#include "metrics_test_util.h"
#include "ts_test.h"

#define RESOLVED "router_scatter_gather_resolved_total"
#define LATENCY "router_scatter_gather_latency_seconds"
#define MESSAGES "actorc_messages_processed_total"

static ac_system *metrics_system(void **state, const char *name)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 2, .metrics = true};
    ac_system *sys = ts_fx_system(fx, name, &o);
    assert_non_null(sys);
    return sys;
}

static ac_metric_value read_ok(ac_system *sys, const char *name, const char *const *values,
                               size_t n)
{
    ac_metric_value v;
    assert_status(ac_metrics_read(sys, name, values, n, &v), AC_OK);
    return v;
}

static double sample(ac_system *sys, const char *series)
{
    char *text = ac_metrics_format(sys);
    assert_non_null(text);
    double v = mt_sample(text, series);
    free(text);
    return v;
}

/* Read, format, read: when both reads agree, nothing changed in between
 * (the values only grow), so the text must show that value. */
static void assert_count_matches_text(ac_system *sys, const char *name, const char *const *values,
                                      size_t n, const char *series)
{
    double end = ts_now() + TS_WAIT_S;
    for (;;) {
        ac_metric_value before = read_ok(sys, name, values, n);
        double shown = sample(sys, series);
        ac_metric_value after = read_ok(sys, name, values, n);
        if (before.count == after.count) {
            assert_true(shown == (double)before.count);
            return;
        }
        if (ts_now() > end) {
            fail_msg("%s kept changing", series);
        }
    }
}

/* ---- user families ------------------------------------------------------ */

static void test_user_families(void **state)
{
    ac_system *sys = metrics_system(state, "read_user");
    static const char *const labels[] = {"method", "code"};
    ac_metric_options co = {.help = "Requests.", .label_names = labels, .label_count = 2};
    ac_metric_family *cf = ac_metrics_counter(sys, "app_requests_total", &co);
    assert_non_null(cf);
    static const char *const get200[] = {"GET", "200"};
    static const char *const post500[] = {"POST", "500"};
    ac_counter_add(ac_counter_series(cf, get200), 41);
    ac_counter_inc(ac_counter_series(cf, get200));
    ac_counter_inc(ac_counter_series(cf, post500));

    ac_metric_value v = read_ok(sys, "app_requests_total", get200, 2);
    assert_int_equal(v.kind, AC_METRIC_COUNTER);
    assert_int_equal(v.count, 42);
    assert_true(v.value == 42.0);
    assert_true(v.sum == 0.0);
    assert_true(sample(sys, "app_requests_total{method=\"GET\",code=\"200\"}") == 42.0);
    assert_int_equal(read_ok(sys, "app_requests_total", post500, 2).count, 1);

    ac_metric_family *gf = ac_metrics_gauge(sys, "app_temperature", NULL);
    ac_gauge_set(ac_gauge_series(gf, NULL), 21.5);
    ac_gauge_sub(ac_gauge_series(gf, NULL), 1.25);
    v = read_ok(sys, "app_temperature", NULL, 0);
    assert_int_equal(v.kind, AC_METRIC_GAUGE);
    assert_true(v.value == 20.25);
    assert_int_equal(v.count, 0);
    assert_true(sample(sys, "app_temperature") == v.value);

    static const char *const route[] = {"route"};
    ac_metric_options ho = {.label_names = route, .label_count = 1};
    ac_metric_family *hf = ac_metrics_histogram(sys, "app_latency_seconds", &ho);
    static const char *const home[] = {"/home"};
    ac_histogram *h = ac_histogram_series(hf, home);
    ac_histogram_observe(h, 0.003);
    ac_histogram_observe(h, 0.2);
    ac_histogram_observe(h, 100); /* beyond every bound: +Inf */
    v = read_ok(sys, "app_latency_seconds", home, 1);
    assert_int_equal(v.kind, AC_METRIC_HISTOGRAM);
    assert_int_equal(v.count, 3);
    assert_true(v.sum == 0.003 + 0.2 + 100);
    assert_true(v.value == 0.0);
    assert_true(sample(sys, "app_latency_seconds_count{route=\"/home\"}") == 3.0);
    assert_true(sample(sys, "app_latency_seconds_sum{route=\"/home\"}") == v.sum);
    /* A family with labels has no series until one is used. */
    static const char *const other[] = {"/other"};
    assert_status(ac_metrics_read(sys, "app_latency_seconds", other, 1, &v), AC_ENOTFOUND);
}

/* Reading an unknown label set does not create it. */
static void test_read_creates_nothing(void **state)
{
    ac_system *sys = metrics_system(state, "read_nothing");
    static const char *const kind[] = {"kind"};
    ac_metric_options o = {.label_names = kind, .label_count = 1, .max_series = 1};
    ac_metric_family *f = ac_metrics_counter(sys, "app_things_total", &o);
    assert_non_null(f);
    static const char *const a[] = {"a"}, *const b[] = {"b"};
    ac_metric_value v;
    assert_status(ac_metrics_read(sys, "app_things_total", b, 1, &v), AC_ENOTFOUND);
    /* The cap of one series is still free for "a". */
    ac_counter *ca = ac_counter_series(f, a);
    assert_non_null(ca);
    ac_counter_inc(ca);
    char *text = ac_metrics_format(sys);
    assert_non_null(text);
    assert_null(strstr(text, "kind=\"b\""));
    assert_true(mt_sample(text, "app_things_total{kind=\"a\"}") == 1.0);
    free(text);
    assert_status(ac_metrics_read(sys, "app_things_total", b, 1, &v), AC_ENOTFOUND);
    assert_int_equal(read_ok(sys, "app_things_total", a, 1).count, 1);
}

/* ---- the runtime's families --------------------------------------------- */

static atomic_llong g_handled;

static void counter_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
    atomic_fetch_add(&g_handled, 1);
}

static const ac_actor_def counter_def = {.name = "Counter", .receive = counter_receive};

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_str_new(ac_self_name(ctx)));
}

static const ac_actor_def replica_def = {.name = "Replica", .receive = replica_receive};

typedef struct read_cond {
    ac_system *sys;
    const char *name;
    const char *const *values;
    size_t n;
    uint64_t count;
} read_cond;

static bool count_reached(void *arg)
{
    read_cond *c = arg;
    ac_metric_value v;
    return ac_metrics_read(c->sys, c->name, c->values, c->n, &v) == AC_OK && v.count >= c->count;
}

static void test_messages_processed(void **state)
{
    ac_system *sys = metrics_system(state, "read_runtime");
    atomic_store(&g_handled, 0);
    ac_ref *a = ts_spawn(sys, &counter_def, NULL, "a");
    ac_ref *b = ts_spawn(sys, &counter_def, NULL, "b");
    for (int i = 0; i < 500; i++) {
        assert_status(ac_tell(i % 2 ? a : b, ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_eventually(ts_wait_eq(&g_handled, 500, TS_WAIT_S), "500 handled");
    /* Counted at the end of each turn, a moment after the handler ran;
     * the two workers count into different shards. */
    read_cond c = {sys, MESSAGES, NULL, 0, 500};
    assert_eventually(ts_wait_until(count_reached, &c, TS_WAIT_S), "500 counted");
    ac_metric_value v = read_ok(sys, MESSAGES, NULL, 0);
    assert_int_equal(v.kind, AC_METRIC_COUNTER);
    assert_true(v.count >= 500);
    assert_count_matches_text(sys, MESSAGES, NULL, 0, MESSAGES);
    assert_count_matches_text(sys, "actorc_actors_started_total", NULL, 0,
                              "actorc_actors_started_total");
    assert_true(read_ok(sys, "actorc_actors_started_total", NULL, 0).count >= 2);
    ac_ref_release(a);
    ac_ref_release(b);
}

static void test_scatter_gather_families(void **state)
{
    ac_system *sys = metrics_system(state, "read_sg");
    ac_ref *router = ac_spawn(sys, ac_router_scatter_gather_first_completed(3, &replica_def,
                                                                            NULL, NULL),
                              "replicas");
    assert_non_null(router);
    static const char *const first[] = {"first"};
    static const char *const none[] = {"no-reply-target"};
    static const char *const stopped[] = {"stopped"};
    assert_int_equal(read_ok(sys, RESOLVED, first, 1).count, 0);
    for (int i = 0; i < 3; i++) {
        ac_answer ans;
        assert_status(ac_ask_wait(router, ac_msg_str_new("k"), 5000, &ans), AC_OK);
        ac_answer_release(&ans);
    }
    /* Counted before the caller is answered: exact at once. */
    ac_metric_value v = read_ok(sys, RESOLVED, first, 1);
    assert_int_equal(v.kind, AC_METRIC_COUNTER);
    assert_int_equal(v.count, 3);
    assert_int_equal(read_ok(sys, RESOLVED, stopped, 1).count, 0);

    ac_metric_value lat = read_ok(sys, LATENCY, NULL, 0);
    assert_int_equal(lat.kind, AC_METRIC_HISTOGRAM);
    assert_int_equal(lat.count, 3);
    assert_true(lat.sum > 0.0);
    assert_true(sample(sys, LATENCY "_count") == 3.0);
    assert_true(sample(sys, LATENCY "_sum") == lat.sum);

    assert_status(ac_tell(router, ac_msg_str_new("nobody asked"), NULL), AC_OK);
    read_cond c = {sys, RESOLVED, none, 1, 1};
    assert_eventually(ts_wait_until(count_reached, &c, TS_WAIT_S), "no-reply-target counted");
    assert_count_matches_text(sys, RESOLVED, none, 1, RESOLVED "{outcome=\"no-reply-target\"}");
    assert_int_equal(read_ok(sys, LATENCY, NULL, 0).count, 3); /* nothing observed for it */
    ac_ref_release(router);
}

/* ---- bad input ----------------------------------------------------------- */

static const ac_metric_value garbage = {.kind = AC_METRIC_GAUGE, .value = 7, .count = 7, .sum = 7};

static void assert_zeroed(const ac_metric_value *v)
{
    assert_int_equal(v->kind, 0);
    assert_true(v->value == 0.0 && v->count == 0 && v->sum == 0.0);
}

/* The read fails with `want`, a reason mentioning `needle`, *out zeroed. */
static void expect_fail(ac_system *sys, const char *name, const char *const *values, size_t n,
                        ac_status want, const char *needle)
{
    ac_metric_value v = garbage;
    ac_clear_error();
    assert_status(ac_metrics_read(sys, name, values, n, &v), want);
    assert_last_error(want);
    if (!strstr(ac_last_error(), needle)) {
        fail_msg("error \"%s\" does not mention \"%s\"", ac_last_error(), needle);
    }
    assert_zeroed(&v);
}

static void test_bad_input(void **state)
{
    ts_fixture *fx = *state;
    ac_system *off = ts_fx_system(fx, "read_off", NULL);
    assert_non_null(off);
    expect_fail(off, MESSAGES, NULL, 0, AC_EINVAL, "metrics are off");
    expect_fail(NULL, MESSAGES, NULL, 0, AC_EINVAL, "system is NULL");
    assert_status(ts_fx_terminate(fx), AC_OK);

    ac_system *sys = metrics_system(state, "read_bad");
    /* Routing's labelled family is there once a scatter/gather router is. */
    ac_ref *router = ac_spawn(sys, ac_router_scatter_gather_first_completed(1, &replica_def,
                                                                            NULL, NULL),
                              "replicas");
    assert_non_null(router);
    expect_fail(sys, NULL, NULL, 0, AC_EINVAL, "name is NULL");
    ac_clear_error();
    assert_status(ac_metrics_read(sys, MESSAGES, NULL, 0, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "out is NULL"));

    expect_fail(sys, "app_nothing_total", NULL, 0, AC_ENOTFOUND, "app_nothing_total");
    /* A histogram is read by its family name, not a sample's. */
    expect_fail(sys, LATENCY "_count", NULL, 0, AC_ENOTFOUND, LATENCY "_count");

    static const char *const first[] = {"first"};
    static const char *const two[] = {"first", "extra"};
    expect_fail(sys, RESOLVED, NULL, 0, AC_EINVAL, "\"outcome\"");
    expect_fail(sys, RESOLVED, two, 2, AC_EINVAL, "2 label values");
    expect_fail(sys, MESSAGES, first, 1, AC_EINVAL, "1 label values");
    expect_fail(sys, RESOLVED, NULL, 1, AC_EINVAL, "label_values is NULL");
    static const char *const null_value[] = {NULL};
    expect_fail(sys, RESOLVED, null_value, 1, AC_EINVAL, "is NULL");
    static const char *const unknown[] = {"sideways"};
    expect_fail(sys, RESOLVED, unknown, 1, AC_ENOTFOUND, "no series");
    /* And a good read after all that. */
    assert_int_equal(read_ok(sys, RESOLVED, first, 1).kind, AC_METRIC_COUNTER);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_user_families),        TS_UNIT(test_read_creates_nothing),
        TS_UNIT(test_messages_processed),   TS_UNIT(test_scatter_gather_families),
        TS_UNIT(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
