/*
 * A family's series: found without a lock, created under the family lock
 * up to the family's cap, and updated with relaxed atomics (see
 * registry.c for the why). Doubles live as their bit patterns; sharded
 * counters give each thread its own cache line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "metrics/metrics_internal.h"

/* ---- doubles as bits -------------------------------------------------- */

static uint64_t double_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

double ac__bits_to_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static void atomic_add_double(_Atomic uint64_t *bits, double delta)
{
    uint64_t old = atomic_load_explicit(bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(bits, &old,
                                                  double_to_bits(ac__bits_to_double(old) + delta),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

void ac__series_free(const ac_metric_family *f, ac__series *s)
{
    if (f->kind == AC__METRIC_COUNTER)
        free(((ac_counter *)(void *)s)->shards);
    free(s);
}


/* ---- series ----------------------------------------------------------- */

static uint64_t hash_values(const char *const *values, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the values and their NULs */
    for (size_t i = 0; i < n; i++) {
        const unsigned char *c = (const unsigned char *)values[i];
        do {
            h ^= *c;
            h *= 1099511628211ull;
        } while (*c++);
    }
    return h;
}

static bool same_values(const ac__series *s, const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s->values[i], values[i]) != 0)
            return false;
    return true;
}

/* Lock-free. The acquire load pairs with the release store in
 * publish_series: a series found is seen whole, and so is its chain. */
static ac__series *lookup(ac_metric_family *f, uint64_t hash, const char *const *values)
{
    ac__series *s = atomic_load_explicit(&f->table[hash & f->table_mask], memory_order_acquire);
    for (; s; s = s->hash_next)
        if (s->hash == hash && same_values(s, values, f->nlabels))
            return s;
    return NULL;
}

ac__series *ac__series_find(ac_metric_family *f, const char *const *values)
{
    return lookup(f, hash_values(values, f->nlabels), values);
}

static size_t series_size(const ac_metric_family *f)
{
    switch (f->kind) {
    case AC__METRIC_COUNTER:
        return sizeof(ac_counter);
    case AC__METRIC_GAUGE:
        return sizeof(ac_gauge);
    default:
        return sizeof(ac_histogram) + (f->nbounds + 1) * sizeof(_Atomic uint64_t);
    }
}

/* One allocation: the kind's struct, the value pointers, the strings. */
static ac__series *series_new(ac_metric_family *f, uint64_t hash, const char *const *values)
{
    size_t head = series_size(f), text = 0;
    head = (head + sizeof(char *) - 1) / sizeof(char *) * sizeof(char *);
    for (size_t i = 0; i < f->nlabels; i++)
        text += strlen(values[i]) + 1;
    ac__series *s = ac__calloc(1, head + f->nlabels * sizeof(char *) + text);
    if (!s)
        return NULL;
    s->hash = hash;
    s->values = (const char **)(void *)((char *)s + head);
    char *p = (char *)(s->values + f->nlabels);
    for (size_t i = 0; i < f->nlabels; i++) {
        size_t len = strlen(values[i]) + 1;
        memcpy(p, values[i], len);
        s->values[i] = p;
        p += len;
    }
    if (f->kind == AC__METRIC_HISTOGRAM) {
        ac_histogram *h = (ac_histogram *)(void *)s;
        h->bounds = f->bounds;
        h->nbounds = f->nbounds;
    } else if (f->kind == AC__METRIC_COUNTER && f->sharded) {
        ac_counter *c = (ac_counter *)(void *)s;
        c->shards = ac__aligned_alloc(AC__CACHELINE, AC__METRIC_SHARDS * sizeof(ac__shard));
        if (!c->shards) {
            free(s);
            return NULL;
        }
        memset(c->shards, 0, AC__METRIC_SHARDS * sizeof(ac__shard));
    }
    return s;
}

/* Call with the family lock held. */
static void publish_series(ac_metric_family *f, ac__series *s)
{
    _Atomic(ac__series *) *bucket = &f->table[s->hash & f->table_mask];
    s->hash_next = atomic_load_explicit(bucket, memory_order_relaxed); /* writers hold the lock */
    if (f->last)
        f->last->next = s;
    else
        f->first = s;
    f->last = s;
    f->nseries++;
    /* Release: the series' fields before it becomes reachable (pairs with
     * the acquire load in lookup). */
    atomic_store_explicit(bucket, s, memory_order_release);
}

static void warn_cap(ac_metric_family *f, const char *const *values)
{
    char first[160] = "";
    if (f->nlabels > 0)
        snprintf(first, sizeof first, " (the first dropped has %s=\"%.60s\"%s)", f->label_names[0],
                 values[0], f->nlabels > 1 ? ", ..." : "");
    ac__log(&f->reg->sys->log, AC_LOG_WARN, NULL,
            "metrics: %s has reached its limit of %zu series; new series are dropped%s", f->name,
            f->max_series, first);
}

/* Find or create; NULL with the error when at the cap or out of memory. */
ac__series *ac__series_get(ac_metric_family *f, const char *const *values)
{
    uint64_t hash = hash_values(values, f->nlabels);
    ac__series *s = lookup(f, hash, values);
    if (AC__LIKELY(s != NULL))
        return s;
    bool full = false, warn = false;
    pthread_mutex_lock(&f->lock);
    s = lookup(f, hash, values);
    if (!s && f->nseries >= f->max_series) {
        full = true;
        warn = !f->warned;
        f->warned = true;
    } else if (!s && (s = series_new(f, hash, values))) {
        publish_series(f, s);
    }
    pthread_mutex_unlock(&f->lock);
    if (warn) /* outside the lock: a sink may call back into metrics */
        warn_cap(f, values);
    if (full)
        return ac__fail_null(AC_EINVAL, "metrics: %s is at its limit of %zu series; series dropped",
                             f->name, f->max_series);
    return s ? s : ac__fail_null(AC_ENOMEM, "metrics: %s: out of memory for a series", f->name);
}

static ac__series *series_checked(ac_metric_family *f, const char *const *values,
                                  ac__metric_kind kind, const char *fn)
{
    if (!f)
        return ac__fail_null(AC_EINVAL, "%s: family is NULL", fn);
    if (f->kind != kind)
        return ac__fail_null(AC_ETYPE, "%s: %s is a %s, not a %s", fn, f->name,
                             ac__metric_kind_name(f->kind), ac__metric_kind_name(kind));
    if (f->nlabels > 0 && !values)
        return ac__fail_null(AC_EINVAL, "%s: %s needs %zu label values; got NULL", fn, f->name,
                             f->nlabels);
    for (size_t i = 0; i < f->nlabels; i++)
        if (!values[i])
            return ac__fail_null(AC_EINVAL, "%s: %s: the value of label \"%s\" is NULL", fn,
                                 f->name, f->label_names[i]);
    return ac__series_get(f, values);
}

ac_counter *ac_counter_series(ac_metric_family *family, const char *const *label_values)
{
    ac__clear_status();
    return (ac_counter *)(void *)series_checked(family, label_values, AC__METRIC_COUNTER,
                                                "ac_counter_series");
}

ac_gauge *ac_gauge_series(ac_metric_family *family, const char *const *label_values)
{
    ac__clear_status();
    return (ac_gauge *)(void *)series_checked(family, label_values, AC__METRIC_GAUGE,
                                              "ac_gauge_series");
}

ac_histogram *ac_histogram_series(ac_metric_family *family, const char *const *label_values)
{
    ac__clear_status();
    return (ac_histogram *)(void *)series_checked(family, label_values, AC__METRIC_HISTOGRAM,
                                                  "ac_histogram_series");
}

/* ---- updates ---------------------------------------------------------- */

/* A small per-thread index into the shards; threads take them in turn. */
static atomic_uint next_shard;
static _Thread_local unsigned my_shard = UINT32_MAX;

static unsigned shard_index(void)
{
    if (AC__UNLIKELY(my_shard == UINT32_MAX))
        my_shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
                   AC__METRIC_SHARDS;
    return my_shard;
}

void ac_counter_add(ac_counter *c, uint64_t n)
{
    if (!c)
        return;
    _Atomic uint64_t *cell = c->shards ? &c->shards[shard_index()].value : &c->value;
    atomic_fetch_add_explicit(cell, n, memory_order_relaxed);
}

void ac_counter_inc(ac_counter *c) { ac_counter_add(c, 1); }

uint64_t ac__counter_read(const ac_counter *c)
{
    uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
    for (size_t i = 0; c->shards && i < AC__METRIC_SHARDS; i++)
        v += atomic_load_explicit(&c->shards[i].value, memory_order_relaxed);
    return v;
}

uint64_t ac_counter_value(const ac_counter *c) { return c ? ac__counter_read(c) : 0; }

void ac_gauge_set(ac_gauge *g, double value)
{
    if (g)
        atomic_store_explicit(&g->bits, double_to_bits(value), memory_order_relaxed);
}

void ac_gauge_add(ac_gauge *g, double delta)
{
    if (g)
        atomic_add_double(&g->bits, delta);
}

void ac_gauge_sub(ac_gauge *g, double delta) { ac_gauge_add(g, -delta); }

double ac_gauge_value(const ac_gauge *g)
{
    return g ? ac__bits_to_double(atomic_load_explicit(&g->bits, memory_order_relaxed)) : 0.0;
}

static size_t bucket_of(const ac_histogram *h, double v)
{
    size_t lo = 0, hi = h->nbounds; /* first bound >= v; nbounds (+Inf) if none, or NaN */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v <= h->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return isnan(v) ? h->nbounds : lo;
}

void ac_histogram_observe(ac_histogram *h, double value)
{
    if (!h)
        return;
    atomic_fetch_add_explicit(&h->counts[bucket_of(h, value)], 1, memory_order_relaxed);
    atomic_add_double(&h->sum_bits, value);
}

uint64_t ac_histogram_count(const ac_histogram *h)
{
    uint64_t n = 0;
    for (size_t i = 0; h && i <= h->nbounds; i++)
        n += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
    return n;
}

double ac_histogram_sum(const ac_histogram *h)
{
    return h ? ac__bits_to_double(atomic_load_explicit(&h->sum_bits, memory_order_relaxed)) : 0.0;
}
