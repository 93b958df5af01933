/*
 * The library's allocation calls, and what it does when one fails (alloc.c,
 * alloc_fail.c). Base layer: depends on nothing internal.
 *
 * Every allocation in src/ goes through these wrappers, so that one switch
 * can make any of them fail. The rule (docs/architecture.md, "Out of
 * memory"): a call that can report AC_ENOMEM does; where nothing can be
 * reported and the loss would break a promise (a system message, an
 * ask's answer), ac__oom_abort says so and aborts.
 *
 * In builds without NDEBUG the wrappers, the small-object caches included,
 * consult an injection hook, which tests use to fail the n-th allocation
 * from now. Under NDEBUG the hook is compiled out and the wrappers are
 * plain malloc and friends.
 */
#ifndef AC_CORE_ALLOC_H
#define AC_CORE_ALLOC_H

#include <stdbool.h>

#include "actorc/export.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef NDEBUG
#define ac__alloc_should_fail() false
#else
#define AC__ALLOC_HOOK 1
/* Should this allocation fail? Counts it. Any thread. */
/* Exported (as ac__oom_abort) for actorc's optional libraries: see AC__SPI. */
AC_API bool ac__alloc_should_fail(void);
/* Make the n-th allocation from now fail (1: the next one), once; 0
 * disarms. Any thread; meant for tests. */
void ac__alloc_fail_after(long n);
/* Count allocations (failed ones included) from start until stop, which
 * returns the count. For tests; not nested. */
void ac__alloc_count_start(void);
long ac__alloc_count_stop(void);
#endif

static inline void *ac__malloc(size_t size)
{
    return ac__alloc_should_fail() ? NULL : malloc(size);
}

static inline void *ac__calloc(size_t n, size_t size)
{
    return ac__alloc_should_fail() ? NULL : calloc(n, size);
}

static inline void *ac__realloc(void *p, size_t size)
{
    return ac__alloc_should_fail() ? NULL : realloc(p, size);
}

static inline void *ac__aligned_alloc(size_t align, size_t size)
{
    return ac__alloc_should_fail() ? NULL : aligned_alloc(align, size);
}

static inline char *ac__strdup(const char *s)
{
    return ac__alloc_should_fail() ? NULL : strdup(s);
}

/* An allocation whose failure cannot be reported failed: print
 * "actorc: out of memory: <what>" and abort. */
AC_API _Noreturn void ac__oom_abort(const char *what);

/* malloc/free with per-thread caches for blocks up to 256 bytes. The size
 * passed to free must be the size passed to alloc. Any thread. Exported
 * for actorc's optional libraries (the remote layer's frames). */
AC_API void *ac__alloc_small(size_t size);
AC_API void ac__free_small(void *p, size_t size);
/* Give cached blocks back to malloc: the depot's and the calling thread's.
 * Called when the last system has terminated, and by a layer that just
 * saw a burst end (a node after a flood of strangers). Any thread. */
AC_API void ac__alloc_trim(void);
/* Ask every thread that caches blocks to hand its lists to the depot the
 * next time it is idle (workers look before they park); a later
 * ac__alloc_trim gives them back to malloc. After a burst (a node's flood
 * of strangers), so that blocks it left cached do not pin its pages. */
AC_API void ac__alloc_request_flush(void);
/* A thread about to idle: answer a request, if one came. Cheap otherwise. */
void ac__alloc_flush_if_asked(void);

#endif
