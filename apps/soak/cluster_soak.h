/*
 * The soak across processes (--nodes), what its files share: cluster.c
 * runs it (the driver's node, the replica processes, the callers and
 * the chaos), cluster_check.c keeps the ledger of requests in flight and
 * judges each answer, cluster_replica.c is a replica process.
 */
#ifndef ACTORC_SOAK_CLUSTER_H
#define ACTORC_SOAK_CLUSTER_H

#include <actorc.h>

#define CL_MAX_NODES 5
#define CL_SLOTS 1024 /* requests in flight at most; a power of two */
#define CL_ASK_MS 3000

/* What a request asks the replicas to do with it. */
enum { CB_NOW = 0, CB_LATE, CB_ERROR, CB_ONLY, CB_SILENT };
/* The routers the callers ask through. */
enum { R_RR = 0, R_SCATTER, R_HEDGED, R_COUNT };
extern const char *const cl_router_names[R_COUNT];

/* ---- the ledger and the judge (cluster_check.c) ------------------------- */

/* Ready the ledger for `nodes` replicas listening on `ports` (the same
 * for the whole run: a replica restarts on its port). */
void cl_check_init(int nodes, const int *ports);
/* A slot for a request through `router` asking `beh` (with `param`): its
 * id, or 0 when CL_SLOTS are in flight. Any thread. */
uint64_t cl_ledger_take(int router, int beh, int param);
/* A request taken but never sent: its slot back. */
void cl_ledger_withdraw(uint64_t id);
size_t cl_in_flight(void);
/* The completion of a request's ask (user: its id): judged, counted, its
 * slot back; a violation when the answer is not one it allows, or the
 * second one. */
void cl_settle(const ac_answer *a, void *user);
/* A thread: a violation for each request unanswered past its deadline
 * and the grace, until g_stop. */
void *cl_reaper(void *arg);
/* A fault begins (kill, stop, etcd restart) and ends: while one is in
 * the air, and a while after, errors that need one are allowed. */
size_t cl_fault_begin(void);
void cl_fault_end(size_t k);

typedef struct cl_answer_counts {
    uint64_t replies, aggregates, node_down, timeouts, errors;
} cl_answer_counts;
cl_answer_counts cl_answers(void);

#endif
