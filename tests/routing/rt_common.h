/*
 * Shared by the routing tests: a routee that records what it handles, and
 * helpers to drive a pool from the test thread.
 *
 * Every routee of a pool gets the same rt_pool as its user data (through
 * ac_routee_options.user_data) and finds its number k in its name
 * "routee-k". What the routees record lives under the pool's mutex, and
 * every change is broadcast on its condition variable, so the test thread
 * waits for exact counts without polling.
 *
 * The routee handles:
 *   int64 v       records v (in arrival order, per routee) and counts it;
 *                 the routee numbered `slow` sleeps slow_ms first
 *   rt_ping       replies with a string: its own path
 *   rt_fail       fails (ac_fail) with a "test.Boom" error
 * Anything else counts as bad.
 */
#ifndef ACTORC_RT_COMMON_H
#define ACTORC_RT_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "test_support.h"

#define RT_MAX 8     /* routees per pool, at most */
#define RT_MAXV 2048 /* values recorded per routee; counting goes on beyond */

/* Timeout of the asks the tests make through pools. */
#define RT_ASK_MS 5000

typedef struct rt_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Under mu. Index k is routee-k; index 0 collects routees whose name
     * could not be parsed (counted as bad too). */
    long long got[RT_MAX + 1];     /* int messages handled */
    long long arrived[RT_MAX + 1]; /* int messages whose handling began */
    long long total;               /* sum of got */
    long long arrived_total;       /* sum of arrived */
    long long pings[RT_MAX + 1];
    long long started[RT_MAX + 1]; /* pre_start runs (again on restart) */
    long long stopped[RT_MAX + 1]; /* post_stop runs (also before a restart) */
    long long bad;
    char bad_what[160];
    int64_t vals[RT_MAX + 1][RT_MAXV];
    /* Set before the pool is spawned, read-only afterwards. */
    int slow;    /* routee number that sleeps before each int; 0: none */
    int slow_ms;
} rt_pool;

void rt_pool_init(rt_pool *p);
/* Destroys the mutex and the condition variable (an ts_fx_data free_fn). */
void rt_pool_fini(void *p);
/* A pool record owned by the fixture (its one data block). */
rt_pool *rt_fx_pool(ts_fixture *fx);

extern const ac_actor_def rt_routee_def;
extern const ac_msg_type rt_ping_type; /* "test.Ping" */
extern const ac_msg_type rt_fail_type; /* "test.Fail" */
ac_msg *rt_ping(void);
ac_msg *rt_fail(void);

/* The number k of a routee name "routee-k", or 0. */
int rt_routee_number(const char *name);

/* Reads under the lock. */
long long rt_got(rt_pool *p, int k);
long long rt_total(rt_pool *p);
long long rt_pings(rt_pool *p, int k);
long long rt_started(rt_pool *p, int k);
long long rt_stopped(rt_pool *p, int k);
long long rt_bad(rt_pool *p, char *what, size_t cap);
/* The j-th value routee-k recorded, or INT64_MIN when out of range. */
int64_t rt_val(rt_pool *p, int k, long long j);

/* Wait (condition variable, bounded by timeout_s) until a condition over
 * the pool holds; `cond` runs with the lock held. Returns its last value. */
bool rt_wait(rt_pool *p, bool (*cond)(const rt_pool *p, const void *arg), const void *arg,
             double timeout_s);
bool rt_wait_total(rt_pool *p, long long target, double timeout_s);
bool rt_wait_arrived(rt_pool *p, long long target, double timeout_s);
bool rt_wait_started(rt_pool *p, int k, long long target, double timeout_s);
bool rt_wait_stopped(rt_pool *p, int k, long long target, double timeout_s);
bool rt_wait_pings(rt_pool *p, int k, long long target, double timeout_s);

/* Tell `router` the ints first, first+1, ..., first+count-1 with no sender.
 * False if a tell failed. */
bool rt_tell_ints(ac_ref *router, int64_t first, long long count);

/* Ask `target` a ping and return the replying routee (a new reference, the
 * caller's), or NULL with *status set (when status is non-NULL). */
ac_ref *rt_ask_routee(ac_ref *target, ac_status *status);

/* Ask pings through `router` until `run` asks in a row have been answered.
 * With round-robin-like routing and a pool that held `run` routees, that
 * proves a routee stopped before the loop has been pruned: otherwise one
 * of those asks would have reached it and failed. Returns the number of
 * asks made, or -1 when max_asks were not enough. */
int rt_ask_until_run(ac_ref *router, int run, int max_asks);

/* Check a round-robin batch: the ints 0..m*per-1 were sent after the
 * routees ids[0..m-1] (in pool order) had recorded before[i] values each.
 * Exact: each got `per` more, and for some rotation q the routee at
 * position (q + r) % m recorded r, r+m, r+2m, ... in order. On mismatch,
 * returns false with a description in why. */
bool rt_check_round_robin(rt_pool *p, const int *ids, int m, const long long *before,
                          long long per, char *why, size_t cap);

/* Spawn routee-1 … routee-n of rt_routee_def top-level, recording into
 * `p`, for a group router: out[k-1] is routee-k (the caller's
 * references). False (reported on stderr) when a spawn failed. */
bool rt_spawn_routees(ac_system *sys, rt_pool *p, int n, ac_ref **out);
/* Release refs[0..n). */
void rt_release_all(ac_ref **refs, int n);

/* Ask `router` GetRoutees and copy the routees it lists into out[0..cap)
 * (borrowed from the answer, which is released: valid while the caller
 * holds its own references to them). The count, or -1 on failure
 * (reported on stderr). */
long rt_routees(ac_ref *router, ac_ref **out, size_t cap);
/* Wait until GetRoutees lists exactly want[0..n), in that order. */
bool rt_wait_routees(ac_ref *router, ac_ref *const *want, size_t n, double timeout_s);

/* Spawn `props` (consumed) top-level; NULL is reported on stderr. */
ac_ref *rt_spawn(ac_system *sys, ac_props *props, const char *name);

/* Number of captured lines at `level` whose path equals `path`. */
size_t rt_log_count_at(ts_log_capture *c, ac_log_level level, const char *path);

#endif
