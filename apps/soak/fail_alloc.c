/*
 * Allocation-failure injection through the library's debug hook.
 *
 * Builds without NDEBUG compile a countdown into the library's allocation
 * wrappers (core/alloc.h defines AC__ALLOC_HOOK then): the n-th
 * allocation from the moment it is armed fails, once. To fail a fraction
 * f of all allocations, a thread re-arms it whenever the allocation count
 * has passed the armed point, with a geometric gap of mean 1/f drawn from
 * the run's seed. In builds without the hook, fail_alloc_available() is
 * false and the soak refuses --fail-alloc.
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

static void *armer_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, seed_, 100);
    long due = 0; /* the allocation count at which the armed failure falls */
    while (!atomic_load(&armer_stop)) {
        if (ac__alloc_count() >= due) {
            long n = gap(&rng);
            due = ac__alloc_count() + n;
            ac__alloc_fail_after(n);
            atomic_fetch_add(&g_stats.alloc_failures_armed, 1);
        }
        soak_sleep_us(200);
    }
    ac__alloc_fail_after(0);
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
