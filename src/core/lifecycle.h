/*
 * Lifecycle (lifecycle.c): start, failure, restart, stop and death watch,
 * and the system-message switch that drives them. All of it runs in the
 * actor's own turn; supervision.c holds the policy a parent applies.
 */
#ifndef AC_CORE_LIFECYCLE_H
#define AC_CORE_LIFECYCLE_H

#include "core/cell.h"

/* init (on a zeroed state) then pre_start, or post_restart after a restart. */
void ac__actor_start(ac__actor *a, ac_error *restart_cause);
/* Suspend `a` and report `cause` (consumed) to its parent. */
void ac__actor_fail(ac__actor *a, ac_error *cause, ac_msg *msg);
/* Drop the current failure and the message it happened on. */
void ac__actor_clear_failure(ac__actor *a);
/* Stop the children, then finish the stop once they are gone. */
void ac__actor_begin_stop(ac__actor *a);
/* Act on one system message and free it. */
void ac__actor_handle_sys(ac__actor *a, ac__sysmsg *m);

#endif
