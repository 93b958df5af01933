/*
 * Keys against a real etcd: put, get and delete round trips with every
 * byte value in keys and values, empty and large values, the ranges of
 * prefixes that end in 0xff bytes, and failover from an endpoint that
 * cannot be reached to one that answers (an error from etcd is final).
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"
#include "etcd_view.h"

#define E(state) (((eh_fixture *)*(state))->e)
#define URL(state) (((eh_fixture *)*(state))->etcd->url)

static void test_odd_bytes_round_trip(void **state)
{
    ac__etcd *e = E(state);
    char key[300] = "kv/odd/";
    size_t n = strlen(key);
    for (int b = 1; b < 256; b++)
        key[n++] = (char)b;
    key[n] = '\0';
    unsigned char value[512];
    for (int i = 0; i < 512; i++)
        value[i] = (unsigned char)(i * 7);
    assert_status(ac__etcd_put(e, key, value, sizeof value, 0), AC_OK);

    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "kv/odd/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 1);
    assert_int_equal(kvs.kv[0].key_len, n);
    assert_memory_equal(kvs.kv[0].key, key, n + 1);
    assert_int_equal(kvs.kv[0].value_len, sizeof value);
    assert_memory_equal(kvs.kv[0].value, value, sizeof value);
    assert_int_equal(kvs.kv[0].value[sizeof value], '\0');
    assert_int_equal(kvs.kv[0].lease, 0);
    assert_true(kvs.kv[0].mod_revision > 0);
    assert_true(kvs.revision >= kvs.kv[0].mod_revision);
    int64_t first = kvs.kv[0].mod_revision;
    ac__etcd_kvs_fini(&kvs);
    assert_null(kvs.kv);

    /* Overwritten with an empty value: a later revision, "" not NULL. */
    assert_status(ac__etcd_put(e, key, NULL, 0, 0), AC_OK);
    assert_status(ac__etcd_get_prefix(e, "kv/odd/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 1);
    assert_int_equal(kvs.kv[0].value_len, 0);
    assert_non_null(kvs.kv[0].value);
    assert_string_equal(kvs.kv[0].value, "");
    assert_true(kvs.kv[0].mod_revision > first);
    ac__etcd_kvs_fini(&kvs);

    int64_t deleted = -1;
    assert_status(ac__etcd_delete(e, key, &deleted), AC_OK);
    assert_int_equal(deleted, 1);
    assert_status(ac__etcd_delete(e, key, &deleted), AC_OK);
    assert_int_equal(deleted, 0);
    assert_status(ac__etcd_get_prefix(e, "kv/odd/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 0);
    assert_null(kvs.kv);
    assert_true(kvs.revision > first);
    ac__etcd_kvs_fini(&kvs);
}

static void test_a_large_value_round_trips(void **state)
{
    ac__etcd *e = E(state);
    size_t n = 1 << 20;
    unsigned char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 131 + (i >> 8));
    assert_status(ac__etcd_put(e, "kv/big", big, n, 0), AC_OK);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "kv/big", &kvs), AC_OK);
    assert_int_equal(kvs.count, 1);
    assert_int_equal(kvs.kv[0].value_len, n);
    assert_memory_equal(kvs.kv[0].value, big, n);
    ac__etcd_kvs_fini(&kvs);
    assert_status(ac__etcd_delete(e, "kv/big", NULL), AC_OK);
    free(big);
}

static void check_prefix(ac__etcd *e, const char *prefix, const char *const *want, size_t n)
{
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, prefix, &kvs), AC_OK);
    if (kvs.count != n)
        fail_msg("prefix of %zu bytes: %zu keys, expected %zu", strlen(prefix), kvs.count, n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(kvs.kv[i].key, want[i]) != 0)
            fail_msg("key %zu of the prefix is not the one expected", i);
    ac__etcd_kvs_fini(&kvs);
}

static void test_prefixes_that_end_in_0xff(void **state)
{
    ac__etcd *e = E(state);
    const char *keys[] = {"kv/p", "kv/p\xff", "kv/p\xff\xff", "kv/p\xff" "z", "kv/q",
                          "kv/p\xfe\xff"};
    for (size_t i = 0; i < 6; i++)
        assert_status(ac__etcd_put(e, keys[i], "v", 1, 0), AC_OK);
    /* In byte order: "z" (0x7a) sorts before 0xff. */
    const char *under_ff[] = {"kv/p\xff", "kv/p\xff" "z", "kv/p\xff\xff"};
    check_prefix(e, "kv/p\xff", under_ff, 3);
    const char *under_ffff[] = {"kv/p\xff\xff"};
    check_prefix(e, "kv/p\xff\xff", under_ffff, 1);
    const char *under_fe[] = {"kv/p\xfe\xff"};
    check_prefix(e, "kv/p\xfe", under_fe, 1);
    const char *under_p[] = {"kv/p", "kv/p\xfe\xff", "kv/p\xff", "kv/p\xff" "z",
                             "kv/p\xff\xff"};
    check_prefix(e, "kv/p", under_p, 5);

    ac__etcd_kvs all;
    assert_status(ac__etcd_get_prefix(e, "", &all), AC_OK);
    assert_true(all.count >= 6);
    for (size_t i = 1; i < all.count; i++) /* in key order, bytes unsigned */
        assert_true(strcmp(all.kv[i - 1].key, all.kv[i].key) < 0);
    ac__etcd_kvs_fini(&all);
    for (size_t i = 0; i < 6; i++)
        assert_status(ac__etcd_delete(e, keys[i], NULL), AC_OK);
}

static void test_failover_to_an_endpoint_that_answers(void **state)
{
    char dead[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", eh_free_port());
    const char *list[] = {dead, URL(state)};
    ac__etcd *e = ac__etcd_open(list, 2, NULL);
    assert_non_null(e);
    for (int i = 0; i < 3; i++)
        assert_status(ac__etcd_put(e, "kv/failover", "x", 1, 0), AC_OK);
    char got[8];
    assert_true(ev_etcd_has(e, "kv/failover", got, sizeof got));
    assert_string_equal(got, "x");

    /* etcd's refusal is final: the next endpoint is not asked. */
    assert_status(ac__etcd_put(e, "kv/failover", "x", 1, 4242), AC_ENOTFOUND);
    if (!strstr(ac_last_error(), "etcd refused it") ||
        !strstr(ac_last_error(), "lease not found"))
        fail_msg("unexpected message: %s", ac_last_error());
    assert_status(ac__etcd_delete(e, "kv/failover", NULL), AC_OK);
    assert_status(ac__etcd_close(e), AC_OK);
}

int main(void)
{
    if (eh_skip("etcd.kv"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd_bytes_round_trip),
        cmocka_unit_test(test_a_large_value_round_trips),
        cmocka_unit_test(test_prefixes_that_end_in_0xff),
        cmocka_unit_test(test_failover_to_an_endpoint_that_answers),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
