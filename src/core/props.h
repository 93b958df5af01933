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
    ac_supervisor_strategy strategy;
};

/* Keep a count of queued messages for actors spawned from `props`. */
void ac__props_count_mailbox(ac_props *props);

#endif
