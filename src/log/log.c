/*
 * Leveled logging through a pluggable sink.
 *
 * Base layer: what a line needs (the system's name, its level and sink)
 * comes in an ac__log_target that the system owns; the core calls log,
 * never the other way round.
 *
 * Lines are formatted into a stack buffer and handed whole to the sink, so
 * concurrent lines never interleave. The default sink writes one fputs per
 * line to stderr (stdio locks the stream for the call).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "core/last_error.h"
#include "log/log_internal.h"

static const char *const level_names[] = {"default", "debug", "info", "warn", "error", "off"};

const char *ac_log_level_name(ac_log_level level)
{
    if ((int)level < 0 || level > AC_LOG_OFF)
        return "?";
    return level_names[level];
}

#define ACCEPTED_LEVELS "debug, info, warn, error or off"

/* The level a name stands for; false if none (nothing recorded). */
static bool level_of(const char *name, ac_log_level *out)
{
    for (int l = AC_LOG_DEBUG; l <= AC_LOG_OFF; l++) {
        if (strcasecmp(name, level_names[l]) == 0) {
            *out = (ac_log_level)l;
            return true;
        }
    }
    if (strcasecmp(name, "warning") == 0) {
        *out = AC_LOG_WARN;
        return true;
    }
    return false;
}

int ac_log_level_parse(const char *name, ac_log_level *out)
{
    ac__clear_status();
    if (!name || !out)
        return ac__fail(AC_EINVAL, "ac_log_level_parse: NULL argument");
    if (level_of(name, out))
        return AC_OK;
    return ac__fail(AC_EINVAL, "unknown log level \"%s\" (use " ACCEPTED_LEVELS ")", name);
}

ac_log_level ac__log_level_from_env(const char **unknown)
{
    const char *env = getenv("ACTORC_LOG_LEVEL");
    ac_log_level level;
    *unknown = NULL;
    if (env && *env && level_of(env, &level))
        return level;
    if (env && *env)
        *unknown = env;
    return AC_LOG_INFO;
}

void ac__log_unknown_level(const ac__log_target *t, const char *value)
{
    ac__log(t, AC_LOG_WARN, NULL,
            "ACTORC_LOG_LEVEL=\"%s\" is not a log level (use " ACCEPTED_LEVELS "); using info",
            value);
}

static void stderr_sink(const char *system_name, ac_log_level level, const char *path,
                        const char *text)
{
    struct timespec ts;
    struct tm tm;
    char line[1200];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [%s] %s%s%s\n",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             ts.tv_nsec / 1000000, ac_log_level_name(level), system_name, path ? path : "",
             path ? ": " : "", text);
    fputs(line, stderr);
}

bool ac__log_enabled(const ac__log_target *t, ac_log_level level)
{
    return level >= AC_LOG_DEBUG && level < AC_LOG_OFF && level >= t->level;
}

void ac__logv(const ac__log_target *t, ac_log_level level, const char *path, const char *fmt,
              va_list ap)
{
    char text[1024];
    if (!ac__log_enabled(t, level))
        return;
    vsnprintf(text, sizeof text, fmt, ap);
    if (t->sink)
        t->sink(t->sink_user, level, t->system_name, path, text);
    else
        stderr_sink(t->system_name, level, path, text);
}

void ac__log(const ac__log_target *t, ac_log_level level, const char *path, const char *fmt,
             ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac__logv(t, level, path, fmt, ap);
    va_end(ap);
}
