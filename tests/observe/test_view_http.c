/*
 * The view over HTTP, beside /metrics: GET /view and /view/actors as
 * JSON with paging, the observer page at /, and bad requests — unknown
 * paths, other methods, page sizes beyond the limit, offsets and limits
 * that are not counts, and a slow client that holds a connection while
 * the view is read (the endpoint's limits apply to every path).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics_test_util.h"
#include "ob_demo.h"
#include "ts_test.h"

static ac_system *make_system(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "view-http", &(ac_system_options){.workers = 2});
    assert_non_null(sys);
    return sys;
}

static int serve(ac_system *sys, int64_t request_timeout_ms)
{
    ac_metrics_http_options o = {.request_timeout_ms = request_timeout_ms};
    assert_status(ac_metrics_serve(sys, &o), AC_OK);
    return ac_metrics_http_port(sys);
}

static json_t *get_json(int port, const char *path, int status)
{
    mt_response r = mt_http(port, "GET", path);
    if (r.status != status)
        fail_msg("GET %s: %d, expected %d: %.300s", path, r.status, status, r.body ? r.body : "");
    assert_non_null(r.content_type);
    assert_string_equal(r.content_type, "application/json");
    json_error_t err;
    json_t *doc = json_loads(r.body, 0, &err);
    if (!doc)
        fail_msg("GET %s: not JSON (%s): %.300s", path, err.text, r.body);
    mt_response_free(&r);
    return doc;
}

static void test_view_beside_metrics(void **state)
{
    ac_system *sys = make_system(state);
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
    int port = serve(sys, 0);
    json_t *doc = get_json(port, "/view", 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    assert_int_equal(json_array_size(json_object_get(doc, "routers")), 6);
    json_t *actors = json_object_get(doc, "actors");
    assert_true(json_integer_value(json_object_get(actors, "total")) > 10);
    json_decref(doc);
    /* /metrics is where it was. */
    mt_response r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    assert_true(mt_has_line(r.body, "# TYPE actorc_messages_processed_total counter"));
    mt_response_free(&r);
    ob_demo_release(&d);
}

static void test_paging(void **state)
{
    ac_system *sys = make_system(state);
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
    int port = serve(sys, 0);
    json_t *page = get_json(port, "/view/actors?offset=2&limit=5", 200);
    assert_int_equal(json_integer_value(json_object_get(page, "offset")), 2);
    assert_int_equal(json_integer_value(json_object_get(page, "limit")), 5);
    assert_int_equal(json_array_size(json_object_get(page, "items")), 5);
    assert_null(json_object_get(page, "routers")); /* the page alone */
    json_decref(page);
    json_t *doc = get_json(port, "/view?limit=1000", 200);
    json_t *actors = json_object_get(doc, "actors");
    assert_int_equal(json_array_size(json_object_get(actors, "items")),
                     json_integer_value(json_object_get(actors, "total")));
    json_decref(doc);
    doc = get_json(port, "/view?offset=100000000&limit=1", 200);
    assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "actors"), "items")), 0);
    json_decref(doc);
    ob_demo_release(&d);
}

static void test_bad_requests(void **state)
{
    ac_system *sys = make_system(state);
    int port = serve(sys, 0);
    static const char *const bad[] = {
        "/view?limit=1001",         "/view/actors?limit=99999999999", "/view?limit=abc",
        "/view?offset=-1",          "/view?limit=",                   "/view/actors?offset=1e3",
        "/view?limit=1000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *err = get_json(port, bad[i], 400);
        const char *msg = json_string_value(json_object_get(err, "error"));
        if (!msg || !*msg)
            fail_msg("GET %s: no error message", bad[i]);
        json_decref(err);
    }
    static const char *const missing[] = {"/view/", "/views", "/view/actors/x", "/index.html"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        mt_response r = mt_http(port, "GET", missing[i]);
        assert_int_equal(r.status, 404);
        mt_response_free(&r);
    }
    static const char *const methods[] = {"POST", "PUT", "DELETE"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        mt_response r = mt_http(port, methods[i], "/view");
        assert_int_equal(r.status, 405);
        mt_response_free(&r);
    }
    mt_response r = mt_http(port, "HEAD", "/view");
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    mt_response_free(&r);
}

static void test_observer_page(void **state)
{
    ac_system *sys = make_system(state);
    int port = serve(sys, 0);
    mt_response r = mt_http(port, "GET", "/");
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/html; charset=utf-8");
    assert_non_null(strstr(r.body, "<title>actorc observer</title>"));
    assert_non_null(strstr(r.body, "/view"));
    /* Self-contained: nothing loaded from elsewhere. */
    assert_null(strstr(r.body, "src=\"http"));
    assert_null(strstr(r.body, "href=\"http"));
    assert_null(strstr(r.body, "//cdn"));
    mt_response_free(&r);
}

/* A client that connects, sends half a request and stays: the view is
 * served to others meanwhile, and the slow one is closed at the request
 * deadline. */
static void test_slow_client(void **state)
{
    ac_system *sys = make_system(state);
    int port = serve(sys, 500);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char *half = "GET /view?limit=10 HTTP/1.1\r\nHost: x\r\n";
    assert_int_equal(write(fd, half, strlen(half)), (ssize_t)strlen(half));
    for (int i = 0; i < 5; i++) {
        json_t *doc = get_json(port, "/view", 200);
        json_decref(doc);
    }
    /* Closed by the server once its deadline passed: read sees the end. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
    }
    assert_int_equal(n, 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_view_beside_metrics), TS_UNIT(test_paging),
        TS_UNIT(test_bad_requests),        TS_UNIT(test_observer_page),
        TS_UNIT(test_slow_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
