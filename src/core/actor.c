/*
 * Actor cells: spawning, the turn, lifecycle, stop, death watch.
 *
 * An actor cell is its own ref (kind AC__REF_ACTOR) and lives while any
 * reference does: the spawner's, its parent's table entry, the scheduler's
 * (held while `scheduled` is 1), envelopes naming it as sender, watch sets.
 * The system frees whatever is left at terminate.
 *
 * Invariants:
 *  - Handlers of one actor run on one worker at a time: `scheduled` goes
 *    0 -> 1 exactly once per activation (exchange), and only the worker
 *    holding the activation runs the turn and clears it.
 *  - Everything below "written by the actor's own turn" in the cell is
 *    touched only by that turn; the guardian's children table is the one
 *    exception, guarded by the system's guardian lock.
 *  - Stop order: children stopped and gone, then post_stop, then
 *    Terminated to watchers, then the parent is told, then the mailbox is
 *    drained to dead letters. `state` becomes DEAD before the drain, so a
 *    sender that still sees RUNNING enqueues and schedules the actor, and
 *    that later turn drains the message to dead letters too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/actor_status.h"
#include "core/alloc.h"
#include "core/internal.h"
#include "core/last_error.h"

_Thread_local ac__actor *ac__tls_actor;

struct ac_props {
    const ac_actor_def *def;
    void *user_data;
    void (*user_data_free)(void *);
    bool has_strategy;
    bool count_mailbox;
    ac_supervisor_strategy strategy;
};

void ac__props_count_mailbox(ac_props *props) { props->count_mailbox = true; }

int ac__mailbox_len(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    if (!a || !a->count_mailbox ||
        atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD)
        return -1;
    /* Queued messages, plus one while a turn is pending or running: a
     * routee busy with a slow message is not idle. */
    return atomic_load_explicit(&a->mailbox_len, memory_order_relaxed) +
           atomic_load_explicit(&a->scheduled, memory_order_relaxed);
}

bool ac__ref_is_stopping(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    return a && atomic_load_explicit(&a->state, memory_order_acquire) >= AC__ACTOR_STOPPING;
}

bool ac__ref_is_dead(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    return a && atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD;
}

/* ---- message types owned by the core ---------------------------------- */

typedef struct terminated_payload {
    ac_ref *who;
} terminated_payload;

typedef struct dead_letter_payload {
    ac_msg *msg;
    ac_ref *sender;
    ac_ref *recipient;
} dead_letter_payload;

static void terminated_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(((terminated_payload *)payload)->who);
}

static void dead_letter_destroy(void *payload, size_t size)
{
    dead_letter_payload *p = payload;
    (void)size;
    ac_msg_release(p->msg);
    ac_ref_release(p->sender);
    ac_ref_release(p->recipient);
}

const ac_msg_type ac_msg_type_terminated = {.name = "actorc.Terminated",
                                            .destroy = terminated_destroy};
const ac_msg_type ac_msg_type_poison_pill = {.name = "actorc.PoisonPill"};

static void run_destroy(void *payload, size_t size)
{
    ac__run_header *h = payload;
    if (h->destroy)
        h->destroy(payload, size);
}

const ac_msg_type ac__msg_type_run = {.name = "actorc.Run", .destroy = run_destroy};
const ac_msg_type ac_msg_type_dead_letter = {.name = "actorc.DeadLetter",
                                             .destroy = dead_letter_destroy};

static ac_msg poison_pill = {
    .node = {.msg = &poison_pill},
    .type = &ac_msg_type_poison_pill,
    .refs = AC__MSG_IMMORTAL,
};

ac_msg *ac_poison_pill(void) { return &poison_pill; }

ac_ref *ac_terminated_ref(const ac_msg *msg)
{
    ac__clear_status();
    if (!msg || msg->type != &ac_msg_type_terminated)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL,
                             "ac_terminated_ref: message is %s, not a Terminated",
                             msg ? msg->type->name : "NULL");
    return ((const terminated_payload *)(const void *)msg->payload)->who;
}

static const dead_letter_payload *dead_letter_of(const ac_msg *msg, const char *fn)
{
    if (!msg || msg->type != &ac_msg_type_dead_letter)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "%s: message is %s, not a DeadLetter",
                             fn, msg ? msg->type->name : "NULL");
    return (const dead_letter_payload *)(const void *)msg->payload;
}

ac_msg *ac_dead_letter_msg(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_msg");
    return p ? p->msg : NULL;
}

ac_ref *ac_dead_letter_sender(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_sender");
    return p ? p->sender : NULL;
}

ac_ref *ac_dead_letter_recipient(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_recipient");
    return p ? p->recipient : NULL;
}

ac_msg *ac__dead_letter_msg_new(ac_msg *msg, ac_ref *sender, ac_ref *recipient)
{
    ac_msg *dl = ac_msg_new(&ac_msg_type_dead_letter, sizeof(dead_letter_payload));
    if (!dl)
        return NULL;
    dead_letter_payload *p = (dead_letter_payload *)(void *)dl->payload;
    p->msg = ac_msg_retain(msg);
    p->sender = ac_ref_retain(sender);
    p->recipient = ac_ref_retain(recipient);
    return dl;
}

/* ---- refs ------------------------------------------------------------- */

void ac__ref_init(ac_ref *ref, const ac__ref_ops *ops, ac_system *system)
{
    ref->ops = ops;
    atomic_init(&ref->refs, 1);
    ref->system = system;
}

/* A retain must come from a live reference: one from zero would hand out
 * an object whose destroy has run (the debug builds check it). */
ac_ref *ac_ref_retain(ac_ref *ref)
{
    if (ref) {
        unsigned before = atomic_fetch_add_explicit(&ref->refs, 1, memory_order_relaxed);
        AC__DEBUG_ASSERT(before != 0);
        (void)before;
    }
    return ref;
}

void ac__ref_release_n(ac_ref *ref, unsigned n)
{
    /* acq_rel: as in ac_ref_release. */
    unsigned before = atomic_fetch_sub_explicit(&ref->refs, n, memory_order_acq_rel);
    AC__DEBUG_ASSERT(before >= n);
    if (before == n)
        ref->ops->destroy(ref);
}

void ac_ref_release(ac_ref *ref)
{
    if (!ref)
        return;
    /* acq_rel: every other holder's uses happen before destroy. */
    unsigned before = atomic_fetch_sub_explicit(&ref->refs, 1, memory_order_acq_rel);
    AC__DEBUG_ASSERT(before != 0);
    if (before != 1)
        return;
    ref->ops->destroy(ref);
}

const char *ac_ref_path(const ac_ref *ref) { return ref ? ref->ops->path(ref) : ""; }

const char *ac_ref_name(const ac_ref *ref)
{
    if (!ref)
        return "";
    const char *path = ref->ops->path(ref);
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

ac_system *ac_ref_system(const ac_ref *ref) { return ref ? ref->system : NULL; }

static void actor_deliver(ac_ref *self, ac__node *node);
static void actor_destroy(ac_ref *self);
static const char *actor_path(const ac_ref *self) { return ((const ac__actor *)self)->path; }

static const ac__ref_ops actor_ops = {
    .kind = AC__REF_ACTOR,
    .deliver = actor_deliver,
    .destroy = actor_destroy,
    .path = actor_path,
};

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
    ac__free_small(props, sizeof *props);
}

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
    a->def = def;
    a->path = path;
    a->name = path + plen + 1;
    return a;
}

static ac__cell_ext *ext_of(ac__actor *a)
{
    if (!a->ext && (a->ext = ac__alloc_small(sizeof *a->ext)))
        memset(a->ext, 0, sizeof *a->ext);
    return a->ext;
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
    if (!a || (needs_ext && !ext_of(a)) || ac__children_add(parent->children, a) != AC_OK) {
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
    a->parent = parent;
    a->user_data = props->user_data;
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

/* ---- scheduling and delivery ------------------------------------------ */

void ac__actor_schedule(ac__actor *a)
{
    /* seq_cst load: see ac__mailbox_push. The exchange makes exactly one
     * producer win the 0 -> 1 transition. */
    if (atomic_load_explicit(&a->scheduled, memory_order_seq_cst) != 0)
        return;
    if (atomic_exchange_explicit(&a->scheduled, 1, memory_order_acq_rel) != 0)
        return;
    ac_ref_retain(&a->ref);
    ac__scheduler_push(a->ref.system->sched, a, ac__tls_actor != NULL);
}

static void actor_deliver(ac_ref *self, ac__node *node)
{
    ac__actor *a = (ac__actor *)self;
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD) {
        ac__dead_letter(self->system, node, self);
        return;
    }
    if (AC__UNLIKELY(a->count_mailbox))
        atomic_fetch_add_explicit(&a->mailbox_len, 1, memory_order_relaxed);
    ac__mailbox_push(&a->mailbox, node);
    ac__actor_schedule(a);
}

static ac__node *pop_message(ac__actor *a)
{
    ac__node *node = ac__mailbox_pop(&a->mailbox);
    if (AC__UNLIKELY(a->count_mailbox) && node)
        atomic_fetch_sub_explicit(&a->mailbox_len, 1, memory_order_relaxed);
    return node;
}

void ac__actor_push_sys(ac__actor *a, ac__sys_kind kind, ac_ref *ref)
{
    ac__actor_push_sys_err(a, kind, ref, NULL);
}

ac__sysmsg *ac__sysmsg_new(ac__sys_kind kind, ac_ref *ref, ac_error *err)
{
    ac__sysmsg *m = ac__alloc_small(sizeof *m);
    if (AC__UNLIKELY(!m))
        return NULL;
    m->kind = kind;
    m->ref = ac_ref_retain(ref);
    m->err = ac_error_retain(err);
    return m;
}

void ac__sysmsg_free(ac__sysmsg *m)
{
    ac_ref_release(m->ref);
    ac_error_release(m->err);
    ac__free_small(m, sizeof *m);
}

void ac__actor_push_sys_err(ac__actor *a, ac__sys_kind kind, ac_ref *ref, ac_error *err)
{
    ac__sysmsg *m = ac__sysmsg_new(kind, ref, err);
    if (AC__UNLIKELY(!m)) /* losing a system message would hang a stop */
        ac__oom_abort("a system message");
    ac__actor_push_sysmsg(a, m);
}

void ac__actor_push_sysmsg(ac__actor *a, ac__sysmsg *m)
{
    ac__sysmsg *head = atomic_load_explicit(&a->sysq, memory_order_relaxed);
    do {
        m->next = head;
        /* Release publishes m; seq_cst pairs with the worker's check of
         * sysq after it clears `scheduled`. */
    } while (!atomic_compare_exchange_weak_explicit(&a->sysq, &head, m, memory_order_seq_cst,
                                                    memory_order_relaxed));
    ac__actor_schedule(a);
}

ac_status ac_tell(ac_ref *target, ac_msg *msg, ac_ref *sender)
{
    if (AC__UNLIKELY(!msg))
        return ac__fail(AC_EINVAL, "ac_tell: message is NULL");
    if (AC__UNLIKELY(!target)) {
        ac_status st = ac__fail(AC_EINVAL, "ac_tell: target is NULL (message %s dropped)",
                                msg->type->name);
        ac_msg_release(msg);
        return st;
    }
    ac__node *node = ac__node_make(msg, sender);
    if (AC__UNLIKELY(!node))
        return AC_ENOMEM; /* msg released, error recorded by ac__node_make */
    target->ops->deliver(target, node);
    return AC_OK;
}

ac_status ac_reply(ac_ctx *ctx, ac_msg *msg)
{
    if (!ctx) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_reply: ctx is NULL");
    }
    if (!ctx->sender) {
        if (!msg)
            return ac__fail(AC_EINVAL, "ac_reply: message is NULL");
        ac__node *node = ac__node_make(msg, &ctx->self->ref);
        if (!node)
            return AC_ENOMEM; /* msg released, error recorded by ac__node_make */
        ac__dead_letter(ctx->self->ref.system, node, NULL);
        return AC_OK;
    }
    return ac_tell(ctx->sender, msg, &ctx->self->ref);
}

ac_status ac_forward(ac_ctx *ctx, ac_ref *target)
{
    if (!ctx || !ctx->msg)
        return ac__fail(AC_EINVAL, "ac_forward: no current message (%s)",
                        ctx ? "called outside receive" : "ctx is NULL");
    return ac_tell(target, ac_msg_retain(ctx->msg), ctx->sender);
}

ac_status ac_stop(ac_ref *ref)
{
    ac__actor *a = ac__actor_of(ref);
    if (!a)
        return ac__fail(AC_EINVAL, "ac_stop: %s", ref ? "not an actor ref" : "ref is NULL");
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD)
        return AC_OK;
    ac__sysmsg *m = ac__sysmsg_new(AC__SYS_STOP, NULL, NULL);
    if (!m)
        return ac__fail(AC_ENOMEM, "ac_stop: out of memory for the stop of %s", a->path);
    ac__actor_push_sysmsg(a, m);
    return AC_OK;
}

/* ---- death watch ------------------------------------------------------ */

static void send_terminated(ac__actor *dead, ac_ref *watcher)
{
    ac_msg *m = ac_msg_new(&ac_msg_type_terminated, sizeof(terminated_payload));
    if (AC__UNLIKELY(!m)) /* a watcher waits for it */
        ac__oom_abort("a Terminated message");
    ((terminated_payload *)(void *)m->payload)->who = ac_ref_retain(&dead->ref);
    ac_tell(watcher, m, &dead->ref);
}

ac_status ac_watch(ac_ctx *ctx, ac_ref *target)
{
    if (!ctx)
        return ac__fail(AC_EINVAL, "ac_watch: ctx is NULL");
    ac__actor *t = ac__actor_of(target);
    if (!t)
        return ac__fail(AC_EINVAL, "ac_watch: %s", target ? "not an actor ref" : "target is NULL");
    ac__cell_ext *ext = ext_of(ctx->self);
    if (!ext)
        return ac__fail(AC_ENOMEM, "ac_watch: out of memory");
    if (t == ctx->self || ac__refset_contains(&ext->watching, target))
        return AC_OK;
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
    if (!t)
        return ac__fail(AC_EINVAL, "ac_unwatch: %s",
                        target ? "not an actor ref" : "target is NULL");
    if (!ctx->self->ext || !ac__refset_contains(&ctx->self->ext->watching, target))
        return AC_OK;
    ac__sysmsg *m = ac__sysmsg_new(AC__SYS_UNWATCH, &ctx->self->ref, NULL);
    if (!m)
        return ac__fail(AC_ENOMEM, "ac_unwatch: out of memory");
    ac__refset_remove(&ctx->self->ext->watching, target);
    ac__actor_push_sysmsg(t, m);
    return AC_OK;
}

/* ---- lifecycle -------------------------------------------------------- */

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

static void fail_actor(ac__actor *a, ac_error *cause, ac_msg *msg);

static void set_state(ac__actor *a, ac__actor_state st)
{
    /* Release: producers' acquire loads (DEAD check) see what came before. */
    atomic_store_explicit(&a->state, (int)st, memory_order_release);
}

/* init (on a zeroed state) then pre_start, or post_restart after a restart. */
static void actor_start(ac__actor *a, ac_error *restart_cause)
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
        fail_actor(a, ctx.failure, NULL);
}

/* ---- failure and supervision ------------------------------------------ */

static ac__failure_record *failure_record(ac__actor *a)
{
    if (AC__UNLIKELY(!ext_of(a))) /* a failure must reach the parent */
        ac__oom_abort("an actor's failure record");
    return &a->ext->failure;
}

/* Suspend `a` and report `cause` (consumed) to its parent. */
static void fail_actor(ac__actor *a, ac_error *cause, ac_msg *msg)
{
    ac__log(a->ref.system, AC_LOG_ERROR, a->path, "failed%s%s: %s: %s", msg ? " handling a " : "",
            msg ? msg->type->name : "", ac_error_name(cause), ac_error_message(cause));
    ac__failure_record *f = failure_record(a);
    ac_error_release(f->cause);
    ac_msg_release(f->failed_msg);
    f->cause = cause;
    f->failed_msg = ac_msg_retain(msg);
    set_state(a, AC__ACTOR_SUSPENDED);
    ac__actor_push_sys_err(a->parent, AC__SYS_FAILED, &a->ref, cause);
}

static void clear_failure(ac__actor *a)
{
    if (!a->ext)
        return;
    ac_error_release(a->ext->failure.cause);
    ac_msg_release(a->ext->failure.failed_msg);
    a->ext->failure.cause = NULL;
    a->ext->failure.failed_msg = NULL;
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

static bool stop_child(ac__actor *child, void *unused);

static void finish_restart(ac__actor *a)
{
    ac_error *cause = a->ext ? ac_error_retain(a->ext->failure.cause) : NULL;
    clear_failure(a);
    actor_start(a, cause);
    ac_error_release(cause);
}

static void begin_restart(ac__actor *a)
{
    if (atomic_load_explicit(&a->state, memory_order_relaxed) != AC__ACTOR_SUSPENDED)
        return;
    AC__METRIC_COUNT(a->ref.system, AC__METRIC_RESTARTS, 1);
    ac_ctx ctx = {.self = a};
    ac__failure_record *f = a->ext ? &a->ext->failure : NULL;
    if (a->def->pre_restart)
        a->def->pre_restart(&ctx, f ? f->cause : NULL, f ? f->failed_msg : NULL);
    else if (a->def->post_stop)
        a->def->post_stop(&ctx);
    if (ctx.failure) { /* a failing pre_restart does not stop the restart */
        ac__log(a->ref.system, AC_LOG_ERROR, a->path, "pre_restart failed: %s: %s",
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
    clear_failure(a);
    set_state(a, AC__ACTOR_RUNNING);
}

static void begin_stop(ac__actor *a);

static void child_failed(ac__actor *a, ac_ref *child_ref, ac_error *cause)
{
    ac__actor *child = ac__actor_of(child_ref);
    if (ac__children_find(a->children, child->name) != child)
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
            fail_actor(a, ac_error_retain(cause), NULL);
        break;
    }
}

static void finish_stop(ac__actor *a)
{
    ac_ctx ctx = {.self = a};
    if (a->def->post_stop)
        a->def->post_stop(&ctx);
    if (ctx.failure) { /* nothing left to supervise: just tell */
        ac__log(a->ref.system, AC_LOG_ERROR, a->path, "post_stop failed: %s: %s",
                ac_error_name(ctx.failure), ac_error_message(ctx.failure));
        ac_error_release(ctx.failure);
    }
    clear_failure(a);
    set_state(a, AC__ACTOR_DEAD);
    if (a->parent) /* the guardian is not counted as started either */
        AC__METRIC_COUNT(a->ref.system, AC__METRIC_ACTORS_STOPPED, 1);
    ac__cell_ext *ext = a->ext;
    if (ext) {
        for (uint32_t i = 0; i < ext->watchers.count; i++)
            send_terminated(a, ext->watchers.items[i]);
        ac__refset_clear(&ext->watchers);
        for (uint32_t i = 0; i < ext->watching.count; i++)
            ac__actor_push_sys(ac__actor_of(ext->watching.items[i]), AC__SYS_UNWATCH, &a->ref);
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

static bool stop_child(ac__actor *child, void *unused)
{
    (void)unused;
    ac__actor_push_sys(child, AC__SYS_STOP, NULL);
    return true;
}

static void begin_stop(ac__actor *a)
{
    if (atomic_load_explicit(&a->state, memory_order_relaxed) >= AC__ACTOR_STOPPING)
        return;
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

/* The watch was promised when ac_watch returned AC_OK: a watcher that is
 * never told of the stop would wait for ever. */
static void add_watcher(ac__actor *a, ac_ref *watcher)
{
    if (AC__UNLIKELY(!ext_of(a) || ac__refset_add(&a->ext->watchers, watcher) != AC_OK))
        ac__oom_abort("a watcher of an actor");
}

static void handle_sys(ac__actor *a, ac__sysmsg *m)
{
    bool dead = atomic_load_explicit(&a->state, memory_order_relaxed) == AC__ACTOR_DEAD;
    switch (m->kind) {
    case AC__SYS_STOP:
        begin_stop(a);
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

static bool drain_sys(ac__actor *a)
{
    /* Acquire pairs with the pushers' release (seq_cst) CAS. */
    ac__sysmsg *m = atomic_exchange_explicit(&a->sysq, NULL, memory_order_acquire);
    if (!m)
        return false;
    ac__sysmsg *fifo = NULL;
    while (m) { /* the stack is newest-first: reverse it */
        ac__sysmsg *next = m->next;
        m->next = fifo;
        fifo = m;
        m = next;
    }
    while (fifo) {
        ac__sysmsg *next = fifo->next;
        handle_sys(a, fifo);
        fifo = next;
    }
    return true;
}

/* The senders' references of one turn are dropped in runs: a stream of
 * messages from one sender costs one atomic subtraction, not one each. */
typedef struct sender_refs {
    ac_ref *ref;
    unsigned n;
} sender_refs;

static void sender_refs_flush(sender_refs *held)
{
    if (held->ref)
        ac__ref_release_n(held->ref, held->n);
    held->ref = NULL;
    held->n = 0;
}

static void sender_refs_drop(sender_refs *held, ac_ref *sender)
{
    if (!sender)
        return;
    if (sender != held->ref) {
        sender_refs_flush(held);
        held->ref = sender;
    }
    held->n++;
}

static void dispatch(ac__actor *a, ac__node *node, sender_refs *held)
{
    ac_ref *sender;
    ac_msg *msg = ac__node_take_msg(node, &sender);
    if (AC__UNLIKELY(msg->type == &ac_msg_type_poison_pill)) {
        begin_stop(a);
    } else if (AC__UNLIKELY(msg->type == &ac_msg_type_terminated) &&
               (!a->ext || !ac__refset_remove(&a->ext->watching,
                                              ((terminated_payload *)(void *)msg->payload)->who))) {
        /* unwatched (or never watched): dropped */
    } else {
        ac_ctx ctx = {.self = a, .msg = msg, .sender = sender};
        if (AC__UNLIKELY(msg->type == &ac__msg_type_run))
            ((ac__run_header *)(void *)msg->payload)->run(&ctx, msg);
        else
            a->def->receive(&ctx, msg);
        if (AC__UNLIKELY(ctx.failure != NULL))
            fail_actor(a, ctx.failure, msg);
    }
    sender_refs_drop(held, sender);
    ac_msg_release(msg);
}

static void drain_to_dead_letters(ac__actor *a)
{
    ac__node *node;
    while ((node = pop_message(a)))
        ac__dead_letter(a->ref.system, node, &a->ref);
}

static int state_of(ac__actor *a)
{
    return atomic_load_explicit(&a->state, memory_order_relaxed);
}


static void end_turn(ac__actor *a);

void ac__actor_turn(ac__actor *a, int batch)
{
    ac__tls_actor = a;
    if (state_of(a) == AC__ACTOR_NEW) {
        actor_start(a, NULL);
        AC__METRIC_COUNT(a->ref.system, AC__METRIC_ACTORS_STARTED, 1);
    }
    drain_sys(a);
    sender_refs held = {0};
    uint64_t handled = 0;
    for (int i = 0; i < batch && state_of(a) == AC__ACTOR_RUNNING; i++) {
        if (atomic_load_explicit(&a->sysq, memory_order_relaxed) && drain_sys(a))
            continue;
        ac__node *node = pop_message(a);
        if (!node)
            break;
        dispatch(a, node, &held);
        handled++;
    }
    sender_refs_flush(&held);
    /* Counted per turn, not per message. */
    AC__METRIC_COUNT(a->ref.system, AC__METRIC_MESSAGES, handled);
    if (state_of(a) == AC__ACTOR_DEAD)
        drain_to_dead_letters(a);
    ac__tls_actor = NULL;
    end_turn(a);
}

/* Give up the activation, unless work is left or arrived meanwhile. The
 * consumer-only view of the mailbox is read while we still own it; after
 * `scheduled` is cleared another worker may own it, so from then on only
 * the atomic `head` and `sysq` are read. A producer that pushed before
 * the clear saw scheduled == 1 and left the scheduling to us: its push
 * moved `head` away from what we read before the clear. seq_cst on both
 * sides (mailbox push, the clear and the loads) makes that visible. */
static void end_turn(ac__actor *a)
{
    int st = state_of(a);
    bool mailbox_counts = st == AC__ACTOR_RUNNING || st == AC__ACTOR_DEAD;
    /* head first: a push that lands after this read changes head; one that
     * landed before is seen by maybe_nonempty (it reads head too). */
    ac__link *head = atomic_load_explicit(&a->mailbox.head, memory_order_seq_cst);
    bool leftover = mailbox_counts && ac__mailbox_maybe_nonempty(&a->mailbox);
    atomic_store_explicit(&a->scheduled, 0, memory_order_seq_cst);
    bool more = leftover || atomic_load_explicit(&a->sysq, memory_order_seq_cst) ||
                (mailbox_counts &&
                 atomic_load_explicit(&a->mailbox.head, memory_order_seq_cst) != head);
    if (more && atomic_exchange_explicit(&a->scheduled, 1, memory_order_acq_rel) == 0) {
        ac__scheduler_push(a->ref.system->sched, a, false); /* keeps our reference */
        return;
    }
    ac_ref_release(&a->ref);
}

/* ---- teardown --------------------------------------------------------- */

static void drain_queues(ac__actor *a)
{
    ac__node *node;
    while ((node = ac__mailbox_pop(&a->mailbox)))
        ac__node_free(node);
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
    clear_failure(a);
    ac__children_destroy(a->children);
    if (a->ext) {
        ac__refset_clear(&a->ext->watchers);
        ac__refset_clear(&a->ext->watching);
        if (a->ext->user_data_free)
            a->ext->user_data_free(a->user_data);
        ac__free_small(a->ext, sizeof *a->ext);
    }
    free(a);
}

static void actor_destroy(ac_ref *self)
{
    ac__actor *a = (ac__actor *)self;
    ac__registry_remove(self->system, a);
    /* Nothing can be queued any more: queuing needs a reference. */
    drain_queues(a);
    free_cell(a);
}

void ac__actor_drain_for_teardown(ac__actor *a) { drain_queues(a); }

void ac__actor_destroy_now(ac__actor *a) { free_cell(a); }

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

/* ---- context ---------------------------------------------------------- */

ac_ref *ac_self(ac_ctx *ctx) { return ctx ? &ctx->self->ref : NULL; }
ac_ref *ac_sender(ac_ctx *ctx) { return ctx ? ctx->sender : NULL; }
ac_system *ac_ctx_system(ac_ctx *ctx) { return ctx ? ctx->self->ref.system : NULL; }
const char *ac_self_path(ac_ctx *ctx) { return ctx ? ctx->self->path : ""; }
const char *ac_self_name(ac_ctx *ctx) { return ctx ? ctx->self->name : ""; }
void *ac_ctx_state(ac_ctx *ctx) { return ctx ? ctx->self->state_mem : NULL; }
void *ac_ctx_user_data(ac_ctx *ctx) { return ctx ? ctx->self->user_data : NULL; }

ac_ref *ac_parent(ac_ctx *ctx)
{
    return ctx && ctx->self->parent ? &ctx->self->parent->ref : NULL;
}

typedef struct collect_arg {
    ac_ref **out;
    size_t cap, n;
} collect_arg;

static bool collect_child(ac__actor *child, void *arg)
{
    collect_arg *c = arg;
    if (c->n < c->cap)
        c->out[c->n] = &child->ref;
    c->n++;
    return true;
}

size_t ac_children(ac_ctx *ctx, ac_ref **out, size_t cap)
{
    if (!ctx)
        return 0;
    collect_arg c = {.out = out, .cap = out ? cap : 0};
    ac__children_each(ctx->self->children, collect_child, &c);
    return c.n;
}

ac_ref *ac_child(ac_ctx *ctx, const char *name)
{
    ac__clear_status();
    if (!ctx || !name)
        return ac__fail_null(AC_EINVAL, "ac_child: %s is NULL", ctx ? "name" : "ctx");
    ac__actor *c = ac__children_find(ctx->self->children, name);
    return c ? &c->ref : ac__fail_null(AC_ENOTFOUND, "%s has no child \"%s\"", ctx->self->path, name);
}

void ac_logv(ac_ctx *ctx, ac_log_level level, const char *fmt, va_list ap)
{
    if (!ctx || !fmt)
        return;
    ac__logv(ctx->self->ref.system, level, ctx->self->path, fmt, ap);
}

void ac_log(ac_ctx *ctx, ac_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_logv(ctx, level, fmt, ap);
    va_end(ap);
}

bool ac_in_actor(void) { return ac__tls_actor != NULL; }
