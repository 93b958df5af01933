/*
 * Cells from birth to memory (spawn.c): spawning, the guardian, and the
 * teardown of a cell whose last reference is gone or whose system ends.
 */
#ifndef AC_CORE_SPAWN_H
#define AC_CORE_SPAWN_H

#include "core/cell.h"

/* ac_spawn_child, returning its status, so that the library's own callers
 * learn why a spawn failed without reading the last error back; *out is
 * the new ref or NULL. Consumes props. Inside an actor. */
ac_status ac__spawn_child_status(ac_ctx *ctx, ac_props *props, const char *name, ac_ref **out);
/* Free an actor's memory regardless of refcount (system teardown). */
void ac__actor_destroy_now(ac__actor *actor);
/* Release what is queued in a cell (system teardown; refs are held). */
void ac__actor_drain_for_teardown(ac__actor *actor);
/* Guardian, created with the system. */
ac__actor *ac__guardian_create(ac_system *system);

#endif
