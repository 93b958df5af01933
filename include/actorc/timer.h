/*
 * Timers and the clock.
 *
 * Every system has a clock, a hierarchical timing wheel with ticks of
 * 1 us driven by the monotonic clock, and a timer thread
 * that sleeps until the next deadline (it does not tick while nothing is
 * armed). Scheduling and cancelling are O(1). A timer never fires early.
 * A worker that parks while a timer is armed sleeps until just before the
 * earliest deadline and spins the rest of the way, then fires it on its
 * own thread, so a timer armed from an actor fires within a tick and a
 * few microseconds of its deadline on an idle machine (tens of
 * microseconds at p99): sub-millisecond delays (ac_schedule_once_us) mean
 * what they say. One armed from outside while every worker sleeps is
 * fired by the timer thread, a kernel wake-up (tens of microseconds) late.
 *
 * With ac_system_options.manual_clock set, time stands still until
 * ac_clock_advance moves it; due timers then fire on the advancing thread,
 * before it returns. Tests use this to check timeouts exactly, without
 * sleeping.
 */
#ifndef ACTORC_TIMER_H
#define ACTORC_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/export.h"
#include "actorc/msg.h"
#include "actorc/status.h"
#include "actorc/system.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_cancellable ac_cancellable;

/* Deliver `msg` (consumed) to `target` (borrowed) after delay_ms, with
 * `sender` (borrowed, may be NULL). Returns a handle owned by the caller
 * (release it with ac_cancellable_release; releasing does not cancel), or
 * NULL with ac_last_error. Any thread. */
AC_API ac_cancellable *ac_schedule_once(ac_ref *target, int64_t delay_ms, ac_msg *msg,
                                        ac_ref *sender);
/* As ac_schedule_once, after delay_us microseconds (a manual clock moves
 * in whole ms: there it fires at the first ms at or after the delay). */
AC_API ac_cancellable *ac_schedule_once_us(ac_ref *target, int64_t delay_us, ac_msg *msg,
                                           ac_ref *sender);
/* Deliver `msg` first after initial_ms, then every interval_ms (>= 1)
 * until cancelled or the target stops. The message is shared, not copied. */
AC_API ac_cancellable *ac_schedule_repeat(ac_ref *target, int64_t initial_ms,
                                          int64_t interval_ms, ac_msg *msg, ac_ref *sender);
/* Stop future deliveries. True if this call cancelled it (false if it had
 * already fired for the last time or was cancelled). Any thread. */
AC_API bool ac_cancel(ac_cancellable *c);
AC_API void ac_cancellable_release(ac_cancellable *c);

/* Milliseconds on this system's clock since it was created. Any thread. */
AC_API int64_t ac_clock_now_ms(const ac_system *system);
/* The clock's end (about 285,000 years): ac_clock_now_ms never exceeds
 * it. */
#define AC_CLOCK_MAX_MS (INT64_MAX / 1024)
/* Manual clock only: move time forward by ms (>= 0) and fire what is due,
 * on this thread. AC_EINVAL on a real clock, and for an advance that would
 * take the clock past AC_CLOCK_MAX_MS (the clock then stays where it was).
 * The cost is linear in the timers that fall due, not in the ms passed.
 * Outside actors only. */
AC_API ac_status ac_clock_advance(ac_system *system, int64_t ms);
/* Timers currently armed (asks, schedules) in this system. Any thread. */
AC_API size_t ac_timers_armed(const ac_system *system);

#ifdef __cplusplus
}
#endif
#endif
