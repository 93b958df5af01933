/*
 * The runtime's own logging (log.c): lines through a sink, at a level.
 * Any thread. Base layer: a system hands log what it needs as an
 * ac__log_target, so log knows nothing of the system.
 */
#ifndef AC_LOG_LOG_INTERNAL_H
#define AC_LOG_LOG_INTERNAL_H

#include <stdarg.h>

#include "core/base.h"

/* Where a system's lines go. Its owner fills it in before any thread logs
 * through it, and it does not change afterwards. */
typedef struct ac__log_target {
    const char *system_name;
    ac_log_level level; /* lines below it are dropped */
    ac_log_sink_fn sink; /* NULL: one line per call on stderr */
    void *sink_user;
} ac__log_target;

void ac__log(const ac__log_target *t, ac_log_level level, const char *path, const char *fmt,
             ...) AC_PRINTF(4, 5);
void ac__logv(const ac__log_target *t, ac_log_level level, const char *path, const char *fmt,
              va_list ap);
/* Would a line at `level` be written? */
bool ac__log_enabled(const ac__log_target *t, ac_log_level level);
/* ACTORC_LOG_LEVEL's level, or info; *unknown is the value when it names
 * no level (NULL otherwise). Records no error. */
ac_log_level ac__log_level_from_env(const char **unknown);
/* Warn, through the target's sink, that ACTORC_LOG_LEVEL was not understood. */
void ac__log_unknown_level(const ac__log_target *t, const char *value);

#endif
