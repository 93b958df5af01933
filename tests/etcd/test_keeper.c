/*
 * The keeper against a real etcd: it registers, holds the key past
 * several TTLs under one lease, says so in its status, and unregister
 * deletes the key at once; a lease lost under it (revoked from outside)
 * is replaced and the key put again, and the retry is reported.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define E(state) (((eh_fixture *)*(state))->e)

static ac__etcd_reg_info status_of(ac__etcd_reg *reg)
{
    ac__etcd_reg_info info;
    assert_status(ac__etcd_reg_status(reg, &info), AC_OK);
    return info;
}

/* Wait until the keeper is registered with at least `times` registrations. */
static bool wait_registered(ac__etcd_reg *reg, uint64_t times, double timeout_s)
{
    double end = ts_now() + timeout_s;
    for (;;) {
        ac__etcd_reg_info info;
        if (ac__etcd_reg_status(reg, &info) != AC_OK)
            return false;
        if (info.state == AC__ETCD_REG_REGISTERED && info.registrations >= times)
            return true;
        if (ts_now() > end)
            return false;
        ts_sleep_ms(10);
    }
}

/* The lease of key in etcd, or 0. */
static int64_t lease_of(ac__etcd *e, const char *key)
{
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, key, &kvs), AC_OK);
    int64_t lease = 0;
    for (size_t i = 0; i < kvs.count; i++)
        if (strcmp(kvs.kv[i].key, key) == 0)
            lease = kvs.kv[i].lease;
    ac__etcd_kvs_fini(&kvs);
    return lease;
}

static void test_register_holds_the_key_past_several_ttls(void **state)
{
    ac__etcd *e = E(state);
    ac__etcd_reg *reg = NULL;
    const char value[] = "addr=127.0.0.1:7000\0role=worker";
    assert_status(ac__etcd_register(e, "keeper/n1", value, sizeof value, 2, &reg), AC_OK);
    assert_eventually(wait_registered(reg, 1, TS_WAIT_S), "registered");
    ac__etcd_reg_info info = status_of(reg);
    assert_true(info.lease_id > 0);
    assert_status(info.status, AC_OK);
    if (!strstr(info.why, "registered under lease"))
        fail_msg("status says: %s", info.why);

    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "keeper/n1", &kvs), AC_OK);
    assert_int_equal(kvs.count, 1);
    assert_int_equal(kvs.kv[0].value_len, sizeof value);
    assert_memory_equal(kvs.kv[0].value, value, sizeof value);
    assert_int_equal(kvs.kv[0].lease, info.lease_id);
    ac__etcd_kvs_fini(&kvs);

    /* Four TTLs: the key stays, under the same lease. */
    double end = ts_now() + 8.0;
    while (ts_now() < end) {
        assert_int_equal(lease_of(e, "keeper/n1"), info.lease_id);
        ts_sleep_ms(250);
    }
    ac__etcd_reg_info later = status_of(reg);
    assert_int_equal(later.state, AC__ETCD_REG_REGISTERED);
    assert_int_equal(later.registrations, 1);
    assert_int_equal(later.failures, 0);
    assert_int_equal(later.lease_id, info.lease_id);

    double t0 = ts_now();
    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_true(ts_now() - t0 < 3.0);
    assert_int_equal(lease_of(e, "keeper/n1"), 0); /* gone at once */
    assert_status(ac__etcd_lease_keepalive_once(e, info.lease_id, NULL), AC_ENOTFOUND);
}

static ts_recorder *retries;

static void record_retry(const ac__etcd_retry *r, void *user)
{
    (void)user;
    ts_rec_add(retries, "%s: %.70s", r->what, r->message);
}

static void test_a_lost_lease_is_replaced(void **state)
{
    ac__etcd *plain = E(state);
    retries = ts_rec_new();
    ac__etcd *e = eh_client(((eh_fixture *)*state)->etcd->url,
                            &(ac__etcd_options){.backoff_initial_ms = 50,
                                                .backoff_max_ms = 500,
                                                .on_retry = record_retry});
    assert_non_null(e);
    ac__etcd_reg *reg = NULL;
    assert_status(ac__etcd_register(e, "keeper/n2", "v2", 2, 2, &reg), AC_OK);
    assert_eventually(wait_registered(reg, 1, TS_WAIT_S), "registered");
    int64_t first = status_of(reg).lease_id;

    assert_status(ac__etcd_lease_revoke(plain, first), AC_OK);
    assert_int_equal(lease_of(plain, "keeper/n2"), 0);
    assert_eventually(wait_registered(reg, 2, TS_WAIT_S), "registered again");
    ac__etcd_reg_info info = status_of(reg);
    assert_true(info.lease_id > 0 && info.lease_id != first);
    assert_int_equal(lease_of(plain, "keeper/n2"), info.lease_id);
    assert_true(info.failures >= 1);
    assert_true(ts_rec_count(retries) >= 1);
    char line[TS_REC_LABEL];
    ts_rec_get(retries, 0, line, sizeof line);
    if (!strstr(line, "register 'keeper/n2'") || !strstr(line, "keep-alive of lease"))
        fail_msg("the retry was reported as: %s", line);

    assert_status(ac__etcd_unregister(reg), AC_OK);
    assert_int_equal(lease_of(plain, "keeper/n2"), 0);
    assert_status(ac__etcd_close(e), AC_OK);
    ts_rec_free(retries);
}

static void test_keepers_of_many_keys(void **state)
{
    ac__etcd *e = E(state);
    enum { N = 8 };
    ac__etcd_reg *regs[N];
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof key, "keeper/many/%d", i);
        assert_status(ac__etcd_register(e, key, key, strlen(key), 3, &regs[i]), AC_OK);
    }
    for (int i = 0; i < N; i++)
        assert_eventually(wait_registered(regs[i], 1, TS_WAIT_S), "registered");
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "keeper/many/", &kvs), AC_OK);
    assert_int_equal(kvs.count, N);
    ac__etcd_kvs_fini(&kvs);
    for (int i = 0; i < N; i++)
        assert_status(ac__etcd_unregister(regs[i]), AC_OK);
    assert_status(ac__etcd_get_prefix(e, "keeper/many/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 0);
    ac__etcd_kvs_fini(&kvs);
}

int main(void)
{
    if (eh_skip("etcd.keeper"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_holds_the_key_past_several_ttls),
        cmocka_unit_test(test_a_lost_lease_is_replaced),
        cmocka_unit_test(test_keepers_of_many_keys),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
