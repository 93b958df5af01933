/*
 * Props: what a spawn needs to build a cell. A props is checked when it is
 * made, so a spawn only fails for reasons of its own (name, memory, a
 * terminated system); the spawn consumes it either way.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/front.h"
#include "core/last_error.h"
#include "core/props.h"

/* ---- props ------------------------------------------------------------ */

ac_props *ac_props_new(const ac_actor_def *def, void *user_data)
{
    ac__clear_status();
    if (!def)
        return ac__fail_null(AC_EINVAL, "ac_props_new: actor definition is NULL");
    if (!def->receive)
        return ac__fail_null(AC_EINVAL, "ac_props_new: actor definition \"%s\" has no receive",
                             def->name ? def->name : "(unnamed)");
    ac_props *p = ac__alloc_small(sizeof *p);
    if (!p)
        return ac__fail_null(AC_ENOMEM, "ac_props_new: out of memory");
    memset(p, 0, sizeof *p);
    p->def = def;
    p->user_data = user_data;
    return p;
}

ac_status ac_props_set_user_data_free(ac_props *props, void (*free_fn)(void *))
{
    if (!props)
        return ac__fail(AC_EINVAL, "ac_props_set_user_data_free: props is NULL");
    props->user_data_free = free_fn;
    return AC_OK;
}

ac_status ac_props_set_supervisor(ac_props *props, const ac_supervisor_strategy *strategy)
{
    if (!props || !strategy)
        return ac__fail(AC_EINVAL, "ac_props_set_supervisor: %s is NULL",
                        props ? "strategy" : "props");
    if ((int)strategy->directive < AC_RESTART || strategy->directive > AC_ESCALATE)
        return ac__fail(AC_EINVAL, "ac_props_set_supervisor: directive = %d is not an ac_directive",
                        (int)strategy->directive);
    if (strategy->within_ms < 0)
        return ac__fail(AC_EINVAL, "ac_props_set_supervisor: within_ms = %lld; use >= 1, or 0 for %d",
                        (long long)strategy->within_ms, AC_DEFAULT_RESTART_WINDOW_MS);
    props->strategy = *strategy;
    props->has_strategy = true;
    return AC_OK;
}

void ac_props_free(ac_props *props)
{
    if (!props)
        return;
    if (props->user_data_free)
        props->user_data_free(props->user_data);
    if (props->front)
        props->front->ops->free(props->front);
    ac__free_small(props, sizeof *props);
}

void ac__props_count_mailbox(ac_props *props) { props->count_mailbox = true; }

void ac__props_skip_cancelled(ac_props *props) { props->skip_cancelled = true; }

void ac__props_on_spawn(ac_props *props, void (*fn)(ac_system *system, void *user_data))
{
    props->on_spawn = fn;
}

void ac__props_front(ac_props *props, ac__front *front) { props->front = front; }
