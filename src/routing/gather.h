/*
 * Gathers: one core for every gathering router. A gather is one
 * message's request to up to n routees, each through a slot (a one-shot
 * reply ref, ask/oneshot.h), answered when `quorum` of them have
 * succeeded, or failed as soon as that can no longer happen.
 *
 * The core owns everything but the choices: the route every gathering
 * kind shares (gather_route.c), the gathers themselves — slots, the
 * deadline, the verdict, stopping (gather.c) — what their callers are
 * told (gather_answers.c) and their metrics (gather_metrics.c). What a
 * kind does differently is its gathering policy (ac__gather_policy,
 * below): whom to ask, when each request goes out, what it learns from
 * how they end. Scatter/gather's (scatter_gather.c) asks everyone at
 * once; the hedged router's (gather_hedge.c) one by one, with a hedging
 * policy (hedge_policy.h) for the delay between them. What a kind says
 * differently is its names (ac__gather_names). No code of the core asks
 * which kind it serves.
 */
#ifndef AC_ROUTING_GATHER_H
#define AC_ROUTING_GATHER_H

#include "actorc/breaker.h"
#include "actorc/hedge.h"
#include "actorc/metrics.h"
#include "actorc/observe.h"
#include "actorc/scatter_gather.h"
#include "ask/oneshot.h"
#include "routing/hedge_budget.h"
#include "routing/router_internal.h"

typedef struct ac__gather ac__gather;
typedef struct ac__gather_slot ac__gather_slot;
typedef struct ac__gather_shared ac__gather_shared;
typedef struct ac__gather_metrics ac__gather_metrics;
typedef struct ac__gather_view ac__gather_view;

/* How a message was resolved (the `outcome` label). */
typedef enum ac__gather_outcome {
    AC__GATHER_FIRST,
    AC__GATHER_TIMEOUT,
    AC__GATHER_ALL_FAILED,
    AC__GATHER_STOPPED,
    AC__GATHER_NO_REPLY_TARGET,
    AC__GATHER_OUTCOMES
} ac__gather_outcome;

/* What differs between the gathering kinds in words and metric names;
 * nothing here changes what a router does. */
typedef struct ac__gather_names {
    const char *title;    /* "Scatter/gather router": starts every message */
    const char *noun;     /* "scatter": "stopped while the <noun> was still open" */
    const char *send_to;  /* "scatter to": "has no routees left to <send_to>" */
    const char *sent;     /* "scattered": "no reply target, nothing <sent>" */
    const char *label;    /* "scatter-gather": the `router` label */
    const char *resolved; /* family names and help */
    const char *resolved_help;
    const char *latency;
    const char *latency_help;
    /* The counters of requests sent beyond a message's first and of
     * messages such a request won; NULL: the kind has none. */
    const char *hedges_sent, *hedges_sent_help;
    const char *hedges_won, *hedges_won_help;
} ac__gather_names;

/* Breakers' permits a policy took before its gather was made: slot i's
 * request goes through breakers[i] with permits[i]. */
typedef struct ac__gather_permits {
    ac_breaker *const *breakers;
    const ac_breaker_permit *permits;
} ac__gather_permits;

/*
 * A gathering policy: what a kind does differently, as an ops table the
 * core calls without asking which one it holds. NULL optional hooks are
 * skipped.
 *
 * Threads. `ask`, `start` and `part_init` run in the router's turn.
 * Every other hook runs on whichever thread completes a request — a
 * routee's turn, the deadline or hedge timer, a breaker's timer, a tell
 * to a stopped routee, inside the very send — concurrently with each
 * other and with the router's turn; the core holds none of its locks
 * when it calls them. So a hook touches its gather's part, and the
 * policy's per-router state through atomics or locks of its own; it may
 * take the shared lock (sh->lock) but must not call back into the core
 * while holding it. `part_fini` and `free_state` run when nothing else
 * touches what they free.
 */
typedef struct ac__gather_policy {
    /* Whom to ask: for a message with a caller, while the set holds at
     * least the quorum, after the budget's deposit for it. Ends with
     * ac__gather_open, or answers the caller itself (the breakers
     * refused, too few can be asked). */
    void (*ask)(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st, ac_msg *msg,
                ac_ref *caller);
    /* Arm the deadline (ac__gather_arm_deadline), send the first
     * requests (ac__gather_send; permits NULL: none taken), then drop the
     * creator's reference. */
    void (*start)(ac__gather *g, ac_msg *msg, const ac__gather_permits *permits);
    /* Optional: what a gather of n slots keeps for the policy, after the
     * slots (g->part), set up from the places `picks` (as in
     * ac__gather_new) and `msg` (borrowed), let go when the gather is
     * freed. */
    size_t (*part_size)(uint32_t n);
    void (*part_init)(ac__gather *g, const ac__router_state *st, const uint32_t *picks,
                      ac_msg *msg);
    void (*part_fini)(ac__gather *g);
    /* Optional: the gather was sealed (no request goes out after this);
     * once per gather. */
    void (*sealed)(ac__gather *g);
    /* Optional: slot s's routee succeeded, or failed (an error reply, a
     * stopped routee, a breaker's refusal, the deadline; a cancellation
     * is not a failure), before the gather counts it. */
    void (*succeeded)(ac__gather_slot *s);
    void (*failed)(ac__gather_slot *s);
    /* Optional: a failure that calls for the next request at once (an
     * error reply, a stopped routee), after the gather has counted it and
     * while it is still open. */
    void (*retry)(ac__gather *g);
    /* Optional: slot s's reply won the gather (a quorum of 1), before the
     * caller is told. */
    void (*won)(ac__gather_slot *s);
    /* Optional: the policy's per-router state (sh->policy_state), freed
     * with the shared state. */
    void (*free_state)(void *state);
    /* Optional: the hedge delay as the system's view shows it (one JSON
     * value). On the thread that takes the view. */
    void (*delay_write)(ac_json *out, void *state);
} ac__gather_policy;

/* State shared by a router and its open gathers (outlives either). The
 * configuration is set by the factory and read-only after. */
struct ac__gather_shared {
    atomic_uint refs;
    pthread_mutex_t lock;
    ac__gather *open; /* under lock */
    ac_ref *router;   /* retained once, at start: the sender of failures; its
                       * path names the router in messages */
    const ac__gather_names *names;
    const ac__gather_policy *policy;
    void *policy_state; /* the policy's, freed by policy->free_state */
    uint32_t timeout_ms;
    uint32_t quorum; /* successes needed, >= 1 */
    int pool_size;   /* routee numbers run 1..pool_size; 0: a group's, none */
    bool cancel_losers;
    bool has_budget;
    ac__hedge_budget budget;
    _Atomic(ac__gather_metrics *) metrics; /* see ac__gather_metrics_of */
    ac__gather_view *view; /* set at creation, NULL out of memory (gather_view.h) */
};

/* ---- the shared state, the kinds' factories (gather_route.c) ---- */

/* A shared state with one reference for `policy`, named `names`; NULL
 * with the error recorded. */
ac__gather_shared *ac__gather_shared_create(const ac__gather_names *names,
                                            const ac__gather_policy *policy, int pool_size,
                                            uint32_t timeout_ms, const char *fn);
void ac__gather_shared_release(ac__gather_shared *sh);
/* The router's path, for messages: its cell, retained by sh, holds it. */
static inline const char *ac__gather_router_path(const ac__gather_shared *sh)
{
    return ac_ref_path(sh->router);
}
/* Give `cfg` the shared state `sh` (consumed). */
void ac__gather_attach(ac__router_cfg *cfg, ac__gather_shared *sh);
/* Props for `cfg` with `sh` attached, both consumed; NULL (the error
 * recorded) when either is NULL or on failure. Any thread. */
ac_props *ac__gather_props(const char *fn, ac__router_cfg *cfg, ac__gather_shared *sh,
                           const ac_routee_options *routee_opts);
/* A deadline option: 0 (the default) or 1..INT32_MAX ms. */
ac_status ac__gather_check_timeout(const char *fn, int64_t timeout_ms, const char *what);

/* The route of every gathering kind (ac__router_kind.route) and its
 * hooks. In the router's turn. */
void ac__gather_route(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg);
void ac__gather_on_start(ac_ctx *ctx, ac__router_cfg *cfg);
void ac__gather_on_stop(ac_ctx *ctx, ac__router_cfg *cfg);
void ac__gather_on_spawn(ac_system *system, ac__router_cfg *cfg);

/* ---- the gathering kinds (scatter_gather.c, hedged.c) ---- */

extern const ac__router_kind ac__scatter_gather_kind;
extern const ac__router_kind ac__hedged_kind;
/* Make `cfg` (a member group's, member_group.h) a scatter/gather or a
 * hedged router after checking `options` (NULL: defaults) for a set of
 * any size. AC_EINVAL naming the option, AC_ENOMEM. On failure cfg is as
 * it was. */
ac_status ac__scatter_gather_setup(ac__router_cfg *cfg, const ac_scatter_gather_options *options,
                                   const char *fn);
ac_status ac__hedged_setup(ac__router_cfg *cfg, const ac_hedged_options *options, const char *fn);

/* ---- one gather (gather.c): for the policies ---- */

/* A slot: the reply ref one routee answers to. Its state word is the
 * one-shot's claim word (ask/oneshot.h: 0 until claimed, then 1), to
 * which the claimer writes the slot's outcome. */
typedef enum ac__slot_outcome {
    AC__SLOT_OPEN = 0, /* not claimed yet, or never sent */
    AC__SLOT_CLAIMED,  /* claimed, no outcome yet (or let go at teardown) */
    AC__SLOT_OK,       /* a reply that did not answer the caller: a loss */
    AC__SLOT_WON,      /* a reply that did (written by the settler) */
    AC__SLOT_FAILED,   /* an error reply, a stopped routee, a breaker's refusal */
    AC__SLOT_TIMEOUT,  /* the deadline */
    AC__SLOT_CANCELLED /* dropped unhandled at its routee after the answer */
} ac__slot_outcome;

struct ac__gather_slot {
    ac_ref ref; /* first: the reply ref the routee answers to */
    ac__gather *g;
    ac_ref *routee;   /* retained */
    ac_error *error;  /* written by the claimer before its outcome */
    atomic_int state; /* ac__slot_outcome: claimed by CAS, the outcome
                       * published with release */
    uint32_t number;  /* the routee's number in its pool (routee-K's K);
                       * 0: it has none (a group's) */
};

/* The successes of a quorum, in arrival order. */
typedef struct ac__gather_success {
    ac_msg *reply;
    ac_ref *sender;
    uint32_t slot;
} ac__gather_success;

/* `launched`: requests sent so far, with SEALED once no more will be. */
#define AC__GATHER_SEALED 0x80000000u

struct ac__gather {
    atomic_uint refs;
    atomic_int settled;
    atomic_uint launched;  /* count | AC__GATHER_SEALED */
    atomic_uint claimed;   /* slots with an outcome */
    atomic_uint succeeded; /* successes so far; their order is arrival order */
    atomic_uint stored;    /* successes kept for a quorum */
    atomic_uint failed;    /* failures so far (not cancellations) */
    ac__timer deadline;
    ac__gather_shared *shared;
    ac__gather *prev, *next; /* open list, under shared->lock */
    ac_ref *caller;
    ac_system *system;
    uint64_t start_ns; /* for the latency histogram; 0: not measured */
    uint32_t n, quorum;
    ac__gather_success *successes; /* quorum >= 2: `quorum` of them, after the slots */
    void *part;                    /* the policy's, after the slots and successes */
    ac__gather_slot slots[];
};

static inline uint32_t ac__gather_count(uint32_t launched) { return launched & ~AC__GATHER_SEALED; }

/* A gather over n routees of the router's set `st`, asked in the order
 * of `picks` (their places in the set; NULL: the set's first n, in its
 * order), then started by the policy (its requests sent with `permits`,
 * NULL: none). Out of memory, the caller is told so instead, and the
 * permits are handed back. Each slot retains its routee and carries its
 * number. In the router's turn. */
void ac__gather_open(ac_ctx *ctx, ac__gather_shared *sh, const ac__router_state *st,
                     const uint32_t *picks, uint32_t n, ac_ref *caller, ac_msg *msg,
                     const ac__gather_permits *permits);
/* For a policy's start: arm the gather's deadline. */
void ac__gather_arm_deadline(ac__gather *g);
/* Send slot i's request (msg borrowed): through `breaker` with `permit`,
 * or (breaker NULL) told; drops the router's hold on the slot. */
void ac__gather_send(ac__gather *g, uint32_t i, ac_msg *msg, ac_breaker *breaker,
                     const ac_breaker_permit *permit);
void ac__gather_unref(ac__gather *g);
/* Seal: no request goes out after this; slots never sent are let go.
 * Returns how many went out. Any thread, holding a reference. */
uint32_t ac__gather_seal(ac__gather *g);
/* A slot just claimed fails: `err` (consumed; NULL only for a
 * cancellation) becomes its member error; `retry` asks the policy for
 * the next request at once. Drops the slot's own hold. */
void ac__gather_slot_failed(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome,
                            bool retry);
/* Fail the gather now if its quorum can no longer be reached. */
void ac__gather_check_failure(ac__gather *g);
/* Has the fate of the message been decided? Any thread. */
static inline bool ac__gather_settled(ac__gather *g)
{
    /* Acquire pairs with settle's CAS. */
    return atomic_load_explicit(&g->settled, memory_order_acquire) != 0;
}
/* The clock of the router's system in ns: the manual clock when it has
 * one, so that tests measure latencies exactly. */
uint64_t ac__gather_now_ns(const ac_system *sys);
/* post_stop, and so restart: every open gather of `sh` fails now. */
void ac__gather_stop_all(ac__gather_shared *sh);

/* ---- what callers are told (gather_answers.c) ---- */

/* `err`, an error that is part of an answer promised to a caller; NULL
 * (memory ran out) aborts, as the out-of-memory rule says. */
ac_error *ac__gather_error_or_abort(ac_error *err, const char *what);
/* The promised answer: an error message to `caller` (err consumed). */
void ac__gather_tell_error(ac_ref *caller, ac_error *err, ac_ref *sender);
/* A routee's error as a member of the AggregateError (consumed). */
ac_error *ac__gather_member_error(ac_error *err);
/* A settled gather's answers: the AggregateError over the first `asked`
 * slots, the quorum's replies, the router's stop. */
void ac__gather_answer_failed(ac__gather *g, uint32_t asked);
void ac__gather_answer_quorum(ac__gather *g);
void ac__gather_answer_stopped(ac__gather *g);

/* Answers made without a gather, in the router's turn. */
void ac__gather_answer_no_memory(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller, size_t n);
void ac__gather_answer_empty(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller);
/* A message without a sender: dropped with a warning. */
void ac__gather_drop_unanswerable(ac_ctx *ctx, ac__gather_shared *sh, ac_msg *msg);
/* Every breaker refused: an AggregateError of their open errors. */
void ac__gather_answer_all_open(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                                ac_error **refusals, uint32_t n);
/* Fewer than the quorum can be asked: an AggregateError of the n
 * refusals of `asked` routees, or (n == 0) of there being only `asked`. */
void ac__gather_answer_short(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                             ac_error **refusals, uint32_t n, uint32_t asked);

/* ---- metrics (gather_metrics.c) ---- */

ac__gather_metrics *ac__gather_metrics_of(ac__gather_shared *sh, ac_system *sys);
/* Count how a message was resolved, and (start_ns != 0) the time from
 * sending to answering the caller. Before the caller is answered. */
void ac__gather_count_outcome(ac__gather_shared *sh, ac_system *sys, ac__gather_outcome outcome,
                              uint64_t start_ns);
/* Every slot's outcome, once the gather is over (when it is freed). */
void ac__gather_count_slots(const ac__gather *g);
/* What else a gathering router counts, each in its own counter. */
typedef enum ac__gather_event {
    AC__GATHER_HEDGE_SENT,       /* a request beyond a message's first */
    AC__GATHER_HEDGE_WON,        /* a message such a request won */
    AC__GATHER_BUDGET_EXHAUSTED, /* a message sent to fewer than wanted */
    AC__GATHER_CANCELLED,        /* a request dropped unhandled at its routee */
    AC__GATHER_EVENTS
} ac__gather_event;
/* Count one; nothing while metrics are off, or for a counter the kind
 * has no name for. Any thread. */
void ac__gather_count_event(ac__gather_shared *sh, ac_system *sys, ac__gather_event event);
void ac__gather_metrics_free(ac__gather_metrics *m);

#endif
