/*
 * Member groups (member_group.c): group routers whose routee set is
 * driven from outside the routing layer, one routee per member of
 * something (the cluster routers, src/cluster, drive theirs from member
 * events). Exported from libactorc (AC__SPI) for actorc's own optional
 * libraries; not API.
 *
 * A member group is the router actor of router.c with the strategy asked
 * for, and three differences from a plain group:
 *   - its routees are kept sorted by identity (a string the driver gives
 *     with each routee, such as "host:port"), so that every router
 *     driven by the same members holds the same order, whatever order
 *     the members came in;
 *   - it does not watch its routees: the driver says when one goes (a
 *     member is lost, unreachable or gone), and a routee's actor that is
 *     missing on a member answers its requests as undeliverable rather
 *     than leaving the set;
 *   - it starts empty, each start (a restart too), and the driver fills
 *     it: the router's set does not outlive the router.
 * Consistent hashing hashes the identity, so routers on different nodes
 * map a key to the same member. With breaker options, each routee gets a
 * circuit breaker when it joins (named after its path), kept while a
 * routee of the same identity replaces it (the same member, resolved
 * again) and released when it leaves.
 *
 * The driver's hooks run in the router's turn; from them (and only
 * there) the set changes with ac__member_group_add and _remove.
 */
#ifndef AC_ROUTING_MEMBER_GROUP_H
#define AC_ROUTING_MEMBER_GROUP_H

#include "actorc/breaker.h"
#include "actorc/hedge.h"
#include "actorc/router.h"
#include "actorc/scatter_gather.h"
#include "core/base.h"

typedef struct ac__member_group_ops ac__member_group_ops;

struct ac__member_group_ops {
    /* In the router's pre_start, after it has started empty (and again
     * after a restart). */
    void (*start)(ac_ctx *ctx, void *user);
    /* Offered every message before the router looks at it: true when
     * the driver handled it (its own messages), false to let the router
     * route it. */
    bool (*receive)(ac_ctx *ctx, void *user, ac_msg *msg);
    /* In post_stop (and before a restart), before the set is emptied. */
    void (*stop)(ac_ctx *ctx, void *user);
    /* The driver's user data is freed with the router's configuration
     * (or the props freed unspawned, or a factory that failed). */
    void (*free)(void *user);
    /* Smallest mailbox: the depth of a routee that is not a local actor,
     * >= 0, or AC__MAILBOX_UNKNOWN (-2). NULL: always unknown. */
    int (*depth)(void *user, const ac_ref *routee);
    /* Smallest mailbox: a message was sent to `routee` (counted towards
     * its depth until the next report). Optional. */
    void (*routed)(void *user, const ac_ref *routee);
};

typedef enum ac__member_group_strategy {
    AC__MEMBER_ROUND_ROBIN,
    AC__MEMBER_RANDOM,
    AC__MEMBER_BROADCAST,
    AC__MEMBER_SMALLEST_MAILBOX,
    AC__MEMBER_CONSISTENT_HASHING,
    AC__MEMBER_SCATTER_GATHER,
    AC__MEMBER_HEDGED,
} ac__member_group_strategy;

typedef struct ac__member_group_spec {
    const char *fn; /* the public factory, for messages */
    ac__member_group_strategy strategy;
    ac_hash_key_fn key; /* consistent hashing; required there */
    void *key_user;
    const ac_scatter_gather_options *scatter; /* NULL: defaults */
    const ac_hedged_options *hedged;          /* NULL: defaults */
    const ac_breaker_options *breaker;        /* NULL: no breakers */
    const ac__member_group_ops *ops;          /* required */
    void *user;
} ac__member_group_spec;

/* Props for a member group; NULL with the error (options checked as the
 * group factories check them, for a set of any size). spec->user is
 * taken whatever the outcome: freed with ops->free on failure. Any
 * thread. */
AC__SPI ac_props *ac__member_group_props(const ac__member_group_spec *spec);

/* Put `routee` (borrowed; retained) into the set under `key` (copied) at
 * its sorted place; a routee with that key already there is replaced.
 * False (logged) when out of memory or at the limit of routees. In a
 * hook, in the router's turn. */
AC__SPI bool ac__member_group_add(ac_ctx *ctx, ac_ref *routee, const char *key);
/* Take the routee with `key` out of the set; false when there is none.
 * What was sent to it stays sent. In a hook, in the router's turn. */
AC__SPI bool ac__member_group_remove(ac_ctx *ctx, const char *key);
/* How many routees the set has. In a hook, in the router's turn. */
AC__SPI size_t ac__member_group_size(ac_ctx *ctx);

#endif
