#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the pool record ---------------------------------------------------- */

void rt_pool_init(rt_pool *p)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
}

void rt_pool_fini(void *arg)
{
    rt_pool *p = arg;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

rt_pool *rt_fx_pool(ts_fixture *fx)
{
    rt_pool *p = ts_fx_data(fx, sizeof *p, rt_pool_fini);
    rt_pool_init(p);
    return p;
}

/* ---- the routee ----------------------------------------------------------- */

const ac_msg_type rt_ping_type = {.name = "test.Ping"};
const ac_msg_type rt_fail_type = {.name = "test.Fail"};

ac_msg *rt_ping(void) { return ac_msg_new(&rt_ping_type, 0); }
ac_msg *rt_fail(void) { return ac_msg_new(&rt_fail_type, 0); }

int rt_routee_number(const char *name)
{
    static const char prefix[] = "routee-";
    if (name == NULL || strncmp(name, prefix, sizeof prefix - 1) != 0) {
        return 0;
    }
    const char *digits = name + sizeof prefix - 1;
    char *end = NULL;
    long k = strtol(digits, &end, 10);
    if (end == digits || *end != '\0' || k < 1 || k > RT_MAX) {
        return 0;
    }
    return (int)k;
}

/* Record something wrong (lock held). */
static void note_bad(rt_pool *p, const char *what, const char *path)
{
    if (p->bad == 0) {
        snprintf(p->bad_what, sizeof p->bad_what, "%s at %s", what, path);
    }
    p->bad++;
}

static int routee_k(ac_ctx *ctx, rt_pool *p)
{
    int k = rt_routee_number(ac_self_name(ctx));
    if (k == 0) {
        pthread_mutex_lock(&p->mu);
        note_bad(p, "unexpected routee name", ac_self_path(ctx));
        pthread_mutex_unlock(&p->mu);
    }
    return k;
}

static void bump(rt_pool *p, long long *counter)
{
    pthread_mutex_lock(&p->mu);
    (*counter)++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void routee_pre_start(ac_ctx *ctx)
{
    rt_pool *p = ac_ctx_user_data(ctx);
    int k = routee_k(ctx, p);
    bump(p, &p->started[k]);
}

static void routee_post_stop(ac_ctx *ctx)
{
    rt_pool *p = ac_ctx_user_data(ctx);
    int k = routee_k(ctx, p);
    bump(p, &p->stopped[k]);
}

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    rt_pool *p = ac_ctx_user_data(ctx);
    int k = routee_k(ctx, p);
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        int64_t v = ac_msg_int64(msg);
        bool slow = k != 0 && k == p->slow;
        if (slow) {
            pthread_mutex_lock(&p->mu);
            p->arrived[k]++;
            p->arrived_total++;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            ts_sleep_ms(p->slow_ms);
        }
        pthread_mutex_lock(&p->mu);
        if (!slow) {
            p->arrived[k]++;
            p->arrived_total++;
        }
        if (p->got[k] < RT_MAXV) {
            p->vals[k][p->got[k]] = v;
        }
        p->got[k]++;
        p->total++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    } else if (ac_msg_is(msg, &rt_ping_type)) {
        /* Counted before the answer, so a caller that has the answer sees
         * the count. */
        bump(p, &p->pings[k]);
        ac_reply(ctx, ac_msg_str_new(ac_self_path(ctx)));
    } else if (ac_msg_is(msg, &rt_fail_type)) {
        ac_fail(ctx, ac_error_new("test.Boom", "%s was told to fail", ac_self_name(ctx)));
    } else {
        char what[96];
        snprintf(what, sizeof what, "unexpected message %s", ac_msg_type_name(msg));
        pthread_mutex_lock(&p->mu);
        note_bad(p, what, ac_self_path(ctx));
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

const ac_actor_def rt_routee_def = {
    .name = "Routee",
    .pre_start = routee_pre_start,
    .receive = routee_receive,
    .post_stop = routee_post_stop,
};

/* ---- reads ------------------------------------------------------------------ */

static long long read_ll(rt_pool *p, const long long *v)
{
    pthread_mutex_lock(&p->mu);
    long long x = *v;
    pthread_mutex_unlock(&p->mu);
    return x;
}

static int clamp_k(int k)
{
    return (k < 0 || k > RT_MAX) ? 0 : k;
}

long long rt_got(rt_pool *p, int k) { return read_ll(p, &p->got[clamp_k(k)]); }
long long rt_total(rt_pool *p) { return read_ll(p, &p->total); }
long long rt_pings(rt_pool *p, int k) { return read_ll(p, &p->pings[clamp_k(k)]); }
long long rt_started(rt_pool *p, int k) { return read_ll(p, &p->started[clamp_k(k)]); }
long long rt_stopped(rt_pool *p, int k) { return read_ll(p, &p->stopped[clamp_k(k)]); }

long long rt_bad(rt_pool *p, char *what, size_t cap)
{
    pthread_mutex_lock(&p->mu);
    long long n = p->bad;
    if (what != NULL && cap > 0) {
        snprintf(what, cap, "%s", p->bad_what);
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

int64_t rt_val(rt_pool *p, int k, long long j)
{
    int64_t v = INT64_MIN;
    pthread_mutex_lock(&p->mu);
    if (k >= 0 && k <= RT_MAX && j >= 0 && j < RT_MAXV && j < p->got[k]) {
        v = p->vals[k][j];
    }
    pthread_mutex_unlock(&p->mu);
    return v;
}

/* ---- waiting ------------------------------------------------------------------ */

bool rt_wait(rt_pool *p, bool (*cond)(const rt_pool *p, const void *arg), const void *arg,
             double timeout_s)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    long long ns = (long long)(timeout_s * 1e9);
    deadline.tv_sec += (time_t)(ns / 1000000000LL);
    deadline.tv_nsec += (long)(ns % 1000000000LL);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    bool ok;
    while (!(ok = cond(p, arg))) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) == ETIMEDOUT) {
            ok = cond(p, arg);
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

typedef struct goal {
    int k;
    long long target;
} goal;

static bool total_ge(const rt_pool *p, const void *arg)
{
    return p->total >= ((const goal *)arg)->target;
}

static bool arrived_ge(const rt_pool *p, const void *arg)
{
    return p->arrived_total >= ((const goal *)arg)->target;
}

static bool started_ge(const rt_pool *p, const void *arg)
{
    const goal *g = arg;
    return p->started[g->k] >= g->target;
}

static bool stopped_ge(const rt_pool *p, const void *arg)
{
    const goal *g = arg;
    return p->stopped[g->k] >= g->target;
}

static bool pings_ge(const rt_pool *p, const void *arg)
{
    const goal *g = arg;
    return p->pings[g->k] >= g->target;
}

bool rt_wait_pings(rt_pool *p, int k, long long target, double timeout_s)
{
    goal g = {clamp_k(k), target};
    return rt_wait(p, pings_ge, &g, timeout_s);
}

bool rt_wait_total(rt_pool *p, long long target, double timeout_s)
{
    goal g = {0, target};
    return rt_wait(p, total_ge, &g, timeout_s);
}

bool rt_wait_arrived(rt_pool *p, long long target, double timeout_s)
{
    goal g = {0, target};
    return rt_wait(p, arrived_ge, &g, timeout_s);
}

bool rt_wait_started(rt_pool *p, int k, long long target, double timeout_s)
{
    goal g = {clamp_k(k), target};
    return rt_wait(p, started_ge, &g, timeout_s);
}

bool rt_wait_stopped(rt_pool *p, int k, long long target, double timeout_s)
{
    goal g = {clamp_k(k), target};
    return rt_wait(p, stopped_ge, &g, timeout_s);
}

/* ---- driving a pool ------------------------------------------------------------ */

bool rt_tell_ints(ac_ref *router, int64_t first, long long count)
{
    for (long long i = 0; i < count; i++) {
        ac_msg *m = ac_msg_int64_new(first + i);
        if (m == NULL || ac_tell(router, m, NULL) != AC_OK) {
            return false;
        }
    }
    return true;
}

ac_ref *rt_ask_routee(ac_ref *target, ac_status *status)
{
    ac_answer a;
    ac_status st = ac_ask_wait(target, rt_ping(), RT_ASK_MS, &a);
    if (status != NULL) {
        *status = st;
    }
    if (st != AC_OK) {
        ac_answer_release(&a);
        return NULL;
    }
    ac_ref *who = a.sender ? ac_ref_retain(a.sender) : NULL;
    ac_answer_release(&a);
    return who;
}

int rt_ask_until_run(ac_ref *router, int run, int max_asks)
{
    int in_a_row = 0;
    for (int asks = 1; asks <= max_asks; asks++) {
        ac_ref *who = rt_ask_routee(router, NULL);
        if (who != NULL) {
            ac_ref_release(who);
            if (++in_a_row == run) {
                return asks;
            }
        } else {
            in_a_row = 0;
        }
    }
    return -1;
}

bool rt_check_round_robin(rt_pool *p, const int *ids, int m, const long long *before,
                          long long per, char *why, size_t cap)
{
    for (int i = 0; i < m; i++) {
        long long got = rt_got(p, ids[i]) - before[i];
        if (got != per) {
            snprintf(why, cap, "routee-%d got %lld messages, expected %lld", ids[i], got, per);
            return false;
        }
    }
    /* The position whose first new value is 0. */
    int q = -1;
    for (int i = 0; i < m; i++) {
        if (rt_val(p, ids[i], before[i]) == 0) {
            q = i;
        }
    }
    if (q < 0) {
        snprintf(why, cap, "no routee got message 0 first");
        return false;
    }
    for (int r = 0; r < m; r++) {
        int id = ids[(q + r) % m];
        long long b = before[(q + r) % m];
        for (long long t = 0; t < per; t++) {
            int64_t v = rt_val(p, id, b + t);
            int64_t want = r + (int64_t)m * t;
            if (v != want) {
                snprintf(why, cap, "routee-%d's message %lld is %" PRId64 ", expected %" PRId64,
                         id, t, v, want);
                return false;
            }
        }
    }
    return true;
}

ac_ref *rt_spawn(ac_system *sys, ac_props *props, const char *name)
{
    if (props == NULL) {
        fprintf(stderr, "rt_spawn(%s): props is NULL: %s\n", name ? name : "(anon)",
                ac_last_error());
    }
    ac_ref *r = ac_spawn(sys, props, name);
    if (r == NULL) {
        fprintf(stderr, "ac_spawn(%s): %s (%s)\n", name ? name : "(anon)",
                ac_status_name(ac_last_status()), ac_last_error());
    }
    return r;
}

size_t rt_log_count_at(ts_log_capture *c, ac_log_level level, const char *path)
{
    size_t n = 0;
    for (size_t i = 0; i < ts_log_count(c); i++) {
        ts_log_line line;
        if (ts_log_get(c, i, &line)) {
            if (line.level == level && line.path != NULL && strcmp(line.path, path) == 0) {
                n++;
            }
            ts_log_line_clear(&line);
        }
    }
    return n;
}

/* ---- groups ---------------------------------------------------------------- */

bool rt_spawn_routees(ac_system *sys, rt_pool *p, int n, ac_ref **out)
{
    for (int k = 1; k <= n; k++) {
        char name[32];
        snprintf(name, sizeof name, "routee-%d", k);
        out[k - 1] = ts_spawn(sys, &rt_routee_def, p, name);
        if (out[k - 1] == NULL) {
            fprintf(stderr, "spawning %s: %s\n", name, ac_last_error());
            rt_release_all(out, k - 1);
            return false;
        }
    }
    return true;
}

void rt_release_all(ac_ref **refs, int n)
{
    for (int i = 0; i < n; i++) {
        ac_ref_release(refs[i]);
        refs[i] = NULL;
    }
}

long rt_routees(ac_ref *router, ac_ref **out, size_t cap)
{
    ac_answer a;
    ac_status st = ac_ask_wait(router, ac_router_get_routees_msg(), RT_ASK_MS, &a);
    if (st != AC_OK) {
        fprintf(stderr, "GetRoutees of %s: %s\n", ac_ref_path(router), ac_status_name(st));
        ac_answer_release(&a);
        return -1;
    }
    size_t n = ac_routees_count(a.reply);
    for (size_t i = 0; i < n && i < cap; i++) {
        out[i] = ac_routees_at(a.reply, i);
    }
    ac_answer_release(&a);
    return (long)n;
}

static bool routees_are(ac_ref *router, ac_ref *const *want, size_t n)
{
    ac_ref *got[64];
    long k = rt_routees(router, got, 64);
    if (k != (long)n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            return false;
        }
    }
    return true;
}

bool rt_wait_routees(ac_ref *router, ac_ref *const *want, size_t n, double timeout_s)
{
    double end = ts_now() + timeout_s;
    while (!routees_are(router, want, n)) {
        if (ts_now() > end) {
            return false;
        }
        ts_sleep_ms(1);
    }
    return true;
}
