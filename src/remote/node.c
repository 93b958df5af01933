/*
 * A node: the API (remote.h) and its transport thread.
 *
 * Sockets. The node binds one ROUTER; for every peer it keeps one DEALER
 * connected to the peer's ROUTER, its routing id this node's incarnation.
 * Frames to a peer leave on its DEALER, frames from it arrive on the
 * ROUTER, so each peer connection carries one direction; what waits for
 * a peer leaves as one message of several frames (wire.h). A new DEALER
 * says HELLO first; a HELLO from a node we have no DEALER to makes one
 * (liveness is watched on DEALERs: their monitors report a dropped
 * connection, their heartbeats a silent peer).
 *
 * Rules. A peer is lost for good when its DEALER's connection drops, its
 * heartbeats time out, its handshake fails, it does not say hello (or its
 * DEALER does not connect) within the connect timeout, it says it leaves,
 * a hello from a new incarnation at its address arrives, or it says hello
 * again without knowing this node's incarnation (it lost this node; a new
 * connection is a new start with a new peer). A lost peer's pending asks fail with
 * NodeDownError at once, its watched actors' watchers get Terminated
 * flagged node-lost, and what is sent to its refs is a dead letter. A
 * malformed frame is dropped (counted, logged at most once a second) and
 * the connection kept: one bad frame says nothing of the next. A frame
 * from an unknown routing id, or meant for an earlier incarnation of this
 * node, is dropped too (an ask among them is answered undeliverable).
 * Backpressure: at most max_queue frames wait for one peer; a send beyond
 * that is refused (AC_EFAILED) and its message is a dead letter. A peer
 * never sent to (no DEALER) that only the table holds is forgotten.
 */
#include <errno.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "core/sync.h"
#include "remote/node_internal.h"

#define PART_KEY "actorc.remote.node"
#define WATCH_PATH "/system/watch"
#define HOUSEKEEPING_NS 20000000ll /* 20 ms */

bool ac__rreply_parts(const ac_ref *ref, ac__peer **peer, uint64_t *corr);

/* Count one of the node's events, in its stats and (when on) its metric. */
#define COUNT(node, field, counter, n)                                                        \
    do {                                                                                      \
        atomic_fetch_add_explicit(&(node)->m.field, (n), memory_order_relaxed);               \
        ac_counter_add((node)->counter, (n));                                                 \
    } while (0)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---- peers ------------------------------------------------------------ */

/* Drop n references to p at once. */
static void peer_release_n(ac__peer *p, unsigned n)
{
    /* acq_rel: every holder's use happens before the free. */
    if (atomic_fetch_sub_explicit(&p->refs, n, memory_order_acq_rel) != n)
        return;
    ac__refset_clear(&p->watched);
    free(p->inbound_watch);
    free(p->address);
    free(p->system);
    free(p->down_why);
    free(p);
}

void ac__peer_release(ac__peer *p)
{
    if (p)
        peer_release_n(p, 1);
}

/* Can p be forgotten without anyone noticing? Nothing refers to it but
 * the table, it has no connection and none is being made. Under the lock. */
static bool peer_forgettable(const ac_node *node, const ac__peer *p)
{
    return p != node->self &&
           atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING &&
           !p->dialled && atomic_load_explicit(&p->refs, memory_order_relaxed) == 1 &&
           atomic_load_explicit(&p->queued, memory_order_relaxed) == 0;
}

static void peer_forget(ac_node *node, ac__peer *p)
{
    ac__ptab_remove(&node->peers, p);
    atomic_store_explicit(&p->state, AC__PEER_DOWN, memory_order_relaxed);
    atomic_fetch_add_explicit(&node->m.peers_forgotten, 1, memory_order_relaxed);
    ac__peer_release(p); /* the table's, the last */
}

static void wake(ac_node *node);
static bool peer_mark_down_locked(ac_node *node, ac__peer *peer, const char *why);

/* Room for one more peer: at max_peers, forget the oldest entry that can
 * be (a stranger's address, most often); failing that, lose the oldest
 * that never said hello (the transport thread finishes it): strangers'
 * addresses must not keep a real node out. Under the lock. */
static bool peer_room(ac_node *node)
{
    if (node->peers.count < node->options.max_peers + 1) /* + this node's own */
        return true;
    ac__peer *unheard = NULL;
    for (ac__peer *p = node->peers.oldest; p; p = p->newer) {
        if (peer_forgettable(node, p)) {
            peer_forget(node, p);
            return true;
        }
        if (!unheard && p != node->self && p->incarnation == 0)
            unheard = p;
    }
    if (!unheard)
        return false;
    char why[128];
    snprintf(why, sizeof why, "it never said hello and the peer table was full (%zu, max_peers)",
             node->options.max_peers);
    if (!peer_mark_down_locked(node, unheard, why))
        return false;
    atomic_fetch_add_explicit(&node->m.peers_evicted, 1, memory_order_relaxed);
    unheard->evict_next = atomic_load_explicit(&node->evicted, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&node->evicted, &unheard->evict_next, unheard,
                                                  memory_order_release, memory_order_relaxed)) {
    }
    wake(node);
    return true;
}

/* A new peer in the table (under the lock). NULL with the failure
 * recorded: out of memory, or the table full of peers in use. */
static ac__peer *peer_new(ac_node *node, const char *address, size_t len, const char *system,
                          size_t system_len, ac__peer_state state)
{
    if (node->self && !peer_room(node))
        return ac__fail_null(AC_EFAILED,
                             "node %s knows %zu peers (max_peers), all in use: %.*s refused",
                             node->address, node->options.max_peers, (int)(len > 200 ? 200 : len),
                             address);
    ac__peer *p = ac__calloc(1, sizeof *p);
    char *a = p ? ac__malloc(len + 1) : NULL;
    char *s = a && system ? ac__malloc(system_len + 1) : NULL;
    if (!a || (system && !s)) {
        free(s);
        free(a);
        free(p);
        return ac__fail_null(AC_ENOMEM, "out of memory for a peer");
    }
    memcpy(a, address, len);
    a[len] = '\0';
    if (s) {
        memcpy(s, system, system_len);
        s[system_len] = '\0';
    }
    atomic_init(&p->refs, 1); /* the table's */
    atomic_init(&p->state, (int)state);
    p->id = ++node->next_peer_id;
    p->address = a;
    p->address_len = len;
    p->system = s;
    if (!ac__ptab_add(&node->peers, p)) {
        peer_release_n(p, 1);
        return ac__fail_null(AC_ENOMEM, "out of memory for a peer");
    }
    return p;
}

static ac__peer *peer_by_address(ac_node *node, const char *address, size_t len)
{
    return ac__ptab_by_address(&node->peers, address, len);
}

/* The peer at an address, retained, made if new: `named` when only a
 * frame named it (a sender's address), not this node's own wish. */
static ac__peer *peer_at(ac_node *node, const char *address, size_t len, const char *system,
                         size_t system_len, bool named)
{
    pthread_mutex_lock(&node->lock);
    ac__peer *p = NULL;
    if (!atomic_load_explicit(&node->stopping, memory_order_relaxed)) {
        p = peer_by_address(node, address, len);
        if (!p) {
            p = peer_new(node, address, len, system, system_len, AC__PEER_CONNECTING);
            if (p)
                p->named = named;
        } else if (!named) {
            p->named = false;
        }
        if (p)
            ac__peer_retain(p);
    }
    pthread_mutex_unlock(&node->lock);
    return p;
}

ac__peer *ac__peer_for(ac_node *node, const char *address, size_t len, const char *system,
                       size_t system_len)
{
    return peer_at(node, address, len, system, system_len, false);
}

ac_error *ac__node_down_error(const ac__peer *peer, const char *why)
{
    ac_error *e = ac_error_new(AC_NODE_DOWN_ERROR, "Node actorc://%s@%s (incarnation %016" PRIx64
                                                   ") is down: %s",
                               peer->system ? peer->system : "", peer->address, peer->incarnation,
                               why ? why : "connection lost");
    if (!e)
        ac__oom_abort("a NodeDownError");
    return e;
}

/* ---- types -------------------------------------------------------------- */

static const ac_msg_type *type_named(ac_node *node, const uint8_t *name, size_t len)
{
    const ac_msg_type *t = NULL;
    pthread_mutex_lock(&node->lock);
    for (size_t i = 0; i < node->type_count; i++)
        if (strlen(node->types[i]->name) == len && memcmp(node->types[i]->name, name, len) == 0) {
            t = node->types[i];
            break;
        }
    pthread_mutex_unlock(&node->lock);
    return t;
}

static ac_status add_type(ac_node *node, const ac_msg_type *type)
{
    ac_status st = AC_OK;
    pthread_mutex_lock(&node->lock);
    for (size_t i = 0; i < node->type_count; i++)
        if (strcmp(node->types[i]->name, type->name) == 0) {
            st = node->types[i] == type
                     ? AC_OK
                     : ac__fail(AC_EEXIST, "ac_node_register_type: another type is named \"%s\"",
                                type->name);
            pthread_mutex_unlock(&node->lock);
            return st;
        }
    if (node->type_count == node->type_cap) {
        size_t cap = node->type_cap ? node->type_cap * 2 : 16;
        const ac_msg_type **t = ac__realloc(node->types, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&node->lock);
            return ac__fail(AC_ENOMEM, "ac_node_register_type: out of memory");
        }
        node->types = t;
        node->type_cap = cap;
    }
    node->types[node->type_count++] = type;
    pthread_mutex_unlock(&node->lock);
    return st;
}

ac_status ac_node_register_type(ac_node *node, const ac_msg_type *type)
{
    if (!node || !type || !type->name)
        return ac__fail(AC_EINVAL, "ac_node_register_type: %s is NULL",
                        !node ? "node" : !type ? "type" : "type->name");
    if (!ac__wire_has_codec(type))
        return ac__fail(AC_ECODEC,
                        "ac_node_register_type: %s has no wire codec (give it encode and decode "
                        "hooks)",
                        type->name);
    return add_type(node, type);
}

/* ---- encoding --------------------------------------------------------- */

static ac__wire_span span_of(const char *s) { return (ac__wire_span){(const uint8_t *)s, s ? strlen(s) : 0}; }

void ac__node_encode_sender(ac_node *node, ac__peer *peer, ac_ref *sender, ac__wire_env *env,
                            uint64_t corr)
{
    (void)corr;
    ac__peer *rp;
    uint64_t rc;
    env->sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_NONE};
    if (!sender)
        return;
    if (sender->ops->kind == AC__REF_ACTOR) {
        env->sender.kind = AC__WIRE_SENDER_LOCAL;
        env->sender.path = span_of(ac__local_part(ac_ref_path(sender)));
        return;
    }
    if (sender->ops == &ac__rref_ops) {
        const ac__rref *r = (const ac__rref *)sender;
        if (r->peer == node->self) {
            env->sender.kind = AC__WIRE_SENDER_LOCAL;
            env->sender.path = span_of(r->path);
            return;
        }
        /* An actor of another node (perhaps the receiver's own). Its
         * system (set once, never freed before the peer) and incarnation
         * are the hello's, under the lock. */
        env->sender.kind = AC__WIRE_SENDER_ACTOR;
        pthread_mutex_lock(&node->lock);
        env->sender.system = span_of(r->peer->system);
        env->sender.incarnation = r->peer->incarnation;
        pthread_mutex_unlock(&node->lock);
        env->sender.address = span_of(r->peer->address);
        env->sender.path = span_of(r->path);
        (void)peer;
        return;
    }
    if (ac__rreply_parts(sender, &rp, &rc)) {
        env->sender.kind = AC__WIRE_SENDER_REPLY;
        pthread_mutex_lock(&node->lock);
        env->sender.system = span_of(rp->system);
        env->sender.incarnation = rp->incarnation;
        pthread_mutex_unlock(&node->lock);
        env->sender.address = span_of(rp->address);
        env->sender.corr = rc;
        return;
    }
    /* A local one-shot reply target sent as the sender of a plain tell
     * (not an ask: that is encoded as ASK) has no name on the wire. */
}

/* ---- the outgoing queue ----------------------------------------------- */

static void out_push(ac_node *node, ac__out *o)
{
    atomic_store_explicit(&o->next, NULL, memory_order_relaxed);
    /* seq_cst: publishes o (release), orders after the previous pusher's
     * link (acquire), and pairs with the transport's check of the queue
     * before it sleeps (see wake). */
    ac__out *prev = atomic_exchange_explicit(&node->out_head, o, memory_order_seq_cst);
    atomic_store_explicit(&prev->next, o, memory_order_release);
}

/* The next frame, or NULL (also while a push is half done). Transport
 * thread only. */
static ac__out *out_pop(ac_node *node)
{
    ac__out *tail = node->out_tail;
    /* Acquire pairs with out_push's release store of next. */
    ac__out *next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (tail == &node->out_stub) {
        if (!next)
            return NULL;
        node->out_tail = next;
        tail = next;
        next = atomic_load_explicit(&tail->next, memory_order_acquire);
    }
    if (next) {
        node->out_tail = next;
        return tail;
    }
    if (tail != atomic_load_explicit(&node->out_head, memory_order_acquire))
        return NULL; /* a push is between its exchange and its link */
    out_push(node, &node->out_stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        node->out_tail = next;
        return tail;
    }
    return NULL;
}

static void wake(ac_node *node)
{
    /* seq_cst: pairs with the transport's store of sleeping and its
     * re-check of the queue (one of the two sees the other). Only the
     * sender that finds it asleep writes: one wake-up per sleep, however
     * many frames come meanwhile. */
    if (atomic_load_explicit(&node->sleeping, memory_order_seq_cst) &&
        atomic_exchange_explicit(&node->sleeping, false, memory_order_seq_cst)) {
        uint64_t one = 1;
        ssize_t n = write(node->wake_fd, &one, sizeof one);
        (void)n; /* EAGAIN: the counter is full, so a wake is pending */
    }
}

/* May a frame go to peer now? AC_OK, or the failure recorded. */
static ac_status send_admit(ac_node *node, ac__peer *peer)
{
    if (atomic_load_explicit(&peer->state, memory_order_acquire) == AC__PEER_DOWN)
        return ac__fail(AC_ENODEDOWN, "node %s is down", peer->address);
    if (atomic_load_explicit(&node->stopping, memory_order_acquire))
        return ac__fail(AC_ENODEDOWN, "this node is stopping");
    if (atomic_load_explicit(&peer->queued, memory_order_relaxed) >= node->options.max_queue) {
        COUNT(node, dropped_backpressure, c_dropped_backpressure, 1);
        return ac__fail(AC_EFAILED, "%zu frames already wait for node %s: it falls behind",
                        node->options.max_queue, peer->address);
    }
    return AC_OK;
}

static ac_status frame_too_big(ac_node *node, size_t len)
{
    return ac__fail(AC_EINVAL, "a frame of %zu bytes is over the limit of %zu", len,
                    node->options.max_frame);
}

/* A frame of `need` bytes for peer, its bytes to be written (NULL with
 * the failure recorded). */
static ac__out *out_new(ac__peer *peer, size_t need)
{
    /* Small frames come from the per-thread caches: a stream's frames
     * are made on one thread and freed on the transport's. */
    ac__out *o = ac__alloc_small(sizeof *o + need);
    if (!o)
        return ac__fail_null(AC_ENOMEM, "out of memory for a frame to %s", peer->address);
    o->size = sizeof *o + need;
    o->buf = (uint8_t *)(o + 1);
    o->len = need;
    return o;
}

static void out_free(ac__out *o) { ac__free_small(o, o->size); }

static void out_queue(ac_node *node, ac__peer *peer, ac__out *o)
{
    o->peer = ac__peer_retain(peer);
    atomic_fetch_add_explicit(&peer->queued, 1, memory_order_relaxed);
    out_push(node, o);
    wake(node);
}

ac_status ac__node_send(ac_node *node, ac__peer *peer, const ac__wire_env *env)
{
    if (send_admit(node, peer) != AC_OK)
        return ac_last_status();
    uint8_t small[512];
    size_t need = ac__wire_encode(env, small, sizeof small);
    if (need > node->options.max_frame)
        return frame_too_big(node, need);
    ac__out *o = out_new(peer, need);
    if (!o)
        return ac_last_status();
    if (need <= sizeof small)
        memcpy(o->buf, small, need);
    else
        ac__wire_encode(env, o->buf, need);
    out_queue(node, peer, o);
    return AC_OK;
}

ac_status ac__node_send_msg(ac_node *node, ac__peer *peer, const ac__wire_env *env,
                            const ac_msg *msg)
{
    if (send_admit(node, peer) != AC_OK)
        return ac_last_status();
    uint8_t small[512];
    size_t need = ac__wire_encode_msg(env, msg, small, sizeof small);
    if (need == 0)
        return ac__fail(AC_ECODEC, "%s has no wire codec", ac_msg_type_name(msg));
    /* A size beyond the small buffer leaves room for the longest body
     * head: the frame may come out up to 8 bytes shorter, never longer. */
    size_t slack = need > sizeof small ? 8 : 0;
    if (need - slack > node->options.max_frame)
        return frame_too_big(node, need - slack);
    ac__out *o = out_new(peer, need);
    if (!o)
        return ac_last_status();
    if (need <= sizeof small) {
        memcpy(o->buf, small, need);
    } else {
        size_t got = ac__wire_encode_msg(env, msg, o->buf, need);
        if (got == 0 || got > need) {
            out_free(o);
            return ac__fail(AC_ECODEC, "the codec of %s is not stable (two sizes for one payload)",
                            ac_msg_type_name(msg));
        }
        if (got > node->options.max_frame) {
            out_free(o);
            return frame_too_big(node, got);
        }
        o->len = got;
    }
    out_queue(node, peer, o);
    return AC_OK;
}

/* ---- metrics ------------------------------------------------------------ */

/* The per-peer families and the node's counters, registered at start when
 * the system's metrics are on. */
static void metrics_register(ac_node *node)
{
    if (!ac_metrics_enabled(node->system))
        return;
    static const char *const peer_label[] = {"peer"};
    ac_metric_options po = {.label_names = peer_label, .label_count = 1, .max_series = 1000};
    po.help = "Frames sent to a peer node.";
    node->f_frames_out = ac_metrics_counter(node->system, "actorc_remote_frames_sent_total", &po);
    po.help = "Bytes of frames sent to a peer node.";
    node->f_bytes_out = ac_metrics_counter(node->system, "actorc_remote_bytes_sent_total", &po);
    po.help = "Frames received from a peer node.";
    node->f_frames_in = ac_metrics_counter(node->system, "actorc_remote_frames_received_total", &po);
    po.help = "Bytes of frames received from a peer node.";
    node->f_bytes_in = ac_metrics_counter(node->system, "actorc_remote_bytes_received_total", &po);
    ac_metric_options o = {.help = "Malformed frames and bodies dropped."};
    node->c_decode_errors = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_decode_errors_total", &o), NULL);
    o.help = "Peer nodes lost (connection dropped, heartbeats stopped, new incarnation, left).";
    node->c_nodes_down = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_nodes_down_total", &o), NULL);
    o.help = "Asks failed with NodeDownError because their node was lost.";
    node->c_asks_failed = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_asks_failed_node_down_total", &o), NULL);
    static const char *const reason_label[] = {"reason"};
    ac_metric_options ro = {.help = "Frames not sent or not handled, by reason.",
                            .label_names = reason_label, .label_count = 1};
    ac_metric_family *dropped = ac_metrics_counter(node->system, "actorc_remote_frames_dropped_total", &ro);
    static const char *const bp[] = {"backpressure"}, *const stale[] = {"stale"};
    node->c_dropped_backpressure = ac_counter_series(dropped, bp);
    node->c_dropped_stale = ac_counter_series(dropped, stale);
    ac_clear_error();
}

/* The series of one peer (transport thread, once it is known). */
static void metrics_peer(ac_node *node, ac__peer *p)
{
    if (p->metered || !node->f_frames_out)
        return;
    p->metered = true;
    char label[320];
    pthread_mutex_lock(&node->lock);
    snprintf(label, sizeof label, "%s@%s", p->system ? p->system : "", p->address);
    pthread_mutex_unlock(&node->lock);
    const char *v[] = {label};
    p->m_frames_out = ac_counter_series(node->f_frames_out, v);
    p->m_bytes_out = ac_counter_series(node->f_bytes_out, v);
    p->m_frames_in = ac_counter_series(node->f_frames_in, v);
    p->m_bytes_in = ac_counter_series(node->f_bytes_in, v);
    ac_counter_add(p->m_frames_out, p->early_frames);
    ac_counter_add(p->m_bytes_out, p->early_bytes);
}


/* ---- the transport thread: logging, losing peers ------------------------ */

static void log_limited(ac_node *node, int64_t *last_ns, const char *fmt, ...) AC_PRINTF(3, 4);
static void log_limited(ac_node *node, int64_t *last_ns, const char *fmt, ...)
{
    int64_t t = now_ns();
    if (*last_ns && t - *last_ns < 1000000000ll)
        return;
    *last_ns = t;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ac_system_log(node->system, AC_LOG_WARN, "node %s: %s", node->address, line);
}

/* Close a DEALER and its monitor. The monitor is stopped first: closing
 * a socket emits a last event, and libzmq's I/O thread blocks for good
 * delivering it to a monitor whose reading end is already closed. */
static void close_monitored(void *dealer, void *monitor)
{
    if (dealer)
        zmq_socket_monitor(dealer, NULL, 0);
    if (dealer)
        zmq_close(dealer);
    if (monitor)
        zmq_close(monitor);
}

/* As log_limited, saying how many lines were left out since the last. */
static void log_counted(ac_node *node, int64_t *last_ns, uint64_t *unlogged, const char *fmt, ...)
    AC_PRINTF(4, 5);
static void log_counted(ac_node *node, int64_t *last_ns, uint64_t *unlogged, const char *fmt, ...)
{
    int64_t t = now_ns();
    if (*last_ns && t - *last_ns < 1000000000ll) {
        (*unlogged)++;
        return;
    }
    *last_ns = t;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (*unlogged)
        ac_system_log(node->system, AC_LOG_WARN, "node %s: %s (and %" PRIu64 " more like it "
                      "since the last such line)", node->address, line, *unlogged);
    else
        ac_system_log(node->system, AC_LOG_WARN, "node %s: %s", node->address, line);
    *unlogged = 0;
}

static void named_dial_done(ac_node *node, ac__peer *p);

static void close_dealer(ac_node *node, ac__peer *p)
{
    if (!p->dealer)
        return;
    named_dial_done(node, p);
    close_monitored(p->dealer, p->monitor);
    p->dealer = p->monitor = NULL;
    size_t i = p->conn_index; /* out of the connections, the last one in its place */
    node->conns[i] = node->conns[--node->conn_count];
    node->conns[i]->conn_index = i;
    atomic_store_explicit(&node->m.connections, node->conn_count, memory_order_relaxed);
}

static void backlog_flush(ac_node *node, ac__peer *p);
static void forget_last(ac_node *node, const ac__peer *peer);

/* The first half of losing a peer, under the lock: DOWN, out of the table.
 * False when it was DOWN already (or is this node). */
static bool peer_mark_down_locked(ac_node *node, ac__peer *peer, const char *why)
{
    if (atomic_load_explicit(&peer->state, memory_order_relaxed) == AC__PEER_DOWN ||
        peer == node->self)
        return false;
    /* Release: a sender that sees DOWN sees what came before it. */
    atomic_store_explicit(&peer->state, AC__PEER_DOWN, memory_order_release);
    ac__ptab_remove(&node->peers, peer);
    peer->down_why = ac__strdup(why);
    return true;
}

static void peer_down_finish(ac_node *node, ac__peer *peer, const char *why);

/* Lose `peer` for good (transport thread). */
static void peer_down(ac_node *node, ac__peer *peer, const char *why)
{
    pthread_mutex_lock(&node->lock);
    bool marked = peer_mark_down_locked(node, peer, why);
    pthread_mutex_unlock(&node->lock);
    if (marked)
        peer_down_finish(node, peer, why);
}

/* Peers evicted from the table by another thread, DOWN already: the
 * transport thread finishes losing them. */
static void finish_evicted(ac_node *node)
{
    if (!atomic_load_explicit(&node->evicted, memory_order_relaxed))
        return;
    ac__peer *p = atomic_exchange_explicit(&node->evicted, NULL, memory_order_acquire);
    while (p) {
        ac__peer *next = p->evict_next;
        peer_down_finish(node, p, p->down_why ? p->down_why : "it was evicted from the peer table");
        p = next;
    }
}

/* The second half (transport thread), after peer_mark_down_locked. */
static void peer_down_finish(ac_node *node, ac__peer *peer, const char *why)
{
    bool said_hello = peer->incarnation != 0; /* written before UP; DOWN now */
    close_dealer(node, peer);
    backlog_flush(node, peer); /* DOWN: drops them */
    forget_last(node, peer);
    COUNT(node, node_down, c_nodes_down, 1);
    /* A leave, ours or theirs, is news; anything else a warning. An
     * address that never said hello may be anyone's (a stranger can name
     * thousands): those are logged a line a second at most, with a count. */
    bool graceful = strcmp(why, "this node stopped") == 0 || strcmp(why, "it left") == 0;
    if (said_hello || graceful)
        ac_system_log(node->system, graceful ? AC_LOG_INFO : AC_LOG_WARN,
                      "node %s: lost node actorc://%s@%s (incarnation %016" PRIx64 "): %s",
                      node->address, peer->system ? peer->system : "", peer->address,
                      peer->incarnation, why);
    else
        log_counted(node, &node->last_loss_log, &node->losses_unlogged,
                    "lost node %s, which never said hello: %s", peer->address, why);
    ac_error *err = ac__node_down_error(peer, why);
    ac__corr_fail_peer(node, peer, err); /* counts them */
    ac_error_release(err);
    ac__rref_peer_lost(node, peer);
    ac__node_hook_down(node, peer, why);
    ac__peer_release(peer); /* the table's */
}

/* ---- the transport thread: sockets -------------------------------------- */

static void set_int(void *s, int opt, int v) { zmq_setsockopt(s, opt, &v, sizeof v); }

/* Room for one more connection: at max_connections, close the oldest one
 * not yet made, or still waiting for its peer's hello (that peer is lost:
 * what it had was never answered). False when every one is made and has
 * said hello. */
static bool conn_room(ac_node *node)
{
    if (node->conn_count < node->options.max_connections)
        return true;
    ac__peer *victim = NULL;
    for (size_t i = 0; i < node->conn_count; i++) {
        ac__peer *q = node->conns[i];
        if ((!q->dealer_connected ||
             atomic_load_explicit(&q->state, memory_order_relaxed) == AC__PEER_CONNECTING) &&
            (!victim || q->connect_deadline_ns < victim->connect_deadline_ns))
            victim = q;
    }
    if (!victim)
        return false;
    ac__peer_retain(victim);
    atomic_fetch_add_explicit(&node->m.connections_evicted, 1, memory_order_relaxed);
    char why[128];
    snprintf(why, sizeof why, "its connection was closed to make room (%zu open, max_connections)",
             node->options.max_connections);
    peer_down(node, victim, why);
    ac__peer_release(victim);
    return true;
}

/* Dials to addresses that only a frame named (a sender another node gave)
 * and that never said hello: at most named_dials_per_s a second (a token
 * bucket of one second's worth). Other dials are this node's own wish, or
 * a peer's that said hello, and are not counted. Transport thread. */
static bool dial_allowed(ac_node *node, ac__peer *p)
{
    pthread_mutex_lock(&node->lock);
    bool named = p->named && p->incarnation == 0;
    pthread_mutex_unlock(&node->lock);
    if (!named)
        return true;
    size_t at_once = node->options.max_connections / 8 < 8 ? 8 : node->options.max_connections / 8;
    if (node->named_dials_open >= at_once)
        return false;
    int64_t t = now_ns();
    double rate = (double)node->options.named_dials_per_s;
    node->dial_tokens += (double)(t - node->dial_refill_ns) * rate / 1e9;
    node->dial_refill_ns = t;
    if (node->dial_tokens > rate)
        node->dial_tokens = rate;
    if (node->dial_tokens < 1.0)
        return false;
    node->dial_tokens -= 1.0;
    p->named_dial = true; /* counted in named_dials_open once its DEALER is open */
    return true;
}

/* A named dial ends: its connection closed, or its peer said hello. */
static void named_dial_done(ac_node *node, ac__peer *p)
{
    if (p->named_dial && p->dealer) {
        p->named_dial = false;
        node->named_dials_open--;
    }
}

static const char *dial_refusal(ac_node *node)
{
    atomic_fetch_add_explicit(&node->m.dials_refused, 1, memory_order_relaxed);
    return "not dialled: only another node's frame named it, and named_dials_per_s such "
           "addresses were dialled in the last second (or max_connections / 8 are dialling)";
}

/* Dial p: a DEALER connecting to its address, saying hello. NULL, or why
 * it cannot be done. */
static const char *open_dealer(ac_node *node, ac__peer *p)
{
    char endpoint[300], mon[64];
    if (!conn_room(node)) {
        atomic_fetch_add_explicit(&node->m.connections_refused, 1, memory_order_relaxed);
        return "no connection can be opened to it: max_connections are open, each to a peer "
               "that said hello";
    }
    void *d = zmq_socket(node->zctx, ZMQ_DEALER);
    if (!d)
        return "cannot open a connection to it (no socket)";
    set_int(d, ZMQ_LINGER, 0);
    set_int(d, ZMQ_SNDHWM, (int)(node->options.max_queue > INT32_MAX ? INT32_MAX : node->options.max_queue));
    set_int(d, ZMQ_HEARTBEAT_IVL, node->options.heartbeat_ivl_ms);
    set_int(d, ZMQ_HEARTBEAT_TIMEOUT, node->options.heartbeat_timeout_ms);
    set_int(d, ZMQ_HEARTBEAT_TTL, node->options.heartbeat_timeout_ms);
    set_int(d, ZMQ_RECONNECT_IVL, -1); /* a lost connection is a lost peer */
    int64_t maxmsg = (int64_t)node->options.max_frame;
    zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(d, ZMQ_ROUTING_ID, &node->incarnation, sizeof node->incarnation);
    if (node->curve) {
        zmq_setsockopt(d, ZMQ_CURVE_SERVERKEY, node->curve_server_public, 41);
        zmq_setsockopt(d, ZMQ_CURVE_PUBLICKEY, node->curve_public, 41);
        zmq_setsockopt(d, ZMQ_CURVE_SECRETKEY, node->curve_secret, 41);
    }
    /* A name of its own per DEALER: a peer's next one (after a refused
     * connection) must not meet the last one's endpoint still bound. */
    static atomic_uint_fast64_t dealers;
    uint64_t seq = atomic_fetch_add_explicit(&dealers, 1, memory_order_relaxed);
    snprintf(mon, sizeof mon, "inproc://ac-monitor-%016" PRIx64 "-%" PRIu64 "-%" PRIu64,
             node->incarnation, p->id, seq);
    if (zmq_socket_monitor(d, mon,
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
        zmq_close(d);
        return "cannot open a connection to it (no monitor)";
    }
    void *m = zmq_socket(node->zctx, ZMQ_PAIR);
    if (!m || zmq_connect(m, mon) != 0) {
        close_monitored(d, m);
        return "cannot open a connection to it (no monitor)";
    }
    snprintf(endpoint, sizeof endpoint, "tcp://%s", p->address);
    if (zmq_connect(d, endpoint) != 0) {
        close_monitored(d, m);
        return "cannot open a connection to it (not an address ZeroMQ can dial)";
    }
    p->dealer = d;
    p->monitor = m;
    if (p->named_dial)
        node->named_dials_open++;
    p->conn_index = node->conn_count;
    node->conns[node->conn_count++] = p;
    atomic_store_explicit(&node->m.connections, node->conn_count, memory_order_relaxed);
    p->dealer_connected = false;
    pthread_mutex_lock(&node->lock);
    p->refused = false;
    if (!p->dialled || atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_CONNECTING)
        p->connect_deadline_ns = now_ns() + (int64_t)node->options.connect_timeout_ms * 1000000ll;
    p->dialled = true;
    pthread_mutex_unlock(&node->lock);
    /* Hello first, naming the peer's incarnation as this node knows it
     * (0: not yet, as on a first or a new connection). */
    ac__wire_env hello = {.kind = AC__WIRE_HELLO, .target_inc = p->incarnation};
    const ac__node_hooks *hooks = atomic_load_explicit(&node->hooks, memory_order_acquire);
    if (hooks) { /* what the cluster layer says of this node */
        hello.type_name = span_of(hooks->hello_type);
        hello.body = (ac__wire_span){hooks->hello_body, hooks->hello_len};
    }
    hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR,
                                     .system = span_of(node->system_name),
                                     .address = span_of(node->address),
                                     .incarnation = node->incarnation};
    uint8_t buf[4096]; /* room for the largest card a cluster sends */
    size_t n = ac__wire_encode(&hello, buf, sizeof buf);
    if (n <= sizeof buf && zmq_send(d, buf, n, ZMQ_DONTWAIT) == (int)n)
        p->hello_sent = true;
    return NULL;
}

/* Add to a count only the transport thread writes (others read it): a
 * plain load and store, no locked read-modify-write per frame. */
static void own_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Count what left for `p`: `frames` frames of `bytes` bytes in all. */
static void count_out(ac_node *node, ac__peer *p, size_t frames, size_t bytes)
{
    own_add(&node->m.frames_out, frames);
    own_add(&node->m.bytes_out, bytes);
    /* Series only for nodes that said hello: an address a stranger named
     * must not leave a series behind for good. */
    if (atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_UP) {
        p->early_frames += frames; /* added to its series once it has one */
        p->early_bytes += bytes;
        return;
    }
    metrics_peer(node, p);
    ac_counter_add(p->m_frames_out, frames);
    ac_counter_add(p->m_bytes_out, bytes);
}

static void out_done(ac__out *o)
{
    atomic_fetch_sub_explicit(&o->peer->queued, 1, memory_order_relaxed);
    ac__peer_release(o->peer);
    out_free(o);
}

static void backlog_append(ac__peer *p, ac__out *o)
{
    atomic_store_explicit(&o->next, NULL, memory_order_relaxed);
    if (p->backlog_tail)
        atomic_store_explicit(&p->backlog_tail->next, o, memory_order_relaxed);
    else
        p->backlog_head = o;
    p->backlog_tail = o;
}

/* Drop the first n frames of peer's backlog (sent, or lost): their count
 * in `queued` and their references to the peer go in one step each. The
 * caller holds a reference of its own. */
static void backlog_pop(ac__peer *p, size_t n)
{
    unsigned k = 0;
    while (k < n && p->backlog_head) {
        ac__out *o = p->backlog_head;
        p->backlog_head = atomic_load_explicit(&o->next, memory_order_relaxed);
        if (!p->backlog_head)
            p->backlog_tail = NULL;
        out_free(o);
        k++;
    }
    if (k) {
        atomic_fetch_sub_explicit(&p->queued, k, memory_order_relaxed);
        peer_release_n(p, k);
    }
}

/* Hand the backlog's first frames to peer's DEALER as one message: as
 * many as fit in AC__WIRE_BATCH_MAX bytes (a bigger frame alone). True
 * when it took them, or they are dropped (the peer is lost, or ZeroMQ
 * refused them for good); false when the DEALER is full. */
static bool send_batch(ac_node *node, ac__peer *p)
{
    if (!p->dealer) {
        pthread_mutex_lock(&node->lock);
        bool waits = p->refused; /* for its hello, or its deadline */
        pthread_mutex_unlock(&node->lock);
        if (waits)
            return false;
        const char *why = dial_allowed(node, p) ? open_dealer(node, p) : dial_refusal(node);
        if (why) {
            peer_down(node, p, why); /* drops the backlog */
            return true;
        }
    }
    ac__out *first = p->backlog_head;
    size_t n = 1, bytes = first->len;
    for (ac__out *o = atomic_load_explicit(&first->next, memory_order_relaxed); o;
         o = atomic_load_explicit(&o->next, memory_order_relaxed)) {
        if (bytes + o->len > AC__WIRE_BATCH_MAX)
            break;
        bytes += o->len;
        n++;
    }
    int rc;
    if (n == 1) {
        rc = zmq_send(p->dealer, first->buf, first->len, ZMQ_DONTWAIT);
    } else {
        zmq_msg_t m;
        if (zmq_msg_init_size(&m, bytes) != 0)
            return false; /* out of memory: try again later */
        uint8_t *at = zmq_msg_data(&m);
        ac__out *o = first;
        for (size_t k = 0; k < n; k++) {
            memcpy(at, o->buf, o->len);
            at += o->len;
            o = atomic_load_explicit(&o->next, memory_order_relaxed);
        }
        rc = zmq_msg_send(&m, p->dealer, ZMQ_DONTWAIT);
        if (rc < 0)
            zmq_msg_close(&m);
    }
    if (rc < 0 && zmq_errno() == EAGAIN)
        return false;
    if (rc >= 0)
        count_out(node, p, n, bytes);
    backlog_pop(p, n);
    return true;
}

/* Send what waits in peer's backlog, as far as its DEALER takes it (all
 * of it dropped when the peer is lost). */
static void backlog_flush(ac_node *node, ac__peer *p)
{
    while (p->backlog_head) {
        if (atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_DOWN) {
            backlog_pop(p, SIZE_MAX);
            return;
        }
        if (!send_batch(node, p))
            return;
    }
}

static void handle_frame(ac_node *node, ac__peer *from, const uint8_t *buf, size_t len,
                         const void *routing_id, size_t id_len);

/* Frames taken from the queue in one go, at most; peers they are for. */
#define OUT_BUDGET 4096
#define OUT_PEERS 32

/* Send what is queued: each peer's frames join its backlog, in order,
 * and then leave in as few messages as fit. Returns how many frames it
 * took. */
static size_t drain_out(ac_node *node)
{
    ac__peer *touched[OUT_PEERS];
    size_t n = 0, nt = 0;
    ac__out *o;
    while (n < OUT_BUDGET && (o = out_pop(node)) != NULL) {
        ac__peer *p = o->peer;
        n++;
        if (p == node->self) {
            handle_frame(node, p, o->buf, o->len, NULL, 0);
            out_done(o);
            continue;
        }
        if (atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_DOWN) {
            out_done(o);
            continue;
        }
        backlog_append(p, o);
        if (p->flush_mark)
            continue;
        if (nt == OUT_PEERS) { /* many peers at once: send what is gathered */
            for (size_t i = 0; i < nt; i++) {
                touched[i]->flush_mark = false;
                backlog_flush(node, touched[i]);
                ac__peer_release(touched[i]);
            }
            nt = 0;
        }
        p->flush_mark = true;
        touched[nt++] = ac__peer_retain(p);
    }
    for (size_t i = 0; i < nt; i++) {
        touched[i]->flush_mark = false;
        backlog_flush(node, touched[i]);
        ac__peer_release(touched[i]);
    }
    return n;
}

/* ---- the transport thread: frames that arrive --------------------------- */

/* Answer an ask (from `p`, id corr) that will get no reply: why. */
static void answer_undeliverable(ac_node *node, ac__peer *p, uint64_t corr, const char *why)
{
    ac__wire_env u = {.kind = AC__WIRE_UNDELIVERABLE, .corr = corr};
    u.body = span_of(why);
    u.sender.kind = AC__WIRE_SENDER_NONE;
    (void)ac__node_send(node, p, &u);
}

/* The ref a frame's sender stands for (the caller's reference), or NULL. */
static ac_ref *sender_ref(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    const ac__wire_sender *s = &env->sender;
    switch (s->kind) {
    case AC__WIRE_SENDER_LOCAL: {
        ac__rref *r = ac__rref_get(node, from, (const char *)s->path.ptr, s->path.len);
        return r ? &r->ref : NULL;
    }
    case AC__WIRE_SENDER_ACTOR:
    case AC__WIRE_SENDER_REPLY: {
        ac__peer *p = peer_at(node, (const char *)s->address.ptr, s->address.len,
                              (const char *)s->system.ptr, s->system.len, true);
        if (!p)
            return NULL;
        ac_ref *ref = NULL;
        if (s->kind == AC__WIRE_SENDER_ACTOR) {
            if (p == node->self) {
                ref = ac__ext_lookup_top(node->system, (const char *)s->path.ptr, s->path.len);
            }
            if (!ref) {
                ac__rref *r = ac__rref_get(node, p, (const char *)s->path.ptr, s->path.len);
                ref = r ? &r->ref : NULL;
            }
        } else {
            ref = ac__rreply_new(node, p, s->corr);
        }
        ac__peer_release(p);
        return ref;
    }
    default:
        return NULL;
    }
}

/* ---- the transport's memory of the last frame --------------------------- */

static bool span_eq(ac__wire_span s, const char *text, size_t len)
{
    return s.len == len && memcmp(s.ptr, text, len) == 0;
}

static const ac_msg_type *type_cached(ac_node *node, ac__wire_span name)
{
    const ac_msg_type *t = node->last.type;
    if (t && span_eq(name, t->name, strlen(t->name)))
        return t;
    t = type_named(node, name.ptr, name.len);
    if (t)
        node->last.type = t; /* types are never unregistered */
    return t;
}

/* A local sender (an actor on `from`): the last one again, borrowed from
 * the memory (*owned false), or looked up (retained, *owned true) and
 * remembered. Borrowing spares two atomic updates per frame of a line
 * the receiving actor's thread also writes. */
static ac_ref *sender_cached(ac_node *node, ac__peer *from, ac__wire_span path, bool *owned)
{
    if (node->last.sender && node->last.sender_peer == from &&
        span_eq(path, node->last.sender_path, node->last.sender_len)) {
        *owned = false;
        return node->last.sender;
    }
    *owned = true;
    ac__rref *r = ac__rref_get(node, from, (const char *)path.ptr, path.len);
    if (r && path.len < sizeof node->last.sender_path) {
        ac_ref_release(node->last.sender);
        node->last.sender = ac_ref_retain(&r->ref);
        node->last.sender_peer = from;
        memcpy(node->last.sender_path, path.ptr, path.len);
        node->last.sender_len = path.len;
    }
    return r ? &r->ref : NULL;
}

/* Deliver to the local actor at path: the last top-level target again
 * while it lives, else by path (remembering a top-level one). */
static void deliver_cached(ac_node *node, ac__wire_span path, ac_msg *msg, ac_ref *sender)
{
    if (node->last.target && span_eq(path, node->last.target_path, node->last.target_len) &&
        !ac__ext_ref_is_dead(node->last.target)) {
        ac_tell(node->last.target, msg, sender);
        return;
    }
    ac_ref *top = path.len < sizeof node->last.target_path
                      ? ac__ext_lookup_top(node->system, (const char *)path.ptr, path.len)
                      : NULL;
    if (top) {
        ac_ref_release(node->last.target);
        node->last.target = top; /* the lookup's reference */
        memcpy(node->last.target_path, path.ptr, path.len);
        node->last.target_len = path.len;
        ac_tell(top, msg, sender);
        return;
    }
    (void)ac__ext_deliver_path(node->system, (const char *)path.ptr, path.len, msg, sender);
}

/* Forget what the memory holds of `peer` (NULL: everything). */
static void forget_last(ac_node *node, const ac__peer *peer)
{
    if (!peer || node->last.from == peer) {
        ac__peer_release(node->last.from);
        node->last.from = NULL;
        node->last.id = 0;
    }
    if (!peer || node->last.sender_peer == peer) {
        ac_ref_release(node->last.sender);
        node->last.sender = NULL;
        node->last.sender_peer = NULL;
    }
    if (!peer) {
        ac_ref_release(node->last.target);
        node->last.target = NULL;
    }
}

/* A message frame (TELL, ASK) for a local actor. */
static void handle_message(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    char why[320];
    const ac_msg_type *type = type_cached(node, env->type_name);
    ac_msg *msg = NULL;
    const char *err = NULL;
    if (!type) {
        snprintf(why, sizeof why, "the message type \"%.*s\" is not known on node %s",
                 (int)(env->type_name.len > 200 ? 200 : env->type_name.len),
                 (const char *)env->type_name.ptr, node->address);
    } else if (!(msg = ac__wire_decode_payload(type, env->body.ptr, env->body.len,
                                               env->payload_size, &node->limits, &err))) {
        snprintf(why, sizeof why, "a %s could not be decoded on node %s: %s", type->name,
                 node->address, err ? err : "bad body");
        COUNT(node, decode_errors, c_decode_errors, 1);
    }
    bool owned = true;
    ac_ref *sender = env->kind == AC__WIRE_ASK ? ac__rreply_new(node, from, env->corr)
                     : env->sender.kind == AC__WIRE_SENDER_LOCAL
                         ? sender_cached(node, from, env->sender.path, &owned)
                         : sender_ref(node, from, env);
    if (!msg) {
        /* The sender's reply target hears why; a plain tell is logged. */
        if (sender && sender->ops->undeliverable)
            sender->ops->undeliverable(sender, NULL, why);
        else
            log_limited(node, &node->last_decode_log, "dropped a message from %s: %s", from->address, why);
    } else {
        deliver_cached(node, env->target_path, msg, sender);
    }
    if (owned)
        ac_ref_release(sender);
}

static void handle_reply(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    ac_ref *reply = ac__corr_take(node, env->corr);
    if (!reply)
        return; /* late or duplicate: silently, as locally */
    const ac_msg_type *type = type_named(node, env->type_name.ptr, env->type_name.len);
    const char *err = NULL;
    ac_msg *msg = type ? ac__wire_decode_payload(type, env->body.ptr, env->body.len,
                                                 env->payload_size, &node->limits, &err)
                       : NULL;
    if (!msg) {
        char why[320];
        snprintf(why, sizeof why, "its reply (a %.*s) %s",
                 (int)(env->type_name.len > 200 ? 200 : env->type_name.len),
                 (const char *)env->type_name.ptr,
                 type ? "could not be decoded" : "is of a type not known here");
        if (type)
            COUNT(node, decode_errors, c_decode_errors, 1);
        reply->ops->undeliverable(reply, NULL, why);
        ac_ref_release(reply);
        return;
    }
    ac_ref *sender = sender_ref(node, from, env);
    ac_tell(reply, msg, sender);
    ac_ref_release(sender);
    ac_ref_release(reply);
}

static void handle_undeliverable(ac_node *node, const ac__wire_env *env)
{
    ac_ref *reply = ac__corr_take(node, env->corr);
    if (!reply)
        return;
    char why[320];
    snprintf(why, sizeof why, "%.*s", (int)(env->body.len > 300 ? 300 : env->body.len),
             (const char *)env->body.ptr);
    reply->ops->undeliverable(reply, NULL, (env->flags & 1u) ? NULL : why);
    ac_ref_release(reply);
}

/* Watches other nodes hold on our actors: (target, watcher) pairs on the
 * peer, so that its loss ends them. */
static void handle_watch(ac_node *node, ac__peer *from, const ac__wire_env *env, bool on)
{
    ac_ref *target = ac__ext_lookup_top(node->system, (const char *)env->target_path.ptr,
                                        env->target_path.len);
    ac__rref *w = ac__rref_get(node, from, WATCH_PATH, strlen(WATCH_PATH));
    if (!w) {
        ac_ref_release(target);
        return;
    }
    if (!target) {
        if (on) { /* nothing there: Terminated at once, as for a stopped actor */
            ac__wire_env t = {.kind = AC__WIRE_TERMINATED, .target_path = span_of(WATCH_PATH)};
            t.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_LOCAL, .path = env->target_path};
            (void)ac__node_send(node, from, &t);
        }
        ac_ref_release(&w->ref);
        return;
    }
    bool changed = false;
    pthread_mutex_lock(&node->lock);
    size_t i;
    for (i = 0; i < from->inbound_count; i++)
        if (from->inbound_watch[2 * i] == target)
            break;
    if (on && i == from->inbound_count) {
        if (from->inbound_count == from->inbound_cap) {
            size_t cap = from->inbound_cap ? from->inbound_cap * 2 : 8;
            ac_ref **t = ac__realloc(from->inbound_watch, 2 * cap * sizeof *t);
            if (!t)
                ac__oom_abort("a remote watch");
            from->inbound_watch = t;
            from->inbound_cap = cap;
        }
        from->inbound_watch[2 * i] = ac_ref_retain(target);
        from->inbound_watch[2 * i + 1] = ac_ref_retain(&w->ref);
        from->inbound_count++;
        changed = true;
    } else if (!on && i < from->inbound_count) {
        ac_ref_release(from->inbound_watch[2 * i]);
        ac_ref_release(from->inbound_watch[2 * i + 1]);
        from->inbound_count--;
        from->inbound_watch[2 * i] = from->inbound_watch[2 * from->inbound_count];
        from->inbound_watch[2 * i + 1] = from->inbound_watch[2 * from->inbound_count + 1];
        changed = true;
    }
    pthread_mutex_unlock(&node->lock);
    if (changed && on)
        ac__ext_watch_as(target, &w->ref);
    else if (changed)
        ac__ext_unwatch_as(target, &w->ref);
    ac_ref_release(target);
    ac_ref_release(&w->ref);
}

static ac__peer *peer_by_routing_id(ac_node *node, const void *id, size_t len)
{
    uint64_t inc;
    if (len != sizeof inc)
        return NULL;
    memcpy(&inc, id, sizeof inc);
    pthread_mutex_lock(&node->lock);
    ac__peer *found = ac__ptab_by_inc(&node->peers, inc, node->self);
    if (found)
        ac__peer_retain(found);
    pthread_mutex_unlock(&node->lock);
    return found;
}

/* This node's own hello came back: a DEALER it opened for the peer of
 * incarnation `inc` reached this node, under an address that is not
 * literally its own ("localhost:<port>" for "127.0.0.1:<port>"). That peer
 * is this node: its frames would come back here and be dropped, asks
 * wait out their timeouts, and it would stay up for good. Lost. (A peer
 * not up yet names no incarnation and times out on its own.) */
static void lose_self_dialled(ac_node *node, uint64_t inc)
{
    pthread_mutex_lock(&node->lock);
    ac__peer *found = ac__ptab_by_inc(&node->peers, inc, node->self);
    if (found)
        ac__peer_retain(found);
    pthread_mutex_unlock(&node->lock);
    if (!found)
        return;
    peer_down(node, found, "its address is this node's own");
    ac__peer_release(found);
}

static void handle_hello(ac_node *node, const ac__wire_env *env, const void *id, size_t id_len)
{
    const ac__wire_sender *s = &env->sender;
    uint64_t inc;
    if (s->kind != AC__WIRE_SENDER_ACTOR || id_len != sizeof inc || s->address.len == 0 ||
        s->address.len > 255 || s->system.len > 64) {
        COUNT(node, decode_errors, c_decode_errors, 1);
        return;
    }
    memcpy(&inc, id, sizeof inc);
    if (inc != s->incarnation || inc == node->incarnation) {
        COUNT(node, decode_errors, c_decode_errors, 1);
        if (inc == node->incarnation && s->incarnation == inc)
            lose_self_dialled(node, env->target_inc);
        return;
    }
    ac__peer *old = NULL, *p;
    pthread_mutex_lock(&node->lock);
    p = peer_by_address(node, (const char *)s->address.ptr, s->address.len);
    ac__peer *same = ac__ptab_by_inc(&node->peers, inc, node->self);
    if (p == node->self || (same && same != p)) {
        /* Someone claims our address, or an incarnation Up at one address
         * names another: one connection must not make this node dial
         * address after address. */
        pthread_mutex_unlock(&node->lock);
        COUNT(node, decode_errors, c_decode_errors, 1);
        log_limited(node, &node->last_decode_log, "refused a hello naming %s: %s",
                    p == node->self ? "this node's own address" : "a second address",
                    p == node->self ? "someone claims it" : "its incarnation is known elsewhere");
        return;
    }
    const char *old_why = NULL;
    if (p && p->incarnation != 0 && p->incarnation != inc) {
        old = ac__peer_retain(p); /* a new incarnation at the address: the old one is gone */
        old_why = "a new incarnation of it said hello";
        p = NULL;
    } else if (p && p->incarnation == inc && env->target_inc == 0 &&
               atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP) {
        /* A hello that does not know this node's incarnation, from one
         * we have Up: it lost this node and connects afresh. What we had
         * with it ended there; it ends here too, and this is a new start. */
        old = ac__peer_retain(p);
        old_why = "it lost this node and connected again";
        p = NULL;
    }
    bool fresh = false;
    if (!p) {
        /* Made now, so that the old one's loss (below) cannot be looked up
         * by a new send first. */
        pthread_mutex_unlock(&node->lock);
        if (old) {
            peer_down(node, old, old_why);
            ac__peer_release(old);
        }
        pthread_mutex_lock(&node->lock);
        p = peer_by_address(node, (const char *)s->address.ptr, s->address.len);
        if (!p) {
            p = peer_new(node, (const char *)s->address.ptr, s->address.len,
                         (const char *)s->system.ptr, s->system.len, AC__PEER_CONNECTING);
            fresh = true;
        }
        if (!p) {
            pthread_mutex_unlock(&node->lock);
            log_counted(node, &node->last_refuse_log, &node->refusals_unlogged,
                        "refused the hello of %.*s: %s", (int)s->address.len,
                        (const char *)s->address.ptr, ac_last_error());
            return;
        }
    }
    if (!p->system && s->system.len) {
        p->system = ac__malloc(s->system.len + 1);
        if (p->system) {
            memcpy(p->system, s->system.ptr, s->system.len);
            p->system[s->system.len] = '\0';
        }
    }
    if (p->incarnation != inc) {
        p->incarnation = inc; /* written once: senders read it unlocked once UP */
        ac__ptab_index_inc(&node->peers, p);
    }
    p->refused = false; /* it listens now: dial again */
    /* Release: senders that see UP see the incarnation. */
    atomic_store_explicit(&p->state, AC__PEER_UP, memory_order_release);
    pthread_mutex_unlock(&node->lock);
    (void)fresh;
    ac__node_hook_up(node, p, env);
    named_dial_done(node, p); /* it answered: a peer like any other now */
    const char *why = p->dealer ? NULL : open_dealer(node, p);
    if (why)
        peer_down(node, p, why);
}

/* One decoded frame. */
static void handle_env(ac_node *node, ac__peer *from, const ac__wire_env *envp,
                       const void *routing_id, size_t id_len)
{
    ac__wire_env env = *envp;
    if (env.kind == AC__WIRE_HELLO) {
        if (!from || from != node->self)
            handle_hello(node, &env, routing_id, id_len);
        return;
    }
    if (!from) {
        COUNT(node, dropped_stale, c_dropped_stale, 1);
        log_limited(node, &node->last_stale_log, "dropped a frame from a node that has not said hello");
        return;
    }
    if (env.target_inc != 0 && env.target_inc != node->incarnation) {
        COUNT(node, dropped_stale, c_dropped_stale, 1);
        if (env.kind == AC__WIRE_ASK)
            answer_undeliverable(node, from, env.corr, "it was meant for an earlier incarnation");
        return;
    }
    if (env.kind == AC__WIRE_TELL && ac__node_hook_system_tell(node, from, &env))
        return;
    switch (env.kind) {
    case AC__WIRE_TELL:
    case AC__WIRE_ASK:
        handle_message(node, from, &env);
        break;
    case AC__WIRE_REPLY:
        handle_reply(node, from, &env);
        break;
    case AC__WIRE_UNDELIVERABLE:
        handle_undeliverable(node, &env);
        break;
    case AC__WIRE_WATCH:
        handle_watch(node, from, &env, true);
        break;
    case AC__WIRE_UNWATCH:
        handle_watch(node, from, &env, false);
        break;
    case AC__WIRE_TERMINATED:
        if (env.sender.kind == AC__WIRE_SENDER_LOCAL)
            ac__rref_terminated(node, from, (const char *)env.sender.path.ptr, env.sender.path.len);
        break;
    case AC__WIRE_LEAVE:
        peer_down(node, from, "it left");
        break;
    default:
        break;
    }
}

/* Count a frame that came (before it is handled: whoever it reaches may
 * read the counts). */
static void count_in(ac_node *node, ac__peer *from, size_t bytes)
{
    own_add(&node->m.frames_in, 1);
    own_add(&node->m.bytes_in, bytes);
    if (from && from != node->self) {
        metrics_peer(node, from);
        ac_counter_inc(from->m_frames_in);
        ac_counter_add(from->m_bytes_in, bytes);
    }
}

/* A message of one or more frames (`from` NULL: of a node that has not
 * said hello, or none), each counted as it comes; the first that cannot
 * be decoded ends it. */
static void handle_frames(ac_node *node, ac__peer *from, const uint8_t *buf, size_t len,
                          const void *routing_id, size_t id_len, bool wire)
{
    size_t at = 0;
    ac__peer *held = NULL; /* a peer found here (the caller holds `from`) */
    do {
        ac__wire_env env;
        const char *why = NULL;
        size_t used = 0;
        if (ac__wire_decode_next(buf + at, len - at, &node->limits, &env, &used, &why) != AC_OK) {
            if (wire)
                count_in(node, from, len - at);
            COUNT(node, decode_errors, c_decode_errors, 1);
            log_limited(node, &node->last_decode_log,
                        "dropped a malformed frame of %zu bytes%s%s: %s", len - at,
                        from ? " from " : "", from ? from->address : "",
                        why ? why : "malformed");
            break;
        }
        at += used;
        if (wire)
            count_in(node, from, used);
        handle_env(node, from, &env, routing_id, id_len);
        if (from && atomic_load_explicit(&from->state, memory_order_relaxed) != AC__PEER_UP)
            from = NULL; /* it left or was lost: the rest is stale */
        else if (!from && !held && env.kind == AC__WIRE_HELLO && wire)
            from = held = peer_by_routing_id(node, routing_id, id_len); /* it said hello now */
    } while (at < len);
    ac__peer_release(held);
}

/* A frame to this node itself (not counted: it crossed no wire). */
static void handle_frame(ac_node *node, ac__peer *from, const uint8_t *buf, size_t len,
                         const void *routing_id, size_t id_len)
{
    handle_frames(node, from, buf, len, routing_id, id_len, false);
}

/* Take what waits on the ROUTER, at most `budget` frames. */
static size_t drain_in(ac_node *node, size_t budget)
{
    size_t n = 0;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (n < budget) {
        if (zmq_msg_recv(&id, node->router, ZMQ_DONTWAIT) < 0)
            break;
        n++; /* a message without a body costs the budget too */
        if (!zmq_msg_more(&id) || zmq_msg_recv(&body, node->router, ZMQ_DONTWAIT) < 0)
            continue;
        /* Nodes send one part per message: one of several is not theirs.
         * Drop it whole, reading each extra part once (a message's parts
         * arrive together, so a failed receive ends it). */
        if (zmq_msg_more(&body)) {
            COUNT(node, decode_errors, c_decode_errors, 1);
            log_limited(node, &node->last_decode_log,
                        "dropped a message of several parts (nodes send one)");
            bool more = true;
            while (more) {
                zmq_msg_t extra;
                zmq_msg_init(&extra);
                more = zmq_msg_recv(&extra, node->router, ZMQ_DONTWAIT) >= 0 &&
                       zmq_msg_more(&extra);
                zmq_msg_close(&extra);
            }
            continue;
        }
        size_t len = zmq_msg_size(&body);
        ac__peer *from = NULL;
        uint64_t rid = 0;
        if (zmq_msg_size(&id) == sizeof rid)
            memcpy(&rid, zmq_msg_data(&id), sizeof rid);
        if (rid && node->last.from && node->last.id == rid &&
            atomic_load_explicit(&node->last.from->state, memory_order_relaxed) == AC__PEER_UP) {
            from = ac__peer_retain(node->last.from);
        } else {
            from = peer_by_routing_id(node, zmq_msg_data(&id), zmq_msg_size(&id));
            if (from && rid) {
                ac__peer_release(node->last.from);
                node->last.from = ac__peer_retain(from);
                node->last.id = rid;
            }
        }
        handle_frames(node, from, zmq_msg_data(&body), len, zmq_msg_data(&id), zmq_msg_size(&id),
                      true);
        ac__peer_release(from);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return n;
}

/* Events of one peer's DEALER. */
static void drain_monitor(ac_node *node, ac__peer *p)
{
    while (p->monitor) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, p->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), sizeof event);
            memcpy(&value, (char *)zmq_msg_data(&ev) + 2, sizeof value);
        }
        bool more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) {
            zmq_msg_init(&addr);
            zmq_msg_recv(&addr, p->monitor, 0);
            zmq_msg_close(&addr);
        }
        switch (event) {
        case ZMQ_EVENT_CONNECTED:
            p->dealer_connected = true;
            break;
        case ZMQ_EVENT_CLOSED: /* before any connection: refused, never retried */
            if (!p->dealer_connected) {
                /* Nothing is listening there (yet): free the connection
                 * now; frames wait for a hello or the connect deadline. A
                 * peer whose hello came meanwhile listens now: dial again. */
                close_dealer(node, p);
                pthread_mutex_lock(&node->lock);
                bool up = atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP;
                p->refused = !up;
                pthread_mutex_unlock(&node->lock);
                const char *why = NULL;
                if (up && p->redialled) /* its hello named an address that refuses us */
                    why = "its address refused this node's connection";
                else if (up)
                    p->redialled = true, why = open_dealer(node, p);
                if (why)
                    peer_down(node, p, why);
                return;
            }
            break;
        case ZMQ_EVENT_DISCONNECTED:
            peer_down(node, p, "its connection dropped (or its heartbeats stopped)");
            return;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
            peer_down(node, p, "it refused this node's key");
            return;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: {
            char why[96];
            snprintf(why, sizeof why, "the handshake with it failed (%s)",
                     event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ? strerror((int)value) : "protocol");
            peer_down(node, p, why);
            return;
        }
        default:
            break;
        }
    }
}

/* ---- the transport thread: CURVE admission (ZAP) ------------------------ */

static bool key_allowed(ac_node *node, const uint8_t *key32)
{
    char z85[41];
    if (!zmq_z85_encode(z85, key32, 32))
        return false;
    if (strcmp(z85, node->curve_public) == 0)
        return true;
    for (size_t i = 0; i < node->allowed_count; i++)
        if (strcmp(z85, node->allowed[i]) == 0)
            return true;
    return false;
}

/* One ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials... answered 200 or 400. */
static void drain_zap(ac_node *node)
{
    for (;;) {
        zmq_msg_t part[8];
        int n = 0;
        bool more = true;
        while (more && n < 8) {
            zmq_msg_init(&part[n]);
            if (zmq_msg_recv(&part[n], node->zap, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&part[n]);
                if (n == 0)
                    return;
                break;
            }
            more = zmq_msg_more(&part[n]);
            n++;
        }
        while (more) { /* too many parts: drain them */
            zmq_msg_t x;
            zmq_msg_init(&x);
            zmq_msg_recv(&x, node->zap, 0);
            more = zmq_msg_more(&x);
            zmq_msg_close(&x);
        }
        bool ok = n >= 7 && zmq_msg_size(&part[5]) == 5 &&
                  memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 && zmq_msg_size(&part[6]) == 32 &&
                  key_allowed(node, zmq_msg_data(&part[6]));
        if (n >= 2) {
            zmq_send(node->zap, "1.0", 3, ZMQ_SNDMORE);
            zmq_send(node->zap, zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), ZMQ_SNDMORE);
            zmq_send(node->zap, ok ? "200" : "400", 3, ZMQ_SNDMORE);
            zmq_send(node->zap, ok ? "OK" : "key not allowed", ok ? 2 : 15, ZMQ_SNDMORE);
            zmq_send(node->zap, "", 0, ZMQ_SNDMORE);
            zmq_send(node->zap, "", 0, 0);
        }
        if (!ok)
            ac_system_log(node->system, AC_LOG_WARN, "node %s: refused a peer whose key is not allowed",
                          node->address);
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
    }
}

/* ---- the transport thread: the loop ------------------------------------ */

#define SWEEP_NS 100000000ll /* 100 ms */

static void trim_heap(void)
{
    ac__alloc_trim(); /* the depot's blocks and this thread's */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* Is p's connect deadline past while it has not said hello, or while its
 * DEALER has not connected? A hello comes on the peer's own connection:
 * an address that refuses ours, or never answers, would leave a peer that
 * said hello up for good, with asks to it waiting out their timeouts.
 * Transport thread. */
static bool peer_late(const ac__peer *p, int64_t t)
{
    return p->dialled && t > p->connect_deadline_ns &&
           (atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING ||
            (p->dealer && !p->dealer_connected));
}

/* Lose a peer whose connection was not made, or which did not say hello,
 * within the connect timeout; a connection made but not yet read of (its
 * monitor's event waiting) first has its say. */
static void lose_late(ac_node *node, ac__peer *p, int64_t t)
{
    if (p->monitor)
        drain_monitor(node, p);
    int state = atomic_load_explicit(&p->state, memory_order_relaxed);
    if (state == AC__PEER_DOWN || !peer_late(p, t))
        return;
    char why[96];
    snprintf(why, sizeof why,
             state == AC__PEER_UP ? "its address took no connection within %d ms"
                                  : "it did not answer within %d ms",
             node->options.connect_timeout_ms);
    peer_down(node, p, why);
}

/* Every 100 ms, over the whole table: forget the entries nothing refers
 * to and that have no connection (addresses named in frames, answered or
 * not), and lose those refused whose deadline passed. The lost are
 * gathered first, so that the walk does not race the table's changes. */
static void sweep(ac_node *node, int64_t t)
{
    enum { BATCH = 64 };
    ac__peer *late[BATCH];
    size_t nlate;
    do {
        nlate = 0;
        pthread_mutex_lock(&node->lock);
        for (ac__peer *p = node->peers.oldest, *newer; p; p = newer) {
            newer = p->newer;
            if (peer_forgettable(node, p))
                peer_forget(node, p);
            else if (p->refused && !p->dealer && t > p->connect_deadline_ns &&
                     atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING &&
                     nlate < BATCH)
                late[nlate++] = ac__peer_retain(p);
        }
        pthread_mutex_unlock(&node->lock);
        for (size_t i = 0; i < nlate; i++) {
            lose_late(node, late[i], t);
            ac__peer_release(late[i]);
        }
    } while (nlate == BATCH);
}

static void housekeeping(ac_node *node)
{
    ac__corr_sweep(node);
    int64_t t = now_ns();
    /* Dialled and not connected, or not answered, in time. The
     * connections are this thread's; a loss takes one out of the array,
     * so look again there. */
    for (size_t i = 0; i < node->conn_count;) {
        ac__peer *p = node->conns[i];
        if (peer_late(p, t)) {
            ac__peer_retain(p);
            lose_late(node, p, t);
            bool kept = i < node->conn_count && node->conns[i] == p;
            ac__peer_release(p);
            if (kept)
                i++; /* its connection was made after all */
        } else {
            i++;
        }
    }
    if (t >= node->next_sweep_ns) {
        sweep(node, t);
        node->next_sweep_ns = t + SWEEP_NS;
        /* Many peers went (a flood's): once the wave has passed, what they
         * took goes back to the system rather than staying with malloc. */
        uint64_t gone = atomic_load_explicit(&node->m.peers_forgotten, memory_order_relaxed) +
                        atomic_load_explicit(&node->m.node_down, memory_order_relaxed);
        if (gone == node->gone_mark && gone - node->trimmed_mark >= 256) {
            node->trimmed_mark = gone;
            pthread_mutex_lock(&node->lock);
            ac__ptab_shrink(&node->peers);
            pthread_mutex_unlock(&node->lock);
            ac__rrefs_shrink(node);
            ac__alloc_request_flush(); /* the workers' cached blocks, at their next park */
            trim_heap();
            node->trim_again_ns = t + 2 * SWEEP_NS;
        } else if (node->trim_again_ns && t >= node->trim_again_ns) {
            node->trim_again_ns = 0; /* what the workers handed over since */
            trim_heap();
        }
        node->gone_mark = gone;
    }
}

/* After frames arrived, how long the transport looks for more work
 * before it sleeps, and of that how long without yielding its core (as
 * the scheduler's idle workers do). What they set off here mostly comes
 * within it (an ask's reply from the actor that got the ask, the next
 * ask of a caller that just got its answer) and is taken without a
 * wake-up: no eventfd write on the sender's side, no return from the
 * poll on the transport's. Not after sends alone: their answers take a
 * round trip, and spinning for them took cores the peers' threads and
 * ZeroMQ's needed. An idle node spins not at all. */
#define SPIN_NS 100000ll
#define SPIN_PURE_NS 5000ll

/* Is there work that needs no sleep: frames queued, a message on the
 * ROUTER? */
static bool work_waits(ac_node *node)
{
    if (node->out_tail != &node->out_stub ||
        atomic_load_explicit(&node->out_head, memory_order_acquire) != &node->out_stub)
        return true;
    int events = 0;
    size_t len = sizeof events;
    return zmq_getsockopt(node->router, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN);
}

/* Look for work until SPIN_NS after frames last came (`last_work_ns`):
 * true when some is there. */
static bool spin_for_work(ac_node *node, int64_t last_work_ns)
{
    for (int64_t t = now_ns(); t - last_work_ns < SPIN_NS; t = now_ns()) {
        if (atomic_load_explicit(&node->stopping, memory_order_acquire) || work_waits(node))
            return true;
        if (t - last_work_ns > SPIN_PURE_NS)
            sched_yield(); /* a thread that has work (a worker, ZeroMQ's) goes first */
    }
    return false;
}

static void *transport_main(void *arg)
{
    ac_node *node = arg;
    ac__thread_name("ac-transport");
    zmq_pollitem_t *items = node->items;
    ac__peer **owners = node->owners;
    int64_t next_house = now_ns() + HOUSEKEEPING_NS;
    int64_t last_work = 0;
    for (;;) {
        finish_evicted(node);
        size_t did = drain_out(node);
        size_t came = drain_in(node, 256);
        did += came;
        if (node->zap)
            drain_zap(node);
        if (atomic_load_explicit(&node->stopping, memory_order_acquire) && did == 0)
            break;
        int64_t t = now_ns();
        if (t >= next_house) {
            housekeeping(node);
            next_house = t + HOUSEKEEPING_NS;
        }
        if (came)
            last_work = t;
        else if (!did && last_work && t < next_house && spin_for_work(node, last_work))
            continue;
        /* Poll: the ROUTER, the wake-up, ZAP and every DEALER's monitor. */
        int n = 0;
        items[n++] = (zmq_pollitem_t){.socket = node->router, .events = ZMQ_POLLIN};
        items[n++] = (zmq_pollitem_t){.fd = node->wake_fd, .events = ZMQ_POLLIN};
        if (node->zap)
            items[n++] = (zmq_pollitem_t){.socket = node->zap, .events = ZMQ_POLLIN};
        int fixed = n;
        for (size_t i = 0; i < node->conn_count; i++) { /* this thread's: no lock */
            ac__peer *p = node->conns[i];
            owners[n] = ac__peer_retain(p);
            items[n++] = (zmq_pollitem_t){.socket = p->monitor, .events = ZMQ_POLLIN};
            if (p->backlog_head) {
                owners[n] = ac__peer_retain(p);
                items[n++] = (zmq_pollitem_t){.socket = p->dealer, .events = ZMQ_POLLOUT};
            }
        }
        long timeout_ms = 0;
        if (did == 0) {
            /* seq_cst: pairs with wake()'s load (see there). */
            atomic_store_explicit(&node->sleeping, true, memory_order_seq_cst);
            bool queued = node->out_tail != &node->out_stub ||
                          atomic_load_explicit(&node->out_head, memory_order_seq_cst) != &node->out_stub;
            timeout_ms = queued ? 0 : (long)((next_house - now_ns()) / 1000000ll) + 1;
            if (timeout_ms < 0)
                timeout_ms = 0;
        }
        zmq_poll(items, n, timeout_ms);
        atomic_store_explicit(&node->sleeping, false, memory_order_relaxed);
        if (items[1].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t r = read(node->wake_fd, &v, sizeof v);
            (void)r;
        }
        for (int i = fixed; i < n; i++) {
            /* A peer lost meanwhile (an eviction) has no sockets left. */
            if ((items[i].revents & ZMQ_POLLIN) && owners[i]->monitor == items[i].socket)
                drain_monitor(node, owners[i]);
            if ((items[i].revents & ZMQ_POLLOUT) && owners[i]->dealer == items[i].socket)
                backlog_flush(node, owners[i]);
            ac__peer_release(owners[i]);
        }
    }
    /* Stopping: tell every peer, then lose them all. */
    finish_evicted(node);
    for (;;) {
        ac__peer *p = NULL;
        pthread_mutex_lock(&node->lock);
        for (ac__peer *q = node->peers.newest; q; q = q->older)
            if (q != node->self) {
                p = ac__peer_retain(q);
                break;
            }
        pthread_mutex_unlock(&node->lock);
        if (!p)
            break;
        if (p->dealer && atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP) {
            ac__wire_env leave = {.kind = AC__WIRE_LEAVE};
            leave.sender.kind = AC__WIRE_SENDER_NONE;
            uint8_t buf[64];
            size_t len = ac__wire_encode(&leave, buf, sizeof buf);
            if (len <= sizeof buf) {
                set_int(p->dealer, ZMQ_LINGER, 100);
                zmq_send(p->dealer, buf, len, ZMQ_DONTWAIT);
            }
        }
        peer_down(node, p, "this node stopped");
        ac__peer_release(p);
    }
    ac__out *o;
    while ((o = out_pop(node)) != NULL) {
        ac__peer_release(o->peer);
        out_free(o);
    }
    forget_last(node, NULL);
    return NULL;
}

/* ---- the API ------------------------------------------------------------ */

static bool valid_z85_key(const char *k)
{
    uint8_t bin[32];
    return k && strlen(k) == 40 && zmq_z85_decode(bin, k) != NULL;
}

/* Split "tcp://host:port": host into host (cap bytes), port text. */
static bool split_tcp(const char *endpoint, char *host, size_t cap, const char **port)
{
    if (strncmp(endpoint, "tcp://", 6) != 0)
        return false;
    const char *h = endpoint + 6;
    const char *colon = strrchr(h, ':');
    if (!colon || colon == h || (size_t)(colon - h) >= cap || !colon[1])
        return false;
    memcpy(host, h, (size_t)(colon - h));
    host[colon - h] = '\0';
    *port = colon + 1;
    return true;
}

static bool loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0;
}

/* 512, or a quarter of what the descriptor limit leaves after 64 (a
 * connection takes three: its TCP socket and two ZeroMQ mailboxes). */
static size_t default_max_connections(void)
{
    struct rlimit r;
    size_t cap = AC_NODE_DEFAULT_MAX_CONNECTIONS;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        size_t room = r.rlim_cur > 128 ? (size_t)(r.rlim_cur - 64) / 4 : 16;
        if (room < cap)
            cap = room < 16 ? 16 : room;
    }
    return cap;
}

static ac_status check_options(const ac_node_options *o)
{
    char host[256];
    const char *port;
    if (!o->bind)
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind is NULL (e.g. \"tcp://127.0.0.1:0\")");
    if (!split_tcp(o->bind, host, sizeof host, &port))
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" is not tcp://<host>:<port>",
                        o->bind);
    char *end;
    if (strcmp(port, "*") != 0) {
        errno = 0;
        long p = strtol(port, &end, 10);
        if (errno || *end || p < 0 || p > 65535)
            return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" has a bad port", o->bind);
    }
    if (strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0) {
        if (!o->advertise)
            return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" binds every "
                                       "interface: say which address others reach this node "
                                       "at in options.advertise",
                            o->bind);
    }
    if (!loopback(host) && !o->curve && !o->insecure)
        return ac__fail(AC_ESECURITY,
                        "ac_node_start: options.bind \"%.200s\" is not a loopback address and "
                        "options.curve is NULL: traffic would be open to the network. Give CURVE "
                        "keys, or set options.insecure to accept that",
                        o->bind);
    if (o->advertise) {
        const char *colon = strrchr(o->advertise, ':');
        if (!colon || colon == o->advertise || !colon[1] || strlen(o->advertise) > 255 ||
            strchr(o->advertise, '/') || strchr(o->advertise, '@'))
            return ac__fail(AC_EINVAL, "ac_node_start: options.advertise \"%.200s\" is not <host>:<port>",
                            o->advertise);
    }
    if (o->heartbeat_ivl_ms < 0 || o->heartbeat_timeout_ms < 0 || o->connect_timeout_ms < 0 ||
        o->backlog < 0 || o->named_dials_per_s < 0)
        return ac__fail(AC_EINVAL, "ac_node_start: options.%s is negative",
                        o->heartbeat_ivl_ms < 0       ? "heartbeat_ivl_ms"
                        : o->heartbeat_timeout_ms < 0 ? "heartbeat_timeout_ms"
                        : o->connect_timeout_ms < 0   ? "connect_timeout_ms"
                        : o->backlog < 0              ? "backlog"
                                                      : "named_dials_per_s");
    if (o->max_peers > AC_NODE_MAX_PEERS_LIMIT || o->max_connections > AC_NODE_MAX_CONNECTIONS_LIMIT)
        return ac__fail(AC_EINVAL, "ac_node_start: options.%s %zu is over %u",
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? "max_peers" : "max_connections",
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? o->max_peers : o->max_connections,
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? AC_NODE_MAX_PEERS_LIMIT
                                                               : AC_NODE_MAX_CONNECTIONS_LIMIT);
    if (o->max_frame > (size_t)INT32_MAX)
        return ac__fail(AC_EINVAL, "ac_node_start: options.max_frame %zu is over 2 GiB", o->max_frame);
    if (o->curve) {
        const ac_node_curve *c = o->curve;
        const char *bad = !valid_z85_key(c->server_public_key)   ? "server_public_key"
                          : !valid_z85_key(c->server_secret_key) ? "server_secret_key"
                          : !valid_z85_key(c->public_key)        ? "public_key"
                          : !valid_z85_key(c->secret_key)        ? "secret_key"
                                                                 : NULL;
        if (bad)
            return ac__fail(AC_EINVAL, "ac_node_start: options.curve->%s is not a Z85 key (40 characters)",
                            bad);
        if (c->allowed_count && !c->allowed)
            return ac__fail(AC_EINVAL, "ac_node_start: options.curve->allowed is NULL");
        for (size_t i = 0; i < c->allowed_count; i++)
            if (!valid_z85_key(c->allowed[i]))
                return ac__fail(AC_EINVAL, "ac_node_start: options.curve->allowed[%zu] is not a Z85 key",
                                i);
        if (!zmq_has("curve"))
            return ac__fail(AC_ESYS, "ac_node_start: this libzmq has no CURVE");
    }
    return AC_OK;
}

static void node_stop_part(void *ctx);
static void node_free_part(void *ctx);

/* Drop what waits in the outgoing queue (the transport is gone). */
static void drop_queued(ac_node *node)
{
    ac__out *o;
    while ((o = out_pop(node)) != NULL) {
        atomic_fetch_sub_explicit(&o->peer->queued, 1, memory_order_relaxed);
        ac__peer_release(o->peer);
        out_free(o);
    }
}

static void node_free(ac_node *node)
{
    ac_observe_remove(node->observed);
    drop_queued(node);
    if (node->zap)
        zmq_close(node->zap);
    if (node->router)
        zmq_close(node->router);
    if (node->zctx)
        zmq_ctx_term(node->zctx);
    if (node->wake_fd >= 0)
        close(node->wake_fd);
    /* What is left: the self peer, entries of asks nobody settled. */
    for (size_t i = 0; i < node->corr_cap; i++)
        for (ac__corr *c = node->corrs[i]; c;) {
            ac__corr *next = c->chain;
            ac_ref_release(c->reply);
            free(c);
            c = next;
        }
    free(node->corrs);
    free(node->rrefs);
    for (ac__peer *p = atomic_load(&node->evicted), *next; p; p = next) {
        next = p->evict_next; /* evicted as the transport thread ended */
        ac__peer_release(p);
    }
    while (node->peers.newest) {
        ac__peer *p = node->peers.newest;
        ac__ptab_remove(&node->peers, p);
        ac__peer_release(p);
    }
    ac__ptab_free(&node->peers);
    free(node->conns);
    free(node->items);
    free(node->owners);
    for (size_t i = 0; i < node->allowed_count; i++)
        free(node->allowed[i]);
    free(node->allowed);
    free(node->types);
    free(node->system_name);
    free(node->address);
    free(node->endpoint);
    pthread_mutex_destroy(&node->lock);
    free(node);
}

static ac_status bind_router(ac_node *node, const ac_node_options *o)
{
    char host[256], endpoint[300];
    const char *port;
    split_tcp(o->bind, host, sizeof host, &port);
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%s", host, strcmp(port, "0") == 0 ? "*" : port);
    node->router = zmq_socket(node->zctx, ZMQ_ROUTER);
    if (!node->router)
        return ac__fail(AC_ESYS, "ac_node_start: cannot make a socket: %s", zmq_strerror(zmq_errno()));
    set_int(node->router, ZMQ_LINGER, 0);
    set_int(node->router, ZMQ_ROUTER_HANDOVER, 1);
    set_int(node->router, ZMQ_BACKLOG, node->options.backlog);
    set_int(node->router, ZMQ_RCVHWM, 0);
    /* A message of several frames may be bigger than one frame may. */
    int64_t maxmsg = (int64_t)node->options.max_frame;
    if (maxmsg < (int64_t)AC__WIRE_BATCH_MAX)
        maxmsg = (int64_t)AC__WIRE_BATCH_MAX;
    zmq_setsockopt(node->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* No heartbeats of its own: peers' DEALERs ping it with a time to
     * live (heartbeat_timeout_ms), which drops their connections when
     * the pings stop, and the node watches liveness on its DEALERs. A
     * ROUTER that pings aborts the process in libzmq 4.3.4 (an assertion
     * in its I/O thread) when a connection whose routing id another one
     * took over sends and then closes: the next ping goes out on a
     * connection libzmq has marked failed. Any peer can do that. */
    set_int(node->router, ZMQ_HEARTBEAT_IVL, 0);
    if (node->curve) {
        node->zap = zmq_socket(node->zctx, ZMQ_REP);
        if (!node->zap || zmq_bind(node->zap, "inproc://zeromq.zap.01") != 0)
            return ac__fail(AC_ESYS, "ac_node_start: cannot start the key check: %s",
                            zmq_strerror(zmq_errno()));
        set_int(node->router, ZMQ_CURVE_SERVER, 1);
        zmq_setsockopt(node->router, ZMQ_CURVE_SECRETKEY, node->curve_server_secret, 41);
        zmq_setsockopt(node->router, ZMQ_ZAP_DOMAIN, "actorc", 6);
    }
    if (zmq_bind(node->router, endpoint) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: %s", o->bind,
                        zmq_strerror(zmq_errno()));
    char last[300];
    size_t len = sizeof last;
    if (zmq_getsockopt(node->router, ZMQ_LAST_ENDPOINT, last, &len) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot read the bound endpoint");
    node->endpoint = ac__strdup(last);
    const char *adv = o->advertise;
    node->address = ac__strdup(adv ? adv : last + 6);
    if (!node->endpoint || !node->address)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    return AC_OK;
}

ac_node *ac_node_start(ac_system *system, const ac_node_options *options)
{
    ac_clear_error();
    if (!system || !options)
        return ac__fail_null(AC_EINVAL, "ac_node_start: %s is NULL", system ? "options" : "system");
    if (check_options(options) != AC_OK)
        return NULL;
    ac_node *node = ac__calloc(1, sizeof *node);
    if (!node)
        return ac__fail_null(AC_ENOMEM, "ac_node_start: out of memory");
    node->wake_fd = -1;
    pthread_mutex_init(&node->lock, NULL);
    node->system = system;
    node->options = *options;
    ac_node_options *o = &node->options;
    o->bind = o->advertise = NULL; /* not kept */
    o->curve = NULL;
    if (!o->heartbeat_ivl_ms)
        o->heartbeat_ivl_ms = AC_NODE_DEFAULT_HEARTBEAT_IVL_MS;
    if (!o->heartbeat_timeout_ms)
        o->heartbeat_timeout_ms = AC_NODE_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    if (!o->connect_timeout_ms)
        o->connect_timeout_ms = AC_NODE_DEFAULT_CONNECT_TIMEOUT_MS;
    if (!o->max_frame)
        o->max_frame = AC_NODE_DEFAULT_MAX_FRAME;
    if (!o->max_queue)
        o->max_queue = AC_NODE_DEFAULT_MAX_QUEUE;
    if (!o->backlog)
        o->backlog = AC_NODE_DEFAULT_BACKLOG;
    if (!o->max_peers)
        o->max_peers = AC_NODE_DEFAULT_MAX_PEERS;
    if (!o->max_connections)
        o->max_connections = default_max_connections();
    if (!o->named_dials_per_s)
        o->named_dials_per_s = AC_NODE_DEFAULT_NAMED_DIALS_PER_S;
    node->dial_tokens = (double)o->named_dials_per_s;
    node->dial_refill_ns = now_ns();
    node->conns = ac__calloc(o->max_connections, sizeof *node->conns);
    node->items = ac__calloc(2 * o->max_connections + 4, sizeof *node->items);
    node->owners = ac__calloc(2 * o->max_connections + 4, sizeof *node->owners);
    if (!node->conns || !node->items || !node->owners)
        goto oom;
    node->limits = ac__wire_default_limits;
    node->limits.max_frame = o->max_frame;
    node->limits.max_body = o->max_frame;
    node->limits.max_payload = o->max_frame;
    atomic_init(&node->next_corr, 1);
    atomic_init(&node->out_head, &node->out_stub);
    node->out_tail = &node->out_stub;
    if (options->curve) {
        const ac_node_curve *c = options->curve;
        node->curve = true;
        snprintf(node->curve_public, sizeof node->curve_public, "%s", c->public_key);
        snprintf(node->curve_secret, sizeof node->curve_secret, "%s", c->secret_key);
        snprintf(node->curve_server_public, sizeof node->curve_server_public, "%s", c->server_public_key);
        snprintf(node->curve_server_secret, sizeof node->curve_server_secret, "%s", c->server_secret_key);
        node->allowed = c->allowed_count ? ac__calloc(c->allowed_count, sizeof *node->allowed) : NULL;
        if (c->allowed_count && !node->allowed)
            goto oom;
        for (size_t i = 0; i < c->allowed_count; i++) {
            if (!(node->allowed[i] = ac__strdup(c->allowed[i])))
                goto oom;
            node->allowed_count++;
        }
    }
    do {
        if (getrandom(&node->incarnation, sizeof node->incarnation, 0) != sizeof node->incarnation) {
            ac__fail(AC_ESYS, "ac_node_start: no random incarnation: %s", strerror(errno));
            goto fail;
        }
    } while (node->incarnation == 0);
    node->system_name = ac__strdup(ac_system_name(system));
    node->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    node->zctx = zmq_ctx_new();
    if (!node->system_name)
        goto oom;
    if (node->wake_fd < 0 || !node->zctx) {
        ac__fail(AC_ESYS, "ac_node_start: %s", node->wake_fd < 0 ? strerror(errno) : "no ZeroMQ context");
        goto fail;
    }
    zmq_ctx_set(node->zctx, ZMQ_BLOCKY, 0);
    /* Two sockets per connection, the ROUTER, ZAP, and room to spare. */
    zmq_ctx_set(node->zctx, ZMQ_MAX_SOCKETS,
                (int)(2 * node->options.max_connections + 64 > INT32_MAX
                          ? INT32_MAX
                          : 2 * node->options.max_connections + 64));
    if (bind_router(node, options) != AC_OK)
        goto fail;
    pthread_mutex_lock(&node->lock);
    node->self = peer_new(node, node->address, strlen(node->address), node->system_name,
                          strlen(node->system_name), AC__PEER_UP);
    if (node->self)
        node->self->incarnation = node->incarnation;
    pthread_mutex_unlock(&node->lock);
    if (!node->self)
        goto oom;
    metrics_register(node);
    static const ac_msg_type *const builtin[] = {&ac_msg_type_str, &ac_msg_type_bytes,
                                                 &ac_msg_type_int64, &ac_msg_type_error};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (add_type(node, builtin[i]) != AC_OK)
            goto fail;
    node->part = (ac__ext_part){.key = PART_KEY, .stop = node_stop_part, .free = node_free_part, .ctx = node};
    if (ac__ext_attach(system, &node->part) != AC_OK) {
        if (ac_last_status() == AC_EEXIST)
            ac__fail(AC_EEXIST, "ac_node_start: system %s already has a node", ac_system_name(system));
        goto fail;
    }
    int rc = pthread_create(&node->thread, NULL, transport_main, node);
    if (rc != 0) {
        ac__ext_detach(system, &node->part);
        ac__fail(AC_ESYS, "ac_node_start: cannot start the transport thread: %s", strerror(rc));
        goto fail;
    }
    node->thread_started = true;
    ac__node_observe_start(node);
    ac_system_log(system, AC_LOG_INFO, "node %s up: actorc://%s@%s, incarnation %016" PRIx64,
                  node->endpoint, node->system_name, node->address, node->incarnation);
    return node;
oom:
    ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
fail: {
    ac_status st = ac_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ac_last_error());
    node_free(node);
    ac_set_error(st, "%s", msg);
    return NULL;
}
}

/* ac_node_stop and a terminate may meet: the first stops, the second
 * finds it stopped. */
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;

static void node_stop_part(void *ctx)
{
    ac_node *node = ctx;
    pthread_mutex_lock(&stop_lock);
    if (node->stopped) {
        pthread_mutex_unlock(&stop_lock);
        return;
    }
    atomic_store_explicit(&node->stopping, true, memory_order_release);
    uint64_t one = 1;
    ssize_t n = write(node->wake_fd, &one, sizeof one);
    (void)n;
    if (node->thread_started)
        pthread_join(node->thread, NULL);
    node->stopped = true;
    pthread_mutex_unlock(&stop_lock);
    /* Frames queued after the transport's last look, and asks still open
     * (to itself, or queued too late): nothing will answer them now. */
    drop_queued(node);
    ac_error *err = ac__node_down_error(node->self, "this node stopped");
    ac__corr_fail_peer(node, NULL, err);
    ac_error_release(err);
}

static void node_free_part(void *ctx) { node_free(ctx); }

ac_status ac_node_stop(ac_node *node)
{
    if (!node)
        return ac__fail(AC_EINVAL, "ac_node_stop: node is NULL");
    node_stop_part(node);
    return AC_OK;
}

ac_node *ac_system_node(ac_system *system) { return ac__ext_find(system, PART_KEY); }

const char *ac_node_address(const ac_node *node) { return node ? node->address : ""; }
uint64_t ac_node_incarnation(const ac_node *node) { return node ? node->incarnation : 0; }
const char *ac_node_endpoint(const ac_node *node) { return node ? node->endpoint : ""; }

ac_ref *ac_node_resolve(ac_node *node, const char *path)
{
    ac_clear_error();
    if (!node || !path)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: %s is NULL", node ? "path" : "node");
    if (strncmp(path, "actorc://", 9) != 0)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not an actorc:// path", path);
    const char *sys = path + 9;
    const char *slash = strchr(sys, '/');
    if (!slash)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" names no actor", path);
    const char *at = memchr(sys, '@', (size_t)(slash - sys));
    const char *local = slash;
    size_t local_len = strlen(local);
    if (local_len <= 6 || strncmp(local, "/user/", 6) != 0 || strstr(local, "//") ||
        local[local_len - 1] == '/')
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not a path under /user", path);
    if (!at) { /* a local path: this system's */
        size_t n = (size_t)(slash - sys);
        if (n != strlen(node->system_name) || memcmp(sys, node->system_name, n) != 0)
            return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not of system %s and "
                                            "names no node (actorc://<system>@<host>:<port>/...)",
                                 path, node->system_name);
        at = NULL;
    }
    const char *addr = at ? at + 1 : node->address;
    size_t addr_len = at ? (size_t)(slash - addr) : strlen(node->address);
    size_t sys_len = at ? (size_t)(at - sys) : (size_t)(slash - sys);
    const char *colon = memchr(addr, ':', addr_len);
    if (sys_len == 0 || sys_len > 64 || addr_len == 0 || addr_len > 255 || !colon ||
        colon == addr || colon == addr + addr_len - 1)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not "
                                        "actorc://<system>@<host>:<port>/user/...",
                             path);
    bool own = addr_len == strlen(node->address) && memcmp(addr, node->address, addr_len) == 0;
    if (own) {
        ac_ref *r = ac__ext_lookup_top(node->system, local, local_len);
        if (r)
            return r;
        if (!strchr(local + 6, '/'))
            return ac__fail_null(AC_ENOTFOUND, "ac_node_resolve: no actor at %.200s", path);
    }
    ac__peer *p = ac__peer_for(node, addr, addr_len, sys, sys_len);
    if (!p) {
        if (atomic_load_explicit(&node->stopping, memory_order_relaxed))
            return ac__fail_null(AC_ETERMINATED, "ac_node_resolve: node %s is stopping", node->address);
        ac_status st = ac_last_status();
        char why[320];
        snprintf(why, sizeof why, "%s", ac_last_error());
        return ac__fail_null(st, "ac_node_resolve: %s", why);
    }
    ac__rref *r = ac__rref_get(node, p, local, local_len);
    ac__peer_release(p);
    if (!r)
        return ac__fail_null(AC_ENOMEM, "ac_node_resolve: out of memory");
    if (!own)
        wake(node); /* nothing to send yet; the connection comes with the first frame */
    return &r->ref;
}

ac_status ac_node_curve_keypair(char public_key[41], char secret_key[41])
{
    if (!public_key || !secret_key)
        return ac__fail(AC_EINVAL, "ac_node_curve_keypair: a buffer is NULL");
    if (!zmq_has("curve") || zmq_curve_keypair(public_key, secret_key) != 0)
        return ac__fail(AC_ESYS, "ac_node_curve_keypair: this libzmq has no CURVE");
    return AC_OK;
}

ac_status ac_node_curve_read_key(const char *file, char out[41])
{
    if (!file || !out)
        return ac__fail(AC_EINVAL, "ac_node_curve_read_key: %s is NULL", file ? "out" : "file");
    FILE *f = fopen(file, "r");
    if (!f)
        return ac__fail(AC_ENOTFOUND, "ac_node_curve_read_key: cannot read %.200s: %s", file,
                        strerror(errno));
    char buf[128];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (!valid_z85_key(buf))
        return ac__fail(AC_EINVAL, "ac_node_curve_read_key: %.200s holds no Z85 key (40 characters)",
                        file);
    memcpy(out, buf, 41);
    return AC_OK;
}

ac_status ac_node_stats_get(ac_node *node, ac_node_stats *out)
{
    if (!node || !out)
        return ac__fail(AC_EINVAL, "ac_node_stats_get: %s is NULL", node ? "out" : "node");
    const ac__node_metrics *m = &node->m;
    *out = (ac_node_stats){
        .frames_out = atomic_load_explicit(&m->frames_out, memory_order_relaxed),
        .frames_in = atomic_load_explicit(&m->frames_in, memory_order_relaxed),
        .bytes_out = atomic_load_explicit(&m->bytes_out, memory_order_relaxed),
        .bytes_in = atomic_load_explicit(&m->bytes_in, memory_order_relaxed),
        .decode_errors = atomic_load_explicit(&m->decode_errors, memory_order_relaxed),
        .nodes_down = atomic_load_explicit(&m->node_down, memory_order_relaxed),
        .asks_failed_by_node_loss = atomic_load_explicit(&m->asks_failed_by_node_loss, memory_order_relaxed),
        .dropped_backpressure = atomic_load_explicit(&m->dropped_backpressure, memory_order_relaxed),
        .dropped_stale = atomic_load_explicit(&m->dropped_stale, memory_order_relaxed),
    };
    out->connections = atomic_load_explicit(&m->connections, memory_order_relaxed);
    out->peers_forgotten = atomic_load_explicit(&m->peers_forgotten, memory_order_relaxed);
    out->peers_evicted = atomic_load_explicit(&m->peers_evicted, memory_order_relaxed);
    out->dials_refused = atomic_load_explicit(&m->dials_refused, memory_order_relaxed);
    out->connections_evicted = atomic_load_explicit(&m->connections_evicted, memory_order_relaxed);
    out->connections_refused = atomic_load_explicit(&m->connections_refused, memory_order_relaxed);
    pthread_mutex_lock(&node->lock);
    out->pending_asks = node->corr_count;
    out->peers = node->peers.count - (node->self ? 1 : 0);
    pthread_mutex_unlock(&node->lock);
    return AC_OK;
}
