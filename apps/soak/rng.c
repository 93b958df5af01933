/*
 * Random streams and clocks.
 *
 * Every random choice of the soak comes from a soak_rng, one per thread,
 * seeded from the run's seed and a constant naming the thread's role
 * (chaos, driver, caller 2, ...). splitmix64 spreads the seed into
 * xoshiro256**'s state, so nearby seeds give unrelated streams. The same
 * seed therefore replays the same choices on every thread; how those
 * choices interleave is up to the scheduler.
 */
#include <time.h>

#include "soak.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void soak_rng_init(soak_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ull);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t soak_rng_next(soak_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t soak_rng_below(soak_rng *r, uint32_t n)
{
    /* Lemire's multiply-shift; the bias is below 2^-32, far under noise. */
    return (uint32_t)(((soak_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

double soak_rng_unit(soak_rng *r) { return (double)(soak_rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t soak_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void soak_sleep_us(uint64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}
