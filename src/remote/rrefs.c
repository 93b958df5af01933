/*
 * Remote refs (node_internal.h). A remote ref (ac__rref) stands for the
 * actor at a path on one peer incarnation. Its deliver encodes the
 * message and queues the frame: an ASK when the sender is a local
 * one-shot reply target (an ask's reply ref, a scatter slot), which goes
 * into the correlation table under a fresh id; a TELL otherwise; a
 * TERMINATED when a local actor the peer's actor watches has stopped. A
 * send to a lost peer is refused: an ask fails at once with
 * NodeDownError, anything else is a dead letter.
 *
 * Remote refs are interned per (peer, path) in the node's table while
 * referenced. A lookup may meet a ref whose last reference is being
 * released: it retains only from a live count, and otherwise makes a new
 * ref that replaces the dying one in the table.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/node_internal.h"

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

static uint64_t rref_entry_hash(const void *e) { return ((const ac__rref *)e)->hash; }

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

static bool rrefs_rehash(ac_node *node, size_t cap)
{
    return ac__chain_rehash((void ***)&node->rrefs, &node->rref_cap, cap,
                            offsetof(ac__rref, chain), rref_entry_hash);
}

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
    if (ac__node_admit_queue(r->node, r->peer) != AC_OK)
        return AC_EFAILED;
    if (msg->type == &ac_msg_type_terminated || ac__wire_has_codec(msg->type))
        return AC_OK;
    return ac__fail(AC_ECODEC,
                    "cannot send %s to %s: the type has no wire codec (give its descriptor "
                    "encode and decode hooks)",
                    msg->type->name, ac_ref_path(self));
}

static void rref_deliver(ac_ref *self, ac__mailbox_node *n)
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
        ac__node_encode_sender(node, who, &env);
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
        ac__node_encode_sender(node, sender, &env);
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
    ac__node_encode_sender(r->node, watcher, &env);
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
