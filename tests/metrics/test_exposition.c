/*
 * The registry's API and the exact exposition text: the runtime's families
 * on a fresh system, routing's once a scatter/gather router is spawned, a counter with labels, gauges, a histogram with
 * custom buckets, escaping, registration rules and bad arguments (among
 * them bucket counts beyond AC_METRICS_MAX_BUCKETS).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "metrics_test_util.h"
#include "ts_test.h"

static ac_system *metrics_system(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options o = {.workers = 1, .metrics = true};
    ac_system *sys = ts_fx_system(fx, "expo", &o);
    assert_non_null(sys);
    return sys;
}

/* The text registered after the runtime's families: from the first line
 * that starts with `first_line` to the end. */
static char *user_part(ac_system *sys, const char *first_line)
{
    char *text = ac_metrics_format(sys);
    assert_non_null(text);
    char *at = strstr(text, first_line);
    if (!at || (at != text && at[-1] != '\n'))
        fail_msg("no line \"%s\" in:\n%s", first_line, text);
    char *part = strdup(at);
    free(text);
    return part;
}

static void assert_text(const char *actual, const char *expected)
{
    if (strcmp(actual, expected) != 0)
        fail_msg("exposition differs.\n--- expected:\n%s--- actual:\n%s---", expected, actual);
}

/* ---- golden texts ------------------------------------------------------- */

static const char runtime_page[] =
    "# HELP actorc_actors_started_total Actors started.\n"
    "# TYPE actorc_actors_started_total counter\n"
    "actorc_actors_started_total 0\n"
    "# HELP actorc_actors_stopped_total Actors stopped.\n"
    "# TYPE actorc_actors_stopped_total counter\n"
    "actorc_actors_stopped_total 0\n"
    "# HELP actorc_messages_processed_total Messages handled by actors.\n"
    "# TYPE actorc_messages_processed_total counter\n"
    "actorc_messages_processed_total 0\n"
    "# HELP actorc_dead_letters_total Messages that could not be delivered (dead letters).\n"
    "# TYPE actorc_dead_letters_total counter\n"
    "actorc_dead_letters_total 0\n"
    "# HELP actorc_ask_timeouts_total Asks that timed out without an answer.\n"
    "# TYPE actorc_ask_timeouts_total counter\n"
    "actorc_ask_timeouts_total 0\n"
    "# HELP actorc_restarts_total Actor restarts by supervisors.\n"
    "# TYPE actorc_restarts_total counter\n"
    "actorc_restarts_total 0\n";

/* Routing's two families, once a scatter/gather router is spawned. */
static const char scatter_gather_page[] =
    "# HELP router_scatter_gather_resolved_total Scatter/gather messages resolved, by outcome.\n"
    "# TYPE router_scatter_gather_resolved_total counter\n"
    "router_scatter_gather_resolved_total{outcome=\"first\"} 0\n"
    "router_scatter_gather_resolved_total{outcome=\"timeout\"} 0\n"
    "router_scatter_gather_resolved_total{outcome=\"all-failed\"} 0\n"
    "router_scatter_gather_resolved_total{outcome=\"stopped\"} 0\n"
    "router_scatter_gather_resolved_total{outcome=\"no-reply-target\"} 0\n"
    "# HELP router_scatter_gather_latency_seconds Seconds from scattering a message to "
    "answering its caller.\n"
    "# TYPE router_scatter_gather_latency_seconds histogram\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.005\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.01\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.025\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.05\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.1\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.25\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"0.5\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"1\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"2.5\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"5\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"10\"} 0\n"
    "router_scatter_gather_latency_seconds_bucket{le=\"+Inf\"} 0\n"
    "router_scatter_gather_latency_seconds_sum 0\n"
    "router_scatter_gather_latency_seconds_count 0\n";

static void test_runtime_families_on_a_fresh_system(void **state)
{
    ac_system *sys = metrics_system(state);
    assert_true(ac_metrics_enabled(sys));
    char *text = ac_metrics_format(sys);
    assert_non_null(text);
    assert_text(text, runtime_page);
    free(text);
}

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_str_new("ok"));
}

static const ac_actor_def replica_def = {.name = "Replica", .receive = replica_receive};

/* Registered by the spawn itself: there when ac_spawn returns. */
static void test_scatter_gather_families_from_a_routers_spawn(void **state)
{
    ac_system *sys = metrics_system(state);
    ac_ref *router = ac_spawn(
        sys, ac_router_scatter_gather_first_completed(3, &replica_def, NULL, NULL), "replicas");
    assert_non_null(router);
    char *part = user_part(sys, "# HELP router_scatter_gather_resolved_total");
    assert_text(part, scatter_gather_page);
    free(part);
    ac_ref_release(router);
}

static void test_counter_with_labels(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const names[] = {"method", "code"};
    ac_metric_options o = {.help = "Requests handled.", .label_names = names, .label_count = 2};
    ac_metric_family *f = ac_metrics_counter(sys, "app_requests_total", &o);
    assert_non_null(f);
    ac_counter *get = ac_counter_series(f, (const char *const[]){"get", "200"});
    ac_counter *post = ac_counter_series(f, (const char *const[]){"post", "500"});
    assert_non_null(get);
    assert_non_null(post);
    ac_counter_add(get, 3);
    ac_counter_inc(post);
    /* A second lookup finds the same series. */
    assert_ptr_equal(ac_counter_series(f, (const char *const[]){"get", "200"}), get);
    ac_counter_inc(ac_counter_series(f, (const char *const[]){"get", "200"}));
    ac_counter_add(get, 0);
    assert_int_equal(ac_counter_value(get), 4);

    char *part = user_part(sys, "# HELP app_requests_total");
    assert_text(part, "# HELP app_requests_total Requests handled.\n"
                      "# TYPE app_requests_total counter\n"
                      "app_requests_total{method=\"get\",code=\"200\"} 4\n"
                      "app_requests_total{method=\"post\",code=\"500\"} 1\n");
    free(part);
}

static void test_gauges(void **state)
{
    ac_system *sys = metrics_system(state);
    ac_metric_options o = {.help = "Room temperature."};
    ac_metric_family *t = ac_metrics_gauge(sys, "app_temperature_celsius", &o);
    assert_non_null(t);
    ac_gauge *g = ac_gauge_series(t, NULL);
    ac_gauge_set(g, 21.5);
    ac_gauge_add(g, 1);
    ac_gauge_sub(g, 0.25);
    assert_true(ac_gauge_value(g) == 22.25);

    static const char *const names[] = {"queue"};
    ac_metric_options lo = {.help = "Queue depth.", .label_names = names, .label_count = 1};
    ac_metric_family *q = ac_metrics_gauge(sys, "app_queue_depth", &lo);
    ac_gauge_sub(ac_gauge_series(q, (const char *const[]){"in"}), 3.5);
    ac_gauge_set(ac_gauge_series(q, (const char *const[]){"out"}), 0.1);
    ac_gauge_set(ac_gauge_series(q, (const char *const[]){"big"}), 1e21);
    ac_gauge_set(ac_gauge_series(q, (const char *const[]){"inf"}), INFINITY);
    ac_gauge_set(ac_gauge_series(q, (const char *const[]){"-inf"}), -INFINITY);
    ac_gauge_set(ac_gauge_series(q, (const char *const[]){"nan"}), NAN);

    char *part = user_part(sys, "# HELP app_temperature_celsius");
    assert_text(part, "# HELP app_temperature_celsius Room temperature.\n"
                      "# TYPE app_temperature_celsius gauge\n"
                      "app_temperature_celsius 22.25\n"
                      "# HELP app_queue_depth Queue depth.\n"
                      "# TYPE app_queue_depth gauge\n"
                      "app_queue_depth{queue=\"in\"} -3.5\n"
                      "app_queue_depth{queue=\"out\"} 0.1\n"
                      "app_queue_depth{queue=\"big\"} 1e+21\n"
                      "app_queue_depth{queue=\"inf\"} +Inf\n"
                      "app_queue_depth{queue=\"-inf\"} -Inf\n"
                      "app_queue_depth{queue=\"nan\"} NaN\n");
    free(part);
}

static void test_histogram_with_custom_buckets(void **state)
{
    ac_system *sys = metrics_system(state);
    static const double buckets[] = {0.125, 0.5, 1, 2.5};
    static const char *const names[] = {"path"};
    ac_metric_options o = {.help = "Request duration.",
                           .label_names = names,
                           .label_count = 1,
                           .buckets = buckets,
                           .bucket_count = 4};
    ac_metric_family *f = ac_metrics_histogram(sys, "app_request_seconds", &o);
    assert_non_null(f);
    ac_histogram *h = ac_histogram_series(f, (const char *const[]){"/api"});
    ac_histogram_observe(h, 0.0625);
    ac_histogram_observe(h, 0.125); /* a bound is inclusive: le="0.125" */
    ac_histogram_observe(h, 0.75);
    ac_histogram_observe(h, 3);     /* above every bound: +Inf only */
    assert_int_equal(ac_histogram_count(h), 4);
    assert_true(ac_histogram_sum(h) == 3.9375);
    /* A second series is exposed after the first, with its own buckets. */
    ac_histogram_observe(ac_histogram_series(f, (const char *const[]){"/"}), 0.5);

    char *part = user_part(sys, "# HELP app_request_seconds");
    assert_text(part, "# HELP app_request_seconds Request duration.\n"
                      "# TYPE app_request_seconds histogram\n"
                      "app_request_seconds_bucket{path=\"/api\",le=\"0.125\"} 2\n"
                      "app_request_seconds_bucket{path=\"/api\",le=\"0.5\"} 2\n"
                      "app_request_seconds_bucket{path=\"/api\",le=\"1\"} 3\n"
                      "app_request_seconds_bucket{path=\"/api\",le=\"2.5\"} 3\n"
                      "app_request_seconds_bucket{path=\"/api\",le=\"+Inf\"} 4\n"
                      "app_request_seconds_sum{path=\"/api\"} 3.9375\n"
                      "app_request_seconds_count{path=\"/api\"} 4\n"
                      "app_request_seconds_bucket{path=\"/\",le=\"0.125\"} 0\n"
                      "app_request_seconds_bucket{path=\"/\",le=\"0.5\"} 1\n"
                      "app_request_seconds_bucket{path=\"/\",le=\"1\"} 1\n"
                      "app_request_seconds_bucket{path=\"/\",le=\"2.5\"} 1\n"
                      "app_request_seconds_bucket{path=\"/\",le=\"+Inf\"} 1\n"
                      "app_request_seconds_sum{path=\"/\"} 0.5\n"
                      "app_request_seconds_count{path=\"/\"} 1\n");
    free(part);
}

static void test_histogram_trailing_inf_and_nan(void **state)
{
    ac_system *sys = metrics_system(state);
    static const double buckets[] = {1, INFINITY};
    ac_metric_options o = {.help = "h.", .buckets = buckets, .bucket_count = 2};
    ac_histogram *h = ac_histogram_series(ac_metrics_histogram(sys, "app_h", &o), NULL);
    assert_non_null(h);
    ac_histogram_observe(h, NAN);
    char *part = user_part(sys, "# HELP app_h");
    assert_text(part, "# HELP app_h h.\n"
                      "# TYPE app_h histogram\n"
                      "app_h_bucket{le=\"1\"} 0\n"
                      "app_h_bucket{le=\"+Inf\"} 1\n"
                      "app_h_sum NaN\n"
                      "app_h_count 1\n");
    free(part);
}

static void test_escaping(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const names[] = {"text"};
    ac_metric_options o = {.help = "Help with \\ a backslash,\na newline and \"quotes\".",
                           .label_names = names,
                           .label_count = 1};
    ac_metric_family *f = ac_metrics_counter(sys, "app_escaped_total", &o);
    ac_counter_inc(ac_counter_series(f, (const char *const[]){"a\\b\"c\nd"}));
    ac_counter_inc(ac_counter_series(f, (const char *const[]){""}));
    ac_counter_inc(ac_counter_series(f, (const char *const[]){"caf\xc3\xa9 {x=\"1\"}"}));
    char *part = user_part(sys, "# HELP app_escaped_total");
    assert_text(part,
                "# HELP app_escaped_total Help with \\\\ a backslash,\\na newline and "
                "\"quotes\".\n"
                "# TYPE app_escaped_total counter\n"
                "app_escaped_total{text=\"a\\\\b\\\"c\\nd\"} 1\n"
                "app_escaped_total{text=\"\"} 1\n"
                "app_escaped_total{text=\"caf\xc3\xa9 {x=\\\"1\\\"}\"} 1\n");
    free(part);
}

static void test_family_without_help_and_empty_family(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const names[] = {"k"};
    ac_metric_options o = {.label_names = names, .label_count = 1};
    /* A labelled family without series is left out altogether. */
    assert_non_null(ac_metrics_counter(sys, "app_unused_total", &o));
    ac_counter_add(ac_counter_series(ac_metrics_counter(sys, "app_plain_total", NULL), NULL), 7);
    char *part = user_part(sys, "# TYPE app_plain_total");
    assert_text(part, "# TYPE app_plain_total counter\napp_plain_total 7\n");
    free(part);
    char *text = ac_metrics_format(sys);
    assert_null(strstr(text, "app_unused_total"));
    free(text);
}

/* ---- registration rules --------------------------------------------------- */

static void test_reregistering(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const ab[] = {"a", "b"};
    static const char *const ba[] = {"b", "a"};
    ac_metric_options o = {.help = "x", .label_names = ab, .label_count = 2};
    ac_metric_family *f = ac_metrics_counter(sys, "app_x_total", &o);
    assert_non_null(f);
    /* Same definition: the same family (help may differ). */
    ac_metric_options o2 = {.help = "other", .label_names = ab, .label_count = 2};
    assert_ptr_equal(ac_metrics_counter(sys, "app_x_total", &o2), f);
    /* Other labels, or another kind: taken. */
    ac_metric_options o3 = {.label_names = ba, .label_count = 2};
    assert_null(ac_metrics_counter(sys, "app_x_total", &o3));
    assert_last_error(AC_EEXIST);
    assert_null(ac_metrics_gauge(sys, "app_x_total", &o));
    assert_last_error(AC_EEXIST);
    /* The runtime's families can be fetched like any other. */
    ac_metric_family *r = ac_metrics_counter(sys, "actorc_restarts_total", NULL);
    assert_non_null(r);
    assert_int_equal(ac_counter_value(ac_counter_series(r, NULL)), 0);
    /* A histogram owns its _bucket, _sum and _count names. */
    assert_non_null(ac_metrics_histogram(sys, "app_lat", NULL));
    assert_null(ac_metrics_counter(sys, "app_lat_count", NULL));
    assert_last_error(AC_EEXIST);
    assert_non_null(ac_metrics_gauge(sys, "app_y_sum", NULL));
    assert_null(ac_metrics_histogram(sys, "app_y", NULL));
    assert_last_error(AC_EEXIST);
    /* Same histogram, other buckets: taken. */
    static const double b[] = {1, 2};
    ac_metric_options hb = {.buckets = b, .bucket_count = 2};
    assert_null(ac_metrics_histogram(sys, "app_lat", &hb));
    assert_last_error(AC_EEXIST);
}

static void test_bad_arguments(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const dup[] = {"a", "a"};
    static const char *const le[] = {"le"};
    static const char *const reserved[] = {"__x"};
    static const char *const bad[] = {"a-b"};
    static const double unsorted[] = {1, 0.5};
    static const double nan_bucket[] = {NAN};

    assert_null(ac_metrics_counter(sys, "1abc", NULL));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "", NULL));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, NULL, NULL));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "a b", NULL));
    assert_last_error(AC_EINVAL);
    assert_non_null(ac_metrics_counter(sys, "ns:ok_total", NULL)); /* colons are fine */
    assert_null(ac_metrics_counter(sys, "app_t", &(ac_metric_options){.label_names = dup,
                                                                      .label_count = 2}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "app_t", &(ac_metric_options){.label_names = bad,
                                                                      .label_count = 1}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "app_t", &(ac_metric_options){.label_names = reserved,
                                                                      .label_count = 1}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "app_t", &(ac_metric_options){.label_count = 1}));
    assert_last_error(AC_EINVAL);
    /* "le" is fine on a counter, not on a histogram. */
    assert_non_null(ac_metrics_counter(sys, "app_le_total",
                                       &(ac_metric_options){.label_names = le, .label_count = 1}));
    assert_null(ac_metrics_histogram(sys, "app_h", &(ac_metric_options){.label_names = le,
                                                                       .label_count = 1}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_histogram(sys, "app_h", &(ac_metric_options){.buckets = unsorted,
                                                                       .bucket_count = 2}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_histogram(sys, "app_h", &(ac_metric_options){.buckets = nan_bucket,
                                                                       .bucket_count = 1}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_histogram(sys, "app_h", &(ac_metric_options){.buckets = unsorted,
                                                                       .bucket_count = 0}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(NULL, "app_t", NULL));
    assert_last_error(AC_EINVAL);
}

/* The count is checked before the array is read: a wild bucket_count with
 * a short array is refused, not read past (it once segfaulted). At most
 * AC_METRICS_MAX_BUCKETS finite bounds, plus a trailing +Inf. */
static void test_histogram_bucket_count_bounds(void **state)
{
    ac_system *sys = metrics_system(state);
    static const double two[] = {0.5, 1};
    static const size_t wild[] = {(size_t)1 << 40, SIZE_MAX, AC_METRICS_MAX_BUCKETS + 2};
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
        ac_clear_error();
        ac_metric_options o = {.buckets = two, .bucket_count = wild[i]};
        assert_null(ac_metrics_histogram(sys, "app_wild", &o));
        assert_last_error(AC_EINVAL);
        assert_non_null(strstr(ac_last_error(), "AC_METRICS_MAX_BUCKETS"));
    }
    /* A count without an array is refused too, not taken for the default. */
    ac_clear_error();
    assert_null(ac_metrics_histogram(sys, "app_wild", &(ac_metric_options){.bucket_count = 2}));
    assert_last_error(AC_EINVAL);

    double bounds[AC_METRICS_MAX_BUCKETS + 2];
    for (size_t i = 0; i < AC_METRICS_MAX_BUCKETS + 2; i++) {
        bounds[i] = (double)i;
    }
    ac_metric_options over = {.buckets = bounds, .bucket_count = AC_METRICS_MAX_BUCKETS + 1};
    ac_clear_error();
    assert_null(ac_metrics_histogram(sys, "app_over", &over));
    assert_last_error(AC_EINVAL);
    ac_metric_options most = {.buckets = bounds, .bucket_count = AC_METRICS_MAX_BUCKETS};
    ac_histogram *h = ac_histogram_series(ac_metrics_histogram(sys, "app_most", &most), NULL);
    assert_non_null(h);
    ac_histogram_observe(h, 1e9);
    assert_int_equal(ac_histogram_count(h), 1);
    bounds[AC_METRICS_MAX_BUCKETS] = INFINITY; /* the most, and a trailing +Inf */
    ac_metric_options inf = {.buckets = bounds, .bucket_count = AC_METRICS_MAX_BUCKETS + 1};
    assert_non_null(ac_metrics_histogram(sys, "app_most_inf", &inf));
}

static void test_series_arguments(void **state)
{
    ac_system *sys = metrics_system(state);
    static const char *const names[] = {"a", "b"};
    ac_metric_family *f =
        ac_metrics_counter(sys, "app_s_total", &(ac_metric_options){.label_names = names,
                                                                   .label_count = 2});
    assert_null(ac_counter_series(f, NULL));
    assert_last_error(AC_EINVAL);
    assert_null(ac_counter_series(f, (const char *const[]){"x", NULL}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_gauge_series(f, (const char *const[]){"x", "y"}));
    assert_last_error(AC_ETYPE);
    assert_null(ac_histogram_series(f, (const char *const[]){"x", "y"}));
    assert_last_error(AC_ETYPE);
    assert_null(ac_counter_series(NULL, NULL));
    assert_last_error(AC_EINVAL);
    /* Label values are told apart whole: ("ab","c") is not ("a","bc"). */
    ac_counter *x = ac_counter_series(f, (const char *const[]){"ab", "c"});
    ac_counter *y = ac_counter_series(f, (const char *const[]){"a", "bc"});
    assert_non_null(x);
    assert_non_null(y);
    assert_ptr_not_equal(x, y);
}

static void test_null_handles_are_ignored(void **state)
{
    (void)state;
    ac_counter_add(NULL, 1);
    ac_counter_inc(NULL);
    ac_gauge_set(NULL, 1);
    ac_gauge_add(NULL, 1);
    ac_gauge_sub(NULL, 1);
    ac_histogram_observe(NULL, 1);
    assert_int_equal(ac_counter_value(NULL), 0);
    assert_true(ac_gauge_value(NULL) == 0.0);
    assert_int_equal(ac_histogram_count(NULL), 0);
    assert_true(ac_histogram_sum(NULL) == 0.0);
}

static void test_off_by_default(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "off", &(ac_system_options){.workers = 1});
    assert_non_null(sys);
    assert_false(ac_metrics_enabled(sys));
    assert_null(ac_metrics_format(sys));
    assert_last_error(AC_EINVAL);
    assert_null(ac_metrics_counter(sys, "app_t", NULL));
    assert_last_error(AC_EINVAL);
    /* Code written against a family that could not be made does nothing. */
    ac_counter_inc(ac_counter_series(NULL, NULL));
    /* Turned on later, it starts from the fresh page. */
    assert_status(ac_metrics_enable(sys), AC_OK);
    assert_status(ac_metrics_enable(sys), AC_OK);
    assert_true(ac_metrics_enabled(sys));
    char *text = ac_metrics_format(sys);
    assert_text(text, runtime_page);
    free(text);
    assert_status(ac_metrics_enable(NULL), AC_EINVAL);
    assert_false(ac_metrics_enabled(NULL));
    assert_null(ac_metrics_format(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_runtime_families_on_a_fresh_system),
        TS_UNIT(test_scatter_gather_families_from_a_routers_spawn),
        TS_UNIT(test_counter_with_labels),
        TS_UNIT(test_gauges),
        TS_UNIT(test_histogram_with_custom_buckets),
        TS_UNIT(test_histogram_trailing_inf_and_nan),
        TS_UNIT(test_escaping),
        TS_UNIT(test_family_without_help_and_empty_family),
        TS_UNIT(test_reregistering),
        TS_UNIT(test_bad_arguments),
        TS_UNIT(test_histogram_bucket_count_bounds),
        TS_UNIT(test_series_arguments),
        TS_UNIT(test_null_handles_are_ignored),
        TS_UNIT(test_off_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
