/*
 * What the etcd client refuses, without any etcd: bad endpoints and
 * options when opened, bad arguments to every call (each AC_EINVAL with
 * a message naming what is wrong), and endpoints that cannot answer: one
 * that refuses connections (AC_EFAILED, every endpoint's reason in the
 * message) and one that never answers (AC_ETIMEOUT within the request
 * timeout). Also: close is refused while a keeper runs, and a keeper
 * cannot be unregistered from its own thread.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include <unistd.h>

#include "cluster/etcd.h"
#include "etcd_harness.h"

static void ev_noop_event(const ac__etcd_event *event, void *user)
{
    (void)event;
    (void)user;
}

/* The open fails with AC_EINVAL and a message holding `needle`. */
static void check_open_refused(const char *const *endpoints, size_t n,
                               const ac__etcd_options *o, const char *needle)
{
    ac__etcd *e = ac__etcd_open(endpoints, n, o);
    if (e) {
        ac__etcd_close(e);
        fail_msg("opened, but should have been refused for '%s'", needle);
    }
    assert_last_error(AC_EINVAL);
    if (!strstr(ac_last_error(), needle))
        fail_msg("the message \"%s\" does not say \"%s\"", ac_last_error(), needle);
}

static void check_endpoint_refused(const char *url, const char *needle)
{
    const char *list[] = {"http://127.0.0.1:2379", url};
    check_open_refused(list, 2, NULL, needle);
    if (!strstr(ac_last_error(), "endpoint 1"))
        fail_msg("the message \"%s\" does not name endpoint 1", ac_last_error());
}

static void test_bad_endpoints_are_refused(void **state)
{
    (void)state;
    const char *one[] = {"http://127.0.0.1:2379"};
    check_open_refused(one, 0, NULL, "0 endpoints");
    check_open_refused(NULL, 1, NULL, "NULL");
    const char *many[17];
    for (int i = 0; i < 17; i++)
        many[i] = "http://127.0.0.1:2379";
    check_open_refused(many, 17, NULL, "17 endpoints");
    check_endpoint_refused(NULL, "NULL");
    check_endpoint_refused("", "empty");
    check_endpoint_refused("127.0.0.1:2379", "http:// or https://");
    check_endpoint_refused("ftp://127.0.0.1:2379", "http:// or https://");
    check_endpoint_refused("HTTP://127.0.0.1:2379", "http:// or https://");
    check_endpoint_refused("http://", "no host");
    check_endpoint_refused("http://:2379", "no host");
    check_endpoint_refused("http://127.0.0.1:0", "port");
    check_endpoint_refused("http://127.0.0.1:65536", "port");
    check_endpoint_refused("http://127.0.0.1:", "port");
    check_endpoint_refused("http://127.0.0.1:23a", "unexpected 'a'");
    check_endpoint_refused("http://127.0.0.1:2379/v3", "no user, path or query");
    check_endpoint_refused("http://127.0.0.1:2379?x=1", "unexpected '?'");
    check_endpoint_refused("http://user@127.0.0.1:2379", "unexpected '@'");
    check_endpoint_refused("http://[::1:2379", "no host");
    check_endpoint_refused("http://127.0.0.1 :2379", "unexpected ' '");
    check_endpoint_refused("http://127.0.0.1:2379\n", "\\x0a");
    char longer[400];
    memset(longer, 'a', sizeof longer - 1);
    memcpy(longer, "http://", 7);
    longer[sizeof longer - 1] = '\0';
    check_endpoint_refused(longer, "longer than 255");
}

static void test_good_endpoints_are_accepted(void **state)
{
    (void)state;
    const char *list[] = {"http://127.0.0.1:2379", "http://localhost:2379/",
                          "https://etcd-0.example.org", "http://[::1]:2379",
                          "http://10.0.0.1:65535"};
    ac__etcd *e = ac__etcd_open(list, 5, NULL);
    assert_non_null(e);
    assert_status(ac_last_status(), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    assert_status(ac__etcd_close(NULL), AC_OK);
}

static void test_bad_options_are_refused(void **state)
{
    (void)state;
    const char *one[] = {"http://127.0.0.1:2379"};
    check_open_refused(one, 1, &(ac__etcd_options){.backoff_initial_ms = 500,
                                                  .backoff_max_ms = 100},
                       "backoff_max_ms (100) is below backoff_initial_ms (500)");
    check_open_refused(one, 1, &(ac__etcd_options){.backoff_jitter_pct = 101},
                       "backoff_jitter_pct is 101");
    check_open_refused(one, 1, &(ac__etcd_options){.request_timeout_ms = 3600001},
                       "request_timeout_ms");
    check_open_refused(one, 1, &(ac__etcd_options){.backoff_max_ms = 4000000000u},
                       "backoff_max_ms");
}

/* A client whose one endpoint refuses connections. */
static ac__etcd *unreachable_client(uint32_t timeout_ms)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eh_free_port());
    const char *list[] = {url};
    ac__etcd *e = ac__etcd_open(list, 1, &(ac__etcd_options){.request_timeout_ms = timeout_ms});
    assert_non_null(e);
    return e;
}

static void check_einval(ac_status st, const char *needle)
{
    assert_status(st, AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    if (!strstr(ac_last_error(), needle))
        fail_msg("the message \"%s\" does not say \"%s\"", ac_last_error(), needle);
}

static void test_bad_arguments_to_calls_are_refused(void **state)
{
    (void)state;
    ac__etcd *e = unreachable_client(500);
    int64_t id = 0;
    ac__etcd_kvs kvs;
    check_einval(ac__etcd_lease_grant(NULL, 5, &id, NULL), "client is NULL");
    check_einval(ac__etcd_lease_grant(e, 5, NULL, NULL), "lease_id is NULL");
    check_einval(ac__etcd_lease_grant(e, 0, &id, NULL), "TTL 0 s");
    check_einval(ac__etcd_lease_grant(e, -3, &id, NULL), "TTL -3 s");
    check_einval(ac__etcd_lease_grant(e, AC__ETCD_MAX_TTL + 1, &id, NULL), "TTL");
    check_einval(ac__etcd_lease_keepalive_once(e, 0, NULL), "lease id 0");
    check_einval(ac__etcd_lease_keepalive_once(NULL, 7, NULL), "client is NULL");
    check_einval(ac__etcd_lease_revoke(e, -1), "lease id -1");
    check_einval(ac__etcd_put(e, NULL, "v", 1, 0), "key is NULL");
    check_einval(ac__etcd_put(e, "", "v", 1, 0), "key is empty");
    check_einval(ac__etcd_put(e, "k", NULL, 3, 0), "value is NULL but 3 bytes");
    check_einval(ac__etcd_put(e, "k", "v", 1, -5), "lease id -5");
    check_einval(ac__etcd_put(NULL, "k", "v", 1, 0), "client is NULL");
    check_einval(ac__etcd_delete(e, NULL, NULL), "key is NULL");
    check_einval(ac__etcd_delete(e, "", NULL), "key is empty");
    check_einval(ac__etcd_get_prefix(e, NULL, &kvs), "key is NULL");
    check_einval(ac__etcd_get_prefix(e, "p", NULL), "out is NULL");
    check_einval(ac__etcd_get_prefix(NULL, "p", &kvs), "client is NULL");
    assert_null(kvs.kv);

    ac__etcd_reg *reg = (ac__etcd_reg *)1;
    check_einval(ac__etcd_register(NULL, "k", "v", 1, 5, &reg), "client is NULL");
    check_einval(ac__etcd_register(e, "k", "v", 1, 5, NULL), "reg is NULL");
    check_einval(ac__etcd_register(e, NULL, "v", 1, 5, &reg), "key is NULL");
    assert_null(reg);
    check_einval(ac__etcd_register(e, "", "v", 1, 5, &reg), "key is empty");
    check_einval(ac__etcd_register(e, "k", NULL, 2, 5, &reg), "value is NULL");
    check_einval(ac__etcd_register(e, "k", "v", 1, 0, &reg), "TTL 0 s");
    check_einval(ac__etcd_reg_status(NULL, &(ac__etcd_reg_info){0}), "registration is NULL");
    assert_status(ac__etcd_unregister(NULL), AC_OK);

    ac__etcd_watch *w = (ac__etcd_watch *)1;
    check_einval(ac__etcd_watch_prefix(NULL, "p", ev_noop_event, NULL, &w), "client is NULL");
    check_einval(ac__etcd_watch_prefix(e, "p", NULL, NULL, &w), "on_event is NULL");
    check_einval(ac__etcd_watch_prefix(e, "p", ev_noop_event, NULL, NULL), "NULL");
    check_einval(ac__etcd_watch_prefix(e, NULL, ev_noop_event, NULL, &w), "key is NULL");
    assert_null(w);
    check_einval(ac__etcd_watch_status(NULL, &(ac__etcd_watch_info){0}), "watcher is NULL");
    assert_status(ac__etcd_watch_stop(NULL), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
}

static void test_unreachable_endpoints_say_why(void **state)
{
    (void)state;
    char a[64], b[64];
    snprintf(a, sizeof a, "http://127.0.0.1:%d", eh_free_port());
    snprintf(b, sizeof b, "http://127.0.0.1:%d", eh_free_port());
    const char *list[] = {a, b};
    ac__etcd *e = ac__etcd_open(list, 2, &(ac__etcd_options){.request_timeout_ms = 1000});
    assert_non_null(e);
    double t0 = ts_now();
    assert_status(ac__etcd_put(e, "k\x01", "v", 1, 0), AC_EFAILED);
    assert_true(ts_now() - t0 < 5.0);
    const char *msg = ac_last_error();
    if (!strstr(msg, "etcd put 'k\\x01'") || !strstr(msg, "no endpoint answered") ||
        !strstr(msg, a) || !strstr(msg, b))
        fail_msg("the message \"%s\" should name the call, the key and both endpoints", msg);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "k", &kvs), AC_EFAILED);
    assert_int_equal(kvs.count, 0);
    assert_null(kvs.kv);
    assert_status(ac__etcd_close(e), AC_OK);
}

static void test_an_endpoint_that_never_answers_times_out(void **state)
{
    (void)state;
    int port = 0;
    int fd = eh_silent_listener(&port);
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    const char *list[] = {url};
    ac__etcd *e = ac__etcd_open(list, 1, &(ac__etcd_options){.request_timeout_ms = 300});
    assert_non_null(e);
    double t0 = ts_now();
    int64_t id = 0;
    assert_status(ac__etcd_lease_grant(e, 5, &id, NULL), AC_ETIMEOUT);
    double took = ts_now() - t0;
    if (took < 0.25 || took > 5.0)
        fail_msg("a 300 ms request timed out after %.3f s", took);
    if (!strstr(ac_last_error(), "lease grant") || !strstr(ac_last_error(), url))
        fail_msg("the message \"%s\" should name the call and the endpoint", ac_last_error());
    assert_status(ac__etcd_close(e), AC_OK);
    close(fd);
}

static _Atomic(ac__etcd_reg *) retry_reg;
static atomic_int self_unregister_status = -1;
static atomic_int retries_seen;

static void unregister_from_retry(const ac__etcd_retry *r, void *user)
{
    (void)user;
    (void)r;
    ac__etcd_reg *reg = atomic_load(&retry_reg);
    if (reg && atomic_load(&self_unregister_status) < 0)
        atomic_store(&self_unregister_status, (int)ac__etcd_unregister(reg));
    atomic_fetch_add(&retries_seen, 1);
}

static void test_close_waits_for_keepers_and_a_keeper_cannot_stop_itself(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eh_free_port());
    const char *list[] = {url};
    ac__etcd *e = ac__etcd_open(list, 1, &(ac__etcd_options){
                                              .backoff_initial_ms = 20,
                                              .backoff_max_ms = 50,
                                              .on_retry = unregister_from_retry});
    assert_non_null(e);
    ac__etcd_reg *reg = NULL;
    assert_status(ac__etcd_register(e, "k", "v", 1, 5, &reg), AC_OK);
    atomic_store(&retry_reg, reg);
    double end = ts_now() + TS_WAIT_S;
    while (atomic_load(&self_unregister_status) < 0 && ts_now() < end)
        ts_sleep_ms(5);
    assert_int_equal(atomic_load(&self_unregister_status), AC_EINVAL);

    assert_status(ac__etcd_close(e), AC_EINVAL);
    assert_true(strstr(ac_last_error(), "1 keepers or watchers") != NULL);
    atomic_store(&retry_reg, NULL);
    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    assert_true(atomic_load(&retries_seen) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_endpoints_are_refused),
        cmocka_unit_test(test_good_endpoints_are_accepted),
        cmocka_unit_test(test_bad_options_are_refused),
        cmocka_unit_test(test_bad_arguments_to_calls_are_refused),
        cmocka_unit_test(test_unreachable_endpoints_say_why),
        cmocka_unit_test(test_an_endpoint_that_never_answers_times_out),
        cmocka_unit_test(test_close_waits_for_keepers_and_a_keeper_cannot_stop_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
