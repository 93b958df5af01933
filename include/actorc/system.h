/*
 * Actor systems.
 *
 * A system owns worker threads, the actors spawned in it and every byte
 * they use. ac_system_terminate stops every actor (children before
 * parents), joins every thread and frees everything, including refs the
 * program never released: after it returns, no handle of the system may be
 * used.
 */
#ifndef ACTORC_SYSTEM_H
#define ACTORC_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/export.h"
#include "actorc/log.h"
#include "actorc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_system ac_system;
typedef struct ac_ref ac_ref;

/* Options for ac_system_create. Zero means "default" for every field, so
 * `ac_system_options o = {0}` (or NULL) gives the defaults. */
typedef struct ac_system_options {
    int workers;        /* worker threads; default: online CPUs; 1..1024 */
    int batch;          /* messages one actor handles per turn; default 64; 1..1000000 */
    ac_log_level log_level;  /* default: ACTORC_LOG_LEVEL, else info */
    ac_log_sink_fn log_sink; /* default: stderr */
    void *log_sink_user;
    /* Dead letters: at most this many log lines per second (default 10;
     * negative: none). Counting and subscribers see every one. */
    int dead_letter_log_per_s;
    /* Time advances only through ac_clock_advance (see timer.h). */
    bool manual_clock;
    /* Turn the metrics registry on from the start (see metrics.h). */
    bool metrics;
} ac_system_options;

/* Create and start a system. `name` is 1..64 characters of [A-Za-z0-9_-].
 * NULL with ac_last_error on a bad name or option. Outside actors only. */
AC_API ac_system *ac_system_create(const char *name, const ac_system_options *options);

/* Stop every actor (children first), join every thread, free everything.
 * AC_EINACTOR when called from inside an actor, AC_ENOMEM when out of
 * memory (the system is untouched either way), AC_EINVAL for NULL.
 * Outside actors only. */
AC_API ac_status ac_system_terminate(ac_system *system);

/* The name given at creation. Any thread. */
AC_API const char *ac_system_name(const ac_system *system);
/* Number of worker threads. Any thread. */
AC_API int ac_system_workers(const ac_system *system);

/* Write one log line through the system's sink, as the system (no path).
 * Any thread. */
AC_API void ac_system_log(ac_system *system, ac_log_level level, const char *fmt, ...)
    AC_PRINTF(3, 4);
/* Is `level` enabled for this system? Any thread. */
AC_API bool ac_system_log_enabled(const ac_system *system, ac_log_level level);

/* ---- dead letters ------------------------------------------------------ */

/* Messages sent to stopped actors (or left in their mailboxes) so far.
 * Terminated notices to watchers that have stopped too are dropped, not
 * counted. Any thread. */
AC_API uint64_t ac_dead_letter_count(const ac_system *system);

/* Subscribe an actor to dead letters: it receives one ac_dead_letter
 * message (see actor.h) per dead letter. Borrows `subscriber` (retains it).
 * Any thread. */
AC_API ac_status ac_dead_letters_subscribe(ac_system *system, ac_ref *subscriber);
AC_API ac_status ac_dead_letters_unsubscribe(ac_system *system, ac_ref *subscriber);

#ifdef __cplusplus
}
#endif
#endif
