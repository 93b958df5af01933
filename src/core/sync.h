/*
 * Locks (sync.c). Base layer: depends on nothing internal.
 *
 * Initialisation is checked: pthread_*_init may fail (ENOMEM, EAGAIN), and
 * a constructor that ignored it would go on to lock an uninitialised
 * mutex. Each init below records the failure (AC_ENOMEM for ENOMEM,
 * AC_ESYS otherwise, naming `what`) and returns its status, for the
 * constructor's cleanup ladder.
 */
#ifndef AC_CORE_SYNC_H
#define AC_CORE_SYNC_H

#include <pthread.h>
#include <stdbool.h>

#include "actorc/status.h"

/* The status for a pthread error code `rc` (0: AC_OK), recorded. */
ac_status ac__pthread_fail(int rc, const char *what);
/* A plain mutex. */
ac_status ac__mutex_init(pthread_mutex_t *m, const char *what);
/* A mutex for short, hot critical sections: spins briefly before sleeping. */
ac_status ac__mutex_init_hot(pthread_mutex_t *m, const char *what);
/* A condition variable on CLOCK_MONOTONIC (the clock of ac__now_ns), or
 * on the default clock when `monotonic` is false. */
ac_status ac__cond_init(pthread_cond_t *c, bool monotonic, const char *what);

#endif
