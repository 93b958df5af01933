/*
 * Internal structures shared by the core files. Nothing here is public.
 */
#ifndef AC_CORE_INTERNAL_H
#define AC_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc.h"

#define AC__CACHELINE 64

#define AC__LIKELY(x) __builtin_expect(!!(x), 1)
#define AC__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Always-on invariant check: a violation would corrupt state. */
#define AC__ASSERT(cond)                                                      \
    do {                                                                      \
        if (AC__UNLIKELY(!(cond)))                                            \
            ac__assert_fail(#cond, __FILE__, __LINE__);                       \
    } while (0)
_Noreturn void ac__assert_fail(const char *expr, const char *file, int line);

/* Debug-only invariant check, for checks on hot paths: on in the Debug
 * (sanitizer) builds, compiled out where NDEBUG is defined. */
#ifdef NDEBUG
#define AC__DEBUG_ASSERT(cond) ((void)0)
#else
#define AC__DEBUG_ASSERT(cond) AC__ASSERT(cond)
#endif

/* ---- errors (status.c) ------------------------------------------------ */

/* Record a failure for this thread and return `status`. */
ac_status ac__fail(ac_status status, const char *fmt, ...) AC_PRINTF(2, 3);
/* As ac__fail, for functions returning a pointer: returns NULL. */
void *ac__fail_null(ac_status status, const char *fmt, ...) AC_PRINTF(2, 3);

/* ---- names (names.c) ------------------------------------------------- */

/* AC_OK, or AC_ENAME with a message saying what is wrong, for a name given
 * to ac_spawn (the rule is in actorc/actor.h). `name` is not NULL. */
ac_status ac__check_actor_name(const char *name);

/* A name as a message shows it, quotes included: printable ASCII as is
 * ('"' and '\' after a backslash), any other byte as \xHH, long names cut
 * short with "...". So a message is plain ASCII whatever the name holds.
 * `buf` holds AC__NAME_QUOTE_SIZE bytes or more. */
#define AC__NAME_QUOTE_SIZE 208
const char *ac__name_quote(const char *name, char *buf, size_t cap);

/* ---- locks (sync.c): core/sync_init.h ---------------------------------- */

/* ---- small-object caches (alloc.c) ------------------------------------ */

/* malloc/free with per-thread caches for blocks up to 256 bytes. The size
 * passed to free must be the size passed to alloc. Any thread. */
void *ac__alloc_small(size_t size);
void ac__free_small(void *p, size_t size);
/* Give cached blocks back to malloc: the depot's and the calling thread's.
 * Called when the last system has terminated. */
void ac__alloc_trim(void);

/* ---- envelopes and messages (msg.c) ----------------------------------- */

/* A queue node: one message on its way to one receiver. Every message has
 * one embedded in it, used when the message is sent by its only owner (the
 * common case); a shared message sent again gets a separate envelope. */
typedef struct ac__link {
    _Atomic(struct ac__link *) next;
} ac__link;

typedef struct ac__node {
    ac__link link; /* first: a queue's link is its node */
    ac_msg *msg;
    ac_ref *sender; /* retained, or NULL */
} ac__node;

#define AC__MSG_IMMORTAL UINT32_MAX

struct ac_msg {
    ac__node node;
    const ac_msg_type *type;
    atomic_uint refs; /* AC__MSG_IMMORTAL: static, never freed */
    uint32_t pad;
    size_t size;
    _Alignas(16) unsigned char payload[];
};

/* Wrap `msg` (consumed) and `sender` (borrowed, retained) in a node. NULL
 * when out of memory (msg is then released). */
ac__node *ac__node_make(ac_msg *msg, ac_ref *sender);
/* Release the node's message, sender and the node itself. */
void ac__node_free(ac__node *node);
/* Detach a node from its message: frees a separate envelope, releases the
 * sender; the message reference is handed to the caller. */
ac_msg *ac__node_take_msg(ac__node *node, ac_ref **sender_out);

/* ---- refs ------------------------------------------------------------- */

typedef enum ac__ref_kind {
    AC__REF_ACTOR = 1,
    AC__REF_REPLY        /* one-shot reply refs (ask, scatter slots) */
} ac__ref_kind;

typedef struct ac__ref_ops {
    ac__ref_kind kind;
    /* Deliver a node (consumed). */
    void (*deliver)(ac_ref *self, ac__node *node);
    /* Free the object once its last reference is gone. */
    void (*destroy)(ac_ref *self);
    const char *(*path)(const ac_ref *self);
    /* Optional: a message this ref sent could not be delivered to
     * `recipient`, because it had stopped (why == NULL) or for the reason
     * `why`. Lets an ask fail fast. */
    void (*undeliverable)(ac_ref *self, ac_ref *recipient, const char *why);
} ac__ref_ops;

struct ac_ref {
    const ac__ref_ops *ops;
    atomic_uint refs;
    ac_system *system;
};

void ac__ref_init(ac_ref *ref, const ac__ref_ops *ops, ac_system *system);
/* Drop n references at once. */
void ac__ref_release_n(ac_ref *ref, unsigned n);

/* ---- mailbox (mailbox.c) ---------------------------------------------- */

/* Intrusive MPSC queue (after Vyukov): producers exchange `head`, the one
 * consumer owns `tail`. `stub` is a next-pointer-only placeholder. */
typedef struct ac__mailbox {
    _Atomic(ac__link *) head; /* producers */
    ac__link *tail;           /* consumer */
    ac__link stub;            /* placeholder, never handed out */
} ac__mailbox;

void ac__mailbox_init(ac__mailbox *mb);
/* Any thread. */
void ac__mailbox_push(ac__mailbox *mb, ac__node *node);
/* Consumer only. NULL when empty (or when a push is half done). */
ac__node *ac__mailbox_pop(ac__mailbox *mb);
/* Consumer only: may the queue hold something (including a push in
 * progress)? Sequentially consistent with producers' pushes. */
bool ac__mailbox_maybe_nonempty(ac__mailbox *mb);

/* ---- actors (actor.c) ------------------------------------------------- */

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

/* A growable set of retained refs (watchers, watched). */
typedef struct ac__refset {
    ac_ref **items;
    uint32_t count, cap;
} ac__refset;

typedef struct ac__children ac__children;

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

typedef struct ac__actor {
    ac_ref ref;
    /* Written by producers (any thread). */
    ac__mailbox mailbox;
    _Atomic(ac__sysmsg *) sysq; /* LIFO stack; consumer takes all and reverses */
    atomic_int scheduled;       /* 1 while queued or running; owns one ref */
    atomic_int state;           /* ac__actor_state; written by its own turn */
    atomic_int mailbox_len;     /* kept only when count_mailbox */
    bool count_mailbox;         /* set at spawn, then read-only */
    /* Written by the actor's own turn only (or under the guardian lock). */
    struct ac__actor *run_next; /* injection queue link */
    const ac_actor_def *def;
    void *user_data;
    struct ac__actor *parent; /* NULL for the guardian; not retained */
    const char *path; /* stored after the state, in the same allocation */
    const char *name; /* points into path */
    ac__children *children;
    struct ac__cell_ext *ext; /* NULL until first needed */
    uint64_t seq; /* anonymous child names, ac_ask_in correlation ids */
    struct ac__actor *reg_prev, *reg_next; /* system registry, under its lock */
    _Alignas(16) unsigned char state_mem[];
} ac__actor;

static inline ac__actor *ac__actor_of(const ac_ref *ref)
{
    return (ref && ref->ops->kind == AC__REF_ACTOR) ? (ac__actor *)ref : NULL;
}

/* A message that runs a function in its receiver's turn instead of
 * receive (ask continuations). Its payload starts with this header. */
typedef struct ac__run_header {
    void (*run)(ac_ctx *ctx, ac_msg *msg);
    void (*destroy)(void *payload, size_t size); /* optional */
} ac__run_header;
extern const ac_msg_type ac__msg_type_run; /* "actorc.Run" */

/* The context handed to callbacks; lives on the worker's stack. */
struct ac_ctx {
    ac__actor *self;
    ac_msg *msg;    /* current message, borrowed */
    ac_ref *sender; /* borrowed */
    ac_error *failure; /* set by ac_fail */
};

/* ---- supervision (supervision.c) -------------------------------------- */

/* The parent's decision for a failed child (in the parent's turn). */
ac_directive ac__supervise_decide(ac__actor *parent, ac__actor *child, ac_error *cause);

/* Run one turn of `actor` on the calling worker. Consumes the scheduled
 * reference unless the actor is rescheduled. */
void ac__actor_turn(ac__actor *actor, int batch);
/* Mark scheduled and hand to the scheduler (takes a ref) if it was not. */
void ac__actor_schedule(ac__actor *actor);
void ac__actor_push_sys(ac__actor *actor, ac__sys_kind kind, ac_ref *ref);
void ac__actor_push_sys_err(ac__actor *actor, ac__sys_kind kind, ac_ref *ref, ac_error *err);
/* Free an actor's memory regardless of refcount (system teardown). */
void ac__actor_destroy_now(ac__actor *actor);
/* Keep a count of queued messages for actors spawned from `props`. */
void ac__props_count_mailbox(ac_props *props);
/* Queued messages of a counting actor; -1 when stopped or not counted. */
int ac__mailbox_len(const ac_ref *ref);
/* Is this ref an actor that is stopping or stopped? */
bool ac__ref_is_stopping(const ac_ref *ref);
/* Is this ref a stopped actor? */
bool ac__ref_is_dead(const ac_ref *ref);
/* Release what is queued in a cell (system teardown; refs are held). */
void ac__actor_drain_for_teardown(ac__actor *actor);
/* A dead-letter notice for subscribers (retains all three). */
ac_msg *ac__dead_letter_msg_new(ac_msg *msg, ac_ref *sender, ac_ref *recipient);
/* Guardian, created with the system. */
ac__actor *ac__guardian_create(ac_system *system);

/* ---- children table (children.c) -------------------------------------- */

ac__children *ac__children_create(void);
void ac__children_destroy(ac__children *c);
ac__actor *ac__children_find(const ac__children *c, const char *name);
int ac__children_add(ac__children *c, ac__actor *child);
bool ac__children_remove(ac__children *c, ac__actor *child);
size_t ac__children_count(const ac__children *c);
/* Visit every child; stop early when fn returns false. */
void ac__children_each(const ac__children *c, bool (*fn)(ac__actor *, void *), void *arg);

/* ---- refsets ---------------------------------------------------------- */

bool ac__refset_contains(const ac__refset *s, const ac_ref *r);
int ac__refset_add(ac__refset *s, ac_ref *r); /* retains; no duplicates */
bool ac__refset_remove(ac__refset *s, const ac_ref *r); /* releases */
void ac__refset_clear(ac__refset *s);           /* releases all */

/* ---- scheduler (scheduler.c) ------------------------------------------ */

typedef struct ac__scheduler ac__scheduler;
typedef struct ac__worker ac__worker;

ac__scheduler *ac__scheduler_create(ac_system *system, int workers, int batch);
int ac__scheduler_start(ac__scheduler *s);
/* Stop and join every worker; then release actors still queued. */
void ac__scheduler_stop(ac__scheduler *s);
void ac__scheduler_destroy(ac__scheduler *s);
/* Queue a runnable actor (from any thread). `fresh` marks a wake-up from a
 * send inside a handler (kept local, LIFO) rather than a requeue. */
void ac__scheduler_push(ac__scheduler *s, ac__actor *actor, bool fresh);

/* The worker running on this thread, if any, and the actor it is running. */
extern _Thread_local ac__worker *ac__tls_worker;
extern _Thread_local ac__actor *ac__tls_actor;

/* ---- timers (timers.c) ------------------------------------------------ */

#include "core/timer_wheel.h"

typedef struct ac__timers ac__timers;

ac__timers *ac__timers_create(ac_system *sys, bool manual);
/* Stop the timer thread (no more firing); armed timers stay armed. */
void ac__timers_stop(ac__timers *t);
/* Discard what is still armed and free. */
void ac__timers_destroy(ac__timers *t);
/* Arm `timer` to fire after delay_ms (>= 1 tick). Any thread. */
void ac__timer_arm(ac__timers *t, ac__timer *timer, uint64_t delay_ms);
/* The same in ns: never early, late by at most a tick (1/64 ms) plus the
 * timer thread's wake-up. Any thread. */
void ac__timer_arm_ns(ac__timers *t, ac__timer *timer, uint64_t delay_ns);
/* Re-arm a timer that just fired, interval_ns after its last deadline. */
void ac__timer_rearm(ac__timers *t, ac__timer *timer, uint64_t interval_ns);
/* True if it was armed and now is not (fire will not run). Any thread. */
bool ac__timer_cancel(ac__timers *t, ac__timer *timer);

/* ---- system (system.c) ------------------------------------------------ */

struct ac_system {
    char *name;
    int workers, batch;
    ac_log_level log_level;
    ac_log_sink_fn log_sink;
    void *log_sink_user;
    int dead_letter_log_per_s;
    /* The metrics registry, NULL while metrics are off (see ac__metrics_of). */
    _Atomic(struct ac__metrics *) metrics;

    ac__scheduler *sched;
    ac__timers *timers;
    ac__actor *guardian;

    /* Guards the guardian's children and `terminating`. */
    pthread_mutex_t guardian_lock;
    atomic_bool terminating;
    pthread_cond_t guardian_dead_cond;
    bool guardian_dead;

    /* Registry of every actor cell, for teardown. */
    pthread_mutex_t registry_lock;
    ac__actor *registry;

    /* Dead letters. */
    atomic_uint_fast64_t dead_letters;
    atomic_long dl_window;  /* second of the current log window */
    atomic_int dl_logged;   /* lines logged in that window */
    atomic_int dl_suppressed;
    pthread_mutex_t dl_sub_lock;
    ac__refset dl_subscribers; /* under dl_sub_lock */
    atomic_int dl_nsubs;       /* its count, readable without the lock */
};

void ac__registry_add(ac_system *sys, ac__actor *a);
void ac__registry_remove(ac_system *sys, ac__actor *a);
/* Count, log and publish one undeliverable message. Consumes node. */
void ac__dead_letter(ac_system *sys, ac__node *node, ac_ref *recipient);
/* The same, with the reason it was not delivered (NULL: the recipient had
 * stopped), told to a sender that waits for an answer. */
void ac__dead_letter_why(ac_system *sys, ac__node *node, ac_ref *recipient, const char *why);
/* The error an ask gets for a request that was not delivered:
 * ActorStoppedError (why == NULL) or UndeliverableError. */
ac_error *ac__undeliverable_error(const ac_ref *recipient, const char *why);
/* Called by the guardian when it has stopped. */
void ac__system_guardian_stopped(ac_system *sys);

/* ---- metrics (metrics/) ----------------------------------------------- */

typedef struct ac__metrics ac__metrics;

/* The runtime's own counters (actorc_..._total). */
typedef enum ac__metric_event {
    AC__METRIC_ACTORS_STARTED,
    AC__METRIC_ACTORS_STOPPED,
    AC__METRIC_MESSAGES,
    AC__METRIC_DEAD_LETTERS,
    AC__METRIC_ASK_TIMEOUTS,
    AC__METRIC_RESTARTS,
    AC__METRIC_EVENTS
} ac__metric_event;

/* How a scatter/gather message was resolved (the `outcome` label). */
typedef enum ac__sg_outcome {
    AC__SG_FIRST,
    AC__SG_TIMEOUT,
    AC__SG_ALL_FAILED,
    AC__SG_STOPPED,
    AC__SG_NO_REPLY_TARGET,
    AC__SG_OUTCOMES
} ac__sg_outcome;

/* The registry, or NULL while metrics are off: the one check on every
 * instrumented path. Acquire pairs with the release CAS in
 * ac_metrics_enable, so the runtime's series are seen initialised. */
static inline ac__metrics *ac__metrics_of(const ac_system *sys)
{
    return atomic_load_explicit(&((ac_system *)sys)->metrics, memory_order_acquire);
}

/* Count n events; cheap enough for every turn (no contended line). */
void ac__metrics_count(ac__metrics *m, ac__metric_event event, uint64_t n);
/* Count one outcome and, unless start_ns is 0, observe now - start_ns
 * (ac__now_ns) as the scatter's latency. */
void ac__metrics_scatter_resolved(ac__metrics *m, ac__sg_outcome outcome, uint64_t start_ns);
/* Stop the endpoint and free the registry (teardown, threads joined). */
void ac__metrics_destroy(ac_system *sys);

#define AC__METRIC_COUNT(sys, event, n)                                       \
    do {                                                                      \
        ac__metrics *ac__m_ = ac__metrics_of(sys);                            \
        if (AC__UNLIKELY(ac__m_ != NULL))                                     \
            ac__metrics_count(ac__m_, (event), (n));                          \
    } while (0)

/* ---- logging (log.c) -------------------------------------------------- */

void ac__log(ac_system *sys, ac_log_level level, const char *path, const char *fmt, ...)
    AC_PRINTF(4, 5);
void ac__logv(ac_system *sys, ac_log_level level, const char *path, const char *fmt,
              va_list ap);
/* ACTORC_LOG_LEVEL's level, or info; *unknown is the value when it names
 * no level (NULL otherwise). Records no error. */
ac_log_level ac__log_level_from_env(const char **unknown);
/* Warn, through the system's sink, that ACTORC_LOG_LEVEL was not understood. */
void ac__log_unknown_level(ac_system *sys, const char *value);

/* ---- time ------------------------------------------------------------- */

uint64_t ac__now_ns(void);

#endif
