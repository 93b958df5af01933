/*
 * Frames that arrive: the handshake and dispatch (node_internal.h).
 * Transport thread.
 *
 * A connection names its dialler by a routing id, its incarnation; a
 * frame from one that has not said hello is dropped (HELLO aside), and
 * so is one meant for an earlier incarnation of this node (an ask among
 * them is answered undeliverable). A malformed frame is dropped (counted,
 * logged at most once a second) and the connection kept: one bad frame
 * says nothing of the next. A HELLO from a node this one has no
 * connection to makes one: liveness is watched on dialled connections.
 */
#include <stdio.h>
#include <string.h>

#include "remote/fault.h"
#include "remote/node_internal.h"

static ac__peer *by_routing_id(ac_node *node, const void *id, size_t len)
{
    uint64_t inc;
    if (len != sizeof inc)
        return NULL;
    memcpy(&inc, id, sizeof inc);
    return ac__peer_by_inc(node, inc);
}

/* This node's own hello came back: a DEALER it opened for the peer of
 * incarnation `inc` reached this node, under an address that is not
 * literally its own ("localhost:<port>" for "127.0.0.1:<port>"). That peer
 * is this node: its frames would come back here and be dropped, asks
 * wait out their timeouts, and it would stay up for good. Lost. (A peer
 * not up yet names no incarnation and times out on its own.) */
static void lose_self_dialled(ac_node *node, uint64_t inc)
{
    ac__peer *found = ac__peer_by_inc(node, inc);
    if (!found)
        return;
    ac__peer_down(node, found, "its address is this node's own");
    ac__peer_release(found);
}

static void handle_hello(ac_node *node, const ac__wire_env *env, const void *id, size_t id_len)
{
    const ac__wire_sender *s = &env->sender;
    uint64_t inc;
    if (s->kind != AC__WIRE_SENDER_ACTOR || id_len != sizeof inc || s->address.len == 0 ||
        s->address.len > 255 || s->system.len > 64) {
        AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
        return;
    }
    memcpy(&inc, id, sizeof inc);
    if (inc != s->incarnation || inc == node->incarnation) {
        AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
        if (inc == node->incarnation && s->incarnation == inc)
            lose_self_dialled(node, env->target_inc);
        return;
    }
    ac__peer *old = NULL, *p;
    pthread_mutex_lock(&node->lock);
    p = ac__ptab_by_address(&node->peers, (const char *)s->address.ptr, s->address.len);
    ac__peer *same = ac__ptab_by_inc(&node->peers, inc, node->self);
    if (p == node->self || (same && same != p)) {
        /* Someone claims our address, or an incarnation Up at one address
         * names another: one connection must not make this node dial
         * address after address. */
        pthread_mutex_unlock(&node->lock);
        AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
        ac__node_log_limited(node, &node->last_decode_log, "refused a hello naming %s: %s",
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
    if (!p) {
        /* Made now, so that the old one's loss (below) cannot be looked up
         * by a new send first. */
        pthread_mutex_unlock(&node->lock);
        if (old) {
            ac__peer_down(node, old, old_why);
            ac__peer_release(old);
        }
        pthread_mutex_lock(&node->lock);
        p = ac__ptab_by_address(&node->peers, (const char *)s->address.ptr, s->address.len);
        if (!p) {
            p = ac__peer_new(node, (const char *)s->address.ptr, s->address.len,
                         (const char *)s->system.ptr, s->system.len, AC__PEER_CONNECTING);
        }
        if (!p) {
            pthread_mutex_unlock(&node->lock);
            ac__node_log_counted(node, &node->last_refuse_log, &node->refusals_unlogged,
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
    /* Its first hello (a hello again from one Up changes nothing here:
     * no dial per hello). */
    bool first = atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_UP;
    /* Release: senders that see UP see the incarnation. */
    atomic_store_explicit(&p->state, AC__PEER_UP, memory_order_release);
    pthread_mutex_unlock(&node->lock);
    ac__node_hook_up(node, p, env);
    ac__conn_named_done(node, p); /* it answered: a peer like any other now */
    if (first && !ac__conn_hello_came(node, p))
        return; /* its connection's news lost it */
    const char *why = p->conn ? NULL : ac__conn_open(node, p);
    if (why)
        ac__peer_down(node, p, why);
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
        AC__NODE_COUNT(node, dropped_stale, c_dropped_stale, 1);
        ac__node_log_limited(node, &node->last_stale_log, "dropped a frame from a node that has not said hello");
        return;
    }
    if (env.target_inc != 0 && env.target_inc != node->incarnation) {
        AC__NODE_COUNT(node, dropped_stale, c_dropped_stale, 1);
        if (env.kind == AC__WIRE_ASK)
            ac__node_send_undeliverable(node, from, env.corr, 0,
                                        "it was meant for an earlier incarnation");
        return;
    }
    if (env.kind == AC__WIRE_TELL && ac__node_hook_system_tell(node, from, &env))
        return;
    switch (env.kind) {
    case AC__WIRE_TELL:
    case AC__WIRE_ASK:
        ac__handle_message(node, from, &env);
        break;
    case AC__WIRE_REPLY:
        ac__handle_reply(node, from, &env);
        break;
    case AC__WIRE_UNDELIVERABLE:
        ac__handle_undeliverable(node, &env);
        break;
    case AC__WIRE_WATCH:
        ac__handle_watch(node, from, &env, true);
        break;
    case AC__WIRE_UNWATCH:
        ac__handle_watch(node, from, &env, false);
        break;
    case AC__WIRE_TERMINATED:
        if (env.sender.kind == AC__WIRE_SENDER_LOCAL)
            ac__rref_terminated(node, from, (const char *)env.sender.path.ptr, env.sender.path.len);
        break;
    case AC__WIRE_LEAVE:
        ac__peer_down(node, from, "it left");
        break;
    default:
        break;
    }
}

/* A message of one or more frames (`from` NULL: of a node that has not
 * said hello, or none), each counted as it comes; the first that cannot
 * be decoded ends it. */
void ac__inbound_frames(ac_node *node, ac__peer *from, const uint8_t *buf, size_t len,
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
                ac__node_count_in(node, from, len - at);
            AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
            ac__node_log_limited(node, &node->last_decode_log,
                        "dropped a malformed frame of %zu bytes%s%s: %s", len - at,
                        from ? " from " : "", from ? from->address : "",
                        why ? why : "malformed");
            break;
        }
        at += used;
        if (wire)
            ac__node_count_in(node, from, used);
        handle_env(node, from, &env, routing_id, id_len);
        if (from && atomic_load_explicit(&from->state, memory_order_relaxed) != AC__PEER_UP)
            from = NULL; /* it left or was lost: the rest is stale */
        else if (!from && !held && env.kind == AC__WIRE_HELLO && wire)
            from = held = by_routing_id(node, routing_id, id_len); /* it said hello now */
    } while (at < len);
    ac__peer_release(held);
}

/* The peer a routing id names: the last one again while it is up, else
 * looked up by incarnation (and remembered). Retained, or NULL. */
static ac__peer *from_cached(ac_node *node, const void *id, size_t id_len)
{
    uint64_t rid = 0;
    if (id_len == sizeof rid)
        memcpy(&rid, id, sizeof rid);
    if (rid && node->lookup_cache.from && node->lookup_cache.id == rid &&
        atomic_load_explicit(&node->lookup_cache.from->state, memory_order_relaxed) == AC__PEER_UP)
        return ac__peer_retain(node->lookup_cache.from);
    ac__peer *from = by_routing_id(node, id, id_len);
    if (from && rid) {
        ac__peer_release(node->lookup_cache.from);
        node->lookup_cache.from = ac__peer_retain(from);
        node->lookup_cache.id = rid;
    }
    return from;
}

void ac__node_frames_deliver(ac_node *node, const void *id, size_t id_len, const uint8_t *buf,
                             size_t len)
{
    ac__peer *from = from_cached(node, id, id_len);
    ac__inbound_frames(node, from, buf, len, id, id_len, true);
    ac__peer_release(from);
}

/* With the fault layer on, a message from a known peer first passes its
 * link's rule (it may be dropped, or held and delivered later). */
void ac__node_frames_in(ac_node *node, const void *id, size_t id_len, const uint8_t *buf,
                        size_t len)
{
    if (node->fault) {
        ac__peer *from = from_cached(node, id, id_len);
        bool taken = ac__fault_in(node->fault, from ? from->address : NULL, id, id_len, buf, len);
        ac__peer_release(from);
        if (taken)
            return;
    }
    ac__node_frames_deliver(node, id, id_len, buf, len);
}

void ac__node_bad_input(ac_node *node, const char *what)
{
    AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
    ac__node_log_limited(node, &node->last_decode_log, "%s", what);
}

void ac__node_warn(ac_node *node, const char *what)
{
    ac_system_log(node->system, AC_LOG_WARN, "node %s: %s", node->address, what);
}
