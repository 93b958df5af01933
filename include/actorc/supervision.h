/*
 * Supervision: what happens when an actor fails.
 *
 * A handler (receive, pre_start, post_restart) fails by calling ac_fail
 * (C has no throw). When the handler returns, the actor is suspended: it
 * handles no further messages, the failed message is not retried, the
 * failure is logged at error level with the actor's path, and its parent
 * decides, by the strategy given in the parent's props:
 *
 *   AC_RESTART   (default) pre_restart(cause, msg) — by default post_stop —
 *                then the children are stopped, the state is re-initialised
 *                (zeroed, init), then post_restart(cause) — by default
 *                pre_start. The mailbox is kept: messages that arrive during
 *                the restart are handled after it. At most max_restarts
 *                within within_ms (default 10 in 60 s); beyond that the
 *                child is stopped.
 *   AC_RESUME    the actor carries on with its next message, state intact.
 *   AC_STOP      stopped exactly as by ac_stop.
 *   AC_ESCALATE  the parent fails with the same error and its own parent
 *                decides. The user guardian applies the default strategy
 *                to top-level actors.
 *
 * One-for-one: the directive applies to the failing child only.
 */
#ifndef ACTORC_SUPERVISION_H
#define ACTORC_SUPERVISION_H

#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/error.h"
#include "actorc/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ac_directive {
    AC_RESTART = 0,
    AC_RESUME,
    AC_STOP,
    AC_ESCALATE
} ac_directive;

/* Decide per failure. Runs in the parent's turn; `cause` and `child` are
 * borrowed for the call. */
typedef ac_directive (*ac_decider_fn)(const ac_error *cause, ac_ref *child, void *user);

#define AC_DEFAULT_MAX_RESTARTS 10
#define AC_DEFAULT_RESTART_WINDOW_MS 60000

/* Zero fields mean defaults: `{0}` is "restart, 10 within 60 s". */
typedef struct ac_supervisor_strategy {
    ac_directive directive; /* when decider is NULL */
    ac_decider_fn decider;  /* optional: decides per error */
    void *decider_user;
    int max_restarts;       /* 0: 10; negative: no limit */
    int64_t within_ms;      /* 0: 60,000 */
} ac_supervisor_strategy;

/* How the actor spawned from `props` supervises its children. Copied.
 * AC_EINVAL for a directive out of range. Any thread. */
AC_API ac_status ac_props_set_supervisor(ac_props *props, const ac_supervisor_strategy *strategy);

/* Fail the current handler with `cause` (consumed). The handler should
 * return soon after; the failure takes effect when it does. A second
 * ac_fail in the same handler is ignored (its cause released). Inside an
 * actor, in receive, pre_start or post_restart. */
AC_API ac_status ac_fail(ac_ctx *ctx, ac_error *cause);

/* The display name of a directive ("restart", ...). */
AC_API const char *ac_directive_name(ac_directive d);

#ifdef __cplusplus
}
#endif
#endif
