/*
 * The actor cell: the struct behind an actor's ac_ref, its system-message
 * queue, the parts allocated on first use, and the context handed to
 * callbacks. Which thread writes which field is said beside the field;
 * the functions over a cell are declared in turn.h, lifecycle.h and
 * spawn.h.
 */
#ifndef AC_CORE_CELL_H
#define AC_CORE_CELL_H

#include <string.h>

#include "core/alloc.h"
#include "core/children.h"
#include "core/mailbox.h"
#include "core/ref.h"

typedef enum ac__actor_state {
    AC__ACTOR_NEW = 0,    /* spawned; init/pre_start not run yet */
    AC__ACTOR_RUNNING,
    AC__ACTOR_SUSPENDED,  /* failed; waiting for the parent's decision */
    AC__ACTOR_RESTARTING, /* waiting for children to stop, then re-init */
    AC__ACTOR_STOPPING,   /* waiting for children to stop, then post_stop */
    AC__ACTOR_DEAD
} ac__actor_state;

typedef enum ac__sys_kind {
    AC__SYS_STOP = 1,
    AC__SYS_WATCH,            /* ref = watcher */
    AC__SYS_UNWATCH,          /* ref = watcher */
    AC__SYS_CHILD_TERMINATED, /* ref = child */
    AC__SYS_FAILED,           /* ref = child, err = cause */
    AC__SYS_RESUME,
    AC__SYS_RESTART
} ac__sys_kind;

typedef struct ac__sysmsg {
    struct ac__sysmsg *next;
    ac__sys_kind kind;
    ac_ref *ref;  /* retained */
    ac_error *err; /* retained */
} ac__sysmsg;

/* What an actor keeps about its failures; allocated at the first one. */
typedef struct ac__failure_record {
    ac_error *cause;    /* current failure, until resumed or restarted */
    ac_msg *failed_msg; /* the message being handled, or NULL */
    /* Restart accounting, written only in the parent's turns. */
    int restarts;
    int64_t window_start_ms;
} ac__failure_record;

/* The parts of a cell most actors never use, allocated on first use:
 * an idle actor costs only what it needs. Written in the actor's own turns
 * (or at spawn, before its first); the failure record's counting fields
 * are written in its parent's turns. */
typedef struct ac__cell_ext {
    ac__refset watchers; /* who watches me */
    ac__refset watching; /* whom I watch */
    void (*user_data_free)(void *);
    bool has_strategy;
    ac_supervisor_strategy strategy; /* how I supervise my children */
    ac__failure_record failure;
} ac__cell_ext;

struct ac__actor {
    ac_ref ref;
    /* Written by producers (any thread). */
    ac__mailbox mailbox;
    _Atomic(ac__sysmsg *) sysq; /* LIFO stack; consumer takes all and reverses */
    atomic_int scheduled;       /* 1 while queued or running; owns one ref */
    atomic_int state;           /* ac__actor_state; written by its own turn */
    atomic_int mailbox_len;     /* kept only when count_mailbox */
    bool count_mailbox;         /* set at spawn, then read-only */
    bool skip_cancelled;        /* set at spawn, then read-only */
    atomic_ushort restarts;     /* restarts so far (saturating); its own turn
                                 * writes, the view reads */
    /* Written by the actor's own turn only (or under the guardian lock). */
    struct ac__actor *run_next; /* injection queue link */
    const ac_actor_def *def;
    void *user_data;
    struct ac__actor *parent; /* NULL for the guardian; not retained */
    const char *path; /* stored after the state, in the same allocation */
    const char *name; /* points into path */
    ac__children *children;
    struct ac__cell_ext *ext; /* NULL until first needed */
    struct ac__front *front; /* core/front.h; set at spawn, freed with the cell */
    uint64_t seq; /* anonymous child names, ac_ask_in correlation ids */
    struct ac__actor *reg_prev, *reg_next; /* system registry, under its lock */
    _Alignas(16) unsigned char state_mem[];
};

static inline ac__actor *ac__actor_of(const ac_ref *ref)
{
    return (ref && ref->ops->kind == AC__REF_ACTOR) ? (ac__actor *)ref : NULL;
}

/* The cell's extension, allocated on first use; NULL when out of memory.
 * In the actor's own turn (or at spawn). */
static inline ac__cell_ext *ac__cell_ext_of(ac__actor *a)
{
    if (!a->ext && (a->ext = ac__alloc_small(sizeof *a->ext)))
        memset(a->ext, 0, sizeof *a->ext);
    return a->ext;
}

/* The context handed to callbacks; lives on the worker's stack. */
struct ac_ctx {
    ac__actor *self;
    ac_msg *msg;    /* current message, borrowed */
    ac_ref *sender; /* borrowed */
    ac_error *failure; /* set by ac_fail */
};

#endif
