/*
 * Locks for short critical sections on hot paths (a list link, a wheel
 * slot). Contention there lasts tens of nanoseconds, far less than putting
 * a thread to sleep and waking it, so the mutex spins briefly before it
 * sleeps (glibc's adaptive mutex) where the platform has one.
 *
 * And checked initialisation (core/sync.h): each init reports its
 * failure instead of leaving an uninitialised lock behind.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
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
