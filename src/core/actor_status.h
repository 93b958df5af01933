/*
 * Actor operations whose failure the library's own callers must hear of:
 * a spawn that says why it failed, without the last-error channel being
 * read back, and system messages made before they are sent, so that a
 * public call can report AC_ENOMEM instead of losing one.
 */
#ifndef AC_CORE_ACTOR_STATUS_H
#define AC_CORE_ACTOR_STATUS_H

#include "core/internal.h"

/* ac_spawn_child, returning its status; *out is the new ref or NULL.
 * Consumes props. Inside an actor. */
ac_status ac__spawn_child_status(ac_ctx *ctx, ac_props *props, const char *name, ac_ref **out);

/* A system message (retains ref and err), or NULL when out of memory
 * (nothing recorded: the caller names what failed). Any thread. */
ac__sysmsg *ac__sysmsg_new(ac__sys_kind kind, ac_ref *ref, ac_error *err);
/* Queue `m` (consumed) for `actor` and schedule it. Any thread. */
void ac__actor_push_sysmsg(ac__actor *actor, ac__sysmsg *m);
/* Free a system message that was not sent. */
void ac__sysmsg_free(ac__sysmsg *m);

#endif
