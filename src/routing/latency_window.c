/*
 * The adaptive hedge delay: the nearest-rank percentile of the last `cap`
 * latencies, exact, recomputed every `every` samples (cap / 32, so a
 * window of 1,000 costs one selection over 1,000 values per 31 replies,
 * and small windows follow every sample).
 *
 * Recording is lock-free: a sample takes the next index (fetch_add on
 * `written`) and lands in the ring at that index modulo cap, overwriting
 * the oldest. The recomputation copies the ring, selects the rank
 * (quickselect, no sort) and publishes the clamped result in `delay_ns`.
 * It runs under a trylock: if another thread is recomputing, this sample
 * is picked up by a later one. Copying while others write can mix
 * neighbouring generations of a slot; the percentile of a window that
 * moves while it is read is as good as the window. Nothing is published
 * through these words but their own values, so relaxed order is enough.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "routing/latency_window.h"

ac_status ac__latency_window_init(ac__latency_window *w, uint32_t cap, uint32_t min_samples,
                                  double percentile, uint64_t initial_ns, uint64_t floor_ns,
                                  uint64_t ceiling_ns)
{
    ac_status st;
    w->cap = cap;
    w->min_samples = min_samples;
    w->every = cap / 32 > 1 ? cap / 32 : 1;
    w->percentile = percentile;
    w->floor_ns = floor_ns;
    w->ceiling_ns = ceiling_ns;
    atomic_init(&w->written, 0);
    atomic_init(&w->delay_ns, initial_ns);
    w->ring = ac__calloc(cap, sizeof *w->ring);
    if (!w->ring)
        goto fail_ring;
    w->scratch = ac__malloc(cap * sizeof *w->scratch);
    if (!w->scratch)
        goto fail_scratch;
    st = ac__mutex_init(&w->lock, "a latency window's lock");
    if (st != AC_OK)
        goto fail_lock;
    return AC_OK;
fail_lock:
    free(w->scratch);
    free(w->ring);
    return st;
fail_scratch:
    free(w->ring);
fail_ring:
    return ac__fail(AC_ENOMEM, "out of memory for a latency window of %u samples", cap);
}

void ac__latency_window_fini(ac__latency_window *w)
{
    pthread_mutex_destroy(&w->lock);
    free(w->ring);
    free(w->scratch);
}

static void swap(uint64_t *a, uint64_t *b)
{
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest (0-based) of v[0..n): quickselect with a three-way
 * partition around the middle element, so that a window of equal samples
 * (a steady routee, a manual clock) takes one pass, not n. */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k;
    while (lo < hi) {
        uint64_t pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t lt = lo, i = lo, gt = hi; /* [lo,lt) <, [lt,i) ==, (gt,hi] > */
        while (i <= gt) {
            if (v[i] < pivot)
                swap(&v[lt++], &v[i++]);
            else if (v[i] > pivot)
                swap(&v[i], &v[gt--]);
            else
                i++;
        }
        if (want < lt)
            hi = lt - 1;
        else if (want > gt)
            lo = gt + 1;
        else
            return pivot;
    }
    return v[want];
}

static void recompute(ac__latency_window *w, uint64_t written)
{
    size_t n = written < w->cap ? (size_t)written : w->cap;
    for (size_t i = 0; i < n; i++)
        w->scratch[i] = atomic_load_explicit(&w->ring[i], memory_order_relaxed);
    size_t rank = (size_t)ceil(w->percentile / 100.0 * (double)n); /* nearest rank, 1-based */
    uint64_t d = select_kth(w->scratch, n, rank < 1 ? 0 : rank - 1);
    if (d < w->floor_ns)
        d = w->floor_ns;
    if (d > w->ceiling_ns)
        d = w->ceiling_ns;
    atomic_store_explicit(&w->delay_ns, d, memory_order_relaxed);
}

void ac__latency_window_record(ac__latency_window *w, uint64_t ns)
{
    uint64_t i = atomic_fetch_add_explicit(&w->written, 1, memory_order_relaxed);
    atomic_store_explicit(&w->ring[i % w->cap], ns, memory_order_relaxed);
    uint64_t n = i + 1;
    if (n < w->min_samples || (n - w->min_samples) % w->every != 0)
        return;
    if (pthread_mutex_trylock(&w->lock) != 0)
        return;
    recompute(w, atomic_load_explicit(&w->written, memory_order_relaxed));
    pthread_mutex_unlock(&w->lock);
}
