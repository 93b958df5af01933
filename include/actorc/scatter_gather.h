/*
 * Scatter/gather-first-completed: the hedged request.
 *
 * Every message is asked of every routee with the scatter's timeout; the
 * first successful reply is told to the caller with the winning routee as
 * its sender; later replies are discarded silently (no dead letter, no log
 * line, no metric). N routees each do the whole job, so you pay N times
 * the work and receive the minimum of N latencies instead of a random one:
 * it lowers the tail, not the load. Losers are not cancelled, so keep it
 * for idempotent reads.
 *
 * Reply targets: an ask (ac_ask_wait, ac_ask, ac_ask_in), or
 * ac_tell(router, msg, self) inside an actor, where the reply arrives as
 * an ordinary message from the winning routee. A tell with no sender
 * scatters nothing: the message is dropped and a warning naming the
 * router is logged; the router keeps running.
 *
 * Failures reach the caller as one AggregateError (as an error message,
 * sent by the router, which rejects an ask with AC_EFAILED), members in
 * scatter order. Its message is one of (here N = 3 routees, a timeout of
 * 80 ms, a router at actorc://demo/user/replicas):
 *   Scatter/gather router actorc://demo/user/replicas: none of 3 routees
 *   replied within 80ms
 *       3 AskTimeoutErrors
 *   Scatter/gather router actorc://demo/user/replicas: all 3 routees failed
 *       what each returned (an error reply, or an ActorStoppedError for a
 *       routee that had stopped, or an AskTimeoutError for a slow one)
 *   Scatter/gather router actorc://demo/user/replicas has no routees left
 *   to scatter to
 *       no members; answered at once
 *   Scatter/gather router actorc://demo/user/replicas stopped while the
 *   scatter was still open
 *       no members
 * (each on one line). ac_error_all_timeouts() tells "too slow" from
 * "broken". Out of memory while creating a scatter, the caller gets a
 * RouterError from the router instead. The other routers answer an ask
 * they cannot deliver differently: an UndeliverableError with AC_EDEAD
 * (router.h, which lists what every router kind answers). So does a
 * Broadcast wrapper (ac_broadcast_new) sent to this router: it bypasses
 * the scatter, and the first routee to answer settles the ask. GetRoutees
 * is answered by the router itself (router.h).
 *
 * The timeout bounds the whole scatter and applies to each routee's ask.
 * Keep the caller's own ask timeout above it (the defaults, 4,500 and
 * 5,000 ms, do), or the caller gives up before the router can report.
 *
 * Options beyond the timeout (all off when zeroed):
 *   quorum K >= 2   answer when K routees have succeeded, with a Quorum
 *                   message (below) sent by the router; fail as soon as
 *                   fewer than K can still succeed, with
 *                     Scatter/gather router actorc://demo/user/replicas:
 *                     2 of 3 routees failed; a quorum of 2 can no longer
 *                     be reached
 *                   whose members are the errors of the routees that
 *                   failed so far (at the deadline: every routee that has
 *                   not succeeded), in scatter order.
 *   budget          ask fewer routees (never fewer than the quorum) when
 *                   the budget of extra requests is spent; N in the
 *                   messages above is then the number asked.
 *   cancel_losers   once answered, drop the requests still queued at the
 *                   routees (hedge.h).
 * With metrics on, each routee's outcomes are counted too (hedge.h).
 */
#ifndef ACTORC_SCATTER_GATHER_H
#define ACTORC_SCATTER_GATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/export.h"
#include "actorc/msg.h"
#include "actorc/router.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS 4500

/* ---- the hedge budget ------------------------------------------------ */

/* A cap on extra requests, as a share of primary ones (Finagle's retry
 * budget, gRPC's retry throttling): a token bucket that every message the
 * router routes fills by `ratio` tokens, and that every request beyond
 * the first for a message (a hedge, or a scatter's second and later
 * routees) empties by one. When the bucket holds less than one token the
 * extra request is not sent: the hedged router leaves that message
 * unhedged, scatter/gather asks fewer routees (never fewer than its
 * quorum, so never none). So an overload that slows every routee cannot
 * be amplified: extra load stays within `ratio` of the primary load, plus
 * the saved-up burst. The bucket starts full. Used by the hedged router
 * (hedge.h) and by scatter/gather. */
#define AC_HEDGE_BUDGET_DEFAULT_MAX_TOKENS 10.0
#define AC_HEDGE_BUDGET_MAX_TOKENS_LIMIT 1000000.0
typedef struct ac_hedge_budget {
    /* Extra requests allowed per primary request, 0..1 (0.05: 5 %). */
    double ratio;
    /* Most tokens the bucket holds, the longest burst of extra requests;
     * 0: AC_HEDGE_BUDGET_DEFAULT_MAX_TOKENS; otherwise 1..1,000,000. */
    double max_tokens;
} ac_hedge_budget;

/* ---- scatter/gather ---------------------------------------------------- */

typedef struct ac_scatter_gather_options {
    /* Deadline of one scatter in ms; 0: the default (4,500). Negative or
     * above INT32_MAX is refused by the factory. */
    int64_t timeout_ms;
    /* How many routees must succeed: 0 or 1, the first reply (as above);
     * K in 2..size, a quorum: the caller gets one Quorum message (below)
     * holding the first K replies, and an AggregateError as soon as fewer
     * than K routees can still succeed. Negative or above the pool's size
     * is refused by the factory. */
    int quorum;
    /* Cap the routees asked beyond the quorum (see ac_hedge_budget);
     * copied. NULL: every routee, every time. */
    const ac_hedge_budget *budget;
    /* Loser cancellation: once a scatter is answered, its requests still
     * queued at routees are dropped unhandled, and a routee that answers
     * later can see that nobody waits any more (ac_request_cancelled,
     * ac_reply_cancelled in hedge.h). false: losers run to completion. */
    bool cancel_losers;
} ac_scatter_gather_options;

/* Props for a pool of `size` (>= 1) routees of `routee_def`. `options`
 * NULL: defaults. NULL with ac_last_error naming the option and the bad
 * value. Any thread. */
AC_API ac_props *ac_router_scatter_gather_first_completed(int size,
                                                          const ac_actor_def *routee_def,
                                                          const ac_scatter_gather_options *options,
                                                          const ac_routee_options *routee_opts);

/* Props for a group (router.h) over routees[0..n), with the same options
 * and the same contract as the pool, word for word: the answers, the four
 * AggregateError messages above (naming the group router's path), members
 * in routee order (the group's, in the order routees were added). The
 * routees as ac_router_group_round_robin takes them, `options` as above.
 * Stopping the router fails its open scatters ("stopped while the scatter
 * was still open") and leaves the routees running: their replies to those
 * scatters are discarded. A scatter that asked a routee later removed
 * (RemoveRoutee) waits for it as for any other. The per-routee outcome
 * series (hedge.h) are a pool's: a group's routees have no bounded
 * names, so a group counts none. Any thread. */
AC_API ac_props *ac_router_group_scatter_gather_first_completed(
    ac_ref *const *routees, size_t n, const ac_scatter_gather_options *options);
/* ---- the Quorum answer ------------------------------------------------- */

/* What a scatter with a quorum K >= 2 answers: the first K successful
 * replies with the routees that sent them, in the order they arrived,
 * sent by the router. The message holds a reference to each. */
AC_API extern const ac_msg_type ac_msg_type_quorum; /* "actorc.Quorum" */
/* How many replies it holds (K); 0 with ac_last_error (AC_EINVAL for
 * NULL, AC_ETYPE for another type of message). Any thread. */
AC_API size_t ac_quorum_count(const ac_msg *msg);
/* The i-th reply in arrival order and its sender (both borrowed from
 * `msg`), or NULL with ac_last_error: AC_EINVAL for NULL or i >= the
 * count, AC_ETYPE for another type of message. Any thread. */
AC_API ac_msg *ac_quorum_reply(const ac_msg *msg, size_t i);
AC_API ac_ref *ac_quorum_sender(const ac_msg *msg, size_t i);

#ifdef __cplusplus
}
#endif
#endif
