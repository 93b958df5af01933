/*
 * The runtime's own logging (log.c): lines through a system's sink, at
 * its level. Any thread. Logging reads the system's sink and level, so it
 * sits just above the system struct.
 */
#ifndef AC_LOG_LOG_INTERNAL_H
#define AC_LOG_LOG_INTERNAL_H

#include <stdarg.h>

#include "core/base.h"

void ac__log(ac_system *sys, ac_log_level level, const char *path, const char *fmt, ...)
    AC_PRINTF(4, 5);
void ac__logv(ac_system *sys, ac_log_level level, const char *path, const char *fmt,
              va_list ap);
/* ACTORC_LOG_LEVEL's level, or info; *unknown is the value when it names
 * no level (NULL otherwise). Records no error. */
ac_log_level ac__log_level_from_env(const char **unknown);
/* Warn, through the system's sink, that ACTORC_LOG_LEVEL was not understood. */
void ac__log_unknown_level(ac_system *sys, const char *value);

#endif
