/*
 * A cluster's insides (cluster.c: the API and the options; cluster_actor.c:
 * the actor that owns the membership; cluster_card.c: how a node describes
 * itself to the others; cluster_view.c: member lists and MemberEvents;
 * cluster_etcd.c: the etcd provider).
 *
 * Threads. The membership (members, seeds, subscribers as the actor
 * knows them) is the cluster actor's: only its turns touch it. What the
 * API reads from any thread is published under `lock`: a copy of the
 * member list, the status, and the set of subscribers as callers asked
 * for it (which the actor reconciles with its own in its turn, so that a
 * subscriber's first events are the current members, then changes).
 * Notes reach the actor as messages: from the transport thread (peer up
 * and down, beats), from the etcd threads (keys put and deleted, the
 * provider's health), from the API (subscribe, leave) and from its timer.
 *
 * Lock order: `lock` may be held while the node's lock is taken (the
 * release of a subscriber that is a remote ref), never the other way: the
 * transport calls the hooks with no lock held. Nothing calls into the
 * etcd client's stop with `lock` held (its callbacks take it).
 */
#ifndef AC_CLUSTER_INTERNAL_H
#define AC_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "remote/node_internal.h"

#define AC__CLUSTER_MAX_ROLES 16
#define AC__CLUSTER_MAX_TEXT 64 /* a name, a role, a system name */
/* Where a node's cluster layer takes frames from the others. */
#define AC__CLUSTER_PATH "/system/cluster"
/* A node's card: the type name of its HELLO body and of its beats. */
#define AC__CLUSTER_CARD_TYPE "actorc.ClusterCard"
/* How often a member is told this node lives. */
#define AC__CLUSTER_BEAT_MS 100
/* Down incarnations remembered, so that one is never up again. */
#define AC__CLUSTER_TOMBSTONES 256

/* ---- cards: a node as it describes itself (cluster_card.c) ------------- */

#define AC__CARD_LEAVING 1u /* the node leaves the cluster */

typedef struct ac__card {
    char cluster[AC__CLUSTER_MAX_TEXT + 1];
    char system[AC__CLUSTER_MAX_TEXT + 1];
    char address[256];
    uint64_t incarnation;
    unsigned flags;
    char roles[AC__CLUSTER_MAX_ROLES][AC__CLUSTER_MAX_TEXT + 1];
    size_t roles_count;
} ac__card;

/* Text for the wire (a card's body): lines, see cluster_card.c. The
 * length in *len; NULL when out of memory. */
char *ac__card_encode(const ac__card *card, size_t *len);
/* Parse a body; false for anything malformed. */
bool ac__card_decode(const uint8_t *body, size_t len, ac__card *out);

/* [A-Za-z0-9._-]{1,64}: a cluster name or a role. */
bool ac__cluster_name_ok(const char *s);
/* "host:port": a host (no whitespace, '/', '@'), a port 1..65535. */
bool ac__cluster_address_ok(const char *s);

/* ---- members as the actor keeps them ------------------------------------ */

/* A node this one knows of at an address: a member once it is connected
 * (its hello came), has shown a card of this cluster and, with etcd, is
 * registered. */
typedef struct ac__member_rec {
    char *system;  /* "" until its card came */
    char *address;
    uint64_t incarnation;
    char **roles;
    size_t roles_count;
    ac_member_status status; /* while a member */
    bool self;
    bool member;     /* Up or Unreachable, events told */
    bool connected;  /* its incarnation said hello; not lost since */
    bool carded;     /* its card (cluster, system, roles) is known */
    bool registered; /* etcd: its key is there */
    int64_t last_heard_ms;   /* a beat or its hello, on the system's clock */
    int64_t next_connect_ms; /* etcd: the next attempt to reach it */
    int64_t connect_backoff_ms;
} ac__member_rec;

typedef struct ac__seed {
    char *address;
    int64_t next_ms;     /* the next attempt to reach it */
    int64_t backoff_ms;  /* the wait after that attempt */
    bool tried;          /* an attempt is out */
} ac__seed;

/* A member list (cluster.h) in one allocation: free(list.members). */
ac_member_list ac__member_list_pack(const ac__member_rec *const *recs, size_t n);
/* A MemberEvent about rec; NULL when out of memory. */
ac_msg *ac__member_event_new(ac_member_event_kind kind, const ac__member_rec *rec);

/* ---- notes to the actor ------------------------------------------------- */

typedef enum ac__note_kind {
    AC__NOTE_PEER_UP,    /* the remote layer: an incarnation said hello */
    AC__NOTE_PEER_DOWN,  /* the remote layer: an incarnation is lost */
    AC__NOTE_BEAT,       /* another node's card, told to /system/cluster */
    AC__NOTE_TICK,       /* the actor's timer */
    AC__NOTE_SUBSCRIBERS, /* the published subscriber set changed */
    AC__NOTE_LEAVE,      /* ac_cluster_leave */
    AC__NOTE_KEY_PUT,    /* etcd: a member's key, its value */
    AC__NOTE_KEY_DELETE, /* etcd: a member's key is gone */
} ac__note_kind;

typedef struct ac__note {
    ac__note_kind kind;
    char *system, *address, *why, *key; /* owned; may be NULL */
    uint64_t incarnation;
    uint8_t *data; /* owned: a card's body, a key's value */
    size_t len;
} ac__note;

extern const ac_msg_type ac__msg_type_cluster_note;

/* A note with copies of the strings and bytes; NULL when out of memory. */
ac_msg *ac__note_new(ac__note_kind kind, const char *system, const char *address,
                     uint64_t incarnation, const char *why, const void *data, size_t len,
                     const char *key);

/* ---- the cluster ------------------------------------------------------- */

typedef struct ac__cluster_etcd ac__cluster_etcd;

struct ac_cluster {
    ac_system *system;
    ac_node *node;
    ac__ext_part part;
    ac__node_hooks hooks;
    ac_ref *actor; /* the cluster actor, retained */
    ac_cancellable *tick;

    /* Options, copied at join; immutable. */
    char *name;
    char **roles;
    size_t roles_count;
    ac_cluster_provider provider;
    char **seeds;
    size_t seeds_count;
    char **endpoints;
    size_t endpoints_count;
    char *prefix;
    int lease_ttl_s, retry_initial_ms, retry_max_ms;
    int unreachable_ms; /* silent this long: unreachable */

    /* This node, immutable. */
    ac__card card;
    char *card_text; /* the HELLO body */
    size_t card_len;
    char *card_leaving; /* the beat that says it leaves */
    size_t card_leaving_len;

    atomic_bool left; /* ac_cluster_leave began */
    atomic_bool stopped; /* the part stopped: the system terminates */

    /* The actor's, in its turns only. */
    ac__member_rec **members; /* by address, this node first */
    size_t member_count, member_cap;
    ac__seed *seed_state; /* seeds_count, this node's own left out */
    size_t seed_state_count;
    ac_ref **active; /* subscribers told every event */
    size_t active_count, active_cap;
    struct {
        char address[256];
        uint64_t incarnation;
    } tombstones[AC__CLUSTER_TOMBSTONES];
    size_t tombstone_next;
    bool ended; /* the actor handled the leave */

    /* Published: any thread, under the lock. */
    pthread_mutex_t lock;
    ac_member_list view;
    ac_cluster_status status;
    ac_ref **subs; /* the subscribers callers asked for, retained */
    size_t subs_count, subs_cap;

    /* The etcd provider (cluster_etcd.c); NULL for the static one. */
    ac__cluster_etcd *etcd;
};

/* cluster_actor.c */
ac_ref *ac__cluster_actor_spawn(ac_cluster *c);
/* Publish the member list and counts (the actor's turn). */
void ac__cluster_publish(ac_cluster *c);
/* Tell the cluster's actor msg (consumed; dropped once the cluster has
 * stopped). Any thread. */
void ac__cluster_tell_actor(ac_cluster *c, ac_msg *msg);
/* Record a provider failure (any thread): attempts_failed, last_error;
 * when `degrade`, a joined cluster is RETRYING. */
void ac__cluster_provider_failed(ac_cluster *c, bool degrade, const char *fmt, ...)
    AC_PRINTF(3, 4);
void ac__cluster_provider_ok(ac_cluster *c);

/* cluster_etcd.c: start (join), stop (leave, terminate) and free. */
ac_status ac__cluster_etcd_start(ac_cluster *c);
void ac__cluster_etcd_stop(ac_cluster *c);
void ac__cluster_etcd_free(ac_cluster *c);
/* Read how the keeper and the watcher do, and say JOINED when both are
 * well (the actor's timer). */
void ac__cluster_etcd_poll(ac_cluster *c);

#endif
