/*
 * Keepers of many keys against a real etcd: sixty keys, each under a
 * lease of its own, held past three TTLs by two threads over two TCP
 * connections (the same ones throughout), their keep-alives sent in
 * batches (far fewer requests than keep-alives); a lease revoked from
 * outside is replaced for its key alone; stop revokes every lease, so
 * every key is gone at once; bad arguments are refused.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "ts_test.h"

#include "cluster/etcd.h"
#include "etcd_harness.h"

#define FX(state) ((eh_fixture *)*(state))
#define KEYS 60
#define TTL_S 3

static ac__etcd_reg_info status_of(ac__etcd_keepers *k, size_t id)
{
    ac__etcd_reg_info info;
    assert_status(ac__etcd_keepers_status(k, id, &info), AC_OK);
    return info;
}

/* Wait until every key is registered, at least `times` times for key
 * `which` (SIZE_MAX: none in particular). */
static bool wait_all_registered(ac__etcd_keepers *k, size_t which, uint64_t times)
{
    double end = ts_now() + TS_WAIT_S;
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < KEYS && all; i++) {
            ac__etcd_reg_info info = status_of(k, i);
            all = info.state == AC__ETCD_REG_REGISTERED &&
                  info.registrations >= (i == which ? times : 1);
        }
        if (all)
            return true;
        if (ts_now() > end)
            return false;
        ts_sleep_ms(20);
    }
}

/* How many keys under prefix are held under the lease the keepers
 * report for them. */
static size_t keys_under_their_leases(ac__etcd *e, ac__etcd_keepers *k)
{
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "keepers/", &kvs), AC_OK);
    size_t held = 0;
    for (size_t i = 0; i < kvs.count; i++) {
        unsigned id;
        if (sscanf(kvs.kv[i].key, "keepers/%u", &id) == 1 && id < KEYS &&
            kvs.kv[i].lease == status_of(k, id).lease_id)
            held++;
    }
    ac__etcd_kvs_fini(&kvs);
    return held;
}

/* Whether a socket of this process has this inode. */
static bool own_socket(unsigned long inode)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    struct dirent *de;
    bool found = false;
    while (!found && (de = readdir(d))) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        unsigned long ino;
        if (n > 0) {
            target[n] = '\0';
            found = sscanf(target, "socket:[%lu]", &ino) == 1 && ino == inode;
        }
    }
    closedir(d);
    return found;
}

/* This process's TCP connections established to etcd's client port
 * (/proc/net/tcp, matched to its own sockets by inode: etcd's gateway
 * has connections of its own to that port): how many, their local ports
 * in ports[0..4). */
static int connections_to(int port, unsigned ports[4])
{
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned local, remote, st;
        unsigned long inode;
        if (sscanf(line, " %*d: %*8[0-9A-Fa-f]:%x %*8[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
                   &local, &remote, &st, &inode) == 4 && (int)remote == port && st == 1 &&
            own_socket(inode) && n < 4)
            ports[n++] = local;
    }
    fclose(f);
    return n;
}

static void add_keys(ac__etcd_keepers *k)
{
    for (size_t i = 0; i < KEYS; i++) {
        char key[32];
        size_t id = SIZE_MAX;
        snprintf(key, sizeof key, "keepers/%zu", i);
        assert_status(ac__etcd_keepers_add(k, key, key, strlen(key), TTL_S, &id), AC_OK);
        assert_int_equal(id, i);
    }
}

static void test_many_keys_two_threads_two_connections(void **state)
{
    ac__etcd *e = FX(state)->e;
    int port = FX(state)->etcd->client_port;
    ac__etcd_keepers *k = NULL;
    assert_status(ac__etcd_keepers_start(e, &k), AC_OK);
    add_keys(k);
    assert_eventually(wait_all_registered(k, SIZE_MAX, 1), "every key registered");
    assert_int_equal(keys_under_their_leases(e, k), KEYS);

    /* Two connections at most (the registrar's, the keep-alives'); the
     * keep-alives' the same throughout. */
    unsigned before_ports[4], after_ports[4];
    int nb = connections_to(port, before_ports);
    assert_true(nb >= 1 && nb <= 2);
    ac__etcd_keepers_stats before;
    assert_status(ac__etcd_keepers_counts(k, &before), AC_OK);
    ts_sleep_ms(3 * TTL_S * 1000); /* three TTLs: every lease outlives its first */
    int na = connections_to(port, after_ports);
    assert_true(na >= 1 && na <= 2);
    bool kept_open = false;
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < na; j++)
            kept_open = kept_open || before_ports[i] == after_ports[j];
    assert_true(kept_open);
    ac__etcd_keepers_stats after;
    assert_status(ac__etcd_keepers_counts(k, &after), AC_OK);
    assert_int_equal(keys_under_their_leases(e, k), KEYS);
    for (size_t i = 0; i < KEYS; i++) {
        ac__etcd_reg_info info = status_of(k, i);
        assert_int_equal(info.registrations, 1);
        assert_int_equal(info.failures, 0);
        assert_true(info.keepalives >= 3);
    }
    assert_int_equal(after.keys, KEYS);
    uint64_t kept = after.keepalives - before.keepalives;
    uint64_t requests = after.requests - before.requests;
    assert_true(kept >= 3 * KEYS);
    if (requests * 5 > kept) /* batched: a request renews many leases */
        fail_msg("%llu requests for %llu keep-alives", (unsigned long long)requests,
                 (unsigned long long)kept);

    double t0 = ts_now();
    assert_status(ac__etcd_keepers_stop(k), AC_OK);
    assert_true(ts_now() - t0 < 10.0);
    ac__etcd_kvs kvs;
    assert_status(ac__etcd_get_prefix(e, "keepers/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 0); /* revoked: gone at once */
    ac__etcd_kvs_fini(&kvs);
}

static void test_a_lost_lease_is_replaced_alone(void **state)
{
    ac__etcd *e = FX(state)->e;
    ac__etcd_keepers *k = NULL;
    assert_status(ac__etcd_keepers_start(e, &k), AC_OK);
    add_keys(k);
    assert_eventually(wait_all_registered(k, SIZE_MAX, 1), "every key registered");
    int64_t lost = status_of(k, 7).lease_id;
    assert_status(ac__etcd_lease_revoke(e, lost), AC_OK);
    assert_eventually(wait_all_registered(k, 7, 2), "key 7 registered again");
    ac__etcd_reg_info info = status_of(k, 7);
    assert_true(info.lease_id > 0 && info.lease_id != lost);
    assert_true(info.failures >= 1);
    for (size_t i = 0; i < KEYS; i++)
        if (i != 7)
            assert_int_equal(status_of(k, i).registrations, 1);
    assert_int_equal(keys_under_their_leases(e, k), KEYS);
    assert_status(ac__etcd_keepers_stop(k), AC_OK);
}

static void test_bad_arguments(void **state)
{
    ac__etcd *e = FX(state)->e;
    ac__etcd_keepers *k = NULL;
    size_t id;
    ac__etcd_reg_info info;
    assert_status(ac__etcd_keepers_start(NULL, &k), AC_EINVAL);
    assert_status(ac__etcd_keepers_start(e, NULL), AC_EINVAL);
    assert_status(ac__etcd_keepers_start(e, &k), AC_OK);
    assert_status(ac__etcd_keepers_add(k, "", "v", 1, 5, &id), AC_EINVAL);
    assert_status(ac__etcd_keepers_add(k, "k", NULL, 1, 5, &id), AC_EINVAL);
    assert_status(ac__etcd_keepers_add(k, "k", "v", 1, 0, &id), AC_EINVAL);
    assert_status(ac__etcd_keepers_add(NULL, "k", "v", 1, 5, &id), AC_EINVAL);
    assert_status(ac__etcd_keepers_status(k, 0, &info), AC_EINVAL); /* no key 0 yet */
    if (!strstr(ac_last_error(), "keepers status"))
        fail_msg("the error says: %s", ac_last_error());
    assert_status(ac__etcd_keepers_counts(k, NULL), AC_EINVAL);
    assert_status(ac__etcd_close(e), AC_EINVAL); /* the thread uses it */
    assert_status(ac__etcd_keepers_stop(k), AC_OK);
    assert_status(ac__etcd_keepers_stop(NULL), AC_OK);
}

int main(void)
{
    if (eh_skip("etcd.keepers"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_keys_two_threads_two_connections),
        cmocka_unit_test(test_a_lost_lease_is_replaced_alone),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, eh_group_setup, eh_group_teardown);
}
