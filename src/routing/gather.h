/*
 * Gathers (gather.c): what scatter/gather and the hedged router share.
 * A gather is one message's request to up to n routees, each through a
 * slot (a one-shot reply ref, ask/oneshot.h), answered when `quorum` of
 * them have succeeded or failed as soon as that can no longer happen.
 * Scatter/gather sends every slot's request at once; the hedged router
 * sends them one by one (gather_hedge.c). The metrics of both are in
 * gather_metrics.c.
 */
#ifndef AC_ROUTING_GATHER_H
#define AC_ROUTING_GATHER_H

#include "ask/oneshot.h"
#include "routing/hedge_budget.h"
#include "routing/latency_window.h"
#include "routing/router_internal.h"

typedef struct ac__gather ac__gather;
typedef struct ac__gather_metrics ac__gather_metrics;

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

extern const ac__gather_names ac__scatter_gather_names;
extern const ac__gather_names ac__hedged_names;

/* The hedge delay of a hedged router. */
typedef struct ac__hedge_delay {
    uint64_t fixed_ns;
    bool adaptive;
    ac__latency_window window; /* when adaptive */
} ac__hedge_delay;

/* State shared by a router and its open gathers (outlives either). The
 * configuration is set by the factory and read-only after. */
typedef struct ac__gather_shared {
    atomic_uint refs;
    pthread_mutex_t lock;
    ac__gather *open; /* under lock */
    ac_ref *router;   /* retained once, at start: the sender of failures; its
                       * path names the router in messages */
    const ac__gather_names *names;
    uint32_t timeout_ms;
    uint32_t quorum;      /* successes needed, >= 1 */
    uint32_t max_attempts; /* hedged: most routees asked; 0: all */
    int pool_size;
    bool cancel_losers;
    bool has_budget;
    ac__hedge_budget budget;
    bool hedged;
    ac__hedge_delay delay;      /* hedged */
    atomic_uchar *failing;      /* hedged, by routee number 1..pool_size */
    _Atomic(ac__gather_metrics *) metrics; /* see ac__gather_metrics_of */
} ac__gather_shared;

/* ---- the shared state ---- */

/* A shared state with one reference; NULL with the error recorded. */
ac__gather_shared *ac__gather_shared_create(const ac__gather_names *names, int pool_size,
                                            const char *fn);
void ac__gather_shared_release(ac__gather_shared *sh);
void ac__gather_shared_release_void(void *sh);
const char *ac__gather_router_path(const ac__gather_shared *sh);

/* ---- one gather ---- */

/* A gather over n routees of the router's set `st`, asked in the order
 * of `picks` (their places in the set; NULL: the set's first n, in its
 * order), answering `caller`. Each slot retains its routee and carries
 * its number. A hedged router's gather also keeps `msg` (borrowed) and
 * the routees' breakers (retained) for the requests it sends later. NULL
 * when out of memory. It starts with one reference for the creator,
 * which ac__gather_scatter and ac__gather_hedge consume. In the router's
 * turn. */
ac__gather *ac__gather_new(ac__gather_shared *sh, const ac__router_state *st,
                           const uint32_t *picks, uint32_t n, ac_ref *caller, ac_msg *msg,
                           ac_system *sys);
/* Arm the deadline and send every slot's request: plain tells, or
 * (breakers non-NULL) each through its routee's breaker with its permit. */
void ac__gather_scatter(ac__gather *g, ac_msg *msg, ac_breaker *const *breakers,
                        const ac_breaker_permit *permits);
/* Arm the deadline and send the first request; the rest follow as the
 * hedge delay passes or attempts fail (gather_hedge.c). */
void ac__gather_hedge(ac__gather *g);

/* ---- answers made without a gather (in the router's turn) ---- */

/* The promised answer: an error message to `caller` (err consumed). */
void ac__gather_tell_error(ac_ref *caller, ac_error *err, ac_ref *sender);
/* `err`, an error that is part of an answer promised to a caller; NULL
 * (memory ran out) aborts, as the out-of-memory rule says. */
ac_error *ac__gather_error_or_abort(ac_error *err, const char *what);
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

/* ---- the gathering kinds (scatter_gather.c, hedged.c) ---- */

extern const ac__router_kind ac__scatter_gather_kind;
extern const ac__router_kind ac__hedged_kind;
/* Make `cfg` a scatter/gather router's (kind and shared state) after
 * checking `options` (NULL: defaults) against a set of `size` routees
 * (-1: a member group's, of any size); per-routee series are counted for
 * a pool's routee-1 .. routee-<pool_size> (0: none). AC_EINVAL naming the
 * option, AC_ENOMEM. On failure cfg is as it was. */
ac_status ac__scatter_gather_setup(ac__router_cfg *cfg, const ac_scatter_gather_options *options,
                                   const char *fn, int size, int pool_size);
/* The same for a hedged group (hedged.c); it counts no per-routee series
 * and remembers no failing routees. */
ac_status ac__hedged_setup(ac__router_cfg *cfg, const ac_hedged_options *options, const char *fn,
                           int size);

/* ---- factories ---- */

/* Props for a router of `kind` (a gathering one) over `sh` (consumed,
 * configured); NULL with the error recorded. Any thread. */
ac_props *ac__gather_props(const char *fn, const ac__router_kind *kind, ac__gather_shared *sh,
                           int size, const ac_actor_def *routee_def,
                           const ac_routee_options *routee_opts);
/* A deadline option: 0 (the default) or 1..INT32_MAX ms. */
ac_status ac__gather_check_timeout(const char *fn, int64_t timeout_ms, const char *what);

/* ---- the kinds' common hooks ---- */

void ac__gather_on_start(ac_ctx *ctx, ac__router_cfg *cfg);
void ac__gather_on_stop(ac_ctx *ctx, ac__router_cfg *cfg);
void ac__gather_on_spawn(ac_system *system, ac__router_cfg *cfg);

/* ---- internals shared with gather_hedge.c ---- */

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

typedef struct ac__gather_slot {
    ac_ref ref; /* first: the reply ref the routee answers to */
    ac__gather *g;
    ac_ref *routee;  /* retained */
    ac_error *error; /* written by the claimer before its outcome */
    atomic_int state; /* ac__slot_outcome: claimed by CAS, the outcome
                       * published with release */
    uint32_t number;  /* the routee's number in its pool (routee-K's K);
                       * 0: it has none (a group's) */
} ac__gather_slot;

/* What a hedged gather keeps beyond a scatter's, after the slots (and a
 * quorum's successes): the hedge timer and what sending later needs. */
typedef struct ac__gather_attempt {
    ac_breaker *breaker; /* retained; NULL: none */
    uint64_t sent_ns;    /* when the request went out (the system's clock) */
} ac__gather_attempt;

typedef struct ac__gather_hedging {
    ac__gather *g;
    ac__timer timer; /* its state is under shared->lock: */
    bool armed, rearm;
    uint32_t due_for;             /* the attempt it will send */
    atomic_uint launch_requests;  /* see gather_hedge.c */
    ac_msg *request;              /* retained */
    ac__gather_attempt attempts[]; /* one per slot */
} ac__gather_hedging;

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
    uint64_t start_ns;    /* for the latency histogram; 0: not measured */
    uint32_t n, quorum;
    ac__gather_success *successes; /* quorum >= 2: `quorum` of them, after the slots */
    ac__gather_hedging *hedge;       /* hedged: after the slots and successes */
    ac__gather_slot slots[];
};

static inline uint32_t ac__gather_count(uint32_t launched) { return launched & ~AC__GATHER_SEALED; }

void ac__gather_unref(ac__gather *g);
/* Seal: no request goes out after this; slots never sent are let go.
 * Returns how many went out. Any thread, holding a reference. */
uint32_t ac__gather_seal(ac__gather *g);
/* A slot just claimed fails: `err` (consumed; NULL only for a
 * cancellation) becomes its member error; `trigger` (an attempt's failure,
 * on a hedged router) sends the next attempt at once. Drops the slot's
 * own hold. */
void ac__gather_slot_failed(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome,
                            bool trigger);
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

/* gather_hedge.c */
void ac__gather_launch(ac__gather *g);
void ac__gather_hedge_stop(ac__gather *g);
extern const ac__timer_ops ac__gather_hedge_timer_ops;

/* gather_metrics.c */
ac__gather_metrics *ac__gather_metrics_of(ac__gather_shared *sh, ac_system *sys);
/* Count how a message was resolved, and (start_ns != 0) the time from
 * sending to answering the caller. Before the caller is answered. */
void ac__gather_count_outcome(ac__gather_shared *sh, ac_system *sys, ac__gather_outcome outcome,
                              uint64_t start_ns);
/* Every slot's outcome, once the gather is over (when it is freed). */
void ac__gather_count_slots(const ac__gather *g);
void ac__gather_count_hedge_sent(ac__gather_shared *sh, ac_system *sys);
void ac__gather_count_hedge_won(ac__gather_shared *sh, ac_system *sys);
void ac__gather_count_budget_exhausted(ac__gather_shared *sh, ac_system *sys);
void ac__gather_count_cancelled(ac__gather_shared *sh, ac_system *sys);
void ac__gather_metrics_free(ac__gather_metrics *m);

#endif
