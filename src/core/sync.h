/*
 * Locks and waiting (sync.c). Base layer: depends on nothing internal.
 *
 * Initialisation is checked: pthread_*_init may fail (ENOMEM, EAGAIN), and
 * a constructor that ignored it would go on to lock an uninitialised
 * mutex. Each init below records the failure (AC_ENOMEM for ENOMEM,
 * AC_ESYS otherwise, naming `what`) and returns its status, for the
 * constructor's cleanup ladder.
 *
 * Every timed wait here takes an absolute deadline in nanoseconds on
 * ac__now_ns's clock (CLOCK_MONOTONIC), so no wait stretches or shrinks
 * when the wall clock is set.
 */
#ifndef AC_CORE_SYNC_H
#define AC_CORE_SYNC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actorc/status.h"
#include "core/base.h"

/* The status for a pthread error code `rc` (0: AC_OK), recorded. */
ac_status ac__pthread_fail(int rc, const char *what);
/* A plain mutex. */
ac_status ac__mutex_init(pthread_mutex_t *m, const char *what);
/* A mutex for short, hot critical sections: spins briefly before sleeping. */
ac_status ac__mutex_init_hot(pthread_mutex_t *m, const char *what);
/* A condition variable on CLOCK_MONOTONIC (the clock of ac__now_ns), or
 * on the default clock when `monotonic` is false (for untimed waits only). */
ac_status ac__cond_init(pthread_cond_t *c, bool monotonic, const char *what);

/* pthread_cond_timedwait until deadline_ns (ac__now_ns) on a condition made
 * by ac__cond_init(c, true, ...). Call with `lock` held; may wake early,
 * like any condition wait. */
void ac__cond_wait_until_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_ns);

/* Tell the core we are spinning (a pause instruction where there is one). */
static inline void ac__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spin until ready(arg) holds, for at most spin_ns: rounds of a few pause
 * instructions, each followed by a look. After the first pure_ns a round
 * also yields the core, so that a thread we wait for can run even when it
 * shares our core. Returns whether ready held. Any thread. */
bool ac__spin_until(bool (*ready)(void *arg), void *arg, uint64_t spin_ns, uint64_t pure_ns);

/* Sleep while *addr == seen, until woken or deadline_ns (0: no deadline);
 * may return early (a futex wait). Process-private. */
void ac__futex_wait_until_ns(atomic_int *addr, int seen, uint64_t deadline_ns);
/* Wake every thread in ac__futex_wait_until_ns on addr. */
void ac__futex_wake_all(atomic_int *addr);

/* Name the calling thread for ps, top, perf and debuggers: printf-style,
 * cut to the platform's limit (15 bytes on Linux). The runtime's threads
 * are "ac-worker-N", "ac-timers", "ac-transport" and the like. Best
 * effort: a platform without thread names ignores it. */
AC__SPI void ac__thread_name(const char *fmt, ...) AC_PRINTF(1, 2);

#endif
