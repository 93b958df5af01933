/*
 * actorc-hedge: what hedged requests buy and cost, measured on this
 * machine. Shared declarations of the demo's three parts: the simulated
 * replicas (replica.c), the load driver (main.c) and the report
 * (report.c).
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

/* One strategy's results. */
typedef struct run_result {
    const char *name;
    int64_t *latency_us; /* one per request that succeeded */
    size_t ok, timeouts, errors, requests;
    double seconds;
    double calls_per_request;
} run_result;

/* report.c */
void report_table(FILE *out, const run_result *runs, size_t n);
/* Each hedged router's p99 and calls per request beside scatter/gather's. */
void report_price(FILE *out, const run_result *runs, size_t n);
void report_histogram(FILE *out, const run_result *runs, size_t n);
int report_svg(const char *path, const run_result *runs, size_t n, const char *subtitle);
int64_t percentile_us(const run_result *r, double p);

#endif
