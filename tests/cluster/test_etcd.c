/*
 * The etcd provider across real processes and a real etcd on 127.0.0.1:
 * three nodes register and see each other Up; each one's key and value
 * are as documented; kill -9 of one is Down everywhere within the lease
 * TTL and a second; etcd killed and restarted under the nodes, within
 * their lease TTL, costs no member, and a node that joins afterwards is
 * seen (the watch resumed); etcd gone for longer than the TTL fences
 * every node (each downs itself);
 * etcd unreachable at join is a clear status, not a hang, and the
 * cluster forms once etcd comes.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <actorc/remote.h>


#include "cl_support.h"
#include "cluster/etcd.h"
#include "etcd_harness.h"

#ifdef CL_SANITIZED
#define SLOW 5
#else
#define SLOW 1
#endif

#define TTL_S 2
#define UP_MS (5000 * SLOW)
#define DOWN_MS ((TTL_S * 1000 + 1000) * SLOW)

#define N 4
static cl_node nodes[N];
static int ports[N];
static char addrs[N][32];
static eh_etcd *etcd;

static int setup(void **state)
{
    (void)state;
    if (ac_node_free_ports(ports, N) != AC_OK)
        return -1;
    for (int i = 0; i < N; i++)
        cl_addr(ports[i], addrs[i], sizeof addrs[i]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++)
        cl_end(&nodes[i], SIGKILL);
    eh_destroy(etcd);
    etcd = NULL;
    return 0;
}

/* Node i with a lease of ttl seconds. */
static void start_ttl(int i, const char *ttl)
{
    char system[8];
    snprintf(system, sizeof system, "n%d", i);
    const char *args[] = {"--system", system, "--hb", "200", "1000", "--cluster", "etcdc",
                          "--role", "worker", "--etcd", etcd->url, "--prefix", "/test",
                          "--ttl", ttl, "--retry", "50", "500", NULL};
    assert_true(cl_start(&nodes[i], ports[i], args));
}

static void start(int i) { start_ttl(i, "2"); }

static int sees_up(int i, int j, int ms)
{
    return cl_event(&nodes[i], 0, ms, "up", addrs[j], nodes[j].proc.incarnation);
}

static void all_see_all(int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            assert_true(sees_up(i, j, UP_MS) >= 0);
}

/* Wait for a STATUS line of node i starting with `head`. */
static bool status_is(int i, const char *head, int ms)
{
    double end = cl_now_ms() + ms;
    do {
        const char *st = cl_ask(&nodes[i], "status", "STATUS", 5000);
        if (st && strncmp(st, head, strlen(head)) == 0)
            return true;
        struct timespec t = {0, 50 * 1000000};
        nanosleep(&t, NULL);
    } while (cl_now_ms() < end);
    return false;
}

/* Does node i list n members (Up or Unreachable: a loaded machine may
 * delay beats)? */
static bool members_are(int i, int n)
{
    char head[32];
    snprintf(head, sizeof head, "MEMBERS %d ", n);
    const char *m = cl_ask(&nodes[i], "members", "MEMBERS", 5000);
    return m && strncmp(m, head, strlen(head)) == 0;
}

static int count_lines(int i, const char *needle)
{
    cl_pump(&nodes[i]);
    int n = 0;
    for (int k = 0; k < nodes[i].count; k++)
        n += strstr(nodes[i].lines[k], needle) != NULL;
    return n;
}

static void test_join_kill(void **state)
{
    (void)state;
    etcd = eh_start();
    assert_non_null(etcd);
    for (int i = 0; i < 3; i++)
        start(i);
    all_see_all(3);
    assert_true(status_is(0, "STATUS joined", UP_MS));
    assert_true(members_are(0, 3));

    /* Each key as documented: <prefix>/<cluster>/members/<address>-<incarnation>. */
    ac__etcd *e = eh_client(etcd->url, NULL);
    assert_non_null(e);
    ac__etcd_kvs kvs;
    assert_int_equal(ac__etcd_get_prefix(e, "/test/etcdc/members/", &kvs), AC_OK);
    assert_int_equal(kvs.count, 3);
    char key[128];
    snprintf(key, sizeof key, "/test/etcdc/members/%s-%s", addrs[1], nodes[1].proc.incarnation);
    bool found = false;
    for (size_t k = 0; k < kvs.count; k++)
        if (strcmp(kvs.kv[k].key, key) == 0) {
            found = true;
            assert_non_null(strstr(kvs.kv[k].value, "\"system\":\"n1\""));
            assert_non_null(strstr(kvs.kv[k].value, nodes[1].proc.incarnation));
            assert_non_null(strstr(kvs.kv[k].value, "\"roles\":[\"worker\"]"));
            assert_true(kvs.kv[k].lease != 0);
        }
    assert_true(found);
    ac__etcd_kvs_fini(&kvs);

    double t0 = cl_now_ms();
    char inc[32];
    snprintf(inc, sizeof inc, "%s", nodes[2].proc.incarnation);
    cl_end(&nodes[2], SIGKILL);
    assert_true(cl_event(&nodes[0], 0, DOWN_MS, "down", addrs[2], inc) >= 0);
    assert_true(cl_event(&nodes[1], 0, DOWN_MS, "down", addrs[2], inc) >= 0);
    printf("# kill -9: Down on both after %.0f ms\n", cl_now_ms() - t0);
    /* Its lease runs out: the key goes. */
    double end = cl_now_ms() + DOWN_MS * 2;
    size_t left = 3;
    while (cl_now_ms() < end) {
        assert_int_equal(ac__etcd_get_prefix(e, "/test/etcdc/members/", &kvs), AC_OK);
        left = kvs.count;
        ac__etcd_kvs_fini(&kvs);
        if (left == 2)
            break;
        struct timespec t = {0, 100 * 1000000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(left, 2);

    /* A key deleted while its node's connection stands: Down all the same. */
    snprintf(key, sizeof key, "/test/etcdc/members/%s-%s", addrs[1], nodes[1].proc.incarnation);
    int64_t deleted = 0;
    assert_int_equal(ac__etcd_delete(e, key, &deleted), AC_OK);
    assert_int_equal(deleted, 1);
    assert_true(cl_event(&nodes[0], 0, DOWN_MS, "down", addrs[1], nodes[1].proc.incarnation) >= 0);
    assert_int_equal(ac__etcd_close(e), AC_OK);
}

/* etcd down for less than the lease TTL (15 s here, room for a restart
 * on a loaded machine): nobody fences, nobody is lost. */
static void test_etcd_restarted(void **state)
{
    (void)state;
    etcd = eh_start();
    assert_non_null(etcd);
    for (int i = 0; i < 3; i++)
        start_ttl(i, "15");
    all_see_all(3);
    for (int i = 0; i < 3; i++)
        assert_true(status_is(i, "STATUS joined", UP_MS));

    eh_kill(etcd);
    for (int i = 0; i < 3; i++)
        assert_true(status_is(i, "STATUS retrying", UP_MS));
    const char *st = cl_ask(&nodes[0], "status", "STATUS", 5000);
    assert_non_null(st);
    assert_null(strstr(st, " - ")); /* a last error is given */
    assert_true(eh_run(etcd));
    for (int i = 0; i < 3; i++)
        assert_true(status_is(i, "STATUS joined", UP_MS * 2));
    /* Nobody was lost, and the watch resumed: a fourth is seen. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(count_lines(i, "EVENT down"), 0);
        assert_true(members_are(i, 3));
    }
    start_ttl(3, "15");
    all_see_all(4);
}

/* Fencing: etcd gone for good, so no node can renew its lease; past the
 * TTL each downs itself: Down of the other and of itself, its cluster
 * left, the lease named in its status. */
static void test_fenced_without_etcd(void **state)
{
    (void)state;
    etcd = eh_start();
    assert_non_null(etcd);
    for (int i = 0; i < 2; i++)
        start(i);
    all_see_all(2);
    for (int i = 0; i < 2; i++)
        assert_true(status_is(i, "STATUS joined", UP_MS));
    double t0 = cl_now_ms();
    eh_kill(etcd);
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++)
            assert_true(cl_event(&nodes[i], 0, DOWN_MS * 3, "down", addrs[j],
                                 nodes[j].proc.incarnation) >= 0);
        assert_true(status_is(i, "STATUS left", UP_MS));
        const char *st = cl_ask(&nodes[i], "status", "STATUS", 5000);
        assert_non_null(st);
        assert_non_null(strstr(st, "etcd lease was not renewed"));
    }
    printf("# etcd gone: both fenced after %.0f ms (TTL %d s)\n", cl_now_ms() - t0, TTL_S);
}

static void test_etcd_unreachable_at_join(void **state)
{
    (void)state;
    etcd = eh_prepare(); /* ports, not running */
    assert_non_null(etcd);
    double t0 = cl_now_ms();
    start(0);
    start(1);
    /* Join returned at once (READY came, the node answers), and says why. */
    assert_true(status_is(0, "STATUS joining 1 0 ", UP_MS));
    double waited = cl_now_ms() - t0;
    printf("# joined without etcd, status read after %.0f ms\n", waited);
    double end = cl_now_ms() + UP_MS;
    const char *st = NULL;
    while (cl_now_ms() < end) {
        st = cl_ask(&nodes[0], "status", "STATUS", 5000);
        if (st && !strstr(st, "STATUS joining 1 0 0 "))
            break;
    }
    assert_non_null(st);
    assert_non_null(strstr(st, "STATUS joining 1 0 "));
    assert_non_null(strstr(st, "etcd"));
    printf("# %s\n", st);
    /* etcd comes: the cluster forms. */
    assert_true(eh_run(etcd));
    all_see_all(2);
    assert_true(status_is(0, "STATUS joined", UP_MS));
    assert_true(status_is(1, "STATUS joined", UP_MS));
}

int main(void)
{
    if (eh_skip("cluster.etcd"))
        return EH_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_join_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_etcd_restarted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_etcd_unreachable_at_join, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_without_etcd, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
