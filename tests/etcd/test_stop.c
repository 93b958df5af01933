/*
 * Stopping in bounded time, whatever the keeper or watcher is doing:
 * streaming an idle watch, sleeping between keep-alives, waiting out a
 * long backoff, or stuck in a request to an endpoint that never answers
 * (its timeout far away). And many starts and stops against a live
 * etcd, with other threads reading the status meanwhile (for TSan).
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include <unistd.h>

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define E(state) (((eh_fixture *)*(state))->e)
#define URL(state) (((eh_fixture *)*(state))->etcd->url)
/* Stops take a few milliseconds; the bound leaves room for sanitizers
 * and a shared machine. */
#define STOP_BOUND_S 1.5

static void check_quick(double t0, const char *what)
{
    double took = ts_now() - t0;
    print_message("%s: %.3f s\n", what, took);
    if (took > STOP_BOUND_S)
        fail_msg("%s took %.3f s", what, took);
}

static void test_stop_an_idle_watch(void **state)
{
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(E(state), "stop/idle/", ev_on_event, v, &w), AC_OK);
    ac__etcd_watch_info info;
    double end = ts_now() + TS_WAIT_S;
    while (ac__etcd_watch_status(w, &info) == AC_OK && info.state != AC__ETCD_WATCH_WATCHING &&
           ts_now() < end)
        ts_sleep_ms(10);
    assert_int_equal(info.state, AC__ETCD_WATCH_WATCHING);
    ts_sleep_ms(300);
    double t0 = ts_now();
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    check_quick(t0, "stop of an idle watch");
    ev_view_free(v);
}

static void test_unregister_between_keepalives(void **state)
{
    ac__etcd *e = E(state);
    ac__etcd_reg *reg = NULL;
    assert_status(ac__etcd_register(e, "stop/long", "v", 1, 60, &reg), AC_OK); /* every 20 s */
    ac__etcd_reg_info info;
    double end = ts_now() + TS_WAIT_S;
    while (ac__etcd_reg_status(reg, &info) == AC_OK && info.state != AC__ETCD_REG_REGISTERED &&
           ts_now() < end)
        ts_sleep_ms(10);
    assert_int_equal(info.state, AC__ETCD_REG_REGISTERED);
    double t0 = ts_now();
    assert_status(ac__etcd_unregister(reg), AC_OK);
    check_quick(t0, "unregister between keep-alives");
    assert_false(ev_etcd_has(e, "stop/long", NULL, 0));
}

static void test_stop_during_a_long_backoff(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eh_free_port());
    ac__etcd *e = eh_client(url, &(ac__etcd_options){.backoff_initial_ms = 60000,
                                                     .backoff_max_ms = 60000});
    assert_non_null(e);
    ac__etcd_reg *reg = NULL;
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_register(e, "stop/backoff", "v", 1, 5, &reg), AC_OK);
    assert_status(ac__etcd_watch_prefix(e, "stop/", ev_noop, NULL, &w), AC_OK);
    ac__etcd_reg_info ri;
    ac__etcd_watch_info wi;
    double end = ts_now() + TS_WAIT_S;
    while (ts_now() < end &&
           (ac__etcd_reg_status(reg, &ri) != AC_OK || ri.state != AC__ETCD_REG_RETRYING ||
            ac__etcd_watch_status(w, &wi) != AC_OK || wi.state != AC__ETCD_WATCH_RETRYING))
        ts_sleep_ms(10);
    assert_int_equal(ri.state, AC__ETCD_REG_RETRYING);
    assert_int_equal(wi.state, AC__ETCD_WATCH_RETRYING);
    double t0 = ts_now();
    assert_status(ac__etcd_unregister(reg), AC_OK);
    check_quick(t0, "unregister in a 60 s backoff");
    t0 = ts_now();
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    check_quick(t0, "stop of a watch in a 60 s backoff");
    assert_status(ac__etcd_close(e), AC_OK);
}

static void test_stop_during_a_request_that_hangs(void **state)
{
    (void)state;
    int port = 0;
    int fd = eh_silent_listener(&port);
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    ac__etcd *e = eh_client(url, &(ac__etcd_options){.request_timeout_ms = 60000,
                                                     .connect_timeout_ms = 60000});
    assert_non_null(e);
    ac__etcd_reg *reg = NULL;
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_register(e, "stop/hang", "v", 1, 5, &reg), AC_OK);
    assert_status(ac__etcd_watch_prefix(e, "stop/", ev_noop, NULL, &w), AC_OK);
    ts_sleep_ms(300); /* both in their first request, which will not end */
    ac__etcd_reg_info ri;
    assert_status(ac__etcd_reg_status(reg, &ri), AC_OK);
    assert_int_equal(ri.state, AC__ETCD_REG_STARTING);
    double t0 = ts_now();
    assert_status(ac__etcd_unregister(reg), AC_OK);
    check_quick(t0, "unregister in a hanging request");
    t0 = ts_now();
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    check_quick(t0, "stop of a watch in a hanging request");
    assert_status(ac__etcd_close(e), AC_OK);
    close(fd);
}

typedef struct churn {
    ac__etcd *e;
    atomic_bool done;
    _Atomic(ac__etcd_reg *) reg;
    atomic_llong reads;
} churn;

/* A neighbour that starts and stops its own keepers, concurrently. */
static void *churn_main(void *arg)
{
    churn *c = arg;
    for (int i = 0; i < 10 && !atomic_load(&c->done); i++) {
        char key[32];
        snprintf(key, sizeof key, "stop/churn/t%d", i);
        ac__etcd_reg *reg = NULL;
        if (ac__etcd_register(c->e, key, "x", 1, 2, &reg) != AC_OK)
            break;
        ac__etcd_reg_info info;
        for (int k = 0; k < 5; k++) {
            ac__etcd_reg_status(reg, &info);
            atomic_fetch_add(&c->reads, 1);
            ts_sleep_ms(2);
        }
        ac__etcd_unregister(reg);
    }
    return NULL;
}

static void test_many_starts_and_stops(void **state)
{
    ac__etcd *e = E(state);
    churn c = {.e = e};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, churn_main, &c), 0);
    double t0 = ts_now();
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof key, "stop/churn/%d", i);
        ac__etcd_reg *reg = NULL;
        ac__etcd_watch *w = NULL;
        ev_view *v = ev_view_new();
        assert_status(ac__etcd_watch_prefix(e, "stop/churn/", ev_on_event, v, &w), AC_OK);
        assert_status(ac__etcd_register(e, key, "v", 1, 2, &reg), AC_OK);
        if (i % 2) /* half of them stopped at once, half once under way */
            ts_sleep_ms(20);
        ac__etcd_watch_info wi;
        assert_status(ac__etcd_watch_status(w, &wi), AC_OK);
        assert_status(ac__etcd_unregister(reg), AC_OK);
        assert_status(ac__etcd_watch_stop(w), AC_OK);
        assert_int_equal(atomic_load(&v->anomalies), 0);
        ev_view_free(v);
    }
    atomic_store(&c.done, true);
    pthread_join(t, NULL);
    print_message("20 starts and stops: %.2f s\n", ts_now() - t0);
    /* Every keeper revoked its lease: nothing is left under the prefix. */
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "stop/churn/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 0);
    ac__etcd_kvs_fini(&kvs);
}

int main(void)
{
    if (eh_skip("etcd.stop"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_an_idle_watch),
        cmocka_unit_test(test_unregister_between_keepalives),
        cmocka_unit_test(test_stop_during_a_long_backoff),
        cmocka_unit_test(test_stop_during_a_request_that_hangs),
        cmocka_unit_test(test_many_starts_and_stops),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
