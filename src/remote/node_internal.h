/*
 * A node's insides (node.c: the API and the transport thread; refs.c:
 * remote refs, reply targets of other nodes, the correlation table).
 *
 * Threads. The transport thread owns every ZeroMQ socket. Any thread
 * encodes a frame and queues it (an MPSC queue plus an eventfd the
 * transport polls, written only when the transport sleeps). The node's
 * lock guards the tables: peers by address, interned remote refs, the
 * correlation table, the types; a peer's `state` is atomic so that a send
 * can refuse a lost peer without the lock.
 */
#ifndef AC_REMOTE_NODE_INTERNAL_H
#define AC_REMOTE_NODE_INTERNAL_H

#include <pthread.h>

#include "actorc/ask.h"
#include "actorc/metrics.h"
#include "actorc/observe.h"
#include "actorc/remote.h"
#include "ask/oneshot.h"
#include "core/alloc.h"
#include "core/extension.h"
#include "remote/peer_table.h"
#include "remote/wire.h"

typedef struct ac__peer ac__peer;
typedef struct ac__rref ac__rref;

typedef enum ac__peer_state {
    AC__PEER_CONNECTING, /* resolved or heard of; no hello from it yet */
    AC__PEER_UP,         /* its hello came: incarnation known */
    AC__PEER_DOWN        /* lost, for good: its refs are dead */
} ac__peer_state;

/* One incarnation of another node (before its hello: of an address). */
struct ac__peer {
    atomic_uint refs; /* the node's table holds one while not DOWN; each rref one */
    atomic_int state; /* ac__peer_state */
    /* Frames on their way to it (queue + backlog); beside refs, which a
     * send updates too, so that a send touches one line of the peer. */
    atomic_size_t queued;
    uint64_t id;      /* this node's number for it (monitor endpoints, logs) */
    char *address;    /* "host:port", immutable */
    size_t address_len;
    /* Under the node lock: */
    char *system;         /* from its hello or the path that named it */
    uint64_t incarnation; /* 0 until its hello */
    ac__refset watched;   /* rrefs to its actors some local actor watches */
    /* Watches its actors hold on ours: (local target, rref watcher) pairs. */
    ac_ref **inbound_watch; /* 2 * inbound_count entries */
    size_t inbound_count, inbound_cap;
    /* The peer table's (peer_table.h; under the node lock). */
    struct ac__peer *addr_chain, *inc_chain, *newer, *older;
    bool in_table, inc_indexed;
    struct ac__peer *evict_next; /* on node->evicted */
    bool named; /* known only from a frame naming it (under the lock) */
    bool named_dial; /* dialled as named: counted in node->named_dials_open (transport) */
    /* The transport thread's: */
    void *dealer, *monitor;
    size_t conn_index; /* in node->conns while it has a DEALER */
    bool hello_sent;
    /* Its DEALER's connection was made. */
    bool dealer_connected;
    /* Dialled and refused before any connection was made: the DEALER is
     * closed at once (a DEALER does not reconnect) and frames wait for
     * its hello, or its connect deadline to lose it. Under the lock. */
    bool refused;
    bool dialled; /* a connect began: connect_deadline_ns runs (under the lock) */
    bool redialled; /* dialled again after a refusal once Up (transport) */
    bool flush_mark; /* its backlog grew in this round of the queue */
    int64_t connect_deadline_ns; /* while CONNECTING */
    /* Frames its DEALER would not take yet (at its high-water mark), in
     * order; sent when it is writable again. */
    struct ac__out *backlog_head, *backlog_tail;
    char *down_why;              /* set when lost (under the lock) */
    /* Metric series of this peer (NULL when metrics are off); the
     * transport thread's. */
    ac_counter *m_frames_out, *m_bytes_out, *m_frames_in, *m_bytes_in;
    bool metered;
    uint64_t early_frames, early_bytes; /* sent before its hello, not yet in a series */
};

/* A remote ref: an actor at `path` on `peer`. Interned: one per (peer,
 * path) while referenced, so a watch and its Terminated meet. */
struct ac__rref {
    ac_ref ref;
    ac_node *node;
    ac__peer *peer; /* retained */
    char *path;     /* "/user/..." */
    char *full;     /* "actorc://<system>@<address>/user/..." */
    uint64_t hash;
    ac__refset watchers; /* local actors watching it; under the node lock */
    struct ac__rref *chain; /* intern table bucket */
};

/* A frame on its way out. */
typedef struct ac__out {
    _Atomic(struct ac__out *) next;
    ac__peer *peer; /* retained */
    size_t len;
    size_t size; /* of the block (ac__alloc_small), this header included */
    uint8_t *buf; /* len bytes, behind the header */
} ac__out;

/* A pending ask: a local reply target waiting on another node. */
typedef struct ac__corr {
    uint64_t corr;
    ac_ref *reply; /* retained; a one-shot ref */
    ac__peer *peer; /* not retained: compared, never dereferenced */
    struct ac__corr *chain;
} ac__corr;

typedef struct ac__node_metrics {
    atomic_uint_fast64_t frames_out, frames_in, bytes_out, bytes_in;
    atomic_uint_fast64_t decode_errors, node_down, asks_failed_by_node_loss;
    atomic_uint_fast64_t dropped_backpressure, dropped_stale;
    atomic_uint_fast64_t peers_forgotten, peers_evicted, connections_evicted, connections_refused;
    atomic_uint_fast64_t dials_refused;
    atomic_uint_fast64_t connections; /* open now */
} ac__node_metrics;

struct ac_node {
    ac_system *system;
    ac__ext_part part;
    struct ac_observe_source *observed; /* in the system's view (node_observe.c) */
    char *system_name;
    char *address;  /* "host:port" advertised */
    char *endpoint; /* bound */
    uint64_t incarnation;
    ac_node_options options; /* copied; pointers into it not kept */
    ac__wire_limits limits;
    bool curve;
    char curve_public[41], curve_secret[41], curve_server_public[41], curve_server_secret[41];
    char **allowed;
    size_t allowed_count;

    void *zctx, *router, *zap;
    pthread_t thread;
    bool thread_started;
    int wake_fd;
    atomic_bool sleeping;
    atomic_bool stopping; /* ac_node_stop or terminate began */
    bool stopped;         /* the transport thread is joined */

    /* Outgoing frames: Vyukov's intrusive MPSC queue. */
    _Atomic(ac__out *) out_head;
    ac__out *out_tail;
    ac__out out_stub;

    pthread_mutex_t lock;
    ac__peer_table peers; /* not DOWN, this node itself included */
    ac__peer *self;  /* this node as a peer: frames to it are handled as arrived */
    uint64_t next_peer_id;
    ac__rref **rrefs;
    size_t rref_count, rref_cap;
    ac__corr **corrs;
    size_t corr_count, corr_cap;
    atomic_uint_fast64_t next_corr;
    const ac_msg_type **types;
    size_t type_count, type_cap;

    /* The transport thread's memory of the last frame it took, so that a
     * stream from one peer, of one type, from one sender, to one actor
     * costs no lock and no lookup per frame. Each held ref is retained;
     * all are dropped when their peer is lost and at stop. */
    struct {
        uint64_t id;
        ac__peer *from;
        const ac_msg_type *type;
        ac__peer *sender_peer;
        char sender_path[256];
        size_t sender_len;
        ac_ref *sender;
        char target_path[256];
        size_t target_len;
        ac_ref *target;
    } last;

    /* When the transport thread last logged each kind of warning (a
     * line a second at most), and the lines left out since. */
    int64_t last_decode_log, last_stale_log, last_loss_log, last_refuse_log;
    uint64_t losses_unlogged, refusals_unlogged;

    /* Peers with a DEALER (the transport thread's), max_connections at
     * most; and the poll set made of them. */
    ac__peer **conns;
    size_t conn_count;
    struct zmq_pollitem_t *items;
    ac__peer **owners;
    int64_t next_sweep_ns;
    /* Peers another thread evicted from the full table (DOWN, the table's
     * reference with them): the transport thread finishes losing them. */
    _Atomic(ac__peer *) evicted;
    /* The budget of dials to addresses only frames named (dial_allowed). */
    double dial_tokens;
    size_t named_dials_open;
    int64_t dial_refill_ns;
    /* Peers forgotten or lost in all, at the last sweep and when the heap
     * was last trimmed. */
    uint64_t gone_mark, trimmed_mark;
    int64_t trim_again_ns; /* when to trim once more, the workers' blocks given back */

    ac__node_metrics m;
    /* Metric families, when metrics were on at start (else NULL). */
    ac_metric_family *f_frames_out, *f_bytes_out, *f_frames_in, *f_bytes_in;
    ac_counter *c_decode_errors, *c_nodes_down, *c_asks_failed, *c_dropped_backpressure,
        *c_dropped_stale;

    /* The cluster layer's hooks (node_hooks.c), or NULL. */
    _Atomic(const struct ac__node_hooks *) hooks;
};

/* ---- refs.c ---------------------------------------------------------- */

extern const ac__ref_ops ac__rref_ops;
extern const ac__ref_ops ac__rreply_ops;

/* The interned remote ref for (peer, path), retained; made when there is
 * none. Under no lock. Aborts when out of memory only if `must`; else
 * NULL. */
ac__rref *ac__rref_get(ac_node *node, ac__peer *peer, const char *path, size_t len);
/* A reply target of another node (peer, corr), the caller's reference. */
ac_ref *ac__rreply_new(ac_node *node, ac__peer *peer, uint64_t corr);

/* Smaller intern buckets once most refs have gone (takes the lock). */
void ac__rrefs_shrink(ac_node *node);

/* Correlation table (under the node lock unless said). */
uint64_t ac__corr_add(ac_node *node, ac_ref *reply, ac__peer *peer); /* takes the node lock */
ac_ref *ac__corr_take(ac_node *node, uint64_t corr); /* takes the lock; the entry's ref or NULL */
/* Drop the entries whose reply target has settled (a timeout settles
 * without us). Takes the lock. */
void ac__corr_sweep(ac_node *node);
/* Fail every entry waiting on `peer` (NULL: on any) with err
 * (borrowed); returns how many. A lost peer's are counted in
 * asks_failed_by_node_loss, each before it is told, so that a caller who
 * sees its ask fail sees it counted. Takes the lock. */
size_t ac__corr_fail_peer(ac_node *node, ac__peer *peer, ac_error *err);
size_t ac__corr_count(ac_node *node);

/* Interned refs of a peer (after it is down): its watched refs' watchers
 * are told node-lost. Transport thread. */
void ac__rref_peer_lost(ac_node *node, ac__peer *peer);
/* A TERMINATED frame from `peer` about its actor at path. */
void ac__rref_terminated(ac_node *node, ac__peer *peer, const char *path, size_t len);

/* ---- node.c ---------------------------------------------------------- */

void ac__peer_release(ac__peer *peer);
static inline ac__peer *ac__peer_retain(ac__peer *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}
/* The peer for a node's address ("host:port"), retained: the live one,
 * or a new CONNECTING one. NULL when the node is stopping, or its peer
 * table is full of peers that said hello (the failure recorded). */
ac__peer *ac__peer_for(ac_node *node, const char *address, size_t len, const char *system,
                       size_t system_len);
/* Queue a frame to peer (env encoded here). AC_OK, or a failure
 * recorded with ac__fail (peer down, queue full, out of memory, frame too
 * big). The body is env->body. */
ac_status ac__node_send(ac_node *node, ac__peer *peer, const ac__wire_env *env);
/* The same for a message frame: env as given, its type name, payload size
 * and body msg's, encoded straight into the queued frame (AC_ECODEC when
 * msg's type has none). */
ac_status ac__node_send_msg(ac_node *node, ac__peer *peer, const ac__wire_env *env,
                            const ac_msg *msg);
/* Fill env->sender for `sender` as seen from `peer`. */
void ac__node_encode_sender(ac_node *node, ac__peer *peer, ac_ref *sender, ac__wire_env *env,
                            uint64_t corr);
/* The error a lost peer's asks get. Never NULL (aborts when out of memory). */
ac_error *ac__node_down_error(const ac__peer *peer, const char *why);

/* ---- node_hooks.c: what the cluster layer sees of a node ------------- */

/* A peer as a hook sees it. The strings live during the call only. */
typedef struct ac__node_peer_info {
    const char *system;  /* "" when it never said hello */
    const char *address; /* "host:port" */
    uint64_t incarnation; /* 0: it never said hello */
    /* Its HELLO's type name and body (empty from a node outside any
     * cluster): what the cluster layer put in its own hooks there. */
    ac__wire_span hello_type, hello_body;
} ac__node_peer_info;

/* Hooks of the cluster layer. They run on the transport thread: they
 * must not block, nor wait for anything the transport does; they post
 * to an actor. The struct (and what it points to) stays valid and
 * unchanged while it is set, and until the node is freed. */
typedef struct ac__node_hooks {
    /* Sent in this node's HELLO (type name and body; may be empty). */
    const char *hello_type;
    const uint8_t *hello_body;
    size_t hello_len;
    /* A peer's HELLO came: its incarnation is up. */
    void (*peer_up)(void *ctx, const ac__node_peer_info *peer);
    /* A peer is lost for good (incarnation 0: it never said hello). */
    void (*peer_down)(void *ctx, const ac__node_peer_info *peer, const char *why);
    /* A TELL from `from` to a path under "/system/" (no actor lives
     * there; the layer does). */
    void (*system_tell)(void *ctx, const ac__node_peer_info *from, ac__wire_span path,
                        ac__wire_span type_name, ac__wire_span body);
    void *ctx;
} ac__node_hooks;

#define AC__NODE_SYSTEM_PREFIX "/system/"

/* Set the hooks (NULL: clear them). AC_EEXIST when others are set. Any
 * thread; a hook may still run once after they are cleared. */
AC__SPI ac_status ac__node_hooks_set(ac_node *node, const ac__node_hooks *hooks);
/* TELL `body` (type `type_name`) to `path` (under "/system/") on the node
 * at `address` ("host:port"), connecting to it first when there is no
 * connection: its system is learnt from its HELLO. incarnation: the one
 * meant (0: whichever answers). AC_ENODEDOWN when that node is lost or
 * this one stops; AC_EINVAL for this node's own address. Any thread. */
AC__SPI ac_status ac__node_tell_system(ac_node *node, const char *address, uint64_t incarnation,
                                       const char *path, const char *type_name,
                                       const uint8_t *body, size_t len);
/* The node's heartbeat timeout, ms (its options, defaults applied). */
AC__SPI int ac__node_heartbeat_timeout_ms(const ac_node *node);
/* Has the node begun to stop? */
AC__SPI bool ac__node_stopping(ac_node *node);

/* The hooks' call sites (node.c, transport thread). */
/* The node in the system's view (node_observe.c): added once its
 * transport runs; node_free removes it. */
void ac__node_observe_start(ac_node *node);

void ac__node_hook_up(ac_node *node, const ac__peer *peer, const ac__wire_env *hello);
void ac__node_hook_down(ac_node *node, const ac__peer *peer, const char *why);
/* True when the frame (a TELL) was for "/system/..." and is handled. */
bool ac__node_hook_system_tell(ac_node *node, const ac__peer *from, const ac__wire_env *env);
/* The incarnation frames to peer are meant for (0 before its hello). An
 * UP peer's never changes (a new incarnation is a new peer) and was
 * written before its state turned UP, so it is read then without the
 * lock. */
static inline uint64_t ac__peer_target_inc(ac_node *node, ac__peer *p)
{
    if (atomic_load_explicit(&p->state, memory_order_acquire) == AC__PEER_UP)
        return p->incarnation;
    pthread_mutex_lock(&node->lock);
    uint64_t inc = p->incarnation;
    pthread_mutex_unlock(&node->lock);
    return inc;
}

/* The local part of a node's refs: "actorc://<system>/..." -> "/...". */
static inline const char *ac__local_part(const char *path)
{
    const char *p = path;
    if (__builtin_strncmp(p, "actorc://", 9) == 0) {
        const char *slash = __builtin_strchr(p + 9, '/');
        return slash ? slash : "";
    }
    return p;
}

#endif
