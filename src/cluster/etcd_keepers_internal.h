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
    ac__etcd_thread t; /* keeps the leases alive; its lock guards what is shared */
    ac__etcd_thread r; /* the registrar: grants leases and puts keys */
    ac__etcd_session session;   /* t's connection */
    ac__etcd_session r_session; /* r's connection */
    /* Under t.lock: every entry, in the order added; those for the
     * registrar (todo) and those it registered (inbox), each room for
     * every entry; the counts. An entry is in one place at a time, and
     * the thread that took it from there owns its lease and schedule. */
    ac__etcd_kept **all, **todo, **inbox;
    size_t n, cap, todo_n, inbox_n;
    ac__etcd_keepers_stats stats;
    bool kicked;   /* under t.stop.lock: the inbox has entries */
    bool r_kicked; /* under r.stop.lock: todo has entries */
    /* The keep-alive thread's own: the registered entries by due time. */
    ac__etcd_kept **heap;
    size_t heap_n, heap_cap;
    uint64_t rng; /* for the renewals' jitter */
    char *body;   /* a keep-alive request */
    /* The registrar's own. */
    uint64_t r_rng;
};

/* The threads' bodies; arg is the ac__etcd_keepers. */
void *ac__etcd_keepers_main(void *arg);
void *ac__etcd_registrar_main(void *arg);

#endif
