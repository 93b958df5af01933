/*
 * A peer's connection, as the node sees it: dialled through the
 * transport with this node's HELLO first, counted against
 * max_connections, refused, made or lost as the transport reports, and
 * late when it is not made (or its peer does not say hello) within the
 * connect timeout. Transport thread, except where said.
 *
 * A connection refused before it was made (nothing listens there yet) is
 * closed at once and not retried: frames wait for the peer's hello, or
 * its connect deadline to lose it. A hello comes on the peer's own
 * connection, so an address that refuses ours, or never answers, would
 * leave a peer that said hello up for good: it is lost at the deadline.
 */
#include <stdio.h>

#include "remote/node_internal.h"

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
        if ((!q->conn_made ||
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
    ac__peer_down(node, victim, why);
    ac__peer_release(victim);
    return true;
}

/* Dials to addresses that only a frame named (a sender another node gave)
 * and that never said hello: at most named_dials_per_s a second (a token
 * bucket of one second's worth). Other dials are this node's own wish, or
 * a peer's that said hello, and are not counted. */
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
    int64_t t = ac__node_now_ns();
    double rate = (double)node->options.named_dials_per_s;
    node->dial_tokens += (double)(t - node->dial_refill_ns) * rate / 1e9;
    node->dial_refill_ns = t;
    if (node->dial_tokens > rate)
        node->dial_tokens = rate;
    if (node->dial_tokens < 1.0)
        return false;
    node->dial_tokens -= 1.0;
    p->named_dial = true; /* counted in named_dials_open once its connection is open */
    return true;
}

const char *ac__conn_dial_refusal(ac_node *node, ac__peer *p)
{
    if (dial_allowed(node, p))
        return NULL;
    atomic_fetch_add_explicit(&node->m.dials_refused, 1, memory_order_relaxed);
    return "not dialled: only another node's frame named it, and named_dials_per_s such "
           "addresses were dialled in the last second (or max_connections / 8 are dialling)";
}

void ac__conn_named_done(ac_node *node, ac__peer *p)
{
    if (p->named_dial && p->conn) {
        p->named_dial = false;
        node->named_dials_open--;
    }
}

void ac__conn_close(ac_node *node, ac__peer *p)
{
    if (!p->conn)
        return;
    ac__conn_named_done(node, p);
    node->tp->close(node->tstate, p->conn);
    p->conn = NULL;
    size_t i = p->conn_index; /* out of the connections, the last one in its place */
    node->conns[i] = node->conns[--node->conn_count];
    node->conns[i]->conn_index = i;
    atomic_store_explicit(&node->m.connections, node->conn_count, memory_order_relaxed);
}

/* Say hello first, naming the peer's incarnation as this node knows it
 * (0: not yet, as on a first or a new connection). */
static void say_hello(ac_node *node, ac__peer *p)
{
    ac__wire_env hello = {.kind = AC__WIRE_HELLO, .target_inc = p->incarnation};
    const ac__node_hooks *hooks = atomic_load_explicit(&node->hooks, memory_order_acquire);
    if (hooks) { /* what the cluster layer says of this node */
        hello.type_name = ac__text_span(hooks->hello_type);
        hello.body = (ac__wire_span){hooks->hello_body, hooks->hello_len};
    }
    hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR,
                                     .system = ac__text_span(node->system_name),
                                     .address = ac__text_span(node->address),
                                     .incarnation = node->incarnation};
    struct {
        ac__out out;
        uint8_t buf[4096]; /* room for the largest card a cluster sends */
    } f;
    size_t n = ac__wire_encode(&hello, f.buf, sizeof f.buf);
    if (n > sizeof f.buf)
        return;
    f.out = (ac__out){.buf = f.buf, .len = n};
    atomic_init(&f.out.next, NULL);
    if (node->tp->send(node->tstate, p->conn, &f.out, 1, n) == AC__SEND_OK)
        p->hello_sent = true;
}

const char *ac__conn_open(ac_node *node, ac__peer *p)
{
    if (!conn_room(node)) {
        atomic_fetch_add_explicit(&node->m.connections_refused, 1, memory_order_relaxed);
        return "no connection can be opened to it: max_connections are open, each to a peer "
               "that said hello";
    }
    ac__conn *c = NULL;
    const char *why = node->tp->dial(node->tstate, p, p->address, &c);
    if (why)
        return why;
    p->conn = c;
    p->last_used_ns = node->loop_ns;
    if (p->named_dial)
        node->named_dials_open++;
    p->conn_index = node->conn_count;
    node->conns[node->conn_count++] = p;
    atomic_store_explicit(&node->m.connections, node->conn_count, memory_order_relaxed);
    p->conn_made = false;
    pthread_mutex_lock(&node->lock);
    p->refused = false;
    if (!p->dialled || atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_CONNECTING)
        p->connect_deadline_ns =
            ac__node_now_ns() + (int64_t)node->options.connect_timeout_ms * 1000000ll;
    p->dialled = true;
    pthread_mutex_unlock(&node->lock);
    say_hello(node, p);
    return NULL;
}

/* A dial that has not connected when its peer's hello comes began before
 * the node there could answer it: during a partition (its SYNs dropped),
 * or to an earlier incarnation at the address. TCP may retry it for
 * seconds yet (its retransmissions back off: 1, 3, 7 s), while its
 * deadline runs from when it began: the node that just said hello, and
 * so listens, would be lost at that deadline ("its address took no
 * connection"), and under split-brain resolution downed by the others
 * moments after it joined. So it is closed here and dialled afresh, with
 * a deadline from now. The connection's news is taken first: one made
 * meanwhile is kept. Frames given to the old dial (sent before the
 * hello, for whoever was at the address) go with it. */
bool ac__conn_hello_came(ac_node *node, ac__peer *p)
{
    if (!p->conn || p->conn_made)
        return true;
    /* A dial younger than half the connect timeout is left alone: if its
     * first SYN was lost, TCP's retry (1 s on) comes before its deadline,
     * and a dial only just begun (both nodes dialling each other at once)
     * keeps the frames given to it. */
    int64_t timeout = (int64_t)node->options.connect_timeout_ms * 1000000ll;
    pthread_mutex_lock(&node->lock);
    int64_t began = p->connect_deadline_ns - timeout;
    pthread_mutex_unlock(&node->lock);
    if (ac__node_now_ns() - began < timeout / 2)
        return true;
    ac__conn *old = p->conn;
    ac__peer_retain(p);
    node->tp->poll_conn(node->tstate, old); /* may lose p, or close or redial it */
    bool up = atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_DOWN;
    if (up && p->conn == old && !p->conn_made)
        ac__conn_close(node, p);
    ac__peer_release(p);
    return up;
}

/* ---- what the transport reports ----------------------------------------- */

void ac__node_conn_made(ac_node *node, ac__peer *p)
{
    (void)node;
    p->conn_made = true;
}

void ac__node_conn_refused(ac_node *node, ac__peer *p)
{
    /* Nothing is listening there (yet): free the connection now; frames
     * wait for a hello or the connect deadline. A peer whose hello came
     * meanwhile listens now: dial again. */
    ac__conn_close(node, p);
    pthread_mutex_lock(&node->lock);
    bool up = atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP;
    p->refused = !up;
    pthread_mutex_unlock(&node->lock);
    const char *why = NULL;
    if (up && p->redialled) /* its hello named an address that refuses us */
        why = "its address refused this node's connection";
    else if (up)
        p->redialled = true, why = ac__conn_open(node, p);
    if (why)
        ac__peer_down(node, p, why);
}

void ac__node_conn_lost(ac_node *node, ac__peer *p, const char *why)
{
    ac__peer_down(node, p, why);
}

void ac__node_conn_writable(ac_node *node, ac__peer *p) { ac__backlog_flush(node, p); }

/* ---- late connections ---------------------------------------------------- */

/* Is p's connect deadline past while it has not said hello, or while its
 * connection has not been made? */
static bool peer_late(const ac__peer *p, int64_t t)
{
    return p->dialled && t > p->connect_deadline_ns &&
           (atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING ||
            (p->conn && !p->conn_made));
}

/* A connection made but not yet reported (its news waiting) first has
 * its say. */
void ac__conn_lose_late(ac_node *node, ac__peer *p, int64_t t)
{
    if (p->conn)
        node->tp->poll_conn(node->tstate, p->conn);
    int state = atomic_load_explicit(&p->state, memory_order_relaxed);
    if (state == AC__PEER_DOWN || !peer_late(p, t))
        return;
    char why[96];
    snprintf(why, sizeof why,
             state == AC__PEER_UP ? "its address took no connection within %d ms"
                                  : "it did not answer within %d ms",
             node->options.connect_timeout_ms);
    ac__peer_down(node, p, why);
}

int64_t ac__conns_check_late(ac_node *node, int64_t t)
{
    int64_t next = INT64_MAX;
    /* The connections are this thread's; a loss takes one out of the
     * array, so look again there. */
    for (size_t i = 0; i < node->conn_count;) {
        ac__peer *p = node->conns[i];
        if (peer_late(p, t)) {
            ac__peer_retain(p);
            ac__conn_lose_late(node, p, t);
            bool kept = i < node->conn_count && node->conns[i] == p;
            ac__peer_release(p);
            if (!kept)
                continue;
        }
        if (p->dialled && peer_late(p, p->connect_deadline_ns + 1) && p->connect_deadline_ns < next)
            next = p->connect_deadline_ns; /* still being made: late after it */
        i++;
    }
    return next;
}
