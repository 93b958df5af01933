/*
 * Shared by the hedging tests: a routee whose latency and answer the test
 * sets per routee index, routers spawned over it, a clock driver for the
 * manual clock, and reads of the routers' metrics.
 *
 * The routee answers by scheduling its reply straight to the reply ref it
 * was given (ac_schedule_once with the request's sender as the target), so
 * that on the manual clock the reply reaches the router's slot on the
 * thread that advances the clock, inside ac_clock_advance: every effect of
 * moving time (a reply, an error, a hedge sent because of either or
 * because the hedge delay passed) has happened when the advance returns,
 * but for the routees' handling of newly sent requests, which
 * hg_advance waits for.
 */
#ifndef ACTORC_HG_SUPPORT_H
#define ACTORC_HG_SUPPORT_H

#include "ts_test.h"

#define HG_MAX 8
#define HG_WAIT_MS ((int64_t)(TS_WAIT_S * 1000))

/* TSan runs several times slower: big loops shrink there. */
#if defined(__SANITIZE_THREAD__)
#define HG_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HG_TSAN 1
#endif
#endif
#ifndef HG_TSAN
#define HG_TSAN 0
#endif

#define HG_SILENT (-1) /* a latency: never answer */
/* A request routees answer at once and do not count. */
#define HG_BARRIER "barrier"
/* A request a routee answers by failing its handler (ac_fail). */
#define HG_BOOM "boom"

typedef struct hg_data {
    ac_system *sys;
    ac_ref *router; /* borrowed from the spawn (released by the test) */
    /* per routee index 1..HG_MAX, set by the test */
    atomic_llong latency_ms[HG_MAX + 1]; /* HG_SILENT, 0 (at once), or ms */
    atomic_int error[HG_MAX + 1];        /* answer with a RouteeError */
    atomic_int block[HG_MAX + 1];        /* handle a request only once the gate opens */
    atomic_int keep[HG_MAX + 1];         /* keep the reply target in kept[k] */
    ts_gate gate;
    /* what routees did */
    atomic_llong starts[HG_MAX + 1];
    atomic_llong seen[HG_MAX + 1];      /* requests handled (counted once scheduled) */
    atomic_llong blocked[HG_MAX + 1];   /* handlers waiting at the gate */
    atomic_llong cancelled_in_receive[HG_MAX + 1]; /* ac_request_cancelled said true */
    /* the last request's reply target (retained; it keeps the router's
     * request record alive until released or replaced) */
    _Atomic(ac_ref *) kept[HG_MAX + 1];
    _Atomic(ac_ref *) self[HG_MAX + 1]; /* each routee's ref (borrowed) */
    atomic_llong bad;
    long long asks; /* primaries expected: asks made through hg_ask */
} hg_data;

/* A system (manual clock or not, metrics on) owned by the fixture. */
hg_data *hg_setup(ts_fixture *fx, const char *name, bool manual, int workers);
/* Behaviour of routee k. */
void hg_set(hg_data *d, int k, long long latency_ms, bool error);

extern const ac_actor_def hg_routee_def;

/* Spawn `props` (made with hg_routee_options) as "replicas" and wait for
 * its `size` routees to start. */
ac_ref *hg_spawn(hg_data *d, ac_props *props, int size);
ac_routee_options hg_routee_options(hg_data *d);

/* A request (a string "<key>") asked of the router; counted as a primary. */
ac_future *hg_ask(hg_data *d, const char *key, int64_t timeout_ms);
/* Requests sent to routees so far: the asks plus the hedges the router
 * counted. */
long long hg_sent(hg_data *d);
long long hg_seen_total(hg_data *d);
/* Wait until the routees have handled every request sent so far (a
 * hedged router's: scatter/gather's are counted by hg_barrier). */
void hg_quiesce(hg_data *d);
/* Wait until everything the router has sent so far to routees 1..size
 * has been handled: the router's turn is done with earlier messages when
 * it answers GetRoutees, and a routee with what was queued before a
 * barrier when it answers it. */
void hg_barrier(hg_data *d, int size);
/* Move the manual clock by `ms`, one millisecond at a time, waiting after
 * each for the routees to handle what was sent. */
void hg_advance(hg_data *d, int64_t ms);

/* Counter values by name and labels (0 when absent). */
uint64_t hg_counter(hg_data *d, const char *name, const char *const *labels, size_t n);
uint64_t hg_outcome(hg_data *d, const char *router, int k, const char *outcome);
/* Wait until routees 1..size of `router` have `total` outcomes counted: a
 * request's are counted once the last envelope naming it has gone, which
 * may be at the end of a routee's turn, after what the test waited for. */
void hg_wait_outcomes(hg_data *d, const char *router, int size, uint64_t total);

/* Checks on the test thread. */
void hg_assert_reply(ac_status st, const ac_answer *a, hg_data *d, int k, const char *key);
void hg_assert_aggregate(ac_status st, const ac_answer *a, const char *message, size_t members);
void hg_assert_pending(ac_future *f, const char *what);
ac_status hg_wait(ac_future *f, ac_answer *a);

#endif
