/*
 * The actor system (system.c): its struct, the registry of every cell,
 * and dead letters. The fields are grouped by the lock that guards them.
 */
#ifndef AC_CORE_SYSTEM_INTERNAL_H
#define AC_CORE_SYSTEM_INTERNAL_H

#include <pthread.h>

#include "core/cell.h"
#include "core/scheduler.h"
#include "core/timers.h"
#include "log/log_internal.h"

struct ac__hooks;

struct ac_system {
    char *name;
    int workers, batch;
    ac__log_target log; /* set at creation, read-only after */
    int dead_letter_log_per_s;
    bool manual_clock; /* set at creation, read-only after */
    /* What an optional part installed to hear of events (core/hooks.h):
     * NULL while nothing listens, as when metrics are off. */
    _Atomic(const struct ac__hooks *) hooks;

    ac__scheduler *sched;
    ac__timers *timers;
    ac__actor *guardian;

    /* Guards the guardian's children, `terminating` and `parts`. */
    pthread_mutex_t guardian_lock;
    struct ac__ext_part *parts; /* attached optional parts (extension.h) */
    atomic_bool terminating;
    pthread_cond_t guardian_dead_cond;
    bool guardian_dead;

    /* Registry of every actor cell, for teardown. */
    pthread_mutex_t registry_lock;
    ac__actor *registry;

    /* Dead letters. */
    atomic_uint_fast64_t dead_letters;
    atomic_long dl_window;  /* second of the current log window */
    atomic_int dl_logged;   /* lines logged in that window */
    atomic_int dl_suppressed;
    pthread_mutex_t dl_sub_lock;
    ac__refset dl_subscribers; /* under dl_sub_lock */
    atomic_int dl_nsubs;       /* its count, readable without the lock */
};

void ac__registry_add(ac_system *sys, ac__actor *a);
void ac__registry_remove(ac_system *sys, ac__actor *a);
/* Count, log and publish one undeliverable message. Consumes node. */
void ac__dead_letter(ac_system *sys, ac__mailbox_node *node, ac_ref *recipient);
/* The same, with the reason it was not delivered (NULL: the recipient had
 * stopped), told to a sender that waits for an answer. */
void ac__dead_letter_why(ac_system *sys, ac__mailbox_node *node, ac_ref *recipient,
                         const char *why);
/* The error an ask gets for a request that was not delivered:
 * ActorStoppedError (why == NULL) or UndeliverableError. */
ac_error *ac__undeliverable_error(const ac_ref *recipient, const char *why);
/* Terminate: run every attached part's stop, or (free_them) its free. */
void ac__ext_parts_run(ac_system *sys, bool free_them);
/* Called by the guardian when it has stopped. */
void ac__system_guardian_stopped(ac_system *sys);

#endif
