/*
 * The chaos schedule of the cluster chaos soak (chaos_soak.h): one
 * action at a time, each chosen by one seeded generator, each followed by
 * a wait until the membership is one again, so that every action starts
 * from a whole cluster and its effect can be judged on its own:
 *
 *   partition  one or two nodes cut from the rest (the driver always on
 *              the majority side). The cut side must down itself (each
 *              of its nodes reports "downed") and the majority must down
 *              it, within the heartbeat timeout, stable_after_ms and a
 *              margin; no node of the majority may down itself. Then the
 *              downed processes are ended, the cut healed and they are
 *              started again (new incarnations), and the membership must
 *              be one again within stable_after_ms plus the slack
 *              (--converge-slack-ms, 2 s) of the heal.
 *   kill       kill -9 of one node, restarted on its address a moment later.
 *   stop       SIGSTOP of one node for 200 to 800 ms, then SIGCONT.
 *   slow       a link (driver included) delayed 5 to 50 ms with jitter, 1 to 4 s.
 *   lossy      a link dropping 1 to 10% of its frames, 1 to 4 s.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "chaos_soak.h"
#include "soak.h"

#define SLOW SOAK_SLOW
/* The nodes' heartbeat timeout (the node's default). */
#define HB_TIMEOUT_MS 1000

ch_run g_run;

static uint64_t ms_from_now(int64_t ms) { return soak_now_ns() + (uint64_t)ms * 1000000ull; }

static void pause_ms(uint64_t ms)
{
    for (uint64_t t = 0; t < ms && !atomic_load(&g_stop); t += 10)
        soak_sleep_us(10000);
}

/* The driver's view of node i: Up under its current incarnation? */
static bool driver_sees_up(const ac_member_list *l, const ch_node *n)
{
    for (size_t k = 0; k < l->count; k++)
        if (!strcmp(l->members[k].address, n->addr))
            return l->members[k].status == AC_MEMBER_UP && l->members[k].incarnation == n->incarnation;
    return false;
}

bool ch_converged(void)
{
    ac_member_list l = {0};
    ac_cluster_status st;
    if (ac_cluster_status_get(g_run.cluster, &st) != AC_OK || st.state != AC_CLUSTER_JOINED ||
        st.members_unreachable != 0 || st.members_up != (size_t)g_nodes.count + 1 ||
        ac_cluster_members(g_run.cluster, &l) != AC_OK)
        return false;
    bool ok = true;
    pthread_mutex_lock(&g_nodes.lock);
    for (int i = 0; ok && i < g_nodes.count; i++) {
        const ch_node *n = &g_nodes.node[i];
        ok = n->pid > 0 && n->ready && !n->downed && n->view_up == g_nodes.count + 1 &&
             n->view_unreachable == 0 && driver_sees_up(&l, n);
    }
    pthread_mutex_unlock(&g_nodes.lock);
    ac_member_list_free(&l);
    return ok;
}

static bool is_downed(int i)
{
    pthread_mutex_lock(&g_nodes.lock);
    bool d = g_nodes.node[i].downed;
    pthread_mutex_unlock(&g_nodes.lock);
    return d;
}

bool ch_wait_converged(uint64_t deadline_ns)
{
    while (soak_now_ns() < deadline_ns && !atomic_load(&g_stop)) {
        if (ch_converged())
            return true;
        for (int i = 0; i < g_nodes.count; i++)
            if (is_downed(i)) {
                if (g_cfg.verbose)
                    fprintf(stderr, "soak: node %d downed itself outside a partition: restarted\n", i);
                g_run.self_downs++;
                ch_node_end(i, true);
                ch_node_start(i);
            }
        soak_sleep_us(20000);
    }
    return ch_converged();
}

void ch_dump_views(const char *why)
{
    fprintf(stderr, "soak-cluster: %s; the views:\n", why);
    ac_member_list l = {0};
    if (ac_cluster_members(g_run.cluster, &l) == AC_OK)
        for (size_t k = 0; k < l.count; k++)
            fprintf(stderr, "  driver sees %s %016llx %s\n", l.members[k].address,
                    (unsigned long long)l.members[k].incarnation,
                    l.members[k].status == AC_MEMBER_UP ? "up" : "unreachable");
    ac_member_list_free(&l);
    pthread_mutex_lock(&g_nodes.lock);
    for (int i = 0; i < g_nodes.count; i++) {
        const ch_node *n = &g_nodes.node[i];
        fprintf(stderr, "  node %d pid %d %s %016llx%s%s: sees %d up, %d unreachable\n", i,
                (int)n->pid, n->addr, (unsigned long long)n->incarnation,
                n->ready ? "" : " (not ready)", n->downed ? " (downed)" : "", n->view_up,
                n->view_unreachable);
    }
    pthread_mutex_unlock(&g_nodes.lock);
}

/* Is node i's incarnation gone from the driver's view? */
static bool driver_dropped(int i)
{
    ac_member_list l = {0};
    if (ac_cluster_members(g_run.cluster, &l) != AC_OK)
        return false;
    pthread_mutex_lock(&g_nodes.lock);
    uint64_t inc = g_nodes.node[i].incarnation;
    pthread_mutex_unlock(&g_nodes.lock);
    bool present = false;
    for (size_t k = 0; k < l.count; k++)
        present |= l.members[k].incarnation == inc;
    ac_member_list_free(&l);
    return !present;
}

/* Until each cut node downed itself and the driver dropped it, or the
 * deadline: true when they did; a violation when the majority downed. */
static bool wait_minority_downed(const int *side, uint64_t deadline_ns)
{
    for (;;) {
        bool all = true;
        for (int i = 0; i < g_nodes.count; i++) {
            if (!side[i] && is_downed(i)) {
                soak_violation("cluster: node %d of the majority side downed itself", i);
                return false;
            }
            if (side[i])
                all = all && is_downed(i) && driver_dropped(i);
        }
        ac_cluster_status st;
        if (ac_cluster_status_get(g_run.cluster, &st) != AC_OK || st.state == AC_CLUSTER_LEFT) {
            soak_violation("cluster: the driver, on the majority side, downed itself");
            return false;
        }
        if (all || soak_now_ns() > deadline_ns || atomic_load(&g_stop))
            return all;
        soak_sleep_us(20000);
    }
}

static void partition(soak_rng *rng)
{
    int side[CH_MAX_NODES] = {0}, cut = 1 + (int)soak_rng_below(rng, 2);
    for (int k = 0; k < cut;) {
        int i = (int)soak_rng_below(rng, (uint32_t)g_nodes.count);
        if (!side[i])
            side[i] = 1, k++;
    }
    if (g_cfg.verbose)
        fprintf(stderr, "soak: partition: %d node(s) cut off\n", cut);
    g_run.partitions++;
    g_run.minority_nodes += (uint64_t)cut;
    if (!ch_net_partition(g_run.node, side)) {
        soak_violation("cluster: could not cut the partition");
        return;
    }
    int64_t bound = (HB_TIMEOUT_MS + g_nodes.stable_after_ms + 8000) * SLOW;
    bool downed = wait_minority_downed(side, ms_from_now(bound));
    for (int i = 0; i < g_nodes.count; i++)
        if (side[i] && is_downed(i))
            g_run.minority_downed++;
    if (!downed && !atomic_load(&g_stop)) {
        ch_dump_views("the cut side did not down itself");
        soak_violation("cluster: the cut side did not down itself within %lld ms", (long long)bound);
    }
    pause_ms(200); /* the downed processes linger, cut off, a moment */
    for (int i = 0; i < g_nodes.count; i++)
        if (side[i])
            ch_node_end(i, true);
    /* A heal is done when the last rule is gone: from then on it is timed. */
    bool ok = ch_net_heal(g_run.node);
    uint64_t healed = soak_now_ns();
    g_run.heals++;
    pause_ms(g_cfg.restart_after_heal_ms);
    for (int i = 0; i < g_nodes.count; i++)
        if (side[i])
            ch_node_start(i);
    if (!ok) {
        soak_violation("cluster: could not heal the partition");
        return;
    }
    int64_t within = g_nodes.stable_after_ms + g_cfg.converge_slack_ms;
    bool conv = ch_wait_converged(healed + (uint64_t)within * 1000000ull);
    int64_t took = (int64_t)((soak_now_ns() - healed) / 1000000ull);
    if (conv) {
        g_run.heals_converged++;
        if (took > g_run.slowest_converge_ms)
            g_run.slowest_converge_ms = took;
    } else if (!atomic_load(&g_stop)) {
        ch_dump_views("not one again after a heal");
        soak_violation("cluster: membership not one again within %lld ms of a heal",
                       (long long)within);
    }
}

static void kill_one(soak_rng *rng)
{
    int i = (int)soak_rng_below(rng, (uint32_t)g_nodes.count);
    if (g_cfg.verbose)
        fprintf(stderr, "soak: kill -9 node %d (pid %d)\n", i, (int)g_nodes.node[i].pid);
    ch_node_end(i, true);
    g_run.kills++;
    pause_ms(100 + soak_rng_below(rng, 400));
    if (!ch_node_start(i))
        soak_violation("cluster: could not restart node %d", i);
}

static void stop_one(soak_rng *rng)
{
    int i = (int)soak_rng_below(rng, (uint32_t)g_nodes.count);
    uint32_t ms = 200 + soak_rng_below(rng, 600);
    if (g_cfg.verbose)
        fprintf(stderr, "soak: SIGSTOP node %d for %u ms\n", i, ms);
    pid_t pid = g_nodes.node[i].pid;
    kill(pid, SIGSTOP);
    g_run.stops++;
    soak_sleep_us((uint64_t)ms * 1000);
    kill(pid, SIGCONT);
}

static void bad_link(soak_rng *rng, bool lossy)
{
    int a = (int)soak_rng_below(rng, (uint32_t)g_nodes.count + 1), b;
    do
        b = (int)soak_rng_below(rng, (uint32_t)g_nodes.count + 1);
    while (b == a);
    char items[96];
    if (lossy) {
        snprintf(items, sizeof items, "drop=%u%%", 1 + soak_rng_below(rng, 10));
        g_run.lossy_links++;
    } else {
        uint32_t d = 5 + soak_rng_below(rng, 46);
        snprintf(items, sizeof items, "delay=%ums,jitter=%ums", d, d / 2);
        g_run.slow_links++;
    }
    if (g_cfg.verbose)
        fprintf(stderr, "soak: link %d-%d: %s\n", a, b, items);
    ch_net_link(g_run.node, a, b, items);
    pause_ms(1000 + soak_rng_below(rng, 3000));
    ch_net_link(g_run.node, a, b, NULL);
}

void ch_chaos_run(uint64_t end_ns)
{
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 77);
    while (soak_now_ns() < end_ns && !atomic_load(&g_stop)) {
        pause_ms(300 + soak_rng_below(&rng, 1200));
        if (atomic_load(&g_stop) || soak_now_ns() >= end_ns)
            break;
        uint32_t what = soak_rng_below(&rng, 100);
        if (what < 30)
            partition(&rng);
        else if (what < 55)
            kill_one(&rng);
        else if (what < 75)
            stop_one(&rng);
        else
            bad_link(&rng, what >= 88);
        if (!atomic_load(&g_stop) && !ch_wait_converged(ms_from_now(20000 * SLOW)) &&
            !atomic_load(&g_stop)) {
            ch_dump_views("not one again after a chaos action");
            soak_violation("cluster: membership not one again 20 s after a chaos action");
        }
    }
}
