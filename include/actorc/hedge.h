/*
 * Hedging beyond scatter/gather: the hedged router, loser cancellation and
 * the per-routee counts. The hedge budget both routers take is declared in
 * scatter_gather.h. docs/hedging.md says when to use which.
 *
 * The hedged router asks one routee, and asks the next only when no
 * success has come back within the hedge delay (Akka's tail-chopping,
 * Dean and Barroso's hedged request): most requests cost one call, and
 * the slow ones get a second chance after the delay instead of waiting
 * out their tail. In detail, per message:
 *
 *   - The routees are tried in the order `order` chooses, routees known
 *     to be failing (their last answer was an error or a timeout, or
 *     their circuit breaker is open) moved to the end; at most
 *     max_attempts of them (default: all). By latency (the default): the
 *     routees with the lowest estimated latency (a weighted mean of their
 *     reply times, a request that lost to a later hedge counting as at
 *     least as long as it was out) times one more than their requests
 *     out; routees within twice the best count as equal and take turns.
 *     A routee passed over and not asked for probe_interval_ms is asked
 *     as the second attempt, sent at once with the first (a hedge, under
 *     the budget). In rotation: round robin from a start that moves by
 *     one per message. docs/hedging.md has the details.
 *   - The first goes at once. Each further one goes when the previous has
 *     gone unanswered for the hedge delay, or at once when an attempt
 *     answers with an error (or its routee had stopped, or its breaker
 *     refused it). Earlier attempts keep running: whichever succeeds
 *     first wins.
 *   - The first success is told to the caller with the winning routee as
 *     its sender, as scatter/gather does; later replies are dropped
 *     silently.
 *   - Failures reach the caller as one AggregateError sent by the router,
 *     with the messages of scatter/gather (scatter_gather.h) under the
 *     name "Hedged router": members are the routees asked, in the order
 *     they were asked, and N counts them:
 *       Hedged router actorc://demo/user/replicas: none of 2 routees
 *       replied within 80ms
 *       Hedged router actorc://demo/user/replicas: all 3 routees failed
 *       Hedged router actorc://demo/user/replicas: the circuit breakers
 *       of all 3 routees are open
 *       Hedged router actorc://demo/user/replicas has no routees left to
 *       send to
 *       Hedged router actorc://demo/user/replicas stopped while the
 *       request was still open
 *     "All failed" is known as soon as every routee that can still be
 *     asked has failed; the timeout bounds the whole request (every
 *     attempt ends at the same deadline).
 *   - Reply targets, GetRoutees and the Broadcast wrapper behave as with
 *     scatter/gather (router.h).
 *
 * The hedge delay is fixed (delay_us), or adaptive: the given percentile
 * (default p95) of the router's own observed latency, the time from
 * sending an attempt to its successful reply (winners' and losers'
 * alike), over the last `window` replies, kept within [floor_us,
 * ceiling_us]; until min_samples replies have been seen, delay_us. A
 * delay at p95 hedges about 5 % of requests. With a budget
 * (ac_hedge_budget), hedges beyond its ratio of primary requests are not
 * sent.
 *
 * With metrics on (metrics.h), besides router_hedged_resolved_total
 * (label outcome, as scatter/gather's) and router_hedged_latency_seconds:
 *   router_hedges_sent_total             counter: attempts beyond the first
 *   router_hedges_won_total              counter: requests such an attempt won
 *   router_hedge_budget_exhausted_total  counter, label router: messages
 *                                        sent with fewer routees than
 *                                        wanted because the budget was spent
 *   router_losers_cancelled_total        counter, label router: requests
 *                                        dropped unhandled at routees
 *                                        (cancel_losers)
 *   router_routee_outcomes_total         counter, labels router, routee,
 *                                        outcome: per routee asked, how its
 *                                        request ended: win, loss (it
 *                                        succeeded, or was cancelled, after
 *                                        the answer), error, timeout;
 *                                        counted once every routee asked has
 *                                        its outcome
 * `router` is "hedged" or "scatter-gather" (both routers count the last
 * three), `routee` the routee's name (routee-1 … routee-N), so the
 * series are bounded by the pool size. As with scatter/gather's families,
 * routers of one kind in a system share their series.
 */
#ifndef ACTORC_HEDGE_H
#define ACTORC_HEDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/export.h"
#include "actorc/router.h"
#include "actorc/scatter_gather.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_HEDGED_DEFAULT_TIMEOUT_MS AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS
#define AC_HEDGE_DEFAULT_DELAY_US 10000
#define AC_HEDGE_DEFAULT_PERCENTILE 95.0
#define AC_HEDGE_DEFAULT_WINDOW 1000
#define AC_HEDGE_DEFAULT_MIN_SAMPLES 100
/* The largest window accepted. */
#define AC_HEDGE_MAX_WINDOW 1000000
/* How long a routee may go unasked before the latency order probes it. */
#define AC_HEDGE_DEFAULT_PROBE_MS 500

typedef enum ac_hedge_delay_kind {
    AC_HEDGE_DELAY_FIXED = 0, /* delay_us, always */
    AC_HEDGE_DELAY_ADAPTIVE,  /* a percentile of observed latency */
} ac_hedge_delay_kind;

/* Whom the hedged router asks first, and in which order after. */
typedef enum ac_hedge_order {
    AC_HEDGE_ORDER_LATENCY = 0, /* the routees seen to answer fastest */
    AC_HEDGE_ORDER_ROTATION,    /* round-robin, whatever their latency */
} ac_hedge_order;

/* Zeroed: a fixed delay of 10 ms, every routee, no budget, no
 * cancellation, the scatter/gather timeout, the latency order probing
 * every 500 ms. */
typedef struct ac_hedged_options {
    /* Deadline of one request in ms, for every attempt; 0: 4,500.
     * Negative or above INT32_MAX is refused by the factory. */
    int64_t timeout_ms;
    /* Most routees asked per message; 0: every routee. Negative or above
     * the pool's size is refused. */
    int max_attempts;
    ac_hedge_delay_kind delay_kind;
    /* The hedge delay in us: the fixed one, or the adaptive one's value
     * until it has min_samples; 0: AC_HEDGE_DEFAULT_DELAY_US. Negative is
     * refused, and so is a delay that is not below the timeout. */
    int64_t delay_us;
    /* Adaptive only (refused with a fixed delay, except zeroes). */
    double percentile; /* in (0, 100); 0: 95 */
    int window;        /* replies remembered, 1..AC_HEDGE_MAX_WINDOW; 0: 1,000 */
    int min_samples;   /* 1..window; 0: 100, or the window if smaller */
    int64_t floor_us;   /* >= 0; 0: no floor */
    int64_t ceiling_us; /* floor_us..the timeout; 0: the timeout */
    /* Cap hedges (ac_hedge_budget, scatter_gather.h); copied. NULL: none. */
    const ac_hedge_budget *budget;
    /* Loser cancellation, as for scatter/gather (below). */
    bool cancel_losers;
    /* The order of attempts (above); 0: by latency. Any other value
     * than the enum's is refused. */
    ac_hedge_order order;
    /* By latency only: a routee not asked for this long is asked again,
     * as a hedge sent together with the first request, and what was
     * known of its latency is forgotten when its answer comes; 0:
     * AC_HEDGE_DEFAULT_PROBE_MS. Negative is refused, and so is a
     * value with the rotation order. */
    int64_t probe_interval_ms;
} ac_hedged_options;

/* Props for a hedged pool of `size` (>= 1) routees of `routee_def`.
 * `options` NULL: defaults. NULL with ac_last_error naming the option and
 * the bad value. Any thread. */
AC_API ac_props *ac_router_hedged(int size, const ac_actor_def *routee_def,
                                  const ac_hedged_options *options,
                                  const ac_routee_options *routee_opts);

/* A hedged group over routees[0..n) (borrowed, as the other groups take
 * them, router.h), ordered by latency as a pool's routees are, or in
 * rotation from a start that moves by one per message, in the group's
 * order. Whether a group's routees failed last is not remembered (no
 * routee is moved to the end for having failed), and the
 * per-routee outcome series are not counted: a group's routees have no
 * bounded names. max_attempts above n is refused; with routees added
 * later, it caps the attempts as given. NULL with ac_last_error as the
 * group factories (router.h) and ac_router_hedged. Any thread. */
AC_API ac_props *ac_router_group_hedged(ac_ref *const *routees, size_t n,
                                        const ac_hedged_options *options);

/* ---- loser cancellation ------------------------------------------------ */

/* With cancel_losers set on a hedged or scatter/gather router, once a
 * message has been answered (or has failed), the copies of it still
 * queued at routees are dropped unhandled: the routee's receive never
 * sees them (counted in router_losers_cancelled_total and as losses).
 * A routee that works asynchronously (it keeps the reply target and
 * answers later) can ask whether anyone still waits. Without
 * cancel_losers nothing changes: every routee handles every request
 * (losing routees are not cancelled), and both calls below say false.
 * A routee behind a circuit breaker (ac_routee_options.breaker) receives
 * its requests from the breaker's own reply ref, so its requests are
 * neither dropped nor reported cancelled. */

/* Is the message being handled a request that nobody waits for any more?
 * False outside receive and for anything but a hedged or scatter/gather
 * router's request with cancel_losers. Inside an actor. */
AC_API bool ac_request_cancelled(ac_ctx *ctx);
/* The same for a reply target kept for later (the sender of such a
 * request, retained): true once a reply to it would be wasted. NULL:
 * false. Any thread. */
AC_API bool ac_reply_cancelled(ac_ref *reply_to);

#ifdef __cplusplus
}
#endif
#endif
