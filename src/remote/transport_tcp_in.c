/*
 * The direct TCP transport's listening side (transport_tcp.h): accepted
 * connections, their preface, the records they carry, and the messages
 * handed to the node.
 *
 * Everything a stranger sends is bounded. At most AC__TT_MAX_UNIDENTIFIED
 * connections wait for their preface at once (the oldest is closed for a
 * new one), each for at most connect_timeout_ms; at most max_peers + that
 * many are open in all (beyond, a new one is closed at once). A preface
 * that is not ours, a record longer than the node's largest message, or
 * a connection that sends nothing for the time to live its preface named
 * is closed; what was not a node's is counted as bad input. A read
 * buffer holds at most one record beyond what was handed on.
 *
 * The descriptors are in their own epoll set (ep_in), which the wait's
 * set holds: `readable` asks it without a wait, `drain` collects its
 * events and reads only connections marked ready, a few messages each in
 * turn, so that one busy dialler does not starve the others. Closing
 * moves a connection to a list freed at the end of the drain, since the
 * ready list may still name it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/hop_trace.h"
#include "remote/transport_tcp.h"

#define PER_TURN 32 /* messages of one connection before the next one's */

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void in_close(ac__tt *t, ac__tt_in *c)
{
    if (c->closed)
        return;
    c->closed = true;
    epoll_ctl(t->ep_in, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (!c->identified)
        t->unidentified--;
    size_t i = c->index; /* out of the connections, the last one in its place */
    t->ins[i] = t->ins[--t->in_count];
    t->ins[i]->index = i;
    c->dead_next = t->dead_in; /* the ready list may still name it */
    t->dead_in = c;
}

static void in_reject(ac__tt *t, ac__tt_in *c, const char *what)
{
    ac__node_bad_input(t->node, what);
    in_close(t, c);
}

void ac__tt_in_free_dead(ac__tt *t)
{
    size_t kept = 0; /* the ready list first: it may name the closed */
    for (size_t i = 0; i < t->ready_count; i++)
        if (!t->ready[i]->closed)
            t->ready[kept++] = t->ready[i];
    t->ready_count = kept;
    while (t->dead_in) {
        ac__tt_in *c = t->dead_in;
        t->dead_in = c->dead_next;
        free(c->in.data);
        free(c);
    }
}

void ac__tt_in_close_all(ac__tt *t)
{
    while (t->in_count)
        in_close(t, t->ins[t->in_count - 1]);
    t->ready_count = 0;
    ac__tt_in_free_dead(t);
}

static void mark_ready(ac__tt *t, ac__tt_in *c)
{
    /* A full list (closed ones not yet taken out): the level-triggered
     * set names c again at the next turn. */
    if (!c->ready && !c->closed && t->ready_count < t->ready_cap) {
        c->ready = true;
        t->ready[t->ready_count++] = c;
    }
}

/* ---- accepting --------------------------------------------------------------- */

static ac__tt_in *oldest_unidentified(ac__tt *t)
{
    ac__tt_in *old = NULL;
    for (size_t i = 0; i < t->in_count; i++)
        if (!t->ins[i]->identified && (!old || t->ins[i]->accepted_ns < old->accepted_ns))
            old = t->ins[i];
    return old;
}

static void accept_one(ac__tt *t, int fd)
{
    if (t->in_count == t->in_cap) { /* max_peers + the unidentified: no more */
        close(fd);
        ac__node_bad_input(t->node, "closed a connection: as many are open as max_peers allows");
        return;
    }
    if (t->unidentified >= AC__TT_MAX_UNIDENTIFIED)
        in_reject(t, oldest_unidentified(t),
                  "closed a connection that sent no preface to make room for a new one");
    ac__tt_in *c = ac__calloc(1, sizeof *c);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    if (!c || epoll_ctl(t->ep_in, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(c);
        close(fd);
        return;
    }
    c->fd = fd;
    c->accepted_ns = c->last_rx_ns = ac__tt_now_ns();
    c->index = t->in_count;
    t->ins[t->in_count++] = c;
    t->unidentified++;
    mark_ready(t, c); /* a dialler's preface comes with its connection: look now */
    if (t->next_timer_ns > c->accepted_ns + (int64_t)t->o->connect_timeout_ms * 1000000ll)
        t->next_timer_ns = c->accepted_ns + (int64_t)t->o->connect_timeout_ms * 1000000ll;
}

/* Out of descriptors (or memory), the listening socket stays readable:
 * it leaves the set for a while rather than wake the wait at once, again
 * and again, and the backlog waits. */
#define ACCEPT_PAUSE_NS 100000000ll

static void accept_pause(ac__tt *t)
{
    epoll_ctl(t->ep_in, EPOLL_CTL_DEL, t->listen_fd, NULL);
    t->accept_paused_until = ac__tt_now_ns() + ACCEPT_PAUSE_NS;
    if (t->accept_paused_until < t->next_timer_ns)
        t->next_timer_ns = t->accept_paused_until;
    ac__node_bad_input(t->node, "cannot accept connections for now (out of descriptors)");
}

static void accept_all(ac__tt *t)
{
    for (int k = 0; k < 64; k++) { /* a burst at a time: the rest at the next turn */
        int fd = accept4(t->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            accept_one(t, fd);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            accept_pause(t);
        return; /* EAGAIN, or a connection gone before it was taken */
    }
}

/* ---- records ------------------------------------------------------------------- */

static bool take_preface(ac__tt *t, ac__tt_in *c)
{
    const uint8_t *p = c->in.data + c->in.off;
    if (memcmp(p, AC__TT_MAGIC, 4) != 0 || p[4] != AC__TT_VERSION) {
        in_reject(t, c, "closed a connection whose preface is not a node's (or of another version)");
        return false;
    }
    /* Twice what the dialler named: the dialler judges liveness itself;
     * this only reclaims what a vanished one left, and must not cut a
     * dialler whose thread was kept off its core a moment too long. */
    uint32_t ttl = get_be32(p + 8);
    c->ttl_ns = 2 * (int64_t)ttl * 1000000ll;
    memcpy(c->id, p + 12, sizeof c->id);
    c->in.off += AC__TT_PREFACE;
    c->identified = true;
    t->unidentified--;
    if (c->ttl_ns && c->last_rx_ns + c->ttl_ns < t->next_timer_ns)
        t->next_timer_ns = c->last_rx_ns + c->ttl_ns; /* the wait looks then */
    return true;
}

/* One answer for the heartbeats of one read, however many it held. */
static void answer_heartbeat(ac__tt_in *c)
{
    static const uint8_t pong[AC__TT_HEADER];
    /* Unsent (the dialler does not read): its own heartbeat times out. */
    ssize_t n = send(c->fd, pong, sizeof pong, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
}

/* Hand on the complete records in c's buffer, at most `budget`
 * messages, heartbeats counted (so that a flood of them ends a turn
 * too); -1 when the connection was closed. */
static long take_records(ac__tt *t, ac__tt_in *c, size_t budget)
{
    long n = 0;
    bool beat = false;
    ac__tt_buf *b = &c->in;
    if (!c->identified) {
        if (b->len - b->off < AC__TT_PREFACE)
            return 0;
        if (!take_preface(t, c))
            return -1;
    }
    while ((size_t)n < budget && b->len - b->off >= AC__TT_HEADER) {
        uint32_t len = get_be32(b->data + b->off);
        if (len > t->max_msg) {
            char why[120];
            snprintf(why, sizeof why, "closed a connection that sent a message of %u bytes "
                     "(at most %zu)", len, t->max_msg);
            in_reject(t, c, why);
            return -1;
        }
        if (b->len - b->off < AC__TT_HEADER + (size_t)len)
            break;
        const uint8_t *msg = b->data + b->off + AC__TT_HEADER;
        b->off += AC__TT_HEADER + (size_t)len;
        n++;
        if (len == 0) {
            beat = true;
            continue;
        }
        ac__hop(AC__HOP_RECEIVED);
        ac__node_frames_in(t->node, c->id, sizeof c->id, msg, len);
        ac__hop(AC__HOP_HANDLED);
    }
    if (beat)
        answer_heartbeat(c);
    return n;
}

/* Room to read into: what was handed on moved out, the buffer grown to
 * hold the record in progress whole (bounded by max_msg) or given back
 * when a big one is done. False when out of memory. */
static bool make_room(ac__tt *t, ac__tt_buf *b)
{
    size_t have = b->len - b->off;
    if (b->off) {
        memmove(b->data, b->data + b->off, have);
        b->off = 0;
        b->len = have;
    }
    size_t need = AC__TT_READ_BUF;
    if (have >= AC__TT_HEADER) {
        size_t rec = AC__TT_HEADER + (size_t)get_be32(b->data);
        if (rec > need && rec <= AC__TT_HEADER + t->max_msg)
            need = rec;
    }
    if (b->cap > need && b->cap > AC__TT_READ_BUF && have <= need) {
        uint8_t *smaller = realloc(b->data, need);
        if (smaller)
            b->data = smaller, b->cap = need;
    }
    return b->cap >= need || ac__tt_buf_reserve(b, need - b->len);
}

/* Read what c holds, handing on at most `budget` messages; how many.
 * It stays ready while there may be more. */
static size_t pump(ac__tt *t, ac__tt_in *c, size_t budget)
{
    size_t done = 0;
    for (;;) {
        long n = take_records(t, c, budget - done);
        if (n < 0)
            return done;
        done += (size_t)n;
        if (done >= budget || c->closed)
            return done; /* still ready: more may wait */
        if (!make_room(t, &c->in)) {
            in_reject(t, c, "closed a connection: out of memory for its message");
            return done;
        }
        ssize_t r = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, MSG_DONTWAIT);
        if (r > 0) {
            c->in.len += (size_t)r;
            c->last_rx_ns = ac__tt_now_ns();
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            c->ready = false;
            return done;
        }
        /* EOF or a reset: a dialler gone (killed, closed); bad input only
         * when it left a record (or its preface) half sent. */
        if (c->in.len > c->in.off)
            ac__node_bad_input(t->node, "a connection closed mid-message");
        in_close(t, c);
        return done;
    }
}

/* ---- drain, readable, timers ----------------------------------------------- */

static void collect(ac__tt *t)
{
    struct epoll_event evs[64];
    int n = epoll_wait(t->ep_in, evs, 64, 0);
    for (int i = 0; i < n; i++) {
        if (evs[i].data.ptr == NULL)
            accept_all(t);
        else
            mark_ready(t, evs[i].data.ptr);
    }
}

size_t ac__tt_in_drain(ac__tt *t, size_t budget)
{
    if (t->draining)
        return 0; /* a callback of this drain's: the ready list is being walked */
    t->draining = true;
    collect(t);
    size_t done = 0;
    /* Round robin over the ready ones, PER_TURN each, until the budget
     * is spent or none is left ready. */
    while (done < budget && t->ready_count) {
        size_t kept = 0;
        for (size_t i = 0; i < t->ready_count; i++) {
            ac__tt_in *c = t->ready[i];
            size_t share = budget - done < PER_TURN ? budget - done : PER_TURN;
            if (!c->closed && c->ready && share)
                done += pump(t, c, share);
            if (!c->closed && c->ready)
                t->ready[kept++] = c;
            else if (!c->closed)
                c->ready = false;
        }
        t->ready_count = kept;
    }
    ac__tt_in_free_dead(t);
    t->draining = false;
    return done;
}

bool ac__tt_in_readable(ac__tt *t)
{
    if (t->ready_count)
        return true;
    struct pollfd p = {.fd = t->ep_in, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

int64_t ac__tt_in_timers(ac__tt *t, int64_t now)
{
    int64_t next = INT64_MAX;
    if (t->accept_paused_until && now >= t->accept_paused_until && t->listen_fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(t->ep_in, EPOLL_CTL_ADD, t->listen_fd, &ev);
        t->accept_paused_until = 0;
    } else if (t->accept_paused_until) {
        next = t->accept_paused_until;
    }
    int64_t preface_ns = (int64_t)t->o->connect_timeout_ms * 1000000ll;
    for (size_t i = 0; i < t->in_count;) {
        ac__tt_in *c = t->ins[i];
        int64_t due = c->identified ? (c->ttl_ns ? c->last_rx_ns + c->ttl_ns : INT64_MAX)
                                    : c->accepted_ns + preface_ns;
        uint8_t peek;
        if (now >= due && c->identified && !c->ready &&
            recv(c->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
            c->last_rx_ns = now; /* not silent: this node has not read it yet */
            due = now + c->ttl_ns;
        }
        if (now >= due) {
            if (c->identified)
                in_close(t, c); /* its dialler went silent: as a time to live ends */
            else
                in_reject(t, c, "closed a connection that sent no preface in time");
            continue; /* the last one took its place */
        }
        if (due < next)
            next = due;
        i++;
    }
    return next;
}
