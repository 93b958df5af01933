/*
 * Cells from birth to memory (spawn.c): spawning, the guardian, and the
 * teardown of a cell whose last reference is gone or whose system ends.
 */
#ifndef AC_CORE_SPAWN_H
#define AC_CORE_SPAWN_H

#include "core/cell.h"

/* Free an actor's memory regardless of refcount (system teardown). */
void ac__actor_destroy_now(ac__actor *actor);
/* Release what is queued in a cell (system teardown; refs are held). */
void ac__actor_drain_for_teardown(ac__actor *actor);
/* Guardian, created with the system. */
ac__actor *ac__guardian_create(ac_system *system);

#endif
