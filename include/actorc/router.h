/*
 * Routers: pools of identical routees behind one actor.
 *
 * A router factory returns props to spawn like any actor. The router lives
 * at the path it is spawned with; its routees are its children routee-1 …
 * routee-N, spawned in its pre_start and watched. A routee sees the
 * original sender, so its reply goes straight to the caller. A routee that
 * stops is pruned from the pool (by identity, not by path); with none
 * left, messages go to dead letters and a warning is logged once, and an
 * ask fails at once with AC_EDEAD and an UndeliverableError saying "the
 * router has no routees left" (no sender). A routee's reply or error reply
 * reaches the asker with that routee as the sender. (Scatter/gather answers
 * its own failures with an AggregateError from the router: see
 * scatter_gather.h.)
 *
 * The one-shot strategies (round-robin, random, broadcast, smallest
 * mailbox, custom) spread work for throughput. Scatter/gather-first-
 * completed (scatter_gather.h) asks every routee and takes the first reply,
 * for a shorter tail.
 *
 * Breakers (ac_routee_options.breaker): each routee gets a circuit
 * breaker of its own (breaker.h), named after the routee's path, and every
 * message routed to it goes through that breaker as a request that
 * expects an answer: a reply or an error reply passes on to the sender
 * with the routee as its sender and counts; no answer within the
 * breaker's call_timeout_ms (default: AC_ASK_DEFAULT_TIMEOUT_MS) counts as
 * a failure. A routee whose breaker refuses receives no new messages
 * until its probe time, when one message goes through as the probe:
 * round-robin, random and smallest-mailbox pass on to the next routee
 * that is admitted, broadcast and custom leave it out. When every
 * routee's breaker refuses, the message is not sent: the sender gets a
 * CircuitBreakerOpenError at once (an ask fails with AC_EFAILED), and a
 * message without a sender is dropped. Broadcast-wrapped messages
 * (ac_broadcast_new) bypass the breakers. With metrics on, each breaker's
 * series carry breaker="<routee path>".
 *
 * The factories may be called from any thread. Bad arguments return NULL
 * with ac_last_error naming the argument, before anything is spawned.
 */
#ifndef ACTORC_ROUTER_H
#define ACTORC_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/export.h"
#include "actorc/supervision.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ac_breaker_options; /* breaker.h */

/* Options for the routees of a pool. NULL means defaults. */
typedef struct ac_routee_options {
    /* Handed to every routee as ac_ctx_user_data (borrowed: it must outlive
     * the pool). */
    void *user_data;
    /* How the router supervises its routees (copied); NULL: restart, 10
     * within 60 s. */
    const ac_supervisor_strategy *supervisor;
    /* Give each routee a circuit breaker with these options (copied; the
     * name is ignored: each is named after its routee's path); checked by
     * the factory as ac_breaker_create would. NULL: no breakers. */
    const struct ac_breaker_options *breaker;
} ac_routee_options;

AC_API ac_props *ac_router_round_robin(int n, const ac_actor_def *def,
                                       const ac_routee_options *routee_opts);
AC_API ac_props *ac_router_random(int n, const ac_actor_def *def,
                                  const ac_routee_options *routee_opts);
AC_API ac_props *ac_router_broadcast(int n, const ac_actor_def *def,
                                     const ac_routee_options *routee_opts);
/* Picks the routee with the fewest queued messages; ties rotate. */
AC_API ac_props *ac_router_smallest_mailbox(int n, const ac_actor_def *def,
                                            const ac_routee_options *routee_opts);

/* A custom strategy: given the live routees (borrowed), their count, the
 * index of this message (0, 1, 2, … per router), the message and user
 * data, write the chosen routees into `out` (room for n) and return how
 * many (0 drops the message, silently). Runs in the router's turn. */
typedef size_t (*ac_routing_fn)(ac_ref *const *routees, size_t n, uint64_t index,
                                const ac_msg *msg, void *user, ac_ref **out);
AC_API ac_props *ac_router_custom(int n, const ac_actor_def *def, ac_routing_fn strategy,
                                  void *user_data, const ac_routee_options *routee_opts);

/* The Broadcast wrapper: a router sends `inner` (consumed) to every
 * routee, whatever its strategy. */
AC_API extern const ac_msg_type ac_msg_type_broadcast; /* "actorc.Broadcast" */
AC_API ac_msg *ac_broadcast_new(ac_msg *inner);

#ifdef __cplusplus
}
#endif
#endif
