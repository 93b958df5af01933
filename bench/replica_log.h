/*
 * What the replicas of a cross-process scatter benchmark saw, for the
 * ideal to be measured as scatter_tail measures it in one process: each
 * replica notes, per request, when the request reached it and when its
 * timer fired (CLOCK_MONOTONIC, which every process on one host shares),
 * and hands its notes over in chunks when asked. The client then takes,
 * per scatter, the earliest firing of the three from the request's
 * start: the best any router could return from these replicas.
 *
 * A replica's notes are written by its actor only, read by it when it
 * reports; the client reads its copies after the asks are done.
 */
#ifndef ACTORC_BENCH_REPLICA_LOG_H
#define ACTORC_BENCH_REPLICA_LOG_H

#include <actorc.h>
#include <stdbool.h>
#include <stdint.h>

enum { REPLICA_LOG_MAX = 4096 }; /* requests noted per replica */

typedef struct replica_log {
    int64_t recv[REPLICA_LOG_MAX]; /* ns (CLOCK_MONOTONIC); 0: not seen */
    int64_t fire[REPLICA_LOG_MAX];
} replica_log;

int64_t replica_log_now(void);
/* In the replica's actor: note request `req` arriving, or its timer firing. */
void replica_log_recv(replica_log *log, int64_t req);
void replica_log_fire(replica_log *log, int64_t req);
/* In the replica's actor: answers a report request (true), or leaves the
 * message alone (false). */
bool replica_log_answer(ac_ctx *ctx, const replica_log *log, ac_msg *msg);
/* Outside actors: copy the notes of requests [0, n) of the replica at
 * `replica` (local or remote) into `into`. False when an ask fails. */
bool replica_log_fetch(ac_ref *replica, replica_log *into, int64_t n);

/* Per scatter of a run (requests first + i, i < n, their starts t0 and
 * their answers' arrivals end): the measured ideal (the earliest firing
 * of the replicas from t0), and the way of the earliest-firing replica's
 * request: t0 to its arrival there (out), arrival to firing beyond the
 * drawn delay (timer_late), firing to the answer (back). drawn_ms gives
 * replica k's drawn delay of request q. All in ns, n entries each. */
typedef struct scatter_split {
    int64_t *ideal, *out, *timer_late, *back;
} scatter_split;

void replica_log_split(replica_log *const *logs, int replicas, const int64_t *t0,
                       const int64_t *end, int64_t first, int64_t n,
                       int64_t (*drawn_ms)(int replica, int64_t req), scatter_split *split);

#endif
