/*
 * Cells from birth to memory: spawning, the guardian, and teardown.
 *
 * An actor cell is its own ref (kind AC__REF_ACTOR) and lives while any
 * reference does: the spawner's, its parent's table entry, the scheduler's
 * (held while `scheduled` is 1), envelopes naming it as sender, watch sets.
 * The system frees whatever is left at terminate. A cell is one
 * allocation: the cell, the actor's state, then its path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/front.h"
#include "core/last_error.h"
#include "core/lifecycle.h"
#include "core/names.h"
#include "core/props.h"
#include "core/scheduler.h"
#include "core/spawn.h"
#include "core/system_internal.h"
#include "core/turn.h"

/* ---- teardown --------------------------------------------------------- */

static void drain_queues(ac__actor *a)
{
    ac__mailbox_node *node;
    while ((node = ac__mailbox_pop(&a->mailbox)))
        ac__mailbox_node_free(node);
    /* Acquire pairs with the pushers' CAS in ac__actor_push_sys. */
    ac__sysmsg *m = atomic_exchange_explicit(&a->sysq, NULL, memory_order_acquire);
    while (m) {
        ac__sysmsg *next = m->next;
        ac_ref_release(m->ref);
        ac_error_release(m->err);
        ac__free_small(m, sizeof *m);
        m = next;
    }
}

static void free_cell(ac__actor *a)
{
    ac__actor_clear_failure(a);
    ac__children_destroy(a->children);
    if (a->ext) {
        ac__refset_clear(&a->ext->watchers);
        ac__refset_clear(&a->ext->watching);
        if (a->ext->user_data_free)
            a->ext->user_data_free(a->user_data);
        ac__free_small(a->ext, sizeof *a->ext);
    }
    if (a->front)
        a->front->ops->free(a->front);
    free(a);
}

void ac__cell_destroy(ac_ref *self)
{
    ac__actor *a = (ac__actor *)self;
    ac__registry_remove(self->system, a);
    /* Nothing can be queued any more: queuing needs a reference. */
    drain_queues(a);
    free_cell(a);
}

void ac__actor_drain_for_teardown(ac__actor *a) { drain_queues(a); }

void ac__actor_destroy_now(ac__actor *a) { free_cell(a); }

/* ---- cells ------------------------------------------------------------ */

const char *ac__cell_path(const ac_ref *self) { return ((const ac__actor *)self)->path; }

static const ac__ref_ops actor_ops = {
    .kind = AC__REF_ACTOR,
    .deliver = ac__actor_deliver,
    .destroy = ac__cell_destroy,
    .path = ac__cell_path,
};

/* An actor with a front (core/front.h): the front sees each message first. */
static void fronted_deliver(ac_ref *self, ac__mailbox_node *node)
{
    ac__front *front = ((ac__actor *)self)->front;
    if (!front->ops->deliver(front, self, node))
        ac__actor_deliver(self, node);
}

static const ac__ref_ops fronted_actor_ops = {
    .kind = AC__REF_ACTOR,
    .deliver = fronted_deliver,
    .destroy = ac__cell_destroy,
    .path = ac__cell_path,
};

/* ---- spawning --------------------------------------------------------- */

/* The reason a props factory returned NULL was recorded by that factory,
 * and this call's own failure replaces it: say only what this call saw. */
static ac_ref *props_missing(const char *fn)
{
    return ac__fail_null(AC_EINVAL, "%s: props is NULL", fn);
}

/* One allocation: the cell, its state, then its path
 * ("<parent path>/<name>"). */
static ac__actor *cell_alloc(ac_system *sys, const ac_actor_def *def, const char *parent_path,
                             const char *name)
{
    size_t plen = strlen(parent_path), nlen = strlen(name);
    ac__actor *a = ac__calloc(1, sizeof *a + def->state_size + plen + 1 + nlen + 1);
    if (!a)
        return NULL;
    char *path = (char *)a->state_mem + def->state_size;
    memcpy(path, parent_path, plen);
    path[plen] = '/';
    memcpy(path + plen + 1, name, nlen + 1);
    ac__ref_init(&a->ref, &actor_ops, sys);
    ac__mailbox_init(&a->mailbox);
    atomic_init(&a->sysq, NULL);
    atomic_init(&a->scheduled, 0);
    atomic_init(&a->state, AC__ACTOR_NEW);
    atomic_init(&a->restarts, 0);
    a->def = def;
    a->path = path;
    a->name = path + plen + 1;
    return a;
}

/* Call with the guardian lock held when `parent` is the guardian. */
static ac_status spawn_child_of(ac__actor *parent, ac_props *props, const char *name,
                                ac_ref **out)
{
    ac_system *sys = parent->ref.system;
    char anon[24];
    if (name) {
        ac_status st = ac__check_actor_name(name);
        if (st != AC_OK)
            return st;
        if (ac__children_find(parent->children, name))
            return ac__fail(AC_EEXIST, "actor name \"%s\" is already taken under %s", name,
                            parent->path);
    } else {
        snprintf(anon, sizeof anon, "$%llx", (unsigned long long)++parent->seq);
        name = anon;
    }
    if (!parent->children && !(parent->children = ac__children_create()))
        return ac__fail(AC_ENOMEM, "spawn: out of memory for the children of %s", parent->path);
    ac__actor *a = cell_alloc(sys, props->def, parent->path, name);
    bool needs_ext = props->has_strategy || props->user_data_free;
    if (!a || (needs_ext && !ac__cell_ext_of(a)) || ac__children_add(parent->children, a) != AC_OK) {
        if (a)
            ac__free_small(a->ext, sizeof *a->ext);
        free(a);
        return ac__fail(AC_ENOMEM, "spawn: out of memory for %s", name);
    }
    if (needs_ext) {
        a->ext->has_strategy = props->has_strategy;
        a->ext->strategy = props->strategy;
        a->ext->user_data_free = props->user_data_free;
    }
    a->count_mailbox = props->count_mailbox;
    a->skip_cancelled = props->skip_cancelled;
    if (props->front) {
        a->front = props->front;
        props->front = NULL;
        a->ref.ops = a->front->ops->cell_ops ? a->front->ops->cell_ops : &fronted_actor_ops;
    }
    a->parent = parent;
    a->user_data = props->user_data;
    if (props->on_spawn)
        props->on_spawn(sys, props->user_data);
    ac__free_small(props, sizeof *props);
    /* One reference for the parent's table, one for the caller, one for
     * the scheduler (the first turn runs init and pre_start). */
    atomic_store_explicit(&a->ref.refs, 3, memory_order_relaxed);
    ac__registry_add(sys, a);
    atomic_store_explicit(&a->scheduled, 1, memory_order_relaxed);
    ac__scheduler_push(sys->sched, a, ac__tls_actor != NULL);
    *out = &a->ref;
    return AC_OK;
}

ac_ref *ac_spawn(ac_system *system, ac_props *props, const char *name)
{
    ac__clear_status();
    if (!props)
        return props_missing("ac_spawn");
    if (!system) {
        ac_props_free(props);
        return ac__fail_null(AC_EINVAL, "ac_spawn: system is NULL");
    }
    ac_ref *ref = NULL;
    pthread_mutex_lock(&system->guardian_lock);
    if (atomic_load_explicit(&system->terminating, memory_order_relaxed))
        ac__fail(AC_ETERMINATED, "ac_spawn: system \"%s\" is terminated", system->name);
    else
        spawn_child_of(system->guardian, props, name, &ref);
    pthread_mutex_unlock(&system->guardian_lock);
    if (!ref)
        ac_props_free(props);
    return ref;
}

ac_status ac__spawn_child_status(ac_ctx *ctx, ac_props *props, const char *name, ac_ref **out)
{
    *out = NULL;
    if (!props) {
        props_missing("ac_spawn_child");
        return AC_EINVAL;
    }
    if (!ctx) {
        ac_props_free(props);
        return ac__fail(AC_EINVAL, "ac_spawn_child: ctx is NULL");
    }
    ac__actor *parent = ctx->self;
    ac_system *sys = parent->ref.system;
    ac_status st;
    if (atomic_load_explicit(&sys->terminating, memory_order_relaxed))
        st = ac__fail(AC_ETERMINATED, "ac_spawn_child: system \"%s\" is terminated", sys->name);
    else if (atomic_load_explicit(&parent->state, memory_order_relaxed) > AC__ACTOR_RUNNING)
        st = ac__fail(AC_EDEAD, "ac_spawn_child: %s is stopping", parent->path);
    else
        st = spawn_child_of(parent, props, name, out);
    if (st != AC_OK)
        ac_props_free(props);
    return st;
}

ac_ref *ac_spawn_child(ac_ctx *ctx, ac_props *props, const char *name)
{
    ac__clear_status();
    ac_ref *ref;
    ac__spawn_child_status(ctx, props, name, &ref);
    return ref;
}

/* ---- the guardian ----------------------------------------------------- */

static void guardian_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_log_warn(ctx, "the guardian does not take messages (got a %s)", msg->type->name);
}

static const ac_actor_def guardian_def = {.name = "Guardian", .receive = guardian_receive};

ac__actor *ac__guardian_create(ac_system *system)
{
    char root[96]; /* system names are at most 64 characters */
    snprintf(root, sizeof root, "actorc://%s", system->name);
    ac__actor *g = cell_alloc(system, &guardian_def, root, "user");
    if (!g)
        return NULL;
    atomic_store_explicit(&g->state, AC__ACTOR_RUNNING, memory_order_relaxed);
    return g;
}
