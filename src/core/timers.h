/*
 * A system's timers (timers.c): a timing wheel (timer_wheel.h) served by
 * a timer thread, or by ac_clock_advance under the manual clock.
 */
#ifndef AC_CORE_TIMERS_H
#define AC_CORE_TIMERS_H

#include "core/base.h"
#include "core/timer_wheel.h"

typedef struct ac__timers ac__timers;

ac__timers *ac__timers_create(ac_system *sys, bool manual);
/* Stop the timer thread (no more firing); armed timers stay armed. */
void ac__timers_stop(ac__timers *t);
/* Discard what is still armed and free. */
void ac__timers_destroy(ac__timers *t);
/* Arm `timer` to fire after delay_ms (>= 1 tick). Any thread. */
void ac__timer_arm(ac__timers *t, ac__timer *timer, uint64_t delay_ms);
/* The same in ns: never early, late by at most a tick (1/64 ms) plus the
 * timer thread's wake-up. Any thread. */
void ac__timer_arm_ns(ac__timers *t, ac__timer *timer, uint64_t delay_ns);
/* Re-arm a timer that just fired, interval_ns after its last deadline. */
void ac__timer_rearm(ac__timers *t, ac__timer *timer, uint64_t interval_ns);
/* True if it was armed and now is not (fire will not run). Any thread. */
bool ac__timer_cancel(ac__timers *t, ac__timer *timer);

#endif
