/*
 * Routers: one actor in front of many routees.
 *
 * A router factory returns props to spawn like any actor. The router lives
 * at the path it is spawned with, and comes in two shapes:
 *
 *   pools    (ac_router_round_robin, ...) spawn their routees: children
 *            routee-1 … routee-N of one definition, spawned in pre_start
 *            and watched. A restarted pool stops its routees and spawns
 *            new ones; a stopped pool's routees stop first.
 *   groups   (ac_router_group_round_robin, ...) route to refs the caller
 *            gives, and watch them. The routees are not the router's
 *            children, and it never stops them: stopping or restarting the
 *            router leaves them running. Their set can change at run time
 *            (AddRoutee and RemoveRoutee, below).
 *
 * A routee sees the original sender, so its reply goes straight to the
 * caller. A routee that stops is pruned (by identity, not by path) once the
 * router has handled its Terminated; with none left, messages go to dead
 * letters and a warning is logged once (once more whenever the set empties
 * again after a routee was added). What follows holds for both shapes; a
 * group given no routees answers as a pool whose routees have all stopped.
 *
 * Round-robin, random, broadcast, smallest-mailbox and consistent-hashing
 * routers without breakers route in the sender's thread: the sender picks
 * the routee from the router's current set and delivers to it directly,
 * one hop instead of two. Nothing a user sees changes but the speed: one
 * sender's messages reach each routee in order, and keep their order with
 * the router's own messages (none sent after a RemoveRoutee reaches the
 * routee removed; none sent after a Broadcast overtakes it); the router's
 * own messages (GetRoutees, AddRoutee, RemoveRoutee, Broadcast,
 * PoisonPill) go to the router as before.
 *
 * The one-shot strategies (round-robin, random, broadcast, smallest
 * mailbox, custom) spread work for throughput. Scatter/gather-first-
 * completed (scatter_gather.h) asks every routee and takes the first reply,
 * for a shorter tail; the hedged router (hedge.h) asks one and the next
 * only when the first is slow, for most of that tail at a fraction of the
 * work.
 *
 * What an ask through a router answers (statuses as ac_ask_wait returns
 * them, ask.h; "sender" is ac_answer.sender):
 *
 *   round-robin, random, smallest-mailbox, custom
 *     the routee picked answers: its reply (AC_OK) or its error reply
 *     (AC_EFAILED), with that routee as the sender. A custom strategy that
 *     picks no routee drops the message silently, so the ask times out
 *     (AC_ETIMEOUT, AskTimeoutError, sender NULL).
 *   broadcast, and the Broadcast wrapper sent to any router
 *     every routee gets the request; the first answer settles the ask, with
 *     its routee as the sender, and the others are dropped silently.
 *   scatter/gather-first-completed, hedged
 *     the first successful reply, with the winning routee as the sender
 *     (with a quorum of K, one Quorum message sent by the router); failing
 *     that, one AggregateError sent by the router (AC_EFAILED; the
 *     messages are listed in scatter_gather.h and hedge.h).
 *   GetRoutees (ac_router_get_routees_msg), to any router
 *     a Routees message, sent by the router itself (AC_OK).
 *
 * And when the request is not delivered:
 *
 *   no routees left, every kind but scatter/gather and hedged
 *     AC_EDEAD at once: an UndeliverableError "Ask to <router path> failed:
 *     the router has no routees left", sender NULL; the request counts as a
 *     dead letter. (A Broadcast wrapper to an empty scatter/gather router
 *     answers the same way: the wrapper bypasses the scatter.)
 *   no routees left, scatter/gather and hedged
 *     AC_EFAILED at once: an AggregateError "… has no routees left to
 *     scatter to" ("… to send to") with no members, sent by the router.
 *   a routee stopped but not pruned yet (the router learns of a stop by a
 *   message, so for a moment it may still pick it)
 *     AC_EDEAD: an ActorStoppedError naming that routee, sender NULL (a
 *     broadcast is failed by it too, unless a live routee answered first).
 *     Smallest-mailbox skips such a routee (every routee skipped: as if
 *     none were left); scatter/gather counts it as a failed member.
 *   a routee that fails (ac_fail) instead of answering
 *     its supervisor (a pool's router; a group routee's own parent)
 *     restarts it (by default); the request is not retried and the ask
 *     times out (AC_ETIMEOUT; for scatter/gather, that routee's part of
 *     the scatter times out).
 *   the router itself stopped
 *     AC_EDEAD at once: an ActorStoppedError naming the router.
 *
 * Breakers (ac_routee_options.breaker, pools only): each routee gets a
 * circuit breaker of its own (breaker.h), named after the routee's path, and every
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
#include "actorc/msg.h"
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
/* Picks the routee with the fewest queued messages; ties rotate. A pool's
 * routees count their queues, so their depth is always known; for a
 * group's, see ac_router_group_smallest_mailbox. */
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

/* The Broadcast wrapper: a router sends `inner` to every routee, whatever
 * its strategy, with the original sender. Consumes `inner` whatever the
 * outcome. NULL with ac_last_error: AC_EINVAL for a NULL inner, or for
 * GetRoutees, AddRoutee or RemoveRoutee, which the router handles itself
 * (send them unwrapped); AC_ENOMEM. Any thread. */
AC_API extern const ac_msg_type ac_msg_type_broadcast; /* "actorc.Broadcast" */
AC_API ac_msg *ac_broadcast_new(ac_msg *inner);

/* ---- groups: routers over routees the caller gives ------------------- */

/* Props for a group router over routees[0..n), in that order. The array
 * and the refs are borrowed for the call: the props retain each ref, then
 * the router; they are released when the props are freed unspawned or the
 * router stops. n may be 0: the router starts with no routees and answers
 * as described above for "no routees left" until one is added. The
 * strategies are the pools'. A group takes no ac_routee_options: its
 * routees were made by the caller, with the caller's props, and it gives
 * them no breakers.
 *
 * NULL with ac_last_error: AC_EINVAL, naming the argument, for routees
 * NULL with n > 0, n above 100000, a NULL routee, one ref given twice, a
 * reply ref (such as an ask's sender: a group watches its routees), or
 * routees of different actor systems; AC_ENOMEM. Spawned in another
 * system than theirs, the router leaves each routee out with a warning.
 * Any thread. */
AC_API ac_props *ac_router_group_round_robin(ac_ref *const *routees, size_t n);
AC_API ac_props *ac_router_group_random(ac_ref *const *routees, size_t n);
AC_API ac_props *ac_router_group_broadcast(ac_ref *const *routees, size_t n);
/* Smallest mailbox where a routee's depth may be unknown. A local actor
 * that counts its queue (a routee of a smallest-mailbox pool) has its
 * depth known exactly; any other local actor reads as 0 while it is idle
 * (nothing queued, no turn running) and as unknown while busy; a ref that
 * is not a local actor (such as a ref to an actor on another node) is
 * always unknown. The smallest known depth wins (ties rotate); when no
 * routee's depth is known, the message goes to the unknown ones in turn,
 * round-robin. A stopped routee not yet pruned is skipped. */
AC_API ac_props *ac_router_group_smallest_mailbox(ac_ref *const *routees, size_t n);
/* A custom strategy (ac_routing_fn above) over a group; NULL strategy:
 * AC_EINVAL. */
AC_API ac_props *ac_router_group_custom(ac_ref *const *routees, size_t n, ac_routing_fn strategy,
                                        void *user_data);
/* A key for consistent hashing, computed from a message in the sender's
 * thread (the router routes in it: any thread, several at once), or in
 * the router's turn for a message that waited at its mailbox. It must be
 * thread-safe and must not block. */
typedef uint64_t (*ac_hash_key_fn)(const ac_msg *msg, void *user);
/* Consistent hashing (rendezvous hashing): each message goes to the
 * routee whose identity, hashed with the message's key, weighs most. A
 * routee's identity is its node's address ("host:port") for a ref to an
 * actor on another node, and its path for a local actor. So the same key
 * reaches the same routee while the set is unchanged, whatever the order
 * of the set, and a routee removed (or stopped) moves only its own keys:
 * every other key stays where it was; a routee added takes about 1/n of
 * the keys, from every other routee alike. Messages without a key are
 * not special: key_fn is asked of every message (the Broadcast wrapper
 * aside). NULL key_fn: AC_EINVAL. */
AC_API ac_props *ac_router_group_consistent_hashing(ac_ref *const *routees, size_t n,
                                                    ac_hash_key_fn key_fn, void *user);
/* ac_router_group_scatter_gather_first_completed: scatter_gather.h;
 * ac_router_group_hedged: hedge.h. */

/* ---- AddRoutee, RemoveRoutee: a group's routees at run time ---------- */

/* Messages that change a group router's set. Told to the router (from any
 * thread, with or without a sender), each is handled in its own turn,
 * between the messages around it: a strategy sees the set before or after
 * the change, never half of it. Neither is passed to a strategy or a
 * routee, and neither is answered: to see one take effect, ask GetRoutees
 * after it (one sender's messages arrive in order).
 *
 * AddRoutee appends `routee` to the set and watches it; one already in the
 * set stays where it is. Refused with a warning naming the router and the
 * routee: the router itself, a ref of another actor system, a ref that
 * cannot be watched, a routee beyond 100000. A routee that has already
 * stopped is added, then pruned when its Terminated arrives.
 *
 * RemoveRoutee takes `routee` out of the set (the others keep their order)
 * and stops watching it; the routee keeps running, and one not in the set
 * changes nothing. What was sent to it stays sent: a scatter that asked it
 * stays open until it answers or the scatter times out, as if it had not
 * been removed.
 *
 * The set keeps the order in which routees were added; that is the order
 * of GetRoutees, of round-robin and of a scatter's members. A restarted
 * group starts again from the set it had (with the changes), not from the
 * one given to its factory.
 *
 * Told to a pool router, either is ignored with a warning: a pool spawns
 * and owns its routees.
 *
 * The constructors retain `routee` (released with the message). NULL with
 * ac_last_error: AC_EINVAL for a NULL routee; AC_ENOMEM. Any thread. */
AC_API ac_msg *ac_router_add_routee_msg(ac_ref *routee);
AC_API ac_msg *ac_router_remove_routee_msg(ac_ref *routee);
AC_API extern const ac_msg_type ac_msg_type_add_routee;    /* "actorc.AddRoutee" */
AC_API extern const ac_msg_type ac_msg_type_remove_routee; /* "actorc.RemoveRoutee" */

/* ---- GetRoutees: which routees a router has ------------------------- */

/* A reference to the GetRoutees request (a shared, static message: it need
 * not be released, and releasing it is harmless). Every router kind
 * answers it itself, in its own turn, and never passes it to a routee or
 * its strategy: with ac_reply, so as a Routees message whose sender is the
 * router. Ask it (ac_ask_wait, ac_ask, ac_ask_in), or tell it with a
 * sender inside an actor; told without a sender, the answer goes to dead
 * letters. The answer lists the routees alive as the router's turn sees
 * them: a routee pruned after it stopped is gone; after a restart of the
 * router, the new routees are listed (same paths, other refs); a routee
 * restarted by its supervisor keeps its ref; a group lists its current
 * set (AddRoutee, RemoveRoutee). With no routees left it
 * lists none (AC_OK, not AC_EDEAD). Out of memory, the router answers with
 * a RouterError instead. Any thread. */
AC_API ac_msg *ac_router_get_routees_msg(void);
AC_API extern const ac_msg_type ac_msg_type_get_routees; /* "actorc.GetRoutees" */

/* The answer to GetRoutees: the routees in the router's order (a pool's
 * from routee-1, a group's in the order they were added), as they remain
 * after pruning and removals. The message holds a reference to each, so
 * the refs stay valid, whatever happens to the router, for as long as the
 * message is kept (ac_answer_release drops it). */
AC_API extern const ac_msg_type ac_msg_type_routees; /* "actorc.Routees" */
/* How many routees it lists; 0 with ac_last_error (AC_EINVAL for NULL,
 * AC_ETYPE for another type of message) when `msg` is not a Routees. Any
 * thread. */
AC_API size_t ac_routees_count(const ac_msg *msg);
/* The i-th routee (borrowed from `msg`: retain it to keep it longer), or
 * NULL with ac_last_error: AC_EINVAL for NULL or i >= the count, AC_ETYPE
 * for another type of message. Any thread. */
AC_API ac_ref *ac_routees_at(const ac_msg *msg, size_t i);

#ifdef __cplusplus
}
#endif
#endif
