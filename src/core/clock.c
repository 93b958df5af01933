/*
 * The monotonic clock, in a file of its own so that the scheduler, timers,
 * dead-letter rate limits and asks read the time without depending on one
 * another. CLOCK_MONOTONIC never jumps, so a deadline computed from it
 * holds however the wall clock is set.
 */
#include <time.h>

#include "core/clock.h"

uint64_t ac__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
