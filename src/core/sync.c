/*
 * Locks and waiting, kept in one place so that every part of the runtime
 * spins and sleeps the same way.
 *
 * Locks for short critical sections on hot paths (a list link, a wheel
 * slot): contention there lasts tens of nanoseconds, far less than putting
 * a thread to sleep and waking it, so the mutex spins briefly before it
 * sleeps (glibc's adaptive mutex) where the platform has one.
 *
 * Waiting: a waiter that expects its event soon spins first (a local
 * answer, the next message of a volley), then sleeps. The spin is shared
 * (ac__spin_until); how to sleep is the caller's, because the protocols
 * differ: an ask's waiter sleeps on a futex on its reply's state, an idle
 * worker parks on the scheduler's condition variable under a handshake
 * with pushers. Both sleep with monotonic deadlines from here.
 *
 * And checked initialisation (core/sync.h): each init reports its
 * failure instead of leaving an uninitialised lock behind.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/base.h"
#include "core/clock.h"
#include "core/sync.h"

ac_status ac__pthread_fail(int rc, const char *what)
{
    if (rc == 0)
        return AC_OK;
    if (rc == ENOMEM)
        return ac__fail(AC_ENOMEM, "out of memory for %s", what);
    return ac__fail(AC_ESYS, "cannot initialise %s: %s", what, strerror(rc));
}

static int mutex_init_hot(pthread_mutex_t *m)
{
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);
    if (rc != 0)
        return rc;
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
#else
    return pthread_mutex_init(m, NULL);
#endif
}

ac_status ac__mutex_init_hot(pthread_mutex_t *m, const char *what)
{
    return ac__pthread_fail(mutex_init_hot(m), what);
}

ac_status ac__mutex_init(pthread_mutex_t *m, const char *what)
{
    return ac__pthread_fail(pthread_mutex_init(m, NULL), what);
}

ac_status ac__cond_init(pthread_cond_t *c, bool monotonic, const char *what)
{
    if (!monotonic)
        return ac__pthread_fail(pthread_cond_init(c, NULL), what);
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc == 0) {
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        rc = pthread_cond_init(c, &attr);
        pthread_condattr_destroy(&attr);
    }
    return ac__pthread_fail(rc, what);
}

void ac__cond_wait_until_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_ns)
{
    struct timespec ts = ac__timespec_of_ns(deadline_ns);
    pthread_cond_timedwait(cond, lock, &ts);
}

bool ac__spin_until(bool (*ready)(void *arg), void *arg, uint64_t spin_ns, uint64_t pure_ns)
{
    uint64_t start = ac__now_ns(), now = start;
    do {
        for (int i = 0; i < 32; i++)
            ac__cpu_relax();
        if (now - start > pure_ns)
            sched_yield();
        if (ready(arg))
            return true;
        now = ac__now_ns();
    } while (now - start < spin_ns);
    return false;
}

void ac__futex_wait_until_ns(atomic_int *addr, int seen, uint64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns) {
        uint64_t now = ac__now_ns();
        if (now >= deadline_ns)
            return;
        ts = ac__timespec_of_ns(deadline_ns - now); /* FUTEX_WAIT's timeout is relative */
        tsp = &ts;
    }
    syscall(SYS_futex, (int *)addr, FUTEX_WAIT_PRIVATE, seen, tsp, NULL, 0);
}

void ac__futex_wake_all(atomic_int *addr)
{
    syscall(SYS_futex, (int *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void ac__thread_name(const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
#if defined(__linux__) && defined(__GLIBC__)
    pthread_setname_np(pthread_self(), name);
#endif
}
