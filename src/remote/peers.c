/*
 * A node's peers: made when an address is first named, forgotten when
 * nothing refers to them and no connection was made, lost for good
 * otherwise (node_internal.h).
 *
 * Rules. A peer is lost for good when its connection drops, its
 * heartbeats time out, its handshake fails, it does not say hello (or its
 * connection is not made) within the connect timeout, it says it leaves,
 * a hello from a new incarnation at its address arrives, or it says hello
 * again without knowing this node's incarnation (it lost this node; a new
 * connection is a new start with a new peer). A lost peer's pending asks
 * fail with NodeDownError at once, its watched actors' watchers get
 * Terminated flagged node-lost, and what is sent to its refs is a dead
 * letter. The peer table holds at most max_peers: a stranger's address
 * makes room first, a real node last.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/node_internal.h"

void ac__peer_release_n(ac__peer *p, unsigned n)
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
        ac__peer_release_n(p, 1);
}

/* Nothing refers to it but the table, it has no connection and none is
 * being made. */
bool ac__peer_forgettable(const ac_node *node, const ac__peer *p)
{
    return p != node->self &&
           atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING &&
           !p->dialled && atomic_load_explicit(&p->refs, memory_order_relaxed) == 1 &&
           atomic_load_explicit(&p->queued, memory_order_relaxed) == 0;
}

void ac__peer_forget(ac_node *node, ac__peer *p)
{
    ac__ptab_remove(&node->peers, p);
    atomic_store_explicit(&p->state, AC__PEER_DOWN, memory_order_relaxed);
    atomic_fetch_add_explicit(&node->m.peers_forgotten, 1, memory_order_relaxed);
    ac__peer_release(p); /* the table's, the last */
}

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
        if (ac__peer_forgettable(node, p)) {
            ac__peer_forget(node, p);
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
    if (!ac__peer_mark_down_locked(node, unheard, why))
        return false;
    atomic_fetch_add_explicit(&node->m.peers_evicted, 1, memory_order_relaxed);
    unheard->evict_next = atomic_load_explicit(&node->evicted, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&node->evicted, &unheard->evict_next, unheard,
                                                  memory_order_release, memory_order_relaxed)) {
    }
    ac__node_wake(node);
    return true;
}

ac__peer *ac__peer_new(ac_node *node, const char *address, size_t len, const char *system,
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
        ac__peer_release_n(p, 1);
        return ac__fail_null(AC_ENOMEM, "out of memory for a peer");
    }
    return p;
}

ac__peer *ac__peer_at(ac_node *node, const char *address, size_t len, const char *system,
                      size_t system_len, bool named)
{
    pthread_mutex_lock(&node->lock);
    ac__peer *p = NULL;
    if (!atomic_load_explicit(&node->stopping, memory_order_relaxed)) {
        p = ac__ptab_by_address(&node->peers, address, len);
        if (!p) {
            p = ac__peer_new(node, address, len, system, system_len, AC__PEER_CONNECTING);
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
    return ac__peer_at(node, address, len, system, system_len, false);
}

ac__peer *ac__peer_by_inc(ac_node *node, uint64_t inc)
{
    pthread_mutex_lock(&node->lock);
    ac__peer *found = ac__ptab_by_inc(&node->peers, inc, node->self);
    if (found)
        ac__peer_retain(found);
    pthread_mutex_unlock(&node->lock);
    return found;
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

/* ---- losing a peer ------------------------------------------------------ */

bool ac__peer_mark_down_locked(ac_node *node, ac__peer *peer, const char *why)
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

/* The second half (transport thread), after ac__peer_mark_down_locked. */
static void peer_down_finish(ac_node *node, ac__peer *peer, const char *why)
{
    bool said_hello = peer->incarnation != 0; /* written before UP; DOWN now */
    ac__conn_close(node, peer);
    ac__backlog_flush(node, peer); /* DOWN: drops them */
    ac__lookup_cache_forget(node, peer);
    AC__NODE_COUNT(node, node_down, c_nodes_down, 1);
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
        ac__node_log_counted(node, &node->last_loss_log, &node->losses_unlogged,
                             "lost node %s, which never said hello: %s", peer->address, why);
    ac_error *err = ac__node_down_error(peer, why);
    ac__corr_fail_peer(node, peer, err); /* counts them */
    ac_error_release(err);
    ac__rref_peer_lost(node, peer);
    ac__node_hook_down(node, peer, why);
    ac__peer_release(peer); /* the table's */
}

void ac__peer_down(ac_node *node, ac__peer *peer, const char *why)
{
    pthread_mutex_lock(&node->lock);
    bool marked = ac__peer_mark_down_locked(node, peer, why);
    pthread_mutex_unlock(&node->lock);
    if (marked)
        peer_down_finish(node, peer, why);
}

void ac__peer_finish_evicted(ac_node *node)
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
