/*
 * Status codes and the per-thread last error.
 *
 * Every function that can fail returns an ac_status (AC_OK is 0) or, when it
 * returns a handle, NULL (or false, or a documented value). A failing call
 * also records, for the calling thread, the status and a message that
 * explains it: ac_last_status() and ac_last_error().
 *
 * The rule for the channel:
 * - A call that returns a handle, pointer, bool or number and can fail
 *   clears the channel on entry. After it returns, ac_last_status() is
 *   AC_OK if it succeeded and its own failure if it did not; never an
 *   earlier call's.
 * - A call that returns an ac_status says so itself: read ac_last_error()
 *   for the explanation when it returned something other than AC_OK. It
 *   does not clear the channel when it succeeds, so that the calls made
 *   on every message stay a return and no more.
 * - Calls that cannot fail (accessors such as ac_ref_path) leave it alone.
 * The library never reads the channel back to decide anything.
 */
#ifndef ACTORC_STATUS_H
#define ACTORC_STATUS_H

#include "actorc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, text) — one table, so that the enum and ac_strerror never drift. */
#define AC_STATUS_MAP(X)                                                      \
    X(AC_OK, "success")                                                       \
    X(AC_EINVAL, "invalid argument")                                          \
    X(AC_ENOMEM, "out of memory")                                             \
    X(AC_ENAME, "invalid actor name")                                         \
    X(AC_EEXIST, "name already taken")                                        \
    X(AC_ETERMINATED, "system is terminated")                                 \
    X(AC_EDEAD, "actor is stopped")                                           \
    X(AC_EINACTOR, "call not allowed inside an actor")                        \
    X(AC_ENOTINACTOR, "call only allowed inside an actor")                    \
    X(AC_ETYPE, "message has another type")                                   \
    X(AC_ETIMEOUT, "timed out")                                               \
    X(AC_EFAILED, "request failed")                                           \
    X(AC_ENOTFOUND, "not found")                                              \
    X(AC_EPENDING, "not settled yet")                                         \
    X(AC_ESYS, "system call failed")                                          \
    X(AC_EPROTO, "malformed data from a peer")                                \
    X(AC_ECODEC, "message type has no wire codec")                            \
    X(AC_ENODEDOWN, "node is down")                                           \
    X(AC_ESECURITY, "refused for security")                                   \
    X(AC_ESTOPPED, "already stopped or left")

typedef enum ac_status {
#define AC__STATUS_ENUM(name, text) name,
    AC_STATUS_MAP(AC__STATUS_ENUM)
#undef AC__STATUS_ENUM
} ac_status;

/* The fixed text of a status ("invalid argument"). Any thread. */
AC_API const char *ac_strerror(ac_status status);
/* The symbolic name of a status ("AC_EINVAL"). Any thread. */
AC_API const char *ac_status_name(ac_status status);

/* The status of this thread's last failing call, or AC_OK when the last
 * call that clears the channel (see above) succeeded, or when ac_clear_error
 * was called since. Any thread. */
AC_API ac_status ac_last_status(void);
/* A message explaining the failure ac_last_status() reports, naming the
 * argument or object at fault; "" while the status is AC_OK. Valid until
 * this thread's next call into the library. Any thread. */
AC_API const char *ac_last_error(void);
/* Forget this thread's last error. Any thread. */
AC_API void ac_clear_error(void);
/* Record `status` and a printf-style message as this thread's last error
 * and return `status`: for libraries layered on actorc (the actorc_http
 * library among them) that report failures the way actorc does. Any
 * thread. */
AC_API ac_status ac_set_error(ac_status status, const char *fmt, ...) AC_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif
