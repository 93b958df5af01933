/*
 * The adaptive hedge delay (latency_window.c): a percentile of the last
 * W latencies a router observed, within a floor and a ceiling, and a
 * fixed value until enough have been seen.
 */
#ifndef AC_ROUTING_LATENCY_WINDOW_H
#define AC_ROUTING_LATENCY_WINDOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "actorc/status.h"

typedef struct ac__latency_window {
    /* Set at creation. */
    uint32_t cap;         /* samples remembered */
    uint32_t min_samples; /* before which the delay is `initial_ns` */
    uint32_t every;       /* samples between two recomputations */
    double percentile;    /* (0, 100) */
    uint64_t floor_ns, ceiling_ns;
    /* Written by the threads that record. */
    atomic_uint_fast64_t written; /* samples recorded so far */
    _Atomic uint64_t *ring;       /* cap samples, ns */
    /* The recomputation: whoever holds the lock (a trylock: a recorder
     * that finds it taken leaves the work to the holder's next turn). */
    pthread_mutex_t lock;
    uint64_t *scratch; /* cap, under lock */
    /* Read by every hedge. */
    _Atomic uint64_t delay_ns;
} ac__latency_window;

/* AC_ENOMEM (recorded) or AC_OK. */
ac_status ac__latency_window_init(ac__latency_window *w, uint32_t cap, uint32_t min_samples,
                                  double percentile, uint64_t initial_ns, uint64_t floor_ns,
                                  uint64_t ceiling_ns);
void ac__latency_window_fini(ac__latency_window *w);
/* One observed latency. Any thread. */
void ac__latency_window_record(ac__latency_window *w, uint64_t ns);
/* The delay now. Any thread. */
static inline uint64_t ac__latency_window_delay(ac__latency_window *w)
{
    return atomic_load_explicit(&w->delay_ns, memory_order_relaxed);
}

#endif
