/*
 * The watcher against a real etcd: a PUT for each key there when it
 * starts, then each change in order (puts, overwrites, deletes) with the
 * bytes intact; only keys under its prefix; the join and the leave of
 * another process's registration; a burst of changes that the view
 * follows to etcd's content; two watchers of one prefix.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define E(state) (((eh_fixture *)*(state))->e)

static ac__etcd_watch_info watch_info(ac__etcd_watch *w)
{
    ac__etcd_watch_info info;
    assert_status(ac__etcd_watch_status(w, &info), AC_OK);
    return info;
}

static bool wait_watching(ac__etcd_watch *w, double timeout_s)
{
    double end = ts_now() + timeout_s;
    for (;;) {
        ac__etcd_watch_info info;
        if (ac__etcd_watch_status(w, &info) == AC_OK && info.state == AC__ETCD_WATCH_WATCHING)
            return true;
        if (ts_now() > end)
            return false;
        ts_sleep_ms(10);
    }
}

typedef struct revision_goal {
    ac__etcd_watch *w;
    int64_t above;
} revision_goal;

static bool revision_passed(void *arg)
{
    revision_goal *g = arg;
    ac__etcd_watch_info info;
    return ac__etcd_watch_status(g->w, &info) == AC_OK && info.revision > g->above;
}

static void test_the_first_list_then_each_change_in_order(void **state)
{
    ac__etcd *e = E(state);
    assert_status(ac__etcd_put(e, "w1/a", "1", 1, 0), AC_OK);
    assert_status(ac__etcd_put(e, "w1/b", "2", 1, 0), AC_OK);
    assert_status(ac__etcd_put(e, "w1x", "outside", 7, 0), AC_OK);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "w1/", ev_on_event, v, &w), AC_OK);
    assert_eventually(wait_watching(w, TS_WAIT_S), "watching");
    assert_true(ev_has(v, "w1/a", "1") && ev_has(v, "w1/b", "2"));
    assert_int_equal(ev_count(v), 2);
    ac__etcd_watch_info info = watch_info(w);
    assert_int_equal(info.lists, 1);
    assert_int_equal(info.keys, 2);
    assert_int_equal(info.failures, 0);
    if (!strstr(info.why, "watching from revision"))
        fail_msg("status says: %s", info.why);

    assert_status(ac__etcd_put(e, "w1/c", "3", 1, 0), AC_OK);
    assert_status(ac__etcd_put(e, "w1/c", "33", 2, 0), AC_OK);
    assert_status(ac__etcd_delete(e, "w1/a", NULL), AC_OK);
    assert_status(ac__etcd_put(e, "w1x/y", "outside", 7, 0), AC_OK);
    assert_status(ac__etcd_put(e, "w1/d\x01\xff", "\0\xfe", 2, 0), AC_OK);
    assert_eventually(ts_rec_wait_count(v->rec, 6, TS_WAIT_S), "six events");
    ts_sleep_ms(100);
    const char *want[] = {"PUT w1/a=1", "PUT w1/b=2", "PUT w1/c=3", "PUT w1/c=33",
                          "DELETE w1/a", "PUT w1/d\x01\xff="};
    assert_int_equal(ts_rec_count(v->rec), 6);
    for (size_t i = 0; i < 6; i++) {
        char got[TS_REC_LABEL];
        ts_rec_get(v->rec, i, got, sizeof got);
        if (strcmp(got, want[i]) != 0)
            fail_msg("event %zu is \"%s\", expected \"%s\"", i, got, want[i]);
    }
    pthread_mutex_lock(&v->mu);
    bool bytes_ok = false;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->items[i].key, "w1/d\x01\xff") == 0)
            bytes_ok = v->items[i].value_len == 2 && memcmp(v->items[i].value, "\0\xfe", 2) == 0;
    pthread_mutex_unlock(&v->mu);
    assert_true(bytes_ok);
    assert_true(ev_matches(v, e, "w1/"));
    /* The status takes the revision after the events of etcd's answer
     * are told: the last event can come before it. */
    assert_eventually(ts_wait_until(revision_passed, &(revision_goal){w, info.revision},
                                    TS_WAIT_S),
                      "the status's revision to pass the first list's");
    assert_int_equal(atomic_load(&v->anomalies), 0);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    ev_view_free(v);
}

static void test_a_join_and_a_leave(void **state)
{
    ac__etcd *e = E(state);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "members/", ev_on_event, v, &w), AC_OK);
    assert_eventually(wait_watching(w, TS_WAIT_S), "watching");

    ac__etcd_reg *reg = NULL;
    /* A TTL well beyond the bound below: the leave must be the revoke's,
     * and a loaded machine that delays a keep-alive must not expire the
     * lease meanwhile (its keeper would put the key again: a third event). */
    assert_status(ac__etcd_register(e, "members/n1", "127.0.0.1:7001", 14, 20, &reg), AC_OK);
    assert_eventually(ev_wait_has(v, "members/n1", "127.0.0.1:7001", TS_WAIT_S), "the join");
    double t0 = ts_now();
    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_eventually(ev_wait_gone(v, "members/n1", TS_WAIT_S), "the leave");
    double took = ts_now() - t0;
    if (took > 5.0) /* a revoke, not an expiry (20 s) */
        fail_msg("the leave was seen %.2f s after unregister", took);
    assert_int_equal(ts_rec_count(v->rec), 2);
    assert_int_equal(atomic_load(&v->anomalies), 0);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    ev_view_free(v);
}

static void test_a_burst_of_changes_adds_up(void **state)
{
    ac__etcd *e = E(state);
    ev_view *v = ev_view_new();
    ev_view *v2 = ev_view_new();
    ac__etcd_watch *w = NULL, *w2 = NULL;
    assert_status(ac__etcd_watch_prefix(e, "burst/", ev_on_event, v, &w), AC_OK);
    assert_status(ac__etcd_watch_prefix(e, "burst/", ev_on_event, v2, &w2), AC_OK);
    for (int i = 0; i < 150; i++) {
        char key[32], value[32];
        snprintf(key, sizeof key, "burst/%03d", i % 60);
        snprintf(value, sizeof value, "v%d", i);
        assert_status(ac__etcd_put(e, key, value, strlen(value), 0), AC_OK);
        if (i % 7 == 3) {
            snprintf(key, sizeof key, "burst/%03d", (i * 13) % 60);
            assert_status(ac__etcd_delete(e, key, NULL), AC_OK);
        }
    }
    assert_eventually(ev_wait_matches(v, e, "burst/", TS_WAIT_S), "the view to match etcd");
    assert_eventually(ev_wait_matches(v2, e, "burst/", TS_WAIT_S), "the second view too");
    assert_int_equal(atomic_load(&v->anomalies), 0);
    assert_int_equal(atomic_load(&v2->anomalies), 0);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    assert_status(ac__etcd_watch_stop(w2), AC_OK);
    ev_view_free(v);
    ev_view_free(v2);
}

static void test_every_key_with_an_empty_prefix(void **state)
{
    ac__etcd *e = E(state);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "", ev_on_event, v, &w), AC_OK);
    assert_eventually(wait_watching(w, TS_WAIT_S), "watching");
    assert_status(ac__etcd_put(e, "\xff\xff", "top", 3, 0), AC_OK);
    assert_eventually(ev_wait_has(v, "\xff\xff", "top", TS_WAIT_S), "the top key");
    assert_true(ev_matches(v, e, ""));
    assert_status(ac__etcd_delete(e, "\xff\xff", NULL), AC_OK);
    assert_eventually(ev_wait_gone(v, "\xff\xff", TS_WAIT_S), "its delete");
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    ev_view_free(v);
}

int main(void)
{
    if (eh_skip("etcd.watch"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_first_list_then_each_change_in_order),
        cmocka_unit_test(test_a_join_and_a_leave),
        cmocka_unit_test(test_a_burst_of_changes_adds_up),
        cmocka_unit_test(test_every_key_with_an_empty_prefix),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
