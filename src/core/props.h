/*
 * Props (props.c): what a spawn needs to build a cell. A props is owned
 * by the caller until a spawn consumes it.
 */
#ifndef AC_CORE_PROPS_H
#define AC_CORE_PROPS_H

#include "core/base.h"

struct ac_props {
    const ac_actor_def *def;
    void *user_data;
    void (*user_data_free)(void *);
    bool has_strategy;
    bool count_mailbox;
    bool skip_cancelled;
    ac_supervisor_strategy strategy;
    void (*on_spawn)(ac_system *system, void *user_data);
    struct ac__front *front; /* core/front.h; moved into the cell at spawn */
};

/* Keep a count of queued messages for actors spawned from `props`. */
void ac__props_count_mailbox(ac_props *props);
/* Actors spawned from `props` drop, unhandled, a request whose reply ref
 * says it is no longer wanted (ac__ref_ops.cancelled). */
void ac__props_skip_cancelled(ac_props *props);
/* Call fn(system, user_data) when a spawn has built the cell, before its
 * first turn, on the spawner's thread: for what must exist once the spawn
 * returns. It runs with the spawn's locks held (the guardian's for a
 * top-level actor), so it must be short and must not spawn or stop. */
void ac__props_on_spawn(ac_props *props, void (*fn)(ac_system *system, void *user_data));

#endif
