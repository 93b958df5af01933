/*
 * actorc-bench-fault: the routers with one replica behind a bad link (the
 * node's fault layer, ac_node_link_fault), in one run.
 *
 * Three replica nodes and a client node, each a system of this process
 * with a node on 127.0.0.1 (ZeroMQ over loopback). Each replica answers
 * a request (an int64 id) after 1 or 2 ms, or 100 ms for 0.5% of ids
 * (--stall-pct; tail_replica.h's hash of (replica, id)). The client
 * routes to the three through a hedged group (fixed 10 ms delay), a
 * round-robin group and a scatter/gather group, four askers at a time,
 * each asking in turn.
 *
 *   slow_link   each router's p99 with every link clean, then with the
 *               client's link to replica 1 delaying 20 ms ± 5 ms each
 *               way; `hedged_p99_ratio` is the hedged router's slow p99
 *               over its clean p99, `rr_p99_ratio` round-robin's,
 *               `sg_p99_ratio` scatter/gather's.
 *   lossy_link  10,000 asks straight to replica 1 with 1% of frames
 *               dropped each way on its link, 1 s deadlines:
 *               `asks_unanswered` counts those neither answered nor
 *               failed within their deadline and 5 s more (the protocol
 *               must leave none), beside how many were answered and
 *               failed.
 *
 * What bounds the hedged ratio: a third of the requests start at the
 * slow replica (the hedged group's start moves by one per message), and
 * each of those is answered by its hedge, at the hedge delay plus a
 * replica's time. With stalls under 1% the clean p99 is a replica's
 * time (2 ms), so the slow p99 is about 10 + 2 ms; with stalls of 1-2%
 * the clean p99 already holds a hedge (about 12 ms) and the slow one
 * moves to a third attempt (about 22 ms), since the requests whose first
 * routee stalls and whose hedge goes to the slow replica (two thirds of
 * the stall share) pass 1%. bench/RESULTS.md shows both.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <actorc.h>

#include "tail_replica.h"

enum { REPLICAS = 3, ASKERS = 4, N = 3000, ROUNDS = 6, LOSSY_N = 10000, LOSSY_WINDOW = 256 };
enum { STALL_MS = 100, HEDGE_DELAY_US = 10000 };

/* Stalls per 10,000 requests of a replica (--stall-pct P sets P%). */
static int stall_per_10k = 50;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "actorc-bench-fault: %s: %s\n", what, ac_last_error());
    exit(1);
}

static int64_t delay_ms(int replica, int64_t req)
{
    uint64_t x = tail_replica_draw(replica, req);
    if (x % 10000 < (uint64_t)stall_per_10k)
        return STALL_MS;
    return 1 + (int64_t)((x >> 20) & 1);
}

static ac_system *node_system(const char *name, const char *faults)
{
    ac_system *sys = ac_system_create(name, &(ac_system_options){.log_level = AC_LOG_ERROR});
    ac_node_options o = {.bind = "tcp://127.0.0.1:0", .faults = faults};
    if (!sys || !ac_node_start(sys, &o))
        die("a node");
    return sys;
}

/* ---- measuring -------------------------------------------------------------- */

static atomic_llong next_id = 1000000; /* past the replicas' notes */

typedef struct asker {
    ac_ref *router;
    int64_t *lat;
    size_t n;
} asker;

static void *ask_in_turn(void *arg)
{
    asker *a = arg;
    for (size_t i = 0; i < a->n; i++) {
        ac_answer ans = {0};
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(a->router, ac_msg_int64_new(atomic_fetch_add(&next_id, 1)),
                                   10000, &ans);
        a->lat[i] = now_ns() - t0;
        ac_answer_release(&ans);
        if (st != AC_OK)
            die("an ask through the router failed");
    }
    return NULL;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* n asks through router, ASKERS at a time, their latencies (ns) into lat. */
static void measure(ac_ref *router, int64_t *lat, size_t n)
{
    asker a[ASKERS];
    pthread_t th[ASKERS];
    for (int k = 0; k < ASKERS; k++) {
        a[k] = (asker){router, lat + (size_t)k * (n / ASKERS), n / ASKERS};
        if (pthread_create(&th[k], NULL, ask_in_turn, &a[k]) != 0)
            die("pthread_create");
    }
    for (int k = 0; k < ASKERS; k++)
        pthread_join(th[k], NULL);
}

static double p99_ms(int64_t *lat, size_t n)
{
    qsort(lat, n, sizeof lat[0], cmp_i64);
    return (double)lat[(size_t)(0.99 * (double)(n - 1) + 0.5)] / 1e6;
}

static void result(const char *wl, const char *metric, double v, const char *unit)
{
    printf(strcmp(unit, "x") == 0 ? "RESULT %s %s %.2f %s\n" : "RESULT %s %s %.1f %s\n", wl,
           metric, v, unit);
    fflush(stdout);
}

/* ---- the workloads ---------------------------------------------------------- */

enum { HEDGED, RR, SG, ROUTERS };

/* Clean and slow in turns (ROUNDS of each, N asks per router and
 * condition in all), so that both see the same machine: on a shared one
 * the load moves within a run, and a p99 of one stretch against one of
 * another would measure the load. */
static void slow_link(ac_node *client, ac_ref *const routers[ROUTERS], const char *peer)
{
    static int64_t lat[2][ROUTERS][N];
    enum { PER = N / ROUNDS };
    _Static_assert(N % (ROUNDS * ASKERS) == 0, "whole turns");
    for (int i = 0; i < 300; i++) { /* warm: connections, caches */
        ac_answer a = {0};
        (void)ac_ask_wait(routers[i % ROUTERS], ac_msg_int64_new(atomic_fetch_add(&next_id, 1)),
                          10000, &a);
        ac_answer_release(&a);
    }
    ac_link_fault slow;
    if (ac_node_link_fault_parse("20ms\xc2\xb1" "5ms", &slow) != AC_OK)
        die("the slow link");
    for (int r = 0; r < ROUNDS; r++)
        for (int bad = 0; bad < 2; bad++) {
            if (ac_node_link_fault(client, peer, AC_LINK_BOTH, bad ? &slow : NULL) != AC_OK)
                die("the slow link");
            for (int k = 0; k < ROUTERS; k++)
                measure(routers[k], lat[bad][k] + r * PER, PER);
        }
    if (ac_node_link_fault(client, peer, AC_LINK_BOTH, NULL) != AC_OK)
        die("healing the link");
    static const char *const name[ROUTERS] = {"hedged", "rr", "sg"};
    for (int k = 0; k < ROUTERS; k++) {
        double clean = p99_ms(lat[0][k], N), bad = p99_ms(lat[1][k], N);
        char metric[64];
        snprintf(metric, sizeof metric, "%s_clean_p99", name[k]);
        result("slow_link", metric, clean, "ms");
        snprintf(metric, sizeof metric, "%s_slow_p99", name[k]);
        result("slow_link", metric, bad, "ms");
        snprintf(metric, sizeof metric, "%s_p99_ratio", name[k]);
        result("slow_link", metric, bad / clean, "x");
    }
}

static void lossy_link(ac_node *client, ac_ref *replica, const char *peer)
{
    ac_link_fault lossy = {.drop = 0.01};
    if (ac_node_link_fault(client, peer, AC_LINK_BOTH, &lossy) != AC_OK)
        die("the lossy link");
    static ac_future *fu[LOSSY_N];
    static int64_t deadline[LOSSY_N];
    size_t answered = 0, failed = 0, unanswered = 0;
    for (size_t i = 0, done = 0; done < LOSSY_N;) {
        if (i < LOSSY_N && i - done < LOSSY_WINDOW) {
            deadline[i] = now_ns() + 1000 * 1000000ll;
            fu[i] = ac_ask(replica, ac_msg_int64_new(atomic_fetch_add(&next_id, 1)), 1000);
            if (!fu[i])
                die("ac_ask");
            i++;
            continue;
        }
        ac_answer a = {0};
        int64_t left_ms = (deadline[done] - now_ns()) / 1000000 + 5000;
        ac_status st = ac_future_wait(fu[done], left_ms > 0 ? left_ms : 0, &a);
        if (st == AC_OK)
            answered++;
        else if (st == AC_EPENDING)
            unanswered++; /* not settled 5 s past its deadline */
        else
            failed++;
        ac_answer_release(&a);
        ac_future_release(fu[done]);
        done++;
    }
    ac_node_stats s;
    ac_node_stats_get(client, &s);
    if (ac_node_link_fault(client, peer, AC_LINK_BOTH, NULL) != AC_OK)
        die("healing the link");
    result("lossy_link", "asks_unanswered", (double)unanswered, "count");
    result("lossy_link", "asks_answered", (double)answered, "count");
    result("lossy_link", "asks_failed", (double)failed, "count");
    result("lossy_link", "frames_dropped", (double)s.fault_dropped, "count");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--stall-pct") == 0) {
        double pct = atof(argv[2]);
        if (pct < 0 || pct > 100) {
            fprintf(stderr, "actorc-bench-fault: --stall-pct is 0 to 100\n");
            return 2;
        }
        stall_per_10k = (int)(pct * 100 + 0.5);
    } else if (argc != 1) {
        fprintf(stderr, "usage: actorc-bench-fault [--stall-pct P]   (default 0.5)\n");
        return 2;
    }
    static tail_replica reps[REPLICAS];
    ac_system *rs[REPLICAS];
    ac_ref *refs[REPLICAS];
    ac_system *cs = node_system("client", "");
    ac_node *client = ac_system_node(cs);
    char peer[REPLICAS][128];
    for (int k = 0; k < REPLICAS; k++) {
        char name[16], path[256];
        snprintf(name, sizeof name, "replica%d", k + 1);
        rs[k] = node_system(name, NULL);
        tail_replica_init(&reps[k], k, delay_ms);
        if (!ac_spawn(rs[k], ac_props_new(&tail_replica_def, &reps[k]), "replica"))
            die("ac_spawn");
        snprintf(peer[k], sizeof peer[k], "%s", ac_node_address(ac_system_node(rs[k])));
        snprintf(path, sizeof path, "actorc://%s@%s/user/replica", name, peer[k]);
        if (!(refs[k] = ac_node_resolve(client, path)))
            die("ac_node_resolve");
    }
    ac_hedged_options ho = {.delay_kind = AC_HEDGE_DELAY_FIXED, .delay_us = HEDGE_DELAY_US,
                            .timeout_ms = 5000};
    ac_ref *hedged = ac_spawn(cs, ac_router_group_hedged(refs, REPLICAS, &ho), "hedged");
    ac_ref *rr = ac_spawn(cs, ac_router_group_round_robin(refs, REPLICAS), "rr");
    ac_scatter_gather_options so = {.timeout_ms = 5000};
    ac_ref *sg = ac_spawn(cs, ac_router_group_scatter_gather_first_completed(refs, REPLICAS, &so),
                          "sg");
    if (!hedged || !rr || !sg)
        die("the routers");
    printf("# replicas: 1-2 ms, or %d ms for %.2f%% of requests; hedge delay %d ms\n", STALL_MS,
           stall_per_10k / 100.0, HEDGE_DELAY_US / 1000);
    ac_ref *const routers[ROUTERS] = {hedged, rr, sg};
    slow_link(client, routers, peer[0]);
    lossy_link(client, refs[0], peer[0]);
    ac_ref_release(hedged);
    ac_ref_release(rr);
    ac_ref_release(sg);
    for (int k = 0; k < REPLICAS; k++)
        ac_ref_release(refs[k]);
    ac_system_terminate(cs);
    for (int k = 0; k < REPLICAS; k++)
        ac_system_terminate(rs[k]);
    return 0;
}
