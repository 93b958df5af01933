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
/* Arm lazily (timers.c, "Lazy arming"): as ac__timer_arm, but without the
 * lock when the real clock runs, the delay is long (a second or more) and
 * the timer's ops say whether it is still wanted (given_up); such a timer
 * that is given up is dropped through ops->discard, unfired, rather than
 * cancelled. Otherwise just ac__timer_arm. Any thread. */
void ac__timer_arm_lazy(ac__timers *t, ac__timer *timer, uint64_t delay_ms);
/* Cancel a timer armed by ac__timer_arm_lazy, once its given_up says yes:
 * true as ac__timer_cancel; false when it fires, has fired, or waits to
 * be dropped (then ops->fire or ops->discard runs for it). Any thread. */
bool ac__timer_cancel_lazy(ac__timers *t, ac__timer *timer);

/* For a worker about to park: claim the watch of the earliest deadline,
 * and get when (ac__now_ns) to wake to fire it itself, a margin before
 * the deadline; UINT64_MAX when nothing is armed, on a manual clock, once
 * the timers are stopped, or when another worker already watches as
 * early. While the claim stands, the timer thread leaves that deadline to
 * the watcher for a while. Lock-free, but for a claim of the deadline the
 * timer thread sleeps until, which signals it (once per deadline). */
uint64_t ac__timers_claim_watch(ac__timers *t, uint64_t now_ns);
/* Give up a claim (wake_ns as ac__timers_claim_watch returned it; UINT64_MAX
 * is no claim), once awake and done serving. Lock-free. */
void ac__timers_release_watch(ac__timers *t, uint64_t wake_ns);
/* Is a deadline at or before now_ns? Lock-free; may say yes for a timer
 * just cancelled. */
bool ac__timers_due_now(ac__timers *t, uint64_t now_ns);
/* On a worker that woke at the time ac__timers_claim_watch gave (woke_for_ns;
 * 0 when it did not sleep for it): spin to the deadline if it is near and
 * fire what is due, on this thread. True if anything fired. */
bool ac__timers_serve(ac__timers *t, uint64_t woke_for_ns);

#endif
