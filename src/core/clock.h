/*
 * The monotonic clock (clock.c). Base layer: depends on nothing internal.
 * This is real time; the system's manual clock lives with the timers.
 */
#ifndef AC_CORE_CLOCK_H
#define AC_CORE_CLOCK_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC. Any thread. */
uint64_t ac__now_ns(void);

#endif
