/*
 * Shared by the files of the metrics subsystem. Nothing here is public.
 */
#ifndef AC_METRICS_INTERNAL_H
#define AC_METRICS_INTERNAL_H

#include "actorc/metrics.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/sync.h"
#include "log/log_internal.h"

typedef struct ac__metrics ac__metrics;

typedef enum ac__metric_kind {
    AC__METRIC_COUNTER = 1,
    AC__METRIC_GAUGE,
    AC__METRIC_HISTOGRAM
} ac__metric_kind;

/* What every series starts with. `hash_next` and `values` are written
 * before the series is published (release store into the family's table)
 * and never change after; `next` (creation order) is written and read
 * under the family lock. */
typedef struct ac__series {
    struct ac__series *hash_next;
    struct ac__series *next;
    uint64_t hash;
    const char **values; /* family->nlabels strings, in the same allocation */
} ac__series;

/* Per-thread cells of a sharded counter: each thread adds to its own
 * cache line, a scrape sums them. */
#define AC__METRIC_SHARDS 16
typedef struct ac__shard {
    _Alignas(AC__CACHELINE) _Atomic uint64_t value;
} ac__shard;

struct ac_counter {
    ac__series s;
    _Atomic uint64_t value;
    ac__shard *shards; /* NULL, or AC__METRIC_SHARDS cells (runtime counters) */
};

/* Doubles are kept as their bit patterns in 64-bit atomics. */
struct ac_gauge {
    ac__series s;
    _Atomic uint64_t bits;
};

struct ac_histogram {
    ac__series s;
    const double *bounds; /* the family's */
    size_t nbounds;
    _Atomic uint64_t sum_bits;
    _Atomic uint64_t counts[]; /* nbounds + 1 (the last is +Inf); not cumulative */
};

struct ac_metric_family {
    /* Immutable once registered. */
    ac__metrics *reg;
    ac__metric_kind kind;
    char *name, *help;
    char **label_names;
    size_t nlabels;
    double *bounds; /* histograms */
    size_t nbounds;
    size_t max_series;
    bool sharded;
    size_t table_mask;
    /* Lock-free lookup: bucket heads, published with release stores. */
    _Atomic(ac__series *) *table;
    /* Under `lock`: series creation and the creation-order list. */
    pthread_mutex_t lock;
    size_t nseries;
    bool warned;
    ac__series *first, *last;
    /* Registration order; under the registry lock. */
    struct ac_metric_family *next;
};

/* The server attached with ac_metrics_endpoint_attach (endpoint.c). */
typedef struct ac__endpoint {
    void *server; /* NULL when none is attached */
    int port;
    ac_metrics_endpoint_stop_fn *stop;
} ac__endpoint;

/* Lock order: the registry lock, then a family lock. */
struct ac__metrics {
    ac_system *sys;
    ac__hooks hooks; /* installed on sys; ctx is this registry */
    pthread_mutex_t lock; /* the family list and `endpoint` */
    ac_metric_family *first, *last;
    ac__endpoint endpoint;
    /* The runtime's own series, created with the registry. */
    ac_counter *events[AC__EVENTS];
};

/* runtime.c: the system's registry, or NULL while metrics are off. Any
 * thread. */
ac__metrics *ac__metrics_of(const ac_system *sys);

static inline const char *ac__metric_kind_name(ac__metric_kind kind)
{
    return kind == AC__METRIC_COUNTER ? "counter" : kind == AC__METRIC_GAUGE ? "gauge" : "histogram";
}

/* registry.c */
ac_metric_family *ac__family_register(ac__metrics *reg, ac__metric_kind kind, const char *name,
                                      const ac_metric_options *options, bool sharded);
void ac__family_destroy(ac_metric_family *f);

/* series.c. Find or create a series (values: f->nlabels strings); NULL
 * with the error when at the family's cap or out of memory. Any thread. */
ac__series *ac__series_get(ac_metric_family *f, const char *const *values);
/* The series with these values, or NULL; never creates. Lock-free. */
ac__series *ac__series_find(ac_metric_family *f, const char *const *values);
/* Free a series (teardown). */
void ac__series_free(const ac_metric_family *f, ac__series *s);
uint64_t ac__counter_read(const ac_counter *c);
double ac__bits_to_double(uint64_t bits);

/* exposition.c: the text of every family (NULL when out of memory). Takes
 * the registry lock. */
char *ac__metrics_render(ac__metrics *reg);

/* endpoint.c: stop the attached endpoint, if any. Call without the
 * registry lock. */
void ac__endpoint_shutdown(ac__metrics *reg);

#endif
