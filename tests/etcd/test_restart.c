/*
 * etcd killed (SIGKILL) and restarted on the same port and data: the
 * keeper and the watcher say they are retrying, and why, while it is
 * down; afterwards the registration is back, and the watcher, listing
 * again, reports what changed meanwhile: a key deleted and a key added
 * before it reconnected, and a key whose lease nobody kept alive
 * expiring. No change is lost: its view ends equal to etcd's content.
 * Twice, to see that a watcher and keeper that recovered recover again.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

static void one_outage(eh_etcd *etcd, ac__etcd *e, ac__etcd_reg *reg, ac__etcd_watch *w,
                       ev_view *v, int round)
{
    char gone[32], added[32], mortal[32];
    snprintf(gone, sizeof gone, "cluster/gone%d", round);
    snprintf(added, sizeof added, "cluster/added%d", round);
    snprintf(mortal, sizeof mortal, "cluster/mortal%d", round);

    assert_status(ac__etcd_put(e, gone, "g", 1, 0), AC_OK);
    int64_t lease = 0;
    assert_status(ac__etcd_lease_grant(e, 2, &lease, NULL), AC_OK);
    assert_status(ac__etcd_put(e, mortal, "m", 1, lease), AC_OK);
    assert_eventually(ev_wait_has(v, gone, "g", TS_WAIT_S), "the key to delete");
    assert_eventually(ev_wait_has(v, mortal, "m", TS_WAIT_S), "the key whose lease dies");
    ac__etcd_watch_info before;
    assert_status(ac__etcd_watch_status(w, &before), AC_OK);

    eh_kill(etcd);
    ac__etcd_reg_info ri;
    assert_eventually(eh_wait_reg_state(reg, AC__ETCD_REG_RETRYING, 0, TS_WAIT_S, &ri),
                      "the keeper to notice");
    if (!strstr(ri.why, "retrying") || !strstr(ri.why, "no endpoint answered") ||
        !strstr(ri.why, etcd->url))
        fail_msg("the keeper's status says: %s", ri.why);
    ac__etcd_watch_info wi;
    assert_eventually(eh_wait_watch_state(w, AC__ETCD_WATCH_RETRYING, 0, TS_WAIT_S, &wi),
                      "the watcher to notice");
    print_message("while etcd is down:\n  keeper: %s\n  watcher: %s\n", ri.why, wi.why);
    ts_sleep_ms(600); /* a few retries */

    assert_true(eh_run(etcd));
    /* Changes the watcher has most likely not reconnected for yet. */
    assert_status(ac__etcd_delete(e, gone, NULL), AC_OK);
    assert_status(ac__etcd_put(e, added, "a", 1, 0), AC_OK);

    assert_eventually(eh_wait_reg_state(reg, AC__ETCD_REG_REGISTERED, 0, 20.0, &ri),
                      "the keeper to register again");
    assert_true(ev_etcd_has(e, "cluster/self", NULL, 0));
    assert_eventually(ev_wait_gone(v, gone, 20.0), "the deleted key's DELETE");
    assert_eventually(ev_wait_has(v, added, "a", 20.0), "the added key's PUT");
    assert_eventually(ev_wait_gone(v, mortal, 20.0), "the abandoned lease's expiry");
    assert_eventually(ev_wait_matches(v, e, "cluster/", 20.0), "the view to match etcd");
    assert_eventually(eh_wait_watch_state(w, AC__ETCD_WATCH_WATCHING, 0, 20.0, &wi), "watching");
    assert_true(wi.lists > before.lists);
    assert_true(wi.failures > before.failures);
    assert_int_equal(atomic_load(&v->anomalies), 0);
}

static void test_etcd_killed_and_restarted(void **state)
{
    (void)state;
    eh_etcd *etcd = eh_start();
    assert_non_null(etcd);
    ac__etcd *e = eh_client(etcd->url, NULL);
    assert_non_null(e);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "cluster/", ev_on_event, v, &w), AC_OK);
    ac__etcd_reg *reg = NULL;
    assert_status(ac__etcd_register(e, "cluster/self", "me", 2, 2, &reg), AC_OK);
    assert_eventually(ev_wait_has(v, "cluster/self", "me", TS_WAIT_S), "the registration");

    for (int round = 0; round < 2; round++)
        one_outage(etcd, e, reg, w, v, round);
    assert_true(ev_has(v, "cluster/self", "me"));

    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_eventually(ev_wait_gone(v, "cluster/self", TS_WAIT_S), "the leave");
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    ev_view_free(v);
    eh_destroy(etcd);
}

int main(void)
{
    if (eh_skip("etcd.restart"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etcd_killed_and_restarted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
