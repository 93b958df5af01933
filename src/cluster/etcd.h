/*
 * An etcd v3 client for cluster membership, over etcd's JSON gateway
 * (etcd.c, etcd_keeper.c, etcd_watch.c). Cluster layer: the actorc_etcd
 * library, on libcurl and jansson.
 *
 * What membership needs and no more: leases (grant, one keep-alive,
 * revoke), put, delete and a prefix get; a keeper that holds one key
 * under a lease for as long as it runs; a watcher that reports every
 * change under a prefix. Keys are NUL-terminated strings (any byte but
 * NUL); values are bytes. Keys and values travel in base64.
 *
 * Endpoints. A request goes to the endpoint that last answered, then to
 * the others in turn; one that cannot be reached (or answers 503) is
 * skipped. The first answer counts, an error from etcd included: etcd
 * agrees with itself, so asking another member changes nothing.
 *
 * Errors. Every call returns an ac_status and records the reason as the
 * calling thread's last error (ac_last_error): AC_EINVAL for bad
 * arguments, AC_ENOMEM, AC_EFAILED when no endpoint answered (each
 * one's reason is in the message), AC_ETIMEOUT when every endpoint
 * timed out, AC_ENOTFOUND for a lease etcd does not know, AC_EPROTO for
 * an answer that is not what the gateway sends. One-shot calls do not
 * retry; the keeper and the watcher retry failures with capped
 * exponential backoff and say why in their status, and each retry is
 * reported to the options' on_retry, for the caller to log.
 *
 * Threads. A client is used from any number of threads at once. The
 * keeper and the watcher each run a thread of their own; their handles
 * may be read (status) from any thread, and are stopped from any thread
 * but their own (not from an on_event or on_retry callback).
 */
#ifndef AC_CLUSTER_ETCD_H
#define AC_CLUSTER_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/status.h"

#define AC__ETCD_MAX_ENDPOINTS 16
/* Longest endpoint URL accepted. */
#define AC__ETCD_MAX_URL 255
/* etcd's largest lease TTL, in seconds. */
#define AC__ETCD_MAX_TTL 9000000000ll

typedef struct ac__etcd ac__etcd;

/* A failure the keeper or the watcher is about to retry. */
typedef struct ac__etcd_retry {
    const char *what;    /* "register 'key'", "watch 'prefix'" */
    ac_status status;    /* of the failure */
    const char *message; /* what failed and why */
    uint64_t attempt;    /* failures in a row, from 1 */
    uint64_t delay_ms;   /* before the next attempt */
} ac__etcd_retry;

/* Zero (or NULL options) gives each default. */
typedef struct ac__etcd_options {
    uint32_t request_timeout_ms; /* one request to one endpoint; default 2000 */
    uint32_t connect_timeout_ms; /* default 1000, at most request_timeout_ms */
    uint32_t backoff_initial_ms; /* first retry delay; default 100 */
    uint32_t backoff_max_ms;     /* the delay doubles up to this; default 5000 */
    uint32_t backoff_jitter_pct; /* a delay is cut by up to this share at random,
                                    1..100; default 20 */
    /* Called from the keeper's or watcher's thread before each retry;
     * may be NULL. It must not stop the keeper or watcher it reports. */
    void (*on_retry)(const ac__etcd_retry *retry, void *user);
    void *user;
} ac__etcd_options;

/* A client for the cluster whose members answer at endpoints, URLs like
 * "http://127.0.0.1:2379" (http or https, a host, an optional port, no
 * path). NULL with the last error set for bad endpoints or options.
 * Any thread. */
ac__etcd *ac__etcd_open(const char *const *endpoints, size_t n, const ac__etcd_options *o);
/* Free the client. Refused (AC_EINVAL) while a keeper or watcher made
 * from it still runs. NULL is a no-op. Any thread, once nothing else
 * uses the client. */
ac_status ac__etcd_close(ac__etcd *e);

/* ---- leases ------------------------------------------------------------ */

/* A lease of ttl_s seconds (1..AC__ETCD_MAX_TTL; etcd raises a TTL
 * below its minimum, about 2 s, to that minimum). Its id in *lease_id,
 * the TTL granted in *granted_ttl_s (may be NULL). */
ac_status ac__etcd_lease_grant(ac__etcd *e, int64_t ttl_s, int64_t *lease_id,
                               int64_t *granted_ttl_s);
/* Renew a lease once; its fresh TTL in *ttl_left_s (may be NULL).
 * AC_ENOTFOUND when the lease has expired or was revoked. */
ac_status ac__etcd_lease_keepalive_once(ac__etcd *e, int64_t lease_id, int64_t *ttl_left_s);
/* Revoke a lease: the keys put under it are deleted at once.
 * AC_ENOTFOUND when etcd does not know it. */
ac_status ac__etcd_lease_revoke(ac__etcd *e, int64_t lease_id);

/* ---- keys -------------------------------------------------------------- */

/* Set key (non-empty) to value_len bytes of value (NULL when value_len
 * is 0), under lease_id (0: none; the key then lives until deleted). */
ac_status ac__etcd_put(ac__etcd *e, const char *key, const void *value, size_t value_len,
                       int64_t lease_id);
/* Delete key; how many keys went in *deleted (0 or 1; may be NULL). */
ac_status ac__etcd_delete(ac__etcd *e, const char *key, int64_t *deleted);

/* A key and its value as etcd holds them. key and value are
 * NUL-terminated copies (a key written by another client may hold NULs:
 * key_len counts them). */
typedef struct ac__etcd_kv {
    char *key;
    size_t key_len;
    char *value;
    size_t value_len;
    int64_t mod_revision; /* the revision of its last change */
    int64_t lease;        /* 0: none */
} ac__etcd_kv;

/* The keys under a prefix, in key order, at one revision. */
typedef struct ac__etcd_kvs {
    ac__etcd_kv *kv;
    size_t count;
    int64_t revision; /* of the store when it was read */
} ac__etcd_kvs;

/* Every key that starts with prefix ("" for every key) into *out, which
 * ac__etcd_kvs_fini frees. *out is zeroed on failure. */
ac_status ac__etcd_get_prefix(ac__etcd *e, const char *prefix, ac__etcd_kvs *out);
/* Free what a get returned; the struct is zeroed. */
void ac__etcd_kvs_fini(ac__etcd_kvs *kvs);

/* ---- the keeper: one key held under a lease ---------------------------- */

typedef struct ac__etcd_reg ac__etcd_reg;

typedef enum ac__etcd_reg_state {
    AC__ETCD_REG_STARTING,   /* the first attempt is under way */
    AC__ETCD_REG_REGISTERED, /* the key is in etcd, its lease kept alive */
    AC__ETCD_REG_RETRYING,   /* an attempt failed: see why */
} ac__etcd_reg_state;

typedef struct ac__etcd_reg_info {
    ac__etcd_reg_state state;
    ac_status status;      /* of the last failure; AC_OK while registered */
    char why[512];         /* what it is doing, or what failed */
    int64_t lease_id;      /* the lease held; 0 when none */
    uint64_t registrations; /* times the key was put under a new lease */
    uint64_t failures;     /* failed attempts, in all */
    /* When the request that last granted or kept alive the lease was
     * sent (ms of ac__now_ns, monotonic; 0: never), and the lease's TTL
     * as granted: etcd forgets the lease ttl_s after renewed_ms at the
     * latest, unless renewed again (a holder's fencing reads these). */
    uint64_t renewed_ms;
    uint64_t keepalives; /* keep-alives etcd answered, over every lease */
    int64_t ttl_s;
} ac__etcd_reg_info;

/* Start a thread that grants a lease of ttl_s seconds (1 to
 * AC__ETCD_MAX_TTL; etcd raises a shorter one to its minimum, about 2 s),
 * puts key = value under it and keeps it alive every third of its TTL.
 * A lost lease (expired, or forgotten by a restarted etcd) is replaced
 * and the key put again; while etcd is unreachable the thread retries
 * with backoff. The handle in *reg. Any thread. */
ac_status ac__etcd_register(ac__etcd *e, const char *key, const void *value, size_t value_len,
                            int64_t ttl_s, ac__etcd_reg **reg);
/* A snapshot of the keeper's state. Any thread. */
ac_status ac__etcd_reg_status(ac__etcd_reg *reg, ac__etcd_reg_info *info);
/* Stop the keeper and revoke its lease, which deletes the key. Takes at
 * most one request's time per endpoint. The handle is freed whatever
 * the revoke's outcome, which is returned (AC_OK also when there was no
 * lease to revoke). NULL is a no-op. Any thread but the keeper's. */
ac_status ac__etcd_unregister(ac__etcd_reg *reg);

/* ---- keepers of many keys: one thread for all of them ------------------ */

/* What ac__etcd_register does for one key, for any number of keys on two
 * threads (one grants and puts, one keeps alive) and two HTTP
 * connections kept open: each key under a lease of its own (so each can
 * expire alone), the keep-alives that fall due together sent sixteen to
 * a request. For a process that hosts many members. */
typedef struct ac__etcd_keepers ac__etcd_keepers;

typedef struct ac__etcd_keepers_stats {
    uint64_t keys;       /* added */
    uint64_t keepalives; /* leases kept alive, as answered by etcd */
    uint64_t requests;   /* HTTP requests sent: grants, puts, keep-alive batches */
    uint64_t batches;    /* of which keep-alive requests */
    uint64_t failures;   /* failed attempts (each retried) */
    uint64_t lost;       /* of which leases etcd no longer had */
    char last_failure[200]; /* why the last attempt failed; "" if none did */
} ac__etcd_keepers_stats;

/* Start the threads, with no keys yet. Any thread. */
ac_status ac__etcd_keepers_start(ac__etcd *e, ac__etcd_keepers **k);
/* Hold key = value under a lease of ttl_s seconds (as
 * ac__etcd_register); its number, for the status, in *id. Any thread. */
ac_status ac__etcd_keepers_add(ac__etcd_keepers *k, const char *key, const void *value,
                               size_t value_len, int64_t ttl_s, size_t *id);
/* A snapshot of one key's state, as ac__etcd_reg_status. Any thread. */
ac_status ac__etcd_keepers_status(ac__etcd_keepers *k, size_t id, ac__etcd_reg_info *info);
/* The counts so far. Any thread. */
ac_status ac__etcd_keepers_counts(ac__etcd_keepers *k, ac__etcd_keepers_stats *out);
/* Stop the threads and revoke every lease (which deletes the keys); the
 * first revoke that failed is returned, the handle freed either way.
 * NULL is a no-op. Any thread but the keepers'. */
ac_status ac__etcd_keepers_stop(ac__etcd_keepers *k);

/* ---- the watcher: every change under a prefix --------------------------- */

typedef struct ac__etcd_watch ac__etcd_watch;

typedef enum ac__etcd_event_kind {
    AC__ETCD_PUT,
    AC__ETCD_DELETE,
} ac__etcd_event_kind;

/* One change. key and value are NUL-terminated and valid during the
 * callback only; a DELETE has no value (NULL, 0). */
typedef struct ac__etcd_event {
    ac__etcd_event_kind kind;
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
    int64_t mod_revision; /* of the change; for a DELETE found by a re-list, the list's */
} ac__etcd_event;

typedef void (*ac__etcd_event_fn)(const ac__etcd_event *event, void *user);

typedef enum ac__etcd_watch_state {
    AC__ETCD_WATCH_LISTING,  /* reading the prefix */
    AC__ETCD_WATCH_WATCHING, /* the stream is open */
    AC__ETCD_WATCH_RETRYING, /* a list or the stream failed: see why */
} ac__etcd_watch_state;

typedef struct ac__etcd_watch_info {
    ac__etcd_watch_state state;
    ac_status status;  /* of the last failure; AC_OK while all is well */
    char why[512];
    int64_t revision;  /* the latest revision seen */
    uint64_t lists;    /* successful lists of the prefix, the first included */
    uint64_t failures; /* failed lists and streams, in all */
    size_t keys;       /* keys under the prefix, as far as the watcher knows */
} ac__etcd_watch_info;

/* Start a thread that reports the keys under prefix to on_event: first a
 * PUT for each key there, then each change as etcd streams it. After a
 * lost stream (etcd restarted, unreachable, the revision compacted) it
 * lists the prefix again, with backoff while that fails, and reports
 * the difference: a DELETE for each key gone, a PUT for each key new or
 * changed; so the events always add up to etcd's content. on_event runs
 * on the watcher's thread, one event at a time. The handle in *w. Any
 * thread. */
ac_status ac__etcd_watch_prefix(ac__etcd *e, const char *prefix, ac__etcd_event_fn on_event,
                                void *user, ac__etcd_watch **w);
/* A snapshot of the watcher's state. Any thread. */
ac_status ac__etcd_watch_status(ac__etcd_watch *w, ac__etcd_watch_info *info);
/* Stop the watcher: returns at once when no event is being handled, and
 * on_event is not called after it returns. NULL is a no-op. Any thread
 * but the watcher's. */
ac_status ac__etcd_watch_stop(ac__etcd_watch *w);

#endif
