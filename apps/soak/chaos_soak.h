/*
 * The cluster chaos soak (--cluster N --chaos), what its files share:
 * chaos.c runs it (the driver: setup, load, the chaos schedule, the
 * summary), chaos_nodes.c starts, watches and ends the node processes,
 * chaos_net.c cuts and heals partitions and makes links slow or lossy,
 * chaos_check.c keeps the ledger of requests and judges each answer, and
 * chaos_node.c is a node process.
 *
 * The driver and the node processes talk over pipes, not the cluster, so
 * that the control path survives the partitions it makes: the driver
 * writes commands to a node's stdin ("fault <spec>") and reads its
 * reports from its stdout ("ready <address> <incarnation>", "view <up>
 * <unreachable>" at each member event, "downed" when it downed itself).
 */
#ifndef ACTORC_SOAK_CHAOS_H
#define ACTORC_SOAK_CHAOS_H

#include <actorc.h>
#include <actorc/cluster.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CH_MAX_NODES 5
#define CH_ASK_MS 3000
#define CH_SLOTS 4096 /* requests in flight at most; a power of two */

/* The routers the callers ask through. */
enum { CR_RR = 0, CR_SCATTER, CR_HEDGED, CR_HASH, CR_COUNT };
extern const char *const ch_router_names[CR_COUNT];

/* ---- the ledger and the judge (chaos_check.c) ---------------------------- */

/* A slot for a request through `router`: its id, or 0 when CH_SLOTS are
 * in flight. Any thread. */
uint64_t ch_ledger_take(int router);
/* A request taken but never sent: its slot back. */
void ch_ledger_withdraw(uint64_t id);
size_t ch_in_flight(void);
/* The completion of a request's ask (user: its id). */
void ch_settle(const ac_answer *a, void *user);
/* Violations for requests unanswered past their deadline and the grace;
 * call now and then. */
void ch_reap(void);
/* The driver's cluster downed this incarnation (a member event): an
 * answer from it after this is stale. */
void ch_incarnation_downed(uint64_t incarnation);
typedef struct ch_counts {
    uint64_t sent, answered, replies, errors, lost, dup, stale, wrong;
    uint64_t by_router[CR_COUNT];
} ch_counts;
ch_counts ch_counts_get(void);
void ch_count_sent(void);

/* ---- node processes (chaos_nodes.c) ---------------------------------------- */

typedef struct ch_node {
    pid_t pid;
    int ctl;              /* its stdin, for commands */
    pthread_t reader;     /* reads its stdout */
    bool reader_running;
    char addr[48];        /* "host:port" it binds and advertises */
    char ns[64];          /* its network namespace, "" for none */
    uint64_t incarnation; /* from its ready line, 0 before */
    bool ready, downed, stopped;
    int view_up, view_unreachable;
    uint64_t started_ns;
    long rss_base_kb; /* at the start of its steady state, -1 before */
} ch_node;

typedef struct ch_nodes {
    int count;
    ch_node node[CH_MAX_NODES];
    char seeds[CH_MAX_NODES + 1][48]; /* the nodes', then the driver's (as addr) */
    char self_exe[4096];
    int stable_after_ms;
    pthread_mutex_t lock; /* guards every ch_node field the readers write */
} ch_nodes;

extern ch_nodes g_nodes;

/* Start node i (its namespace and address set); false when it cannot. */
bool ch_node_start(int i);
/* End node i: SIGKILL when `hard`, else SIGTERM and SIGKILL after a
 * grace; reaped, its reader joined. */
void ch_node_end(int i, bool hard);
/* Write one command line to node i; false when it could not. */
bool ch_node_command(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* End every node that runs (at exit, too). */
void ch_nodes_end_all(void);
/* Resident memory of a process in kB, -1 when unreadable. */
long ch_rss_kb(pid_t pid);

/* ---- the network (chaos_net.c) ---------------------------------------------- */

/* Namespaces when this machine can (root, ip, nft) and `want_netns`,
 * else the fault layer; the addresses of nodes and driver chosen. 0 ok,
 * 3 setup failed. `mode` says which ("netns" or "fault"). */
int ch_net_setup(int nodes, bool want_netns, const char **mode, char *why, size_t cap);
/* The driver's own namespace entered (netns mode; before any thread). */
bool ch_net_enter_driver(void);
/* Cut side[i] = 1 nodes (and nothing of the driver) from the rest. */
bool ch_net_partition(ac_node *driver, const int *side);
bool ch_net_heal(ac_node *driver);
/* A fault on the link between a and b, both ways (index count: the
 * driver); spec NULL heals it. */
bool ch_net_link(ac_node *driver, int a, int b, const char *items);
/* Remove everything made; true when verified gone. */
bool ch_net_teardown(void);
bool ch_net_is_netns(void);

/* ---- the run and its chaos (chaos.c, chaos_plan.c) --------------------------- */

typedef struct ch_run {
    ac_system *sys;
    ac_node *node;
    ac_cluster *cluster;
    /* Written by the chaos (one thread), read for the summary. */
    uint64_t partitions, heals, heals_converged, minority_nodes, minority_downed;
    uint64_t kills, stops, slow_links, lossy_links, self_downs;
    int64_t slowest_converge_ms; /* after a heal, from the heal */
} ch_run;

extern ch_run g_run;

/* Is the membership one again: every node running, Up in the driver's
 * view under its current incarnation, and every node seeing all of them
 * (and the driver) Up and none unreachable? */
bool ch_converged(void);
/* Wait until converged, at most until `deadline_ns`; a node that downed
 * itself on the way is restarted (outside a partition that is a node
 * stopped long enough to be lost). */
bool ch_wait_converged(uint64_t deadline_ns);
/* Print every node's view and the driver's to stderr, saying why. */
void ch_dump_views(const char *why);
/* The seeded chaos schedule, one action at a time, until `end_ns` or
 * g_stop. */
void ch_chaos_run(uint64_t end_ns);

#endif
