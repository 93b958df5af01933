/*
 * Locks for short critical sections on hot paths (a list link, a wheel
 * slot). Contention there lasts tens of nanoseconds, far less than putting
 * a thread to sleep and waking it, so the mutex spins briefly before it
 * sleeps (glibc's adaptive mutex) where the platform has one.
 */
#include "core/sync.h"

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
