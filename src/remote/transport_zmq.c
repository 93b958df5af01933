/*
 * The ZeroMQ transport ("tcp://<host>:<port>"; transport.h).
 *
 * Sockets. The node binds one ROUTER; for every peer it keeps one DEALER
 * connected to the peer's ROUTER, its routing id this node's incarnation.
 * Frames to a peer leave on its DEALER, frames from it arrive on the
 * ROUTER, so each peer connection carries one direction; a message
 * carries one or more frames. Liveness is watched on DEALERs: their
 * monitors report a connection made, refused (closed before it was made:
 * a DEALER does not reconnect) or dropped, a handshake that failed; their
 * heartbeats (with a time to live the peer's ROUTER applies) a silent
 * peer. A DEALER's high-water mark is max_queue: beyond it a send would
 * block, and the node keeps the frames until it is writable.
 *
 * Only this file and transport_zmq_curve.c include zmq.h. Every socket is
 * the transport thread's; the wake-up is an eventfd in the same poll.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/hop_trace.h"
#include "remote/transport_zmq.h"
#include "remote/wire.h"

/* ---- options --------------------------------------------------------------- */

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

static ac_status zt_check(const ac_node_options *o)
{
    char host[256];
    const char *port;
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
    return ac__zt_check_curve(o);
}

/* ---- start, free ----------------------------------------------------------- */

static ac_status bind_router(ac__zt *t, const ac_node_options *given, char **endpoint_out,
                             char **address_out)
{
    char host[256], endpoint[300];
    const char *port;
    split_tcp(given->bind, host, sizeof host, &port);
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%s", host, strcmp(port, "0") == 0 ? "*" : port);
    t->router = zmq_socket(t->zctx, ZMQ_ROUTER);
    if (!t->router)
        return ac__fail(AC_ESYS, "ac_node_start: cannot make a socket: %s", zmq_strerror(zmq_errno()));
    ac__zt_set_int(t->router, ZMQ_LINGER, 0);
    ac__zt_set_int(t->router, ZMQ_ROUTER_HANDOVER, 1);
    ac__zt_set_int(t->router, ZMQ_BACKLOG, t->o->backlog);
    ac__zt_set_int(t->router, ZMQ_RCVHWM, 0);
    /* A message of several frames may be bigger than one frame may. */
    int64_t maxmsg = (int64_t)t->o->max_frame;
    if (maxmsg < (int64_t)AC__WIRE_BATCH_MAX)
        maxmsg = (int64_t)AC__WIRE_BATCH_MAX;
    zmq_setsockopt(t->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* No heartbeats of its own: peers' DEALERs ping it with a time to
     * live (heartbeat_timeout_ms), which drops their connections when
     * the pings stop, and the node watches liveness on its DEALERs. A
     * ROUTER that pings aborts the process in libzmq 4.3.4 (an assertion
     * in its I/O thread) when a connection whose routing id another one
     * took over sends and then closes: the next ping goes out on a
     * connection libzmq has marked failed. Any peer can do that. */
    ac__zt_set_int(t->router, ZMQ_HEARTBEAT_IVL, 0);
    if (ac__zt_start_curve(t) != AC_OK)
        return ac_last_status();
    if (zmq_bind(t->router, endpoint) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: %s", given->bind,
                        zmq_strerror(zmq_errno()));
    char last[300];
    size_t len = sizeof last;
    if (zmq_getsockopt(t->router, ZMQ_LAST_ENDPOINT, last, &len) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot read the bound endpoint");
    *endpoint_out = ac__strdup(last);
    const char *adv = given->advertise;
    *address_out = ac__strdup(adv ? adv : last + 6);
    if (!*endpoint_out || !*address_out)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    return AC_OK;
}

static ac_status zt_start(const ac__transport_start *s, void **state, char **endpoint,
                          char **address)
{
    ac__zt *t = ac__calloc(1, sizeof *t);
    if (!t)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    *state = t;
    t->node = s->node;
    t->system = s->system;
    t->o = s->options;
    t->incarnation = s->incarnation;
    t->wake_fd = -1;
    size_t max = t->o->max_connections;
    t->conns = ac__calloc(max ? max : 1, sizeof *t->conns);
    t->items = ac__calloc(2 * max + 4, sizeof *t->items);
    t->owners = ac__calloc(2 * max + 4, sizeof *t->owners);
    if (!t->conns || !t->items || !t->owners || ac__zt_copy_curve(t, s->given->curve) != AC_OK)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->zctx = zmq_ctx_new();
    if (t->wake_fd < 0 || !t->zctx)
        return ac__fail(AC_ESYS, "ac_node_start: %s",
                        t->wake_fd < 0 ? strerror(errno) : "no ZeroMQ context");
    zmq_ctx_set(t->zctx, ZMQ_BLOCKY, 0);
    /* Two sockets per connection, the ROUTER, ZAP, and room to spare. */
    zmq_ctx_set(t->zctx, ZMQ_MAX_SOCKETS,
                (int)(2 * max + 64 > INT32_MAX ? INT32_MAX : 2 * max + 64));
    return bind_router(t, s->given, endpoint, address);
}

static void free_dead(ac__zt *t)
{
    while (t->dead) {
        ac__conn *c = t->dead;
        t->dead = c->dead_next;
        free(c);
    }
}

static void zt_free(void *state)
{
    ac__zt *t = state;
    free_dead(t);
    ac__zt_free_curve(t);
    if (t->router)
        zmq_close(t->router);
    if (t->zctx)
        zmq_ctx_term(t->zctx);
    if (t->wake_fd >= 0)
        close(t->wake_fd);
    free(t->conns);
    free(t->items);
    free(t->owners);
    free(t);
}

static void zt_wake(void *state)
{
    ac__zt *t = state;
    uint64_t one = 1;
    ssize_t n = write(t->wake_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full, so a wake is pending */
}

/* ---- connections ------------------------------------------------------------ */

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

static const char *zt_dial(void *state, ac__peer *p, const char *address, ac__conn **out)
{
    ac__zt *t = state;
    char endpoint[300], mon[64];
    void *d = zmq_socket(t->zctx, ZMQ_DEALER);
    if (!d)
        return "cannot open a connection to it (no socket)";
    const ac_node_options *o = t->o;
    ac__zt_set_int(d, ZMQ_LINGER, 0);
    ac__zt_set_int(d, ZMQ_SNDHWM, (int)(o->max_queue > INT32_MAX ? INT32_MAX : o->max_queue));
    ac__zt_set_int(d, ZMQ_HEARTBEAT_IVL, o->heartbeat_ivl_ms);
    ac__zt_set_int(d, ZMQ_HEARTBEAT_TIMEOUT, o->heartbeat_timeout_ms);
    ac__zt_set_int(d, ZMQ_HEARTBEAT_TTL, o->heartbeat_timeout_ms);
    ac__zt_set_int(d, ZMQ_RECONNECT_IVL, -1); /* a lost connection is a lost peer */
    int64_t maxmsg = (int64_t)o->max_frame;
    zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(d, ZMQ_ROUTING_ID, &t->incarnation, sizeof t->incarnation);
    ac__zt_dealer_curve(t, d);
    /* A name of its own per DEALER: a peer's next one (after a refused
     * connection) must not meet the last one's endpoint still bound. */
    snprintf(mon, sizeof mon, "inproc://ac-monitor-%016" PRIx64 "-%" PRIu64, t->incarnation,
             ++t->dials);
    if (zmq_socket_monitor(d, mon,
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
        zmq_close(d);
        return "cannot open a connection to it (no monitor)";
    }
    void *m = zmq_socket(t->zctx, ZMQ_PAIR);
    if (!m || zmq_connect(m, mon) != 0) {
        close_monitored(d, m);
        return "cannot open a connection to it (no monitor)";
    }
    snprintf(endpoint, sizeof endpoint, "tcp://%s", address);
    if (zmq_connect(d, endpoint) != 0) {
        close_monitored(d, m);
        return "cannot open a connection to it (not an address ZeroMQ can dial)";
    }
    ac__conn *c = ac__calloc(1, sizeof *c);
    if (!c) {
        close_monitored(d, m);
        return "cannot open a connection to it (out of memory)";
    }
    c->dealer = d;
    c->monitor = m;
    c->peer = p;
    c->index = t->conn_count;
    t->conns[t->conn_count++] = c;
    *out = c;
    return NULL;
}

static void zt_close(void *state, ac__conn *c)
{
    ac__zt *t = state;
    close_monitored(c->dealer, c->monitor);
    c->dealer = c->monitor = NULL;
    c->closed = true;
    size_t i = c->index; /* out of the connections, the last one in its place */
    t->conns[i] = t->conns[--t->conn_count];
    t->conns[i]->index = i;
    c->dead_next = t->dead; /* a poll may still name it */
    t->dead = c;
}

static ac__send_result zt_send(void *state, ac__conn *c, const ac__out *first, size_t n,
                               size_t bytes)
{
    (void)state;
    int rc;
    if (n == 1) {
        rc = zmq_send(c->dealer, first->buf, first->len, ZMQ_DONTWAIT);
    } else {
        zmq_msg_t m;
        if (zmq_msg_init_size(&m, bytes) != 0) {
            c->blocked = true; /* out of memory: try again later */
            return AC__SEND_FULL;
        }
        uint8_t *at = zmq_msg_data(&m);
        const ac__out *o = first;
        for (size_t k = 0; k < n; k++) {
            memcpy(at, o->buf, o->len);
            at += o->len;
            o = atomic_load_explicit(&o->next, memory_order_relaxed);
        }
        rc = zmq_msg_send(&m, c->dealer, ZMQ_DONTWAIT);
        if (rc < 0)
            zmq_msg_close(&m);
    }
    ac__hop(AC__HOP_SENT);
    if (rc < 0 && zmq_errno() == EAGAIN) {
        c->blocked = true;
        return AC__SEND_FULL;
    }
    c->blocked = false;
    return rc >= 0 ? AC__SEND_OK : AC__SEND_DROPPED;
}

static void zt_send_last(void *state, ac__conn *c, const uint8_t *buf, size_t len)
{
    (void)state;
    ac__zt_set_int(c->dealer, ZMQ_LINGER, 100);
    zmq_send(c->dealer, buf, len, ZMQ_DONTWAIT);
}

/* Events of one DEALER: each but a connection made ends with the
 * connection closed by the node, or still to be. */
static void zt_poll_conn(void *state, ac__conn *c)
{
    ac__zt *t = state;
    while (!c->closed) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->monitor, ZMQ_DONTWAIT) < 0) {
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
            zmq_msg_recv(&addr, c->monitor, 0);
            zmq_msg_close(&addr);
        }
        switch (event) {
        case ZMQ_EVENT_CONNECTED:
            c->connected = true;
            ac__node_conn_made(t->node, c->peer);
            break;
        case ZMQ_EVENT_CLOSED: /* before any connection: refused, never retried */
            if (!c->connected) {
                ac__node_conn_refused(t->node, c->peer);
                return;
            }
            break;
        case ZMQ_EVENT_DISCONNECTED:
            ac__node_conn_lost(t->node, c->peer, "its connection dropped (or its heartbeats stopped)");
            return;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
            ac__node_conn_lost(t->node, c->peer, "it refused this node's key");
            return;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: {
            char why[96];
            snprintf(why, sizeof why, "the handshake with it failed (%s)",
                     event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ? strerror((int)value) : "protocol");
            ac__node_conn_lost(t->node, c->peer, why);
            return;
        }
        default:
            break;
        }
    }
}

/* ---- what arrives ---------------------------------------------------------- */

/* Take what waits on the ROUTER, at most `budget` messages. */
static size_t drain_in(ac__zt *t, size_t budget)
{
    size_t n = 0;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (n < budget) {
        if (zmq_msg_recv(&id, t->router, ZMQ_DONTWAIT) < 0)
            break;
        n++; /* a message without a body costs the budget too */
        if (!zmq_msg_more(&id) || zmq_msg_recv(&body, t->router, ZMQ_DONTWAIT) < 0)
            continue;
        /* Nodes send one part per message: one of several is not theirs.
         * Drop it whole, reading each extra part once (a message's parts
         * arrive together, so a failed receive ends it). */
        if (zmq_msg_more(&body)) {
            ac__node_bad_input(t->node, "dropped a message of several parts (nodes send one)");
            bool more = true;
            while (more) {
                zmq_msg_t extra;
                zmq_msg_init(&extra);
                more = zmq_msg_recv(&extra, t->router, ZMQ_DONTWAIT) >= 0 &&
                       zmq_msg_more(&extra);
                zmq_msg_close(&extra);
            }
            continue;
        }
        ac__hop(AC__HOP_RECEIVED);
        ac__node_frames_in(t->node, zmq_msg_data(&id), zmq_msg_size(&id), zmq_msg_data(&body),
                           zmq_msg_size(&body));
        ac__hop(AC__HOP_HANDLED);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return n;
}

static size_t zt_drain(void *state, size_t budget)
{
    ac__zt *t = state;
    size_t n = drain_in(t, budget);
    if (t->zap)
        ac__zt_drain_zap(t);
    return n;
}

static bool zt_readable(void *state)
{
    ac__zt *t = state;
    int events = 0;
    size_t len = sizeof events;
    return zmq_getsockopt(t->router, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN);
}

/* Poll: the ROUTER, the wake-up, ZAP, every DEALER's monitor, and the
 * DEALERs a send found full. */
static void zt_wait(void *state, long timeout_ms)
{
    ac__zt *t = state;
    zmq_pollitem_t *items = t->items;
    ac__conn **owners = t->owners;
    int n = 0;
    items[n++] = (zmq_pollitem_t){.socket = t->router, .events = ZMQ_POLLIN};
    items[n++] = (zmq_pollitem_t){.fd = t->wake_fd, .events = ZMQ_POLLIN};
    if (t->zap)
        items[n++] = (zmq_pollitem_t){.socket = t->zap, .events = ZMQ_POLLIN};
    int fixed = n;
    for (size_t i = 0; i < t->conn_count; i++) {
        ac__conn *c = t->conns[i];
        owners[n] = c;
        items[n++] = (zmq_pollitem_t){.socket = c->monitor, .events = ZMQ_POLLIN};
        if (c->blocked) {
            owners[n] = c;
            items[n++] = (zmq_pollitem_t){.socket = c->dealer, .events = ZMQ_POLLOUT};
        }
    }
    zmq_poll(items, n, timeout_ms);
    if (items[1].revents & ZMQ_POLLIN) {
        uint64_t v;
        ssize_t r = read(t->wake_fd, &v, sizeof v);
        (void)r;
    }
    for (int i = fixed; i < n; i++) {
        /* A connection closed meanwhile (its peer lost) is skipped. */
        ac__conn *c = owners[i];
        if ((items[i].revents & ZMQ_POLLIN) && !c->closed)
            zt_poll_conn(t, c);
        if ((items[i].revents & ZMQ_POLLOUT) && !c->closed) {
            c->blocked = false;
            ac__node_conn_writable(t->node, c->peer);
        }
    }
    free_dead(t);
}

const ac__transport_ops ac__transport_zmq = {
    .scheme = "tcp",
    .check = zt_check,
    .start = zt_start,
    .dial = zt_dial,
    .send = zt_send,
    .send_last = zt_send_last,
    .close = zt_close,
    .drain = zt_drain,
    .readable = zt_readable,
    .wait = zt_wait,
    .poll_conn = zt_poll_conn,
    .wake = zt_wake,
    .free = zt_free,
};
