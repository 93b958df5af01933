/*
 * The outgoing queue: frames encoded on any thread, queued for the
 * transport thread, which gives each peer's frames to its connection in
 * order, as few messages as fit (wire.h).
 *
 * The queue is Vyukov's intrusive MPSC queue; a sender wakes the
 * transport only when it sleeps. Backpressure: at most max_queue frames
 * wait for one peer (queued, or in its backlog: what its connection would
 * not take yet); a send beyond that is refused (AC_EFAILED) and its
 * message is a dead letter. Frames to this node itself are handled as
 * arrived, on the transport thread, without a wire.
 */
#include <string.h>

#include "core/hop_trace.h"
#include "remote/node_internal.h"

static void out_push(ac_node *node, ac__out *o)
{
    atomic_store_explicit(&o->next, NULL, memory_order_relaxed);
    /* seq_cst: publishes o (release), orders after the previous pusher's
     * link (acquire), and pairs with the transport's check of the queue
     * before it sleeps (see ac__node_wake). */
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

bool ac__outq_waits(ac_node *node)
{
    return node->out_tail != &node->out_stub ||
           atomic_load_explicit(&node->out_head, memory_order_seq_cst) != &node->out_stub;
}

void ac__node_wake(ac_node *node)
{
    /* seq_cst: pairs with the transport's store of sleeping and its
     * re-check of the queue (one of the two sees the other). Only the
     * sender that finds it asleep wakes it: one wake-up per sleep,
     * however many frames come meanwhile. */
    if (atomic_load_explicit(&node->sleeping, memory_order_seq_cst) &&
        atomic_exchange_explicit(&node->sleeping, false, memory_order_seq_cst)) {
        ac__hop(AC__HOP_WAKE);
        node->tp->wake(node->tstate);
    }
}

ac_status ac__node_admit_queue(ac_node *node, ac__peer *peer)
{
    if (atomic_load_explicit(&peer->queued, memory_order_relaxed) >= node->options.max_queue) {
        AC__NODE_COUNT(node, dropped_backpressure, c_dropped_backpressure, 1);
        return ac__fail(AC_EFAILED, "%zu frames already wait for node %s: it falls behind",
                        node->options.max_queue, peer->address);
    }
    return AC_OK;
}

/* May a frame go to peer now? AC_OK, or the failure recorded. */
static ac_status send_admit(ac_node *node, ac__peer *peer)
{
    if (atomic_load_explicit(&peer->state, memory_order_acquire) == AC__PEER_DOWN)
        return ac__fail(AC_ENODEDOWN, "node %s is down", peer->address);
    if (atomic_load_explicit(&node->stopping, memory_order_acquire))
        return ac__fail(AC_ENODEDOWN, "this node is stopping");
    return ac__node_admit_queue(node, peer);
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
    ac__hop(AC__HOP_OUT_PUSH);
    ac__node_wake(node);
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

void ac__node_send_undeliverable(ac_node *node, ac__peer *peer, uint64_t corr, unsigned flags,
                                 const char *why)
{
    ac__wire_env u = {.kind = AC__WIRE_UNDELIVERABLE, .corr = corr, .flags = flags};
    u.body = ac__text_span(why);
    u.sender.kind = AC__WIRE_SENDER_NONE;
    (void)ac__node_send(node, peer, &u);
}

/* ---- each peer's backlog (transport thread) ------------------------------ */

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
        ac__peer_release_n(p, k);
    }
}

/* Hand the backlog's first frames to peer's connection as one message:
 * as many as fit in AC__WIRE_BATCH_MAX bytes (a bigger frame alone). A
 * peer without a connection is dialled first. True when it took them, or
 * they are dropped (the peer is lost, or the transport refused them for
 * good); false when the connection is full, or waits to be dialled. */
static bool send_batch(ac_node *node, ac__peer *p)
{
    if (!p->conn) {
        pthread_mutex_lock(&node->lock);
        bool waits = p->refused; /* for its hello, or its deadline */
        pthread_mutex_unlock(&node->lock);
        if (waits)
            return false;
        const char *why = ac__conn_dial_refusal(node, p);
        if (!why)
            why = ac__conn_open(node, p);
        if (why) {
            ac__peer_down(node, p, why); /* drops the backlog */
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
    ac__send_result r = node->tp->send(node->tstate, p->conn, first, n, bytes);
    if (r == AC__SEND_FULL)
        return false;
    if (r == AC__SEND_OK)
        ac__node_count_out(node, p, n, bytes);
    backlog_pop(p, n);
    return true;
}

void ac__backlog_flush(ac_node *node, ac__peer *p)
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

/* Frames taken from the queue in one go, at most; peers they are for. */
#define OUT_BUDGET 4096
#define OUT_PEERS 32

/* Each peer's frames join its backlog, in order, and then leave in as
 * few messages as fit. */
size_t ac__outq_drain(ac_node *node)
{
    ac__peer *touched[OUT_PEERS];
    size_t n = 0, nt = 0;
    ac__out *o;
    while (n < OUT_BUDGET && (o = out_pop(node)) != NULL) {
        ac__peer *p = o->peer;
        n++;
        if (p == node->self) {
            ac__inbound_frames(node, p, o->buf, o->len, NULL, 0, false);
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
                ac__backlog_flush(node, touched[i]);
                ac__peer_release(touched[i]);
            }
            nt = 0;
        }
        p->flush_mark = true;
        touched[nt++] = ac__peer_retain(p);
    }
    for (size_t i = 0; i < nt; i++) {
        touched[i]->flush_mark = false;
        ac__backlog_flush(node, touched[i]);
        ac__peer_release(touched[i]);
    }
    return n;
}

void ac__outq_drop(ac_node *node, bool counted)
{
    ac__out *o;
    while ((o = out_pop(node)) != NULL) {
        if (counted)
            atomic_fetch_sub_explicit(&o->peer->queued, 1, memory_order_relaxed);
        ac__peer_release(o->peer);
        out_free(o);
    }
}
