/*
 * The model's own bound. Requests are drawn from the replicas' latency
 * model with no runtime in between: scatter/gather answers with the
 * fastest of all replicas; the hedge sends attempt k (k = 0, 1, ...) at
 * k times the delay unless a reply came first, the delay being the chosen
 * percentile of one call's time (where the adaptive delay settles). What
 * the demo measures can approach these figures, not pass them: they say
 * how much of a gap is the runtime's and how much is the model's.
 */
#include <math.h>
#include <stdlib.h>

#include "hedge.h"

#define IDEAL_REQUESTS 200000

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t nearest_rank(const int64_t *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    return sorted[rank < 1 ? 0 : rank - 1];
}

/* The hedge at `delay` over the requests drawn in `draws` (each request
 * uses o->replicas of them, in order): its p99 into *p99, calls/req. */
static double hedge_at(const int64_t *draws, int replicas, int64_t delay, int64_t *scratch,
                       int64_t *p99)
{
    size_t calls = 0;
    for (size_t i = 0; i < IDEAL_REQUESTS; i++) {
        const int64_t *d = draws + i * (size_t)replicas;
        int64_t best = INT64_MAX;
        for (int k = 0; k < replicas; k++) {
            int64_t sent = (int64_t)k * delay;
            if (best <= sent)
                break;
            calls++;
            if (sent + d[k] < best)
                best = sent + d[k];
        }
        scratch[i] = best;
    }
    qsort(scratch, IDEAL_REQUESTS, sizeof *scratch, cmp_i64);
    *p99 = nearest_rank(scratch, IDEAL_REQUESTS, 99);
    return (double)calls / IDEAL_REQUESTS;
}

void report_ideal(FILE *out, const replica_model *m, const options *o)
{
    if (m->error_pct > 0 || m->dead_replica > 0 || o->replicas < 1)
        return;
    size_t r = (size_t)o->replicas;
    int64_t *one = malloc(IDEAL_REQUESTS * sizeof *one);
    int64_t *draws = malloc(IDEAL_REQUESTS * r * sizeof *draws);
    int64_t *scratch = malloc(IDEAL_REQUESTS * sizeof *scratch);
    if (!one || !draws || !scratch)
        goto done;
    uint64_t rng = m->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (size_t i = 0; i < IDEAL_REQUESTS; i++)
        one[i] = replica_draw_us(&rng, m);
    qsort(one, IDEAL_REQUESTS, sizeof *one, cmp_i64);
    for (size_t i = 0; i < IDEAL_REQUESTS * r; i++)
        draws[i] = replica_draw_us(&rng, m);
    /* scatter/gather: the fastest of the request's draws */
    for (size_t i = 0; i < IDEAL_REQUESTS; i++) {
        int64_t best = INT64_MAX;
        for (size_t k = 0; k < r; k++)
            if (draws[i * r + k] < best)
                best = draws[i * r + k];
        scratch[i] = best;
    }
    qsort(scratch, IDEAL_REQUESTS, sizeof *scratch, cmp_i64);
    int64_t s99 = nearest_rank(scratch, IDEAL_REQUESTS, 99), h99;
    int64_t delay = nearest_rank(one, IDEAL_REQUESTS, o->hedge_percentile);
    double calls = hedge_at(draws, o->replicas, delay, scratch, &h99);
    fprintf(out,
            "the model's own bound (no runtime cost): scatter-gather p99 %.2fms; a hedge at "
            "p%g (%.2fms) p99 %.2fms = %.2fx, for %.2f calls/req\n",
            s99 / 1000.0, o->hedge_percentile, delay / 1000.0, h99 / 1000.0,
            s99 > 0 ? (double)h99 / (double)s99 : 0.0, calls);
    /* The latest percentile whose hedge stays within 1.5x: what that
     * tail would cost on this model. */
    for (int p = 99; p >= 1; p--) {
        delay = nearest_rank(one, IDEAL_REQUESTS, p);
        calls = hedge_at(draws, o->replicas, delay, scratch, &h99);
        if (s99 > 0 && (double)h99 <= 1.5 * (double)s99) {
            fprintf(out, "  within 1.5x of scatter-gather on this model: a hedge at p%d (%.2fms), "
                         "p99 %.2fms, for %.2f calls/req\n",
                    p, delay / 1000.0, h99 / 1000.0, calls);
            break;
        }
    }
done:
    free(one);
    free(draws);
    free(scratch);
}
