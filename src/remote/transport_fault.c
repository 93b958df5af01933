/*
 * The fault layer's transport (fault.h): the inner transport's ops, with
 * a link's rule applied on the way.
 *
 * Out. `send` looks at the rule of the connection's link (its copy,
 * refreshed when the generation moved): a clean link with nothing held
 * calls the inner send at once (its backpressure intact); otherwise each
 * frame is dropped (its share), swallowed (a blackhole) or copied into
 * the link's FIFO with the time it is due: now + delay ± jitter, never
 * before the frame ahead of it (a link does not reorder), and under a
 * rate never before the link has had time to carry the bytes ahead. In.
 * The node offers each message that arrives (ac__fault_in) and the same
 * is done per message on a queue per peer address.
 *
 * Release. The node's loop calls `drain` and `readable` every round and
 * sleeps in `wait`: the layer releases what is due there (out: in runs
 * through the inner send, kept when it would block; in: to the node's
 * dispatch), and `wait` sleeps no longer than the next due time. Nothing
 * sleeps in the layer.
 *
 * A blackhole stops everything, the transport's own heartbeats included
 * (they run below this layer, so their silence is played here): once a
 * heartbeat timeout has passed with a link blackholed either way, the
 * connection is reported lost, as the inner transport would.
 *
 * Memory. A link holds at most its rule's max_queue_bytes; frames beyond
 * are dropped and counted. A connection's frames go with it when it
 * closes (a link that goes down loses what was on it).
 */
#include <stdlib.h>
#include <string.h>

#include "remote/fault.h"
#include "remote/node_internal.h"

/* A frame (out) or message (in) held on a link. */
typedef struct held {
    ac__out out;     /* out.next chains the queue; out.buf is data */
    int64_t due_ns;
    uint64_t id;     /* in: the dialler's routing id */
    uint8_t data[];
} held;

typedef struct flink {
    ac_link_fault f;
    held *head, *tail;
    size_t bytes;
    int64_t last_due_ns, rate_free_ns;
} flink;

struct ac__conn {
    void *inner; /* the inner transport's connection */
    ac__peer *peer;
    char *address;
    unsigned gen;
    flink out;
    bool in_blackhole;
    int64_t silent_since_ns; /* a blackhole either way began (0: none) */
    bool lost_told;
    struct ac__conn *next, *prev;
};

typedef struct in_link {
    struct in_link *next;
    char address[256];
    unsigned gen;
    flink l;
} in_link;

typedef struct {
    char peer[256];
    ac_link_fault f[2]; /* out, in */
} rule;

struct ac__fault {
    const ac__transport_ops *inner;
    void *istate;
    ac_node *node;
    int64_t heartbeat_timeout_ns;
    /* Any thread, under the lock: the rules; the generation bumped after
     * each change (release; pairs with refresh's acquire). */
    pthread_mutex_t lock;
    rule rules[AC__FAULT_MAX_RULES];
    size_t rule_count;
    atomic_uint gen;
    /* The transport thread's. */
    unsigned seen_gen;
    ac__conn *conns;
    in_link *ins;
    size_t in_count;
    size_t held; /* frames and messages held, every link */
    int64_t next_due_ns; /* the earliest release or loss (0: none) */
    bool stuck;          /* the inner send would not take a run */
    uint64_t rng;
};

/* ---- rules -------------------------------------------------------------------- */

static rule *rule_of(ac__fault *f, const char *peer)
{
    for (size_t i = 0; i < f->rule_count; i++)
        if (strcmp(f->rules[i].peer, peer) == 0)
            return &f->rules[i];
    return NULL;
}

ac_status ac__fault_set(ac__fault *f, const char *peer, unsigned dir, const ac_link_fault *lf)
{
    pthread_mutex_lock(&f->lock);
    rule *r = rule_of(f, peer);
    if (!r && ac__fault_is_pass(lf)) {
        pthread_mutex_unlock(&f->lock);
        return AC_OK;
    }
    if (!r && f->rule_count == AC__FAULT_MAX_RULES) {
        pthread_mutex_unlock(&f->lock);
        return ac__fail(AC_EINVAL, "ac_node_link_fault: %d links have rules already; pass one "
                                   "to make room", AC__FAULT_MAX_RULES);
    }
    if (!r) {
        r = &f->rules[f->rule_count++];
        *r = (rule){0};
        snprintf(r->peer, sizeof r->peer, "%s", peer);
    }
    if (dir & AC_LINK_OUT)
        r->f[0] = *lf;
    if (dir & AC_LINK_IN)
        r->f[1] = *lf;
    if (ac__fault_is_pass(&r->f[0]) && ac__fault_is_pass(&r->f[1]))
        *r = f->rules[--f->rule_count]; /* healed: the last in its place */
    atomic_fetch_add_explicit(&f->gen, 1, memory_order_release);
    pthread_mutex_unlock(&f->lock);
    ac__node_wake(f->node); /* a blackhole's clock starts now, not at the next frame */
    return AC_OK;
}

/* The rule of `peer` both ways (pass when it has none). Takes the lock. */
static void rule_copy(ac__fault *f, const char *peer, ac_link_fault out[2])
{
    pthread_mutex_lock(&f->lock);
    rule *r = rule_of(f, peer);
    out[0] = r ? r->f[0] : (ac_link_fault){0};
    out[1] = r ? r->f[1] : (ac_link_fault){0};
    pthread_mutex_unlock(&f->lock);
}

static void conn_refresh(ac__fault *f, ac__conn *c, unsigned gen)
{
    ac_link_fault both[2];
    rule_copy(f, c->address, both);
    c->out.f = both[0];
    c->in_blackhole = both[1].blackhole;
    bool silent = both[0].blackhole || both[1].blackhole;
    if (!silent)
        c->silent_since_ns = 0;
    else if (!c->silent_since_ns)
        c->silent_since_ns = ac__node_now_ns();
    c->gen = gen;
}

static void in_refresh(ac__fault *f, in_link *l, unsigned gen)
{
    ac_link_fault both[2];
    rule_copy(f, l->address, both);
    l->l.f = both[1];
    l->gen = gen;
}

/* Every link's copy, when the rules changed. */
static void refresh_all(ac__fault *f)
{
    unsigned gen = atomic_load_explicit(&f->gen, memory_order_acquire);
    if (gen == f->seen_gen)
        return;
    f->seen_gen = gen;
    for (ac__conn *c = f->conns; c; c = c->next)
        conn_refresh(f, c, gen);
    for (in_link *l = f->ins; l; l = l->next)
        in_refresh(f, l, gen);
    f->next_due_ns = 1; /* a full look at the next release: a blackhole's clock */
}

/* ---- queues ------------------------------------------------------------------- */

static uint64_t next_random(ac__fault *f)
{
    uint64_t x = f->rng; /* xorshift64* */
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    f->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Dropped (its share)? Counted. */
static bool dropped(ac__fault *f, const flink *l, size_t n)
{
    if (l->f.blackhole) {
        AC__NODE_COUNT(f->node, fault_blackholed, c_fault_blackholed, n);
        return true;
    }
    if (l->f.drop > 0 && (double)(next_random(f) >> 11) * 0x1.0p-53 < l->f.drop) {
        AC__NODE_COUNT(f->node, fault_dropped, c_fault_dropped, n);
        return true;
    }
    return false;
}

static void earliest(ac__fault *f, int64_t t)
{
    if (t && (!f->next_due_ns || t < f->next_due_ns))
        f->next_due_ns = t;
}

/* Hold a copy of buf on l, due when its rule says (counted as delayed),
 * or drop it when l is full. */
static void hold(ac__fault *f, flink *l, const uint8_t *buf, size_t len, uint64_t id)
{
    size_t cap = l->f.max_queue_bytes ? l->f.max_queue_bytes : AC_LINK_DEFAULT_MAX_QUEUE_BYTES;
    held *h = l->bytes + len <= cap ? ac__malloc(sizeof *h + len) : NULL;
    if (!h) {
        AC__NODE_COUNT(f->node, fault_dropped, c_fault_dropped, 1);
        return;
    }
    memcpy(h->data, buf, len);
    h->out = (ac__out){.buf = h->data, .len = len};
    atomic_init(&h->out.next, NULL);
    h->id = id;
    int64_t t = ac__node_now_ns(), d = l->f.delay_us;
    if (l->f.jitter_us)
        d += (int64_t)(next_random(f) % (uint64_t)(2 * l->f.jitter_us + 1)) - l->f.jitter_us;
    int64_t due = t + (d > 0 ? d * 1000 : 0);
    if (due < l->last_due_ns)
        due = l->last_due_ns; /* behind the frame ahead: a link keeps its order */
    if (l->f.rate) {
        if (due < l->rate_free_ns)
            due = l->rate_free_ns;
        l->rate_free_ns = due + (int64_t)((double)len * 1e9 / (double)l->f.rate);
    }
    h->due_ns = l->last_due_ns = due;
    if (l->tail)
        atomic_store_explicit(&l->tail->out.next, &h->out, memory_order_relaxed);
    else
        l->head = h;
    l->tail = h;
    l->bytes += len;
    f->held++;
    earliest(f, due);
    if (d > 0 || l->f.rate)
        AC__NODE_COUNT(f->node, fault_delayed, c_fault_delayed, 1);
}

static held *next_held(held *h)
{
    return (held *)atomic_load_explicit(&h->out.next, memory_order_relaxed);
}

/* The first n held frames of l off it (all of them: SIZE_MAX), freed. */
static void unhold(ac__fault *f, flink *l, size_t n)
{
    for (size_t i = 0; i < n && l->head; i++) {
        held *h = l->head;
        l->head = next_held(h);
        l->bytes -= h->out.len;
        f->held--;
        free(h);
    }
    if (!l->head)
        l->tail = NULL;
}

/* Send what is due on c's link, in runs of at most 64. */
static void release_out(ac__fault *f, ac__conn *c, int64_t t)
{
    while (c->out.head && c->out.head->due_ns <= t) {
        size_t n = 0, bytes = 0;
        for (held *h = c->out.head; h && h->due_ns <= t && n < 64; h = next_held(h))
            n++, bytes += h->out.len;
        ac__send_result r = f->inner->send(f->istate, c->inner, &c->out.head->out, n, bytes);
        if (r == AC__SEND_FULL) {
            f->stuck = true;
            return;
        }
        unhold(f, &c->out, n);
    }
    if (c->out.head)
        earliest(f, c->out.head->due_ns);
}

/* Hand what is due on l to the node; how many messages. */
static size_t release_in(ac__fault *f, in_link *l, int64_t t)
{
    size_t n = 0;
    while (l->l.head && l->l.head->due_ns <= t) {
        held *h = l->l.head;
        l->l.head = next_held(h);
        if (!l->l.head)
            l->l.tail = NULL;
        l->l.bytes -= h->out.len;
        f->held--;
        ac__node_frames_deliver(f->node, &h->id, sizeof h->id, h->data, h->out.len);
        free(h);
        n++;
    }
    if (l->l.head)
        earliest(f, l->l.head->due_ns);
    return n;
}

/* A connection blackholed for a heartbeat timeout, not yet told (its
 * deadline noted otherwise). */
static ac__conn *silent_too_long(ac__fault *f, int64_t t)
{
    for (ac__conn *c = f->conns; c; c = c->next) {
        if (!c->silent_since_ns || c->lost_told)
            continue;
        int64_t deadline = c->silent_since_ns + f->heartbeat_timeout_ns;
        if (t >= deadline)
            return c;
        earliest(f, deadline);
    }
    return NULL;
}

/* Release what is due, report what went silent; how many messages went
 * to the node. */
static size_t release(ac__fault *f)
{
    refresh_all(f);
    int64_t t = ac__node_now_ns();
    if (!f->next_due_ns || t < f->next_due_ns) {
        if (!f->stuck)
            return 0;
    }
    f->next_due_ns = 0;
    f->stuck = false;
    size_t came = 0;
    for (ac__conn *c = f->conns; c; c = c->next)
        release_out(f, c, t);
    for (in_link *l = f->ins; l; l = l->next)
        came += release_in(f, l, t); /* a delivery may hold frames out: count what came */
    /* A loss may close connections (this one, others): look again. */
    for (ac__conn *c; (c = silent_too_long(f, t));) {
        c->lost_told = true;
        ac__node_conn_lost(f->node, c->peer,
                           "its heartbeats stopped (the link to it is blackholed)");
        came++;
    }
    return came;
}

/* ---- in ------------------------------------------------------------------------ */

static in_link *in_link_of(ac__fault *f, const char *address)
{
    for (in_link *l = f->ins; l; l = l->next)
        if (strcmp(l->address, address) == 0)
            return l;
    return NULL;
}

bool ac__fault_in(ac__fault *f, const char *from, const void *id, size_t id_len,
                  const uint8_t *buf, size_t len)
{
    if (!from || id_len != sizeof(uint64_t))
        return false; /* a stranger's hello, or not a node's */
    refresh_all(f);
    in_link *l = in_link_of(f, from);
    if (!l) {
        ac_link_fault both[2];
        rule_copy(f, from, both);
        if (ac__fault_is_pass(&both[1]) || f->in_count >= AC__FAULT_MAX_RULES)
            return false;
        if (!(l = ac__calloc(1, sizeof *l)))
            return false;
        snprintf(l->address, sizeof l->address, "%s", from);
        l->l.f = both[1];
        l->gen = f->seen_gen;
        l->next = f->ins;
        f->ins = l;
        f->in_count++;
    }
    if (!l->l.head && ac__fault_is_pass(&l->l.f))
        return false;
    if (dropped(f, &l->l, 1))
        return true;
    uint64_t rid;
    memcpy(&rid, id, sizeof rid);
    hold(f, &l->l, buf, len, rid);
    return true;
}

/* ---- the ops -------------------------------------------------------------------- */

static ac_status fault_check(const ac_node_options *o) { (void)o; return AC_OK; }

static ac_status fault_start(const ac__transport_start *s, void **state, char **endpoint,
                             char **address)
{
    ac__fault *f = ac__calloc(1, sizeof *f);
    if (!f)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    *state = f;
    f->inner = s->inner;
    f->node = s->node;
    f->heartbeat_timeout_ns = (int64_t)s->options->heartbeat_timeout_ms * 1000000ll;
    f->rng = s->incarnation | 1;
    pthread_mutex_init(&f->lock, NULL);
    atomic_init(&f->gen, 1);
    return f->inner->start(s, &f->istate, endpoint, address);
}

static const char *fault_dial(void *t, ac__peer *p, const char *address, ac__conn **conn)
{
    ac__fault *f = t;
    ac__conn *c = ac__calloc(1, sizeof *c);
    char *addr = c ? ac__strdup(address) : NULL;
    if (!addr) {
        free(c);
        return "cannot open a connection to it (out of memory)";
    }
    const char *why = f->inner->dial(f->istate, p, address, (ac__conn **)&c->inner);
    if (why) {
        free(addr);
        free(c);
        return why;
    }
    c->peer = p;
    c->address = addr;
    c->next = f->conns;
    if (f->conns)
        f->conns->prev = c;
    f->conns = c;
    conn_refresh(f, c, atomic_load_explicit(&f->gen, memory_order_acquire));
    if (c->silent_since_ns)
        earliest(f, c->silent_since_ns + f->heartbeat_timeout_ns);
    *conn = c;
    return NULL;
}

static ac__send_result fault_send(void *t, ac__conn *c, const ac__out *first, size_t n,
                                  size_t bytes)
{
    ac__fault *f = t;
    unsigned gen = atomic_load_explicit(&f->gen, memory_order_acquire);
    if (gen != c->gen)
        conn_refresh(f, c, gen);
    if (!c->out.head && ac__fault_is_pass(&c->out.f))
        return f->inner->send(f->istate, c->inner, first, n, bytes);
    const ac__out *o = first;
    for (size_t k = 0; k < n; k++) {
        if (!dropped(f, &c->out, 1))
            hold(f, &c->out, o->buf, o->len, 0);
        o = atomic_load_explicit(&o->next, memory_order_relaxed);
    }
    release_out(f, c, ac__node_now_ns()); /* what is due now (a rate's first frame) goes now */
    return AC__SEND_OK;
}

static void fault_send_last(void *t, ac__conn *c, const uint8_t *buf, size_t len)
{
    ac__fault *f = t;
    if (!c->out.f.blackhole) /* at stop: what is held goes with the connection */
        f->inner->send_last(f->istate, c->inner, buf, len);
}

static void fault_close(void *t, ac__conn *c)
{
    ac__fault *f = t;
    f->inner->close(f->istate, c->inner);
    unhold(f, &c->out, SIZE_MAX);
    if (c->prev)
        c->prev->next = c->next;
    else
        f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c->address);
    free(c);
}

static size_t fault_drain(void *t, size_t budget)
{
    ac__fault *f = t;
    size_t came = release(f);
    return came + f->inner->drain(f->istate, budget);
}

static bool fault_readable(void *t)
{
    ac__fault *f = t;
    if (f->next_due_ns && ac__node_now_ns() >= f->next_due_ns)
        return true;
    return f->inner->readable(f->istate);
}

static void fault_wait(void *t, long timeout_ms)
{
    ac__fault *f = t;
    if (f->stuck && timeout_ms > 1)
        timeout_ms = 1;
    if (f->next_due_ns) {
        int64_t left = f->next_due_ns - ac__node_now_ns();
        long ms = left <= 0 ? 0 : (long)((left + 999999) / 1000000);
        if (ms < timeout_ms)
            timeout_ms = ms;
    }
    f->inner->wait(f->istate, timeout_ms);
}

static void fault_poll_conn(void *t, ac__conn *c)
{
    ac__fault *f = t;
    f->inner->poll_conn(f->istate, c->inner);
}

static void fault_stop(void *t)
{
    ac__fault *f = t;
    if (f->inner->stop)
        f->inner->stop(f->istate);
}

static void fault_wake(void *t)
{
    ac__fault *f = t;
    f->inner->wake(f->istate);
}

static void fault_free(void *t)
{
    ac__fault *f = t;
    if (f->istate)
        f->inner->free(f->istate);
    while (f->ins) {
        in_link *l = f->ins;
        f->ins = l->next;
        unhold(f, &l->l, SIZE_MAX);
        free(l);
    }
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const ac__transport_ops ac__transport_fault = {
    .scheme = "fault",
    .check = fault_check,
    .start = fault_start,
    .dial = fault_dial,
    .send = fault_send,
    .send_last = fault_send_last,
    .close = fault_close,
    .drain = fault_drain,
    .readable = fault_readable,
    .wait = fault_wait,
    .poll_conn = fault_poll_conn,
    .stop = fault_stop,
    .wake = fault_wake,
    .free = fault_free,
};
