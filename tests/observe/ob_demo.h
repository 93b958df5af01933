/*
 * A system worth looking at, for the view's tests and the browser test's
 * server: a small actor tree, a scatter/gather router, a hedged router
 * with one slow routee, and a scatter/gather router whose second routee
 * always fails, so that its breaker opens; beside them a round-robin
 * pool, a smallest-mailbox pool, and a round-robin pool with breakers
 * whose routee-2 always fails, so that its breaker opens too; and a load
 * that asks each router, so that counts move.
 *
 * Routees take their behaviour from their name (routee-K): in "slow"
 * routers routee-1 answers after OB_SLOW_MS, the others at once; in
 * "flaky" routers routee-2 answers with an error.
 */
#ifndef ACTORC_OB_DEMO_H
#define ACTORC_OB_DEMO_H

#include <stdbool.h>

#include <actorc.h>

#define OB_SLOW_MS 40
#define OB_HEDGE_DELAY_US 5000
#define OB_BREAKER_FAILURES 2
#define OB_TREE_WORKERS 3 /* /user/workers has this many children */
#define OB_ROUND_ASKS 7   /* asks in one round: the routers and the workers */

typedef struct ob_demo {
    ac_system *sys;
    ac_ref *workers, *scatter, *hedged, *flaky;
    ac_ref *pool, *shortest, *guarded; /* round-robin, smallest-mailbox, round-robin with breakers */
} ob_demo;

/* Spawn the actors and routers into `sys` (metrics need not be on).
 * False with ac_last_error on failure. */
bool ob_demo_start(ob_demo *d, ac_system *sys);
/* One round of load: ask each router once and wait for the answers (the
 * flaky ones' may be errors). The number of asks answered, OB_ROUND_ASKS
 * when all were. */
int ob_demo_round(ob_demo *d);
/* Props of one more hedged router of 2 fast routees. */
ac_props *ob_demo_router_props(void);
/* Release the refs (the actors stop with the system). */
void ob_demo_release(ob_demo *d);

#endif
