/*
 * What the two halves of the keepers of many keys share: the thread and
 * its schedule (etcd_keepers.c) and the calls that add keys, read their
 * state and stop it (etcd_keepers_api.c). The design is atop
 * etcd_keepers.c.
 */
#ifndef AC_CLUSTER_ETCD_KEEPERS_INTERNAL_H
#define AC_CLUSTER_ETCD_KEEPERS_INTERNAL_H

#include "cluster/etcd_internal.h"

#define BATCH_MAX 500 /* leases kept alive in one turn */
/* Leases in one keep-alive request: {"ID":"<19 digits>"} and a newline
 * each, 464 bytes at most, within one read of the gateway's (512). */
#define PER_REQUEST 16
#define IDLE_MS 1000 /* the longest nap with nothing due */

/* One key held under a lease. */
typedef struct ac__etcd_kept {
    char *key;
    char *value;
    size_t value_len;
    int64_t ttl_s;
    char what[96];
    /* The thread's own. */
    int64_t lease, granted_ttl_s;
    bool put_done;
    uint64_t due_ms;
    ac__etcd_backoff backoff;
    bool answered; /* in the batch being sent */
    ac__etcd_reg_info info; /* under k->t.lock */
} ac__etcd_kept;

struct ac__etcd_keepers {
    ac__etcd *e;
    ac__etcd_thread t;
    ac__etcd_session session; /* t.stop's: the thread's connection */
    /* Under t.lock: every entry, in the order added, and the counts. */
    ac__etcd_kept **all;
    size_t n, cap;
    ac__etcd_keepers_stats stats;
    bool kicked; /* under t.stop.lock: entries were added */
    /* The thread's own. */
    size_t adopted; /* entries of all[] taken in */
    ac__etcd_kept **heap; /* registered, or waiting out a backoff: by due time */
    size_t heap_n;
    ac__etcd_kept **todo; /* to be granted a lease and put, at once */
    size_t todo_n;
    uint64_t rng;
    char *body; /* a batch's request */
};

/* The thread's body; arg is the ac__etcd_keepers. */
void *ac__etcd_keepers_main(void *arg);

#endif
