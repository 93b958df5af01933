/*
 * Lifecycle: start, failure, restart, stop and death watch, and the
 * system-message switch that drives them. Everything here runs in the
 * actor's own turn, but ac_stop, which only queues a stop from any thread;
 * supervision.c holds the policy a parent applies to a failed child, this
 * file carries it out.
 *
 * Invariants:
 *  - Everything below "written by the actor's own turn" in the cell is
 *    touched only by that turn; the guardian's children table is the one
 *    exception, guarded by the system's guardian lock.
 *  - Stop order: children stopped and gone, then post_stop, then
 *    Terminated to watchers, then the parent is told, then the mailbox is
 *    drained to dead letters. `state` becomes DEAD before the drain, so a
 *    sender that still sees RUNNING enqueues and schedules the actor, and
 *    that later turn drains the message to dead letters too.
 *  - A restart keeps the mailbox: it stops the children, re-initialises
 *    the state, and the messages that arrived meanwhile follow.
 */
#include <limits.h>

#include "core/alloc.h"
#include "core/core_msgs.h"
#include "core/extension.h"
#include "core/hooks.h"
#include "core/lifecycle.h"
#include "core/supervision_internal.h"
#include "core/system_internal.h"
#include "core/turn.h"
#include "log/log_internal.h"

/* ---- state and the children lock ------------------------------------ */

static bool is_guardian(const ac__actor *a) { return a->parent == NULL; }

static void lock_children(ac__actor *a)
{
    if (is_guardian(a))
        pthread_mutex_lock(&a->ref.system->guardian_lock);
}

static void unlock_children(ac__actor *a)
{
    if (is_guardian(a))
        pthread_mutex_unlock(&a->ref.system->guardian_lock);
}

static void set_state(ac__actor *a, ac__actor_state st)
{
    /* Release: producers' acquire loads (DEAD check) see what came before. */
    atomic_store_explicit(&a->state, (int)st, memory_order_release);
}

/* ---- death watch ------------------------------------------------------ */

static void send_terminated(ac__actor *dead, ac_ref *watcher)
{
    ac_msg *m = ac_msg_new(&ac_msg_type_terminated, sizeof(ac__terminated_payload));
    if (AC__UNLIKELY(!m)) /* a watcher waits for it */
        ac__oom_abort("a Terminated message");
    ((ac__terminated_payload *)(void *)m->payload)->who = ac_ref_retain(&dead->ref);
    ac_tell(watcher, m, &dead->ref);
}

/* A ref that is not an actor but can be watched (ac__ref_ops.watch). */
static bool watchable(const ac_ref *target)
{
    return target && target->ops->watch && target->ops->unwatch;
}

ac_status ac_watch(ac_ctx *ctx, ac_ref *target)
{
    if (!ctx)
        return ac__fail(AC_EINVAL, "ac_watch: ctx is NULL");
    ac__actor *t = ac__actor_of(target);
    if (!t && !watchable(target))
        return ac__fail(AC_EINVAL, "ac_watch: %s", target ? "not an actor ref" : "target is NULL");
    ac__cell_ext *ext = ac__cell_ext_of(ctx->self);
    if (!ext)
        return ac__fail(AC_ENOMEM, "ac_watch: out of memory");
    if (t == ctx->self || ac__refset_contains(&ext->watching, target))
        return AC_OK;
    if (!t) {
        if (ac__refset_add(&ext->watching, target) != AC_OK)
            return ac__fail(AC_ENOMEM, "ac_watch: out of memory");
        target->ops->watch(target, &ctx->self->ref);
        return AC_OK;
    }
    ac__sysmsg *m = ac__sysmsg_new(AC__SYS_WATCH, &ctx->self->ref, NULL);
    if (!m || ac__refset_add(&ext->watching, target) != AC_OK) {
        if (m)
            ac__sysmsg_free(m);
        return ac__fail(AC_ENOMEM, "ac_watch: out of memory");
    }
    ac__actor_push_sysmsg(t, m);
    return AC_OK;
}

ac_status ac_unwatch(ac_ctx *ctx, ac_ref *target)
{
    if (!ctx)
        return ac__fail(AC_EINVAL, "ac_unwatch: ctx is NULL");
    ac__actor *t = ac__actor_of(target);
    if (!t && !watchable(target))
        return ac__fail(AC_EINVAL, "ac_unwatch: %s",
                        target ? "not an actor ref" : "target is NULL");
    if (!ctx->self->ext || !ac__refset_contains(&ctx->self->ext->watching, target))
        return AC_OK;
    if (!t) {
        target->ops->unwatch(target, &ctx->self->ref);
        ac__refset_remove(&ctx->self->ext->watching, target);
        return AC_OK;
    }
    ac__sysmsg *m = ac__sysmsg_new(AC__SYS_UNWATCH, &ctx->self->ref, NULL);
    if (!m)
        return ac__fail(AC_ENOMEM, "ac_unwatch: out of memory");
    ac__refset_remove(&ctx->self->ext->watching, target);
    ac__actor_push_sysmsg(t, m);
    return AC_OK;
}

/* Watches on behalf of a watcher that is not a local actor (a remote
 * one, through its ref): the target's own watcher set holds it, and it is
 * told Terminated like any other watcher. */
void ac__ext_watch_as(ac_ref *target, ac_ref *watcher)
{
    ac__actor *t = ac__actor_of(target);
    if (t && watcher)
        ac__actor_push_sys(t, AC__SYS_WATCH, watcher);
}

void ac__ext_unwatch_as(ac_ref *target, ac_ref *watcher)
{
    ac__actor *t = ac__actor_of(target);
    if (t && watcher)
        ac__actor_push_sys(t, AC__SYS_UNWATCH, watcher);
}

/* ---- failure --------------------------------------------------------- */

static ac__failure_record *failure_record(ac__actor *a)
{
    if (AC__UNLIKELY(!ac__cell_ext_of(a))) /* a failure must reach the parent */
        ac__oom_abort("an actor's failure record");
    return &a->ext->failure;
}

/* Suspend `a` and report `cause` (consumed) to its parent. */
void ac__actor_fail(ac__actor *a, ac_error *cause, ac_msg *msg)
{
    ac__log(&a->ref.system->log, AC_LOG_ERROR, a->path, "failed%s%s: %s: %s",
            msg ? " handling a " : "", msg ? msg->type->name : "", ac_error_name(cause),
            ac_error_message(cause));
    ac__failure_record *f = failure_record(a);
    ac_error_release(f->cause);
    ac_msg_release(f->failed_msg);
    f->cause = cause;
    f->failed_msg = ac_msg_retain(msg);
    set_state(a, AC__ACTOR_SUSPENDED);
    ac__actor_push_sys_err(a->parent, AC__SYS_FAILED, &a->ref, cause);
}

void ac__actor_clear_failure(ac__actor *a)
{
    if (!a->ext)
        return;
    ac_error_release(a->ext->failure.cause);
    ac_msg_release(a->ext->failure.failed_msg);
    a->ext->failure.cause = NULL;
    a->ext->failure.failed_msg = NULL;
}

/* ---- start ------------------------------------------------------------ */

/* init (on a zeroed state) then pre_start, or post_restart after a restart. */
void ac__actor_start(ac__actor *a, ac_error *restart_cause)
{
    ac_ctx ctx = {.self = a};
    set_state(a, AC__ACTOR_RUNNING);
    memset(a->state_mem, 0, a->def->state_size);
    if (a->def->init)
        a->def->init(&ctx, a->state_mem);
    if (restart_cause && a->def->post_restart)
        a->def->post_restart(&ctx, restart_cause);
    else if (a->def->pre_start)
        a->def->pre_start(&ctx);
    if (ctx.failure)
        ac__actor_fail(a, ctx.failure, NULL);
}

ac_status ac_fail(ac_ctx *ctx, ac_error *cause)
{
    if (!ctx || !cause) {
        ac_error_release(cause);
        return ac__fail(AC_EINVAL, "ac_fail: %s is NULL", ctx ? "cause" : "ctx");
    }
    if (ctx->failure) {
        ac_error_release(cause);
        return AC_OK;
    }
    ctx->failure = cause;
    return AC_OK;
}

/* ---- restart, resume and stop ----------------------------------------- */

static bool stop_child(ac__actor *child, void *unused)
{
    (void)unused;
    ac__actor_push_sys(child, AC__SYS_STOP, NULL);
    return true;
}

static void finish_restart(ac__actor *a)
{
    ac_error *cause = a->ext ? ac_error_retain(a->ext->failure.cause) : NULL;
    ac__actor_clear_failure(a);
    ac__actor_start(a, cause);
    ac_error_release(cause);
}

static void begin_restart(ac__actor *a)
{
    if (atomic_load_explicit(&a->state, memory_order_relaxed) != AC__ACTOR_SUSPENDED)
        return;
    ac__hook_count(a->ref.system, AC__EVENT_RESTARTS, 1);
    unsigned short restarts = atomic_load_explicit(&a->restarts, memory_order_relaxed);
    if (restarts < USHRT_MAX) /* only this turn writes; the view reads */
        atomic_store_explicit(&a->restarts, (unsigned short)(restarts + 1), memory_order_relaxed);
    ac_ctx ctx = {.self = a};
    ac__failure_record *f = a->ext ? &a->ext->failure : NULL;
    if (a->def->pre_restart)
        a->def->pre_restart(&ctx, f ? f->cause : NULL, f ? f->failed_msg : NULL);
    else if (a->def->post_stop)
        a->def->post_stop(&ctx);
    if (ctx.failure) { /* a failing pre_restart does not stop the restart */
        ac__log(&a->ref.system->log, AC_LOG_ERROR, a->path, "pre_restart failed: %s: %s",
                ac_error_name(ctx.failure), ac_error_message(ctx.failure));
        ac_error_release(ctx.failure);
    }
    set_state(a, AC__ACTOR_RESTARTING);
    size_t n = ac__children_count(a->children);
    ac__children_each(a->children, stop_child, NULL);
    if (n == 0)
        finish_restart(a);
}

static void resume(ac__actor *a)
{
    if (atomic_load_explicit(&a->state, memory_order_relaxed) != AC__ACTOR_SUSPENDED)
        return;
    ac__actor_clear_failure(a);
    set_state(a, AC__ACTOR_RUNNING);
}

static void child_failed(ac__actor *a, ac_ref *child_ref, ac_error *cause)
{
    ac__actor *child = ac__actor_of(child_ref);
    /* The guardian's table also grows under ac_spawn from other threads
     * (and rehashes as it grows): read it under the guardian lock. */
    lock_children(a);
    bool current = ac__children_find(a->children, child->name) == child;
    unlock_children(a);
    if (!current)
        return; /* stale: that child is gone */
    int st = atomic_load_explicit(&a->state, memory_order_relaxed);
    if (st >= AC__ACTOR_RESTARTING)
        return; /* the child is being stopped anyway */
    switch (ac__supervise_decide(a, child, cause)) {
    case AC_RESUME:
        ac__actor_push_sys(child, AC__SYS_RESUME, NULL);
        break;
    case AC_RESTART:
        ac__actor_push_sys(child, AC__SYS_RESTART, NULL);
        break;
    case AC_STOP:
        ac__actor_push_sys(child, AC__SYS_STOP, NULL);
        break;
    case AC_ESCALATE:
        if (st == AC__ACTOR_RUNNING)
            ac__actor_fail(a, ac_error_retain(cause), NULL);
        break;
    }
}

static void finish_stop(ac__actor *a)
{
    ac_ctx ctx = {.self = a};
    if (a->def->post_stop)
        a->def->post_stop(&ctx);
    if (ctx.failure) { /* nothing left to supervise: just tell */
        ac__log(&a->ref.system->log, AC_LOG_ERROR, a->path, "post_stop failed: %s: %s",
                ac_error_name(ctx.failure), ac_error_message(ctx.failure));
        ac_error_release(ctx.failure);
    }
    ac__actor_clear_failure(a);
    set_state(a, AC__ACTOR_DEAD);
    if (a->parent) /* the guardian is not counted as started either */
        ac__hook_count(a->ref.system, AC__EVENT_ACTORS_STOPPED, 1);
    ac__cell_ext *ext = a->ext;
    if (ext) {
        for (uint32_t i = 0; i < ext->watchers.count; i++)
            send_terminated(a, ext->watchers.items[i]);
        ac__refset_clear(&ext->watchers);
        for (uint32_t i = 0; i < ext->watching.count; i++) {
            ac_ref *w = ext->watching.items[i];
            ac__actor *t = ac__actor_of(w);
            if (t)
                ac__actor_push_sys(t, AC__SYS_UNWATCH, &a->ref);
            else
                w->ops->unwatch(w, &a->ref);
        }
        ac__refset_clear(&ext->watching);
        if (ext->user_data_free) {
            ext->user_data_free(a->user_data);
            ext->user_data_free = NULL;
        }
    }
    if (a->parent)
        ac__actor_push_sys(a->parent, AC__SYS_CHILD_TERMINATED, &a->ref);
    else
        ac__system_guardian_stopped(a->ref.system);
}

void ac__actor_begin_stop(ac__actor *a)
{
    if (atomic_load_explicit(&a->state, memory_order_relaxed) >= AC__ACTOR_STOPPING)
        return;
    /* Release: as in set_state. */
    atomic_store_explicit(&a->state, AC__ACTOR_STOPPING, memory_order_release);
    lock_children(a);
    size_t n = ac__children_count(a->children);
    ac__children_each(a->children, stop_child, NULL);
    unlock_children(a);
    if (n == 0)
        finish_stop(a);
}

static void child_terminated(ac__actor *a, ac_ref *child_ref)
{
    ac__actor *child = ac__actor_of(child_ref);
    lock_children(a);
    bool removed = ac__children_remove(a->children, child);
    size_t left = ac__children_count(a->children);
    unlock_children(a);
    if (removed)
        ac_ref_release(child_ref); /* the table's reference */
    if (left > 0)
        return;
    int st = atomic_load_explicit(&a->state, memory_order_relaxed);
    if (st == AC__ACTOR_STOPPING)
        finish_stop(a);
    else if (st == AC__ACTOR_RESTARTING)
        finish_restart(a);
}

/* ---- system messages -------------------------------------------------- */

/* The watch was promised when ac_watch returned AC_OK: a watcher that is
 * never told of the stop would wait for ever. */
static void add_watcher(ac__actor *a, ac_ref *watcher)
{
    if (AC__UNLIKELY(!ac__cell_ext_of(a) || ac__refset_add(&a->ext->watchers, watcher) != AC_OK))
        ac__oom_abort("a watcher of an actor");
}

void ac__actor_handle_sys(ac__actor *a, ac__sysmsg *m)
{
    bool dead = atomic_load_explicit(&a->state, memory_order_relaxed) == AC__ACTOR_DEAD;
    switch (m->kind) {
    case AC__SYS_STOP:
        ac__actor_begin_stop(a);
        break;
    case AC__SYS_WATCH:
        if (dead)
            send_terminated(a, m->ref);
        else
            add_watcher(a, m->ref);
        break;
    case AC__SYS_UNWATCH:
        if (a->ext)
            ac__refset_remove(&a->ext->watchers, m->ref);
        break;
    case AC__SYS_CHILD_TERMINATED:
        child_terminated(a, m->ref);
        break;
    case AC__SYS_FAILED:
        if (!dead)
            child_failed(a, m->ref, m->err);
        break;
    case AC__SYS_RESUME:
        resume(a);
        break;
    case AC__SYS_RESTART:
        begin_restart(a);
        break;
    }
    ac_ref_release(m->ref);
    ac_error_release(m->err);
    ac__free_small(m, sizeof *m);
}

ac_status ac_stop(ac_ref *ref)
{
    ac__actor *a = ac__actor_of(ref);
    if (!a)
        return ac__fail(AC_EINVAL, "ac_stop: %s", ref ? "not an actor ref" : "ref is NULL");
    /* Acquire pairs with set_state's release store of DEAD. */
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD)
        return AC_OK;
    ac__sysmsg *m = ac__sysmsg_new(AC__SYS_STOP, NULL, NULL);
    if (!m)
        return ac__fail(AC_ENOMEM, "ac_stop: out of memory for the stop of %s", a->path);
    ac__actor_push_sysmsg(a, m);
    return AC_OK;
}
