/*
 * Spawning a child, for the library's own callers that need to know why a
 * spawn failed (a router spawning its routees) without reading the
 * last-error channel back.
 */
#ifndef AC_CORE_SPAWN_STATUS_H
#define AC_CORE_SPAWN_STATUS_H

#include "actorc.h"

/* ac_spawn_child, returning its status; *out is the new ref or NULL.
 * Consumes props. Inside an actor. */
ac_status ac__spawn_child_status(ac_ctx *ctx, ac_props *props, const char *name, ac_ref **out);

#endif
