/*
 * The replica of the cross-process scatter-tail benchmarks
 * (actorc-bench-remote scatter, actorc-bench-cluster
 * cluster_scatter_tail): an actor that takes a request (an int64 id),
 * waits a delay drawn from (replica, request) by a hash every process
 * computes alike, and answers with the id. It notes each request's
 * arrival and its timer's firing (replica_log.h) and answers report
 * requests, so that the client can measure the ideal from the notes and
 * check it against the drawn delays.
 *
 * The two benchmarks draw differently (one has 1 or 100 ms, the other 1,
 * 2 or 100 ms), so the delay is a function each passes in; the hash
 * beneath it is tail_replica_draw.
 */
#ifndef ACTORC_BENCH_TAIL_REPLICA_H
#define ACTORC_BENCH_TAIL_REPLICA_H

#include <actorc.h>
#include <stdint.h>

#include "replica_log.h"

/* Replica `replica`'s delay of request `req`, in whole ms. */
typedef int64_t tail_delay_fn(int replica, int64_t req);

/* A replica actor's user data, in the caller's storage, which must
 * outlive the actor: which one it is, its draw, and its notes. */
typedef struct tail_replica {
    int index;
    tail_delay_fn *delay_ms;
    replica_log log;
} tail_replica;

/* The replica actor; its user data is a tail_replica. A replica that
 * cannot schedule its answer ends the process with a message: a request
 * left unanswered would only show up later as a bent tail. */
extern const ac_actor_def tail_replica_def;

/* Clear *r for replica `index` drawing with `delay_ms`. */
void tail_replica_init(tail_replica *r, int index, tail_delay_fn *delay_ms);

/* 64 random-looking bits for (replica, req): the whole of splitmix64's
 * finaliser. With its first half alone, the low bits came out alike for
 * the three replicas far more often than chance (all three 2 ms in 3% of
 * actorc-bench-cluster's scatters, not 12.5%). */
uint64_t tail_replica_draw(int replica, int64_t req);

/* Per request first + i (i < n), the least of `replicas` replicas' drawn
 * delays, in ns, into ideal_ns[i]: the ideal before the wire's and the
 * timers' share. */
void tail_replica_drawn_ideal(int replicas, tail_delay_fn *delay_ms, int64_t first, int64_t n,
                              int64_t *ideal_ns);

#endif
