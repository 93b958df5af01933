/*
 * etcd unreachable at first: the keeper retries with capped exponential
 * backoff (each delay reported, doubling from the initial one up to the
 * cap, cut by at most the jitter) and its status says why; the watcher
 * retries too. When etcd starts, both succeed without being told.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define MAX_RETRIES 64

static pthread_mutex_t retry_mu = PTHREAD_MUTEX_INITIALIZER;
static ac__etcd_retry seen[MAX_RETRIES];
static size_t nseen;

static void record_retry(const ac__etcd_retry *r, void *user)
{
    (void)user;
    if (strncmp(r->what, "register", 8) != 0)
        return;
    pthread_mutex_lock(&retry_mu);
    if (nseen < MAX_RETRIES) {
        seen[nseen] = *r;
        seen[nseen].what = seen[nseen].message = NULL; /* not kept past the call */
        nseen++;
    }
    pthread_mutex_unlock(&retry_mu);
}

static size_t retries_seen(void)
{
    pthread_mutex_lock(&retry_mu);
    size_t n = nseen;
    pthread_mutex_unlock(&retry_mu);
    return n;
}

static void test_register_and_watch_before_etcd_starts(void **state)
{
    (void)state;
    eh_etcd *etcd = eh_prepare();
    assert_non_null(etcd);
    ac__etcd_options o = {.backoff_initial_ms = 40, .backoff_max_ms = 320,
                          .backoff_jitter_pct = 25, .on_retry = record_retry};
    ac__etcd *e = eh_client(etcd->url, &o);
    assert_non_null(e);
    ev_view *v = ev_view_new();
    ac__etcd_watch *w = NULL;
    assert_status(ac__etcd_watch_prefix(e, "u/", ev_on_event, v, &w), AC_OK);
    ac__etcd_reg *reg = NULL;
    assert_status(ac__etcd_register(e, "u/a", "here", 4, 2, &reg), AC_OK);

    double end = ts_now() + TS_WAIT_S;
    while (retries_seen() < 7 && ts_now() < end)
        ts_sleep_ms(10);
    assert_true(retries_seen() >= 7);
    ac__etcd_reg_info info;
    assert_status(ac__etcd_reg_status(reg, &info), AC_OK);
    assert_int_equal(info.state, AC__ETCD_REG_RETRYING);
    assert_status(info.status, AC_EFAILED);
    assert_int_equal(info.lease_id, 0);
    assert_int_equal(info.registrations, 0);
    if (!strstr(info.why, "etcd lease grant: no endpoint answered") ||
        !strstr(info.why, etcd->url) || !strstr(info.why, "onnect"))
        fail_msg("the keeper's status says: %s", info.why);
    print_message("keeper: %s\n", info.why);
    /* The watcher fails on a thread of its own, at its own pace: the
     * keeper's retries say nothing of how far it has come. */
    ac__etcd_watch_info wi;
    assert_eventually(eh_wait_watch_state(w, AC__ETCD_WATCH_RETRYING, 1, TS_WAIT_S, &wi),
                      "the watcher's first failed list");
    assert_int_equal(wi.lists, 0);

    /* Capped exponential: 40, 80, 160, 320, 320, ... each cut by <= 25 %. */
    pthread_mutex_lock(&retry_mu);
    uint64_t nominal = 40;
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(seen[i].attempt, i + 1);
        assert_status(seen[i].status, AC_EFAILED);
        if (seen[i].delay_ms > nominal || seen[i].delay_ms < nominal * 3 / 4)
            fail_msg("retry %zu waited %llu ms; expected %llu ms less at most 25 %%", i,
                     (unsigned long long)seen[i].delay_ms, (unsigned long long)nominal);
        nominal = nominal * 2 > 320 ? 320 : nominal * 2;
    }
    pthread_mutex_unlock(&retry_mu);

    assert_true(eh_run(etcd));
    double t0 = ts_now();
    end = t0 + 20.0;
    while (ts_now() < end &&
           (ac__etcd_reg_status(reg, &info) != AC_OK || info.state != AC__ETCD_REG_REGISTERED))
        ts_sleep_ms(10);
    assert_int_equal(info.state, AC__ETCD_REG_REGISTERED);
    print_message("registered %.2f s after etcd came up\n", ts_now() - t0);
    assert_true(ts_now() - t0 < 2.0); /* within the capped delay and a request */
    assert_int_equal(info.registrations, 1);
    assert_true(ev_etcd_has(e, "u/a", NULL, 0));
    assert_eventually(ev_wait_has(v, "u/a", "here", TS_WAIT_S), "the watcher's PUT");

    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_eventually(ev_wait_gone(v, "u/a", TS_WAIT_S), "the leave");
    assert_status(ac__etcd_watch_stop(w), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
    ev_view_free(v);
    eh_destroy(etcd);
}

int main(void)
{
    if (eh_skip("etcd.unreachable"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_and_watch_before_etcd_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
