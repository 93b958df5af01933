/*
 * The correlation table (node_internal.h): the asks this node sent to
 * others, by id, each with its local reply target, until a REPLY or an
 * UNDELIVERABLE takes it, its target settles without us (a timeout), or
 * its peer is lost. Under the node lock.
 */
#include <stddef.h>
#include <stdlib.h>

#include "remote/node_internal.h"

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static uint64_t corr_entry_hash(const void *e) { return mix64(((const ac__corr *)e)->corr); }

bool ac__chain_rehash(void ***buckets, size_t *cap, size_t new_cap, size_t chain_off,
                      uint64_t (*hash)(const void *entry))
{
    void **t = ac__calloc(new_cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < *cap; i++) {
        void *e = (*buckets)[i];
        while (e) {
            void **chain = (void **)((char *)e + chain_off);
            void *next = *chain;
            size_t b = hash(e) & (new_cap - 1);
            *chain = t[b];
            t[b] = e;
            e = next;
        }
    }
    free(*buckets);
    *buckets = t;
    *cap = new_cap;
    return true;
}

static bool corrs_reserve(ac_node *node)
{
    if (node->corr_count + 1 <= node->corr_cap / 2)
        return true;
    return ac__chain_rehash((void ***)&node->corrs, &node->corr_cap,
                            node->corr_cap ? node->corr_cap * 2 : 256, offsetof(ac__corr, chain),
                            corr_entry_hash);
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

void ac__corr_free_all(ac_node *node)
{
    for (size_t i = 0; i < node->corr_cap; i++)
        for (ac__corr *c = node->corrs[i]; c;) {
            ac__corr *next = c->chain;
            ac_ref_release(c->reply);
            free(c);
            c = next;
        }
    free(node->corrs);
    node->corrs = NULL;
    node->corr_cap = node->corr_count = 0;
}
