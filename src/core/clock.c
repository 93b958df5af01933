/*
 * The monotonic clock. One function, apart from the scheduler that was its
 * first user, so that timers, dead-letter rate limits and asks can read
 * the time without depending on the scheduler.
 */
#include <time.h>

#include "core/clock.h"

uint64_t ac__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
