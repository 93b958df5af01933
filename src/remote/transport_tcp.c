/*
 * The direct TCP transport ("tcp+direct://<host>:<port>"; transport.h,
 * transport_tcp.h): the node's transport thread owns plain nonblocking
 * TCP sockets in an epoll set. No I/O thread of a library's own stands
 * between the socket and the node, so a message crosses no thread on
 * either side beyond the node's own (ZeroMQ's I/O threads add a hand-off
 * on each side of every leg). What it gives up: CURVE (there is no
 * encryption; a non-loopback bind needs options.insecure) and ZeroMQ's
 * reconnects and queues of its own, which the node never used.
 *
 * Dialled connections carry this node's frames to a peer, as a DEALER
 * does: a nonblocking connect with the preface queued first, then one
 * record per send, written at once (writev) while the kernel takes it,
 * else kept in an outgoing buffer flushed on EPOLLOUT. The buffer holds
 * at most max_queue messages or AC__TT_MAX_OUT_BYTES, the high-water
 * mark: beyond, a send would block, and the node is told the connection
 * is writable once the buffer has emptied. Liveness: a heartbeat record
 * every heartbeat_ivl_ms, which the peer answers; nothing read back for
 * heartbeat_timeout_ms and the connection is lost (a peer stopped or cut
 * off), as a DEALER's heartbeats with a timeout would. A connect that
 * fails with ECONNREFUSED before it was made is refused (nothing
 * listens); any other failure, a reset or an end of stream is a loss.
 *
 * Here: the dialled connections and the wait. transport_tcp_bind.c: the
 * URL, the options, the listening socket; transport_tcp_in.c: what
 * arrives on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/hop_trace.h"
#include "remote/transport_tcp.h"
#include "remote/wire.h"

#define MAX_IOV 64
#define LINGER_MS 100 /* how long a last frame may take to leave at stop */

/* ---- dialled connections ------------------------------------------------------ */

static void arm_out(ac__tt *t, ac__conn *c, bool want)
{
    if (c->want_out == want)
        return;
    c->want_out = want;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static bool add_conn(ac__tt *t, ac__conn *c)
{
    if (t->conn_count == t->conn_cap) {
        size_t cap = t->conn_cap ? 2 * t->conn_cap : 16;
        ac__conn **more = realloc(t->conns, cap * sizeof *more);
        if (!more)
            return false;
        t->conns = more, t->conn_cap = cap;
    }
    c->index = t->conn_count;
    t->conns[t->conn_count++] = c;
    return true;
}

static void put_preface(ac__tt *t, ac__conn *c)
{
    uint8_t *p = c->out.data + c->out.len;
    memcpy(p, AC__TT_MAGIC, 4);
    p[4] = AC__TT_VERSION, p[5] = p[6] = p[7] = 0;
    ac__tt_put_be32(p + 8, (uint32_t)t->o->heartbeat_timeout_ms);
    memcpy(p + 12, &t->incarnation, 8); /* the routing id, as a DEALER's */
    c->out.len += AC__TT_PREFACE;
}

static const char *tt_dial(void *state, ac__peer *p, const char *address, ac__conn **out)
{
    ac__tt *t = state;
    char host[256];
    const char *port;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (!ac__tt_split_host_port(address, host, sizeof host, &port) || !ac__tt_port_ok(port, false) ||
        !ac__tt_resolve(host, port, false, &sa, &len))
        return "cannot open a connection to it (not an address this node can dial)";
    ac__conn *c = ac__calloc(1, sizeof *c);
    if (!c || !ac__tt_buf_reserve(&c->out, 4096)) {
        free(c);
        return "cannot open a connection to it (out of memory)";
    }
    c->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, rc = -1, err = 0;
    if (c->fd >= 0 && setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0) {
        rc = connect(c->fd, (struct sockaddr *)&sa, len);
        err = rc == 0 ? 0 : errno;
    }
    /* A refusal the kernel gives at once (loopback) is news to report
     * from the wait, as a later one is: the closed socket polls HUP. */
    c->refused_now = err == ECONNREFUSED;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT, .data.ptr = c};
    if ((rc != 0 && err != EINPROGRESS && !c->refused_now) ||
        epoll_ctl(t->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0 || !add_conn(t, c)) {
        if (c->fd >= 0)
            epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
        if (c->fd >= 0)
            close(c->fd);
        free(c->out.data);
        free(c);
        return "cannot open a connection to it (no socket)";
    }
    c->want_out = true;
    c->peer = p;
    put_preface(t, c);
    *out = c;
    return NULL;
}

static void tt_close(void *state, ac__conn *c)
{
    ac__tt *t = state;
    epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->closed = true;
    size_t i = c->index; /* out of the connections, the last one in its place */
    t->conns[i] = t->conns[--t->conn_count];
    t->conns[i]->index = i;
    c->dead_next = t->dead; /* the wait's events may still name it */
    t->dead = c;
}

/* Write what the buffer holds; false on a failure (the connection is
 * lost: the caller tells). */
static bool flush(ac__tt *t, ac__conn *c)
{
    ac__tt_buf *b = &c->out;
    while (b->len > b->off) {
        ssize_t n = send(c->fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0)
            return false;
        b->off += (size_t)n;
        /* The peer takes bytes this connection was backlogged on: it
         * reads (a stopped one's socket fills in moments and takes no
         * more), though a heartbeat's answer may be queued far behind. */
        if (b->len > b->off)
            c->last_rx_ns = ac__tt_now_ns();
    }
    if (b->len == b->off) {
        b->off = b->len = 0;
        c->queued = 0;
    }
    arm_out(t, c, b->len > b->off);
    return true;
}

/* Copy the record (header, then the frames after `skip` bytes of it
 * already sent) into the buffer. */
static bool keep(ac__conn *c, const uint8_t *hdr, const ac__out *first, size_t n, size_t skip)
{
    size_t total = AC__TT_HEADER;
    const ac__out *o = first;
    for (size_t k = 0; k < n; k++, o = atomic_load_explicit(&o->next, memory_order_relaxed))
        total += o->len;
    if (!ac__tt_buf_reserve(&c->out, total - skip))
        return false;
    uint8_t *at = c->out.data + c->out.len;
    size_t pos = 0;
    const uint8_t *src = hdr;
    size_t len = AC__TT_HEADER;
    o = first;
    for (size_t k = 0; k <= n; k++) {
        if (pos + len > skip) {
            size_t from = skip > pos ? skip - pos : 0;
            memcpy(at, src + from, len - from);
            at += len - from;
        }
        pos += len;
        if (k < n) {
            src = o->buf, len = o->len;
            o = atomic_load_explicit(&o->next, memory_order_relaxed);
        }
    }
    c->out.len = (size_t)(at - c->out.data);
    return true;
}

/* Write the record at once while nothing waits ahead of it: how many of
 * its bytes left (0 when it had to wait, or on a failure, which the
 * buffer's next flush meets again). */
static size_t write_now(ac__conn *c, const uint8_t *hdr, const ac__out *first, size_t n)
{
    struct iovec iov[MAX_IOV];
    if (!c->connected || c->out.len > c->out.off || n + 1 > MAX_IOV)
        return 0;
    iov[0] = (struct iovec){.iov_base = (void *)hdr, .iov_len = AC__TT_HEADER};
    const ac__out *o = first;
    for (size_t k = 0; k < n; k++, o = atomic_load_explicit(&o->next, memory_order_relaxed))
        iov[k + 1] = (struct iovec){.iov_base = o->buf, .iov_len = o->len};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n + 1};
    ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    return w > 0 ? (size_t)w : 0;
}

static ac__send_result tt_send(void *state, ac__conn *c, const ac__out *first, size_t n,
                               size_t bytes)
{
    ac__tt *t = state;
    if (bytes > t->max_msg)
        return AC__SEND_DROPPED;
    if (c->queued >= t->o->max_queue || c->out.len - c->out.off >= AC__TT_MAX_OUT_BYTES) {
        c->blocked = true;
        return AC__SEND_FULL;
    }
    uint8_t hdr[AC__TT_HEADER];
    ac__tt_put_be32(hdr, (uint32_t)bytes);
    size_t sent = write_now(c, hdr, first, n);
    ac__hop(AC__HOP_SENT);
    if (sent == AC__TT_HEADER + bytes)
        return AC__SEND_OK;
    bool kept = keep(c, hdr, first, n, sent);
    if (!kept && sent) {
        /* Out of memory with part of a record on the wire: the stream is
         * broken; its end is reported as a loss at the next wait. */
        shutdown(c->fd, SHUT_RDWR);
        return AC__SEND_DROPPED;
    }
    if (!kept) {
        c->blocked = true; /* out of memory: try again when it can be written */
        if (c->connected)
            arm_out(t, c, true);
        return AC__SEND_FULL;
    }
    c->queued++;
    if (c->connected)
        arm_out(t, c, true);
    return AC__SEND_OK;
}

static void tt_send_last(void *state, ac__conn *c, const uint8_t *buf, size_t len)
{
    ac__tt *t = state;
    uint8_t hdr[AC__TT_HEADER];
    ac__tt_put_be32(hdr, (uint32_t)len);
    ac__out one = {.len = len, .buf = (uint8_t *)buf};
    if (!c->connected || len > t->max_msg || !keep(c, hdr, &one, 1, 0))
        return;
    /* Give it LINGER_MS to leave, as a DEALER's linger would. */
    int64_t end = ac__tt_now_ns() + LINGER_MS * 1000000ll;
    while (c->out.len > c->out.off && flush(t, c)) {
        int64_t left = (end - ac__tt_now_ns()) / 1000000ll;
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
    }
}

/* ---- news of a dialled connection ---------------------------------------------- */

static void made(ac__tt *t, ac__conn *c)
{
    c->connected = true;
    c->last_rx_ns = c->last_ping_ns = ac__tt_now_ns();
    int64_t due = c->last_rx_ns + (int64_t)t->o->heartbeat_ivl_ms * 1000000ll;
    if (due < t->next_timer_ns)
        t->next_timer_ns = due;
    ac__node_conn_made(t->node, c->peer);
}

static void lost(ac__tt *t, ac__conn *c, int err, const char *what)
{
    char why[120];
    if (err)
        snprintf(why, sizeof why, "its connection %s (%s)", what, strerror(err));
    else
        snprintf(why, sizeof why, "its connection %s", what);
    ac__node_conn_lost(t->node, c->peer, why);
}

/* Read what came back (heartbeat answers): false when the stream ended
 * or failed (told). */
static bool read_back(ac__tt *t, ac__conn *c)
{
    uint8_t sink[512];
    for (;;) {
        ssize_t n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            c->last_rx_ns = ac__tt_now_ns();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        int err = n < 0 ? errno : 0;
        /* What the peer said before it went (a LEAVE, on its own
         * connection to this node) is heard before its loss. */
        ac__tt_in_drain(t, 256);
        if (!c->closed)
            lost(t, c, err, err ? "failed" : "was closed by the peer");
        return false;
    }
}

/* One connection's events (as epoll names them): each but a connection
 * made or room to write ends with it closed by the node, or still to be. */
static void conn_events(ac__tt *t, ac__conn *c, uint32_t ev)
{
    if (!c->connected) {
        int err = 0;
        socklen_t len = sizeof err;
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == ECONNREFUSED || c->refused_now) {
            ac__node_conn_refused(t->node, c->peer);
            return;
        }
        if (err || (ev & (EPOLLERR | EPOLLHUP))) {
            lost(t, c, err, "could not be made");
            return;
        }
        made(t, c);
        if (c->closed)
            return;
    }
    if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) && !read_back(t, c))
        return;
    if ((ev & EPOLLOUT) || c->out.len > c->out.off) {
        if (!flush(t, c)) {
            lost(t, c, errno, "failed");
            return;
        }
        if (c->blocked && c->out.len == c->out.off) {
            c->blocked = false;
            ac__node_conn_writable(t->node, c->peer);
        }
    }
}

static void tt_poll_conn(void *state, ac__conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLOUT | POLLRDHUP};
    if (c->closed || poll(&p, 1, 0) <= 0)
        return;
    uint32_t ev = (p.revents & POLLIN ? EPOLLIN : 0) | (p.revents & POLLOUT ? EPOLLOUT : 0) |
                  (p.revents & POLLRDHUP ? EPOLLRDHUP : 0) | (p.revents & POLLERR ? EPOLLERR : 0) |
                  (p.revents & POLLHUP ? EPOLLHUP : 0);
    conn_events(state, c, ev);
}

/* Heartbeats due on the dialled connections, and the silent ones lost;
 * returns when the next is due. */
static int64_t conn_timers(ac__tt *t, int64_t now)
{
    static const uint8_t beat[AC__TT_HEADER];
    int64_t ivl = (int64_t)t->o->heartbeat_ivl_ms * 1000000ll;
    int64_t ttl = (int64_t)t->o->heartbeat_timeout_ms * 1000000ll;
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < t->conn_count;) {
        ac__conn *c = t->conns[i];
        /* Answers that came while this thread was kept off its core
         * count: read them before judging. */
        if (c->connected && now - c->last_rx_ns >= ttl && read_back(t, c) &&
            now - c->last_rx_ns >= ttl) {
            lost(t, c, 0, "went silent (its heartbeats stopped)");
            if (i < t->conn_count && t->conns[i] == c)
                i++; /* not closed (yet): the node decides */
            continue;
        }
        if (c->closed || !(i < t->conn_count && t->conns[i] == c))
            continue; /* its stream ended (told): the last one took its place */
        if (c->connected && now - c->last_ping_ns >= ivl) {
            c->last_ping_ns = now;
            ac__out none = {.len = 0};
            if (keep(c, beat, &none, 0, 0) && !flush(t, c)) {
                lost(t, c, errno, "failed");
                if (i < t->conn_count && t->conns[i] == c)
                    i++;
                continue;
            }
        }
        if (c->connected) {
            int64_t due = c->last_ping_ns + ivl < c->last_rx_ns + ttl ? c->last_ping_ns + ivl
                                                                     : c->last_rx_ns + ttl;
            next = due < next ? due : next;
        }
        i++;
    }
    return next;
}

/* ---- the loop's ops ---------------------------------------------------------- */

static size_t tt_drain(void *state, size_t budget)
{
    return ac__tt_in_drain(state, budget);
}

static bool tt_readable(void *state) { return ac__tt_in_readable(state); }

static void timers(ac__tt *t)
{
    int64_t now = ac__tt_now_ns();
    if (now < t->next_timer_ns)
        return;
    int64_t a = conn_timers(t, now), b = ac__tt_in_timers(t, now);
    t->next_timer_ns = a < b ? a : b;
}

static void tt_wait(void *state, long timeout_ms)
{
    ac__tt *t = state;
    timers(t);
    if (t->next_timer_ns != INT64_MAX && timeout_ms) {
        int64_t left = (t->next_timer_ns - ac__tt_now_ns()) / 1000000ll + 1;
        if (left < timeout_ms || timeout_ms < 0)
            timeout_ms = left < 0 ? 0 : left;
    }
    struct epoll_event evs[64];
    int n = epoll_wait(t->ep, evs, 64, (int)timeout_ms);
    for (int i = 0; i < n; i++) {
        void *p = evs[i].data.ptr;
        if (p == &t->wake_fd) {
            uint64_t v;
            ssize_t r = read(t->wake_fd, &v, sizeof v);
            (void)r;
        } else if (p != &t->ep_in && !((ac__conn *)p)->closed) {
            conn_events(t, p, evs[i].events); /* closed meanwhile (its peer lost): skipped */
        }
    }
    timers(t);
    ac__tt_free_dead(t);
    ac__tt_in_free_dead(t);
}

const ac__transport_ops ac__transport_tcp = {
    .scheme = "tcp+direct",
    .check = ac__tt_check,
    .start = ac__tt_start,
    .dial = tt_dial,
    .send = tt_send,
    .send_last = tt_send_last,
    .close = tt_close,
    .drain = tt_drain,
    .readable = tt_readable,
    .wait = tt_wait,
    .poll_conn = tt_poll_conn,
    .stop = ac__tt_stop,
    .wake = ac__tt_wake,
    .free = ac__tt_free,
};
