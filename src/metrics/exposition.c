/*
 * The Prometheus text exposition format (0.0.4).
 *
 * Families in registration order, series in creation order, so the text is
 * stable from one scrape to the next. Each histogram series is read once
 * (bucket by bucket) and everything it shows comes from that snapshot: the
 * cumulative buckets, +Inf and _count agree even while observations land.
 *
 * Numbers are printed in the "C" locale whatever the program's, with the
 * shortest digits that read back to the same double.
 */
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "metrics/metrics_internal.h"

/* A growable string; `failed` sticks after the first allocation failure. */
typedef struct text {
    char *buf;
    size_t len, cap;
    bool failed;
} text;

static bool reserve(text *t, size_t more)
{
    if (t->failed)
        return false;
    if (t->len + more + 1 <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *b = ac__realloc(t->buf, cap);
    if (!b) {
        t->failed = true;
        return false;
    }
    t->buf = b;
    t->cap = cap;
    return true;
}

static void put(text *t, const char *s, size_t n)
{
    if (!reserve(t, n))
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void putf(text *t, const char *fmt, ...) AC_PRINTF(2, 3);
static void putf(text *t, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        put(t, small, (size_t)n);
        return;
    }
    if (!reserve(t, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* Escape backslash and newline, and (in label values) double quotes. */
static void put_escaped(text *t, const char *s, bool quotes)
{
    for (const char *run = s;; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n"
                          : (quotes && *s == '"') ? "\\\""
                                                  : NULL;
        if (!esc && *s)
            continue;
        put(t, run, (size_t)(s - run));
        if (!*s)
            return;
        puts_(t, esc);
        run = s + 1;
    }
}

static void put_double(text *t, double v)
{
    if (isnan(v)) {
        puts_(t, "NaN");
        return;
    }
    if (isinf(v)) {
        puts_(t, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    puts_(t, buf);
}

/* {a="x",b="y"} — plus le="…" for a bucket (`le` NULL: none). Nothing at
 * all for a series without labels outside buckets. */
static void put_labels(text *t, const ac_metric_family *f, const ac__series *s, const double *le)
{
    if (f->nlabels == 0 && !le)
        return;
    puts_(t, "{");
    for (size_t i = 0; i < f->nlabels; i++) {
        putf(t, "%s%s=\"", i ? "," : "", f->label_names[i]);
        put_escaped(t, s->values[i], true);
        puts_(t, "\"");
    }
    if (le) {
        puts_(t, f->nlabels ? ",le=\"" : "le=\"");
        put_double(t, *le);
        puts_(t, "\"");
    }
    puts_(t, "}");
}

static void put_sample(text *t, const ac_metric_family *f, const char *suffix,
                       const ac__series *s, const double *le)
{
    puts_(t, f->name);
    puts_(t, suffix);
    put_labels(t, f, s, le);
    puts_(t, " ");
}

static void put_histogram(text *t, const ac_metric_family *f, const ac_histogram *h)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= h->nbounds; i++) {
        double le = i < h->nbounds ? h->bounds[i] : INFINITY;
        cumulative += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        put_sample(t, f, "_bucket", &h->s, &le);
        putf(t, "%" PRIu64 "\n", cumulative);
    }
    put_sample(t, f, "_sum", &h->s, NULL);
    put_double(t, ac_histogram_sum(h));
    puts_(t, "\n");
    put_sample(t, f, "_count", &h->s, NULL);
    putf(t, "%" PRIu64 "\n", cumulative);
}

static void put_series(text *t, const ac_metric_family *f, const ac__series *s)
{
    switch (f->kind) {
    case AC__METRIC_COUNTER:
        put_sample(t, f, "", s, NULL);
        putf(t, "%" PRIu64 "\n", ac__counter_read((const ac_counter *)(const void *)s));
        break;
    case AC__METRIC_GAUGE:
        put_sample(t, f, "", s, NULL);
        put_double(t, ac_gauge_value((const ac_gauge *)(const void *)s));
        puts_(t, "\n");
        break;
    case AC__METRIC_HISTOGRAM:
        put_histogram(t, f, (const ac_histogram *)(const void *)s);
        break;
    }
}

/* Call with the family lock held. */
static void put_family(text *t, const ac_metric_family *f)
{
    static const char *const types[] = {"", "counter", "gauge", "histogram"};
    if (!f->first)
        return;
    if (f->help) {
        putf(t, "# HELP %s ", f->name);
        put_escaped(t, f->help, false);
        puts_(t, "\n");
    }
    putf(t, "# TYPE %s %s\n", f->name, types[f->kind]);
    for (const ac__series *s = f->first; s; s = s->next)
        put_series(t, f, s);
}

char *ac__metrics_render(ac__metrics *reg)
{
    text t = {0};
    reserve(&t, 0); /* an empty registry still gives "" */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;
    pthread_mutex_lock(&reg->lock);
    for (ac_metric_family *f = reg->first; f; f = f->next) {
        pthread_mutex_lock(&f->lock);
        put_family(&t, f);
        pthread_mutex_unlock(&f->lock);
    }
    pthread_mutex_unlock(&reg->lock);
    if (c_locale) {
        uselocale(old);
        freelocale(c_locale);
    }
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
