#define _GNU_SOURCE
/*
 * Real partitions under the downing strategies other than keep-majority
 * (test_partition.c has that one): member processes each in a network
 * namespace of its own (ts_netns), cut by nftables drop rules and healed
 * by removing them. Each case names the side that must down itself and
 * the side that must keep serving, and checks what docs/cluster.md
 * promises each of them sees:
 *
 *   keep-oldest, 5 nodes, 2 | 3   the two with the oldest member keep,
 *                                 though the three are a majority
 *   keep-oldest, 3 nodes, 1 | 2   the oldest alone against two downs
 *                                 itself; the two keep
 *   static-quorum 3, 4 nodes, 3 | 1   the three (a quorum) keep
 *   static-quorum 3, 4 nodes, 2 | 2   neither side has the quorum: every
 *                                 node downs itself
 *   down-all, 3 nodes, 2 | 1      every node downs itself
 *
 * The side that keeps sees the others Unreachable, then Down; its ask
 * waiting on one of them fails with a NodeDownError; its cluster router
 * routes to the
 * keepers only; it lists the keepers, Up. A node that downs itself sees
 * Down of every member, itself too; its status is left, with the
 * reason naming the strategy; its ask waiting on the other side fails
 * with a NodeDownError; its router has no routees. After the heal no keeper
 * takes a downed incarnation back; restarted, the downed nodes are new
 * incarnations, Up everywhere.
 *
 * Heartbeats time out after 1 s and stable_after is 2 s (five times
 * both under the sanitizers, whose slow nodes would otherwise lose one
 * another while the cluster forms), above the heartbeat timeout as
 * docs/cluster.md asks: every member of the other
 * side is Unreachable before a node decides. (With stable_after well
 * below the time it takes to see all of them, a slow node can decide
 * over a view where only some are: under keep-oldest, 2 | 3 with the
 * oldest among the two, the three saw the oldest go first, kept, downed
 * it, then the other one too, while the two kept as well.) The asks
 * across the cut fail when the remote layer loses the peer, before the
 * decision, so they are checked for the NodeDownError only; the
 * resolver's reason is checked in the downed nodes' status.
 *
 * Every process is ended by pid and every namespace, link and table is
 * removed at the end of each case, failed or not; the teardown checks
 * that none is left. Without root (or namespaces, ip, nft) the cases
 * say why and skip.
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

/* One case: the cut, and which nodes must down themselves. */
typedef struct scenario {
    int n;
    int side[MAX];  /* of the cut: 0 or 1 */
    int downs[MAX]; /* 1: downs itself; 0: keeps serving */
    const char *downing;
    const char *quorum; /* --quorum, or NULL */
} scenario;

static const scenario *now_running;

static int make(int n)
{
    char why[256];
    count = 0;
    int made = ts_netns_create(&net, n, why, sizeof why);
    if (made == 0) {
        printf("# partition strategy tests skipped: %s\n", why);
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

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void start(int i)
{
    const scenario *s = now_running;
    char hb_timeout[16], stable[16];
    snprintf(hb_timeout, sizeof hb_timeout, "%d", 1000 * SLOW);
    snprintf(stable, sizeof stable, "%d", 2000 * SLOW);
    const char *args[32] = {"--system", systems[i], "--hb", "200", hb_timeout, "--cluster",
                            "part", "--downing", s->downing, "--stable", stable, "--router"};
    int k = 12;
    if (s->quorum) {
        args[k++] = "--quorum";
        args[k++] = s->quorum;
    }
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

/* Node i asks the sink of node j (it never answers); true when asked. */
static bool ask_sink(int i, int j)
{
    char line[96];
    snprintf(line, sizeof line, "ask %s %s", systems[j], addrs[j]);
    const char *asked = cl_ask(&nodes[i], line, "ASKED", 5000);
    return asked && !strstr(asked, "error");
}

/* Node i's waiting ask fails with a NodeDownError. */
static void ask_failed(int i)
{
    const char *failed[] = {"ANSWER NodeDownError", NULL};
    if (cl_find(&nodes[i], 0, 10000 * SLOW, failed) < 0)
        fail_msg("node %s: its ask across the cut did not fail with a NodeDownError",
                 systems[i]);
}

/* ---- what each side sees ------------------------------------------------ */

/* A keeper: the downers Unreachable, then Down; the latest of those
 * Downs' lines. */
static int keeper_sees_downers_down(int i, char inc[][32])
{
    const scenario *s = now_running;
    int last = 0;
    for (int j = 0; j < s->n; j++) {
        if (!s->downs[j])
            continue;
        int u = sees(i, 0, "unreachable", j, inc[j], 10000 * SLOW);
        assert_true(u >= 0);
        int d = sees(i, u, "down", j, inc[j], 10000 * SLOW);
        assert_true(d > u);
        last = d > last ? d : last;
    }
    return last;
}

/* A node that downed itself: Down of every member, itself too; left,
 * with the reason; no routees. */
static void downer_is_out(int i, char inc[][32])
{
    const scenario *s = now_running;
    for (int j = 0; j < s->n; j++)
        assert_true(sees(i, 0, "down", j, inc[j], 15000 * SLOW) >= 0);
    const char *st = cl_ask(&nodes[i], "status", "STATUS", 5000);
    assert_non_null(st);
    assert_non_null(strstr(st, "STATUS left "));
    char reason[96];
    snprintf(reason, sizeof reason, "this node downed itself (%s: ", s->downing);
    if (!strstr(st, reason))
        fail_msg("node %s: \"%s\" does not say \"%s\"", systems[i], st, reason);
    const char *r = cl_ask(&nodes[i], "routees", "ROUTEES", 5000);
    assert_non_null(r);
    assert_non_null(strstr(r, "ROUTEES 0"));
}

/* A keeper keeps serving: its router routes to keepers only, and it
 * lists the keepers, Up. */
static void keeper_serves(int i)
{
    const scenario *s = now_running;
    int keepers = 0;
    for (int j = 0; j < s->n; j++)
        keepers += !s->downs[j];
    const char *r = cl_ask(&nodes[i], "routees", "ROUTEES", 5000);
    assert_non_null(r);
    char want[32];
    snprintf(want, sizeof want, "ROUTEES %d ", keepers);
    assert_non_null(strstr(r, want));
    for (int j = 0; j < s->n; j++)
        if (s->downs[j])
            assert_null(strstr(r, addrs[j]));
    snprintf(want, sizeof want, "MEMBERS %d ", keepers);
    const char *m = cl_ask(&nodes[i], "members", "MEMBERS", 5000);
    assert_non_null(m);
    assert_non_null(strstr(m, want));
    assert_null(strstr(m, "unreachable"));
}

/* ---- one case ----------------------------------------------------------- */

static void all_up(const scenario *s)
{
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->n; j++)
            assert_true(sees(i, 0, "up", j, nodes[j].proc.incarnation, 10000 * SLOW) >= 0);
}

/* Before the cut, each node asks a sink across it: a downer one on the
 * other side, a keeper one of a downer. */
static void ask_across(const scenario *s)
{
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->n; j++)
            if (s->side[j] != s->side[i] && (s->downs[i] || s->downs[j])) {
                assert_true(ask_sink(i, j));
                break;
            }
}

/* Healed: no keeper takes a downed incarnation back; the downers,
 * restarted, are new incarnations, Up everywhere. */
static void heal_and_restart(const scenario *s, char inc[][32], const int *down)
{
    assert_true(ts_netns_heal(&net));
    sleep_ms(3000);
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->n; j++)
            if (!s->downs[i] && s->downs[j])
                assert_int_equal(sees(i, down[i], "up", j, inc[j], 0), -1);
    for (int j = 0; j < s->n; j++)
        if (s->downs[j]) {
            cl_end(&nodes[j], SIGKILL);
            start(j);
            assert_string_not_equal(nodes[j].proc.incarnation, inc[j]);
        }
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->n; j++)
            if (s->downs[i] || s->downs[j])
                assert_true(sees(i, s->downs[i] ? 0 : down[i], "up", j,
                                 nodes[j].proc.incarnation, 15000 * SLOW) >= 0);
}

static void run(const scenario *s)
{
    now_running = s;
    int made = make(s->n);
    if (made == 0)
        skip();
    assert_int_equal(made, 1);
    /* One at a time, so that node a is the oldest (keep-oldest's rule:
     * the earliest join time on the members' cards). */
    for (int i = 0; i < s->n; i++) {
        start(i);
        sleep_ms(50);
    }
    all_up(s);
    char inc[MAX][32];
    for (int i = 0; i < s->n; i++)
        snprintf(inc[i], sizeof inc[i], "%s", nodes[i].proc.incarnation);
    ask_across(s);

    double t0 = cl_now_ms();
    assert_true(ts_netns_partition(&net, s->side));
    int down[MAX] = {0};
    for (int i = 0; i < s->n; i++)
        if (!s->downs[i])
            down[i] = keeper_sees_downers_down(i, inc);
    for (int i = 0; i < s->n; i++)
        if (s->downs[i])
            downer_is_out(i, inc);
    for (int i = 0; i < s->n; i++)
        ask_failed(i);
    for (int i = 0; i < s->n; i++)
        if (!s->downs[i])
            keeper_serves(i);
    printf("# %s, %d nodes: partition resolved in %.0f ms\n", s->downing, s->n,
           cl_now_ms() - t0);
    heal_and_restart(s, inc, down);
    printf("# %s, %d nodes: all Up again after the restarts, %.0f ms after the partition\n",
           s->downing, s->n, cl_now_ms() - t0);
}

/* ---- the cases ---------------------------------------------------------- */

static void test_keep_oldest_minority_with_the_oldest_keeps(void **state)
{
    (void)state;
    static const scenario s = {.n = 5,
                               .side = {0, 0, 1, 1, 1},
                               .downs = {0, 0, 1, 1, 1},
                               .downing = "keep-oldest"};
    run(&s);
}

static void test_keep_oldest_alone_downs_itself(void **state)
{
    (void)state;
    static const scenario s = {
        .n = 3, .side = {1, 0, 0}, .downs = {1, 0, 0}, .downing = "keep-oldest"};
    run(&s);
}

static void test_static_quorum_side_with_the_quorum_keeps(void **state)
{
    (void)state;
    static const scenario s = {.n = 4,
                               .side = {0, 0, 0, 1},
                               .downs = {0, 0, 0, 1},
                               .downing = "static-quorum",
                               .quorum = "3"};
    run(&s);
}

static void test_static_quorum_no_side_with_the_quorum(void **state)
{
    (void)state;
    static const scenario s = {.n = 4,
                               .side = {0, 1, 0, 1},
                               .downs = {1, 1, 1, 1},
                               .downing = "static-quorum",
                               .quorum = "3"};
    run(&s);
}

static void test_down_all_every_node_downs_itself(void **state)
{
    (void)state;
    static const scenario s = {
        .n = 3, .side = {0, 0, 1}, .downs = {1, 1, 1}, .downing = "down-all"};
    run(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_keep_oldest_minority_with_the_oldest_keeps, teardown),
        cmocka_unit_test_teardown(test_keep_oldest_alone_downs_itself, teardown),
        cmocka_unit_test_teardown(test_static_quorum_side_with_the_quorum_keeps, teardown),
        cmocka_unit_test_teardown(test_static_quorum_no_side_with_the_quorum, teardown),
        cmocka_unit_test_teardown(test_down_all_every_node_downs_itself, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
