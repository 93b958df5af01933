/*
 * actorc-soak --cluster N --chaos: the cluster chaos soak.
 *
 * The soak process is the driver: it starts N node processes
 * (chaos_nodes.c, each this program with --chaos-node and a replica at
 * /user/replica), becomes a node of their cluster itself (role
 * "driver", keep-majority downing), and asks the replicas through four
 * cluster routers — round-robin, scatter/gather, hedged and consistent
 * hashing — from caller threads, a bounded, seeded load, while the chaos
 * schedule (chaos_plan.c) partitions and heals the cluster (namespaces
 * and nftables with root, the fault layer otherwise: chaos_net.c), makes
 * links slow or lossy, kills nodes with SIGKILL and restarts them, and
 * stops them with SIGSTOP. Without --chaos the load runs alone.
 *
 * What it checks and prints in one summary line: every request answered
 * exactly once (chaos_check.c), no answer from an incarnation the driver
 * had downed, the membership one again within stable_after_ms plus the
 * slack of each heal, each partition's cut side downed by itself, and
 * resident memory flat (each process's growth from the start of its
 * steady state to the end, --rss-growth-kb). Every process it started is
 * ended by its pid and every namespace and rule it made removed and
 * checked gone, on failure and on SIGINT or SIGTERM as well.
 */
#include <actorc/cluster.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chaos_soak.h"
#include "soak.h"

#define CALLERS 3
#define SCATTER_MS 1000
/* A node's resident memory is first sampled once it has lived this long. */
#define NODE_WARMUP_NS 5000000000ull

static struct {
    ac_ref *routers[CR_COUNT];
    atomic_bool monitor_stop;
    long driver_rss_base;
    int64_t rss_growth_kb; /* the largest of any process */
    const char *net_mode;
    atomic_bool interrupted;
} D = {.driver_rss_base = -1};

/* ---- the load -------------------------------------------------------------- */

static void *caller(void *arg)
{
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 200 + (uint64_t)(uintptr_t)arg);
    while (!atomic_load(&g_stop)) {
        int router = (int)soak_rng_below(&rng, CR_COUNT);
        uint64_t id = ch_ledger_take(router);
        if (!id) {
            soak_sleep_us(2000);
            continue;
        }
        ac_msg *m = ac_msg_int64_new((int64_t)id);
        ac_future *f = m ? ac_ask(D.routers[router], m, CH_ASK_MS) : NULL;
        if (!f) {
            ch_ledger_withdraw(id);
            soak_sleep_us(2000);
            continue;
        }
        ch_count_sent();
        ac_future_on_complete(f, ch_settle, (void *)(uintptr_t)id);
        ac_future_release(f);
        soak_sleep_us(500 + soak_rng_below(&rng, 2500));
    }
    return NULL;
}

static uint64_t hash_key(const ac_msg *msg, void *user)
{
    (void)user;
    return (uint64_t)ac_msg_int64(msg) * 0x9e3779b97f4a7c15ull;
}

/* ---- memory and the reaper ------------------------------------------------ */

static void note_growth(long base, long now)
{
    if (base > 0 && now > 0 && now - base > D.rss_growth_kb)
        D.rss_growth_kb = now - base;
}

/* Each node's first sample once it is warm; the driver's after warm-up. */
static void sample_baselines(uint64_t warm_ns)
{
    uint64_t now = soak_now_ns();
    if (D.driver_rss_base < 0 && now >= warm_ns)
        D.driver_rss_base = ch_rss_kb(getpid());
    pthread_mutex_lock(&g_nodes.lock);
    for (int i = 0; i < g_nodes.count; i++) {
        ch_node *n = &g_nodes.node[i];
        if (n->pid > 0 && n->ready && n->rss_base_kb < 0 && now >= warm_ns &&
            now - n->started_ns >= NODE_WARMUP_NS)
            n->rss_base_kb = ch_rss_kb(n->pid);
    }
    pthread_mutex_unlock(&g_nodes.lock);
}

/* The growth of every process that has a baseline, now. */
static void sample_final(void)
{
    note_growth(D.driver_rss_base, ch_rss_kb(getpid()));
    pthread_mutex_lock(&g_nodes.lock);
    for (int i = 0; i < g_nodes.count; i++)
        if (g_nodes.node[i].pid > 0)
            note_growth(g_nodes.node[i].rss_base_kb, ch_rss_kb(g_nodes.node[i].pid));
    pthread_mutex_unlock(&g_nodes.lock);
}

static void *monitor(void *arg)
{
    uint64_t warm_ns = *(uint64_t *)arg;
    for (int tick = 0; !atomic_load(&D.monitor_stop); tick++) {
        ch_reap();
        if (tick % 10 == 0)
            sample_baselines(warm_ns);
        soak_sleep_us(100000);
    }
    return NULL;
}

/* ---- member events: which incarnations the driver downed ------------------ */

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev && ev->kind == AC_MEMBER_EVENT_DOWN && !ev->member.self)
        ch_incarnation_downed(ev->member.incarnation);
}

static const ac_actor_def watcher_def = {.name = "ChaosDriverWatch", .receive = watcher_receive};

/* ---- setup and teardown ----------------------------------------------------- */

static void end_everything(void)
{
    ch_nodes_end_all();
    if (!ch_net_teardown())
        fprintf(stderr, "soak-cluster: a namespace of the run is left\n");
}

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&D.interrupted, true);
    atomic_store(&g_stop, true);
}

static bool routers_ready(void)
{
    for (int r = 0; r < CR_COUNT; r++) {
        uint64_t end = soak_now_ns() + 20000000000ull;
        size_t n = 0;
        while (n != (size_t)g_nodes.count && soak_now_ns() < end && !atomic_load(&g_stop)) {
            ac_answer a;
            if (ac_ask_wait(D.routers[r], ac_router_get_routees_msg(), 2000, &a) == AC_OK)
                n = ac_routees_count(a.reply);
            ac_answer_release(&a);
            if (n != (size_t)g_nodes.count)
                soak_sleep_us(20000);
        }
        if (n != (size_t)g_nodes.count)
            return false;
    }
    return true;
}

static bool spawn_routers(void)
{
    ac_cluster_router_options ro = {.path = "/user/replica", .role = "replica"};
    ac_scatter_gather_options sg = {.timeout_ms = SCATTER_MS};
    ac_hedged_options ho = {.timeout_ms = SCATTER_MS, .delay_us = 20000};
    ac_props *p[CR_COUNT] = {
        ac_cluster_router_round_robin(g_run.cluster, &ro),
        ac_cluster_router_scatter_gather_first_completed(g_run.cluster, &ro, &sg),
        ac_cluster_router_hedged(g_run.cluster, &ro, &ho),
        ac_cluster_router_consistent_hashing(g_run.cluster, &ro, hash_key, NULL)};
    bool ok = true;
    for (int r = 0; r < CR_COUNT; r++)
        ok = p[r] && (D.routers[r] = ac_spawn(g_run.sys, p[r], ch_router_names[r])) && ok;
    return ok && routers_ready();
}

static bool join_driver(void)
{
    char bind[64];
    snprintf(bind, sizeof bind, "tcp://%s", g_nodes.seeds[g_nodes.count]);
    g_run.sys = ac_system_create("chaos", &(ac_system_options){.log_level = AC_LOG_ERROR,
                                                               .dead_letter_log_per_s = -1});
    /* In the run's namespaces the address is not loopback, and the
     * network is the run's own: no keys. */
    ac_node_options no = {.bind = bind, .faults = "", .insecure = ch_net_is_netns()};
    g_run.node = g_run.sys ? ac_node_start(g_run.sys, &no) : NULL;
    const char *seeds[CH_MAX_NODES];
    for (int i = 0; i < g_nodes.count; i++)
        seeds[i] = g_nodes.seeds[i];
    const char *roles[] = {"driver"};
    ac_cluster_static_options so = {.seeds = seeds, .seeds_count = (size_t)g_nodes.count};
    ac_cluster_options co = {.name = "chaos", .roles = roles, .roles_count = 1,
                             .static_options = &so, .stable_after_ms = g_nodes.stable_after_ms,
                             .retry_initial_ms = 50, .retry_max_ms = 500};
    g_run.cluster = g_run.node ? ac_cluster_join(g_run.sys, &co) : NULL;
    ac_ref *w = g_run.cluster ? ac_spawn(g_run.sys, ac_props_new(&watcher_def, NULL), "watch")
                              : NULL;
    bool ok = w && ac_cluster_subscribe(g_run.cluster, w) == AC_OK;
    ac_ref_release(w);
    return ok;
}

static int setup(void)
{
    char why[256] = "";
    if (ch_net_setup(g_cfg.cluster, g_cfg.partitions_by == 0, &D.net_mode, why, sizeof why)) {
        fprintf(stderr, "soak-cluster: network setup failed: %s\n", why);
        return 3;
    }
    if (!ch_net_is_netns() && g_cfg.partitions_by == 0)
        printf("soak-cluster: partitions by the fault layer (%s)\n", why);
    if (!ch_net_enter_driver()) {
        fprintf(stderr, "soak-cluster: cannot enter the driver's namespace\n");
        return 3;
    }
    for (int i = 0; i < g_nodes.count; i++)
        if (!ch_node_start(i)) {
            fprintf(stderr, "soak-cluster: cannot start node %d\n", i);
            return 3;
        }
    if (!join_driver()) {
        fprintf(stderr, "soak-cluster: the driver cannot join: %s\n", ac_last_error());
        return 3;
    }
    if (!ch_wait_converged(soak_now_ns() + 60000000000ull)) {
        fprintf(stderr, "soak-cluster: the %d nodes did not form one cluster in 60 s\n",
                g_nodes.count);
        return 3;
    }
    if (!spawn_routers()) {
        fprintf(stderr, "soak-cluster: the routers did not learn every node\n");
        return 3;
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------ */

/* Load and chaos until the end; then the load stops and drains. */
static void run_load(void)
{
    uint64_t start = soak_now_ns();
    uint64_t end = start + (uint64_t)(g_cfg.duration_s * 1e9);
    uint64_t warm = start + (uint64_t)(g_cfg.warmup_s * 1e9);
    pthread_t callers[CALLERS], mon;
    pthread_create(&mon, NULL, monitor, &warm);
    for (int i = 0; i < CALLERS; i++)
        pthread_create(&callers[i], NULL, caller, (void *)(uintptr_t)i);
    if (g_cfg.chaos)
        ch_chaos_run(end);
    while (soak_now_ns() < end && !atomic_load(&g_stop))
        soak_sleep_us(20000);
    bool failed_early = atomic_load(&g_failed) || atomic_load(&D.interrupted);
    atomic_store(&g_stop, true);
    for (int i = 0; i < CALLERS; i++)
        pthread_join(callers[i], NULL);
    /* Everything sent is answered within its deadline plus the grace. */
    uint64_t drain = soak_now_ns() + (uint64_t)(CH_ASK_MS + g_cfg.grace_ms + 500) * 1000000ull;
    while (ch_in_flight() && soak_now_ns() < drain)
        soak_sleep_us(10000);
    ch_reap();
    if (!failed_early && !ch_wait_converged(soak_now_ns() + 20000000000ull))
        soak_violation("cluster: membership not one again 20 s after the chaos stopped");
    atomic_store(&D.monitor_stop, true);
    pthread_join(mon, NULL);
    sample_final(); /* after the monitor, which wrote the baselines */
}

static void print_summary(bool pass)
{
    ch_counts c = ch_counts_get();
    char rss[48];
    if (g_cfg.rss_growth_kb > 0)
        snprintf(rss, sizeof rss, "%lld", (long long)D.rss_growth_kb);
    else
        snprintf(rss, sizeof rss, "%lld(not-checked)", (long long)D.rss_growth_kb);
    printf("soak-cluster: seed=0x%016llx duration=%.0fs nodes=%d partitions_by=%s requests=%llu "
           "answered=%llu replies=%llu errors=%llu lost=%llu dup=%llu stale=%llu wrong=%llu "
           "partitions=%llu heals_converged=%llu/%llu slowest_heal_ms=%lld "
           "minority_downed=%llu/%llu kills=%llu stops=%llu slow_links=%llu lossy_links=%llu "
           "self_downs=%llu rss_growth_kb=%s %s\n",
           (unsigned long long)g_cfg.seed, g_cfg.duration_s, g_nodes.count, D.net_mode,
           (unsigned long long)c.sent, (unsigned long long)c.answered,
           (unsigned long long)c.replies, (unsigned long long)c.errors,
           (unsigned long long)c.lost, (unsigned long long)c.dup, (unsigned long long)c.stale,
           (unsigned long long)c.wrong, (unsigned long long)g_run.partitions,
           (unsigned long long)g_run.heals_converged, (unsigned long long)g_run.heals,
           (long long)g_run.slowest_converge_ms, (unsigned long long)g_run.minority_downed,
           (unsigned long long)g_run.minority_nodes, (unsigned long long)g_run.kills,
           (unsigned long long)g_run.stops, (unsigned long long)g_run.slow_links,
           (unsigned long long)g_run.lossy_links, (unsigned long long)g_run.self_downs, rss,
           pass ? "PASS" : "FAIL");
}

/* The checks the summary line states, beyond those made while running. */
static void final_checks(void)
{
    ch_counts c = ch_counts_get();
    if (c.answered + c.lost != c.sent && !atomic_load(&g_failed))
        soak_violation("cluster: %llu requests sent, %llu answered, %llu lost",
                       (unsigned long long)c.sent, (unsigned long long)c.answered,
                       (unsigned long long)c.lost);
    if (g_cfg.rss_growth_kb > 0 && D.rss_growth_kb > g_cfg.rss_growth_kb)
        soak_violation("cluster: resident memory grew by %lld kB (at most %lld allowed)",
                       (long long)D.rss_growth_kb, (long long)g_cfg.rss_growth_kb);
    if (g_cfg.chaos && g_cfg.duration_s >= 20 && g_run.partitions == 0 && !atomic_load(&g_failed))
        soak_violation("cluster: no partition in %.0f s of chaos", g_cfg.duration_s);
}

int chaos_soak(const char *self_exe)
{
    snprintf(g_nodes.self_exe, sizeof g_nodes.self_exe, "%s", self_exe);
    g_nodes.stable_after_ms = g_cfg.stable_after_ms;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    atexit(end_everything);
    printf("soak-cluster: seed 0x%016llx, %gs, %d node processes, chaos %s\n",
           (unsigned long long)g_cfg.seed, g_cfg.duration_s, g_cfg.cluster,
           g_cfg.chaos ? "on" : "off");
    int rc = setup();
    if (rc == 0)
        run_load();
    for (int r = 0; r < CR_COUNT; r++)
        ac_ref_release(D.routers[r]);
    if (g_run.cluster)
        ac_cluster_leave(g_run.cluster);
    if (g_run.sys && ac_system_terminate(g_run.sys) != AC_OK)
        soak_violation("cluster: the driver's system did not terminate clean");
    ch_nodes_end_all();
    if (!ch_net_teardown())
        soak_violation("cluster: a namespace or rule of the run is left");
    if (rc)
        return rc;
    final_checks();
    if (atomic_load(&D.interrupted) && !atomic_load(&g_failed))
        soak_violation("cluster: interrupted");
    bool pass = !atomic_load(&g_failed);
    if (!pass)
        fprintf(stderr, "soak-cluster: FAILED, seed 0x%016llx: %s\n",
                (unsigned long long)g_cfg.seed, soak_first_violation());
    print_summary(pass);
    return pass ? 0 : 1;
}
