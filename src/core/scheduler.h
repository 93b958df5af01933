/*
 * The scheduler (scheduler.c): worker threads that run turns of runnable
 * cells. It owns a cell only between a push and the turn it runs.
 */
#ifndef AC_CORE_SCHEDULER_H
#define AC_CORE_SCHEDULER_H

#include "core/cell.h"

typedef struct ac__scheduler ac__scheduler;
typedef struct ac__worker ac__worker;

ac__scheduler *ac__scheduler_create(ac_system *system, int workers, int batch);
int ac__scheduler_start(ac__scheduler *s);
/* Stop and join every worker; then release actors still queued. */
void ac__scheduler_stop(ac__scheduler *s);
void ac__scheduler_destroy(ac__scheduler *s);
/* Queue a runnable actor (from any thread). `fresh` marks a wake-up from a
 * send inside a handler (kept local, LIFO) rather than a requeue. */
void ac__scheduler_push(ac__scheduler *s, ac__actor *actor, bool fresh);

/* The index (0 .. workers-1) of the calling thread among `system`'s
 * workers, or -1 on any other thread: a worker of another system, the
 * timer thread, a thread of the program. A per-worker count indexed by
 * it has one writer. */
int ac__worker_index_in(const ac_system *system);

/* The worker running on this thread, if any. */
extern _Thread_local ac__worker *ac__tls_worker AC__TLS_FAST;

#endif
