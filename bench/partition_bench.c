/*
 * actorc-bench-partition: a real partition of a three-node static
 * cluster, 2 | 1, each node a process in a network namespace of its own
 * (tests/support/ts_netns.h: veths into a bridge in a hub namespace, a
 * private 10.x.y.0/24 subnet), cut with nftables drop rules and healed
 * by removing them. Default heartbeats (200 ms, timeout 1,000 ms) and
 * the default resolution (keep-majority, stable_after = the heartbeat
 * timeout). Per repetition:
 *
 *   detect_ms   from the rules going in to the first Unreachable event,
 *               on a node of the majority, of the cut-off node (target:
 *               at most the heartbeat timeout + 100 ms)
 *   resolve_ms  from the cut-off node's last Unreachable event (the
 *               start of its stable period: it sees the two others go
 *               silent up to a beat or two apart) to its own Down: it
 *               downed itself (target: stable_after + 200 ms); from its
 *               first Unreachable, and from the rules going in, on an
 *               INFO line
 *   heal_ms     a second cluster whose resolution waits 600 s, cut the
 *               same way until each side has lost the other (past the
 *               heartbeat timeout), then healed: from the rules coming
 *               out to every node listing every member Up, and still
 *               so a second later (target: at most 2 s)
 *
 *   actorc-bench-partition [REPETITIONS]     (default 3) the medians as
 *       RESULT partition <figure> <ms> ms
 *
 * Without root (or network namespaces, ip, nft) it says so on an INFO
 * line and exits 0. Every process is ended by pid, and every namespace
 * and table removed, also when it fails. Started with --bind, it is a
 * member process instead (tests/cluster/cl_member.c).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cl_member.h"
#include "cl_support.h"
#include "ts_netns.h"

#define NODES 3
#define PORT 7400
#define WAIT_MS 20000

static ts_netns net;
static cl_node nodes[NODES];
static char addrs[NODES][48];
static const char *const systems[NODES] = {"a", "b", "c"};
static const int side[NODES] = {0, 0, 1};

static void end_all(void)
{
    for (int i = 0; i < NODES; i++)
        cl_end(&nodes[i], SIGKILL);
}

static void fail(const char *what)
{
    fprintf(stderr, "actorc-bench-partition: %s\n", what);
    end_all();
    ts_netns_destroy(&net);
    exit(1);
}

static void start(int i, const char *stable)
{
    const char *args[] = {"--system", systems[i], "--cluster", "bench", "--stable", stable,
                          "--seed", addrs[0], "--seed", addrs[1], "--seed", addrs[2], NULL};
    if (!cl_start_in(&nodes[i], ts_netns_ip(), net.name[i], net.addr[i], PORT, args))
        fail("a member did not start");
}

static void start_all(const char *stable)
{
    for (int i = 0; i < NODES; i++)
        start(i, stable);
    for (int i = 0; i < NODES; i++)
        for (int j = 0; j < NODES; j++)
            if (cl_event(&nodes[i], 0, WAIT_MS, "up", addrs[j], nodes[j].proc.incarnation) < 0)
                fail("the cluster did not form");
}

/* When node i printed the event (cl_event returns as soon as the line is
 * there): this process's clock after the wait. */
static double wait_event(int i, const char *kind, int j)
{
    if (cl_event(&nodes[i], 0, WAIT_MS, kind, addrs[j], nodes[j].proc.incarnation) < 0)
        fail(kind);
    return cl_now_ms();
}

/* Does every node list every member Up? */
static bool all_up(void)
{
    char want[32];
    snprintf(want, sizeof want, "MEMBERS %d ", NODES);
    for (int i = 0; i < NODES; i++) {
        const char *m = cl_ask(&nodes[i], "members", "MEMBERS", 5000);
        if (!m || strncmp(m, want, strlen(want)) != 0 || strstr(m, "unreachable"))
            return false;
    }
    return true;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The times (this process's clock, ms) when node 0 printed the cut-off
 * node Unreachable, and when the cut-off node printed its first and its
 * last (the second) Unreachable: watched at once, a millisecond at a
 * time. */
static void wait_unreachable(double *on_keeper, double *first, double *last)
{
    char keeper_needle[192], loser_needle[2][192];
    snprintf(keeper_needle, sizeof keeper_needle, "EVENT unreachable %s ", addrs[2]);
    for (int j = 0; j < 2; j++)
        snprintf(loser_needle[j], sizeof loser_needle[j], "EVENT unreachable %s ", addrs[j]);
    const char *keeper[] = {keeper_needle, NULL};
    const char *loser0[] = {loser_needle[0], NULL}, *loser1[] = {loser_needle[1], NULL};
    double at[2] = {-1, -1};
    *on_keeper = -1;
    double end = cl_now_ms() + WAIT_MS;
    while ((*on_keeper < 0 || at[0] < 0 || at[1] < 0) && cl_now_ms() < end) {
        if (*on_keeper < 0 && cl_find(&nodes[0], 0, 1, keeper) >= 0)
            *on_keeper = cl_now_ms();
        if (at[0] < 0 && cl_find(&nodes[2], 0, 1, loser0) >= 0)
            at[0] = cl_now_ms();
        if (at[1] < 0 && cl_find(&nodes[2], 0, 1, loser1) >= 0)
            at[1] = cl_now_ms();
    }
    if (*on_keeper < 0 || at[0] < 0 || at[1] < 0)
        fail("no Unreachable");
    *first = at[0] < at[1] ? at[0] : at[1];
    *last = at[0] < at[1] ? at[1] : at[0];
}

static void detect_and_resolve(double *detect, double *resolve, double *from_first,
                               double *total)
{
    start_all("1000");
    double t0 = cl_now_ms();
    if (!ts_netns_partition(&net, side))
        fail("the partition's rules");
    double on_keeper, first, last;
    wait_unreachable(&on_keeper, &first, &last);
    *detect = on_keeper - t0;
    double down = wait_event(2, "down", 2);
    *resolve = down - last;
    *from_first = down - first;
    *total = down - t0;
    if (!ts_netns_heal(&net))
        fail("the heal");
    end_all();
}

static double heal(void)
{
    start_all("600000");
    if (!ts_netns_partition(&net, side))
        fail("the partition's rules");
    for (int i = 0; i < NODES; i++)
        for (int j = 0; j < NODES; j++)
            if (side[i] != side[j])
                wait_event(i, "unreachable", j);
    sleep_ms(1500); /* past the heartbeat timeout: the connections are lost */
    double t0 = cl_now_ms(), since = -1;
    if (!ts_netns_heal(&net))
        fail("the heal");
    /* Healed: all Up, and still so a second later (a reconnection that
     * flaps restarts the count). */
    while (since < 0 || cl_now_ms() - since < 1000) {
        if (cl_now_ms() - t0 > WAIT_MS)
            fail("the cluster did not heal");
        bool up = all_up();
        since = up ? (since < 0 ? cl_now_ms() : since) : -1;
        sleep_ms(10);
    }
    end_all();
    return since - t0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bind") == 0)
        return cl_member_main(0, 1, argc, argv);
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1 || reps > 50)
        reps = 3;
    char why[256];
    int made = ts_netns_create(&net, NODES, why, sizeof why);
    if (made == 0) {
        printf("INFO partition skipped: %s\n", why);
        return 0;
    }
    if (made < 0)
        fail(why);
    for (int i = 0; i < NODES; i++)
        snprintf(addrs[i], sizeof addrs[i], "%s:%d", net.addr[i], PORT);
    double detect[50], resolve[50], from_first[50], total[50], healed[50];
    for (int r = 0; r < reps; r++) {
        detect_and_resolve(&detect[r], &resolve[r], &from_first[r], &total[r]);
        healed[r] = heal();
    }
    end_all();
    bool clean = ts_netns_destroy(&net);
    printf("RESULT partition detect_ms %.1f ms\n", median(detect, reps));
    printf("RESULT partition resolve_ms %.1f ms\n", median(resolve, reps));
    printf("RESULT partition heal_ms %.1f ms\n", median(healed, reps));
    printf("INFO partition resolve_from_first_unreachable_ms %.1f rules_in_to_down_ms %.1f "
           "reps %d nodes 3 (2|1) heartbeat 200/1000 stable_after 1000 keep-majority\n",
           median(from_first, reps), median(total, reps), reps);
    if (!clean) {
        fprintf(stderr, "actorc-bench-partition: namespaces of %s are left\n", net.prefix);
        return 1;
    }
    return 0;
}
