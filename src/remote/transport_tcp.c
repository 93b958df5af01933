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

#define SCHEME "tcp+direct://"
#define SCHEME_LEN (sizeof SCHEME - 1)
#define MAX_IOV 64
#define LINGER_MS 100 /* how long a last frame may take to leave at stop */

int64_t ac__tt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

bool ac__tt_buf_reserve(ac__tt_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return true;
    if (b->off) { /* what was sent moved out first */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= more)
            return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return false;
    b->data = d;
    b->cap = cap;
    return true;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* ---- addresses, options ------------------------------------------------------ */

/* Split "host:port" (host may be [v6]): host into host (cap bytes, the
 * brackets dropped), port text. */
static bool split_host_port(const char *s, char *host, size_t cap, const char **port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1])
        return false;
    const char *h = s;
    size_t n = (size_t)(colon - s);
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']')
            return false;
        h++, n -= 2;
    }
    if (n >= cap)
        return false;
    memcpy(host, h, n);
    host[n] = '\0';
    *port = colon + 1;
    return true;
}

static bool port_ok(const char *port, bool wild)
{
    if (wild && strcmp(port, "*") == 0)
        return true;
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    return !errno && !*end && *port >= '0' && *port <= '9' && p >= 0 && p <= 65535;
}

static bool loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0;
}

/* The socket address of host:port (numeric, else looked up: at bind, or
 * a dial of a name); false when there is none. */
static bool resolve(const char *host, const char *port, bool passive, struct sockaddr_storage *sa,
                    socklen_t *len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
    struct addrinfo *res = NULL;
    if (strcmp(host, "*") == 0)
        host = "0.0.0.0";
    if (getaddrinfo(host, strcmp(port, "*") == 0 ? "0" : port, &hints, &res) != 0 || !res)
        return false;
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

static ac_status tt_check(const ac_node_options *o)
{
    char host[256];
    const char *port;
    if (strncmp(o->bind, SCHEME, SCHEME_LEN) != 0 ||
        !split_host_port(o->bind + SCHEME_LEN, host, sizeof host, &port))
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" is not "
                                   "tcp+direct://<host>:<port>", o->bind);
    if (!port_ok(port, true))
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" has a bad port", o->bind);
    if (o->curve)
        return ac__fail(AC_EINVAL, "ac_node_start: options.curve is for tcp:// (ZeroMQ) nodes: "
                                   "the tcp+direct:// transport does not encrypt");
    bool wild = strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
    if (wild && !o->advertise)
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" binds every "
                                   "interface: say which address others reach this node "
                                   "at in options.advertise", o->bind);
    if (!loopback(host) && !o->insecure)
        return ac__fail(AC_ESECURITY,
                        "ac_node_start: options.bind \"%.200s\" is not a loopback address and "
                        "the tcp+direct:// transport does not encrypt: traffic would be open to "
                        "the network. Set options.insecure to accept that, or use tcp:// with "
                        "CURVE keys", o->bind);
    char ah[256];
    const char *ap;
    if (o->advertise && (strlen(o->advertise) > 255 || strchr(o->advertise, '/') ||
                         strchr(o->advertise, '@') ||
                         !split_host_port(o->advertise, ah, sizeof ah, &ap) || !port_ok(ap, false)))
        return ac__fail(AC_EINVAL, "ac_node_start: options.advertise \"%.200s\" is not <host>:<port>",
                        o->advertise);
    return AC_OK;
}

/* ---- start, free ------------------------------------------------------------- */

static ac_status bind_listener(ac__tt *t, const ac_node_options *given, char **endpoint,
                               char **address)
{
    char host[256], text[INET6_ADDRSTRLEN], buf[320];
    const char *port;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    split_host_port(given->bind + SCHEME_LEN, host, sizeof host, &port);
    if (!resolve(host, port, true, &sa, &len))
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: no such host", given->bind);
    t->listen_fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (t->listen_fd < 0 ||
        setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(t->listen_fd, (struct sockaddr *)&sa, len) != 0 ||
        listen(t->listen_fd, t->o->backlog) != 0 ||
        getsockname(t->listen_fd, (struct sockaddr *)&sa, &len) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: %s", given->bind,
                        strerror(errno));
    bool v6 = sa.ss_family == AF_INET6;
    const void *in = v6 ? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)&sa)->sin_addr;
    unsigned p = ntohs(v6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                          : ((struct sockaddr_in *)&sa)->sin_port);
    inet_ntop(sa.ss_family, in, text, sizeof text);
    snprintf(buf, sizeof buf, v6 ? SCHEME "[%s]:%u" : SCHEME "%s:%u", text, p);
    *endpoint = ac__strdup(buf);
    *address = ac__strdup(given->advertise ? given->advertise : buf + SCHEME_LEN);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(t->ep_in, EPOLL_CTL_ADD, t->listen_fd, &ev) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: %s", strerror(errno));
    if (!*endpoint || !*address)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    return AC_OK;
}

static ac_status tt_start(const ac__transport_start *s, void **state, char **endpoint,
                          char **address)
{
    ac__tt *t = ac__calloc(1, sizeof *t);
    if (!t)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    *state = t;
    t->node = s->node;
    t->o = s->options;
    t->incarnation = s->incarnation;
    t->ep = t->ep_in = t->wake_fd = t->listen_fd = -1;
    t->next_timer_ns = INT64_MAX;
    /* A message of several frames may be bigger than one frame may. */
    t->max_msg = t->o->max_frame > AC__WIRE_BATCH_MAX ? t->o->max_frame : AC__WIRE_BATCH_MAX;
    t->in_cap = t->o->max_peers + AC__TT_MAX_UNIDENTIFIED;
    t->ready_cap = t->in_cap;
    t->ins = ac__calloc(t->in_cap, sizeof *t->ins);
    t->ready = ac__calloc(t->ready_cap, sizeof *t->ready);
    if (!t->ins || !t->ready)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    t->ep_in = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.ptr = &t->wake_fd};
    struct epoll_event in = {.events = EPOLLIN, .data.ptr = &t->ep_in};
    if (t->wake_fd < 0 || t->ep < 0 || t->ep_in < 0 ||
        epoll_ctl(t->ep, EPOLL_CTL_ADD, t->wake_fd, &wake) != 0 ||
        epoll_ctl(t->ep, EPOLL_CTL_ADD, t->ep_in, &in) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: %s", strerror(errno));
    return bind_listener(t, s->given, endpoint, address);
}

static void free_dead(ac__tt *t)
{
    while (t->dead) {
        ac__conn *c = t->dead;
        t->dead = c->dead_next;
        free(c->out.data);
        free(c);
    }
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

static void tt_stop(void *state)
{
    ac__tt *t = state;
    ac__tt_in_close_all(t);
    if (t->listen_fd >= 0) {
        epoll_ctl(t->ep_in, EPOLL_CTL_DEL, t->listen_fd, NULL);
        close(t->listen_fd);
        t->listen_fd = -1;
    }
}

static void tt_free(void *state)
{
    ac__tt *t = state;
    free_dead(t);
    tt_stop(t);
    close_fd(t->ep);
    close_fd(t->ep_in);
    close_fd(t->wake_fd);
    free(t->conns);
    free(t->ins);
    free(t->ready);
    free(t);
}

static void tt_wake(void *state)
{
    ac__tt *t = state;
    uint64_t one = 1;
    ssize_t n = write(t->wake_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full, so a wake is pending */
}

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
    put_be32(p + 8, (uint32_t)t->o->heartbeat_timeout_ms);
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
    if (!split_host_port(address, host, sizeof host, &port) || !port_ok(port, false) ||
        !resolve(host, port, false, &sa, &len))
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
        close_fd(c->fd);
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
    put_be32(hdr, (uint32_t)bytes);
    size_t sent = write_now(c, hdr, first, n);
    ac__hop(AC__HOP_SENT);
    if (sent == AC__TT_HEADER + bytes)
        return AC__SEND_OK;
    if (!keep(c, hdr, first, n, sent)) {
        c->blocked = true; /* out of memory: try again later */
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
    put_be32(hdr, (uint32_t)len);
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
        lost(t, c, n < 0 ? errno : 0, n < 0 ? "failed" : "was closed by the peer");
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
        if (c->connected && now - c->last_rx_ns >= ttl) {
            lost(t, c, 0, "went silent (its heartbeats stopped)");
            if (i < t->conn_count && t->conns[i] == c)
                i++; /* not closed (yet): the node decides */
            continue;
        }
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
    free_dead(t);
    ac__tt_in_free_dead(t);
}

const ac__transport_ops ac__transport_tcp = {
    .scheme = "tcp+direct",
    .check = tt_check,
    .start = tt_start,
    .dial = tt_dial,
    .send = tt_send,
    .send_last = tt_send_last,
    .close = tt_close,
    .drain = tt_drain,
    .readable = tt_readable,
    .wait = tt_wait,
    .poll_conn = tt_poll_conn,
    .stop = tt_stop,
    .wake = tt_wake,
    .free = tt_free,
};
