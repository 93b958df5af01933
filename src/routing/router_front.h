/*
 * Routing in the sender's thread (router_front.c): a router's front door
 * (core/front.h) that picks the routee of an ordinary message from an
 * immutable snapshot of the routee set and delivers it there, so that the
 * message takes one hop instead of two. What the router handles itself
 * (Terminated, GetRoutees, AddRoutee, RemoveRoutee, Broadcast, PoisonPill,
 * Run) still goes to its mailbox.
 *
 * The snapshot. The router publishes it in its own turn whenever its set
 * changes (started, a routee pruned, added or removed) and withdraws it
 * when it stops; a sender reads it without a lock, under a hazard pointer
 * (core/hazard.h: a plain store, no locked instruction). Old snapshots are
 * retired, and freed by the router once no sender's hazard names them;
 * what is left is freed at the next change, or with the cell.
 *
 * Order. A sender's messages keep their order, to each routee and with
 * the router's own: every message that goes to the mailbox (the router's
 * own, and ordinary ones while there is no snapshot: before the router's
 * first turn, while it restarts, once it has stopped, or with an empty
 * set) is counted in `queued` until the router has handled it, and while
 * any is counted, senders keep to the mailbox too. So a message sent
 * after a RemoveRoutee never reaches the routee removed, and one sent
 * after a Broadcast reaches each routee after it. (Run is run by the turn
 * itself and not counted; a PoisonPill is never handled by the router,
 * which stops: its count stays, and so does the mailbox path.) In its
 * turn the router routes what the mailbox held as a sender would, from
 * the snapshot, so that round robin keeps one count.
 *
 * The front is the router cell's deliver itself (core/front.h,
 * cell_ops): a tell reaches it with no call in between, and round robin,
 * the common kind, is routed inline there.
 *
 * Which kinds: those whose choice needs nothing but the set (round robin,
 * random, broadcast, smallest mailbox, consistent hashing), in pools and
 * groups without breakers. A kind says so with its `send` hook; routers
 * with breakers, member groups, custom strategies and the gathering kinds
 * route in their turn as before.
 */
#ifndef AC_ROUTING_ROUTER_FRONT_H
#define AC_ROUTING_ROUTER_FRONT_H

#include "core/front.h"
#include "routing/router_internal.h"
#include "routing/router_view.h"

typedef struct ac__route_snap {
    struct ac__route_snap *retired_next;
    size_t n; /* at least 1: an empty set has no snapshot */
    /* Every routee a local actor with no admission check: delivered to
     * by a direct call to ac__actor_deliver. */
    bool plain;
    /* Consistent hashing: each routee's identity hashed (hashing.c);
     * NULL for the other kinds. Points after routees[]. */
    uint64_t *ids;
    /* Each routee's row in the router's view (router_view.h), which
     * outlives the snapshot; NULL when the router is not in the view.
     * Points after ids[] (or routees[]). */
    ac__router_view_row **rows;
    ac_ref *routees[]; /* each retained */
} ac__route_snap;

struct ac__router_front {
    ac__front base;
    /* Written by every sender: one line. Round robin: the next routee's
     * position, below the set's size; smallest mailbox: a rotating start.
     * A load and a store, not an increment: senders racing may repeat a
     * routee's turn, which costs evenness, never a message. */
    _Alignas(64) atomic_uint_fast64_t index;
    /* Read by every sender, written on changes: another line. */
    _Alignas(64) _Atomic(ac__route_snap *) snap;
    atomic_uint_fast64_t queued; /* ordinary messages at the mailbox, not yet routed */
    /* The last message type found ordinary (not the router's own): a
     * sender of one type all along compares once, not with every type the
     * router handles. Relaxed: any value read is a type checked before. */
    _Atomic(const ac_msg_type *) ordinary;
    const ac__router_kind *kind;
    bool round_robin; /* kind is round robin: routed without a call */
    ac_hash_key_fn hash_key; /* consistent hashing: copied, the cfg dies first */
    void *hash_user;
    ac__router_view *view; /* the cfg's; freed after the last snapshot is withdrawn */
    ac__route_snap *retired; /* the router's turn (and the cell's free) only */
};

/* Is `msg` one the router handles itself, never routed in the sender's? */
bool ac__router_is_own(const ac_msg *msg);

/* A front for a router of cfg's kind, or NULL when the router routes in
 * its turn (no `send` hook, breakers, a member group, a custom strategy)
 * or when out of memory (it then routes in its turn: slower, not wrong). */
ac__router_front *ac__router_front_new(const ac__router_cfg *cfg);
/* The router's front, or NULL. In its turn. */
ac__router_front *ac__router_front_of(ac_ctx *ctx);
/* Publish the set as it is now (NULL front: nothing). In the router's
 * turn. Out of memory: the snapshot is withdrawn, messages go through the
 * mailbox until the next change. */
void ac__router_front_publish(ac__router_front *f, const ac__router_state *st);
/* Withdraw the snapshot (the router stops or restarts), and wait until no
 * sender holds one, so that every snapshot is freed. In its turn. */
void ac__router_front_withdraw(ac__router_front *f);
/* A message the mailbox held has been handled. In the router's turn. */
void ac__router_front_handled(ac__router_front *f);
/* Route an ordinary message in the router's turn as a sender would: true
 * when done (or lost for want of memory), false when there is no
 * snapshot or the kind leaves the choice to its turn's route. */
bool ac__router_front_route(ac__router_front *f, ac_msg *msg, ac_ref *sender);

/* For the kinds' `send` hooks: deliver node to routee i of s, counted
 * in the view. */
static inline void ac__route_to(const ac__route_snap *s, size_t i, ac__mailbox_node *node)
{
    if (s->rows)
        ac__router_view_count(s->rows[i]);
    ac_ref *r = s->routees[i];
    if (AC__LIKELY(s->plain))
        ac__actor_deliver(r, node); /* what r's ops would call, without the loads */
    else if (!r->ops->admit)
        r->ops->deliver(r, node); /* ac__ref_deliver_node's common case, without the call */
    else
        ac__ref_deliver_node(r, node);
}

/* Round robin's `send`, here so that the front door calls it directly.
 * The position is kept below the set's size, so that a message costs a
 * compare rather than a 64-bit division (as much as the rest of the
 * routing); a position past the end of a set that shrank wraps once. */
static inline void ac__route_round_robin(ac__router_front *f, const ac__route_snap *s,
                                         ac__mailbox_node *node)
{
    size_t n = s->n; /* read once: the stores below may not be moved past */
    uint64_t i = atomic_load_explicit(&f->index, memory_order_relaxed);
    size_t k = AC__LIKELY(i < n) ? (size_t)i : (size_t)(i % n);
    atomic_store_explicit(&f->index, k + 1 < n ? k + 1 : 0, memory_order_relaxed);
    ac__route_to(s, k, node);
}

#endif
