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
/* The same in ns: never early, late by at most a tick (1 us) plus the
 * wake-up of the thread that fires it (a watching worker's, spun out to
 * the deadline, or the timer thread's). Any thread. */
void ac__timer_arm_ns(ac__timers *t, ac__timer *timer, uint64_t delay_ns);
/* Re-arm a timer that just fired, interval_ns after its last deadline. */
void ac__timer_rearm(ac__timers *t, ac__timer *timer, uint64_t interval_ns);
/* True if it was armed and now is not (fire will not run). Any thread. */
bool ac__timer_cancel(ac__timers *t, ac__timer *timer);

/* For a worker about to park: when (ac__now_ns) to wake to fire the next
 * timer itself, a margin before its deadline; UINT64_MAX when nothing is
 * armed, on a manual clock, or once the timers are stopped. Lock-free. */
uint64_t ac__timers_watch_ns(ac__timers *t);
/* Is a deadline at or before now_ns? Lock-free; may say yes for a timer
 * just cancelled. */
bool ac__timers_due_now(ac__timers *t, uint64_t now_ns);
/* On a worker that woke at the time ac__timers_watch_ns gave (woke_for_ns;
 * 0 when it did not sleep for it): spin to the deadline if it is near and
 * fire what is due, on this thread. True if anything fired. */
bool ac__timers_serve(ac__timers *t, uint64_t woke_for_ns);

#endif
