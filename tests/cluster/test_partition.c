#define _GNU_SOURCE
/*
 * Real partitions: member processes each in a network namespace of its
 * own (ts_netns: veths into a bridge in a hub namespace, a private
 * 10.x.y.0/24 subnet), cut by nftables drop rules in those namespaces
 * and healed by removing them. Under keep-majority:
 *
 *   three nodes, 2 | 1   the two see the one Unreachable, then Down; the
 *                        one downs itself (Down of every member, its
 *                        status left, its ask on the other side failed
 *                        with a NodeDownError). After the heal the two
 *                        never take its incarnation back; restarted, it
 *                        is a new incarnation, Up everywhere.
 *   five nodes, 3 | 2    the same with two on the losing side.
 *
 * Every namespace, link and table is removed at the end of each test,
 * failed or not, and the teardown checks that none is left. Without
 * root (or namespaces, ip, nft) the tests say why and skip.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cl_support.h"
#include "ts_netns.h"

#ifdef CL_SANITIZED
#define SLOW 5
#else
#define SLOW 1
#endif

#define MAX 5
#define PORT 7400

static ts_netns net;
static cl_node nodes[MAX];
static int count;
static const char *const systems[MAX] = {"a", "b", "c", "d", "e"};
static char addrs[MAX][48];

static int make(int n)
{
    char why[256];
    count = 0;
    int made = ts_netns_create(&net, n, why, sizeof why);
    if (made == 0) {
        printf("# partition tests skipped: %s\n", why);
        return 0;
    }
    if (made < 0) {
        printf("# %s\n", why);
        return -1;
    }
    count = n;
    for (int i = 0; i < n; i++)
        snprintf(addrs[i], sizeof addrs[i], "%s:%d", net.addr[i], PORT);
    return 1;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < MAX; i++)
        cl_end(&nodes[i], SIGKILL);
    bool gone = ts_netns_destroy(&net);
    if (!gone)
        printf("# namespaces of %s are left\n", net.prefix);
    return gone ? 0 : -1;
}

static void start(int i)
{
    /* Five times longer under the sanitizers, whose slow nodes would
     * otherwise lose one another while five of them form a cluster. */
    char hb_timeout[16];
    snprintf(hb_timeout, sizeof hb_timeout, "%d", 1000 * SLOW);
    const char *args[24] = {"--system", systems[i], "--hb", "200", hb_timeout, "--cluster",
                            "part", "--downing", "keep-majority", "--stable", hb_timeout,
                            "--router"};
    int k = 12;
    for (int j = 0; j < count; j++) { /* every one: static seeds make no gossip */
        args[k++] = "--seed";
        args[k++] = addrs[j];
    }
    args[k] = NULL;
    assert_true(cl_start_in(&nodes[i], ts_netns_ip(), net.name[i], net.addr[i], PORT, args));
}

static int sees(int i, int from, const char *kind, int j, const char *inc, int ms)
{
    return cl_event(&nodes[i], from, ms, kind, addrs[j], inc);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* side[i]: 0 the majority, 1 the minority. */
static void partition_case(int n, const int *side)
{
    int made = make(n);
    if (made == 0)
        skip();
    assert_int_equal(made, 1);
    for (int i = 0; i < n; i++)
        start(i);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            assert_true(sees(i, 0, "up", j, nodes[j].proc.incarnation, 10000 * SLOW) >= 0);
    char inc[MAX][32];
    int loser = -1, keeper = -1;
    for (int i = 0; i < n; i++) {
        snprintf(inc[i], sizeof inc[i], "%s", nodes[i].proc.incarnation);
        if (side[i] && loser < 0)
            loser = i;
        if (!side[i] && keeper < 0)
            keeper = i;
    }
    char ask_line[96];
    snprintf(ask_line, sizeof ask_line, "ask %s %s", systems[keeper], addrs[keeper]);
    const char *asked = cl_ask(&nodes[loser], ask_line, "ASKED", 5000);
    assert_non_null(asked);
    assert_null(strstr(asked, "error"));

    double t0 = cl_now_ms();
    assert_true(ts_netns_partition(&net, side));
    int down[MAX] = {0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (side[i] || !side[j])
                continue; /* the keepers' view of the losers */
            int u = sees(i, 0, "unreachable", j, inc[j], 10000 * SLOW);
            assert_true(u >= 0);
            int d = sees(i, u, "down", j, inc[j], 10000 * SLOW);
            assert_true(d > u);
            down[i] = d > down[i] ? d : down[i];
        }
    for (int i = 0; i < n; i++) {
        if (!side[i])
            continue;
        for (int j = 0; j < n; j++) /* every member Down, itself too */
            assert_true(sees(i, 0, "down", j, inc[j], 15000 * SLOW) >= 0);
        const char *st = cl_ask(&nodes[i], "status", "STATUS", 5000);
        assert_non_null(st);
        assert_non_null(strstr(st, "STATUS left "));
    }
    const char *failed[] = {"ANSWER NodeDownError", NULL};
    assert_true(cl_find(&nodes[loser], 0, 10000 * SLOW, failed) >= 0);
    /* The losers' cluster routers have no routees left; the keepers'
     * route to the keepers. */
    for (int i = 0; i < n; i++) {
        const char *r = cl_ask(&nodes[i], "routees", "ROUTEES", 5000);
        assert_non_null(r);
        for (int j = 0; j < n; j++)
            if (side[i] || side[j])
                assert_null(strstr(r, addrs[j]));
        if (side[i])
            assert_non_null(strstr(r, "ROUTEES 0"));
    }
    /* The keepers keep serving: they list one another, Up. */
    char want[32];
    int keepers = 0;
    for (int i = 0; i < n; i++)
        keepers += !side[i];
    snprintf(want, sizeof want, "MEMBERS %d ", keepers);
    const char *m = cl_ask(&nodes[keeper], "members", "MEMBERS", 5000);
    assert_non_null(m);
    assert_non_null(strstr(m, want));
    assert_null(strstr(m, "unreachable"));
    printf("# %d nodes: partition resolved in %.0f ms\n", n, cl_now_ms() - t0);

    assert_true(ts_netns_heal(&net));
    sleep_ms(3000);
    /* Healed: a downed incarnation is never taken back. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (!side[i] && side[j])
                assert_int_equal(sees(i, down[i], "up", j, inc[j], 0), -1);
    /* Restarted, each is a new incarnation and Up everywhere. */
    for (int j = 0; j < n; j++)
        if (side[j]) {
            cl_end(&nodes[j], SIGKILL);
            start(j);
            assert_string_not_equal(nodes[j].proc.incarnation, inc[j]);
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (side[i] || side[j])
                assert_true(sees(i, side[i] ? 0 : down[i], "up", j, nodes[j].proc.incarnation,
                                 15000 * SLOW) >= 0);
    printf("# %d nodes: all Up again after the restarts, %.0f ms after the partition\n", n,
           cl_now_ms() - t0);
}

static void test_three_nodes_two_against_one(void **state)
{
    (void)state;
    const int side[] = {0, 0, 1};
    partition_case(3, side);
}

static void test_five_nodes_three_against_two(void **state)
{
    (void)state;
    const int side[] = {0, 1, 0, 1, 0};
    partition_case(5, side);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_three_nodes_two_against_one, teardown),
        cmocka_unit_test_teardown(test_five_nodes_three_against_two, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
