/*
 * The base of every internal file: compiler hints, the cache-line size,
 * always-on assertions and error recording (status.c). Depends on the
 * public headers only; everything else internal may include it.
 */
#ifndef AC_CORE_BASE_H
#define AC_CORE_BASE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The core's own public headers: not the umbrella, which would let every
 * internal file see the layers above the core (ask, metrics, routers,
 * breakers, remoting). A layer above includes its own. */
#include "actorc/actor.h"
#include "actorc/error.h"
#include "actorc/export.h"
#include "actorc/log.h"
#include "actorc/msg.h"
#include "actorc/status.h"
#include "actorc/supervision.h"
#include "actorc/system.h"
#include "actorc/timer.h"

#define AC__CACHELINE 64

#define AC__LIKELY(x) __builtin_expect(!!(x), 1)
#define AC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define AC__NOINLINE __attribute__((noinline))
#define AC__ALWAYS_INLINE inline __attribute__((always_inline))
/* A static function of an internal header that gives the files of one
 * module what was static in one file: compiled as it was there (no
 * `inline`, which would change the compiler's inlining choices on a hot
 * path), and no warning in a file that does not call it. */
#define AC__MODULE_STATIC static __attribute__((unused))
/* For thread-locals on hot paths (a few words each): the model that reads
 * them straight off the thread pointer, also in the shared library. */
#define AC__TLS_FAST __attribute__((tls_model("initial-exec")))

/* Exported, though internal: what actorc's own optional libraries
 * (remote, HTTP, etcd, cluster) link from libactorc, which hides
 * everything else. Not API: no promise to any other program. */
#define AC__SPI AC_API

/* Always-on invariant check: a violation would corrupt state. */
#define AC__ASSERT(cond)                                                      \
    do {                                                                      \
        if (AC__UNLIKELY(!(cond)))                                            \
            ac__assert_fail(#cond, __FILE__, __LINE__);                       \
    } while (0)
AC__SPI _Noreturn void ac__assert_fail(const char *expr, const char *file, int line);

/* Debug-only invariant check, for checks on hot paths: on in the Debug
 * (sanitizer) builds, compiled out where NDEBUG is defined. */
#ifdef NDEBUG
#define AC__DEBUG_ASSERT(cond) ((void)0)
#else
#define AC__DEBUG_ASSERT(cond) AC__ASSERT(cond)
#endif

/* ---- errors (status.c) ------------------------------------------------ */

/* Record a failure for this thread and return `status`. */
AC__SPI ac_status ac__fail(ac_status status, const char *fmt, ...) AC_PRINTF(2, 3);
/* As ac__fail, for functions returning a pointer: returns NULL. */
AC__SPI void *ac__fail_null(ac_status status, const char *fmt, ...) AC_PRINTF(2, 3);

#endif
