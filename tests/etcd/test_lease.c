/*
 * Leases against a real etcd: a grant below etcd's minimum TTL is
 * raised to it; a keep-alive renews; a revoke deletes the keys under the
 * lease at once, after which the lease is unknown (AC_ENOTFOUND) to
 * keep-alive, revoke and put; a lease left alone expires about its TTL
 * after the grant, deleting its key, and a watcher sees the DELETE.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define E(state) (((eh_fixture *)*(state))->e)

static void test_grant_keepalive_revoke(void **state)
{
    ac__etcd *e = E(state);
    int64_t id = 0, ttl = 0, left = 0;
    assert_status(ac__etcd_lease_grant(e, 1, &id, &ttl), AC_OK);
    assert_true(id > 0);
    print_message("lease %lld: asked for 1 s, granted %lld s\n", (long long)id, (long long)ttl);
    assert_true(ttl >= 1);
    assert_status(ac__etcd_lease_keepalive_once(e, id, &left), AC_OK);
    assert_true(left > 0 && left <= ttl);
    assert_status(ac__etcd_lease_keepalive_once(e, id, NULL), AC_OK);

    assert_status(ac__etcd_put(e, "lease/a", "1", 1, id), AC_OK);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "lease/a", &kvs), AC_OK);
    assert_int_equal(kvs.count, 1);
    assert_int_equal(kvs.kv[0].lease, id);
    ac__etcd_kvs_fini(&kvs);

    assert_status(ac__etcd_lease_revoke(e, id), AC_OK);
    assert_false(ev_etcd_has(e, "lease/a", NULL, 0)); /* at once */
    assert_status(ac__etcd_lease_revoke(e, id), AC_ENOTFOUND);
    assert_status(ac__etcd_lease_keepalive_once(e, id, &left), AC_ENOTFOUND);
    if (!strstr(ac_last_error(), "no longer has the lease"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_put(e, "lease/a", "1", 1, id), AC_ENOTFOUND);
}

static void test_an_abandoned_lease_expires_and_the_watcher_sees_it(void **state)
{
    ac__etcd *e = E(state);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "expiry/", ev_on_event, v, &w), AC_OK);

    int64_t id = 0, ttl = 0;
    double granted = ts_now();
    assert_status(ac__etcd_lease_grant(e, 2, &id, &ttl), AC_OK);
    assert_int_equal(ttl, 2);
    assert_status(ac__etcd_put(e, "expiry/k", "v", 1, id), AC_OK);
    assert_eventually(ev_wait_has(v, "expiry/k", "v", TS_WAIT_S), "the watcher's PUT");
    assert_eventually(ev_wait_gone(v, "expiry/k", 15.0), "the watcher's DELETE");
    double took = ts_now() - granted;
    print_message("a 2 s lease's key went %.2f s after the grant\n", took);
    if (took < 1.5 || took > 12.0)
        fail_msg("a 2 s lease's key went %.2f s after the grant", took);
    assert_false(ev_etcd_has(e, "expiry/k", NULL, 0));
    assert_true(ts_rec_index_of(v->rec, "PUT expiry/k=v") <
                ts_rec_index_of(v->rec, "DELETE expiry/k"));
    assert_status(ac__etcd_lease_keepalive_once(e, id, NULL), AC_ENOTFOUND);
    assert_int_equal(atomic_load(&v->anomalies), 0);
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    ev_view_free(v);
}

int main(void)
{
    if (eh_skip("etcd.lease"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grant_keepalive_revoke),
        cmocka_unit_test(test_an_abandoned_lease_expires_and_the_watcher_sees_it),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
