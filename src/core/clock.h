/*
 * The monotonic clock. Base layer: depends on nothing internal. This is
 * real time; the system's manual clock lives with the timers.
 *
 * Inline, so that the scheduler, timers, dead-letter rate limits and asks
 * read the time without depending on one another, and so that actorc's
 * optional libraries (which see none of libactorc's internal symbols)
 * read the same clock rather than a copy of their own. CLOCK_MONOTONIC
 * never jumps, so a deadline computed from it holds however the wall
 * clock is set.
 */
#ifndef AC_CORE_CLOCK_H
#define AC_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on CLOCK_MONOTONIC. Any thread. */
static inline uint64_t ac__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ns as a timespec: an absolute time on ac__now_ns's clock, for
 * pthread_cond_timedwait on a condition made on CLOCK_MONOTONIC, or a
 * relative timeout. */
static inline struct timespec ac__timespec_of_ns(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                             .tv_nsec = (long)(ns % 1000000000ull)};
}

#endif
