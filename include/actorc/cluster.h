/*
 * Cluster: membership and the cluster routers.
 *
 * A system with a node (remote.h) joins a cluster by name. Membership
 * comes from a provider, chosen by which provider's options are set:
 *   static  (the default) a list of seed addresses ("host:port"); the
 *           nodes form a full mesh, Erlang-style. A member is a node of
 *           the list (or one that connected to this node naming the same
 *           cluster) that answered; liveness is the connection and its
 *           heartbeats. A partition is resolved by a downing strategy
 *           (ac_cluster_downing, keep-majority by default): once the
 *           reachability this node sees has been unchanged for
 *           stable_after_ms, one side keeps serving and downs the
 *           members it cannot reach, the other downs itself.
 *   etcd    each node registers <prefix>/<cluster>/members/<node-id>
 *           (address, incarnation, roles) under a lease it keeps alive,
 *           and watches the prefix for joins and leaves. A member whose
 *           lease ran out is down everywhere; a node that cannot renew
 *           its lease for its TTL downs itself (fencing).
 *   dns     the nodes are the addresses an SRV record (or A records and
 *           a port) resolves to, resolved again at an interval: a node
 *           is a member while a record names it, as with a Kubernetes
 *           headless service.
 *
 * Members are (system, address, incarnation, roles). A node seen with a
 * new incarnation means the old one is down. Subscribers learn of changes
 * as MemberEvent messages: first the current members, each as an Up event,
 * then each change, in the order this node saw them.
 *
 * The cluster routers are group routers (router.h) whose routees are the
 * actor at a given path on each Up, reachable member (with a role, if
 * given), in a stable order: sorted by address. The set follows member
 * events: an unreachable member stops receiving new requests at once and
 * comes back when reachable again; a down member is removed. With no
 * routees a cluster router answers as a group with none does.
 *
 * All functions may be called from any thread.
 */
#ifndef ACTORC_CLUSTER_H
#define ACTORC_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/breaker.h"
#include "actorc/export.h"
#include "actorc/hedge.h"
#include "actorc/msg.h"
#include "actorc/remote.h"
#include "actorc/scatter_gather.h"
#include "actorc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_cluster ac_cluster;

/* The static provider (the default): seed addresses. */
typedef struct ac_cluster_static_options {
    /* "host:port" of the seed nodes (this node's own may be among them),
     * at most 1,024. None: this node is the first, and others list it. */
    const char *const *seeds;
    size_t seeds_count;
} ac_cluster_static_options;

/* The etcd provider (a build with ACTORC_WITH_ETCD). */
typedef struct ac_cluster_etcd_options {
    /* The client URLs ("http://127.0.0.1:2379"), 1 to 16. */
    const char *const *endpoints;
    size_t endpoints_count;
    /* The key prefix; NULL: "/actorc". */
    const char *prefix;
    /* The registration lease, seconds (2 to 3,600); 0: 5. */
    int lease_ttl_s;
} ac_cluster_etcd_options;

/* The DNS provider (a build with ACTORC_WITH_DNS): the members are the
 * addresses a name resolves to, resolved again every interval_ms. A node
 * must advertise the very "ip:port" the records give for it (its
 * ac_node_options.advertise, or the address it binds). IPv4 only. */
typedef struct ac_cluster_dns_options {
    /* The name to resolve, a DNS name of labels [A-Za-z0-9_-]{1,63}
     * (253 characters at most, a trailing '.' allowed). With port 0, an
     * SRV record ("_actorc._tcp.shop.example.org"): each target's A
     * records, at the record's port. With a port, A records: each
     * address at that port. Required. */
    const char *name;
    int port; /* 0: SRV; 1..65535: A records at this port */
    /* The DNS servers to ask, "a.b.c.d" or "a.b.c.d:port", at most 8;
     * none: the system's (resolv.conf). */
    const char *const *servers;
    size_t servers_count;
    /* How often to resolve again, ms (100 to 3,600,000); 0: 5,000. */
    int interval_ms;
} ac_cluster_dns_options;

/* How a partition is resolved (the static provider). Each node decides
 * over the members it sees, once their reachability has been unchanged
 * for stable_after_ms; the side that loses downs itself (below). */
typedef enum ac_cluster_downing {
    /* The side with more than half the members keeps; on a tie, the side
     * of the member with the lowest address. The default. */
    AC_CLUSTER_DOWNING_KEEP_MAJORITY = 0,
    /* The side with at least quorum_size members keeps while the other
     * side has fewer; otherwise every side downs itself. */
    AC_CLUSTER_DOWNING_STATIC_QUORUM = 1,
    /* The side of the oldest member (the first to join) keeps, unless it
     * is alone there and the other side has two or more. */
    AC_CLUSTER_DOWNING_KEEP_OLDEST = 2,
    /* Any member unreachable past stable_after_ms: every node downs
     * itself. */
    AC_CLUSTER_DOWNING_DOWN_ALL = 3,
    /* No resolution: both sides carry on with the members they see; a
     * member lost by the remote layer is Down at once, and Up again under
     * the same incarnation when it is back. */
    AC_CLUSTER_DOWNING_OFF = 4,
} ac_cluster_downing;

typedef struct ac_cluster_options {
    /* The cluster's name, [A-Za-z0-9._-]{1,64}. Required. Nodes of other
     * clusters are never members. */
    const char *name;
    /* This node's roles, each [A-Za-z0-9._-]{1,64}; at most 16. */
    const char *const *roles;
    size_t roles_count;
    /* The membership provider: set the options of one (copied at join);
     * none set: static, without seeds. */
    const ac_cluster_static_options *static_options;
    const ac_cluster_etcd_options *etcd_options;
    const ac_cluster_dns_options *dns_options;
    /* Backoff between attempts to reach the provider and the nodes it
     * lists, ms, up to 600,000, the maximum not below the initial; 0: 100
     * and 5,000. */
    int retry_initial_ms;
    int retry_max_ms;
    /* Split-brain resolution (static provider only: etcd fences by its
     * lease, DNS follows its records; a downing other than the default,
     * a stable_after_ms or a quorum_size with them is AC_EINVAL). */
    ac_cluster_downing downing;
    /* Reachability unchanged this long before deciding, ms (100 to
     * 600,000, and not below the node's heartbeat timeout unless downing
     * is off: AC_EINVAL); 0: the node's heartbeat timeout. */
    int stable_after_ms;
    /* static-quorum's size (1 to 1,024; required with it, 0 otherwise). */
    size_t quorum_size;
} ac_cluster_options;

/* Join the cluster with the system's node (ac_node_start first). NULL
 * with the last error: AC_EINVAL naming the option (bad name, role,
 * backoff, downing, stable_after_ms, quorum_size; more than one
 * provider's options; a bad seed, endpoint,
 * prefix, TTL, DNS name, port, server or interval; etcd or DNS in a
 * build without it), AC_ENOTFOUND for a system without a node,
 * AC_EEXIST for a system that has joined (even one that left since),
 * AC_ESTOPPED for a terminating system or a stopped node, AC_ENOMEM. An
 * unreachable etcd or DNS server, or a name without records, is not an
 * error here: the cluster retries (with backoff, or at its interval),
 * logs, and says so in its status (attempts_failed, last_error). The
 * cluster lives until ac_cluster_leave or the system's termination. */
AC_API ac_cluster *ac_cluster_join(ac_system *system, const ac_cluster_options *options);
/* Leave: deregister (etcd), tell the members, end the subscriptions
 * (each subscriber is told Down of every member, this node last). The
 * handle stays valid (and left) until the system is terminated. With
 * etcd it waits for the revoke of its lease: about a second per endpoint
 * at most when etcd does not answer. AC_ESTOPPED once left. */
AC_API ac_status ac_cluster_leave(ac_cluster *cluster);
/* The system's cluster, or NULL. */
AC_API ac_cluster *ac_system_cluster(ac_system *system);

typedef enum ac_member_status {
    AC_MEMBER_UP = 0,
    AC_MEMBER_UNREACHABLE = 1,
    AC_MEMBER_DOWN = 2,
} ac_member_status;

typedef struct ac_member {
    const char *system;
    const char *address; /* "host:port" */
    uint64_t incarnation;
    const char *const *roles;
    size_t roles_count;
    ac_member_status status;
    bool self; /* this node */
} ac_member;

/* Does `member` have `role`? */
AC_API bool ac_member_has_role(const ac_member *member, const char *role);

/* Downed: a node that lost a partition's resolution (or, with etcd,
 * could not renew its lease for its TTL) downs itself. Its cluster is
 * left (status AC_CLUSTER_LEFT, last_error saying why), its subscribers
 * are told Down of every member (this node last), every ask waiting on
 * another node fails at once with NodeDownError, and its cluster routers
 * lose their remote routees. The others never take its incarnation back:
 * to be a member again, the process restarts (a new incarnation). */

/* The current members (this node included), Up or Unreachable, sorted
 * by address. Free the list with ac_member_list_free (which takes a
 * zeroed or freed list too). AC_ESTOPPED once left. */
typedef struct ac_member_list {
    ac_member *members;
    size_t count;
} ac_member_list;
AC_API ac_status ac_cluster_members(ac_cluster *cluster, ac_member_list *out);
AC_API void ac_member_list_free(ac_member_list *list);

typedef enum ac_member_event_kind {
    AC_MEMBER_EVENT_UP = 0,          /* joined (or seen at subscription) */
    AC_MEMBER_EVENT_UNREACHABLE = 1, /* silent for half the heartbeat timeout, not yet down */
    AC_MEMBER_EVENT_REACHABLE = 2,   /* heard from again */
    AC_MEMBER_EVENT_DOWN = 3,        /* left, lost, or replaced by a new incarnation */
} ac_member_event_kind;

/* A MemberEvent message (type "actorc.MemberEvent"): the kind and the
 * member as it is after the event. ac_member_event_get gives NULL for a
 * message of another type; the member's strings live as long as the
 * message. */
AC_API extern const ac_msg_type ac_msg_type_member_event;
typedef struct ac_member_event {
    ac_member_event_kind kind;
    ac_member member;
} ac_member_event;
AC_API const ac_member_event *ac_member_event_get(const ac_msg *msg);

/* Tell `subscriber` MemberEvents: the current members as Up events first,
 * then each change. A subscriber that stops is unsubscribed. MemberEvents
 * have no wire codec: subscribers are local actors (a remote ref is
 * AC_EINVAL). AC_EEXIST for one subscribed already (unsubscribe:
 * AC_ENOTFOUND for one that is not); AC_ESTOPPED once left. */
AC_API ac_status ac_cluster_subscribe(ac_cluster *cluster, ac_ref *subscriber);
AC_API ac_status ac_cluster_unsubscribe(ac_cluster *cluster, ac_ref *subscriber);

/* How the cluster is doing with its provider. */
typedef enum ac_cluster_state {
    AC_CLUSTER_JOINING = 0, /* provider not reached yet (static: no other member yet) */
    AC_CLUSTER_JOINED = 1,
    AC_CLUSTER_RETRYING = 2, /* provider lost; retrying with backoff */
    AC_CLUSTER_LEFT = 3,
} ac_cluster_state;
typedef struct ac_cluster_status {
    ac_cluster_state state;
    size_t members_up; /* this node included */
    size_t members_unreachable;
    uint64_t attempts_failed; /* provider attempts that failed */
    char last_error[256];     /* "" when none */
} ac_cluster_status;
AC_API ac_status ac_cluster_status_get(ac_cluster *cluster, ac_cluster_status *out);

/* ---- cluster routers ------------------------------------------------ */

typedef struct ac_cluster_router_options {
    /* The routee path on every member, "/user/..." . Required. */
    const char *path;
    /* Only members with this role; NULL: every member. */
    const char *role;
    /* Leave this node's own actor out of the routees. */
    bool exclude_self;
    /* Give each member's routee a circuit breaker with these options
     * (copied; the name is ignored: each is named after its routee's
     * path), as ac_routee_options.breaker does for a pool: a member whose
     * actor fails or stays silent is routed around while its breaker is
     * open, though it stays a member. A member that leaves the set
     * (unreachable, down) takes its breaker with it; one that comes back
     * starts with a closed one. NULL: no breakers. */
    const ac_breaker_options *breaker;
} ac_cluster_router_options;

/* Props for a cluster router (spawn them like any props). NULL with the
 * last error: AC_EINVAL naming the option (NULL cluster, bad path or role,
 * bad scatter/gather, hedge or breaker options as their own factories
 * check),
 * AC_ESTOPPED for a cluster that has left; AC_ENOMEM. */
AC_API ac_props *ac_cluster_router_round_robin(ac_cluster *cluster,
                                               const ac_cluster_router_options *options);
AC_API ac_props *ac_cluster_router_random(ac_cluster *cluster,
                                          const ac_cluster_router_options *options);
AC_API ac_props *ac_cluster_router_broadcast(ac_cluster *cluster,
                                             const ac_cluster_router_options *options);
/* Depths of the routees on other nodes are published by those nodes
 * periodically; a depth older than a few periods is unknown again. */
AC_API ac_props *ac_cluster_router_smallest_mailbox(ac_cluster *cluster,
                                                    const ac_cluster_router_options *options);
/* Consistent hashing (ac_hash_key_fn, router.h): the same key always
 * reaches the same member while the set is unchanged, and removing a
 * member moves only its keys (rendezvous hashing on the member's address,
 * so every node's router maps a key to the same member). */
AC_API ac_props *ac_cluster_router_consistent_hashing(ac_cluster *cluster,
                                                      const ac_cluster_router_options *options,
                                                      ac_hash_key_fn key, void *user);
/* The local routers' contract, word for word, across nodes. */
AC_API ac_props *ac_cluster_router_scatter_gather_first_completed(
    ac_cluster *cluster, const ac_cluster_router_options *options,
    const ac_scatter_gather_options *sg);
AC_API ac_props *ac_cluster_router_hedged(ac_cluster *cluster,
                                          const ac_cluster_router_options *options,
                                          const ac_hedged_options *hedge);

#ifdef __cplusplus
}
#endif
#endif
