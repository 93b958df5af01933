/*
 * Status codes and the per-thread last error.
 *
 * Every failing call records a status and a message naming what was wrong;
 * the message lives in a fixed thread-local buffer, so recording an error
 * never allocates and never fails. Public calls clear the status on entry
 * (core/last_error.h says which and how); the library never reads it back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/base.h"
#include "core/last_error.h"

_Thread_local ac_status ac__last_status __attribute__((tls_model("initial-exec")));
static _Thread_local char last_message[512];

const char *ac_strerror(ac_status status)
{
    switch (status) {
#define AC__STATUS_TEXT(name, text)                                           \
    case name:                                                                \
        return text;
        AC_STATUS_MAP(AC__STATUS_TEXT)
#undef AC__STATUS_TEXT
    }
    return "unknown status";
}

const char *ac_status_name(ac_status status)
{
    switch (status) {
#define AC__STATUS_NAME(name, text)                                           \
    case name:                                                                \
        return #name;
        AC_STATUS_MAP(AC__STATUS_NAME)
#undef AC__STATUS_NAME
    }
    return "AC_UNKNOWN";
}

ac_status ac_last_status(void) { return ac__last_status; }

/* A cleared status hides the message it left behind (see last_error.h). */
const char *ac_last_error(void) { return ac__last_status == AC_OK ? "" : last_message; }

void ac_clear_error(void)
{
    ac__last_status = AC_OK;
    last_message[0] = '\0';
}

static void record(ac_status status, const char *fmt, va_list ap)
{
    ac__last_status = status;
    vsnprintf(last_message, sizeof last_message, fmt, ap);
}

ac_status ac__fail(ac_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt, ap);
    va_end(ap);
    return status;
}

ac_status ac_set_error(ac_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt ? fmt : "", ap);
    va_end(ap);
    return status;
}

void *ac__fail_null(ac_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt, ap);
    va_end(ap);
    return NULL;
}

void ac__oom_abort(const char *what)
{
    fprintf(stderr, "actorc: out of memory: %s\n", what);
    abort();
}

void ac__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "actorc: internal invariant violated: %s (%s:%d)\n", expr, file, line);
    abort();
}
