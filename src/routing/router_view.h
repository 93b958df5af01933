/*
 * A pool or group router in the system's view (router_view.c,
 * actorc/observe.h): its kind, its routees with the messages routed to
 * each, the breaker that guards each, and for smallest-mailbox routers
 * each routee's mailbox depth; written as one element of the view's
 * "routers" section. The gathering kinds keep a view of their own
 * (gather_view.h).
 *
 * The view belongs to the router's configuration and lives as long as
 * it: made with the props, added to the system's view at the router's
 * first start, taken out of it when the configuration is freed. Its
 * routee rows outlive the set that names them, so the counters a
 * snapshot (router_front.h) points at stay valid while any sender holds
 * that snapshot; the set itself is marked in the router's turn.
 *
 * Counting is any thread's (relaxed: a count, never an order);
 * marking the set, the router's turn; writing, the thread that takes the
 * view.
 */
#ifndef AC_ROUTING_ROUTER_VIEW_H
#define AC_ROUTING_ROUTER_VIEW_H

#include "routing/router_internal.h"

typedef struct ac__router_view ac__router_view;

/* One routee's row, claimed the first time the routee joins the set and
 * never emptied (a routee that has left is no longer marked). */
typedef struct ac__router_view_row {
    _Atomic(ac_ref *) ref;         /* retained; NULL: a free row */
    _Atomic(ac_breaker *) breaker; /* retained; the first one seen */
    atomic_uint_fast64_t routed;   /* messages sent to it (a broadcast's copy each) */
    atomic_uint_fast64_t refused;  /* messages its breaker refused */
    atomic_uint_fast64_t set;      /* the set's generation it was last marked in */
} ac__router_view_row;

/* A view for `cfg`'s router; NULL for the gathering kinds, or when out of
 * memory (the router then counts nothing here). Any thread. */
ac__router_view *ac__router_view_create(const ac__router_cfg *cfg);
/* Out of the system's view (waiting for a view being taken), then freed,
 * with the refs and breakers it retained. NULL: nothing. */
void ac__router_view_free(ac__router_view *v);
/* Add it to the system's view as the router `router` (retained), at the
 * router's first start; a failure only leaves it out. In its turn. */
void ac__router_view_publish(ac__router_view *v, ac_system *system, ac_ref *router);
/* The set is now st's (NULL: empty, the router has stopped): rows
 * claimed, marked, breakers noted. In the router's turn. */
void ac__router_view_mark(ac__router_view *v, const ac__router_state *st);
/* The row of `routee`, claimed on first use; a shared row when the table
 * is full. NULL v: NULL. In the router's turn. */
ac__router_view_row *ac__router_view_row_of(ac__router_view *v, ac_ref *routee);
/* Counting from the router's turn (the sender's thread counts through
 * the snapshot's rows). NULL v: nothing. */
void ac__router_view_routed(ac__router_view *v, ac_ref *routee);
void ac__router_view_refused(ac__router_view *v, ac_ref *routee);
/* A message went to dead letters: no routee was left. */
void ac__router_view_dead_letter(ac__router_view *v);

/* A load and a store, not a locked increment: on the send path a locked
 * instruction per message costs as much as a tenth of a round-robin
 * tell. Two senders routing to the same routee at the same instant may
 * count one message between them; one sender's counts are exact. */
static inline void ac__router_view_count(ac__router_view_row *row)
{
    uint64_t n = atomic_load_explicit(&row->routed, memory_order_relaxed);
    atomic_store_explicit(&row->routed, n + 1, memory_order_relaxed);
}

#endif
