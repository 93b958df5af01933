/*
 * Hedging policies: how long the hedged router waits for a success
 * before it sends the next attempt. One small ops table per policy, one
 * file each — the fixed delay (hedge_fixed.c), a percentile of observed
 * latency (hedge_adaptive.c) — registered by the public
 * ac_hedge_delay_kind that chooses it (hedge_policy.c). The hedged
 * router (gather_hedge.c) never asks which policy it holds.
 *
 * A policy's state is made by its factory check and lives as long as the
 * router's shared state (ac__gather_shared): every gather of the router
 * reads it, from every thread that sends an attempt or sees a success.
 *
 * Threads: `create` and `destroy` run once each, on the factory's thread
 * and on whichever thread lets go of the router's shared state last,
 * with no other call in flight. `delay_ns` and `observe` run on any
 * thread, concurrently with each other and themselves (the router's
 * turn, the hedge timer, a routee's turn that answers, a breaker's
 * timer): the state is read and written through atomics or under a
 * policy's own lock, never one of the router's.
 */
#ifndef AC_ROUTING_HEDGE_POLICY_H
#define AC_ROUTING_HEDGE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "actorc/hedge.h"
#include "actorc/observe.h"
#include "actorc/status.h"

typedef struct ac__hedge_policy {
    ac_hedge_delay_kind kind;
    const char *name;  /* the kind as written: "AC_HEDGE_DELAY_FIXED" */
    const char *label; /* its name in the system's view: "fixed" */
    /* Check the options only this policy reads (what every policy shares,
     * timeout_ms and delay_us, is checked before: `delay_ns` is delay_us
     * with its default, below the timeout) and make the state. AC_EINVAL
     * naming `fn`, the option and its value; AC_ENOMEM; both recorded,
     * and nothing kept. */
    ac_status (*create)(const char *fn, const ac_hedged_options *o, uint64_t delay_ns,
                        uint32_t timeout_ms, void **state);
    /* The delay before the next attempt, now. */
    uint64_t (*delay_ns)(void *state);
    /* A success came `latency_ns` after its attempt went out (winners'
     * and losers' alike). Optional: NULL, and the router does not read
     * the clock for it. */
    void (*observe)(void *state, uint64_t latency_ns);
    /* What the view shows of it beyond the delay: members written into
     * the object the router opened. Optional. Any thread. */
    void (*view)(void *state, ac_json *out);
    void (*destroy)(void *state);
} ac__hedge_policy;

extern const ac__hedge_policy ac__hedge_fixed_policy;
extern const ac__hedge_policy ac__hedge_adaptive_policy;

/* The policy that `kind` names; NULL when none does (a value outside the
 * enum). Any thread. */
const ac__hedge_policy *ac__hedge_policy_of(ac_hedge_delay_kind kind);
/* The kinds that name a policy, for a message: "A, B or C" into buf
 * (truncated to size). Any thread. */
void ac__hedge_policy_kinds(char *buf, size_t size);

#endif
