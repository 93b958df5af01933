/*
 * What the runtime calls into metrics (metrics/runtime.c, registry.c):
 * the registry handle, the runtime's own counters, scatter/gather
 * outcomes and teardown. Core, ask and routing include this; it is the
 * one place where they reach into metrics.
 */
#ifndef AC_METRICS_METRICS_HOOKS_H
#define AC_METRICS_METRICS_HOOKS_H

#include "core/system_internal.h"

typedef struct ac__metrics ac__metrics;

/* The runtime's own counters (actorc_..._total). */
typedef enum ac__metric_event {
    AC__METRIC_ACTORS_STARTED,
    AC__METRIC_ACTORS_STOPPED,
    AC__METRIC_MESSAGES,
    AC__METRIC_DEAD_LETTERS,
    AC__METRIC_ASK_TIMEOUTS,
    AC__METRIC_RESTARTS,
    AC__METRIC_EVENTS
} ac__metric_event;

/* How a scatter/gather message was resolved (the `outcome` label). */
typedef enum ac__sg_outcome {
    AC__SG_FIRST,
    AC__SG_TIMEOUT,
    AC__SG_ALL_FAILED,
    AC__SG_STOPPED,
    AC__SG_NO_REPLY_TARGET,
    AC__SG_OUTCOMES
} ac__sg_outcome;

/* The registry, or NULL while metrics are off: the one check on every
 * instrumented path. Acquire pairs with the release CAS in
 * ac_metrics_enable, so the runtime's series are seen initialised. */
static inline ac__metrics *ac__metrics_of(const ac_system *sys)
{
    return atomic_load_explicit(&((ac_system *)sys)->metrics, memory_order_acquire);
}

/* Count n events; cheap enough for every turn (no contended line). */
void ac__metrics_count(ac__metrics *m, ac__metric_event event, uint64_t n);
/* Count one outcome and, unless start_ns is 0, observe now - start_ns
 * (ac__now_ns) as the scatter's latency. */
void ac__metrics_scatter_resolved(ac__metrics *m, ac__sg_outcome outcome, uint64_t start_ns);
/* Stop the endpoint and free the registry (teardown, threads joined). */
void ac__metrics_destroy(ac_system *sys);

#define AC__METRIC_COUNT(sys, event, n)                                       \
    do {                                                                      \
        ac__metrics *ac__m_ = ac__metrics_of(sys);                            \
        if (AC__UNLIKELY(ac__m_ != NULL))                                     \
            ac__metrics_count(ac__m_, (event), (n));                          \
    } while (0)

#endif
