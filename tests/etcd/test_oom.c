/*
 * Out of memory in the etcd client, under the allocation hook of builds
 * without NDEBUG: opening a client, reading a list, building a request,
 * and starting a keeper or a watcher, with each of their allocations
 * failing in turn. Every call ends in AC_ENOMEM with a message, or
 * succeeds; nothing leaks (the sanitizers' leak check watches). A
 * watcher whose list fails for want of memory lists again, and still
 * tells everything. Skipped (exit 77) where the hook is compiled out.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#ifdef NDEBUG

int main(void)
{
    fputs("etcd.oom: the allocation hook exists only without NDEBUG; skipped\n", stderr);
    return 77;
}

#else

#include "cluster/etcd.h"
#include "core/alloc.h"
#include "etcd_harness.h"
#include "etcd_view.h"
#include "fake_gateway.h"

#define SWEEP_MAX 200

static void check_enomem(ac_status st)
{
    assert_status(st, AC_ENOMEM);
    assert_true(ts_nonempty(ac_last_error()));
}

static void test_open(void **state)
{
    (void)state;
    const char *list[] = {"http://127.0.0.1:2379", "http://127.0.0.1:2380",
                          "http://127.0.0.1:2381"};
    for (long n = 1; n < SWEEP_MAX; n++) {
        ac__alloc_fail_after(n);
        ac__etcd *e = ac__etcd_open(list, 3, NULL);
        ac__alloc_fail_after(0);
        if (e) {
            print_message("open: %ld allocations, each failed once\n", n - 1);
            assert_status(ac__etcd_close(e), AC_OK);
            return;
        }
        assert_last_error(AC_ENOMEM);
    }
    fail_msg("open still failing after %d allocations", SWEEP_MAX);
}

#define LIST                                                                      \
    "{\"header\":{\"revision\":\"10\"},\"kvs\":["                                 \
    "{\"key\":\"cC9h\",\"value\":\"MQ==\",\"mod_revision\":\"5\"},"               \
    "{\"key\":\"cC9i\",\"value\":\"Mg==\",\"mod_revision\":\"6\"},"               \
    "{\"key\":\"cC9j\",\"value\":\"Mw==\",\"mod_revision\":\"7\"}]}"

static void test_calls(void **state)
{
    (void)state;
    static const reply ranges[] = {R(LIST)};
    static const reply others[] = {R("{\"header\":{\"revision\":\"11\"}}")};
    fake f = {.ranges = ranges, .nranges = 1, .others = others, .nothers = 1};
    fake_start(&f);
    ac__etcd *e = fake_client(&f);
    assert_non_null(e);
    bool listed = false, put = false;
    for (long n = 1; n < SWEEP_MAX && !(listed && put); n++) {
        ac__etcd_kvs kvs;
        ac__alloc_fail_after(n);
        ac_status st = listed ? AC_OK : ac__etcd_get_prefix(e, "p/", &kvs);
        ac__alloc_fail_after(0);
        if (!listed && st == AC_OK) {
            assert_int_equal(kvs.count, 3);
            assert_string_equal(kvs.kv[2].value, "3");
            ac__etcd_kvs_fini(&kvs);
            listed = true;
        } else if (!listed) {
            check_enomem(st);
            assert_null(kvs.kv);
            assert_int_equal(kvs.count, 0);
        }
        ac__alloc_fail_after(n);
        st = put ? AC_OK : ac__etcd_put(e, "p/key", "value", 5, 0);
        ac__alloc_fail_after(0);
        if (!put && st == AC_OK)
            put = true;
        else if (!put)
            check_enomem(st);
    }
    assert_true(listed && put);
    assert_status(ac__etcd_close(e), AC_OK);
    fake_stop(&f);
}

static void test_starting_keepers_and_watchers(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eh_free_port());
    ac__etcd *e = eh_client(url, &(ac__etcd_options){.backoff_initial_ms = 60000,
                                                     .backoff_max_ms = 60000});
    assert_non_null(e);
    bool reg_ok = false, watch_ok = false;
    for (long n = 1; n < SWEEP_MAX && !(reg_ok && watch_ok); n++) {
        ac__etcd_reg *reg = NULL;
        ac__etcd_watch *w = NULL;
        if (!reg_ok) {
            ac__alloc_fail_after(n);
            ac_status st = ac__etcd_register(e, "p/me", "v", 1, 5, &reg);
            ac__alloc_fail_after(0);
            if (st == AC_OK)
                reg_ok = ac__etcd_unregister(reg) == AC_OK;
            else
                check_enomem(st);
        }
        if (!watch_ok) {
            ac__alloc_fail_after(n);
            ac_status st = ac__etcd_watch_prefix(e, "p/", ev_noop, NULL, &w);
            ac__alloc_fail_after(0);
            if (st == AC_OK)
                watch_ok = ac__etcd_watch_stop(w) == AC_OK;
            else
                check_enomem(st);
        }
    }
    assert_true(reg_ok && watch_ok);
    assert_status(ac__etcd_close(e), AC_OK);
}

/* The watcher's thread runs out of memory in turn at each allocation of
 * its first list; it retries, and its view ends complete. */
static void test_a_watcher_recovers(void **state)
{
    (void)state;
    static const reply ranges[] = {R(LIST)};
    static const reply watches[] = {HELD("{\"result\":{\"created\":true}}\n")};
    fake f = {.ranges = ranges, .nranges = 1, .watches = watches, .nwatches = 1};
    fake_start(&f);
    ac__etcd *e = fake_client(&f);
    assert_non_null(e);
    for (long n = 1; n <= 12; n++) {
        ev_view *v = ev_view_new();
        ac__etcd_watch *w = NULL;
        assert_status(ac__etcd_watch_prefix(e, "p/", ev_on_event, v, &w), AC_OK);
        ac__alloc_fail_after(n); /* an allocation of the thread's, most likely */
        assert_eventually(ts_rec_wait_count(v->rec, 3, TS_WAIT_S), "three keys");
        ac__alloc_fail_after(0);
        assert_true(ev_has(v, "p/a", "1") && ev_has(v, "p/b", "2") && ev_has(v, "p/c", "3"));
        assert_status(ac__etcd_watch_stop(w), AC_OK);
        assert_int_equal(ts_rec_count(v->rec), 3);
        ev_view_free(v);
    }
    assert_status(ac__etcd_close(e), AC_OK);
    fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_starting_keepers_and_watchers),
        cmocka_unit_test(test_a_watcher_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
