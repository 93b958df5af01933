/*
 * Allocation-failure injection through the library's debug hook.
 *
 * Builds without NDEBUG compile a countdown into the library's allocation
 * wrappers (core/alloc.h then defines AC__ALLOC_HOOK): the n-th
 * allocation after ac__alloc_fail_after(n) fails, once. To fail a
 * fraction f of all allocations, a thread arms it with a geometric gap of
 * mean 1/f, drawn from the run's seed, and arms it again once that many
 * allocations have passed. Where the hook also counts allocations
 * (ac__alloc_count_start/_stop, found by CMake: SOAK_ALLOC_COUNTS), the
 * thread re-arms when the count passes the armed point; otherwise it
 * re-arms every millisecond, which fails about one allocation in 1/f
 * while the library allocates faster than that.
 *
 * In builds without the hook, fail_alloc_available() is false and the
 * soak refuses --fail-alloc.
 */
#include <math.h>
#include <pthread.h>

#include "core/alloc.h"
#include "soak.h"

#ifdef AC__ALLOC_HOOK

static pthread_t armer;
static atomic_bool armer_stop;
static double fraction_;
static uint64_t seed_;

bool fail_alloc_available(void) { return true; }

static long gap(soak_rng *rng)
{
    double u = 1.0 - soak_rng_unit(rng); /* (0, 1] */
    double n = fraction_ >= 1 ? 1 : 1 + floor(log(u) / log1p(-fraction_));
    return n > 1e9 ? 1000000000L : (long)n;
}

#ifdef SOAK_ALLOC_COUNTS
static long counted;

/* Allocations since the armer started. The hook counts in windows; the
 * few allocations between one window and the next are not counted, which
 * only makes the gaps a little longer. */
static long allocations(void)
{
    counted += ac__alloc_count_stop();
    ac__alloc_count_start();
    return counted;
}

static bool due(long armed_at, long n) { return allocations() >= armed_at + n; }
static void counts_end(void) { (void)ac__alloc_count_stop(); }
#else
static long allocations(void) { return 0; }
static bool due(long armed_at, long n)
{
    (void)armed_at;
    (void)n;
    return true;
}
static void counts_end(void) {}
#endif

static void *armer_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, seed_, 100);
    long armed_at = allocations(), n = 0;
    while (!atomic_load(&armer_stop)) {
        if (due(armed_at, n)) {
            n = gap(&rng);
            armed_at = allocations();
            ac__alloc_fail_after(n);
            atomic_fetch_add(&g_stats.alloc_failures_armed, 1);
        }
        soak_sleep_us(1000);
    }
    ac__alloc_fail_after(0);
    counts_end();
    return NULL;
}

void fail_alloc_start(double fraction, uint64_t seed)
{
    fraction_ = fraction;
    seed_ = seed;
    pthread_create(&armer, NULL, armer_main, NULL);
}

void fail_alloc_stop(void)
{
    atomic_store(&armer_stop, true);
    pthread_join(armer, NULL);
}

#else

bool fail_alloc_available(void) { return false; }

void fail_alloc_start(double fraction, uint64_t seed)
{
    (void)fraction;
    (void)seed;
}

void fail_alloc_stop(void) {}

#endif
