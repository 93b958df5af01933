/*
 * The HTTP endpoint, over real sockets: /metrics on an ephemeral port of
 * 127.0.0.1 (the view and the observer page beside it are
 * tests/observe's), 404 and 405 for the rest, HEAD, a port in use, serving twice,
 * stopping and serving again on the same port, stopping at terminate, bad
 * options (addresses, ports, limits).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics_test_util.h"
#include "ts_test.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static ac_system *make_system(void **state, bool metrics)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "http", &(ac_system_options){.workers = 1,
                                                                    .metrics = metrics});
    assert_non_null(sys);
    return sys;
}

static int serve_ephemeral(ac_system *sys)
{
    assert_status(ac_metrics_serve(sys, NULL), AC_OK);
    int port = ac_metrics_http_port(sys);
    assert_true(port > 0 && port <= 65535);
    return port;
}

/* A listening socket on 127.0.0.1 (port 0: any); its port in *port. */
static int listen_local(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_scrape_over_http(void **state)
{
    ac_system *sys = make_system(state, true);
    ac_metric_options o = {.help = "Things."};
    ac_counter_add(ac_counter_series(ac_metrics_counter(sys, "app_things_total", &o), NULL), 42);
    int port = serve_ephemeral(sys);

    mt_response r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    assert_non_null(r.content_type);
    assert_string_equal(r.content_type, CONTENT_TYPE);
    char *expected = ac_metrics_format(sys);
    assert_string_equal(r.body, expected); /* nothing runs in between */
    assert_true(mt_has_line(r.body, "app_things_total 42"));
    assert_true(mt_has_line(r.body, "# TYPE actorc_messages_processed_total counter"));
    free(expected);
    mt_response_free(&r);

    /* Every scrape renders afresh. */
    ac_counter_inc(ac_counter_series(ac_metrics_counter(sys, "app_things_total", NULL), NULL));
    r = mt_http(port, "GET", "/metrics");
    assert_true(mt_has_line(r.body, "app_things_total 43"));
    mt_response_free(&r);
}

static void test_other_paths_and_methods(void **state)
{
    ac_system *sys = make_system(state, true);
    int port = serve_ephemeral(sys);
    mt_response r = mt_http(port, "GET", "/nothing");
    assert_int_equal(r.status, 404);
    mt_response_free(&r);
    r = mt_http(port, "GET", "/metrics/more");
    assert_int_equal(r.status, 404);
    mt_response_free(&r);
    r = mt_http(port, "POST", "/metrics");
    assert_int_equal(r.status, 405);
    mt_response_free(&r);
    r = mt_http(port, "HEAD", "/metrics");
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    mt_response_free(&r);
}

static void test_port_in_use(void **state)
{
    ac_system *sys = make_system(state, true);
    int port = 0;
    int fd = listen_local(&port);
    ac_metrics_http_options o = {.port = port};
    assert_status(ac_metrics_serve(sys, &o), AC_ESYS);
    assert_last_error(AC_ESYS);
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    if (!strstr(ac_last_error(), port_text) || !strstr(ac_last_error(), "in use"))
        fail_msg("the error does not name port %d in use: \"%s\"", port, ac_last_error());
    assert_int_equal(ac_metrics_http_port(sys), 0);
    close(fd);
    /* Free again: serving there works. */
    assert_status(ac_metrics_serve(sys, &o), AC_OK);
    assert_int_equal(ac_metrics_http_port(sys), port);
}

static void test_two_systems_one_port(void **state)
{
    ac_system *a = make_system(state, true);
    int port = serve_ephemeral(a);
    ac_system *b = ac_system_create("http-b", &(ac_system_options){.workers = 1});
    assert_non_null(b);
    ac_metrics_http_options o = {.port = port};
    assert_status(ac_metrics_serve(b, &o), AC_ESYS);
    assert_non_null(strstr(ac_last_error(), "already in use"));
    assert_status(ac_system_terminate(b), AC_OK);
    /* a is unharmed. */
    mt_response r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    mt_response_free(&r);
}

static void test_serving_twice_stop_and_again(void **state)
{
    ac_system *sys = make_system(state, true);
    int port = serve_ephemeral(sys);
    assert_status(ac_metrics_serve(sys, NULL), AC_EEXIST);
    assert_int_equal(ac_metrics_http_port(sys), port);

    assert_status(ac_metrics_serve_stop(sys), AC_OK);
    assert_int_equal(ac_metrics_http_port(sys), 0);
    mt_response r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, -1); /* nobody listens */
    mt_response_free(&r);
    assert_status(ac_metrics_serve_stop(sys), AC_ENOTFOUND);

    /* The socket was closed: the same port can be served again. */
    ac_metrics_http_options o = {.address = "127.0.0.1", .port = port};
    assert_status(ac_metrics_serve(sys, &o), AC_OK);
    r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    mt_response_free(&r);
}

static void test_serve_turns_metrics_on_and_terminate_stops(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = make_system(state, false);
    assert_false(ac_metrics_enabled(sys));
    int port = serve_ephemeral(sys);
    assert_true(ac_metrics_enabled(sys));
    mt_response r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    mt_response_free(&r);
    assert_status(ts_fx_terminate(fx), AC_OK);
    r = mt_http(port, "GET", "/metrics");
    assert_int_equal(r.status, -1);
    mt_response_free(&r);
}

static void test_bad_options(void **state)
{
    ac_system *sys = make_system(state, true);
    assert_status(ac_metrics_serve(sys, &(ac_metrics_http_options){.port = 70000}), AC_EINVAL);
    assert_status(ac_metrics_serve(sys, &(ac_metrics_http_options){.port = -1}), AC_EINVAL);
    assert_status(ac_metrics_serve(sys, &(ac_metrics_http_options){.address = "localhost"}),
                  AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "localhost"));
    assert_status(ac_metrics_serve(sys, &(ac_metrics_http_options){.address = "192.0.2.1"}),
                  AC_ESYS); /* not an address of this host */
    const struct {
        ac_metrics_http_options options;
        const char *named;
    } bad_limits[] = {
        {{.request_timeout_ms = -1}, "request_timeout_ms"},
        {{.request_timeout_ms = AC_METRICS_HTTP_MAX_REQUEST_TIMEOUT_MS + 1}, "request_timeout_ms"},
        {{.max_connections = -1}, "max_connections"},
        {{.max_connections_per_address = AC_METRICS_HTTP_MAX_CONNECTIONS + 1},
         "max_connections_per_address"},
    };
    for (size_t i = 0; i < sizeof bad_limits / sizeof bad_limits[0]; i++) {
        assert_status(ac_metrics_serve(sys, &bad_limits[i].options), AC_EINVAL);
        assert_non_null(strstr(ac_last_error(), bad_limits[i].named));
    }
    assert_status(ac_metrics_serve(NULL, NULL), AC_EINVAL);
    assert_status(ac_metrics_serve_stop(NULL), AC_EINVAL);
    assert_int_equal(ac_metrics_http_port(NULL), 0);
    assert_int_equal(ac_metrics_http_port(sys), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_scrape_over_http),
        TS_UNIT(test_other_paths_and_methods),
        TS_UNIT(test_port_in_use),
        TS_UNIT(test_two_systems_one_port),
        TS_UNIT(test_serving_twice_stop_and_again),
        TS_UNIT(test_serve_turns_metrics_on_and_terminate_stops),
        TS_UNIT(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
