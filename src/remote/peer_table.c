/*
 * A node's peers by address and by incarnation (see peer_table.h).
 *
 * The table is what a stranger can make grow (every address named in a
 * sender field becomes an entry), so lookups are O(1) whatever its size:
 * FNV-1a over the address, the incarnation's own bits (random) for the
 * other index. Buckets double when the count passes them, and never
 * shrink: the count is bounded by max_peers.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "remote/node_internal.h"
#include "remote/peer_table.h"

static uint64_t hash_address(const char *a, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)a[i];
        h *= 1099511628211ull;
    }
    return h;
}

static size_t addr_slot(const ac__peer_table *t, const char *a, size_t len)
{
    return (size_t)hash_address(a, len) & (t->cap - 1);
}

static size_t inc_slot(const ac__peer_table *t, uint64_t inc)
{
    return (size_t)(inc ^ inc >> 29) & (t->cap - 1);
}

static void link_inc(ac__peer_table *t, ac__peer *p)
{
    size_t i = inc_slot(t, p->incarnation);
    p->inc_chain = t->by_inc[i];
    t->by_inc[i] = p;
    p->inc_indexed = true;
}

static bool rehash(ac__peer_table *t, size_t cap)
{
    ac__peer **a = ac__calloc(cap, sizeof *a);
    ac__peer **b = a ? ac__calloc(cap, sizeof *b) : NULL;
    if (!b) {
        free(a);
        return false;
    }
    free(t->by_addr);
    free(t->by_inc);
    t->by_addr = a;
    t->by_inc = b;
    t->cap = cap;
    for (ac__peer *p = t->newest; p; p = p->older) {
        size_t i = addr_slot(t, p->address, p->address_len);
        p->addr_chain = a[i];
        a[i] = p;
        if (p->inc_indexed)
            link_inc(t, p);
    }
    return true;
}

static bool grow(ac__peer_table *t) { return rehash(t, t->cap ? t->cap * 2 : 64); }

void ac__ptab_shrink(ac__peer_table *t)
{
    if (t->cap <= 64 || t->count >= t->cap / 8)
        return;
    size_t cap = 64;
    while (cap < 2 * t->count)
        cap *= 2;
    (void)rehash(t, cap); /* out of memory: keep the big one */
}

bool ac__ptab_add(ac__peer_table *t, ac__peer *p)
{
    if (t->count + 1 > t->cap && !grow(t) && t->cap == 0)
        return false; /* a full table only chains longer; none at all cannot hold it */
    p->newer = NULL;
    p->older = t->newest;
    if (t->newest)
        t->newest->newer = p;
    else
        t->oldest = p;
    t->newest = p;
    size_t i = addr_slot(t, p->address, p->address_len);
    p->addr_chain = t->by_addr[i];
    t->by_addr[i] = p;
    p->inc_indexed = false;
    if (p->incarnation)
        link_inc(t, p);
    p->in_table = true;
    t->count++;
    return true;
}

static void unlink_chain(ac__peer **head, ac__peer *p, size_t chain_offset)
{
    for (ac__peer **pp = head; *pp; pp = (ac__peer **)(void *)((char *)*pp + chain_offset))
        if (*pp == p) {
            *pp = *(ac__peer **)(void *)((char *)p + chain_offset);
            return;
        }
}

void ac__ptab_remove(ac__peer_table *t, ac__peer *p)
{
    if (!p->in_table)
        return;
    unlink_chain(&t->by_addr[addr_slot(t, p->address, p->address_len)], p,
                 offsetof(ac__peer, addr_chain));
    if (p->inc_indexed)
        unlink_chain(&t->by_inc[inc_slot(t, p->incarnation)], p, offsetof(ac__peer, inc_chain));
    if (p->newer)
        p->newer->older = p->older;
    else
        t->newest = p->older;
    if (p->older)
        p->older->newer = p->newer;
    else
        t->oldest = p->newer;
    p->newer = p->older = p->addr_chain = p->inc_chain = NULL;
    p->inc_indexed = p->in_table = false;
    t->count--;
}

void ac__ptab_index_inc(ac__peer_table *t, ac__peer *p)
{
    if (p->in_table && !p->inc_indexed && p->incarnation)
        link_inc(t, p);
}

ac__peer *ac__ptab_by_address(const ac__peer_table *t, const char *address, size_t len)
{
    if (!t->cap)
        return NULL;
    for (ac__peer *p = t->by_addr[addr_slot(t, address, len)]; p; p = p->addr_chain)
        if (p->address_len == len && memcmp(p->address, address, len) == 0)
            return p;
    return NULL;
}

ac__peer *ac__ptab_by_inc(const ac__peer_table *t, uint64_t inc, const ac__peer *self)
{
    if (!t->cap || !inc)
        return NULL;
    for (ac__peer *p = t->by_inc[inc_slot(t, inc)]; p; p = p->inc_chain)
        if (p != self && p->incarnation == inc &&
            atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP)
            return p;
    return NULL;
}

void ac__ptab_free(ac__peer_table *t)
{
    free(t->by_addr);
    free(t->by_inc);
    memset(t, 0, sizeof *t);
}
