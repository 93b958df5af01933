/*
 * actorc-bench-cluster: the cluster routers over three replica processes
 * on loopback (this program, started again as `replica K`), joined with
 * this one in one cluster by static seeds.
 *
 *   cluster_scatter_tail  sequential asks through a scatter/gather
 *                         cluster router; each replica takes a request
 *                         1-2 ms (98%) or 100 ms (2%), drawn from
 *                         (replica, request) by a hash both sides compute.
 *                         The ideal is measured as scatter_tail measures
 *                         it: each replica notes when its timers fire
 *                         (replica_log.h), and a scatter's ideal is the
 *                         earliest firing of the three from its start.
 *                         p50 and p99, the p99 overhead over the ideal's
 *                         (and over the drawn delays' smallest, whole ms,
 *                         as drawn_ideal), the round-robin cluster router's
 *                         p99 over the same draws, and a local group
 *                         scatter's over three in-process replicas with
 *                         the same draws (what the timers alone cost).
 *   cluster_rr            tells through the round-robin cluster router
 *                         beside the same tells sent straight to the three
 *                         remote refs in turn, interleaved rounds, medians.
 *
 * Prints RESULT lines as the other benchmarks do. Every replica process
 * is ended by its pid, also when the benchmark fails.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "replica_log.h"
#include "rt_proc.h"
#include "tail_replica.h"


enum { REPLICAS = 3, SC_WARM = 200, SC_N = 3000, SLOW_MS = 100, SLOW_PER_10K = 200 };
enum { RR_MSGS = 200000, RR_ROUNDS = 5 };
_Static_assert(SC_WARM + SC_N <= REPLICA_LOG_MAX, "every request is noted");

static int ports[REPLICAS + 1];
static rt_proc replica_procs[REPLICAS];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The replica processes are ended at exit (rt_proc.h). */
static _Noreturn void die(const char *what)
{
    fprintf(stderr, "actorc-bench-cluster: %s: %s\n", what, ac_last_error());
    exit(1);
}

/* ---- the replica process ---------------------------------------------- */

/* 1 or 2 ms (98%), 100 ms (2%): the same draw on both sides. */
static int64_t delay_ms(int replica, int64_t req)
{
    uint64_t x = tail_replica_draw(replica, req);
    if (x % 10000 < SLOW_PER_10K)
        return SLOW_MS;
    return 1 + (int64_t)((x >> 20) & 1);
}

typedef struct counter_state {
    int64_t got;
} counter_state;

static void counter_receive(ac_ctx *ctx, ac_msg *msg)
{
    counter_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str)) {
        ac_reply(ctx, ac_msg_int64_new(st->got));
        return;
    }
    st->got++;
}

static const ac_actor_def counter_def = {
    .name = "Counter", .state_size = sizeof(counter_state), .receive = counter_receive};

static ac_cluster *join(ac_system *sys, int self, const char *role)
{
    char bind[64], seeds[REPLICAS + 1][32];
    const char *list[REPLICAS + 1];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", ports[self]);
    for (int k = 0; k <= REPLICAS; k++) {
        snprintf(seeds[k], sizeof seeds[k], "127.0.0.1:%d", ports[k]);
        list[k] = seeds[k];
    }
    ac_node_options no = {.bind = bind};
    if (!ac_node_start(sys, &no))
        die("ac_node_start");
    const char *roles[] = {role};
    ac_cluster_static_options seed_opts = {.seeds = list, .seeds_count = REPLICAS + 1};
    ac_cluster_options co = {.name = "bench", .roles = roles, .roles_count = 1,
                             .static_options = &seed_opts};
    ac_cluster *c = ac_cluster_join(sys, &co);
    if (!c)
        die("ac_cluster_join");
    return c;
}

static int replica_main(int k)
{
    ac_system *sys = ac_system_create("bench", NULL);
    if (!sys)
        die("ac_system_create");
    /* The replica lives as long as the system: its data too. */
    static tail_replica rep;
    tail_replica_init(&rep, k, delay_ms);
    if (!ac_spawn(sys, ac_props_new(&tail_replica_def, &rep), "replica") ||
        !ac_spawn(sys, ac_props_new(&counter_def, NULL), "counter"))
        die("ac_spawn");
    join(sys, k, "replica");
    ac_node *node = ac_system_node(sys);
    printf("READY %s %016llx\n", ac_node_address(node),
           (unsigned long long)ac_node_incarnation(node));
    fflush(stdout);
    char buf[64];
    while (read(STDIN_FILENO, buf, sizeof buf) > 0) /* ends when the parent goes */
        ;
    ac_system_terminate(sys);
    return 0;
}

/* ---- the client ------------------------------------------------------- */

/* This program again, as replica k; it runs until its input closes. */
static void start_replica(int k)
{
    char kbuf[8], pbuf[REPLICAS + 1][8];
    snprintf(kbuf, sizeof kbuf, "%d", k);
    for (int i = 0; i <= REPLICAS; i++)
        snprintf(pbuf[i], sizeof pbuf[i], "%d", ports[i]);
    const char *args[] = {"replica", kbuf, pbuf[0], pbuf[1], pbuf[2], pbuf[3], NULL};
    if (!rt_spawn(&replica_procs[k], rt_self(), args))
        die("a replica process did not start");
}

static size_t routees_of(ac_ref *router)
{
    ac_answer a;
    if (ac_ask_wait(router, ac_router_get_routees_msg(), 2000, &a) != AC_OK)
        return 0;
    size_t n = ac_routees_count(a.reply);
    ac_answer_release(&a);
    return n;
}

static ac_ref *spawn_router(ac_system *sys, ac_props *props, const char *name)
{
    ac_ref *r = props ? ac_spawn(sys, props, name) : NULL;
    if (!r)
        die(name);
    int64_t end = now_ns() + 15 * 1000000000ll;
    while (routees_of(r) < REPLICAS)
        if (now_ns() > end)
            die("the router did not reach every replica");
        else
            sleep_ms(20);
    return r;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct_of(int64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_i64);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[i];
}

/* Sequential asks through `router`; latencies (ns) into lat[SC_N], and
 * (unless NULL) their starts and answers' arrivals into t0 and end. */
static void measure(ac_ref *router, int64_t *lat, int64_t *t0s, int64_t *ends)
{
    for (int64_t i = 0; i < SC_WARM + SC_N; i++) {
        ac_answer a = {0};
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(router, ac_msg_int64_new(i), 10000, &a);
        int64_t el = now_ns() - t0;
        if (st != AC_OK)
            die("an ask through the router failed");
        ac_answer_release(&a);
        if (i >= SC_WARM) {
            lat[i - SC_WARM] = el;
            if (t0s) {
                t0s[i - SC_WARM] = t0;
                ends[i - SC_WARM] = t0 + el;
            }
        }
    }
}

static void result(const char *wl, const char *metric, double v, const char *unit)
{
    printf(strcmp(unit, "x") == 0 ? "RESULT %s %s %.2f %s\n" : "RESULT %s %s %.1f %s\n", wl,
           metric, v, unit);
    fflush(stdout);
}

/* The notes of the replicas at refs[k], fetched once their last timers
 * have fired, into logs[k]. */
static void fetch_logs(ac_ref *const *refs, replica_log *const *logs)
{
    sleep_ms(2 * SLOW_MS);
    for (int k = 0; k < REPLICAS; k++)
        if (!replica_log_fetch(refs[k], logs[k], SC_WARM + SC_N))
            die("a replica did not report its notes");
}

/* The measured ideal's p99 (us) of one run, its split printed as INFO. */
static double ideal_p99(const char *what, replica_log *const *logs, const int64_t *t0,
                        const int64_t *end)
{
    int64_t *v[4];
    for (int i = 0; i < 4; i++)
        if (!(v[i] = calloc(SC_N, sizeof *v[i])))
            die("out of memory");
    scatter_split sp = {v[0], v[1], v[2], v[3]};
    replica_log_split(logs, REPLICAS, t0, end, SC_WARM, SC_N, delay_ms, &sp);
    double p[4][2];
    for (int i = 0; i < 4; i++) {
        p[i][0] = pct_of(v[i], SC_N, 50) / 1e3;
        p[i][1] = pct_of(v[i], SC_N, 99) / 1e3;
        free(v[i]);
    }
    printf("INFO cluster_scatter_tail %s: the earliest replica's way, p50/p99 us: out %.1f/%.1f"
           " timer_late %.1f/%.1f back %.1f/%.1f; ideal p50 %.1f p99 %.1f us\n",
           what, p[1][0], p[1][1], p[2][0], p[2][1], p[3][0], p[3][1], p[0][0], p[0][1]);
    return p[0][1];
}

/* The replicas' own refs, by replica (the router's order is by address). */
static void replica_refs(ac_system *sys, ac_ref **refs)
{
    for (int k = 0; k < REPLICAS; k++) {
        char path[128];
        snprintf(path, sizeof path, "actorc://bench@127.0.0.1:%d/user/replica", ports[k]);
        if (!(refs[k] = ac_node_resolve(ac_system_node(sys), path)))
            die("ac_node_resolve");
    }
}

/* cluster_scatter_tail's figures (us). */
typedef struct tail_figures {
    double p50, p99, ideal_p99, drawn_ideal_p99, rr_p99, local_p99, local_ideal_p99;
} tail_figures;

static void report_tail(const tail_figures *f)
{
    result("cluster_scatter_tail", "p50", f->p50, "us");
    result("cluster_scatter_tail", "p99", f->p99, "us");
    result("cluster_scatter_tail", "ideal_p99", f->ideal_p99, "us");
    result("cluster_scatter_tail", "drawn_ideal_p99", f->drawn_ideal_p99, "us");
    result("cluster_scatter_tail", "p99_overhead_pct",
           (f->p99 - f->ideal_p99) / f->ideal_p99 * 100.0, "%");
    result("cluster_scatter_tail", "p99_overhead_vs_drawn_pct",
           (f->p99 - f->drawn_ideal_p99) / f->drawn_ideal_p99 * 100.0, "%");
    result("cluster_scatter_tail", "rr_p99", f->rr_p99, "us");
    result("cluster_scatter_tail", "local_p99", f->local_p99, "us");
    result("cluster_scatter_tail", "local_ideal_p99", f->local_ideal_p99, "us");
    result("cluster_scatter_tail", "p99_vs_local_pct",
           (f->p99 - f->local_p99) / f->local_p99 * 100.0, "%");
}

/* The ideal is measured as scatter_tail measures it in one process: the
 * earliest of the replicas' timer firings from the request's start
 * (replica_log.h); drawn_ideal_p99 is the drawn delays' (whole ms). */
static void scatter_tail(ac_system *sys, ac_cluster *cluster)
{
    ac_cluster_router_options ro = {.path = "/user/replica", .role = "replica"};
    ac_scatter_gather_options so = {.timeout_ms = 5000};
    ac_ref *sg = spawn_router(
        sys, ac_cluster_router_scatter_gather_first_completed(cluster, &ro, &so), "sg");
    ac_ref *rr = spawn_router(sys, ac_cluster_router_round_robin(cluster, &ro), "rr");
    int64_t *lat = calloc(SC_N, sizeof *lat), *drawn = calloc(SC_N, sizeof *drawn);
    int64_t *t0 = calloc(SC_N, sizeof *t0), *end = calloc(SC_N, sizeof *end);
    /* The local replicas live as long as the system: their data too. */
    static tail_replica lrep[REPLICAS];
    replica_log *logs[REPLICAS], *rlogs[REPLICAS];
    if (!lat || !drawn || !t0 || !end)
        die("out of memory");
    tail_replica_drawn_ideal(REPLICAS, delay_ms, SC_WARM, SC_N, drawn);
    /* The same scatter over three replicas in this process, the same
     * draws: what the wire and the membership add, apart from timers. */
    ac_ref *local[REPLICAS], *remote[REPLICAS];
    for (int k = 0; k < REPLICAS; k++) {
        char name[16];
        snprintf(name, sizeof name, "local%d", k);
        tail_replica_init(&lrep[k], k, delay_ms);
        logs[k] = &lrep[k].log;
        if (!(rlogs[k] = calloc(1, sizeof *rlogs[k])))
            die("out of memory");
        if (!(local[k] = ac_spawn(sys, ac_props_new(&tail_replica_def, &lrep[k]), name)))
            die("ac_spawn");
    }
    replica_refs(sys, remote);
    ac_ref *lsg = ac_spawn(sys, ac_router_group_scatter_gather_first_completed(local, 3, &so),
                           "lsg");
    if (!lsg)
        die("ac_spawn (local scatter)");
    measure(lsg, lat, t0, end);
    double local_p99 = pct_of(lat, SC_N, 99) / 1e3;
    sleep_ms(2 * SLOW_MS);
    double local_ip99 = ideal_p99("local", logs, t0, end);
    measure(sg, lat, t0, end);
    double p50 = pct_of(lat, SC_N, 50) / 1e3, p99 = pct_of(lat, SC_N, 99) / 1e3;
    fetch_logs(remote, rlogs); /* before round robin asks them again */
    double ip99 = ideal_p99("remote", rlogs, t0, end);
    measure(rr, lat, NULL, NULL);
    tail_figures f = {p50, p99, ip99, pct_of(drawn, SC_N, 99) / 1e3, pct_of(lat, SC_N, 99) / 1e3,
                      local_p99, local_ip99};
    report_tail(&f);
    ac_stop(lsg);
    ac_ref_release(lsg);
    for (int k = 0; k < REPLICAS; k++) {
        ac_ref_release(local[k]);
        ac_ref_release(remote[k]);
        free(rlogs[k]);
    }
    free(lat);
    free(drawn);
    free(t0);
    free(end);
    ac_stop(sg);
    ac_stop(rr);
    ac_ref_release(sg);
    ac_ref_release(rr);
}

static int64_t counted(ac_ref *const *counters)
{
    int64_t total = 0;
    for (int k = 0; k < REPLICAS; k++) {
        ac_answer a;
        if (ac_ask_wait(counters[k], ac_msg_str_new("count"), 5000, &a) != AC_OK)
            die("a counter did not answer");
        total += ac_msg_int64(a.reply);
        ac_answer_release(&a);
    }
    return total;
}

/* Messages per second of RR_MSGS tells through `router`, or straight to
 * the counters in turn (router NULL), until all have arrived. */
static double tell_rate(ac_ref *router, ac_ref *const *counters)
{
    int64_t before = counted(counters);
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < RR_MSGS; i++) {
        ac_ref *to = router ? router : counters[i % REPLICAS];
        while (ac_tell(to, ac_msg_int64_new(i), NULL) != AC_OK)
            sleep_ms(1); /* a peer's queue is full: let it drain */
    }
    int64_t end = now_ns() + 60 * 1000000000ll;
    while (counted(counters) < before + RR_MSGS) {
        if (now_ns() > end)
            die("tells were lost");
        sleep_ms(2); /* the count's asks should not compete with the stream */
    }
    return (double)RR_MSGS / ((double)(now_ns() - t0) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void rr_throughput(ac_system *sys, ac_cluster *cluster)
{
    ac_cluster_router_options ro = {.path = "/user/counter", .role = "replica"};
    ac_ref *rr = spawn_router(sys, ac_cluster_router_round_robin(cluster, &ro), "rr_tell");
    ac_answer a;
    if (ac_ask_wait(rr, ac_router_get_routees_msg(), 2000, &a) != AC_OK)
        die("GetRoutees");
    ac_ref *counters[REPLICAS];
    for (int k = 0; k < REPLICAS; k++)
        counters[k] = ac_ref_retain(ac_routees_at(a.reply, (size_t)k));
    ac_answer_release(&a);
    double via[RR_ROUNDS], direct[RR_ROUNDS];
    for (int r = 0; r < RR_ROUNDS; r++) { /* interleaved: the machine's moods fall on both */
        direct[r] = tell_rate(NULL, counters);
        via[r] = tell_rate(rr, counters);
    }
    qsort(via, RR_ROUNDS, sizeof *via, cmp_double);
    qsort(direct, RR_ROUNDS, sizeof *direct, cmp_double);
    result("cluster_rr", "msgs_per_s", via[RR_ROUNDS / 2], "msg/s");
    result("cluster_rr", "direct_msgs_per_s", direct[RR_ROUNDS / 2], "msg/s");
    result("cluster_rr", "ratio", via[RR_ROUNDS / 2] / direct[RR_ROUNDS / 2], "x");
    for (int k = 0; k < REPLICAS; k++)
        ac_ref_release(counters[k]);
    ac_stop(rr);
    ac_ref_release(rr);
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "replica") == 0) {
        for (int i = 0; i <= REPLICAS; i++)
            ports[i] = atoi(argv[3 + i]);
        return replica_main(atoi(argv[2]));
    }
    if (ac_node_free_ports(ports, REPLICAS + 1) != AC_OK)
        die("no free ports on 127.0.0.1");
    for (int k = 0; k < REPLICAS; k++)
        start_replica(k);
    ac_system_options so = {.log_level = AC_LOG_ERROR};
    ac_system *sys = ac_system_create("client", &so);
    if (!sys)
        die("ac_system_create");
    ac_cluster *cluster = join(sys, REPLICAS, "client");
    bool all = argc < 2;
    if (all || strcmp(argv[1], "cluster_scatter_tail") == 0)
        scatter_tail(sys, cluster);
    if (all || strcmp(argv[1], "cluster_rr") == 0)
        rr_throughput(sys, cluster);
    ac_system_terminate(sys);
    for (int k = 0; k < REPLICAS; k++)
        rt_end(&replica_procs[k], SIGKILL);
    return 0;
}
