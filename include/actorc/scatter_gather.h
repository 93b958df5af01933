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
 * scatter order. Its message is "Scatter/gather router <path>: " and then
 * one of (N routees, a timeout of 80 ms):
 *   none of N routees replied within 80ms    N AskTimeoutErrors
 *   all N routees failed                     what each returned
 *   has no routees left to scatter to        none
 *   stopped while the scatter was still open none
 * The other routers answer an ask they cannot deliver differently: an
 * UndeliverableError with AC_EDEAD (router.h).
 * ac_error_all_timeouts() tells "too slow" from "broken".
 *
 * The timeout bounds the whole scatter and applies to each routee's ask.
 * Keep the caller's own ask timeout above it (the defaults, 4,500 and
 * 5,000 ms, do), or the caller gives up before the router can report.
 */
#ifndef ACTORC_SCATTER_GATHER_H
#define ACTORC_SCATTER_GATHER_H

#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/export.h"
#include "actorc/router.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS 4500

typedef struct ac_scatter_gather_options {
    /* Deadline of one scatter in ms; 0: the default (4,500). Negative or
     * above INT32_MAX is refused by the factory. */
    int64_t timeout_ms;
} ac_scatter_gather_options;

/* Props for a pool of `size` (>= 1) routees of `routee_def`. `options`
 * NULL: defaults. NULL with ac_last_error naming the option and the bad
 * value. Any thread. */
AC_API ac_props *ac_router_scatter_gather_first_completed(int size,
                                                          const ac_actor_def *routee_def,
                                                          const ac_scatter_gather_options *options,
                                                          const ac_routee_options *routee_opts);

#ifdef __cplusplus
}
#endif
#endif
