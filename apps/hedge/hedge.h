/*
 * actorc-hedge: what hedged requests buy and cost, measured on this
 * machine. Shared declarations of the demo's parts: the simulated
 * replicas (replica.c), the strategies (plans.c), the load driver
 * (main.c), the replicas as cluster nodes (cluster.c) and the report
 * (report.c, ideal.c).
 */
#ifndef HEDGE_H
#define HEDGE_H

#include <actorc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* How a replica behaves. */
typedef struct replica_model {
    double median_ms;   /* log-normal body: median */
    double sigma;       /* log-normal body: shape */
    double tail_pct;    /* share of requests that stall */
    double tail_ms;     /* how long a stall lasts */
    double error_pct;   /* share of requests answered with an error */
    int dead_replica;   /* 1-based index of a replica that never answers; 0: none */
    uint64_t seed;
    atomic_uint_fast64_t calls; /* requests handled, all replicas */
    atomic_int next_index;      /* seeds each replica's generator apart */
} replica_model;

extern const ac_actor_def hedge_replica;
/* One request's time as the model draws it, in microseconds (errors and
 * the dead replica aside), from the generator state *rng (non-zero). */
int64_t replica_draw_us(uint64_t *rng, const replica_model *m);
/* A String request a replica answers with an Int64: the requests its
 * model has counted (how actorc-hedge --nodes reads the work done in the
 * replica processes). */
#define HEDGE_CALLS_QUERY "actorc-hedge.calls"

/* One strategy's results. A failed request is a latency too, as a
 * latency objective counts it: the time its error came (a timeout: its
 * deadline), so a strategy that fails requests cannot look fast by
 * leaving them out of its percentiles. */
typedef struct run_result {
    char name[32];
    int64_t *latency_us; /* every request's, answered or failed: ok + timeouts + errors */
    int64_t *failed_us;  /* the failed ones' alone: timeouts + errors */
    size_t ok, timeouts, errors, requests;
    double seconds;
    double calls_per_request;
} run_result;

/* What the demo was asked to do. */
typedef struct options {
    size_t requests, concurrency;
    int replicas;
    int64_t timeout_ms;
    const char *svg;
    int metrics_port;
    bool quiet;
    bool breakers;
    int64_t hedge_delay_us;  /* the fixed hedge delay */
    double hedge_percentile; /* the adaptive one's percentile */
    int nodes;               /* replica processes; 0: replicas in this process */
    /* With --nodes: links from the client to replica nodes made bad
     * (--slow-link, --lossy-link), both ways. */
    int link_count;
    int link_node[16];           /* 1-based */
    ac_link_fault link_fault[16];
    char link_text[16][48];      /* as given, for the subtitle */
    const char *node_program;
    /* Requests the replicas have handled so far; NULL: the model's count. */
    uint64_t (*count_calls)(void *user);
    void *count_user;
    /* Wait until a router just spawned routes to every replica; NULL: it
     * does from the start (a pool). */
    bool (*await_routees)(ac_ref *router, void *user);
    void *await_user;
} options;

/* The strategies every pass runs, in the table's order: the same rows
 * whether the replicas run in this process or as nodes of a cluster. */
typedef enum strategy_kind {
    STRATEGY_ROUND_ROBIN,
    STRATEGY_RANDOM,
    STRATEGY_SMALLEST_MAILBOX,
    STRATEGY_SCATTER_GATHER,
    STRATEGY_HEDGED_FIXED,    /* the fixed delay */
    STRATEGY_HEDGED_ADAPTIVE, /* the percentile of observed latency */
    STRATEGIES
} strategy_kind;

/* One strategy of a pass: its row's name and what its router is made of. */
typedef struct plan {
    strategy_kind kind;
    char name[32]; /* ending in "+cb" in a pass with breakers */
    bool breakers;
    int64_t ask_timeout_ms;       /* the caller's deadline */
    ac_scatter_gather_options sg; /* STRATEGY_SCATTER_GATHER's */
    ac_hedged_options hedged;     /* the hedged routers' */
} plan;

/* plans.c: a pass's plans, one per strategy, in order. */
void plans_make(const options *o, bool breakers, plan out[STRATEGIES]);

/* The router a plan runs through: props to spawn, or NULL with the last
 * error. A pool in this process (main.c) or a cluster router (cluster.c). */
typedef ac_props *(*router_factory)(const plan *p, void *user);

/* main.c: every strategy once, through the routers `make` makes, into runs[*n]
 * on (counted in *n); returns how many were planned. */
size_t run_pass(ac_system *sys, replica_model *m, const options *o, bool breakers,
                router_factory make, void *user, run_result *runs, size_t *n);
/* The breaker of each replica with --breakers (in process and across
 * nodes alike). */
ac_breaker_options demo_breaker_options(const options *o, const replica_model *m);
/* Print the table, the price, the histogram and write the SVG. */
void report(const options *o, const replica_model *m, run_result *runs, size_t n,
            const char *subtitle);

/* main.c: with --metrics-port, serve metrics, the view and the observer
 * page for `sys` and print their URLs; false (said why) when it cannot. */
bool serve_metrics(ac_system *sys, const options *o);

/* cluster.c: the demo over o->nodes actorc-node processes; the exit code. */
int cluster_demo(options *o, replica_model *m, const char *argv0);

/* report.c */
void report_table(FILE *out, const run_result *runs, size_t n);
/* Each hedged router's p99 and calls per request beside scatter/gather's. */
void report_price(FILE *out, const run_result *runs, size_t n);
void report_histogram(FILE *out, const run_result *runs, size_t n);
int report_svg(const char *path, const run_result *runs, size_t n, const char *subtitle);
/* Nearest rank over every request, the failed ones at their time. */
int64_t percentile_us(const run_result *r, double p);

/* ideal.c: what the model itself allows, with no runtime cost at all:
 * scatter/gather's p99 (the fastest of all replicas), and the p99 and
 * calls per request of a hedge sent at the adaptive delay's percentile of
 * one call's time — the figures the measured ones are bounded by. Nothing
 * for a model with errors or a dead replica. */
void report_ideal(FILE *out, const replica_model *m, const options *o);

#endif
