/*
 * The hedged router's gathering policy (gather_hedge.c): its routees
 * tried one by one, the next when the hedging policy's delay has passed
 * without a success, or at once when an attempt fails. The factory
 * (hedged.c) makes the per-router state below and hands it to the
 * gather core as the policy's state (ac__gather_shared.policy_state),
 * which frees it with the router's shared state.
 */
#ifndef AC_ROUTING_GATHER_HEDGE_H
#define AC_ROUTING_GATHER_HEDGE_H

#include "routing/gather.h"
#include "routing/hedge_order.h"
#include "routing/hedge_policy.h"

/* Set by the factory, read-only after, but for `failing`. */
typedef struct ac__hedging {
    uint32_t max_attempts; /* most routees asked per message; 0: every one */
    const ac__hedge_policy *delay;
    void *delay_state; /* the hedging policy's, destroyed with this */
    /* By routee number 1..pool_size: its last outcome was a failure (an
     * error or a timeout), until a success clears it. Written and read
     * by any thread, relaxed: a hint for the order of attempts. NULL for
     * a group, whose routees have no numbers. */
    atomic_uchar *failing;
    /* The latency order's records (hedge_order.h); no records: the
     * rotation order. */
    ac__latency_table latency;
    /* The message being opened sends its second attempt with its first
     * (a probe). Written and read in the router's turn only: by `ask`,
     * then by the part's set-up within the same call. */
    bool probe_next;
} ac__hedging;

extern const ac__gather_policy ac__hedge_gather_policy;

#endif
