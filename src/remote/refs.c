/*
 * Remote refs, reply targets of other nodes, and the correlation table.
 *
 * A remote ref (ac__rref) stands for the actor at a path on one peer
 * incarnation. Its deliver encodes the message and queues the frame: an
 * ASK when the sender is a local one-shot reply target (an ask's reply
 * ref, a scatter slot), which goes into the correlation table under a
 * fresh id; a TELL otherwise; a TERMINATED when a local actor the peer's
 * actor watches has stopped. A send to a lost peer is refused: an ask
 * fails at once with NodeDownError, anything else is a dead letter.
 *
 * A reply target of another node (rreply) is what the receiving actor
 * sees as the sender of an ASK: its first deliver sends one REPLY (the
 * replier's own ref as the sender), its undeliverable one UNDELIVERABLE;
 * everything after is dropped silently, as a local reply ref does.
 *
 * Remote refs are interned per (peer, path) in the node's table while
 * referenced. A lookup may meet a ref whose last reference is being
 * released: it retains only from a live count, and otherwise makes a new
 * ref that replaces the dying one in the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/node_internal.h"

/* ---- hashing ---------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) /* FNV-1a */
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t rref_hash(const ac__peer *peer, const char *path, size_t len)
{
    uint64_t id = peer->id;
    return hash_bytes(hash_bytes(14695981039346656037ull, &id, sizeof id), path, len);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ---- remote refs ------------------------------------------------------ */

static ac__rref *rref_of(ac_ref *r) { return (ac__rref *)r; }

static bool retain_if_live(ac_ref *r)
{
    unsigned n = atomic_load_explicit(&r->refs, memory_order_relaxed);
    while (n != 0)
        if (atomic_compare_exchange_weak_explicit(&r->refs, &n, n + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    return false;
}

static bool rrefs_rehash(ac_node *node, size_t cap);

/* Grow the intern table to hold one more (under the lock). */
static bool rrefs_reserve(ac_node *node)
{
    if (node->rref_count + 1 <= node->rref_cap / 2)
        return true;
    return rrefs_rehash(node, node->rref_cap ? node->rref_cap * 2 : 64);
}

void ac__rrefs_shrink(ac_node *node)
{
    pthread_mutex_lock(&node->lock);
    if (node->rref_cap > 64 && node->rref_count < node->rref_cap / 8) {
        size_t cap = 64;
        while (cap < 2 * node->rref_count)
            cap *= 2;
        (void)rrefs_rehash(node, cap); /* out of memory: keep the big one */
    }
    pthread_mutex_unlock(&node->lock);
}

static bool rrefs_rehash(ac_node *node, size_t cap)
{
    ac__rref **t = ac__calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < node->rref_cap; i++) {
        ac__rref *r = node->rrefs[i];
        while (r) {
            ac__rref *next = r->chain;
            size_t b = r->hash & (cap - 1);
            r->chain = t[b];
            t[b] = r;
            r = next;
        }
    }
    free(node->rrefs);
    node->rrefs = t;
    node->rref_cap = cap;
    return true;
}

static void rref_unlink(ac_node *node, ac__rref *r)
{
    if (!node->rref_cap)
        return;
    for (ac__rref **pp = &node->rrefs[r->hash & (node->rref_cap - 1)]; *pp; pp = &(*pp)->chain)
        if (*pp == r) {
            *pp = r->chain;
            node->rref_count--;
            return;
        }
}

ac__rref *ac__rref_get(ac_node *node, ac__peer *peer, const char *path, size_t len)
{
    uint64_t h = rref_hash(peer, path, len);
    pthread_mutex_lock(&node->lock);
    if (node->rref_cap) {
        for (ac__rref **pp = &node->rrefs[h & (node->rref_cap - 1)]; *pp; pp = &(*pp)->chain) {
            ac__rref *r = *pp;
            if (r->hash == h && r->peer == peer && strlen(r->path) == len &&
                memcmp(r->path, path, len) == 0) {
                if (retain_if_live(&r->ref)) {
                    pthread_mutex_unlock(&node->lock);
                    return r;
                }
                *pp = r->chain; /* dying: its destroy finds it gone */
                node->rref_count--;
                break;
            }
        }
    }
    ac__rref *r = ac__calloc(1, sizeof *r);
    size_t full_len = 9 + strlen(peer->system ? peer->system : "") + 1 + strlen(peer->address) + len + 1;
    char *p = r ? ac__malloc(len + 1) : NULL;
    char *full = p ? ac__malloc(full_len) : NULL;
    if (!full || !rrefs_reserve(node)) {
        pthread_mutex_unlock(&node->lock);
        free(full);
        free(p);
        free(r);
        return NULL;
    }
    memcpy(p, path, len);
    p[len] = '\0';
    snprintf(full, full_len, "actorc://%s@%s%s", peer->system ? peer->system : "", peer->address, p);
    ac__ref_init(&r->ref, &ac__rref_ops, node->system);
    r->node = node;
    r->peer = ac__peer_retain(peer);
    r->path = p;
    r->full = full;
    r->hash = h;
    size_t b = h & (node->rref_cap - 1);
    r->chain = node->rrefs[b];
    node->rrefs[b] = r;
    node->rref_count++;
    pthread_mutex_unlock(&node->lock);
    return r;
}

static void rref_destroy(ac_ref *self)
{
    ac__rref *r = rref_of(self);
    ac_node *node = r->node;
    pthread_mutex_lock(&node->lock);
    rref_unlink(node, r);
    pthread_mutex_unlock(&node->lock);
    ac__refset_clear(&r->watchers);
    ac__peer_release(r->peer);
    free(r->path);
    free(r->full);
    free(r);
}

static const char *rref_path(const ac_ref *self) { return ((const ac__rref *)self)->full; }

static bool is_oneshot(const ac_ref *r) { return r && r->ops->kind == AC__REF_REPLY; }

/* A one-shot reply target that will never be answered by `r`'s node. */
static void fail_reply(ac_ref *reply, ac__rref *r, const char *why)
{
    ac_error *err = ac__node_down_error(r->peer, why);
    ac_msg *m = ac_msg_error_new(err);
    if (!m)
        ac__oom_abort("a NodeDownError reply");
    ac_tell(reply, m, &r->ref);
}

/* Refused before delivery, so that the send fails: a type with no codec,
 * and a peer that has max_queue frames waiting already (backpressure). A
 * lost peer is not refused here: an ask to it gets its NodeDownError. */
static ac_status rref_admit(ac_ref *self, const ac_msg *msg)
{
    ac__rref *r = rref_of(self);
    if (atomic_load_explicit(&r->peer->queued, memory_order_relaxed) >= r->node->options.max_queue) {
        atomic_fetch_add_explicit(&r->node->m.dropped_backpressure, 1, memory_order_relaxed);
        ac_counter_inc(r->node->c_dropped_backpressure);
        return ac__fail(AC_EFAILED, "%zu frames already wait for node %s: it falls behind",
                        r->node->options.max_queue, r->peer->address);
    }
    if (msg->type == &ac_msg_type_terminated || ac__wire_has_codec(msg->type))
        return AC_OK;
    return ac__fail(AC_ECODEC,
                    "cannot send %s to %s: the type has no wire codec (give its descriptor "
                    "encode and decode hooks)",
                    msg->type->name, ac_ref_path(self));
}

static void rref_deliver(ac_ref *self, ac__node *n)
{
    ac__rref *r = rref_of(self);
    ac_node *node = r->node;
    ac_ref *sender;
    ac_msg *msg = ac__ext_node_take(n, &sender);
    ac__wire_env env = {.kind = AC__WIRE_TELL};
    uint64_t corr = 0;
    ac_status st;

    if (atomic_load_explicit(&r->peer->state, memory_order_acquire) == AC__PEER_DOWN) {
        st = AC_ENODEDOWN;
        goto refused;
    }
    if (msg->type == &ac_msg_type_terminated) {
        /* A local actor the peer's actor (this ref) watched has stopped. */
        ac_ref *who = ac_terminated_ref(msg);
        env.kind = AC__WIRE_TERMINATED;
        env.target_path = (ac__wire_span){(const uint8_t *)r->path, strlen(r->path)};
        env.target_inc = ac__peer_target_inc(node, r->peer);
        ac__node_encode_sender(node, r->peer, who, &env, 0);
        st = ac__node_send(node, r->peer, &env);
        goto done;
    }
    if (!ac__wire_has_codec(msg->type)) {
        st = ac__fail(AC_ECODEC, "%s has no wire codec", ac_msg_type_name(msg));
        goto refused;
    }
    env.target_path = (ac__wire_span){(const uint8_t *)r->path, strlen(r->path)};
    env.target_inc = ac__peer_target_inc(node, r->peer);
    if (is_oneshot(sender)) {
        corr = ac__corr_add(node, sender, r->peer);
        if (!corr) {
            st = ac__fail(AC_ENOMEM, "out of memory for an ask's correlation entry");
            goto refused;
        }
        env.kind = AC__WIRE_ASK;
        env.corr = corr;
        env.sender.kind = AC__WIRE_SENDER_NONE;
    } else {
        ac__node_encode_sender(node, r->peer, sender, &env, 0);
    }
    st = ac__node_send_msg(node, r->peer, &env, msg);
    if (st != AC_OK && corr) {
        ac_ref *back = ac__corr_take(node, corr);
        ac_ref_release(back);
    }
    if (st != AC_OK)
        goto refused;
done:
    ac_ref_release(sender);
    ac_msg_release(msg);
    return;
refused:
    if (msg->type == &ac_msg_type_terminated) { /* nobody waits on it there any more */
        ac_ref_release(sender);
        ac_msg_release(msg);
        return;
    }
    if (is_oneshot(sender) && (st == AC_ENODEDOWN || st == AC_ENOMEM)) {
        /* The ask is told why at once; the message goes nowhere. */
        char why[200];
        snprintf(why, sizeof why, "%s", st == AC_ENODEDOWN ? "it is down" : ac_last_error());
        ac_msg_release(msg);
        fail_reply(sender, r, why);
        ac_ref_release(sender);
        return;
    }
    {
        char why[256];
        snprintf(why, sizeof why, "%s", st == AC_ENODEDOWN ? "its node is down" : ac_last_error());
        ac__ext_dead_letter(node->system, msg, sender, self, why);
    }
    ac_ref_release(sender);
}

static void rref_undeliverable(ac_ref *self, ac_ref *recipient, const char *why)
{
    /* A remote actor sent something (as this ref's sender) that could not
     * be delivered here: nothing to tell across the wire for a tell. */
    (void)self;
    (void)recipient;
    (void)why;
}

static void send_watch(ac__rref *r, ac__wire_kind kind, ac_ref *watcher)
{
    ac__wire_env env = {.kind = kind};
    env.target_path = (ac__wire_span){(const uint8_t *)r->path, strlen(r->path)};
    pthread_mutex_lock(&r->node->lock);
    env.target_inc = r->peer->incarnation;
    pthread_mutex_unlock(&r->node->lock);
    ac__node_encode_sender(r->node, r->peer, watcher, &env, 0);
    (void)ac__node_send(r->node, r->peer, &env); /* a lost peer tells node-lost itself */
}

static void rref_watch(ac_ref *self, ac_ref *watcher)
{
    ac__rref *r = rref_of(self);
    ac_node *node = r->node;
    bool first, lost;
    pthread_mutex_lock(&node->lock);
    lost = atomic_load_explicit(&r->peer->state, memory_order_acquire) == AC__PEER_DOWN;
    first = !lost && r->watchers.count == 0;
    if (!lost) {
        if (ac__refset_add(&r->watchers, watcher) != AC_OK ||
            (first && ac__refset_add(&r->peer->watched, self) != AC_OK))
            ac__oom_abort("a remote watch");
    }
    pthread_mutex_unlock(&node->lock);
    if (lost) { /* the watch was promised: its Terminated comes at once */
        ac_tell(watcher, ac__ext_terminated_new(self, true), self);
        return;
    }
    if (first)
        send_watch(r, AC__WIRE_WATCH, NULL);
}

static void rref_unwatch(ac_ref *self, ac_ref *watcher)
{
    ac__rref *r = rref_of(self);
    ac_node *node = r->node;
    bool last = false;
    pthread_mutex_lock(&node->lock);
    if (ac__refset_remove(&r->watchers, watcher) && r->watchers.count == 0) {
        last = true;
        ac__refset_remove(&r->peer->watched, self); /* may release self: not the last ref */
    }
    pthread_mutex_unlock(&node->lock);
    if (last && atomic_load_explicit(&r->peer->state, memory_order_acquire) != AC__PEER_DOWN)
        send_watch(r, AC__WIRE_UNWATCH, NULL);
}

const ac__ref_ops ac__rref_ops = {
    .kind = AC__REF_FOREIGN,
    .deliver = rref_deliver,
    .destroy = rref_destroy,
    .path = rref_path,
    .undeliverable = rref_undeliverable,
    .admit = rref_admit,
    .watch = rref_watch,
    .unwatch = rref_unwatch,
};

bool ac_ref_is_remote(const ac_ref *ref)
{
    return ref && (ref->ops == &ac__rref_ops || ref->ops == &ac__rreply_ops);
}

void ac__rref_peer_lost(ac_node *node, ac__peer *peer)
{
    /* Take the watched set out under the lock; tell outside it. */
    pthread_mutex_lock(&node->lock);
    ac__refset watched = peer->watched;
    peer->watched = (ac__refset){0};
    size_t n = 0;
    for (uint32_t i = 0; i < watched.count; i++)
        n += rref_of(watched.items[i])->watchers.count;
    ac_ref **tell = n ? ac__calloc(2 * n, sizeof *tell) : NULL;
    if (n && !tell)
        ac__oom_abort("the Terminated notices of a lost node");
    size_t k = 0;
    for (uint32_t i = 0; i < watched.count; i++) {
        ac__rref *r = rref_of(watched.items[i]);
        for (uint32_t j = 0; j < r->watchers.count; j++) {
            tell[k++] = ac_ref_retain(r->watchers.items[j]);
            tell[k++] = ac_ref_retain(&r->ref);
        }
        ac__refset_clear(&r->watchers);
    }
    ac_ref **inbound = peer->inbound_watch;
    size_t ninbound = peer->inbound_count;
    peer->inbound_watch = NULL;
    peer->inbound_count = peer->inbound_cap = 0;
    pthread_mutex_unlock(&node->lock);

    for (size_t i = 0; i < k; i += 2) {
        ac_tell(tell[i], ac__ext_terminated_new(tell[i + 1], true), tell[i + 1]);
        ac_ref_release(tell[i]);
        ac_ref_release(tell[i + 1]);
    }
    free(tell);
    ac__refset_clear(&watched);
    /* The lost node's watches of our actors end with it. */
    for (size_t i = 0; i < ninbound; i++) {
        ac__ext_unwatch_as(inbound[2 * i], inbound[2 * i + 1]);
        ac_ref_release(inbound[2 * i]);
        ac_ref_release(inbound[2 * i + 1]);
    }
    free(inbound);
}

void ac__rref_terminated(ac_node *node, ac__peer *peer, const char *path, size_t len)
{
    ac__rref *r = ac__rref_get(node, peer, path, len);
    if (!r)
        return;
    pthread_mutex_lock(&node->lock);
    ac__refset watchers = r->watchers;
    r->watchers = (ac__refset){0};
    bool had = watchers.count > 0;
    pthread_mutex_unlock(&node->lock);
    for (uint32_t i = 0; i < watchers.count; i++)
        ac_tell(watchers.items[i], ac__ext_terminated_new(&r->ref, false), &r->ref);
    ac__refset_clear(&watchers);
    if (had) {
        pthread_mutex_lock(&node->lock);
        ac__refset_remove(&peer->watched, &r->ref);
        pthread_mutex_unlock(&node->lock);
    }
    ac_ref_release(&r->ref);
}

/* ---- reply targets of other nodes ------------------------------------- */

typedef struct rreply {
    ac_ref ref;
    ac_node *node;
    ac__peer *peer; /* retained: the asking node */
    uint64_t corr;
    atomic_int claimed;
    char path[352];
} rreply;

static bool rreply_claim(rreply *p)
{
    int expected = 0;
    /* acq_rel: pairs with the other claimers' CAS; one wins. */
    return atomic_compare_exchange_strong_explicit(&p->claimed, &expected, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

static void rreply_deliver(ac_ref *self, ac__node *n)
{
    rreply *p = (rreply *)self;
    ac_ref *sender;
    ac_msg *msg = ac__ext_node_take(n, &sender);
    if (!rreply_claim(p) ||
        atomic_load_explicit(&p->peer->state, memory_order_acquire) == AC__PEER_DOWN) {
        ac_ref_release(sender); /* answered already, or nobody to answer: silently */
        ac_msg_release(msg);
        return;
    }
    ac__wire_env env = {.kind = AC__WIRE_REPLY, .corr = p->corr};
    env.target_inc = ac__peer_target_inc(p->node, p->peer);
    ac__node_encode_sender(p->node, p->peer, sender, &env, 0);
    ac_status st = ac__node_send_msg(p->node, p->peer, &env, msg);
    if (st == AC_ECODEC || st == AC_ENOMEM) {
        /* The asker must hear something: the reply cannot cross. */
        char why[256];
        snprintf(why, sizeof why, "the reply cannot be sent back: %s", ac_last_error());
        ac__wire_env u = {.kind = AC__WIRE_UNDELIVERABLE, .corr = p->corr};
        u.body = (ac__wire_span){(const uint8_t *)why, strlen(why)};
        u.sender.kind = AC__WIRE_SENDER_NONE;
        (void)ac__node_send(p->node, p->peer, &u);
        ac__ext_dead_letter(p->node->system, msg, sender, self, why);
        ac_ref_release(sender);
        return;
    }
    ac_ref_release(sender);
    ac_msg_release(msg);
}

static void rreply_undeliverable(ac_ref *self, ac_ref *recipient, const char *why)
{
    rreply *p = (rreply *)self;
    if (!rreply_claim(p))
        return;
    char text[320];
    if (why)
        snprintf(text, sizeof text, "%s", why);
    else
        snprintf(text, sizeof text, "the actor %s is stopped", recipient ? ac_ref_path(recipient) : "");
    ac__wire_env u = {.kind = AC__WIRE_UNDELIVERABLE, .corr = p->corr};
    u.flags = why ? 0u : 1u; /* 1: stopped (ActorStoppedError) */
    u.body = (ac__wire_span){(const uint8_t *)text, strlen(text)};
    u.sender.kind = AC__WIRE_SENDER_NONE;
    (void)ac__node_send(p->node, p->peer, &u);
}

static void rreply_destroy(ac_ref *self)
{
    rreply *p = (rreply *)self;
    ac__peer_release(p->peer);
    free(p);
}

static const char *rreply_path(const ac_ref *self) { return ((const rreply *)self)->path; }

const ac__ref_ops ac__rreply_ops = {
    .kind = AC__REF_FOREIGN,
    .deliver = rreply_deliver,
    .destroy = rreply_destroy,
    .path = rreply_path,
    .undeliverable = rreply_undeliverable,
};

ac_ref *ac__rreply_new(ac_node *node, ac__peer *peer, uint64_t corr)
{
    rreply *p = ac__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    ac__ref_init(&p->ref, &ac__rreply_ops, node->system);
    p->node = node;
    p->peer = ac__peer_retain(peer);
    p->corr = corr;
    pthread_mutex_lock(&node->lock);
    snprintf(p->path, sizeof p->path, "actorc://%s@%s/temp/reply-%llx",
             peer->system ? peer->system : "", peer->address, (unsigned long long)corr);
    pthread_mutex_unlock(&node->lock);
    return &p->ref;
}

/* Encoding a sender that is a reply target of another node. */
bool ac__rreply_parts(const ac_ref *ref, ac__peer **peer, uint64_t *corr)
{
    if (!ref || ref->ops != &ac__rreply_ops)
        return false;
    const rreply *p = (const rreply *)ref;
    *peer = p->peer;
    *corr = p->corr;
    return true;
}

/* ---- the correlation table -------------------------------------------- */

static bool corrs_reserve(ac_node *node)
{
    if (node->corr_count + 1 <= node->corr_cap / 2)
        return true;
    size_t cap = node->corr_cap ? node->corr_cap * 2 : 256;
    ac__corr **t = ac__calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < node->corr_cap; i++) {
        ac__corr *c = node->corrs[i];
        while (c) {
            ac__corr *next = c->chain;
            size_t b = mix64(c->corr) & (cap - 1);
            c->chain = t[b];
            t[b] = c;
            c = next;
        }
    }
    free(node->corrs);
    node->corrs = t;
    node->corr_cap = cap;
    return true;
}

uint64_t ac__corr_add(ac_node *node, ac_ref *reply, ac__peer *peer)
{
    ac__corr *c = ac__malloc(sizeof *c);
    if (!c)
        return 0;
    c->corr = atomic_fetch_add_explicit(&node->next_corr, 1, memory_order_relaxed);
    c->reply = ac_ref_retain(reply);
    c->peer = peer;
    pthread_mutex_lock(&node->lock);
    if (!corrs_reserve(node)) {
        pthread_mutex_unlock(&node->lock);
        ac_ref_release(c->reply);
        free(c);
        return 0;
    }
    size_t b = mix64(c->corr) & (node->corr_cap - 1);
    uint64_t id = c->corr;
    c->chain = node->corrs[b];
    node->corrs[b] = c;
    node->corr_count++;
    pthread_mutex_unlock(&node->lock);
    return id; /* not c->corr: a reply may have taken and freed c already */
}

ac_ref *ac__corr_take(ac_node *node, uint64_t corr)
{
    ac_ref *reply = NULL;
    ac__corr *found = NULL;
    pthread_mutex_lock(&node->lock);
    if (node->corr_cap) {
        for (ac__corr **pp = &node->corrs[mix64(corr) & (node->corr_cap - 1)]; *pp;
             pp = &(*pp)->chain)
            if ((*pp)->corr == corr) {
                found = *pp;
                *pp = found->chain;
                node->corr_count--;
                break;
            }
    }
    pthread_mutex_unlock(&node->lock);
    if (found) {
        reply = found->reply;
        free(found);
    }
    return reply;
}

/* Not every reply ref is an ask's or a scatter slot's (a call through a
 * circuit breaker has its own): each says for itself. */
static bool settled(const ac_ref *reply)
{
    return reply->ops->settled && reply->ops->settled(reply);
}

/* Unlink every entry `pick` chooses into a list (under the lock). */
static ac__corr *corr_unlink_if(ac_node *node, bool (*pick)(const ac__corr *, const void *),
                                const void *arg)
{
    ac__corr *out = NULL;
    for (size_t i = 0; i < node->corr_cap; i++)
        for (ac__corr **pp = &node->corrs[i]; *pp;) {
            ac__corr *c = *pp;
            if (pick(c, arg)) {
                *pp = c->chain;
                node->corr_count--;
                c->chain = out;
                out = c;
            } else {
                pp = &c->chain;
            }
        }
    return out;
}

static bool pick_settled(const ac__corr *c, const void *arg)
{
    (void)arg;
    return settled(c->reply);
}

static bool pick_peer(const ac__corr *c, const void *arg) { return !arg || c->peer == arg; }

void ac__corr_sweep(ac_node *node)
{
    pthread_mutex_lock(&node->lock);
    ac__corr *list = node->corr_count ? corr_unlink_if(node, pick_settled, NULL) : NULL;
    pthread_mutex_unlock(&node->lock);
    while (list) {
        ac__corr *next = list->chain;
        ac_ref_release(list->reply);
        free(list);
        list = next;
    }
}

size_t ac__corr_fail_peer(ac_node *node, ac__peer *peer, ac_error *err)
{
    pthread_mutex_lock(&node->lock);
    ac__corr *list = node->corr_count ? corr_unlink_if(node, pick_peer, peer) : NULL;
    pthread_mutex_unlock(&node->lock);
    size_t n = 0;
    while (list) {
        ac__corr *next = list->chain;
        if (!settled(list->reply)) {
            ac_msg *m = ac_msg_error_new(ac_error_retain(err));
            if (!m)
                ac__oom_abort("a NodeDownError reply");
            if (peer) {
                atomic_fetch_add_explicit(&node->m.asks_failed_by_node_loss, 1,
                                          memory_order_relaxed);
                ac_counter_inc(node->c_asks_failed);
            }
            ac_tell(list->reply, m, NULL);
            n++;
        }
        ac_ref_release(list->reply);
        free(list);
        list = next;
    }
    return n;
}

size_t ac__corr_count(ac_node *node)
{
    pthread_mutex_lock(&node->lock);
    size_t n = node->corr_count;
    pthread_mutex_unlock(&node->lock);
    return n;
}
