/*
 * Delivery and the turn (turn.c): how a message or a system message
 * reaches a cell, how the cell gets scheduled, and how a worker runs one
 * turn of it. Any thread may deliver; only the worker holding the
 * activation runs the turn.
 */
#ifndef AC_CORE_TURN_H
#define AC_CORE_TURN_H

#include "core/cell.h"

/* The actor being run on this thread, if any. */
extern _Thread_local ac__actor *ac__tls_actor AC__TLS_FAST;

/* Run one turn of `actor` on the calling worker. Consumes the scheduled
 * reference unless the actor is rescheduled. */
void ac__actor_turn(ac__actor *actor, int batch);
/* Mark scheduled and hand to the scheduler (takes a ref) if it was not. */
void ac__actor_schedule(ac__actor *actor);
/* The actor ref kind's deliver: enqueue and schedule, or a dead letter
 * once the actor is dead. Consumes node. Any thread. */
void ac__actor_deliver(ac_ref *self, ac__mailbox_node *node);
/* How many messages wait at `ref`, as far as can be told without
 * walking its mailbox: for an actor that counts them (ac__props_count_
 * mailbox; the count lives in the cell, kept by delivery and the turn)
 * the queued messages plus one while a turn is pending or running; for
 * one that does not, 0 while it is idle and AC__MAILBOX_UNKNOWN while it
 * is busy; AC__MAILBOX_UNKNOWN for a ref that is not an actor,
 * AC__MAILBOX_STOPPED for an actor that has stopped. Any thread; the
 * answer may be stale by the time it is read. */
#define AC__MAILBOX_STOPPED (-1)
#define AC__MAILBOX_UNKNOWN (-2)
AC__SPI int ac__mailbox_len(const ac_ref *ref);
/* Queue a system message for `actor` and schedule it. Any thread. Out of
 * memory aborts (ac__oom_abort): these are sent where nothing can be
 * reported and losing one would hang a stop or a watcher. */
void ac__actor_push_sys(ac__actor *actor, ac__sys_kind kind, ac_ref *ref);
void ac__actor_push_sys_err(ac__actor *actor, ac__sys_kind kind, ac_ref *ref, ac_error *err);
/* For a public call that reports AC_ENOMEM instead: the system message is
 * made first, and sent once nothing else can fail, so a failed call
 * changes nothing. ac__sysmsg_new retains ref and err and returns NULL
 * when out of memory (nothing recorded: the caller names what failed). */
ac__sysmsg *ac__sysmsg_new(ac__sys_kind kind, ac_ref *ref, ac_error *err);
/* Queue `m` (consumed) for `actor` and schedule it. Any thread. */
void ac__actor_push_sysmsg(ac__actor *actor, ac__sysmsg *m);
/* Free a system message that was not sent. */
void ac__sysmsg_free(ac__sysmsg *m);

#endif
