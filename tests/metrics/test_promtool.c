/*
 * What the endpoint serves passes `promtool check metrics` (the parser and
 * linter of the Prometheus project), with the runtime's families carrying
 * real values and user families of every kind, with labels that need
 * escaping. promtool comes with Debian's prometheus package; without it the
 * test is skipped (exit 77).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metrics_test_util.h"
#include "ts_test.h"

static bool have_promtool(void)
{
    return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* Run promtool on `page`; its exit status, with its output in `out`. */
static int promtool_check(const char *page, char *out, size_t cap)
{
    char path[] = "/tmp/actorc-metrics-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(page);
    assert_int_equal(write(fd, page, len), (ssize_t)len);
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_retain(msg));
}

static const ac_actor_def echo = {.name = "Echo", .receive = echo_receive};

static bool processed_100(void *arg)
{
    ac_metric_value v;
    return ac_metrics_read(arg, "actorc_messages_processed_total", NULL, 0, &v) == AC_OK &&
           v.value >= 100;
}

static void exercise_runtime(ac_system *sys)
{
    ac_ref *e = ts_spawn(sys, &echo, NULL, "echo");
    assert_non_null(e);
    for (int i = 0; i < 100; i++)
        assert_status(ac_tell(e, ac_msg_int64_new(i), NULL), AC_OK); /* replies: dead letters */
    ac_ref *router = ac_spawn(sys, ac_router_scatter_gather_first_completed(3, &echo, NULL, NULL),
                              "replicas");
    assert_non_null(router);
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_msg_str_new("key"), 5000, &a), AC_OK);
    ac_answer_release(&a);
    /* The echo handles its 100 on a worker of its own, and a turn's
     * messages are counted when it ends: the scatter's answer says
     * nothing of them. */
    assert_eventually(ts_wait_until(processed_100, sys, TS_WAIT_S), "100 messages counted");
    ac_ref_release(router);
    ac_ref_release(e);
}

static void add_user_families(ac_system *sys)
{
    static const char *const names[] = {"path", "method"};
    ac_metric_options o = {.help = "HTTP requests served.", .label_names = names,
                           .label_count = 2};
    ac_metric_family *req = ac_metrics_counter(sys, "app_http_requests_total", &o);
    ac_counter_add(ac_counter_series(req, (const char *const[]){"/a\\b", "GET"}), 3);
    ac_counter_add(ac_counter_series(req, (const char *const[]){"/\"quoted\"\n", "POST"}), 1);
    ac_metric_options g = {.help = "Items queued, with a \\ and a\nnewline in the help."};
    ac_gauge_set(ac_gauge_series(ac_metrics_gauge(sys, "app_queue_items", &g), NULL), -2.5);
    static const double buckets[] = {0.001, 0.01, 0.1, 1};
    static const char *const hn[] = {"op"};
    ac_metric_options h = {.help = "Operation duration in seconds.", .label_names = hn,
                           .label_count = 1, .buckets = buckets, .bucket_count = 4};
    ac_metric_family *dur = ac_metrics_histogram(sys, "app_op_duration_seconds", &h);
    for (int i = 0; i < 20; i++)
        ac_histogram_observe(ac_histogram_series(dur, (const char *const[]){"read"}),
                             0.0005 * i);
    ac_histogram_observe(ac_histogram_series(dur, (const char *const[]){"write"}), 2);
}

static void test_served_page_passes_promtool(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "promtool", &(ac_system_options){.workers = 2,
                                                                        .metrics = true});
    assert_non_null(sys);
    exercise_runtime(sys);
    add_user_families(sys);
    assert_status(ac_metrics_serve(sys, NULL), AC_OK);

    mt_response r = mt_http(ac_metrics_http_port(sys), "GET", "/metrics");
    assert_int_equal(r.status, 200);
    assert_true(mt_sample(r.body, "actorc_messages_processed_total") >= 100);
    assert_true(mt_sample(r.body, "router_scatter_gather_resolved_total{outcome=\"first\"}") == 1);
    char out[8192];
    int status = promtool_check(r.body, out, sizeof out);
    if (status != 0)
        fail_msg("promtool check metrics exited %d:\n%s\n--- the page:\n%s", status, out, r.body);
    mt_response_free(&r);
}

int main(void)
{
    if (!have_promtool()) {
        printf("promtool not found (Debian package prometheus): skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_served_page_passes_promtool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
