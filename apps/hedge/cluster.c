/*
 * actorc-hedge --nodes N: the same load, over the wire. The replicas run
 * as N actorc-node processes on loopback, each on a port probed free; this
 * process joins their cluster as one more node (role "client", so the
 * routers, which ask for role "replica", leave it out), waits until every
 * replica node is Up, and runs the load through the cluster routers of
 * the strategies the demo runs in process (plans.c: round-robin, random,
 * smallest-mailbox, scatter/gather, hedged at a fixed and at an adaptive
 * delay), so that both print the same rows; with --breakers once more,
 * with a circuit breaker per member in front of each. With
 * --dead-replica K, node K's replica never answers, though the node stays
 * Up: a member that only its breaker can route around. With --slow-link
 * and --lossy-link, the client's links to chosen nodes go through the
 * node's fault layer (ac_node_link_fault), both ways: a replica behind a
 * bad link. The work done per request is read from the replicas
 * themselves (HEDGE_CALLS_QUERY).
 *
 * Every child is ended by its pid: SIGTERM when the demo is done, fails,
 * or is interrupted (SIGINT, SIGTERM), then SIGKILL for one that has not
 * gone within two seconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <actorc/cluster.h>

#include "hedge.h"
#include "model_options.h"

#define MAX_NODES 16
#define CLUSTER_NAME "hedge-demo"
#define NODE_SYSTEM "replicas"

typedef struct cluster_run {
    int n;
    pid_t pids[MAX_NODES];
    int ports[MAX_NODES + 1]; /* the nodes', then the client's */
    char addresses[MAX_NODES][64];
    ac_system *sys;
    ac_cluster *cluster;
    const options *o;
    replica_model *m;
} cluster_run;

/* For the signal handler: the children to end. */
static pid_t *volatile signal_pids;
static volatile sig_atomic_t signal_n;

static void on_signal(int sig)
{
    for (int i = 0; i < signal_n; i++)
        if (signal_pids[i] > 0)
            kill(signal_pids[i], SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(cluster_run *run)
{
    signal_pids = run->pids;
    signal_n = MAX_NODES;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- the children ----------------------------------------------------- */

/* The actorc-node to run: the one asked for, or the one built beside
 * this program (apps/node/ in a build tree, the same directory when
 * installed). */
static bool node_program(const options *o, const char *argv0, char *out, size_t cap)
{
    if (o->node_program) {
        snprintf(out, cap, "%s", o->node_program);
        return access(out, X_OK) == 0;
    }
    char self[PATH_MAX - 32]; /* room for the file name after it */
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        snprintf(self, sizeof self, "%s", argv0);
    else
        self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *dir = slash ? self : ".";
    snprintf(out, cap, "%s/../node/actorc-node", dir);
    if (access(out, X_OK) == 0)
        return true;
    snprintf(out, cap, "%s/actorc-node", dir);
    return access(out, X_OK) == 0;
}

/* Start node i; its stdout comes back through *out_fd. */
static pid_t start_node(cluster_run *run, const char *program, const replica_model *m, int i,
                        int *out_fd)
{
    char bind[64], seeds[MAX_NODES + 1][64], model[MODEL_ARGC / 2][64], seed[32];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", run->ports[i]);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)(m->seed + (uint64_t)i));
    const char *argv[64];
    int a = 0;
    argv[a++] = program;
    argv[a++] = "--bind", argv[a++] = bind;
    argv[a++] = "--cluster", argv[a++] = CLUSTER_NAME;
    argv[a++] = "--system", argv[a++] = NODE_SYSTEM;
    for (int k = 0; k <= run->n; k++) {
        snprintf(seeds[k], 64, "127.0.0.1:%d", run->ports[k]);
        argv[a++] = "--seed", argv[a++] = seeds[k];
    }
    model_args(m, model, &argv[a]);
    a += MODEL_ARGC;
    argv[a++] = "--rng-seed", argv[a++] = seed;
    if (m->dead_replica == i + 1) /* its one replica is the dead one */
        argv[a++] = "--dead-replica", argv[a++] = "1";
    argv[a++] = "--quiet";
    argv[a] = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(program, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    *out_fd = fds[0];
    return pid;
}

/* The ready line of node i ("actorc-node: up at <address>"), within 10 s. */
static bool await_ready_line(cluster_run *run, int i, int fd)
{
    char line[256];
    size_t len = 0;
    double end = now_s() + 10.0;
    while (len < sizeof line - 1 && now_s() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t got = read(fd, line + len, 1);
        if (got <= 0)
            return false; /* it exited */
        if (line[len] == '\n') {
            line[len] = '\0';
            const char *at = strstr(line, "up at ");
            if (!at)
                return false;
            snprintf(run->addresses[i], sizeof run->addresses[i], "%s", at + 6);
            return true;
        }
        len++;
    }
    return false;
}

static bool start_nodes(cluster_run *run, const options *o, const replica_model *m,
                        const char *argv0)
{
    char program[PATH_MAX];
    if (!node_program(o, argv0, program, sizeof program)) {
        fprintf(stderr, "actorc-hedge: no actorc-node to run (looked for %s); build it, or "
                        "give --node-program\n", program);
        return false;
    }
    if (ac_node_free_ports(run->ports, (size_t)run->n + 1) != AC_OK) {
        fprintf(stderr, "actorc-hedge: %s\n", ac_last_error());
        return false;
    }
    for (int i = 0; i < run->n; i++) {
        int fd = -1;
        run->pids[i] = start_node(run, program, m, i, &fd);
        bool ready = run->pids[i] > 0 && await_ready_line(run, i, fd);
        if (fd >= 0)
            close(fd); /* quiet from here on: nothing more is written */
        if (!ready) {
            fprintf(stderr, "actorc-hedge: node %d (%s) did not start\n", i + 1, program);
            return false;
        }
    }
    return true;
}

static void stop_nodes(cluster_run *run)
{
    for (int i = 0; i < run->n; i++)
        if (run->pids[i] > 0)
            kill(run->pids[i], SIGTERM);
    double end = now_s() + 2.0;
    for (int i = 0; i < run->n; i++) {
        while (run->pids[i] > 0 && waitpid(run->pids[i], NULL, WNOHANG) == 0 && now_s() < end)
            sleep_ms(10);
        if (run->pids[i] > 0 && waitpid(run->pids[i], NULL, WNOHANG) == 0) {
            kill(run->pids[i], SIGKILL);
            waitpid(run->pids[i], NULL, 0);
        }
        run->pids[i] = 0;
    }
}

/* ---- the client node -------------------------------------------------- */

static size_t replicas_up(ac_cluster *cluster)
{
    ac_member_list list;
    if (ac_cluster_members(cluster, &list) != AC_OK)
        return 0;
    size_t up = 0;
    for (size_t i = 0; i < list.count; i++)
        up += list.members[i].status == AC_MEMBER_UP &&
              ac_member_has_role(&list.members[i], "replica");
    ac_member_list_free(&list);
    return up;
}

static bool join_as_client(cluster_run *run)
{
    ac_system_options so = {.log_level = AC_LOG_ERROR};
    run->sys = ac_system_create("hedge", &so);
    char bind[64], seeds[MAX_NODES + 1][64];
    const char *seed_list[MAX_NODES + 1];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", run->ports[run->n]);
    for (int k = 0; k <= run->n; k++) {
        snprintf(seeds[k], 64, "127.0.0.1:%d", run->ports[k]);
        seed_list[k] = seeds[k];
    }
    ac_node_options no = {.bind = bind, .faults = run->o->link_count ? "" : NULL};
    static const char *const roles[] = {"client"};
    ac_cluster_static_options seed_opts = {.seeds = seed_list, .seeds_count = (size_t)run->n + 1};
    ac_cluster_options co = {.name = CLUSTER_NAME, .roles = roles, .roles_count = 1,
                             .static_options = &seed_opts};
    if (!run->sys || !ac_node_start(run->sys, &no) ||
        !(run->cluster = ac_cluster_join(run->sys, &co))) {
        fprintf(stderr, "actorc-hedge: cannot join the cluster: %s\n", ac_last_error());
        return false;
    }
    if (!serve_metrics(run->sys, run->o))
        return false;
    for (int i = 0; i < run->o->link_count; i++) {
        /* The node names its peer by the replica's ref (a member Up may
         * not have a peer entry here yet): resolved first. */
        const char *address = run->addresses[run->o->link_node[i] - 1];
        char path[128];
        snprintf(path, sizeof path, "actorc://%s@%s/user/replica", NODE_SYSTEM, address);
        ac_ref *replica = ac_node_resolve(ac_system_node(run->sys), path);
        ac_status st = replica ? ac_node_link_fault(ac_system_node(run->sys), address,
                                                    AC_LINK_BOTH, &run->o->link_fault[i])
                               : ac_last_status();
        ac_ref_release(replica);
        if (st != AC_OK) {
            fprintf(stderr, "actorc-hedge: %s\n", ac_last_error());
            return false;
        }
    }
    double end = now_s() + 15.0;
    while (replicas_up(run->cluster) < (size_t)run->n && now_s() < end)
        sleep_ms(20);
    if (replicas_up(run->cluster) < (size_t)run->n) {
        fprintf(stderr, "actorc-hedge: only %zu of %d replica nodes came up\n",
                replicas_up(run->cluster), run->n);
        return false;
    }
    return true;
}

/* What the replicas have handled, all nodes together. */
static uint64_t count_calls(void *user)
{
    cluster_run *run = user;
    ac_node *node = ac_system_node(run->sys);
    uint64_t total = 0;
    for (int i = 0; i < run->n; i++) {
        char path[128];
        snprintf(path, sizeof path, "actorc://%s@%s/user/replica", NODE_SYSTEM,
                 run->addresses[i]);
        ac_ref *r = ac_node_resolve(node, path);
        ac_answer a;
        if (r && ac_ask_wait(r, ac_msg_str_new(HEDGE_CALLS_QUERY), 2000, &a) == AC_OK) {
            total += (uint64_t)ac_msg_int64(a.reply);
            ac_answer_release(&a);
        }
        ac_ref_release(r);
    }
    return total;
}

/* A cluster router starts empty and fills as the member events reach it:
 * wait until it routes to every replica node. */
static bool await_routees(ac_ref *router, void *user)
{
    cluster_run *run = user;
    double end = now_s() + 10.0;
    while (now_s() < end) {
        ac_answer a;
        if (ac_ask_wait(router, ac_router_get_routees_msg(), 1000, &a) == AC_OK) {
            size_t n = ac_routees_count(a.reply);
            ac_answer_release(&a);
            if (n == (size_t)run->n)
                return true;
        }
        sleep_ms(10);
    }
    return false;
}

/* ---- the demo --------------------------------------------------------- */

/* The cluster router of a plan, routing to the replica on every replica
 * node; with breakers, one per member in front of it. */
static ac_props *make_cluster_router(const plan *p, void *user)
{
    cluster_run *run = user;
    ac_breaker_options bo = demo_breaker_options(run->o, run->m);
    ac_cluster_router_options ro = {.path = "/user/replica", .role = "replica",
                                    .breaker = p->breakers ? &bo : NULL};
    ac_cluster *c = run->cluster;
    switch (p->kind) {
    case STRATEGY_ROUND_ROBIN: return ac_cluster_router_round_robin(c, &ro);
    case STRATEGY_RANDOM: return ac_cluster_router_random(c, &ro);
    case STRATEGY_SMALLEST_MAILBOX: return ac_cluster_router_smallest_mailbox(c, &ro);
    case STRATEGY_SCATTER_GATHER:
        return ac_cluster_router_scatter_gather_first_completed(c, &ro, &p->sg);
    case STRATEGY_HEDGED_FIXED:
    case STRATEGY_HEDGED_ADAPTIVE: return ac_cluster_router_hedged(c, &ro, &p->hedged);
    case STRATEGIES: break;
    }
    return NULL;
}

int cluster_demo(options *o, replica_model *m, const char *argv0)
{
    if (o->nodes > MAX_NODES) {
        fprintf(stderr, "actorc-hedge: --nodes %d: at most %d\n", o->nodes, MAX_NODES);
        return 2;
    }
    cluster_run run = {.n = o->nodes, .o = o, .m = m};
    catch_signals(&run);
    int rc = 1;
    run_result runs[2 * STRATEGIES];
    size_t n = 0;
    if (start_nodes(&run, o, m, argv0) && join_as_client(&run)) {
        o->replicas = o->nodes; /* one a node: the model's bound is over as many */
        o->count_calls = count_calls;
        o->count_user = &run;
        o->await_routees = await_routees;
        o->await_user = &run;
        char subtitle[512], links[256] = "";
        for (int i = 0, at = 0; i < o->link_count && at < (int)sizeof links; i++)
            at += snprintf(links + at, sizeof links - (size_t)at, "; link to node %s",
                           o->link_text[i]);
        snprintf(subtitle, sizeof subtitle,
                 "%d replica processes over loopback; latency log-normal (median %.3g ms, "
                 "sigma %.2g) + %.3g%% stalls of %.0f ms; %.3g%% errors%s%s; %zu requests, %zu in "
                 "flight",
                 o->nodes, m->median_ms, m->sigma, m->tail_pct, m->tail_ms, m->error_pct,
                 m->dead_replica ? "; one dead replica node" : "", links, o->requests,
                 o->concurrency);
        printf("actorc-hedge: %s\n\n", subtitle);
        size_t planned = run_pass(run.sys, m, o, false, make_cluster_router, &run, runs, &n);
        if (o->breakers)
            planned += run_pass(run.sys, m, o, true, make_cluster_router, &run, runs, &n);
        report(o, m, runs, n, subtitle);
        rc = n == planned ? 0 : 1;
    }
    for (size_t i = 0; i < n; i++) {
        free(runs[i].latency_us);
        free(runs[i].failed_us);
    }
    if (run.sys)
        ac_system_terminate(run.sys);
    stop_nodes(&run);
    return rc;
}
