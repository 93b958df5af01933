/*
 * The membership-provider seam: where a cluster learns which nodes to
 * reach and, for some providers, which nodes may be members at all.
 *
 * A provider is an ops table (below) and one file behind it:
 * provider_static.c (seed addresses), provider_etcd.c (registrations
 * under a lease and a watch), provider_dns.c (an SRV or A record looked
 * up at an interval). The cluster chooses one from the join options
 * (provider.c holds the table) and never asks which one it has: what
 * differs between providers is in the ops and in the properties below.
 *
 * What a provider says is a listing: "there is a node of this cluster at
 * this address" (with its incarnation when the provider knows it, 0
 * when whichever node answers there). The cluster actor tries every
 * listed address that is not connected, with capped exponential backoff
 * (retry_initial_ms to retry_max_ms), and a node there that says hello
 * with this cluster's card is a member; with `listed_only`, only while
 * it is listed, so that an unlisting is its Down and a listing again its
 * Up. A provider also says how it does (ok, failed), which is the
 * cluster's status.
 *
 * Threads. check runs on the joining thread before anything starts;
 * create, start, stop and free run on the thread that joins, leaves or
 * terminates the system, never two at once (the cluster orders them).
 * tick and member_up run in the cluster actor's turns, one at a time;
 * they may come after stop (a turn in flight) and must then do nothing
 * harmful. The calls into the cluster below may be made from any thread
 * (the provider's own threads included) from start until stop returns,
 * and never after: stop waits for the provider's threads to be done
 * calling. The cluster holds no lock of its own while it calls the ops,
 * so a provider may take its own locks in them and call the cluster
 * back under them.
 */
#ifndef AC_CLUSTER_PROVIDER_H
#define AC_CLUSTER_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "cluster/cluster_card.h"
#include "core/alloc.h"
#include "core/base.h"

/* What a provider is given at create; the pointers stay valid until its
 * free. */
typedef struct ac__provider_env {
    ac_system *system; /* for logs */
    ac_cluster *cluster; /* for the calls below; opaque here */
    const char *name;    /* the cluster's */
    const ac__card *self; /* this node as it describes itself */
    int retry_initial_ms, retry_max_ms; /* the provider's own backoff, ms */
} ac__provider_env;

typedef struct ac__provider_ops {
    /* "static", "etcd", "dns": for logs, and options.<name>_options in
     * messages. */
    const char *name;
    /* True: a node is a member only while listed (etcd keys, DNS
     * records). False: a listing is only somewhere to try (static
     * seeds), and any node that connects naming the cluster is a
     * member. */
    bool listed_only;
    /* How the status names a listed address that does not answer, when
     * the listing has no incarnation: "seed" gives "seed host:port:
     * <why>". */
    const char *listing_noun;
    /* This provider's options within the join options, or NULL when
     * they are not set (the provider is not chosen). */
    const void *(*options_of)(const ac_cluster_options *options);
    /* AC_OK, or AC_EINVAL naming the option (a build without this
     * provider refuses here too). `options` may be NULL: the defaults. */
    ac_status (*check)(const void *options);
    /* Copy what it needs of `options` (checked) into a new state; no
     * call into the cluster yet. AC_ENOMEM with the error. */
    ac_status (*create)(const ac__provider_env *env, const void *options, void **state);
    /* Begin: list what is known, start threads. On failure the cluster
     * calls stop and, later, free. */
    ac_status (*start)(void *state);
    /* Every beat (AC__CLUSTER_BEAT_MS), in the actor's turn; in a
     * beat-free cluster once joined (cluster_tick.c) at most every second,
     * or sooner as quiet_ms says. Optional. */
    void (*tick)(void *state);
    /* How long (ms) a joined beat-free cluster may go without a tick
     * before this provider has something to do on one (etcd: fence when
     * its lease would lapse); -1: tick on the beat. Optional: absent, a
     * second. In the actor's turn. */
    int64_t (*quiet_ms)(void *state);
    /* A node became a member (Up), in the actor's turn. Optional. */
    void (*member_up)(void *state);
    /* Leave or terminate: deregister, end threads; no call into the
     * cluster after it returns. Called once, possibly after a failed
     * start; may wait a little (etcd's revoke). */
    void (*stop)(void *state);
    /* Free the state (after stop, or after a create whose start was
     * never called). NULL state: nothing. */
    void (*free)(void *state);
} ac__provider_ops;

extern const ac__provider_ops ac__provider_static;
extern const ac__provider_ops ac__provider_etcd;
extern const ac__provider_ops ac__provider_dns;

/* The provider the options choose (the one whose options are set; none:
 * static with its defaults), its options in *provider_options. NULL with
 * AC_EINVAL when more than one is set. */
const ac__provider_ops *ac__provider_choose(const ac_cluster_options *options,
                                            const void **provider_options);

/* Check a list option: AC_EINVAL naming "options.<what>[i]" for a NULL,
 * a bad (`ok` false: not `rule`) or a repeated item, or more than max. */
ac_status ac__provider_check_list(const char *const *items, size_t n, const char *what,
                                  size_t max, bool (*ok)(const char *), const char *rule);

/* ---- what a provider may call (any thread, start to stop) -------------- */

/* A node at `address` ("host:port"), of `incarnation` (0: whichever is
 * there). AC_ENOMEM (with the error) when it could not be passed on:
 * the provider should list it again later. */
ac_status ac__provider_list(ac_cluster *cluster, const char *address, uint64_t incarnation);
/* No longer listed (incarnation as listed); `why` is what the Down of a
 * member it ends says. AC_ENOMEM as above. */
ac_status ac__provider_unlist(ac_cluster *cluster, const char *address, uint64_t incarnation,
                              const char *why);
/* An attempt failed: counted in the status with its reason (the last
 * error); with `degrade`, a joined cluster is RETRYING until the next
 * ac__provider_ok. */
void ac__provider_failed(ac_cluster *cluster, bool degrade, const char *fmt, ...)
    AC_PRINTF(3, 4);
/* This node must down itself (the etcd provider's fencing: its lease
 * could not be renewed for its TTL): the cluster actor does it in its
 * turn, as the split-brain resolver's losing side does. */
void ac__provider_down_self(ac_cluster *cluster, const char *why);
/* The provider is reached and well: JOINED (unless left). */
void ac__provider_ok(ac_cluster *cluster);

#endif
