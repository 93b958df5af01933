/*
 * Locks (sync.c). Base layer: depends on nothing internal.
 */
#ifndef AC_CORE_SYNC_H
#define AC_CORE_SYNC_H

#include <pthread.h>

/* A mutex for short, hot critical sections: spins briefly before sleeping. */
void ac__mutex_init_hot(pthread_mutex_t *m);

#endif
