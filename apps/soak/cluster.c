/*
 * actorc-soak --nodes N: the soak across processes.
 *
 * The soak process becomes a driver node and starts N replica processes
 * (itself again, with --replica) on 127.0.0.1, all in one cluster (static
 * seeds, or a real etcd the driver starts and restarts). Caller threads
 * ask the replicas' /user/replica through three cluster routers —
 * round-robin, scatter/gather and hedged — while a chaos thread kills
 * replicas with SIGKILL and restarts them on the same port (a new
 * incarnation), stops them for a while with SIGSTOP, and, with etcd,
 * restarts etcd under the cluster.
 *
 * The invariant: every request is answered exactly once, by a reply or by
 * the right error. A request carries what the replicas are to do with it
 * (reply now, reply late, refuse with a SoakError, only one of them
 * replies, or nobody does), so the checker knows which answers are
 * allowed: a reply only where a replica replies, and from the replica
 * that did (the reply names it and its sender must be its ref); a
 * NodeDownError, an UndeliverableError or an AggregateError holding them
 * only while a fault was in the air (from its start until a few seconds
 * after it ended); a caller's own AskTimeoutError through a scatter or
 * hedged router never (the router answers first). At the end every
 * replica must be Up again, the node must hold no pending ask, and every
 * process started is ended by its pid. The ledger and the judge of
 * answers are cluster_check.c, a replica process cluster_replica.c.
 */
#include <actorc/cluster.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_soak.h"
#include "soak.h"

/* The routers' deadline: far above what a replica takes (30 ms at most),
 * so that only a fault makes a member time out, and far below the ask's,
 * so that the router always answers first. */
#define CL_SCATTER_MS 1000
#define CL_CALLERS 3

const char *const cl_router_names[R_COUNT] = {"round-robin", "scatter", "hedged"};

typedef struct replica {
    pid_t pid;
    int port;
    bool stopped; /* SIGSTOP'd */
} replica;

static struct {
    int nodes;
    bool etcd;
    const char *self_exe;
    char seeds[CL_MAX_NODES + 1][32];
    replica rep[CL_MAX_NODES];
    pid_t etcd_pid;
    int etcd_client_port, etcd_peer_port;
    char etcd_dir[128];
    char etcd_url[64];
    int driver_port;
    ac_system *sys;
    ac_cluster *cluster;
    ac_ref *routers[R_COUNT];
    atomic_uint_fast64_t sent, kills, stops, etcd_restarts, ups, downs, unreachables;
    /* The chaos thread forks the processes it restarts, and a child's
     * parent-death signal fires when the thread that forked it ends, not
     * the process: so that thread stays until they have been ended. */
    atomic_bool chaos_idle, chaos_may_end;
} C;

/* ---- processes -------------------------------------------------------- */

/* Start argv[0]; with `log`, its stdout and stderr go to that file. */
static pid_t spawn_argv(char *const argv[], const char *log)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        /* A driver that dies takes its children with it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

/* End a process we started: SIGTERM, then SIGKILL after `grace_ms`. */
static void end_process(pid_t pid, int grace_ms)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
    for (int i = 0; i < grace_ms / 10; i++) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        soak_sleep_us(10000);
    }
    kill(pid, SIGKILL);
    reap(pid);
}

static pid_t start_replica(int i)
{
    char index[16], port[16], nodes[16];
    char seeds[(CL_MAX_NODES + 1) * 32] = "";
    for (int k = 0; k <= C.nodes; k++) {
        strcat(seeds, C.seeds[k]);
        if (k < C.nodes)
            strcat(seeds, ",");
    }
    snprintf(index, sizeof index, "%d", i);
    snprintf(port, sizeof port, "%d", C.rep[i].port);
    snprintf(nodes, sizeof nodes, "%d", C.nodes);
    char *argv[] = {(char *)C.self_exe, "--replica", index, "--port", port, "--seeds", seeds,
                    "--etcd", C.etcd ? C.etcd_url : "", NULL};
    return spawn_argv(argv, NULL);
}

static bool etcd_start(void)
{
    char client[64], peer[64], cluster[96], data[160];
    snprintf(client, sizeof client, "http://127.0.0.1:%d", C.etcd_client_port);
    snprintf(peer, sizeof peer, "http://127.0.0.1:%d", C.etcd_peer_port);
    snprintf(cluster, sizeof cluster, "default=%s", peer);
    snprintf(data, sizeof data, "%s/data", C.etcd_dir);
    const char *bin = access("/usr/bin/etcd", X_OK) == 0 ? "/usr/bin/etcd" : NULL;
    if (!bin)
        return false;
    char *argv[] = {(char *)bin, "--name", "default", "--data-dir", data,
                    "--listen-client-urls", client, "--advertise-client-urls", client,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", cluster, "--log-level", "error", NULL};
    char log[192];
    snprintf(log, sizeof log, "%s/etcd.log", C.etcd_dir);
    C.etcd_pid = spawn_argv(argv, log); /* etcd's raft chatter stays out of the report */
    return C.etcd_pid > 0;
}

/* ---- callers and chaos ------------------------------------------------ */

static void *caller(void *arg)
{
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 100 + (uint64_t)(uintptr_t)arg);
    while (!atomic_load(&g_stop)) {
        if (cl_in_flight() > CL_SLOTS - 16) {
            soak_sleep_us(1000);
            continue;
        }
        int router = (int)soak_rng_below(&rng, R_COUNT);
        uint32_t r = soak_rng_below(&rng, 100);
        int beh = r < 55 ? CB_NOW : r < 75 ? CB_LATE : r < 87 ? CB_ERROR : r < 99 ? CB_ONLY
                                                                                  : CB_SILENT;
        int param = beh == CB_LATE   ? 1 + (int)soak_rng_below(&rng, 30)
                    : beh == CB_ONLY ? (int)soak_rng_below(&rng, (uint32_t)C.nodes)
                                     : 0;
        uint64_t id = cl_ledger_take(router, beh, param);
        if (!id) {
            soak_sleep_us(1000);
            continue;
        }
        ac_msg *m = ac_msg_int64_new((int64_t)(id << 16 | (uint64_t)beh << 8 | (uint64_t)param));
        ac_future *f = m ? ac_ask(C.routers[router], m, CL_ASK_MS) : NULL;
        if (!f) {
            cl_ledger_withdraw(id);
            atomic_fetch_add(&g_stats.withdrawn, 1);
            soak_sleep_us(1000);
            continue;
        }
        atomic_fetch_add(&C.sent, 1);
        ac_future_on_complete(f, cl_settle, (void *)(uintptr_t)id);
        ac_future_release(f);
        soak_sleep_us(200 + soak_rng_below(&rng, 1500));
    }
    return NULL;
}

static void sleep_unless_stopping(uint64_t ms)
{
    for (uint64_t t = 0; t < ms && !atomic_load(&g_stop); t += 10)
        soak_sleep_us(10000);
}

static void *chaos(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 99);
    sleep_unless_stopping(1000);
    while (!atomic_load(&g_stop)) {
        int i = (int)soak_rng_below(&rng, (uint32_t)C.nodes);
        uint32_t what = soak_rng_below(&rng, C.etcd ? 10 : 8);
        size_t f = cl_fault_begin();
        if (what < 4) {
            if (g_cfg.verbose)
                fprintf(stderr, "soak: cluster: kill -9 replica %d (pid %d)\n", i, C.rep[i].pid);
            kill(C.rep[i].pid, SIGKILL);
            reap(C.rep[i].pid);
            atomic_fetch_add(&C.kills, 1);
            sleep_unless_stopping(100 + soak_rng_below(&rng, 500));
            C.rep[i].pid = start_replica(i);
        } else if (what < 8) {
            uint32_t ms = 100 + soak_rng_below(&rng, 500);
            if (g_cfg.verbose)
                fprintf(stderr, "soak: cluster: SIGSTOP replica %d for %u ms\n", i, ms);
            kill(C.rep[i].pid, SIGSTOP);
            C.rep[i].stopped = true;
            atomic_fetch_add(&C.stops, 1);
            soak_sleep_us((uint64_t)ms * 1000);
            kill(C.rep[i].pid, SIGCONT);
            C.rep[i].stopped = false;
        } else {
            if (g_cfg.verbose)
                fprintf(stderr, "soak: cluster: restart etcd\n");
            kill(C.etcd_pid, SIGKILL);
            reap(C.etcd_pid);
            atomic_fetch_add(&C.etcd_restarts, 1);
            soak_sleep_us(300000);
            etcd_start();
        }
        cl_fault_end(f);
        sleep_unless_stopping(800 + soak_rng_below(&rng, 1200));
    }
    atomic_store(&C.chaos_idle, true);
    while (!atomic_load(&C.chaos_may_end))
        soak_sleep_us(10000);
    return NULL;
}

/* ---- member events, for the summary ------------------------------------ */

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (!ev)
        return;
    if (ev->kind == AC_MEMBER_EVENT_UP)
        atomic_fetch_add(&C.ups, 1);
    else if (ev->kind == AC_MEMBER_EVENT_DOWN)
        atomic_fetch_add(&C.downs, 1);
    else if (ev->kind == AC_MEMBER_EVENT_UNREACHABLE)
        atomic_fetch_add(&C.unreachables, 1);
    if (g_cfg.verbose)
        fprintf(stderr, "soak: cluster: member %s %s (incarnation %016llx)\n",
                ev->kind == AC_MEMBER_EVENT_UP            ? "up"
                : ev->kind == AC_MEMBER_EVENT_DOWN        ? "down"
                : ev->kind == AC_MEMBER_EVENT_UNREACHABLE ? "unreachable"
                                                          : "reachable",
                ev->member.address, (unsigned long long)ev->member.incarnation);
}

static const ac_actor_def watcher_def = {.name = "SoakMemberWatch", .receive = watcher_receive};

/* Every replica Up and reachable, within `ms`. */
static bool all_up(int64_t ms)
{
    uint64_t end = soak_now_ns() + (uint64_t)ms * 1000000ull;
    do {
        ac_member_list l = {0};
        int up = 0;
        if (ac_cluster_members(C.cluster, &l) == AC_OK) {
            for (size_t i = 0; i < l.count; i++)
                up += l.members[i].status == AC_MEMBER_UP &&
                      ac_member_has_role(&l.members[i], "replica");
            ac_member_list_free(&l);
        }
        if (up == C.nodes)
            return true;
        soak_sleep_us(20000);
    } while (soak_now_ns() < end);
    return false;
}

/* ---- the run ---------------------------------------------------------- */

static void end_all(void)
{
    for (int i = 0; i < C.nodes; i++)
        end_process(C.rep[i].pid, 3000);
    if (C.etcd_pid > 0)
        end_process(C.etcd_pid, 3000);
    if (C.etcd_dir[0]) {
        char cmd[192];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", C.etcd_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "soak: cluster: could not remove %s\n", C.etcd_dir);
    }
}

static int cluster_setup(void)
{
    if (C.etcd) {
        const char *tmp = getenv("TMPDIR");
        snprintf(C.etcd_dir, sizeof C.etcd_dir, "%s/actorc-soak-etcd.XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(C.etcd_dir)) {
            C.etcd_dir[0] = '\0';
            return 3;
        }
        int pair[2];
        if (ac_node_free_ports(pair, 2) != AC_OK) {
            fprintf(stderr, "actorc-soak: %s\n", ac_last_error());
            return 3;
        }
        C.etcd_client_port = pair[0], C.etcd_peer_port = pair[1];
        snprintf(C.etcd_url, sizeof C.etcd_url, "http://127.0.0.1:%d", C.etcd_client_port);
        if (!etcd_start()) {
            fprintf(stderr, "actorc-soak: --provider etcd needs etcd (Debian etcd-server)\n");
            return 3;
        }
    }
    C.sys = ac_system_create("soak", &(ac_system_options){.log_level = AC_LOG_ERROR,
                                                            .dead_letter_log_per_s = -1});
    if (!C.sys)
        return 3;
    ac_node *node = ac_node_start(C.sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    if (!node)
        return 3;
    snprintf(C.seeds[C.nodes], sizeof C.seeds[0], "%s", ac_node_address(node));
    int rep_ports[CL_MAX_NODES];
    if (ac_node_free_ports(rep_ports, (size_t)C.nodes) != AC_OK) {
        fprintf(stderr, "actorc-soak: %s\n", ac_last_error());
        return 3;
    }
    for (int i = 0; i < C.nodes; i++) {
        C.rep[i].port = rep_ports[i];
        snprintf(C.seeds[i], sizeof C.seeds[0], "127.0.0.1:%d", C.rep[i].port);
    }
    for (int i = 0; i < C.nodes; i++)
        if ((C.rep[i].pid = start_replica(i)) <= 0)
            return 3;
    const char *seed_v[CL_MAX_NODES];
    for (int i = 0; i < C.nodes; i++)
        seed_v[i] = C.seeds[i];
    const char *roles[] = {"driver"};
    const char *ep = C.etcd_url;
    ac_cluster_options co = {.name = "soak", .roles = roles, .roles_count = 1};
    ac_cluster_etcd_options eo = {.endpoints = &ep, .endpoints_count = 1, .lease_ttl_s = 10};
    /* The chaos stops replicas and expects them Up again as they were, and
     * restarts etcd: no split-brain resolution (static), and a lease that
     * rides out an etcd restart (etcd fences a node after its TTL). */
    ac_cluster_static_options seed_opts = {.seeds = seed_v, .seeds_count = (size_t)C.nodes};
    if (C.etcd) {
        co.etcd_options = &eo;
        co.retry_initial_ms = 50;
        co.retry_max_ms = 500;
    } else {
        co.static_options = &seed_opts;
        co.downing = AC_CLUSTER_DOWNING_OFF;
    }
    C.cluster = ac_cluster_join(C.sys, &co);
    if (!C.cluster)
        return 3;
    ac_ref *w = ac_spawn(C.sys, ac_props_new(&watcher_def, NULL), "member-watch");
    if (!w || ac_cluster_subscribe(C.cluster, w) != AC_OK)
        return 3;
    ac_ref_release(w);
    if (!all_up(30000)) {
        fprintf(stderr, "actorc-soak: the %d replicas did not all come up\n", C.nodes);
        return 3;
    }
    ac_cluster_router_options ro = {.path = "/user/replica", .role = "replica"};
    ac_scatter_gather_options sg = {.timeout_ms = CL_SCATTER_MS};
    ac_hedged_options ho = {.timeout_ms = CL_SCATTER_MS, .delay_us = 20000};
    ac_props *p[R_COUNT] = {ac_cluster_router_round_robin(C.cluster, &ro),
                            ac_cluster_router_scatter_gather_first_completed(C.cluster, &ro, &sg),
                            ac_cluster_router_hedged(C.cluster, &ro, &ho)};
    for (int r = 0; r < R_COUNT; r++)
        if (!p[r] || !(C.routers[r] = ac_spawn(C.sys, p[r], cl_router_names[r])))
            return 3;
    /* Let the routers learn the members before the load begins. */
    for (int r = 0; r < R_COUNT; r++) {
        uint64_t end = soak_now_ns() + 10000000000ull;
        for (;;) {
            ac_answer a;
            size_t n = 0;
            if (ac_ask_wait(C.routers[r], ac_router_get_routees_msg(), 2000, &a) == AC_OK) {
                n = ac_routees_count(a.reply);
                ac_answer_release(&a);
            } else {
                ac_answer_release(&a);
            }
            if ((int)n == C.nodes || soak_now_ns() > end)
                break;
            soak_sleep_us(20000);
        }
    }
    return 0;
}

int cluster_soak(const char *self_exe, int nodes, bool etcd)
{
    C.nodes = nodes;
    C.etcd = etcd;
    C.self_exe = self_exe;
    printf("soak: cluster: seed 0x%016llx, %gs, %d replica processes, %s provider\n",
           (unsigned long long)g_cfg.seed, g_cfg.duration_s, nodes, etcd ? "etcd" : "static");
    fflush(stdout);
    int rc = cluster_setup();
    if (rc) {
        fprintf(stderr, "actorc-soak: cluster setup failed: %s\n", ac_last_error());
        end_all();
        return rc;
    }
    int ports[CL_MAX_NODES];
    for (int i = 0; i < nodes; i++)
        ports[i] = C.rep[i].port;
    cl_check_init(nodes, ports);
    pthread_t callers[CL_CALLERS], chaos_t, reaper_t;
    for (int i = 0; i < CL_CALLERS; i++)
        pthread_create(&callers[i], NULL, caller, (void *)(uintptr_t)i);
    pthread_create(&chaos_t, NULL, chaos, NULL);
    pthread_create(&reaper_t, NULL, cl_reaper, NULL);
    uint64_t end = soak_now_ns() + (uint64_t)(g_cfg.duration_s * 1e9);
    while (soak_now_ns() < end && !atomic_load(&g_failed))
        soak_sleep_us(20000);
    atomic_store(&g_stop, true);
    for (int i = 0; i < CL_CALLERS; i++)
        pthread_join(callers[i], NULL);
    while (!atomic_load(&C.chaos_idle))
        soak_sleep_us(10000);
    /* Everything sent is answered within its deadline plus the grace. */
    uint64_t drain_end = soak_now_ns() + ((uint64_t)CL_ASK_MS + (uint64_t)g_cfg.grace_ms) * 1000000ull;
    while (cl_in_flight() && soak_now_ns() < drain_end && !atomic_load(&g_failed))
        soak_sleep_us(10000);
    pthread_join(reaper_t, NULL);
    if (cl_in_flight() && !atomic_load(&g_failed))
        soak_violation("cluster: %zu requests still unanswered after the load stopped",
                       cl_in_flight());
    if (!atomic_load(&g_failed) && !all_up(20000))
        soak_violation("cluster: not every replica is Up again 20 s after the chaos stopped");
    /* Every request settled is not every ask on the wire answered: a
     * scatter's or hedge's losing requests are out until their replicas
     * answer or the router's deadline, and an entry whose ask settled
     * other than by its reply (a timeout, that deadline) leaves the table
     * at the transport's next sweep (remoting.md). So the table empties
     * within the routers' deadline and a sweep, not at once. */
    ac_node_stats ns = {0};
    uint64_t table_end = soak_now_ns() + ((uint64_t)CL_SCATTER_MS + 2000ull) * 1000000ull;
    while (!atomic_load(&g_failed) && ac_node_stats_get(ac_system_node(C.sys), &ns) == AC_OK &&
           ns.pending_asks != 0 && soak_now_ns() < table_end)
        soak_sleep_us(10000);
    if (!atomic_load(&g_failed) && ns.pending_asks != 0)
        soak_violation("cluster: %llu correlation entries left %llu ms after nothing was in flight",
                       (unsigned long long)ns.pending_asks,
                       (unsigned long long)CL_SCATTER_MS + 2000ull);
    for (int r = 0; r < R_COUNT; r++)
        ac_ref_release(C.routers[r]);
    ac_cluster_leave(C.cluster);
    ac_status st = ac_system_terminate(C.sys);
    end_all();
    atomic_store(&C.chaos_may_end, true);
    pthread_join(chaos_t, NULL);
    if (st != AC_OK)
        soak_violation("cluster: ac_system_terminate returned %s", ac_status_name(st));
    if (atomic_load(&g_failed)) {
        fprintf(stderr, "soak: FAILED, seed 0x%016llx: %s\n", (unsigned long long)g_cfg.seed,
                soak_first_violation());
        return 1;
    }
    cl_answer_counts n = cl_answers();
    printf("soak: cluster: %llu requests, all answered exactly once: %llu replies, %llu "
           "aggregates, %llu NodeDownErrors, %llu ask timeouts, %llu other errors; chaos: %llu "
           "kill -9 and restarts, %llu SIGSTOPs, %llu etcd restarts; members: %llu up, %llu "
           "unreachable, %llu down events; seed 0x%016llx\n",
           (unsigned long long)C.sent, (unsigned long long)n.replies,
           (unsigned long long)n.aggregates, (unsigned long long)n.node_down,
           (unsigned long long)n.timeouts, (unsigned long long)n.errors,
           (unsigned long long)C.kills, (unsigned long long)C.stops,
           (unsigned long long)C.etcd_restarts, (unsigned long long)C.ups,
           (unsigned long long)C.unreachables, (unsigned long long)C.downs,
           (unsigned long long)g_cfg.seed);
    return 0;
}
