/*
 * What every router shares: the router actor (router.c), its routee set
 * (routee_set.c), groups (group.c) and the kinds of router built on them
 * (strategies.c, hashing.c, and the gathering kinds of gather.h, which
 * this header knows nothing of: kinds sit above it).
 *
 * A router's configuration (ac__router_cfg) is its user data: made by a
 * factory, owned by the props and then by the router, and freed when the
 * router stops (or the props are freed unspawned). Its state
 * (ac__router_state) is the live routee set, touched only in the router's
 * own turn.
 */
#ifndef AC_ROUTING_ROUTER_INTERNAL_H
#define AC_ROUTING_ROUTER_INTERNAL_H

#include "actorc/breaker.h"
#include "actorc/hedge.h"
#include "actorc/router.h"
#include "actorc/scatter_gather.h"
#include "core/clock.h"
#include "core/props.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"
#include "log/log_internal.h"

/* The most routees a router takes: a pool's size, a group's count. */
#define AC__ROUTER_MAX_ROUTEES 100000

typedef struct ac__router_state {
    /* Live routees, each retained: a pool's in routee-1.. order, a group's
     * in the order they were added. */
    ac_ref **routees;
    size_t n;
    size_t cap;       /* room in routees and scratch */
    uint64_t index;   /* messages routed so far */
    uint64_t rng;
    bool warned_empty;
    ac_ref **scratch; /* custom strategy output */
    ac_breaker **breakers; /* one per routee, same order; NULL: none */
    /* A pool's routee numbers, same order: routee-K's K, which names its
     * per-routee metric series and outlives the pruning of the routees
     * before it; NULL for a group, whose routees have none. */
    uint32_t *numbers;
    /* A member group's routees' identities (owned copies), same order,
     * which is theirs, sorted; NULL for every other router. */
    char **keys;
} ac__router_state;

typedef struct ac__router_cfg ac__router_cfg;
typedef struct ac__member_group_ops ac__member_group_ops; /* member_group.h */
typedef struct ac__router_front ac__router_front;     /* router_front.h */
typedef struct ac__route_snap ac__route_snap;         /* router_front.h */
typedef struct ac__router_view ac__router_view;       /* router_view.h */

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
    /* Route an ordinary message in the sender's thread (router_front.h)
     * from the snapshot s (at least one routee): deliver `node` and return
     * true, or return false to leave it to the router's turn. Any thread;
     * must not block. Optional: without it the kind routes in its turn. */
    bool (*send)(ac__router_front *f, const ac__route_snap *s, ac__mailbox_node *node);
    /* The snapshot keeps each routee's identity hashed (hashing.c). */
    bool snap_ids;
    /* In the system's view by a view of its own (the gathering kinds,
     * gather_view.h), not router_view.h's. */
    bool own_view;
} ac__router_kind;

struct ac__router_cfg {
    const ac__router_kind *kind;
    int n; /* a pool's size */
    const ac_actor_def *routee_def;
    void *routee_user;
    ac_routing_fn fn;
    void *fn_user;
    ac_breaker_options *breaker; /* per-routee breakers (a copy), or NULL */
    bool skip_cancelled; /* routees drop requests nobody waits for (hedge.h) */
    void *extra; /* kind-specific; freed with extra_free */
    void (*extra_free)(void *);
    /* A group router (routees given, not spawned). Its routees, each
     * retained: the factory's until the router starts, and whenever it has
     * stopped the set it had then, so that a restart starts from the set
     * as it was changed at run time. Released with the cfg. */
    bool is_group;
    ac_ref **group;
    size_t group_n;
    /* Consistent hashing. */
    ac_hash_key_fn hash_key;
    void *hash_user;
    /* A member group: its set is driven by `members` (member_group.h),
     * its routees are kept sorted by identity and are not watched. */
    const ac__member_group_ops *members;
    void *members_user;
    /* Its place in the system's view (router_view.h), or NULL. */
    ac__router_view *view;
};

extern const ac__router_kind ac__round_robin_kind;
extern const ac__router_kind ac__random_kind;
extern const ac__router_kind ac__broadcast_kind;
extern const ac__router_kind ac__smallest_mailbox_kind;
extern const ac__router_kind ac__custom_kind;
extern const ac__router_kind ac__consistent_hashing_kind;

/* ---- factories (router.c; groups' in group.c) ---- */

/* A pool's configuration of `kind` after checking the common arguments
 * (ac__router_check), with a copy of the routees' breaker options; NULL
 * with the error recorded. */
ac__router_cfg *ac__router_pool_cfg_new(const char *fn, const ac__router_kind *kind, int n,
                                        const ac_actor_def *def,
                                        const ac_routee_options *routee_opts);
/* A group's configuration of `kind` holding a retained copy of
 * routees[0..n), after checking them (none NULL, none twice, none a reply
 * ref, all of one system); NULL with the error recorded. */
ac__router_cfg *ac__router_group_cfg_new(const char *fn, const ac__router_kind *kind,
                                         ac_ref *const *routees, size_t n);
/* Build router props from `cfg` (consumed: freed on failure); NULL with
 * the error recorded, or when `cfg` is NULL (its constructor recorded
 * why). Any thread. */
ac_props *ac__router_props(ac__router_cfg *cfg, const ac_routee_options *routee_opts,
                           const char *fn);
/* Free a cfg that no props owns yet (and what it holds). */
void ac__router_cfg_free(ac__router_cfg *cfg);
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

/* ---- the routee set (routee_set.c) ---- */

/* Take routee i out of the set (releasing it, its breaker and its key),
 * keeping the order of the others. In the router's turn. */
void ac__router_drop(ac__router_state *st, size_t i);
/* Room for one more routee; false when out of memory. */
bool ac__router_make_room(ac__router_state *st);
/* The identity a routee is hashed by (hashing.c): its key in a member
 * group; else the node address ("host:port") of a ref to another node's
 * actor, or the path of a local one. Borrowed from st or the ref. */
const char *ac__router_identity(const ac__router_state *st, size_t i, size_t *len);
/* That identity hashed, as consistent hashing weighs it. */
uint64_t ac__router_identity_hash(const ac__router_state *st, size_t i);

/* ---- groups (group.c) ---- */

/* Start a group router: move cfg->group into st, watching each routee;
 * one that cannot be a routee (another system's, or unwatchable) is
 * dropped with a warning. In pre_start, st sized for cfg->group_n. */
void ac__router_group_start(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st);
/* A group router stops (or restarts): its set goes back to cfg->group. */
void ac__router_group_stop(ac__router_cfg *cfg, ac__router_state *st);
/* Release what cfg->group holds. */
void ac__router_group_free(ac__router_cfg *cfg);
/* Is `msg` an AddRoutee or a RemoveRoutee? */
bool ac__router_is_change(const ac_msg *msg);
/* Handle an AddRoutee or RemoveRoutee: a group changes its set, a pool
 * refuses with a warning. In the router's turn. */
void ac__router_change(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg);

#endif
