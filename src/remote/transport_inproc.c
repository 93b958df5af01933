/*
 * The in-process transport ("inproc://<name>:<port>"; transport.h):
 * nodes of several systems in one process, with the same encoded frames,
 * the same HELLO and incarnation rules and the same losses as over
 * ZeroMQ, and no socket.
 *
 * Addresses. A node bound at inproc://alpha:7 is at "alpha:7"; port 0
 * takes the lowest number not bound under that name, as a TCP port 0
 * takes a free port. The spelling keeps the <host>:<port> form every
 * address rule of the remote and cluster layers expects. A name bound
 * already is refused (AC_EEXIST); a name nothing is bound at refuses a
 * dial, as a closed TCP port does.
 *
 * Model. An endpoint per node, in a register of the process (the
 * namespace of in-process addresses: process-wide by nature, as the
 * kernel's ports are). A dial makes a connection to the endpoint bound
 * there, or a refused one; a send copies the frames into one message on
 * the target's inbox, at most max_queue of them in flight per
 * connection (a DEALER's high-water mark: beyond it the sender keeps the
 * frames until the target has taken some). When a node's thread ends it
 * unbinds: every connection dialled to it is lost, as a dropped TCP
 * connection is, and what its inbox held is dropped.
 *
 * News (made, refused, lost, writable) is posted to the dialling
 * endpoint and handled on its node's thread, in its wait, as a
 * monitor's events are. One lock guards the register, the inboxes, the
 * connections' links and the news; nothing calls the node under it.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/base.h"
#include "remote/transport.h"

enum { NEWS_MADE = 1, NEWS_REFUSED = 2, NEWS_LOST = 4, NEWS_WRITABLE = 8 };

typedef struct ip_ep ip_ep;

/* A message on its way: one or more frames; or the news that `conn`,
 * which the inbox's own node dialled, was lost (after what its target
 * sent before it went, as on a wire). */
typedef struct ip_msg {
    struct ip_msg *next;
    ac__conn *conn;   /* retained: its in-flight count */
    const char *lost; /* NULL: frames */
    uint64_t id;      /* the dialler's incarnation: the routing id */
    size_t len;
    uint8_t data[];
} ip_msg;

struct ac__conn {
    atomic_uint refs; /* the owner's while open, each message in flight, the news list's */
    ip_ep *owner;     /* valid while open */
    ip_ep *target;    /* under the lock; NULL once refused or lost */
    ac__peer *peer;
    struct ac__conn *acc_next, *acc_prev; /* on target->accepted */
    struct ac__conn *news_next;           /* on owner->news */
    unsigned news;
    const char *lost_why;
    size_t inflight, hwm;
    bool open;      /* under the lock: closed by its owner when false */
    bool want_room; /* a send found it full */
    bool closed;    /* the owner thread's copy of !open */
};

struct ip_ep {
    ip_ep *next; /* in the register */
    char *address;
    ac_node *node;
    uint64_t incarnation;
    size_t hwm;
    bool bound;
    ip_msg *in_head, *in_tail;
    atomic_size_t in_count;
    ac__conn *accepted; /* connections dialled to it */
    ac__conn *news_head, *news_tail;
    bool waiting; /* its thread sleeps in poll: write wake_fd */
    int wake_fd;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static ip_ep *reg;

/* ---- options --------------------------------------------------------------- */

/* "inproc://<name>:<port>": the name's length and the port. */
static bool parse(const char *bind, size_t *name_len, long *port)
{
    if (strncmp(bind, "inproc://", 9) != 0)
        return false;
    const char *name = bind + 9, *colon = strrchr(name, ':');
    if (!colon || colon == name || colon - name > 200)
        return false;
    for (const char *c = name; c < colon; c++)
        if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return false;
    char *end;
    errno = 0;
    *port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || *port < 0 || *port > 65535)
        return false;
    *name_len = (size_t)(colon - name);
    return true;
}

static ac_status ip_check(const ac_node_options *o)
{
    size_t n;
    long port;
    if (!parse(o->bind, &n, &port))
        return ac__fail(AC_EINVAL,
                        "ac_node_start: options.bind \"%.200s\" is not inproc://<name>:<port> (a "
                        "name of letters, digits, '.', '-' and '_'; port 0 takes a free one)",
                        o->bind);
    if (o->curve)
        return ac__fail(AC_EINVAL, "ac_node_start: options.curve is for tcp:// nodes: an "
                                   "inproc:// node's frames never leave the process");
    if (o->advertise)
        return ac__fail(AC_EINVAL, "ac_node_start: options.advertise is for tcp:// nodes: an "
                                   "inproc:// node is reached at its bound name");
    return AC_OK;
}

/* ---- the register, news ---------------------------------------------------- */

static ip_ep *bound_at(const char *address)
{
    for (ip_ep *e = reg; e; e = e->next)
        if (strcmp(e->address, address) == 0)
            return e;
    return NULL;
}

/* Under the lock. */
static void wake_locked(ip_ep *e)
{
    if (e->waiting) {
        e->waiting = false;
        uint64_t one = 1;
        ssize_t n = write(e->wake_fd, &one, sizeof one);
        (void)n;
    }
}

static void conn_release(ac__conn *c)
{
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        free(c);
}

/* Under the lock: news for an open connection's owner. */
static void post(ac__conn *c, unsigned news)
{
    if (!c->open)
        return;
    if (!c->news) {
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
        c->news_next = NULL;
        if (c->owner->news_tail)
            c->owner->news_tail->news_next = c;
        else
            c->owner->news_head = c;
        c->owner->news_tail = c;
    }
    c->news |= news;
    wake_locked(c->owner);
}

/* Under the lock: c off its owner's news (the list's reference
 * returned to the caller when it was there). */
static bool unpost(ac__conn *c)
{
    if (!c->news)
        return false;
    ip_ep *e = c->owner;
    ac__conn *prev = NULL;
    for (ac__conn *q = e->news_head; q; prev = q, q = q->news_next)
        if (q == c) {
            if (prev)
                prev->news_next = c->news_next;
            else
                e->news_head = c->news_next;
            if (e->news_tail == c)
                e->news_tail = prev;
            break;
        }
    c->news = 0;
    return true;
}

/* Under the lock: m at the end of e's inbox. */
static void inbox_put(ip_ep *e, ip_msg *m)
{
    if (e->in_tail)
        e->in_tail->next = m;
    else
        e->in_head = m;
    e->in_tail = m;
    atomic_fetch_add_explicit(&e->in_count, 1, memory_order_relaxed);
    wake_locked(e);
}

/* Under the lock: c (open) is lost; its owner hears it after what its
 * inbox holds already. */
static void lose(ac__conn *c, const char *why)
{
    ip_msg *m = ac__malloc(sizeof *m);
    if (!m) { /* out of memory: as news, at once */
        c->lost_why = why;
        post(c, NEWS_LOST);
        return;
    }
    *m = (ip_msg){.conn = c, .lost = why};
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    inbox_put(c->owner, m);
}

static void accepted_unlink(ac__conn *c)
{
    if (c->acc_prev)
        c->acc_prev->acc_next = c->acc_next;
    else
        c->target->accepted = c->acc_next;
    if (c->acc_next)
        c->acc_next->acc_prev = c->acc_prev;
    c->acc_next = c->acc_prev = NULL;
    c->target = NULL;
}

/* Out of the register: every connection dialled here is lost, what the
 * inbox holds dropped. */
static void unbind(ip_ep *e)
{
    pthread_mutex_lock(&reg_lock);
    if (!e->bound) {
        pthread_mutex_unlock(&reg_lock);
        return;
    }
    e->bound = false;
    for (ip_ep **pp = &reg; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    while (e->accepted) {
        ac__conn *c = e->accepted;
        accepted_unlink(c);
        if (c->open)
            lose(c, "its connection dropped (its node stopped)");
    }
    ip_msg *m = e->in_head;
    e->in_head = e->in_tail = NULL;
    atomic_store_explicit(&e->in_count, 0, memory_order_relaxed);
    pthread_mutex_unlock(&reg_lock);
    while (m) {
        ip_msg *next = m->next;
        conn_release(m->conn);
        free(m);
        m = next;
    }
}

/* ---- start, stop, free ----------------------------------------------------- */

static ac_status ip_start(const ac__transport_start *s, void **state, char **endpoint,
                          char **address)
{
    size_t n;
    long port;
    const char *bind = s->given->bind;
    parse(bind, &n, &port);
    ip_ep *e = ac__calloc(1, sizeof *e);
    if (!e)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    *state = e;
    e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->node = s->node;
    e->incarnation = s->incarnation;
    e->hwm = s->options->max_queue;
    char addr[256];
    if (e->wake_fd < 0)
        return ac__fail(AC_ESYS, "ac_node_start: %s", strerror(errno));
    pthread_mutex_lock(&reg_lock);
    for (long p = port ? port : 1; p <= 65535; p++) {
        snprintf(addr, sizeof addr, "%.*s:%ld", (int)n, bind + 9, p);
        if (!bound_at(addr) || port)
            break;
    }
    if (bound_at(addr)) {
        pthread_mutex_unlock(&reg_lock);
        return ac__fail(AC_EEXIST, "ac_node_start: cannot bind %.200s: another node of this "
                                   "process is bound there",
                        port ? bind : "a free port");
    }
    e->address = ac__strdup(addr);
    size_t elen = strlen(addr) + 10;
    *endpoint = e->address ? ac__malloc(elen) : NULL;
    *address = *endpoint ? ac__strdup(addr) : NULL;
    if (!*address) {
        pthread_mutex_unlock(&reg_lock);
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    }
    snprintf(*endpoint, elen, "inproc://%s", addr);
    e->bound = true;
    e->next = reg;
    reg = e;
    pthread_mutex_unlock(&reg_lock);
    return AC_OK;
}

static void ip_stop(void *state) { unbind(state); }

static void ip_free(void *state)
{
    ip_ep *e = state;
    unbind(e);
    /* Every connection it dialled is closed (off its news list). */
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    free(e->address);
    free(e);
}

static void ip_wake(void *state)
{
    ip_ep *e = state;
    uint64_t one = 1;
    ssize_t n = write(e->wake_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full, so a wake is pending */
}

/* ---- connections ------------------------------------------------------------ */

static const char *ip_dial(void *state, ac__peer *p, const char *address, ac__conn **out)
{
    ip_ep *e = state;
    ac__conn *c = ac__calloc(1, sizeof *c);
    if (!c)
        return "cannot open a connection to it (out of memory)";
    atomic_init(&c->refs, 1);
    c->owner = e;
    c->peer = p;
    c->hwm = e->hwm;
    c->open = true;
    pthread_mutex_lock(&reg_lock);
    ip_ep *t = bound_at(address);
    if (t) {
        c->target = t;
        c->acc_next = t->accepted;
        if (t->accepted)
            t->accepted->acc_prev = c;
        t->accepted = c;
    }
    post(c, t ? NEWS_MADE : NEWS_REFUSED);
    pthread_mutex_unlock(&reg_lock);
    *out = c;
    return NULL;
}

static void ip_close(void *state, ac__conn *c)
{
    (void)state;
    pthread_mutex_lock(&reg_lock);
    if (c->target)
        accepted_unlink(c);
    bool listed = unpost(c);
    c->open = false;
    pthread_mutex_unlock(&reg_lock);
    c->closed = true;
    if (listed)
        conn_release(c);
    conn_release(c); /* the owner's */
}

/* One message of n frames onto the target's inbox (`full`: at most hwm
 * in flight). */
static ac__send_result put(ac__conn *c, const ac__out *first, size_t n, size_t bytes, bool full)
{
    ip_msg *m = ac__malloc(sizeof *m + bytes);
    if (!m)
        return AC__SEND_FULL; /* out of memory: try again later */
    m->next = NULL;
    m->conn = c;
    m->lost = NULL;
    m->len = bytes;
    uint8_t *at = m->data;
    const ac__out *o = first;
    for (size_t k = 0; k < n; k++) {
        memcpy(at, o->buf, o->len);
        at += o->len;
        o = atomic_load_explicit(&o->next, memory_order_relaxed);
    }
    pthread_mutex_lock(&reg_lock);
    ip_ep *t = c->target;
    if (!t) { /* lost: into the void, as on a dropped connection */
        pthread_mutex_unlock(&reg_lock);
        free(m);
        return AC__SEND_OK;
    }
    if (full && c->inflight >= c->hwm) {
        c->want_room = true;
        pthread_mutex_unlock(&reg_lock);
        free(m);
        return AC__SEND_FULL;
    }
    m->id = c->owner->incarnation;
    c->inflight++;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    inbox_put(t, m);
    pthread_mutex_unlock(&reg_lock);
    return AC__SEND_OK;
}

static ac__send_result ip_send(void *state, ac__conn *c, const ac__out *first, size_t n,
                               size_t bytes)
{
    (void)state;
    return put(c, first, n, bytes, true);
}

static void ip_send_last(void *state, ac__conn *c, const uint8_t *buf, size_t len)
{
    (void)state;
    ac__out o = {.buf = (uint8_t *)buf, .len = len};
    atomic_init(&o.next, NULL);
    (void)put(c, &o, 1, len, false);
}

/* Handle the news of `only` (NULL: of every connection). */
static void handle_news(ip_ep *e, ac__conn *only)
{
    pthread_mutex_lock(&reg_lock);
    ac__conn *list = NULL;
    if (only) {
        unsigned news = only->news;
        if (unpost(only)) {
            only->news = news; /* kept on the connection for the loop below */
            only->news_next = NULL;
            list = only;
        }
    } else {
        list = e->news_head;
        e->news_head = e->news_tail = NULL;
    }
    /* Taken off the lists: each one's bits are read below, once. */
    unsigned bits[64];
    const char *why[64];
    ac__conn *took[64];
    size_t k = 0;
    ac__conn *rest = NULL;
    for (ac__conn *c = list; c; c = c->news_next) {
        if (k == 64) { /* the rest go back, for the next wait */
            rest = c;
            break;
        }
        took[k] = c;
        bits[k] = c->news;
        why[k] = c->lost_why;
        c->news = 0;
        k++;
    }
    if (rest) {
        ac__conn *tail = rest;
        while (tail->news_next)
            tail = tail->news_next;
        tail->news_next = e->news_head;
        if (!e->news_head)
            e->news_tail = tail;
        e->news_head = rest;
    }
    pthread_mutex_unlock(&reg_lock);
    for (size_t i = 0; i < k; i++) {
        ac__conn *c = took[i];
        if (!c->closed && (bits[i] & NEWS_MADE))
            ac__node_conn_made(e->node, c->peer);
        if (!c->closed && (bits[i] & NEWS_REFUSED))
            ac__node_conn_refused(e->node, c->peer);
        if (!c->closed && (bits[i] & NEWS_LOST))
            ac__node_conn_lost(e->node, c->peer, why[i]);
        if (!c->closed && (bits[i] & NEWS_WRITABLE))
            ac__node_conn_writable(e->node, c->peer);
        conn_release(c); /* the list's */
    }
}

static void ip_poll_conn(void *state, ac__conn *c) { handle_news(state, c); }

/* ---- what arrives ---------------------------------------------------------- */

static size_t ip_drain(void *state, size_t budget)
{
    ip_ep *e = state;
    if (!atomic_load_explicit(&e->in_count, memory_order_relaxed))
        return 0;
    pthread_mutex_lock(&reg_lock);
    ip_msg *head = e->in_head, *last = NULL;
    size_t n = 0;
    for (ip_msg *m = head; m && n < budget; m = m->next) {
        ac__conn *c = m->conn;
        if (m->lost) {
            last = m;
            n++;
            continue;
        }
        c->inflight--;
        if (c->want_room && c->inflight < c->hwm) {
            c->want_room = false;
            post(c, NEWS_WRITABLE);
        }
        last = m;
        n++;
    }
    if (last) {
        e->in_head = last->next;
        if (!e->in_head)
            e->in_tail = NULL;
        last->next = NULL;
        atomic_fetch_sub_explicit(&e->in_count, n, memory_order_relaxed);
    } else {
        head = NULL;
    }
    pthread_mutex_unlock(&reg_lock);
    while (head) {
        ip_msg *next = head->next;
        if (!head->lost)
            ac__node_frames_in(e->node, &head->id, sizeof head->id, head->data, head->len);
        else if (!head->conn->closed)
            ac__node_conn_lost(e->node, head->conn->peer, head->lost);
        conn_release(head->conn);
        free(head);
        head = next;
    }
    return n;
}

static bool ip_readable(void *state)
{
    ip_ep *e = state;
    return atomic_load_explicit(&e->in_count, memory_order_relaxed) != 0;
}

static void ip_wait(void *state, long timeout_ms)
{
    ip_ep *e = state;
    pthread_mutex_lock(&reg_lock);
    bool work = e->news_head || e->in_head || timeout_ms == 0;
    e->waiting = !work;
    pthread_mutex_unlock(&reg_lock);
    if (!work) {
        struct pollfd pfd = {.fd = e->wake_fd, .events = POLLIN};
        (void)poll(&pfd, 1, (int)(timeout_ms > 60000 ? 60000 : timeout_ms));
        pthread_mutex_lock(&reg_lock);
        e->waiting = false;
        pthread_mutex_unlock(&reg_lock);
    }
    uint64_t v;
    ssize_t r = read(e->wake_fd, &v, sizeof v);
    (void)r;
    handle_news(e, NULL);
}

const ac__transport_ops ac__transport_inproc = {
    .scheme = "inproc",
    .check = ip_check,
    .start = ip_start,
    .dial = ip_dial,
    .send = ip_send,
    .send_last = ip_send_last,
    .close = ip_close,
    .drain = ip_drain,
    .readable = ip_readable,
    .wait = ip_wait,
    .poll_conn = ip_poll_conn,
    .stop = ip_stop,
    .wake = ip_wake,
    .free = ip_free,
};
