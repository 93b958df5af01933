/*
 * Logging.
 *
 * Leveled lines (debug, info, warn, error) written to a pluggable sink,
 * stderr by default. A line written from an actor names the actor's path.
 * The level comes from ac_system_options.log_level or, when that is left at
 * AC_LOG_DEFAULT, from the ACTORC_LOG_LEVEL environment variable
 * (debug|info|warn|error|off), else info.
 */
#ifndef ACTORC_LOG_H
#define ACTORC_LOG_H

#include <stdarg.h>

#include "actorc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ac_log_level {
    AC_LOG_DEFAULT = 0, /* options only: take ACTORC_LOG_LEVEL, else info */
    AC_LOG_DEBUG,
    AC_LOG_INFO,
    AC_LOG_WARN,
    AC_LOG_ERROR,
    AC_LOG_OFF
} ac_log_level;

/* A sink receives whole lines. `path` is the actor path the line is about,
 * or NULL for system-level lines; `text` is the formatted message without a
 * trailing newline. Called on the thread that logs, possibly many at once:
 * a sink must be thread-safe and must not block for long. */
typedef void (*ac_log_sink_fn)(void *user, ac_log_level level,
                               const char *system_name, const char *path,
                               const char *text);

/* "debug", "info", "warn", "error", "off". Any thread. */
AC_API const char *ac_log_level_name(ac_log_level level);
/* Parse a level name (case-insensitive); AC_EINVAL for anything else. */
struct ac_system;
AC_API int ac_log_level_parse(const char *name, ac_log_level *out);

#ifdef __cplusplus
}
#endif
#endif
