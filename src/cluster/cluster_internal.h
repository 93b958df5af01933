/*
 * A cluster's insides (cluster.c: the API and the options; cluster_actor.c:
 * the actor that owns the membership; cluster_members.c: its records;
 * cluster_card.c: how a node describes itself to the others;
 * cluster_view.c: member lists and MemberEvents; provider.c: the
 * provider seam, provider.h, and the providers behind it;
 * cluster_downing.c: split-brain resolution and a node downing itself,
 * over the decision of sbr.c).
 *
 * Who calls whom, one way only: cluster.c starts the actor and the
 * provider; the actor calls the provider's tick and member_up through
 * its ops; providers call provider.c, which reaches the actor only by
 * message. Nothing of a provider is named outside its own file and the
 * table in provider.c.
 *
 * Threads. The membership (members, listings, subscribers as the actor
 * knows them) is the cluster actor's: only its turns touch it. What the
 * API reads from any thread is published under `lock`: a copy of the
 * member list, the status, and the set of subscribers as callers asked
 * for it (which the actor reconciles with its own in its turn, so that a
 * subscriber's first events are the current members, then changes).
 * Notes reach the actor as messages: from the transport thread (peer up
 * and down, beats), from the provider (listed, unlisted; its health goes
 * straight into the status), from the API (subscribe, leave) and from
 * its timer.
 *
 * Lock order: `lock` may be held while the node's lock is taken (the
 * release of a subscriber that is a remote ref), never the other way: the
 * transport calls the hooks with no lock held. Nothing calls a
 * provider's ops with `lock` held (a provider's threads take it).
 */
#ifndef AC_CLUSTER_INTERNAL_H
#define AC_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "cluster/cluster_card.h"
#include "cluster/provider.h"
#include "remote/node_internal.h"

/* Where a node's cluster layer takes frames from the others. */
#define AC__CLUSTER_PATH "/system/cluster"
/* A node's card: the type name of its HELLO body and of its beats. */
#define AC__CLUSTER_CARD_TYPE "actorc.ClusterCard"
/* The type of an introduction: the addresses of the members a node
 * has, told to one that just became a member (cluster_intro.c). */
#define AC__CLUSTER_INTRO_TYPE "actorc.ClusterIntro"
/* How often a member is told this node lives. */
#define AC__CLUSTER_BEAT_MS 100
/* Down incarnations remembered, so that one is never up again. */
#define AC__CLUSTER_TOMBSTONES 256
/* Member events the view keeps (cluster_observe.c), the latest. */
#define AC__CLUSTER_RECENT_EVENTS 32

typedef struct ac__recent_event {
    ac_member_event_kind kind;
    uint64_t time_ms; /* wall clock */
    uint64_t incarnation;
    char system[64], address[128], why[96];
} ac__recent_event;

/* ---- members as the actor keeps them ------------------------------------ */

/* A node this one is connected to at an address (its incarnation said
 * hello and is not lost since), or this node itself: a member once it
 * has shown a card of this cluster and, when the provider says so
 * (listed_only), while it is listed. */
typedef struct ac__member_rec {
    char *system;  /* "" until its card came */
    char *address;
    uint64_t incarnation;
    char **roles;
    size_t roles_count;
    ac_member_status status; /* while a member */
    bool self;
    bool member;     /* Up or Unreachable, events told */
    bool carded;     /* its card (cluster, system, roles) is known */
    bool lost;       /* the remote layer lost it; Unreachable until resolved */
    uint64_t up_since; /* its card's age, for keep-oldest */
    int64_t last_heard_ms;   /* a beat or its hello, on the system's clock */
} ac__member_rec;

/* An address the provider lists: tried until a node there is connected. */
typedef struct ac__listing {
    char *address;
    uint64_t incarnation; /* 0: whichever node is there */
    int64_t next_ms;      /* the next attempt to reach it */
    int64_t backoff_ms;   /* the wait after that attempt */
    unsigned tries; /* attempts made */
    /* Not the provider's: a member introduced it (cluster_intro.c);
     * dropped once a node there is connected, or after INTRO_TRIES. */
    bool introduced;
} ac__listing;

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
    AC__NOTE_LISTED,     /* the provider: a node at an address */
    AC__NOTE_UNLISTED,   /* the provider: no longer listed */
    AC__NOTE_INTRO,      /* another member's members, told to /system/cluster */
    AC__NOTE_DOWN_SELF,  /* the provider: this node must down itself (fencing) */
    AC__NOTE_DECIDE,     /* the resolver's timer: stable_after past a member event */
} ac__note_kind;

typedef struct ac__note {
    ac__note_kind kind;
    char *system, *address, *why; /* owned; may be NULL */
    uint64_t incarnation;
    uint8_t *data; /* owned: a card's body */
    size_t len;
} ac__note;

extern const ac_msg_type ac__msg_type_cluster_note;

/* A note with copies of the strings and bytes; NULL when out of memory. */
ac_msg *ac__note_new(ac__note_kind kind, const char *system, const char *address,
                     uint64_t incarnation, const char *why, const void *data, size_t len);

/* ---- cluster_tick.c: the actor's timer ---------------------------------- */

/* Tick now, then every AC__CLUSTER_BEAT_MS on the shared phase; false
 * when out of memory. At join, the actor spawned. */
bool ac__cluster_tick_start(ac_cluster *c);
/* Is this tick (at `t`) the first of a beat period? In the actor's turn. */
bool ac__cluster_beat_due(ac_cluster *c, int64_t t);
/* Beat-free: a provider that gates membership and a node that closes idle
 * connections (no beats, no silence judged). Immutable. */
bool ac__cluster_beats_off(const ac_cluster *c);
/* How long the actor may sleep after a tick at `t` (ms): a beat, or in a
 * beat-free cluster until the next thing due. In the actor's turn. */
int64_t ac__cluster_tick_delay(ac_cluster *c, int64_t t);
/* After a tick at `t`: a beat-free cluster sets its next tick (others
 * keep their repeating one). In the actor's turn. */
void ac__cluster_tick_next(ac_cluster *c, int64_t t);
/* A beat-free cluster ticks now (a provider's health changed). Any thread. */
void ac__cluster_tick_soon(ac_cluster *c);

/* ---- cluster_intro.c: members introduced (static provider) ------------- */

/* Tell `r`, a member now, the addresses of this node's other members. */
void ac__cluster_introduce(ac_cluster *c, const ac__member_rec *r);
/* An introduction came: list each member named that this node is not
 * connected to, tried until it is (INTRO_TRIES attempts at most). */
void ac__cluster_on_intro(ac_cluster *c, const ac__note *n);
/* List `address` as introduced (static provider; not this node, not
 * connected, not listed already). */
void ac__cluster_introduced(ac_cluster *c, const char *address);
/* Drop the introduced listings that are connected, or out of attempts. */
void ac__cluster_intros_prune(ac_cluster *c);

/* ---- the cluster ------------------------------------------------------- */

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
    int retry_initial_ms, retry_max_ms;
    int unreachable_ms; /* silent this long: unreachable */
    /* Beats go out every beat_every-th tick: five in unreachable_ms (each
     * tick, AC__CLUSTER_BEAT_MS, with the default heartbeats); the
     * actor's. */
    unsigned beat_every;
    /* Beats go out on a phase of the wall clock every node shares
     * (cluster_tick.c): the offset of this system's clock from it, mod
     * the beat period, and the period last beaten in. */
    int64_t beat_phase_ms, beat_epoch;
    ac_cluster_downing downing; /* OFF unless the provider is static */
    int stable_after_ms;
    size_t quorum_size;

    /* The provider: its ops and state, set before its start (the
     * actor's turns read them after: the provider's first note, or the
     * timer, comes later); immutable after. */
    const ac__provider_ops *provider;
    void *provider_state;
    atomic_bool provider_stopped; /* its stop was called */

    /* This node, immutable. */
    ac__card card;
    char *card_text; /* the HELLO body */
    size_t card_len;
    char *card_leaving; /* the beat that says it leaves */
    size_t card_leaving_len;
    char *card_downed; /* the beat that tells a downed node so */
    size_t card_downed_len;

    atomic_bool left; /* ac_cluster_leave began */
    atomic_bool stopped; /* the part stopped: the system terminates */

    /* The actor's, in its turns only. */
    ac__member_rec **members; /* by address */
    size_t member_count, member_cap;
    ac__listing *listings; /* what the provider lists, this node's own left out */
    size_t listing_count, listing_cap;
    ac_ref **active; /* subscribers told every event */
    size_t active_count, active_cap;
    struct {
        char address[256];
        uint64_t incarnation;
    } tombstones[AC__CLUSTER_TOMBSTONES];
    size_t tombstone_next;
    bool ended; /* the actor handled the leave */
    int64_t reach_changed_ms; /* the last member event (the resolver's stable period) */

    /* Published: any thread, under the lock. */
    pthread_mutex_t lock;
    ac_member_list view;
    ac_cluster_status status;
    ac_ref **subs; /* the subscribers callers asked for, retained */
    size_t subs_count, subs_cap;
    ac__recent_event recent[AC__CLUSTER_RECENT_EVENTS]; /* a ring */
    uint64_t recent_count;                              /* events so far */
    struct ac_observe_source *observed; /* in the system's view */
};

/* cluster_actor.c */
ac_ref *ac__cluster_actor_spawn(ac_cluster *c);
/* In the actor's turn: r is no longer a member (Down told when it was). */
void ac__cluster_member_down(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why);
/* In the actor's turn: tell r's Unreachable (its status set, published). */
void ac__cluster_member_unreachable(ac_ctx *ctx, ac_cluster *c, const ac__member_rec *r,
                                    const char *why);
/* In the actor's turn: r forgotten, Down first; `tomb`: never again. */
void ac__cluster_lose(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why, bool tomb);
/* In the actor's turn: every member Down (this node last), subscribers
 * dropped; `farewell`: the others told it leaves. */
void ac__cluster_end(ac_ctx *ctx, ac_cluster *c, const char *why, bool farewell);

/* cluster.c: leave as ac_cluster_leave does, `why` in the status's
 * last_error (NULL: none). False when left already. Any thread. */
bool ac__cluster_leave_begin(ac_cluster *c, const char *why);

/* cluster_downing.c. At join: options.stable_after_ms below the node's
 * heartbeat timeout (with downing on) is AC_EINVAL. */
ac_status ac__downing_check_stable(const ac_cluster_options *o, int heartbeat_timeout_ms);
/* In the actor's turns. Is split-brain resolution on? */
bool ac__downing_on(const ac_cluster *c);
/* The remote layer lost r (not a leave): held Unreachable for the
 * resolver when it is on and r a member (true), else false. */
bool ac__downing_hold(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why);
/* A member event came: decide again stable_after_ms from now (a timer;
 * the tick checks too). */
void ac__downing_arm(ac_ctx *ctx, ac_cluster *c);
/* Every tick and at the timer: decide, once reachability has been stable
 * long enough. */
void ac__downing_tick(ac_ctx *ctx, ac_cluster *c, int64_t now_ms);
/* This node downs itself: asks on the others failed, the cluster left,
 * every member Down. Also a note (AC__NOTE_DOWN_SELF) from the etcd
 * provider's fencing. */
void ac__downing_self(ac_ctx *ctx, ac_cluster *c, const char *why);

/* cluster_members.c: the actor's records and listings, in its turns
 * (and at join and free, before and after the actor). */
ac__member_rec *ac__rec_find(const ac_cluster *c, const char *address);
/* A new record at its place by address; NULL when out of memory. */
ac__member_rec *ac__rec_add(ac_cluster *c, const char *address, uint64_t incarnation);
void ac__rec_remove(ac_cluster *c, ac__member_rec *r);
void ac__rec_free(ac__member_rec *r);
/* Take system and roles from a card. False when out of memory (the
 * record is left as it was). */
bool ac__rec_set_card(ac__member_rec *r, const ac__card *card);
bool ac__tombstoned(const ac_cluster *c, const char *address, uint64_t incarnation);
void ac__tombstone(ac_cluster *c, const ac__member_rec *r);
/* The listing of exactly (address, incarnation), or NULL. */
ac__listing *ac__listing_find(const ac_cluster *c, const char *address, uint64_t incarnation);
/* Is r listed (at its address, of its incarnation or of any)? */
bool ac__listed(const ac_cluster *c, const ac__member_rec *r);
/* A new listing, to be tried at once; NULL when out of memory. */
ac__listing *ac__listing_add(ac_cluster *c, const char *address, uint64_t incarnation);
/* Remove l (the last listing takes its place). */
void ac__listing_remove(ac_cluster *c, ac__listing *l);
void ac__listings_free(ac_cluster *c);
/* Publish the member list and counts. */
void ac__cluster_publish(ac_cluster *c);

/* cluster_observe.c: the cluster in the system's view, added at join,
 * removed when freed; an event kept for it (the actor's turn). */
void ac__cluster_observe_start(ac_cluster *c);
void ac__cluster_observe_event(ac_cluster *c, ac_member_event_kind kind,
                               const ac__member_rec *r, const char *why);

/* provider.c: tell the cluster's actor msg (consumed; dropped once the
 * cluster has stopped). Any thread. */
void ac__cluster_tell_actor(ac_cluster *c, ac_msg *msg);

#endif
