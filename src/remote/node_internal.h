/*
 * A node's insides, file by file: node.c (the API: start, stop, resolve,
 * types, stats), peers.c (peers made, forgotten and lost), outq.c (the
 * outgoing queue, backpressure, each peer's backlog), conns.c (a peer's
 * connection: dialled with its HELLO, refused, late), inbound.c (frames
 * that arrive: the handshake and dispatch), handlers.c (what a message,
 * a reply or a watch does here, through the last-frame lookup cache),
 * node_loop.c (the transport thread), node_metrics.c (counts, series,
 * rate-limited logging), rrefs.c (remote refs), rreply.c (reply targets
 * of other nodes), corr.c (the correlation table). The transport below
 * them all (transport.h) owns every socket.
 *
 * Threads. The transport thread owns every connection. Any thread
 * encodes a frame and queues it (an MPSC queue plus the transport's
 * wake-up, used only when the transport sleeps). The node's lock guards
 * the tables: peers by address, interned remote refs, the correlation
 * table, the types; a peer's `state` is atomic so that a send can refuse
 * a lost peer without the lock.
 */
#ifndef AC_REMOTE_NODE_INTERNAL_H
#define AC_REMOTE_NODE_INTERNAL_H

#include <pthread.h>
#include <time.h>

#include "actorc/ask.h"
#include "actorc/metrics.h"
#include "actorc/observe.h"
#include "actorc/remote.h"
#include "ask/oneshot.h"
#include "core/alloc.h"
#include "core/extension.h"
#include "remote/peer_table.h"
#include "remote/transport.h"
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
    ac__conn *conn;    /* the transport's connection to it, or NULL */
    size_t conn_index; /* in node->conns while it has a connection */
    bool hello_sent;
    /* Its connection was made. */
    bool conn_made;
    /* Dialled and refused before any connection was made: the connection
     * is closed at once (it is not retried) and frames wait for its
     * hello, or its connect deadline to lose it. Under the lock. */
    bool refused;
    bool dialled; /* a connect began: connect_deadline_ns runs (under the lock) */
    bool redialled; /* dialled again after a refusal once Up (transport) */
    bool flush_mark; /* its backlog grew in this round of the queue */
    int64_t connect_deadline_ns; /* while CONNECTING */
    /* When a frame last crossed to or from it (node->loop_ns then): its
     * connection closes after idle_timeout_ms without one (conn_idle.c). */
    int64_t last_used_ns;
    /* Frames its connection would not take yet (at its high-water mark),
     * in order; sent when it is writable again. */
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
    atomic_uint_fast64_t dials_refused, connections_idled;
    atomic_uint_fast64_t transport_wakeups; /* returns from a wait that slept */
    atomic_uint_fast64_t connections; /* open now */
    atomic_uint_fast64_t fault_delayed, fault_dropped, fault_blackholed; /* fault.h */
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

    /* The transport the bind URL chose, and its state. */
    const ac__transport_ops *tp;
    void *tstate;
    /* The fault layer, when it wraps the transport (tstate then), or NULL. */
    struct ac__fault *fault;
    pthread_t thread;
    bool thread_started;
    atomic_bool sleeping;
    atomic_bool stopping; /* ac_node_stop or terminate began */
    /* ac_node_stop and a terminate may meet: the first stops, the second
     * finds it stopped (under stop_lock). */
    pthread_mutex_t stop_lock;
    bool stopped; /* the transport thread is joined */

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

    /* The transport thread's last-frame lookup cache: what the last
     * frame it took was found to mean, so that a stream from one peer, of
     * one type, from one sender, to one actor costs no lock and no lookup
     * per frame. Each held ref is retained; all are dropped when their
     * peer is lost and at stop (handlers.c). */
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
    } lookup_cache;

    /* When the transport thread last logged each kind of warning (a
     * line a second at most), and the lines left out since. */
    int64_t last_decode_log, last_stale_log, last_loss_log, last_refuse_log;
    uint64_t losses_unlogged, refusals_unlogged;

    /* Peers with a connection (the transport thread's), max_connections
     * at most. */
    ac__peer **conns;
    size_t conn_count;
    int64_t next_sweep_ns;
    /* The transport thread's clock, read once per turn of its loop: what
     * last_used_ns is stamped with. */
    int64_t loop_ns;
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
    ac_counter *c_fault_delayed, *c_fault_dropped, *c_fault_blackholed;

    /* The cluster layer's hooks (node_hooks.c), or NULL. */
    _Atomic(const struct ac__node_hooks *) hooks;
};

/* Count one of the node's events, in its stats and (when on) its metric. */
#define AC__NODE_COUNT(node, field, counter, n)                                               \
    do {                                                                                      \
        atomic_fetch_add_explicit(&(node)->m.field, (n), memory_order_relaxed);               \
        ac_counter_add((node)->counter, (n));                                                 \
    } while (0)

/* The monotonic clock, ns (the remote library's own: it links only
 * what libactorc exports). */
static inline int64_t ac__node_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static inline ac__wire_span ac__text_span(const char *s)
{
    return (ac__wire_span){(const uint8_t *)s, s ? __builtin_strlen(s) : 0};
}

/* ---- rrefs.c: remote refs ------------------------------------------------ */

extern const ac__ref_ops ac__rref_ops;

/* The interned remote ref for (peer, path), retained; made when there is
 * none. Under no lock. NULL when out of memory. */
ac__rref *ac__rref_get(ac_node *node, ac__peer *peer, const char *path, size_t len);
/* Smaller intern buckets once most refs have gone (takes the lock). */
void ac__rrefs_shrink(ac_node *node);
/* Interned refs of a peer (after it is down): its watched refs' watchers
 * are told node-lost. Transport thread. */
void ac__rref_peer_lost(ac_node *node, ac__peer *peer);
/* A TERMINATED frame from `peer` about its actor at path. */
void ac__rref_terminated(ac_node *node, ac__peer *peer, const char *path, size_t len);

/* ---- rreply.c: reply targets of other nodes ------------------------------ */

extern const ac__ref_ops ac__rreply_ops;

/* A reply target of another node (peer, corr), the caller's reference. */
ac_ref *ac__rreply_new(ac_node *node, ac__peer *peer, uint64_t corr);
/* Is ref such a target? Its peer (borrowed) and id. */
bool ac__rreply_parts(const ac_ref *ref, ac__peer **peer, uint64_t *corr);

/* ---- corr.c: the correlation table --------------------------------------- */

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
/* The entries nobody settled, at free. */
void ac__corr_free_all(ac_node *node);

/* A chained hash table's buckets grown or shrunk to `cap` (a power of
 * two): each entry's chain pointer sits at `chain_off`, its hash comes
 * from `hash`. False when out of memory (the old buckets kept). */
bool ac__chain_rehash(void ***buckets, size_t *cap, size_t new_cap, size_t chain_off,
                      uint64_t (*hash)(const void *entry));

/* ---- peers.c ------------------------------------------------------------- */

void ac__peer_release(ac__peer *peer);
/* Drop n references to p at once. */
void ac__peer_release_n(ac__peer *p, unsigned n);
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
/* The same, `named` when only a frame named it (a sender's address), not
 * this node's own wish. */
ac__peer *ac__peer_at(ac_node *node, const char *address, size_t len, const char *system,
                      size_t system_len, bool named);
/* A new peer in the table (under the lock). NULL with the failure
 * recorded: out of memory, or the table full of peers in use. */
ac__peer *ac__peer_new(ac_node *node, const char *address, size_t len, const char *system,
                       size_t system_len, ac__peer_state state);
/* The UP peer of incarnation inc (not this node), retained, or NULL. */
ac__peer *ac__peer_by_inc(ac_node *node, uint64_t inc);
/* Can p be forgotten without anyone noticing? Under the lock. */
bool ac__peer_forgettable(const ac_node *node, const ac__peer *p);
void ac__peer_forget(ac_node *node, ac__peer *p);
/* The first half of losing a peer, under the lock: DOWN, out of the
 * table. False when it was DOWN already (or is this node). */
bool ac__peer_mark_down_locked(ac_node *node, ac__peer *peer, const char *why);
/* Lose `peer` for good (transport thread). */
void ac__peer_down(ac_node *node, ac__peer *peer, const char *why);
/* Peers evicted by other threads: the transport thread finishes them. */
void ac__peer_finish_evicted(ac_node *node);
/* The error a lost peer's asks get. Never NULL (aborts when out of memory). */
ac_error *ac__node_down_error(const ac__peer *peer, const char *why);

/* ---- outq.c: the outgoing queue ------------------------------------------ */

/* Queue a frame to peer (env encoded here). AC_OK, or a failure
 * recorded with ac__fail (peer down, queue full, out of memory, frame too
 * big). The body is env->body. */
ac_status ac__node_send(ac_node *node, ac__peer *peer, const ac__wire_env *env);
/* The same for a message frame: env as given, its type name, payload size
 * and body msg's, encoded straight into the queued frame (AC_ECODEC when
 * msg's type has none). */
ac_status ac__node_send_msg(ac_node *node, ac__peer *peer, const ac__wire_env *env,
                            const ac_msg *msg);
/* Tell `peer` that its ask `corr` gets no reply: why (flags 1: its
 * target is stopped). */
void ac__node_send_undeliverable(ac_node *node, ac__peer *peer, uint64_t corr, unsigned flags,
                                 const char *why);
/* Backpressure: AC_OK, or AC_EFAILED recorded and counted when max_queue
 * frames already wait for peer. */
ac_status ac__node_admit_queue(ac_node *node, ac__peer *peer);
/* Wake the transport thread if it sleeps. Any thread. */
void ac__node_wake(ac_node *node);
/* Is a frame queued? (Transport thread.) */
bool ac__outq_waits(ac_node *node);
/* Send what is queued; returns how many frames it took. Transport thread. */
size_t ac__outq_drain(ac_node *node);
/* Drop what waits (at stop); `counted`: take them off their peers'
 * counts too. */
void ac__outq_drop(ac_node *node, bool counted);
/* Send what waits in peer's backlog, as far as its connection takes it
 * (all of it dropped when the peer is lost). Transport thread. */
void ac__backlog_flush(ac_node *node, ac__peer *p);

/* ---- conns.c: a peer's connection ---------------------------------------- */

/* Dial p and say HELLO: NULL, or why it cannot be done. */
const char *ac__conn_open(ac_node *node, ac__peer *p);
void ac__conn_close(ac_node *node, ac__peer *p);
/* May p be dialled now (named_dials_per_s)? NULL, or why not (counted). */
const char *ac__conn_dial_refusal(ac_node *node, ac__peer *p);
/* A named dial ends: its peer said hello. */
void ac__conn_named_done(ac_node *node, ac__peer *p);
/* p said its first hello (Up now): a dial of ours to it that has not
 * connected is closed, to be dialled afresh. False when p was lost
 * meanwhile. */
bool ac__conn_hello_came(ac_node *node, ac__peer *p);
/* Lose the peers whose connection or hello is late (housekeeping); the
 * earliest deadline of those still being made (INT64_MAX: none). */
int64_t ac__conns_check_late(ac_node *node, int64_t now);
/* Lose p if its connect deadline has passed (the sweep's). */
void ac__conn_lose_late(ac_node *node, ac__peer *p, int64_t now);

/* ---- conn_idle.c: idle connections --------------------------------------- */

/* Close the connections nothing crossed for idle_timeout_ms, that no ask
 * waits on and no watch needs; their peers stay up (housekeeping, when
 * the option is on). */
void ac__conns_close_idle(ac_node *node, int64_t now);
/* When the next open connection may have been idle for idle_timeout_ms
 * (INT64_MAX: none open); frames that cross it meanwhile only make that
 * later, so a check then is never late. */
int64_t ac__conns_next_idle(const ac_node *node);

/* ---- inbound.c, handlers.c: frames that arrive ---------------------------- */

/* Handle a message of frames (`from` NULL: of no node that said hello);
 * `wire`: it crossed a wire and is counted. Transport thread. */
void ac__inbound_frames(ac_node *node, ac__peer *from, const uint8_t *buf, size_t len,
                        const void *routing_id, size_t id_len, bool wire);
/* What a frame does here (handlers.c). */
void ac__handle_message(ac_node *node, ac__peer *from, const ac__wire_env *env);
void ac__handle_reply(ac_node *node, ac__peer *from, const ac__wire_env *env);
void ac__handle_undeliverable(ac_node *node, const ac__wire_env *env);
void ac__handle_watch(ac_node *node, ac__peer *from, const ac__wire_env *env, bool on);
/* Forget what the lookup cache holds of `peer` (NULL: everything). */
void ac__lookup_cache_forget(ac_node *node, const ac__peer *peer);

/* ---- node_metrics.c: counts, series, logging ------------------------------ */

void ac__node_metrics_register(ac_node *node);
/* Count what left for `p`, and what came from `from`. Transport thread. */
void ac__node_count_out(ac_node *node, ac__peer *p, size_t frames, size_t bytes);
void ac__node_count_in(ac_node *node, ac__peer *from, size_t bytes);
/* A warning, at most a line a second per `*last_ns`; with `unlogged`,
 * the lines left out meanwhile are counted and said. Transport thread. */
void ac__node_log_counted(ac_node *node, int64_t *last_ns, uint64_t *unlogged, const char *fmt,
                          ...) AC_PRINTF(4, 5);
#define ac__node_log_limited(node, last_ns, ...) ac__node_log_counted(node, last_ns, NULL, __VA_ARGS__)

/* ---- node.c, node_loop.c ------------------------------------------------ */

/* Fill env->sender for `sender`. */
void ac__node_encode_sender(ac_node *node, ac_ref *sender, ac__wire_env *env);
/* The type registered under that name, or NULL. */
const ac_msg_type *ac__node_type_named(ac_node *node, const uint8_t *name, size_t len);
/* The transport thread. */
void *ac__node_loop(void *arg);

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
/* Fail every ask waiting on the node of `incarnation` with a
 * NodeDownError saying `why`, at once (its connection stays: the
 * cluster layer downed it, or this node downed itself). How many
 * failed; 0 for an incarnation not connected. Any thread. */
AC__SPI size_t ac__node_fail_asks(ac_node *node, uint64_t incarnation, const char *why);
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
