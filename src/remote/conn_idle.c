/*
 * Idle connections (ac_node_options.idle_timeout_ms): a connection that
 * nothing crossed, either way, for the timeout is closed, so that a node
 * keeps open only the connections it uses and a large cluster costs each
 * node what it talks to, not what it knows (docs/scaling.md). Transport
 * thread.
 *
 * The peer stays UP: its refs live, and its next send dials it again
 * (outq.c: a peer without a connection is dialled first), says HELLO
 * naming the incarnation this node knows, then sends, so that what
 * follows the close arrives after what preceded it. A peer that died
 * while its connection was closed is lost at that send: its address
 * refuses the connection, or it does not answer within
 * connect_timeout_ms.
 *
 * A connection is kept, idle or not, while something needs its liveness
 * now: an ask this node waits on from that peer (it must fail at once if
 * the peer goes), a watch on one of its actors or of its on ours, frames
 * queued for it, or a connection still being made.
 */
#include "remote/node_internal.h"

/* Idle by the clock: UP, made, nothing queued, nothing crossed since. */
static bool idle_by_time(ac_node *node, const ac__peer *p, int64_t t)
{
    int64_t idle_ns = (int64_t)node->options.idle_timeout_ms * 1000000ll;
    return p->conn && p->conn_made && p->hello_sent && !p->backlog_head &&
           t - p->last_used_ns >= idle_ns &&
           atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP &&
           atomic_load_explicit(&p->queued, memory_order_relaxed) == 0;
}

/* Does an ask wait on p, or a watch need it? Under the lock. */
static bool needed_locked(ac_node *node, const ac__peer *p)
{
    if (p->watched.count || p->inbound_count)
        return true;
    for (size_t i = 0; i < node->corr_cap; i++)
        for (const ac__corr *c = node->corrs[i]; c; c = c->chain)
            if (c->peer == p)
                return true;
    return false;
}

static void close_idle(ac_node *node, ac__peer *p)
{
    ac__conn_close(node, p);
    p->hello_sent = false;
    p->conn_made = false;
    atomic_fetch_add_explicit(&node->m.connections_idled, 1, memory_order_relaxed);
}

void ac__conns_close_idle(ac_node *node, int64_t t)
{
    /* A close takes the connection out of the array, the last one in
     * its place: look at the same index again. */
    for (size_t i = 0; i < node->conn_count;) {
        ac__peer *p = node->conns[i];
        if (!idle_by_time(node, p, t)) {
            i++;
            continue;
        }
        pthread_mutex_lock(&node->lock);
        bool needed = needed_locked(node, p);
        pthread_mutex_unlock(&node->lock);
        if (needed) {
            p->last_used_ns = t; /* looked at again after another timeout */
            i++;
            continue;
        }
        close_idle(node, p);
    }
}

int64_t ac__conns_next_idle(const ac_node *node)
{
    int64_t idle_ns = (int64_t)node->options.idle_timeout_ms * 1000000ll, next = INT64_MAX;
    for (size_t i = 0; i < node->conn_count; i++)
        if (node->conns[i]->last_used_ns + idle_ns < next)
            next = node->conns[i]->last_used_ns + idle_ns;
    return next;
}
