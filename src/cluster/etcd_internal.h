/*
 * What the parts of the etcd client share: the client itself, the
 * requests (etcd.c), the stop signal and the backoff that the keeper's
 * and watcher's threads wait on (etcd_retry.c), and the calls of etcd.h
 * in the form those threads use: stoppable, with their failure written
 * to a buffer of the caller's rather than to the thread's last error.
 *
 * Lock order: a stop signal's lock is taken alone; nothing else is
 * locked while it is held.
 */
#ifndef AC_CLUSTER_ETCD_INTERNAL_H
#define AC_CLUSTER_ETCD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cluster/etcd.h"
#include "core/base.h"

struct ac__etcd {
    char *endpoint[AC__ETCD_MAX_ENDPOINTS]; /* normalised: no trailing '/' */
    size_t n;
    ac__etcd_options o; /* defaults filled in */
    /* The endpoint that answered last, where the next request starts.
     * Relaxed: a hint; any value is correct. */
    atomic_size_t preferred;
    /* Keepers and watchers running on this client; close refuses while
     * it is not 0. Relaxed: the creator and close synchronise otherwise
     * (the caller's own ordering of register/stop before close). */
    atomic_int users;
};

/* ---- failures ----------------------------------------------------------- */

/* The reason for a failure, for whoever reports it: the public calls
 * record it as the last error, the threads put it in their status. */
typedef struct ac__etcd_err {
    char msg[400];
} ac__etcd_err;

/* Write the message and return status. */
ac_status ac__etcd_errf(ac__etcd_err *err, ac_status status, const char *fmt, ...)
    AC_PRINTF(3, 4);

/* Up to `max` bytes of s[0..n) in quotes, non-printable bytes as \xNN,
 * "..." when cut: for naming keys in messages. Returns buf. */
const char *ac__etcd_quote(const char *s, size_t n, char *buf, size_t cap);

/* ---- the stop signal ----------------------------------------------------- */

/* One thread's handles, reused for each of its requests so that the
 * connection to etcd stays open between them (libcurl keeps it in the
 * multi handle's cache). Used by one thread at a time. */
typedef struct ac__etcd_session {
    CURLM *m;
    CURL *h;
} ac__etcd_session;

/* What a thread waits on: its sleeps and its requests end as soon as it
 * is raised. A request registers its curl multi handle as `active`
 * while it runs, so that raising the signal wakes its poll. */
typedef struct ac__etcd_stop {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    /* Written under lock; read without it by loops between steps
     * (acquire, pairing with the release store in ac__etcd_stop_raise). */
    atomic_bool raised;
    CURLM *active; /* under lock */
    /* The thread's session, when it has one: every request made with this
     * stop signal goes over its connection. NULL: a connection each.
     * Set before the thread's first request; the thread's own. */
    ac__etcd_session *session;
} ac__etcd_stop;

ac_status ac__etcd_stop_init(ac__etcd_stop *s);
void ac__etcd_stop_fini(ac__etcd_stop *s);
/* Raise the signal: sleeps and requests under way end. Any thread. */
void ac__etcd_stop_raise(ac__etcd_stop *s);
bool ac__etcd_stop_raised(ac__etcd_stop *s);
/* Sleep ms milliseconds, or until raised; false when raised. */
bool ac__etcd_stop_sleep(ac__etcd_stop *s, uint64_t ms);
/* A request's multi handle, woken when the signal is raised; false (and
 * nothing registered) when it already is. */
bool ac__etcd_stop_enter(ac__etcd_stop *s, CURLM *m);
void ac__etcd_stop_leave(ac__etcd_stop *s);

/* ---- a client's thread ----------------------------------------------------- */

/* What the keeper and the watcher share: their thread, its stop signal,
 * and the lock of what they report. While the thread runs it counts as a
 * use of the client (ac__etcd.users). */
typedef struct ac__etcd_thread {
    ac__etcd_stop stop;
    pthread_t thread;
    pthread_mutex_t lock; /* guards what the thread reports */
} ac__etcd_thread;

/* Make the lock and the stop signal, count a use of e and run main(arg)
 * on a thread of its own. On failure nothing is left, and the error
 * names `what` ("etcd watch") and `whose` thread ("the watcher's"). */
ac_status ac__etcd_thread_start(ac__etcd_thread *t, ac__etcd *e, void *(*main)(void *), void *arg,
                                const char *what, const char *whose);
/* Raise the stop and join the thread. Not from the thread itself. */
void ac__etcd_thread_join(ac__etcd_thread *t);
/* Once joined: the use of e given back, the stop signal and lock gone. */
void ac__etcd_thread_fini(ac__etcd_thread *t, ac__etcd *e);

/* ---- backoff -------------------------------------------------------------- */

/* Capped exponential backoff with jitter; one per thread. */
typedef struct ac__etcd_backoff {
    const ac__etcd_options *o;
    uint64_t next_ms; /* the delay before jitter of the next retry */
    uint64_t attempt; /* failures in a row */
    uint64_t rng;     /* xorshift state */
} ac__etcd_backoff;

void ac__etcd_backoff_init(ac__etcd_backoff *b, const ac__etcd_options *o);
/* After a failure: count it and return the delay to wait. */
uint64_t ac__etcd_backoff_next(ac__etcd_backoff *b);
/* After a success: the next failure waits the initial delay again. */
void ac__etcd_backoff_reset(ac__etcd_backoff *b);

/* ---- requests -------------------------------------------------------------- */

/* libcurl's global set-up, once per process (open calls it). */
ac_status ac__etcd_http_init(void);

/* POST body (a JSON object, which this steals) to path on the endpoints
 * in turn; etcd's answer, a JSON object, in *reply. `what` names the
 * call in messages. stop may be NULL. A raised stop ends the request with
 * AC_ETERMINATED. */
ac_status ac__etcd_call(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                        json_t *body, json_t **reply, ac__etcd_err *err);

/* A stream's consumer: one line of the answer (without its newline,
 * NUL-terminated in place). Returns false to end the stream. */
typedef bool (*ac__etcd_line_fn)(char *line, size_t len, void *ctx);

/* POST body (stolen) to path and hand each line of the answer to
 * on_line until it returns false (AC_OK), the stream ends or breaks
 * (AC_EFAILED), or stop is raised (AC_ETERMINATED). No overall
 * timeout; TCP keep-alive notices a peer that went silent. */
ac_status ac__etcd_stream(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                          json_t *body, ac__etcd_line_fn on_line, void *ctx,
                          ac__etcd_err *err);

ac_status ac__etcd_session_init(ac__etcd_session *s);
/* Its connections closed. Idempotent. */
void ac__etcd_session_fini(ac__etcd_session *s);

/* POST text to path (over stop's session when it has one) and hand each
 * line of a 200 answer to on_line until it returns false or the answer
 * ends (AC_OK); within timeout_ms, or the request timeout when that is
 * shorter or timeout_ms is 0. An answer other than 200 is etcd's error. */
ac_status ac__etcd_lines(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                         const char *text, uint32_t timeout_ms, ac__etcd_line_fn on_line,
                         void *ctx, ac__etcd_err *err);

/* An answer that is an error object ({"error": ...}) of a stream: its
 * status and message into err; AC_OK when it is not one. */
ac_status ac__etcd_stream_error(json_t *msg, const char *what, ac__etcd_err *err);

/* ---- JSON ----------------------------------------------------------------- */

/* An int64 member (etcd writes them as strings; absent means 0). False
 * when it is there but not an integer. */
bool ac__etcd_json_i64(json_t *obj, const char *name, int64_t *out);
/* A base64 member decoded into a NUL-terminated copy (absent: empty). */
ac_status ac__etcd_json_bytes(json_t *obj, const char *name, char **out, size_t *len,
                              const char *what, ac__etcd_err *err);
/* Set a base64 member / an int64 member (as a string). False: no memory. */
bool ac__etcd_json_set_bytes(json_t *obj, const char *name, const void *p, size_t n);
bool ac__etcd_json_set_i64(json_t *obj, const char *name, int64_t v);
/* Set "key" and "range_end" for every key starting with prefix. */
bool ac__etcd_json_set_prefix(json_t *obj, const char *prefix, size_t n);

/* ---- the calls, for threads ------------------------------------------------ */

ac_status ac__etcd_grant_in(ac__etcd *e, ac__etcd_stop *stop, int64_t ttl_s, int64_t *lease_id,
                            int64_t *granted_ttl_s, ac__etcd_err *err);
ac_status ac__etcd_keepalive_in(ac__etcd *e, ac__etcd_stop *stop, int64_t lease_id,
                                int64_t *ttl_left_s, ac__etcd_err *err);
ac_status ac__etcd_revoke_in(ac__etcd *e, ac__etcd_stop *stop, int64_t lease_id,
                             ac__etcd_err *err);
ac_status ac__etcd_put_in(ac__etcd *e, ac__etcd_stop *stop, const char *key, const void *value,
                          size_t value_len, int64_t lease_id, ac__etcd_err *err);
ac_status ac__etcd_get_prefix_in(ac__etcd *e, ac__etcd_stop *stop, const char *prefix,
                                 ac__etcd_kvs *out, ac__etcd_err *err);

/* Check a key or prefix argument; `what` names the call. */
ac_status ac__etcd_check_key(const char *key, bool may_be_empty, const char *what,
                             ac__etcd_err *err);

#endif
