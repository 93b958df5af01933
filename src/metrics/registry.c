/*
 * The metrics registry: families, their names, labels and buckets
 * checked, registration, and reading by name. Series and their updates
 * are series.c's.
 *
 * A family keeps its series twice: in a hash table for lookup and in a
 * list in creation order for the exposition. The table's bucket heads are
 * atomics; a series is fully built, linked in front of its bucket's chain
 * and only then published with a release store, and series are never
 * removed before the system is torn down. So a lookup walks the chain
 * without a lock (its acquire load of the head pairs with that store), and
 * only creating a series takes the family lock, which also keeps the
 * cardinality count and the creation-order list.
 *
 * Updates are relaxed atomics: a metric orders nothing, and a scrape only
 * needs each value whole. Doubles (gauges, histogram sums) live as their
 * bit patterns and change by CAS loops. A histogram keeps per-bucket
 * counts, not cumulative ones; the exposition sums them, and derives
 * _count from the same snapshot, so the +Inf bucket always equals _count.
 *
 * Sharded counters (the runtime's own, counted on every turn) give each
 * thread its own cache line, picked by a per-thread index, so that workers
 * counting their turns never share a contended line.
 *
 * Reading by name (ac_metrics_read) finds the family under the registry
 * lock and the series by the same lock-free lookup as an update, and reads
 * with the very functions the exposition uses, so the two never disagree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "metrics/metrics_internal.h"

static const double default_buckets[] = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

/* ---- names and options ------------------------------------------------ */

static bool name_char(char c, bool first, bool colon_ok)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':'))
        return true;
    return !first && c >= '0' && c <= '9';
}

static bool valid_name(const char *s, bool colon_ok)
{
    if (!s || !*s)
        return false;
    for (const char *c = s; *c; c++)
        if (!name_char(*c, c == s, colon_ok))
            return false;
    return true;
}

static ac_status check_labels(const char *fn, const char *name, ac__metric_kind kind,
                              const ac_metric_options *o)
{
    if (o->label_count > AC_METRICS_MAX_LABELS || (o->label_count && !o->label_names))
        return ac__fail(AC_EINVAL, "%s(\"%s\"): label_count = %zu; use 0..%d with label_names",
                        fn, name, o->label_count, AC_METRICS_MAX_LABELS);
    for (size_t i = 0; i < o->label_count; i++) {
        const char *l = o->label_names[i];
        if (!valid_name(l, false) || strncmp(l, "__", 2) == 0)
            return ac__fail(AC_EINVAL,
                            "%s(\"%s\"): label name \"%s\" is not [A-Za-z_][A-Za-z0-9_]* or "
                            "starts with \"__\"",
                            fn, name, l ? l : "(null)");
        if (kind == AC__METRIC_HISTOGRAM && strcmp(l, "le") == 0)
            return ac__fail(AC_EINVAL, "%s(\"%s\"): label name \"le\" is reserved for buckets",
                            fn, name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(l, o->label_names[j]) == 0)
                return ac__fail(AC_EINVAL, "%s(\"%s\"): label name \"%s\" given twice", fn, name,
                                l);
    }
    return AC_OK;
}

/* The count of bounds given, checked before any is read: the array is only
 * as long as the caller says, so a wild count must not index it. Room for
 * AC_METRICS_MAX_BUCKETS finite bounds and a trailing +Inf. */
static ac_status check_bucket_count(const char *fn, const char *name,
                                    const ac_metric_options *o)
{
    if (!o->buckets && o->bucket_count)
        return ac__fail(AC_EINVAL, "%s(\"%s\"): bucket_count = %zu but buckets is NULL", fn,
                        name, o->bucket_count);
    if (o->bucket_count > AC_METRICS_MAX_BUCKETS + 1)
        return ac__fail(AC_EINVAL,
                        "%s(\"%s\"): bucket_count = %zu; a histogram has at most "
                        "AC_METRICS_MAX_BUCKETS (%d) finite bounds",
                        fn, name, o->bucket_count, AC_METRICS_MAX_BUCKETS);
    return AC_OK;
}

/* The bounds to use (a trailing +Inf dropped), or NULL with the error. */
static const double *check_buckets(const char *fn, const char *name, const ac_metric_options *o,
                                   size_t *n_out)
{
    if (check_bucket_count(fn, name, o) != AC_OK)
        return NULL;
    if (!o->buckets) {
        *n_out = sizeof default_buckets / sizeof default_buckets[0];
        return default_buckets;
    }
    size_t n = o->bucket_count;
    if (n > 0 && isinf(o->buckets[n - 1]) && o->buckets[n - 1] > 0)
        n--;
    if (n == 0 || n > AC_METRICS_MAX_BUCKETS)
        return ac__fail_null(AC_EINVAL,
                             "%s(\"%s\"): bucket_count = %zu; use 1..AC_METRICS_MAX_BUCKETS (%d) "
                             "finite bounds",
                             fn, name, o->bucket_count, AC_METRICS_MAX_BUCKETS);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(o->buckets[i]))
            return ac__fail_null(AC_EINVAL, "%s(\"%s\"): bucket %zu is not finite", fn, name, i);
        if (i > 0 && !(o->buckets[i] > o->buckets[i - 1]))
            return ac__fail_null(AC_EINVAL,
                                 "%s(\"%s\"): buckets must be strictly increasing (bucket %zu = "
                                 "%g after %g)",
                                 fn, name, i, o->buckets[i], o->buckets[i - 1]);
    }
    *n_out = n;
    return o->buckets;
}

/* ---- families --------------------------------------------------------- */

static bool same_definition(const ac_metric_family *f, ac__metric_kind kind,
                            const ac_metric_options *o, const double *bounds, size_t nbounds)
{
    if (f->kind != kind || f->nlabels != o->label_count)
        return false;
    for (size_t i = 0; i < f->nlabels; i++)
        if (strcmp(f->label_names[i], o->label_names[i]) != 0)
            return false;
    if (kind != AC__METRIC_HISTOGRAM)
        return true;
    return f->nbounds == nbounds && memcmp(f->bounds, bounds, nbounds * sizeof *bounds) == 0;
}

static bool is_suffixed(const char *name, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0)
        return false;
    const char *rest = name + n;
    return strcmp(rest, "_bucket") == 0 || strcmp(rest, "_sum") == 0 || strcmp(rest, "_count") == 0;
}

/* Would `name` of `kind` share a sample name with family `f`? */
static bool clashes(const ac_metric_family *f, const char *name, ac__metric_kind kind)
{
    return (f->kind == AC__METRIC_HISTOGRAM && is_suffixed(name, f->name)) ||
           (kind == AC__METRIC_HISTOGRAM && is_suffixed(f->name, name));
}

static size_t table_size_for(size_t max_series)
{
    size_t n = 8;
    while (n < max_series / 4 && n < 4096)
        n <<= 1;
    return n;
}

static char *dup_or_null(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = ac__strdup(s);
    *failed = *failed || !d;
    return d;
}

static ac_metric_family *family_new(ac__metrics *reg, ac__metric_kind kind, const char *name,
                                    const ac_metric_options *o, const double *bounds,
                                    size_t nbounds)
{
    ac_metric_family *f = ac__calloc(1, sizeof *f);
    if (!f)
        return NULL;
    /* First, so that ac__family_destroy may destroy it on every failure. */
    if (ac__mutex_init(&f->lock, "a metric family's lock") != AC_OK) {
        free(f);
        return NULL;
    }
    bool failed = false;
    f->reg = reg;
    f->kind = kind;
    f->name = dup_or_null(name, &failed);
    f->help = dup_or_null(o->help, &failed);
    f->nlabels = o->label_count;
    f->label_names = ac__calloc(o->label_count + 1, sizeof *f->label_names);
    failed = failed || !f->label_names;
    for (size_t i = 0; !failed && i < o->label_count; i++)
        f->label_names[i] = dup_or_null(o->label_names[i], &failed);
    if (kind == AC__METRIC_HISTOGRAM && !failed) {
        f->nbounds = nbounds;
        f->bounds = ac__malloc(nbounds * sizeof *f->bounds);
        failed = !f->bounds;
        if (f->bounds)
            memcpy(f->bounds, bounds, nbounds * sizeof *bounds);
    }
    f->max_series = o->max_series ? o->max_series : AC_METRICS_DEFAULT_MAX_SERIES;
    size_t tsize = table_size_for(f->max_series);
    f->table_mask = tsize - 1;
    f->table = failed ? NULL : ac__calloc(tsize, sizeof *f->table);
    if (!f->table) {
        ac__family_destroy(f);
        return NULL;
    }
    return f;
}

void ac__family_destroy(ac_metric_family *f)
{
    if (!f)
        return;
    for (ac__series *s = f->first, *next; s; s = next) {
        next = s->next;
        ac__series_free(f, s);
    }
    for (size_t i = 0; f->label_names && i < f->nlabels; i++)
        free(f->label_names[i]);
    free(f->label_names);
    free(f->bounds);
    free(f->table);
    free(f->name);
    free(f->help);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* Call with the registry lock held. The existing family named `name`, or
 * NULL; *clash is set when the name is taken by a different definition. */
static ac_metric_family *find_family(ac__metrics *reg, const char *name, ac__metric_kind kind,
                                     bool *clash)
{
    for (ac_metric_family *f = reg->first; f; f = f->next) {
        if (strcmp(f->name, name) == 0)
            return f;
        if (clashes(f, name, kind)) {
            *clash = true;
            return f;
        }
    }
    return NULL;
}

/* ---- registration ----------------------------------------------------- */

ac_metric_family *ac__family_register(ac__metrics *reg, ac__metric_kind kind, const char *name,
                                      const ac_metric_options *o, bool sharded)
{
    static const char *const fns[] = {"", "ac_metrics_counter", "ac_metrics_gauge",
                                      "ac_metrics_histogram"};
    const char *fn = fns[kind];
    ac_metric_options none = {0};
    if (!o)
        o = &none;
    if (!valid_name(name, true))
        return ac__fail_null(AC_EINVAL, "%s: name \"%s\" is not [A-Za-z_:][A-Za-z0-9_:]*", fn,
                             name ? name : "(null)");
    size_t nbounds = 0;
    const double *bounds = NULL;
    if (check_labels(fn, name, kind, o) != AC_OK)
        return NULL;
    if (kind == AC__METRIC_HISTOGRAM && !(bounds = check_buckets(fn, name, o, &nbounds)))
        return NULL;
    pthread_mutex_lock(&reg->lock);
    bool clash = false;
    ac_metric_family *f = find_family(reg, name, kind, &clash);
    if (f && !clash && same_definition(f, kind, o, bounds, nbounds)) {
        pthread_mutex_unlock(&reg->lock);
        return f;
    }
    if (f) {
        pthread_mutex_unlock(&reg->lock);
        return ac__fail_null(AC_EEXIST, "%s: \"%s\" clashes with the %s \"%s\" registered before",
                             fn, name, ac__metric_kind_name(f->kind), f->name);
    }
    f = family_new(reg, kind, name, o, bounds, nbounds);
    if (f) {
        f->sharded = sharded;
        if (reg->last)
            reg->last->next = f;
        else
            reg->first = f;
        reg->last = f;
    }
    pthread_mutex_unlock(&reg->lock);
    if (!f)
        return ac__fail_null(AC_ENOMEM, "%s(\"%s\"): out of memory", fn, name);
    /* An unlabelled family is exposed from the start. */
    if (f->nlabels == 0 && !ac__series_get(f, NULL))
        return NULL;
    return f;
}

/* The registry of `system` into *out, or the error (NULL system, metrics
 * off) naming `fn` and `name`. */
static ac_status registry_get(ac_system *system, const char *fn, const char *name,
                              ac__metrics **out)
{
    *out = NULL;
    if (!system)
        return ac__fail(AC_EINVAL, "%s: system is NULL", fn);
    *out = ac__metrics_of(system);
    if (!*out)
        return ac__fail(AC_EINVAL,
                        "%s(\"%s\"): metrics are off for system \"%s\" (set "
                        "ac_system_options.metrics or call ac_metrics_enable)",
                        fn, name ? name : "(null)", system->name);
    return AC_OK;
}

static ac__metrics *registry_of(ac_system *system, const char *fn, const char *name)
{
    ac__metrics *reg;
    registry_get(system, fn, name, &reg);
    return reg;
}

ac_metric_family *ac_metrics_counter(ac_system *system, const char *name,
                                     const ac_metric_options *options)
{
    ac__clear_status();
    ac__metrics *reg = registry_of(system, "ac_metrics_counter", name);
    return reg ? ac__family_register(reg, AC__METRIC_COUNTER, name, options, false) : NULL;
}

ac_metric_family *ac_metrics_gauge(ac_system *system, const char *name,
                                   const ac_metric_options *options)
{
    ac__clear_status();
    ac__metrics *reg = registry_of(system, "ac_metrics_gauge", name);
    return reg ? ac__family_register(reg, AC__METRIC_GAUGE, name, options, false) : NULL;
}

ac_metric_family *ac_metrics_histogram(ac_system *system, const char *name,
                                       const ac_metric_options *options)
{
    ac__clear_status();
    ac__metrics *reg = registry_of(system, "ac_metrics_histogram", name);
    return reg ? ac__family_register(reg, AC__METRIC_HISTOGRAM, name, options, false) : NULL;
}

/* ---- reading by name -------------------------------------------------- */

_Static_assert((int)AC_METRIC_COUNTER == (int)AC__METRIC_COUNTER &&
                   (int)AC_METRIC_GAUGE == (int)AC__METRIC_GAUGE &&
                   (int)AC_METRIC_HISTOGRAM == (int)AC__METRIC_HISTOGRAM,
               "the public kinds mirror the internal ones");

/* The family called `name`, or NULL. Families are never removed before
 * teardown, so the pointer stays good after the lock is let go. */
static ac_metric_family *family_named(ac__metrics *reg, const char *name)
{
    pthread_mutex_lock(&reg->lock);
    ac_metric_family *f = reg->first;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    pthread_mutex_unlock(&reg->lock);
    return f;
}

/* "a", "b" (as many as fit in cap): a family's label names, to explain a
 * wrong count. */
static const char *label_list(const ac_metric_family *f, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->nlabels && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s\"%s\"", i ? ", " : "", f->label_names[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return f->nlabels ? buf : "none";
}

static ac_status check_read_labels(const ac_metric_family *f, const char *const *values,
                                   size_t n)
{
    static const char fn[] = "ac_metrics_read";
    char names[160];
    if (n != f->nlabels)
        return ac__fail(AC_EINVAL, "%s(\"%s\"): %zu label values given for the %zu label(s) "
                        "of this %s: %s", fn, f->name, n, f->nlabels,
                        ac__metric_kind_name(f->kind),
                        label_list(f, names, sizeof names));
    for (size_t i = 0; i < n; i++)
        if (!values[i])
            return ac__fail(AC_EINVAL, "%s(\"%s\"): the value of label \"%s\" is NULL", fn,
                            f->name, f->label_names[i]);
    return AC_OK;
}

static void read_series(const ac_metric_family *f, const ac__series *s, ac_metric_value *out)
{
    out->kind = (ac_metric_kind)f->kind;
    switch (f->kind) {
    case AC__METRIC_COUNTER:
        out->count = ac__counter_read((const ac_counter *)(const void *)s);
        out->value = (double)out->count;
        break;
    case AC__METRIC_GAUGE:
        out->value = ac_gauge_value((const ac_gauge *)(const void *)s);
        break;
    case AC__METRIC_HISTOGRAM:
        out->count = ac_histogram_count((const ac_histogram *)(const void *)s);
        out->sum = ac_histogram_sum((const ac_histogram *)(const void *)s);
        break;
    }
}

static ac_status read_checked(ac_system *system, const char *name,
                              const char *const *label_values, size_t n, ac_metric_value *out)
{
    static const char fn[] = "ac_metrics_read";
    if (!out || !name)
        return ac__fail(AC_EINVAL, "%s: %s is NULL", fn, out ? "name" : "out");
    if (n > 0 && !label_values)
        return ac__fail(AC_EINVAL, "%s(\"%s\"): %zu label values, but label_values is NULL", fn,
                        name, n);
    ac__metrics *reg;
    ac_status st = registry_get(system, fn, name, &reg);
    if (st != AC_OK)
        return st;
    ac_metric_family *f = family_named(reg, name);
    if (!f)
        return ac__fail(AC_ENOTFOUND, "%s: no metric family is called \"%s\"", fn, name);
    st = check_read_labels(f, label_values, n);
    if (st != AC_OK)
        return st;
    const ac__series *s = ac__series_find(f, label_values);
    if (!s)
        return ac__fail(AC_ENOTFOUND, "%s(\"%s\"): no series with these %zu label values", fn,
                        name, n);
    read_series(f, s, out);
    return AC_OK;
}

ac_status ac_metrics_read(ac_system *system, const char *name, const char *const *label_values,
                          size_t n, ac_metric_value *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    return read_checked(system, name, label_values, n, out);
}
