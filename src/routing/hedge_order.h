/*
 * The order in which the hedged router asks its routees (hedge_order.c):
 * round-robin, or by what it has seen of each routee's latency. The
 * latency order keeps, per routee, an estimate of the time it takes to
 * answer and how many requests it has out, in a small table of atomics
 * keyed by the routee's ref, which every thread that sends or sees an
 * answer updates and the router's turn reads to choose.
 */
#ifndef AC_ROUTING_HEDGE_ORDER_H
#define AC_ROUTING_HEDGE_ORDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "routing/router_internal.h"

/* One routee's record. Every field is written and read by any thread,
 * relaxed: the record is a hint for the order, and a lost update only
 * makes one choice less good. */
typedef struct ac__routee_latency {
    _Atomic(uintptr_t) key;      /* the routee's ref; 0: free */
    _Atomic uint64_t est_ns;     /* the estimate; 0: nothing known yet */
    _Atomic uint64_t sampled_ns; /* when est_ns was last set */
    _Atomic uint64_t asked_ns;   /* when the routee was last asked */
    /* When it last showed progress: a request had its outcome, or one
     * went out while none was. */
    _Atomic uint64_t progress_ns;
    atomic_int inflight; /* requests out, without an outcome yet */
} ac__routee_latency;

/* The records of one router: set by its factory, freed with it. */
typedef struct ac__latency_table {
    ac__routee_latency *records;
    uint32_t mask;     /* records - 1, a power of two */
    uint64_t probe_ns; /* asked again after this long; an older estimate is forgotten */
} ac__latency_table;

/* Room for the records of about `routees` routees (< 0: not known);
 * AC_ENOMEM naming `fn`. Factory's thread. */
ac_status ac__latency_table_init(ac__latency_table *t, int routees, uint64_t probe_ns,
                                 const char *fn);
void ac__latency_table_fini(ac__latency_table *t);

/* The record of `routee`, taken for it when it has none (the oldest
 * record of its neighbourhood is taken over when all are in use). Any
 * thread; NULL only for a table without records. */
ac__routee_latency *ac__latency_claim(ac__latency_table *t, const ac_ref *routee);
/* A request to the record's routee goes out at `now`. Any thread. */
void ac__latency_asked(ac__routee_latency *r, uint64_t now);
/* That request has its outcome, seen at `now`. Any thread. */
void ac__latency_done(ac__routee_latency *r, const ac_ref *routee, uint64_t now);
/* The routee took `sample_ns` to answer (or at least that long), seen
 * at `now`: folded into its estimate, or replacing one older than the
 * probe interval. Any thread. */
void ac__latency_observe(const ac__latency_table *t, ac__routee_latency *r, const ac_ref *routee,
                         uint64_t sample_ns, uint64_t now);

/* The routees to ask for one message, in order: the places in `st` of
 * the first m into `picks`. `failing(st, i, arg)` says whether routee i
 * is known to be failing: such routees go last. With a table (by
 * latency), `now` is the router's clock; returns true when picks[1] is a
 * probe, to be sent together with picks[0]. In the router's turn. */
typedef bool (*ac__failing_fn)(const ac__router_state *st, size_t i, const void *arg);
bool ac__hedge_order(ac__latency_table *t, const ac__router_state *st, uint32_t m,
                     uint32_t *picks, ac__failing_fn failing, const void *arg, uint64_t now);

#endif
