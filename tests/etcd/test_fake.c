/*
 * The watcher and the calls against a scripted stand-in for etcd's
 * gateway, for what a real etcd does not do on cue: a watch cancelled
 * for compaction (the watcher lists again and reports the difference,
 * a key gone while it was away included, and watches from the new
 * list's revision), a line split across writes, a malformed line and an
 * error in the stream (each a re-list), an endpoint that answers 503
 * (the next is asked), and an answer that is not etcd's (AC_EPROTO).
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"
#include "fake_gateway.h"

static void check_events(ev_view *v, const char *const *want, size_t n)
{
    assert_eventually(ts_rec_wait_count(v->rec, n, TS_WAIT_S), "the events");
    ts_sleep_ms(100);
    if (ts_rec_count(v->rec) != n) {
        ts_rec_dump(v->rec, "events");
        fail_msg("%zu events, expected %zu", ts_rec_count(v->rec), n);
    }
    for (size_t i = 0; i < n; i++) {
        char got[TS_REC_LABEL];
        ts_rec_get(v->rec, i, got, sizeof got);
        if (strcmp(got, want[i]) != 0) {
            ts_rec_dump(v->rec, "events");
            fail_msg("event %zu is \"%s\", expected \"%s\"", i, got, want[i]);
        }
    }
}

/* ---- the tests ------------------------------------------------------------ */

/* Keys a=1 (rev 5), b=2 (rev 6), c=3 (rev 7), at revision 10. base64:
 * "p/a" cC9h, "p/b" cC9i, "p/c" cC9j, "p/e" cC9l; "1" MQ==, "2" Mg==,
 * "3" Mw==, "B" Qg==, "5" NQ==. */
#define FIRST_LIST                                                                \
    "{\"header\":{\"revision\":\"10\"},\"kvs\":["                                 \
    "{\"key\":\"cC9h\",\"value\":\"MQ==\",\"mod_revision\":\"5\"},"               \
    "{\"key\":\"cC9i\",\"value\":\"Mg==\",\"mod_revision\":\"6\"},"               \
    "{\"key\":\"cC9j\",\"value\":\"Mw==\",\"mod_revision\":\"7\"}],\"count\":\"3\"}"
#define CREATED "{\"result\":{\"header\":{\"revision\":\"10\"},\"created\":true}}\n"

static void test_compaction_lists_again_and_tells_the_difference(void **state)
{
    (void)state;
    static const reply ranges[] = {
        R(FIRST_LIST),
        /* After the compaction: a gone, b changed, c gone, e new, at 25. */
        R("{\"header\":{\"revision\":\"25\"},\"kvs\":["
          "{\"key\":\"cC9i\",\"value\":\"Qg==\",\"mod_revision\":\"22\"},"
          "{\"key\":\"cC9l\",\"value\":\"NQ==\",\"mod_revision\":\"23\"}]}"),
    };
    static const reply watches[] = {
        HELD(CREATED,
             /* a DELETE of a at 11, its line in two writes */
             "{\"result\":{\"header\":{\"revision\":\"11\"},\"events\":[{\"type\":\"DEL",
             "ETE\",\"kv\":{\"key\":\"cC9h\",\"mod_revision\":\"11\"}}]}}\n",
             "{\"result\":{\"header\":{\"revision\":\"20\"},\"canceled\":true,"
             "\"compact_revision\":\"20\"}}\n"),
        HELD(CREATED),
    };
    fake f = {.ranges = ranges, .nranges = 2, .watches = watches, .nwatches = 2};
    fake_start(&f);
    ac__etcd *e = fake_client(&f);
    assert_non_null(e);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "p/", ev_on_event, v, &w), AC_OK);
    const char *want[] = {"PUT p/a=1", "PUT p/b=2", "PUT p/c=3", "DELETE p/a",
                          "PUT p/b=B", "DELETE p/c", "PUT p/e=5"};
    check_events(v, want, 7);
    assert_eventually(wait_calls(&f.watch_calls, 2, TS_WAIT_S), "the second watch");
    pthread_mutex_lock(&f.mu);
    bool from_11 = strstr(f.watch_bodies[0], "\"start_revision\":\"11\"") != NULL;
    bool from_26 = strstr(f.watch_bodies[1], "\"start_revision\":\"26\"") != NULL;
    bool prefix = strstr(f.watch_bodies[0], "\"range_end\":\"cDA=\"") != NULL; /* "p0" */
    pthread_mutex_unlock(&f.mu);
    assert_true(from_11 && from_26 && prefix);
    ac__etcd_watch_info info;
    assert_status(ac__etcd_watch_status(w, &info), AC_OK);
    assert_int_equal(info.lists, 2);
    assert_int_equal(info.keys, 2);
    assert_int_equal(atomic_load(&v->anomalies), 0);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    ev_view_free(v);
    fake_stop(&f);
}

static void test_bad_lines_and_stream_errors_list_again(void **state)
{
    (void)state;
    static const reply ranges[] = {R(FIRST_LIST)};
    static const reply watches[] = {
        R(CREATED, "this is not json\n"),
        R(CREATED, "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
                   "\"etcdserver: no leader\",\"http_status\":\"Service Unavailable\"}}\n"),
        R(CREATED, "{\"result\":{\"events\":[{\"type\":\"RENAME\",\"kv\":{}}]}}\n"),
        R(CREATED), /* closed by the server */
        HELD(CREATED),
    };
    fake f = {.ranges = ranges, .nranges = 1, .watches = watches, .nwatches = 5};
    fake_start(&f);
    ac__etcd *e = fake_client(&f);
    assert_non_null(e);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "p/", ev_on_event, v, &w), AC_OK);
    assert_eventually(wait_calls(&f.watch_calls, 5, TS_WAIT_S), "five watches");
    assert_eventually(wait_calls(&f.range_calls, 5, TS_WAIT_S), "a list before each");
    /* The same content each time: told once. */
    const char *want[] = {"PUT p/a=1", "PUT p/b=2", "PUT p/c=3"};
    check_events(v, want, 3);
    ac__etcd_watch_info info;
    assert_status(ac__etcd_watch_status(w, &info), AC_OK);
    assert_int_equal(info.lists, 5);
    assert_int_equal(info.failures, 4);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    ev_view_free(v);
    fake_stop(&f);
}

static void test_an_unavailable_endpoint_is_skipped(void **state)
{
    (void)state;
    static const reply unavailable[] = {
        R("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Connection: close\r\n\r\n{\"error\":\"no leader\",\"code\":14}")};
    static const reply fine[] = {R("{\"header\":{\"revision\":\"3\"}}")};
    fake sick = {.ranges = unavailable, .nranges = 1};
    fake well = {.ranges = fine, .nranges = 1};
    fake_start(&sick);
    fake_start(&well);
    char a[64], b[64];
    snprintf(a, sizeof a, "http://127.0.0.1:%d", sick.port);
    snprintf(b, sizeof b, "http://127.0.0.1:%d", well.port);
    const char *list[] = {a, b};
    ac__etcd *e = ac__etcd_open(list, 2, NULL);
    assert_non_null(e);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "p/", &kvs), AC_OK);
    assert_int_equal(kvs.revision, 3);
    assert_int_equal(kvs.count, 0);
    ac__etcd_kvs_fini(&kvs);
    /* The one that answered is asked first next time. */
    assert_status(ac__etcd_get_prefix(e, "p/", &kvs), AC_OK);
    assert_int_equal(atomic_load(&sick.range_calls), 1);
    assert_int_equal(atomic_load(&well.range_calls), 2);
    assert_status(ac__etcd_close(e), AC_OK);

    /* Alone, the sick one is unavailable: AC_EFAILED saying so. */
    e = ac__etcd_open(list, 1, NULL);
    assert_non_null(e);
    assert_status(ac__etcd_get_prefix(e, "p/", &kvs), AC_EFAILED);
    if (!strstr(ac_last_error(), "HTTP 503"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_close(e), AC_OK);
    fake_stop(&sick);
    fake_stop(&well);
}

static void test_answers_that_are_not_etcds(void **state)
{
    (void)state;
    static const reply others[] = {
        R("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
          "404 page not found\n"),
        R("{\"header\":{}, \"ID\":\"x12\",\"TTL\":\"5\"}"),
        R("{\"header\":{}, \"TTL\":\"5\"}"),
        R("[1,2]"),
    };
    static const reply ranges[] = {
        R("{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"!!\"}]}"),
        R("{\"header\":{\"revision\":\"3\"},\"kvs\":{}}"),
    };
    fake f = {.others = others, .nothers = 4, .ranges = ranges, .nranges = 2};
    fake_start(&f);
    ac__etcd *e = fake_client(&f);
    assert_non_null(e);
    int64_t id = 0;
    assert_status(ac__etcd_lease_grant(e, 5, &id, NULL), AC_EPROTO);
    if (!strstr(ac_last_error(), "HTTP 404") || !strstr(ac_last_error(), "not etcd's JSON"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_lease_grant(e, 5, &id, NULL), AC_EPROTO);
    if (!strstr(ac_last_error(), "\"ID\" is not an integer"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_lease_grant(e, 5, &id, NULL), AC_EPROTO);
    if (!strstr(ac_last_error(), "has no lease"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_put(e, "k", "v", 1, 0), AC_EPROTO);
    assert_int_equal(id, 0);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "p/", &kvs), AC_EPROTO);
    if (!strstr(ac_last_error(), "\"key\" is not base64"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_null(kvs.kv);
    assert_status(ac__etcd_get_prefix(e, "p/", &kvs), AC_EPROTO);
    assert_status(ac__etcd_close(e), AC_OK);
    fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compaction_lists_again_and_tells_the_difference),
        cmocka_unit_test(test_bad_lines_and_stream_errors_list_again),
        cmocka_unit_test(test_an_unavailable_endpoint_is_skipped),
        cmocka_unit_test(test_answers_that_are_not_etcds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
