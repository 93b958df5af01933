/*
 * What routing calls into metrics (metrics/runtime.c): the registry
 * handle and scatter/gather outcomes. The core reports through its own
 * hooks (core/hooks.h) instead.
 */
#ifndef AC_METRICS_METRICS_HOOKS_H
#define AC_METRICS_METRICS_HOOKS_H

#include "core/system_internal.h"

typedef struct ac__metrics ac__metrics;

/* How a scatter/gather message was resolved (the `outcome` label). */
typedef enum ac__sg_outcome {
    AC__SG_FIRST,
    AC__SG_TIMEOUT,
    AC__SG_ALL_FAILED,
    AC__SG_STOPPED,
    AC__SG_NO_REPLY_TARGET,
    AC__SG_OUTCOMES
} ac__sg_outcome;

/* The system's registry, or NULL while metrics are off. Any thread. */
ac__metrics *ac__metrics_of(const ac_system *sys);

/* Count one outcome and, unless start_ns is 0, observe now - start_ns
 * (ac__now_ns) as the scatter's latency. */
void ac__metrics_scatter_resolved(ac__metrics *m, ac__sg_outcome outcome, uint64_t start_ns);

#endif
