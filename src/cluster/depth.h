/*
 * Mailbox depths across nodes (depth.c), for the smallest-mailbox
 * cluster router.
 *
 * Every node of a cluster runs a depth publisher, the actor
 * /user/actorc-cluster-depth. A router that wants the depths of the
 * actor at a path on a member tells that member's publisher a DepthWatch
 * (the path), with itself as the sender; from then on the publisher
 * tells it a Depth every AC__DEPTH_PERIOD_MS: the node's address, the
 * path and the depth of the actor there as the node sees it (an actor
 * that counts its queue: its queued messages; any other: 0 while idle,
 * unknown while busy; unknown when there is no actor at the path, or
 * until it has been found there). Any path under /user may be watched,
 * nested ones too (/user/pool/replica); the publisher publishes only the
 * paths it was asked for, AC__DEPTH_MAX_WATCHES subscriptions at most
 * (more are refused with a warning). A DepthWatch with `unwatch` set
 * ends it, and so does the router's node being lost (the publisher
 * watches each subscriber).
 *
 * The router keeps the last depth of each member with the time it came;
 * a depth older than AC__DEPTH_STALE_MS (three periods) is unknown again,
 * so a member whose reports stop (a slow link, a publisher gone) is
 * treated as a ref of unknown depth, not as idle. Between reports, the
 * router adds what it has routed to a member since its last report.
 */
#ifndef AC_CLUSTER_DEPTH_H
#define AC_CLUSTER_DEPTH_H

#include <stdbool.h>
#include <stdint.h>

#include "actorc.h"

#define AC__DEPTH_PUBLISHER "actorc-cluster-depth"
#define AC__DEPTH_PERIOD_MS 50
#define AC__DEPTH_STALE_MS (3 * AC__DEPTH_PERIOD_MS)
/* How often, in periods, a path without its actor is looked up again. */
#define AC__DEPTH_LOCATE_TICKS 4
#define AC__DEPTH_MAX_WATCHES 256
/* Depth reported for an actor whose depth is not known, or no actor. */
#define AC__DEPTH_UNKNOWN (-2)

extern const ac_msg_type ac__depth_watch_type;  /* "actorc.DepthWatch" */
extern const ac_msg_type ac__depth_report_type; /* "actorc.Depth" */

/* A DepthWatch (or, with unwatch, its end) for the actor at `path`;
 * NULL when out of memory. */
ac_msg *ac__depth_watch_new(const char *path, bool unwatch);

/* A Depth report, as the router reads it: pointers into the message. */
typedef struct ac__depth_report {
    int32_t depth; /* >= 0, or AC__DEPTH_UNKNOWN */
    const char *address;
    const char *path;
} ac__depth_report;
/* False for a message that is not a well-formed Depth. */
bool ac__depth_report_read(const ac_msg *msg, ac__depth_report *out);

/* Register both types with the node and spawn this node's publisher.
 * AC_OK when it runs (or already ran); the error otherwise. Any thread. */
ac_status ac__depth_publisher_start(ac_system *system, ac_node *node);

#endif
