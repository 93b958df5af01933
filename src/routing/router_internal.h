/*
 * Shared by the pool routers, scatter/gather and the hedged router.
 */
#ifndef AC_ROUTING_ROUTER_INTERNAL_H
#define AC_ROUTING_ROUTER_INTERNAL_H

#include "core/clock.h"
#include "core/props.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"
#include "log/log_internal.h"

typedef struct ac__router_state {
    ac_ref **routees; /* live routees, in routee-1.. order; each retained */
    size_t n;
    uint64_t index;   /* messages routed so far */
    uint64_t rng;
    bool warned_empty;
    ac_ref **scratch; /* custom strategy output */
    ac_breaker **breakers; /* one per routee, same order; NULL: none */
} ac__router_state;

typedef struct ac__router_cfg ac__router_cfg;

/* What differs between router kinds. */
typedef struct ac__router_kind {
    const char *name;
    /* Route one ordinary message (not Terminated, not Broadcast). */
    void (*route)(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg);
    /* Extra work when the router stops or restarts; optional. */
    void (*on_stop)(ac_ctx *ctx, ac__router_cfg *cfg);
    void (*on_start)(ac_ctx *ctx, ac__router_cfg *cfg);
    /* When spawned, on the spawner's thread (ac__props_on_spawn); optional. */
    void (*on_spawn)(ac_system *system, ac__router_cfg *cfg);
    bool count_mailbox;
    /* Answers a message itself when no routees are left (not a dead letter). */
    bool answers_empty;
} ac__router_kind;

struct ac__router_cfg {
    const ac__router_kind *kind;
    int n;
    const ac_actor_def *routee_def;
    void *routee_user;
    ac_routing_fn fn;
    void *fn_user;
    ac_breaker_options *breaker; /* per-routee breakers (a copy), or NULL */
    bool skip_cancelled; /* routees drop requests nobody waits for (hedge.h) */
    void *extra; /* kind-specific; freed with extra_free */
    void (*extra_free)(void *);
};

/* Build router props; NULL (with the error) when `cfg` is NULL. Consumes
 * cfg (freed on failure). */
ac_props *ac__router_props(ac__router_cfg *cfg, const ac_routee_options *routee_opts,
                           const char *fn);
/* Validate the common factory arguments. */
ac_status ac__router_check(const char *fn, int n, const ac_actor_def *def,
                           const ac_routee_options *routee_opts);
/* Hand `msg` (borrowed) with the current sender to dead letters. */
void ac__router_dead_letter(ac_ctx *ctx, ac_msg *msg);

/* Reply to the current sender with a Routees message holding `routees`
 * (borrowed; the message retains each), or with a RouterError when out of
 * memory. In the router's turn. */
void ac__router_answer_routees(ac_ctx *ctx, ac_ref *const *routees, size_t n);

/* Copy routee_opts->breaker into cfg (already checked). AC_ENOMEM. */
ac_status ac__router_copy_breaker(ac__router_cfg *cfg, const ac_routee_options *routee_opts,
                                  const char *fn);


#endif
