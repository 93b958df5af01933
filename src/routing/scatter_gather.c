/*
 * Scatter/gather-first-completed.
 *
 * One scatter per message: a header and one slot per routee in one
 * allocation. Each slot is a one-shot reply ref (ask/oneshot.h, its own
 * ref kind) used as the sender of the request to its routee. The first
 * thing to reach a slot claims it (CAS on `claimed`): a reply, an error
 * reply, the news that the routee had stopped, or the scatter's single
 * timer. So every slot ends with exactly one outcome, and one timer gives
 * the same results as one timer per routee ask: they would all share the
 * deadline.
 *
 *   - The first successful reply CAS-settles the scatter and is told to
 *     the caller with the winning routee as sender. Later replies find
 *     their slot claimed or the scatter settled and vanish silently.
 *   - Every claim decrements `remaining`; whoever takes it to zero on an
 *     unsettled scatter builds the AggregateError from the slots' errors in
 *     scatter order ("none of N … within Tms" if all timed out, "all N
 *     routees failed" otherwise) and cancels the timer. An error reply
 *     too deep to nest under the aggregate is kept as its name and message.
 *   - Open scatters sit in a list shared with the router (under its lock),
 *     so that post_stop — and a restart, through the default pre_restart —
 *     can settle them all at once with "stopped". Settling takes the lock
 *     and unlinks in the same critical section, so the list only ever holds
 *     unsettled scatters.
 *
 * References to a scatter: one per slot ref still alive (a slot ref lives
 * until it is claimed and the routee's envelope has let go of it), one for
 * the armed timer, one while listed as open. A slot ref starts with two
 * references: its own hold until claimed, and the router's until the
 * request carrying it has been told — the timer is armed before the
 * requests go out, and may claim a slot (dropping its own hold) while the
 * router is still telling, so without the router's hold a slot could be
 * destroyed and then handed to its routee as the sender. When the deadline has passed
 * every slot is claimed and the timer is gone, so nothing of the scatter
 * remains beyond replies still in flight.
 *
 * With per-routee breakers, a scatter goes only to the routees whose
 * breakers admit it, each request through its breaker (ac_breaker_tell,
 * with the slot as the sender the answer is passed on to), so that a
 * routee's answer or timeout counts before its slot sees it. When every
 * breaker refuses, the caller gets an AggregateError of their
 * CircuitBreakerOpenErrors at once.
 *
 * The router's handler only creates the scatter, arms the timer and fires
 * the requests; every answer is sent from the thread that completes it,
 * outside the router's turn, so scatters overlap freely.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ask/oneshot.h"
#include "core/alloc.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "routing/router_internal.h"

typedef struct scatter scatter;

/* State shared by a router and its open scatters (outlives either). */
typedef struct sg_shared {
    atomic_uint refs;
    pthread_mutex_t lock;
    scatter *open; /* under lock */
    ac_ref *router; /* retained once, at start: the sender of failures; its
                     * path names the router in messages */
    uint32_t timeout_ms;
    _Atomic(struct sg_metrics *) metrics; /* see metrics_of */
} sg_shared;

typedef struct sg_slot {
    ac_ref ref; /* the reply ref the routee answers to */
    scatter *sc;
    ac_ref *routee;   /* retained */
    ac_error *error;  /* written by the claimer */
    atomic_int claimed;
} sg_slot;

struct scatter {
    atomic_uint refs;
    atomic_int settled;
    atomic_int remaining;
    ac__timer timer;
    sg_shared *shared;
    scatter *prev, *next; /* open list, under shared->lock */
    ac_ref *caller, *router;
    uint64_t start_ns;
    uint32_t n;
    sg_slot slots[];
};

/* ---- metrics ---------------------------------------------------------- */

/* How a scatter/gather message was resolved (the `outcome` label). */
typedef enum sg_outcome {
    SG_FIRST,
    SG_TIMEOUT,
    SG_ALL_FAILED,
    SG_STOPPED,
    SG_NO_REPLY_TARGET,
    SG_OUTCOMES
} sg_outcome;

static const char *const outcome_names[SG_OUTCOMES] = {
    [SG_FIRST] = "first",
    [SG_TIMEOUT] = "timeout",
    [SG_ALL_FAILED] = "all-failed",
    [SG_STOPPED] = "stopped",
    [SG_NO_REPLY_TARGET] = "no-reply-target",
};

/* The two families' series in the router's system; they live as long as
 * its registry, which outlives every thread that counts. */
typedef struct sg_metrics {
    ac_counter *resolved[SG_OUTCOMES];
    ac_histogram *latency;
} sg_metrics;

/* Register the two families (registration is idempotent: every router of
 * a system gets the same series); NULL if that failed. */
static sg_metrics *metrics_create(ac_system *sys)
{
    static const char *const outcome_label[] = {"outcome"};
    ac_metric_options resolved = {
        .help = "Scatter/gather messages resolved, by outcome.",
        .label_names = outcome_label,
        .label_count = 1,
    };
    ac_metric_options latency = {
        .help = "Seconds from scattering a message to answering its caller."};
    sg_metrics *m = ac__calloc(1, sizeof *m);
    ac_metric_family *f = m ? ac_metrics_counter(sys, "router_scatter_gather_resolved_total",
                                                 &resolved)
                            : NULL;
    for (int o = 0; f && o < SG_OUTCOMES; o++)
        if (!(m->resolved[o] = ac_counter_series(f, &outcome_names[o])))
            f = NULL;
    if (f)
        f = ac_metrics_histogram(sys, "router_scatter_gather_latency_seconds", &latency);
    if (f && (m->latency = ac_histogram_series(f, NULL)))
        return m;
    free(m);
    return NULL;
}

/* The router's series, registered on first use once its system's metrics
 * are on; NULL while they are off. The first caller to publish wins; the
 * cache only ever goes from NULL to one value. */
static sg_metrics *metrics_of(_Atomic(sg_metrics *) *cache, ac_system *sys)
{
    /* Acquire pairs with the release CAS below: the series before the
     * pointer. */
    sg_metrics *m = atomic_load_explicit(cache, memory_order_acquire);
    if (AC__LIKELY(m != NULL) || !ac_metrics_enabled(sys))
        return m;
    sg_metrics *fresh = metrics_create(sys);
    if (!fresh)
        return NULL;
    /* Release: pairs with the acquire loads above and on failure here. */
    if (atomic_compare_exchange_strong_explicit(cache, &m, fresh, memory_order_release,
                                                memory_order_acquire))
        return fresh;
    free(fresh); /* the same series, published by another thread */
    return m;
}

/* Count how a message was resolved, and (start_ns != 0) the time from
 * scattering to answering the caller; counted before the caller is
 * answered, so an answer seen implies its count is visible. */
static void count_outcome(_Atomic(sg_metrics *) *cache, ac_system *sys, sg_outcome outcome,
                          uint64_t start_ns)
{
    sg_metrics *m = metrics_of(cache, sys);
    if (AC__LIKELY(m == NULL))
        return;
    ac_counter_inc(m->resolved[outcome]);
    if (start_ns == 0)
        return;
    uint64_t now = ac__now_ns();
    ac_histogram_observe(m->latency, now > start_ns ? (double)(now - start_ns) / 1e9 : 0.0);
}

/* ---- shared ----------------------------------------------------------- */

static void shared_release(sg_shared *sh)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_destroy(&sh->lock);
    free(atomic_load_explicit(&sh->metrics, memory_order_relaxed)); /* the last reference */
    ac_ref_release(sh->router);
    free(sh);
}

static void shared_release_void(void *p) { shared_release(p); }

/* The router's path: its cell, retained by sh, holds it. */
static const char *router_path(const sg_shared *sh) { return ac_ref_path(sh->router); }

/* An error that is part of an answer promised to a caller. Its parts are
 * valid, so NULL means memory ran out, and a caller left without its
 * answer would wait for ever: the out-of-memory rule says abort. */
static ac_error *must_have(ac_error *err, const char *what)
{
    if (AC__UNLIKELY(!err))
        ac__oom_abort(what);
    return err;
}

/* ---- scatter lifetime ------------------------------------------------- */

static size_t scatter_size(uint32_t n) { return sizeof(scatter) + n * sizeof(sg_slot); }

static void scatter_unref(scatter *sc)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&sc->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t i = 0; i < sc->n; i++) {
        ac_ref_release(sc->slots[i].routee);
        ac_error_release(sc->slots[i].error);
    }
    ac_ref_release(sc->caller);
    shared_release(sc->shared);
    free(sc);
}

/* Win the scatter's one outcome; unlinks it from the open list. */
static bool settle(scatter *sc)
{
    sg_shared *sh = sc->shared;
    pthread_mutex_lock(&sh->lock);
    int expected = 0;
    /* acq_rel: pairs with the other settlers' CAS; one wins. */
    bool won = atomic_compare_exchange_strong_explicit(&sc->settled, &expected, 1,
                                                       memory_order_acq_rel,
                                                       memory_order_relaxed);
    if (won) {
        if (sc->prev)
            sc->prev->next = sc->next;
        else
            sh->open = sc->next;
        if (sc->next)
            sc->next->prev = sc->prev;
        sc->prev = sc->next = NULL;
    }
    pthread_mutex_unlock(&sh->lock);
    if (won)
        scatter_unref(sc); /* the open list's reference */
    return won;
}

/* Answer `caller` with `err` (consumed, not NULL): the promised answer,
 * so a message that cannot be made aborts (see must_have). A fresh message
 * travels in its own envelope, so the tell itself allocates nothing. */
static void tell_error(ac_ref *caller, ac_error *err, ac_ref *sender)
{
    ac_msg *m = ac_msg_error_new(err);
    if (AC__UNLIKELY(!m))
        ac__oom_abort("a scatter/gather router's error answer");
    ac_tell(caller, m, sender);
}

static void fail_caller(scatter *sc, ac_error *err)
{
    tell_error(sc->caller, err, sc->shared->router);
}

/* The AggregateError of a scatter nobody won; when it cannot hold its
 * members, the same error without them. */
static ac_error *all_failed_error(scatter *sc, ac_error **members, bool all_timeouts)
{
    const char *path = router_path(sc->shared);
    ac_error *err =
        all_timeouts
            ? ac_error_aggregate(members, sc->n,
                                 "Scatter/gather router %s: none of %u routees replied within %ums",
                                 path, sc->n, sc->shared->timeout_ms)
            : ac_error_aggregate(members, sc->n, "Scatter/gather router %s: all %u routees failed",
                                 path, sc->n);
    if (err)
        return err;
    return must_have(ac_error_new(AC_AGGREGATE_ERROR,
                                  "Scatter/gather router %s: %s %u routees %s (their errors "
                                  "could not be gathered)",
                                  path, all_timeouts ? "none of" : "all", sc->n,
                                  all_timeouts ? "replied in time" : "failed"),
                     "a scatter/gather's AggregateError");
}

static void answer_all_failed(scatter *sc)
{
    ac_error *small[8];
    ac_error **members = sc->n <= 8 ? small : ac__malloc(sc->n * sizeof *members);
    if (!members)
        ac__oom_abort("the members of a scatter/gather's AggregateError");
    bool all_timeouts = true;
    for (uint32_t i = 0; i < sc->n; i++) {
        members[i] = sc->slots[i].error;
        all_timeouts = all_timeouts && ac_error_is(members[i], AC_ASK_TIMEOUT_ERROR);
    }
    ac_error *err = all_failed_error(sc, members, all_timeouts);
    if (members != small)
        free(members);
    count_outcome(&sc->shared->metrics, sc->shared->router->system,
                  all_timeouts ? SG_TIMEOUT : SG_ALL_FAILED, sc->start_ns);
    fail_caller(sc, err);
}

/* A slot has its outcome; the last one decides a scatter nobody won. */
static void slot_done(sg_slot *slot)
{
    scatter *sc = slot->sc;
    /* acq_rel: pairs with the other claimers' decrements, so the last one
     * sees every slot's error. */
    if (atomic_fetch_sub_explicit(&sc->remaining, 1, memory_order_acq_rel) == 1) {
        /* A stopping router stops its routees first, which fails the
         * requests still queued at them; such a scatter stays open for
         * post_stop to answer "stopped", as the router's stop is the cause. */
        if (!ac__ref_is_stopping(sc->shared->router) && settle(sc))
            answer_all_failed(sc);
        if (ac__timer_cancel(sc->shared->router->system->timers, &sc->timer))
            scatter_unref(sc); /* the timer's reference */
    }
    ac_ref_release(&slot->ref); /* the slot's own hold, kept until claimed */
}

/* ---- slot refs -------------------------------------------------------- */

/* A routee's error, as it will sit in the AggregateError (consumes err):
 * one that already nests AC_ERROR_MAX_DEPTH deep has no room under the
 * aggregate, so a stand-in with its name and message takes its place. */
static ac_error *member_error(ac_error *err)
{
    if (ac_error_depth(err) < AC_ERROR_MAX_DEPTH)
        return err;
    ac_error *stand_in = must_have(ac_error_new(ac_error_name(err),
                                                "%s (its members and causes are left out: it "
                                                "nests %zu deep, too deep for an "
                                                "AggregateError to hold)",
                                                ac_error_message(err), ac_error_depth(err)),
                                   "a scatter/gather member error");
    ac_error_release(err);
    return stand_in;
}

/* A slot's one outcome (ac__oneshot_ops.settle): an error waits in the
 * slot for the aggregate; the first reply wins the scatter. */
static void slot_settle(ac_ref *self, ac_msg *reply, ac_error *error, ac_ref *sender)
{
    sg_slot *slot = (sg_slot *)self;
    if (error) {
        slot->error = member_error(error);
    } else if (settle(slot->sc)) {
        count_outcome(&slot->sc->shared->metrics, self->system, SG_FIRST, slot->sc->start_ns);
        ac_tell(slot->sc->caller, reply, sender); /* the winner, as the sender */
    } else {
        ac_msg_release(reply); /* a loser: silently */
    }
    ac_ref_release(sender);
    slot_done(slot);
}

static ac_ref *slot_target(const ac_ref *self) { return ((const sg_slot *)self)->routee; }

static void slot_destroy(ac_ref *self) { scatter_unref(((sg_slot *)self)->sc); }

static const char *slot_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/scatter";
}

static const ac__oneshot_ops slot_ops = {
    .ref = {.kind = AC__REF_REPLY,
            .deliver = ac__oneshot_deliver,
            .destroy = slot_destroy,
            .path = slot_path,
            .undeliverable = ac__oneshot_undeliverable},
    .claim_offset = offsetof(sg_slot, claimed),
    .settle = slot_settle,
    .target = slot_target,
};

/* ---- the timer -------------------------------------------------------- */

static scatter *scatter_of_timer(ac__timer *t)
{
    return (scatter *)(void *)((char *)t - offsetof(scatter, timer));
}

static void timer_fire(ac__timer *t)
{
    scatter *sc = scatter_of_timer(t);
    for (uint32_t i = 0; i < sc->n; i++) {
        sg_slot *slot = &sc->slots[i];
        if (ac__oneshot_claim(&slot->ref))
            slot_settle(&slot->ref, NULL,
                        ac__oneshot_timeout_error(slot->routee, sc->shared->timeout_ms,
                                                  "a scatter/gather's timeout error"),
                        NULL);
    }
    scatter_unref(sc);
}

static void timer_discard(ac__timer *t)
{
    /* System teardown: no one is listening any more; just let go. */
    scatter *sc = scatter_of_timer(t);
    for (uint32_t i = 0; i < sc->n; i++)
        if (ac__oneshot_claim(&sc->slots[i].ref))
            ac_ref_release(&sc->slots[i].ref);
    settle(sc);
    scatter_unref(sc);
}

static const ac__timer_ops scatter_timer_ops = {.fire = timer_fire, .discard = timer_discard};

/* ---- the router side -------------------------------------------------- */

static scatter *scatter_new(sg_shared *sh, ac_ref *const *routees, uint32_t n, ac_ref *caller,
                            ac_ref *router)
{
    scatter *sc = ac__malloc(scatter_size(n));
    if (!sc)
        return NULL;
    atomic_init(&sc->refs, n + 2); /* slots, timer, open list */
    atomic_init(&sc->settled, 0);
    atomic_init(&sc->remaining, (int)n);
    memset(&sc->timer, 0, sizeof sc->timer);
    sc->timer.ops = &scatter_timer_ops;
    atomic_fetch_add_explicit(&sh->refs, 1, memory_order_relaxed);
    sc->shared = sh;
    sc->prev = NULL;
    sc->caller = ac_ref_retain(caller);
    /* The clock is read only for the latency histogram. */
    sc->start_ns = metrics_of(&sh->metrics, router->system) ? ac__now_ns() : 0;
    sc->n = n;
    for (uint32_t i = 0; i < n; i++) {
        sg_slot *slot = &sc->slots[i];
        ac__ref_init(&slot->ref, &slot_ops.ref, router->system);
        atomic_init(&slot->ref.refs, 2); /* its own hold and the router's (see the top) */
        slot->sc = sc;
        slot->routee = ac_ref_retain(routees[i]);
        slot->error = NULL;
        atomic_init(&slot->claimed, 0);
    }
    pthread_mutex_lock(&sh->lock);
    sc->next = sh->open;
    if (sh->open)
        sh->open->prev = sc;
    sh->open = sc;
    pthread_mutex_unlock(&sh->lock);
    return sc;
}

/* The caller still gets an answer: this one, small and made now. */
static void answer_no_memory(ac_ctx *ctx, sg_shared *sh, ac_ref *caller, size_t n)
{
    tell_error(caller,
               must_have(ac_error_new("RouterError",
                                      "Scatter/gather router %s: out of memory for a scatter "
                                      "to %zu routees",
                                      router_path(sh), n),
                         "a scatter/gather's answer"),
               ac_self(ctx));
}

/* Arm the timer and send the requests: plain tells, or (breakers
 * non-NULL) each through its routee's breaker with its permit. */
static void fire(ac_ctx *ctx, sg_shared *sh, scatter *sc, ac_msg *msg, ac_breaker **breakers,
                 const ac_breaker_permit *permits)
{
    /* Held until every request is sent: telling a routee that has stopped
     * claims its slot at once (as may the timer, once armed), and when all
     * are claimed the scatter would be freed before this loop ends. Taken
     * before the timer is armed, while no other thread can reach it. */
    atomic_fetch_add_explicit(&sc->refs, 1, memory_order_relaxed);
    ac__timer_arm(ac_ctx_system(ctx)->timers, &sc->timer, sh->timeout_ms);
    for (uint32_t i = 0; i < sc->n; i++) {
        if (breakers)
            ac_breaker_tell(breakers[i], &permits[i], sc->slots[i].routee, ac_msg_retain(msg),
                            &sc->slots[i].ref, sh->timeout_ms);
        else
            ac_tell(sc->slots[i].routee, ac_msg_retain(msg), &sc->slots[i].ref);
        ac_ref_release(&sc->slots[i].ref); /* the router's hold: the envelope has its own */
    }
    scatter_unref(sc);
}

/* Every routee's breaker refused: an AggregateError of their open errors. */
static void answer_all_open(ac_ctx *ctx, sg_shared *sh, ac_ref *caller, ac_error **refusals,
                            uint32_t n)
{
    ac_error *err = must_have(
        ac_error_aggregate(refusals, n,
                           "Scatter/gather router %s: the circuit breakers of all %u routees "
                           "are open",
                           router_path(sh), n),
        "a scatter/gather's answer");
    count_outcome(&sh->metrics, ac_ctx_system(ctx), SG_ALL_FAILED,
                  ac__now_ns()); /* answered at once */
    tell_error(caller, err, ac_self(ctx));
}

typedef struct guard_scratch {
    ac_breaker_permit permits[8];
    ac_breaker *breakers[8];
    ac_error *refusals[8];
} guard_scratch;

/* The routees whose breakers admit the message, into st->scratch with
 * their breakers and permits; the refusals' errors into `refusals`. */
static uint32_t admit_routees(ac__router_state *st, ac_breaker **breakers,
                              ac_breaker_permit *permits, ac_error **refusals)
{
    uint32_t admitted = 0;
    for (size_t i = 0; i < st->n; i++) {
        refusals[i] = NULL;
        if (!ac_breaker_acquire(st->breakers[i], &permits[admitted], &refusals[i]))
            continue;
        breakers[admitted] = st->breakers[i];
        st->scratch[admitted++] = st->routees[i];
    }
    return admitted;
}

static void scatter_guarded(ac_ctx *ctx, sg_shared *sh, ac__router_state *st, ac_msg *msg,
                            ac_ref *caller)
{
    guard_scratch small;
    bool big = st->n > 8;
    ac_breaker_permit *permits = big ? ac__malloc(st->n * sizeof *permits) : small.permits;
    ac_breaker **breakers = big ? ac__malloc(st->n * sizeof *breakers) : small.breakers;
    ac_error **refusals = big ? ac__malloc(st->n * sizeof *refusals) : small.refusals;
    if (!permits || !breakers || !refusals) {
        answer_no_memory(ctx, sh, caller, st->n);
        goto out;
    }
    uint32_t admitted = admit_routees(st, breakers, permits, refusals);
    if (admitted == 0) {
        answer_all_open(ctx, sh, caller, refusals, (uint32_t)st->n);
    } else {
        scatter *sc = scatter_new(sh, st->scratch, admitted, caller, ac_self(ctx));
        if (sc) {
            fire(ctx, sh, sc, msg, breakers, permits);
        } else {
            for (uint32_t i = 0; i < admitted; i++)
                ac_breaker_cancel(breakers[i], &permits[i]);
            answer_no_memory(ctx, sh, caller, admitted);
        }
    }
    for (size_t i = 0; i < st->n; i++)
        ac_error_release(refusals[i]);
out:
    if (big) {
        free(permits);
        free(breakers);
        free(refusals);
    }
}

static void route_scatter(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    sg_shared *sh = cfg->extra;
    ac_ref *caller = ac_sender(ctx);
    if (!caller) {
        count_outcome(&sh->metrics, ac_ctx_system(ctx), SG_NO_REPLY_TARGET, 0);
        ac_log_warn(ctx,
                    "Scatter/gather router %s: dropped a message (%s) without a sender: "
                    "no reply target, nothing scattered",
                    router_path(sh), ac_msg_type_name(msg));
        return;
    }
    if (st->n == 0) {
        ac_error *err = must_have(ac_error_aggregate(NULL, 0,
                                                     "Scatter/gather router %s has no routees "
                                                     "left to scatter to",
                                                     router_path(sh)),
                                  "a scatter/gather's answer");
        count_outcome(&sh->metrics, ac_ctx_system(ctx), SG_ALL_FAILED,
                      ac__now_ns()); /* answered at once */
        tell_error(caller, err, ac_self(ctx));
        return;
    }
    if (st->breakers) {
        scatter_guarded(ctx, sh, st, msg, caller);
        return;
    }
    scatter *sc = scatter_new(sh, st->routees, (uint32_t)st->n, caller, ac_self(ctx));
    if (!sc) {
        answer_no_memory(ctx, sh, caller, st->n);
        return;
    }
    fire(ctx, sh, sc, msg, NULL, NULL);
}

static void on_start(ac_ctx *ctx, ac__router_cfg *cfg)
{
    sg_shared *sh = cfg->extra;
    if (!sh->router) /* the same cell across restarts */
        sh->router = ac_ref_retain(ac_self(ctx));
}

/* The families are exposed, at zero, as soon as the router is spawned. */
static void on_spawn(ac_system *system, ac__router_cfg *cfg)
{
    sg_shared *sh = cfg->extra;
    (void)metrics_of(&sh->metrics, system);
}

/* post_stop, and so restart: every open scatter fails now. */
static void on_stop(ac_ctx *ctx, ac__router_cfg *cfg)
{
    (void)ctx;
    sg_shared *sh = cfg->extra;
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        scatter *sc = sh->open;
        if (sc)
            atomic_fetch_add_explicit(&sc->refs, 1, memory_order_relaxed);
        pthread_mutex_unlock(&sh->lock);
        if (!sc)
            return;
        if (settle(sc)) {
            count_outcome(&sh->metrics, sh->router->system, SG_STOPPED, sc->start_ns);
            fail_caller(sc, must_have(ac_error_aggregate(NULL, 0,
                                                         "Scatter/gather router %s stopped "
                                                         "while the scatter was still open",
                                                         router_path(sh)),
                                      "a scatter/gather's answer"));
        }
        scatter_unref(sc);
    }
}

const ac__router_kind ac__scatter_gather_kind = {
    .name = "scatter-gather-first-completed",
    .route = route_scatter,
    .on_start = on_start,
    .on_stop = on_stop,
    .on_spawn = on_spawn,
};

ac_status ac__scatter_gather_setup(ac__router_cfg *cfg, const ac_scatter_gather_options *options,
                                   const char *fn)
{
    int64_t timeout = options ? options->timeout_ms : 0;
    if (timeout < 0 || timeout > INT32_MAX)
        return ac__fail(AC_EINVAL,
                        "%s: timeout_ms = %lld is not usable; use 1..%d, or 0 for the "
                        "default (%d)",
                        fn, (long long)timeout, INT32_MAX, AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
    sg_shared *sh = ac__calloc(1, sizeof *sh);
    if (!sh)
        return ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    ac_status st = ac__mutex_init_hot(&sh->lock, "a scatter/gather router's lock");
    if (st != AC_OK) {
        free(sh);
        return st;
    }
    atomic_init(&sh->refs, 1);
    atomic_init(&sh->metrics, NULL);
    sh->timeout_ms = (uint32_t)(timeout ? timeout : AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
    cfg->kind = &ac__scatter_gather_kind;
    cfg->extra = sh;
    cfg->extra_free = shared_release_void;
    return AC_OK;
}

ac_props *ac_router_scatter_gather_first_completed(int size, const ac_actor_def *routee_def,
                                                   const ac_scatter_gather_options *options,
                                                   const ac_routee_options *routee_opts)
{
    ac__clear_status();
    static const char fn[] = "ac_router_scatter_gather_first_completed";
    ac__router_cfg *cfg = ac__calloc(1, sizeof *cfg);
    if (!cfg)
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    if (ac__scatter_gather_setup(cfg, options, fn) != AC_OK ||
        ac__router_check(fn, size, routee_def, routee_opts) != AC_OK ||
        ac__router_copy_breaker(cfg, routee_opts, fn) != AC_OK) {
        ac__router_cfg_free(cfg);
        return NULL;
    }
    cfg->n = size;
    cfg->routee_def = routee_def;
    cfg->routee_user = routee_opts ? routee_opts->user_data : NULL;
    return ac__router_props(cfg, routee_opts, fn);
}
