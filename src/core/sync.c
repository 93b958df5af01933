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
 */
#include <linux/futex.h>
#include <limits.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sync.h"

#define NS_PER_S 1000000000ull

void ac__mutex_init_hot(pthread_mutex_t *m)
{
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
#else
    pthread_mutex_init(m, NULL);
#endif
}

void ac__cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the clock of ac__now_ns */
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

static struct timespec timespec_of(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
}

void ac__cond_wait_until_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_ns)
{
    struct timespec ts = timespec_of(deadline_ns);
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
        ts = timespec_of(deadline_ns - now); /* FUTEX_WAIT's timeout is relative */
        tsp = &ts;
    }
    syscall(SYS_futex, (int *)addr, FUTEX_WAIT_PRIVATE, seen, tsp, NULL, 0);
}

void ac__futex_wake_all(atomic_int *addr)
{
    syscall(SYS_futex, (int *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
