/*
 * The report: a table of percentiles, failures and work; what each hedged
 * router's tail costs beside scatter/gather's; a terminal histogram; and
 * the latency distribution of every strategy as an SVG chart, percentile
 * on a "nines" axis (50, 90, 99, 99.9 …) against latency on a log axis —
 * the tail is where strategies differ.
 *
 * Every figure of latency counts every request, a failed one at the time
 * its error came (a timeout at its deadline), as a latency objective
 * counts it: a strategy that times out a third of its requests has a p99
 * at its deadline, not the p99 of the requests it happened to answer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hedge.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Requests answered, with a reply or an error: latency_us's length. */
static size_t answered(const run_result *r)
{
    return r->ok + r->timeouts + r->errors;
}

static size_t failed(const run_result *r)
{
    return r->timeouts + r->errors;
}

static void sort_once(const run_result *r)
{
    /* Sorting in place is harmless: the order of samples carries nothing. */
    qsort(r->latency_us, answered(r), sizeof *r->latency_us, cmp_i64);
}

int64_t percentile_us(const run_result *r, double p)
{
    size_t n = answered(r);
    if (n == 0)
        return -1;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return r->latency_us[rank - 1];
}

static void fmt_ms(char *buf, size_t cap, int64_t us)
{
    if (us < 0)
        snprintf(buf, cap, "-");
    else if (us < 10000)
        snprintf(buf, cap, "%.2fms", us / 1000.0);
    else
        snprintf(buf, cap, "%.1fms", us / 1000.0);
}

void report_table(FILE *out, const run_result *runs, size_t n)
{
    static const double ps[] = {50, 90, 99, 99.9, 100};
    fprintf(out, "%-20s %9s %9s %9s %9s %9s %9s %9s %7s %10s\n", "strategy", "p50", "p90", "p99",
            "p99.9", "max", "req/s", "timeouts", "errors", "calls/req");
    for (size_t i = 0; i < n; i++) {
        const run_result *r = &runs[i];
        sort_once(r);
        fprintf(out, "%-20s", r->name);
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
            char b[32];
            fmt_ms(b, sizeof b, percentile_us(r, ps[k]));
            fprintf(out, " %9s", b);
        }
        fprintf(out, " %9.0f %9zu %7zu %10.2f\n", (double)r->ok / r->seconds, r->timeouts,
                r->errors, r->calls_per_request);
    }
    fprintf(out, "p50 .. max count every request, a failed one at the time its error came (a\n"
                 "  timeout at its deadline), as a latency objective would; req/s: successes a\n"
                 "  second; calls/req: requests the replicas handled per request\n");
}

/* The run called `name` (with the same "+cb" suffix as `like`), or NULL. */
static const run_result *find_run(const run_result *runs, size_t n, const char *name,
                                  const char *like)
{
    bool cb = strstr(like, "+cb") != NULL;
    for (size_t i = 0; i < n; i++) {
        const char *r = runs[i].name;
        size_t len = strlen(name);
        if (strncmp(r, name, len) == 0 && strcmp(r + len, cb ? "+cb" : "") == 0)
            return &runs[i];
    }
    return NULL;
}

void report_price(FILE *out, const run_result *runs, size_t n)
{
    bool header = false;
    for (size_t i = 0; i < n; i++) {
        const run_result *h = &runs[i];
        const run_result *sg = find_run(runs, n, "scatter-gather", h->name);
        if (strncmp(h->name, "hedged-", 7) != 0 || !sg || !answered(h) || !answered(sg))
            continue;
        if (!header)
            fprintf(out, "\nthe tail and its price, beside scatter-gather:\n");
        header = true;
        char hp[32], sp[32];
        int64_t h99 = percentile_us(h, 99), s99 = percentile_us(sg, 99);
        fmt_ms(hp, sizeof hp, h99);
        fmt_ms(sp, sizeof sp, s99);
        char name[40];
        snprintf(name, sizeof name, "%s:", h->name);
        fprintf(out, "  %-21s p99 %s = %.2fx scatter-gather's %s, for %.2f calls/req (not %.2f)\n",
                name, hp, s99 > 0 ? (double)h99 / (double)s99 : 0.0, sp,
                h->calls_per_request, sg->calls_per_request);
    }
}

static const double bucket_ms[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, INFINITY};
#define NBUCKETS (sizeof bucket_ms / sizeof bucket_ms[0])

static void count_buckets(const int64_t *us, size_t n, size_t counts[NBUCKETS])
{
    for (size_t k = 0; k < n; k++) {
        double ms = us[k] / 1000.0;
        size_t b = 0;
        while (ms >= bucket_ms[b])
            b++;
        counts[b]++;
    }
}

static void bars(FILE *out, char c, double pct)
{
    for (int k = 0; k < (int)(pct / 2); k++)
        fputc(c, out);
}

/* One strategy's buckets: # for its successes, x for its failures. */
static void histogram_of(FILE *out, const run_result *r)
{
    size_t all[NBUCKETS] = {0}, fails[NBUCKETS] = {0};
    count_buckets(r->latency_us, answered(r), all);
    count_buckets(r->failed_us, failed(r), fails);
    fprintf(out, "\n%s\n", r->name);
    double lo = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        char range[32];
        if (isinf(bucket_ms[b]))
            snprintf(range, sizeof range, ">= %g ms", lo);
        else
            snprintf(range, sizeof range, "%g-%g ms", lo, bucket_ms[b]);
        lo = bucket_ms[b];
        if (!all[b])
            continue;
        double ok = 100.0 * (double)(all[b] - fails[b]) / (double)r->requests;
        double bad = 100.0 * (double)fails[b] / (double)r->requests;
        fprintf(out, "  %12s %6.2f%% ", range, ok + bad);
        bars(out, '#', ok);
        bars(out, 'x', bad);
        if ((int)(ok / 2) + (int)(bad / 2) == 0)
            fputc('~', out);
        fputc('\n', out);
    }
    if (failed(r))
        fprintf(out, "  %12s %6.2f%% (the x above)\n", "failed",
                100.0 * (double)failed(r) / (double)r->requests);
}

void report_histogram(FILE *out, const run_result *runs, size_t n)
{
    fprintf(out, "share of requests by latency, a failed one at the time its error came\n"
                 "(each # is 2%% answered, each x 2%% failed; ~ less than 2%%)\n");
    for (size_t i = 0; i < n; i++)
        histogram_of(out, &runs[i]);
}

/* ---- SVG -------------------------------------------------------------- */

/* Twelve: each strategy, and again with breakers (--breakers). */
static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                     "#bcbd22", "#7f7f7f", "#393b79", "#ad494a"};
#define NCOLORS (sizeof colors / sizeof colors[0])

/* The legend sits right of the plot, in MR pixels: a swatch, then the
 * name (13 px) and "p99 …, … calls/req" (11 px), at most LEGEND_CHARS
 * characters, which a sans-serif face sets in well under 7 px each. */
#define W 1000
#define H 600
#define ML 80
#define MR 270
#define MT 70
#define MB 60
#define LEGEND_CHARS 30
#define LEGEND_X (W - MR + 46)
_Static_assert(W - LEGEND_X >= LEGEND_CHARS * 7, "the legend's lines fit in the picture");

static double nines(double p) /* p in (0,1): 0.5 -> 0.3, 0.9 -> 1, 0.99 -> 2 */
{
    return -log10(1.0 - p);
}

static void axes(FILE *f, double xmin, double xmax, double ymax)
{
    fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", ML, MT,
            W - ML - MR, H - MT - MB);
    for (double ms = 0.1; ms <= xmax * 1.0001; ms *= 10) {
        for (int k = 1; k <= 9; k++) {
            double v = ms * k;
            if (v < xmin || v > xmax)
                continue;
            double x = ML + (log10(v) - log10(xmin)) / (log10(xmax) - log10(xmin)) * (W - ML - MR);
            fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/>\n", x, MT, x,
                    H - MB);
            if (k == 1 || k == 2 || k == 5)
                fprintf(f, "<text x='%.1f' y='%d' font-size='12' text-anchor='middle'>%g</text>\n",
                        x, H - MB + 18, v);
        }
    }
    static const double marks[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        if (nines(marks[i]) > ymax + 1e-9)
            break;
        double y = H - MB - nines(marks[i]) / ymax * (H - MT - MB);
        fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>\n", ML, y, W - MR, y);
        fprintf(f, "<text x='%d' y='%.1f' font-size='12' text-anchor='end'>p%g</text>\n", ML - 6,
                y + 4, marks[i] * 100);
    }
    fprintf(f, "<text x='%d' y='%d' font-size='13' text-anchor='middle'>latency (ms, log scale)</text>\n",
            (ML + W - MR) / 2, H - 18);
}

int report_svg(const char *path, const run_result *runs, size_t n, const char *subtitle)
{
    double xmin = 1e9, xmax = 0;
    size_t most = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = answered(&runs[i]);
        if (!k)
            continue;
        xmin = fmin(xmin, percentile_us(&runs[i], 1) / 1000.0); /* the body, not outliers */
        xmax = fmax(xmax, runs[i].latency_us[k - 1] / 1000.0);
        most = k > most ? k : most;
    }
    if (most == 0)
        return -1;
    xmin = pow(10, floor(log10(fmax(xmin, 0.05))));
    xmax = pow(10, ceil(log10(fmax(xmax, xmin * 10))));
    double ymax = fmin(4, ceil(nines(1.0 - 1.0 / (double)most) * 2) / 2);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
               "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
            W, H);
    fprintf(f, "<text x='%d' y='28' font-size='18'>Latency by strategy: hedged requests cut the "
               "tail</text>\n<text x='%d' y='50' font-size='12' fill='#555'>%s</text>\n",
            ML, ML, subtitle);
    fprintf(f, "<text x='%d' y='64' font-size='11' fill='#555'>Every request counts, a failed one "
               "at the time its error came (a timeout at its deadline).</text>\n",
            ML);
    axes(f, xmin, xmax, ymax);
    /* 44 px per strategy, closer when there are many: all stay inside */
    int legend_step = (H - MT - 40) / (int)n < 44 ? (H - MT - 40) / (int)n : 44;
    for (size_t i = 0; i < n; i++) {
        const run_result *r = &runs[i];
        const char *color = colors[i % NCOLORS];
        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' points='", color);
        size_t samples = answered(r), step = samples > 4000 ? samples / 4000 : 1;
        for (size_t k = 0; k < samples; k += step) {
            double p = (double)(k + 1) / (double)(r->requests + 1);
            double x = ML + (log10(fmax(r->latency_us[k] / 1000.0, xmin)) - log10(xmin)) /
                                (log10(xmax) - log10(xmin)) * (W - ML - MR);
            double y = H - MB - fmin(nines(p), ymax) / ymax * (H - MT - MB);
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fprintf(f, "'/>\n");
        int ly = MT + 20 + (int)i * legend_step;
        char p99[32];
        fmt_ms(p99, sizeof p99, percentile_us(r, 99));
        fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='3'/>\n",
                W - MR + 15, ly, W - MR + 40, ly, color);
        fprintf(f, "<text x='%d' y='%d' font-size='13'>%.*s</text>\n", LEGEND_X, ly + 4,
                LEGEND_CHARS, r->name);
        fprintf(f, "<text x='%d' y='%d' font-size='11' fill='#555'>p99 %s, %.2f calls/req</text>\n",
                LEGEND_X, ly + 20, p99, r->calls_per_request);
    }
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : -1;
}
