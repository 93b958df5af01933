/*
 * What a gathering router shows in the system's view (gather_view.c,
 * actorc/observe.h): per-routee counts, each routee's breaker, the
 * messages by outcome, hedges, and the winners' latency, kept with
 * relaxed atomics whether metrics are on or not, and written as one
 * element of the view's "routers" section.
 *
 * The view belongs to the shared state (ac__gather_shared) and lives as
 * long as it: made with it, added to the system's view when the router
 * is spawned, taken out of it before the shared state is freed. Counting
 * is any thread's; writing, the thread that takes the view.
 */
#ifndef AC_ROUTING_GATHER_VIEW_H
#define AC_ROUTING_GATHER_VIEW_H

#include "routing/gather.h"

typedef struct ac__gather_view ac__gather_view;

/* A view for a router of `pool_size` routees (0: a group's); NULL when
 * out of memory (the router then counts nothing here). */
ac__gather_view *ac__gather_view_create(int pool_size);
/* Out of the system's view (waiting for a view being taken), then freed,
 * with the refs and breakers it retained. NULL: nothing. */
void ac__gather_view_free(ac__gather_view *v);
/* Add it to the system's view, as the router `router` (borrowed from
 * the shared state, which retains it), at the router's first start; a
 * failure only leaves the router out of the view. */
void ac__gather_view_publish(ac__gather_shared *sh, ac_system *system, ac_ref *router);

/* Counting, any thread. */
void ac__gather_view_outcome(ac__gather_shared *sh, ac__gather_outcome outcome,
                             uint64_t start_ns);
/* Whether gathers opened now are to be timed for the view: once the view
 * has been taken. Any thread. */
bool ac__gather_view_timing(const ac__gather_shared *sh);
void ac__gather_view_event(ac__gather_shared *sh, ac__gather_event event);
void ac__gather_view_slots(const ac__gather *g);
/* Slot `routee` is asked through `breaker` (not NULL). */
void ac__gather_view_breaker(ac__gather_shared *sh, ac_ref *routee, ac_breaker *breaker);

#endif
