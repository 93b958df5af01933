/*
 * A node's peers by address and by incarnation (peer_table.c): two
 * chained hash tables over the same peers, and a list in order of
 * arrival (newest first) for sweeps and for finding the oldest. Every
 * peer not DOWN is in it, this node's own included. Under the node lock;
 * no allocation but the buckets, which grow with the count and stay
 * bounded by the node's max_peers.
 */
#ifndef AC_REMOTE_PEER_TABLE_H
#define AC_REMOTE_PEER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ac__peer ac__peer;

typedef struct ac__peer_table {
    ac__peer **by_addr; /* buckets, chained through addr_chain */
    ac__peer **by_inc;  /* peers whose incarnation is known, through inc_chain */
    size_t cap;         /* buckets of each, a power of two (0: none yet) */
    size_t count;
    ac__peer *newest, *oldest; /* the list, through newer/older */
} ac__peer_table;

/* Add p (its address set; its incarnation indexed if not 0). False when
 * out of memory for the buckets (p is not added). */
bool ac__ptab_add(ac__peer_table *t, ac__peer *p);
/* Take p out of both indexes and the list (no-op if not in it). */
void ac__ptab_remove(ac__peer_table *t, ac__peer *p);
/* p's incarnation was 0 and is now known: index it. */
void ac__ptab_index_inc(ac__peer_table *t, ac__peer *p);
ac__peer *ac__ptab_by_address(const ac__peer_table *t, const char *address, size_t len);
/* A peer of that incarnation that is UP (not this node's own: `self`). */
ac__peer *ac__ptab_by_inc(const ac__peer_table *t, uint64_t inc, const ac__peer *self);
/* After a wave of peers has gone: smaller buckets, when they are mostly
 * empty. */
void ac__ptab_shrink(ac__peer_table *t);
void ac__ptab_free(ac__peer_table *t);

#endif
