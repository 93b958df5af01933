/*
 * The scatter/gather workloads of actorc-bench: the peers' scatter_seq,
 * scatter_seq_in_R / scatter_seq and scatter_par (see their bench.cpp and
 * bench.erl), plus two of actorc's own, scatter_tail and scatter_open.
 *
 * All of them ask a scatter/gather-first-completed router of 3 routees
 * (ac_router_scatter_gather_first_completed). The peers have no such
 * router: CAF's and Erlang's caller sends to the three routees itself and
 * takes the first echo, so their scatter is one hop shorter than actorc's
 * (caller -> router -> routees -> caller; a routee's reply goes from the
 * routee's thread straight to the caller).
 *
 *   scatter_seq         the main thread, blocked in ac_ask_wait; 1,000
 *                       warm-up + 5,000 sequential scatters
 *   scatter_seq_in      an actor caller, ac_tell(router, msg, self): the
 *                       winner's reply arrives as an ordinary message;
 *                       same counts
 *   scatter_seq_in_ask  the same caller with ac_ask_in and a continuation
 *   scatter_par         an actor caller fires 1,000 scatters in one turn
 *                       and times until the last of their first replies;
 *                       2 warm-up + 20 measured, median rate
 *   scatter_tail        routees with heavy-tailed latency, 32 requests in
 *                       flight: the scatter router against a round-robin
 *                       pool and against the ideal minimum of 3
 *   scatter_open        (mem) heap per open scatter, 100,000 open at once
 *
 * Completion. The router discards the losers' replies, so the caller sees
 * one reply per scatter; it checks its value (the request's tag) and that
 * its sender is one of the router's routees (the winner). That every
 * routee answered every scatter is checked after the timed part: each
 * routee counts its requests, and once every slot of a scatter has its
 * outcome the router cancels the scatter's timer, so ac_timers_armed()
 * drops back to 0 only when every loser's reply has reached the router.
 * A scatter's deadline (30 s) and the caller's ask timeout (60 s) are far
 * beyond any answer; a timeout fails the check.
 */
#define _POSIX_C_SOURCE 200809L

#include "scatter_bench.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

/* ------------------------------------------------------------- messages --- */

static const ac_msg_type SG_REQ = {.name = "bench.ScatterReq"};      /* {tag}; reply int64 tag */
static const ac_msg_type SG_GO = {.name = "bench.ScatterGo"};        /* {a, b} */
static const ac_msg_type SG_RELEASE = {.name = "bench.ScatterRelease"}; /* {} */
static const ac_msg_type TAIL_REQ = {.name = "bench.TailReq"};       /* {req, mode} */
static const ac_msg_type TAIL_FIRE = {.name = "bench.TailFire"};     /* {req, mode} */

static ac_msg *int64_msg(int64_t v)
{
    ac_msg *m = ac_msg_int64_new(v);
    if (!m)
        die("ac_msg_int64_new");
    return m;
}

/* ----------------------------------------------------- routers, routees --- */

enum { SG_N = 3 };                 /* routees per router */
#define SG_TIMEOUT_MS 30000        /* a scatter's deadline */
#define SG_ASK_TIMEOUT_MS 60000    /* the caller's, above it */

/* What every routee of one router shares (its routee user data): requests
 * handled per routee, and the prefix of the routees' paths, by which a
 * caller recognises the winner. */
typedef struct routee_env {
    atomic_llong handled[SG_N];
    char prefix[256]; /* "<router path>/routee-" */
    size_t prefix_len;
} routee_env;

typedef struct routee_state {
    int idx1; /* routee-K: K, once known */
} routee_state;

/* This routee's index 0..SG_N-1, from its name routee-1 .. routee-N. */
static int routee_index(ac_ctx *ctx)
{
    routee_state *st = ac_ctx_state(ctx);
    if (!st->idx1) {
        const char *name = ac_self_name(ctx);
        long k = strncmp(name, "routee-", 7) == 0 ? strtol(name + 7, NULL, 10) : 0;
        if (k < 1 || k > SG_N)
            fail("a routee with an unexpected name");
        st->idx1 = (int)k;
    }
    return st->idx1 - 1;
}

/* Spawn a scatter/gather router of SG_N `routee`s, with `user` as their
 * user data, and set env's path prefix to its routees'. */
static ac_ref *spawn_scatter(ac_system *sys, const ac_actor_def *routee, void *user,
                             routee_env *env, int64_t timeout_ms)
{
    ac_scatter_gather_options opts = {.timeout_ms = timeout_ms};
    ac_routee_options ro = {.user_data = user};
    ac_props *props = ac_router_scatter_gather_first_completed(SG_N, routee, &opts, &ro);
    if (!props)
        die("ac_router_scatter_gather_first_completed");
    ac_ref *router = ac_spawn(sys, props, NULL);
    if (!router)
        die("ac_spawn (scatter/gather router)");
    snprintf(env->prefix, sizeof env->prefix, "%s/routee-", ac_ref_path(router));
    env->prefix_len = strlen(env->prefix);
    return router;
}

static bool is_routee(const routee_env *env, ac_ref *ref)
{
    return ref && strncmp(ac_ref_path(ref), env->prefix, env->prefix_len) == 0;
}

/* Echo routee: replies int64 tag to {tag}. */
static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    routee_env *env = ac_ctx_user_data(ctx);
    if (!ac_msg_is(msg, &SG_REQ))
        unexpected(ctx, msg);
    int idx = routee_index(ctx);
    check(ac_reply(ctx, int64_msg(arg(msg, 0))), "ac_reply");
    atomic_fetch_add_explicit(&env->handled[idx], 1, memory_order_release);
}

static const ac_actor_def echo_routee = {
    .name = "EchoRoutee", .state_size = sizeof(routee_state), .receive = echo_receive};

/* The untimed completion check: every routee handled `per_routee`
 * requests, and no timer is armed any more, so every scatter has heard
 * from every routee (see the top of the file). */
static void wait_all_answered(ac_system *sys, routee_env *env, int64_t per_routee,
                              const char *wl)
{
    char what[256];
    for (int waited = 0;; waited++) {
        bool done = ac_timers_armed(sys) == 0;
        for (int k = 0; k < SG_N; k++) {
            long long h = atomic_load_explicit(&env->handled[k], memory_order_acquire);
            if (h > per_routee) {
                snprintf(what, sizeof what, "%s: routee-%d handled %lld requests of %" PRId64,
                         wl, k + 1, h, per_routee);
                fail(what);
            }
            done = done && h == per_routee;
        }
        if (done)
            return;
        if (waited >= 10000) {
            snprintf(what, sizeof what,
                     "%s: after 10 s, %zu timers still armed or a routee short of %" PRId64
                     " requests",
                     wl, ac_timers_armed(sys), per_routee);
            fail(what);
        }
        sleep_ms(1);
    }
}

/* Fails unless an answer is the reply `tag` from one of the routees. */
static void check_winner(const char *wl, const routee_env *env, ac_status st,
                         const ac_answer *ans, int64_t tag)
{
    char what[512];
    if (st != AC_OK || ans->error) {
        char *e = ac_error_to_string(ans->error);
        snprintf(what, sizeof what, "%s: scatter %" PRId64 " failed: %s: %s", wl, tag,
                 ac_status_name(st), e ? e : "?");
        free(e);
        fail(what);
    }
    int64_t r;
    if (ac_msg_int64_get(ans->reply, &r) != AC_OK || r != tag) {
        snprintf(what, sizeof what, "%s: scatter %" PRId64 " got a wrong reply (%s)", wl, tag,
                 ac_msg_type_name(ans->reply));
        fail(what);
    }
    if (!is_routee(env, ans->sender)) {
        snprintf(what, sizeof what, "%s: scatter %" PRId64 " answered by %s, not a routee", wl,
                 tag, ac_ref_path(ans->sender));
        fail(what);
    }
}

/* ---------------------------------------------------------- scatter_seq --- */
/* One operation: one scatter of {tag} over 3 echo routees, the first reply
 * checked (value and winner). 1,000 warm-up + 5,000 measured, sequential;
 * the time of one covers asking through having the reply, as the peers'. */

enum { SEQ_WARM = 1000, SEQ_N = 5000 };

void bench_scatter_seq(ac_system *sys, const void *param)
{
    (void)param;
    routee_env env = {0};
    int64_t *lat = xcalloc(SEQ_N, sizeof *lat);
    ac_ref *router = spawn_scatter(sys, &echo_routee, &env, &env, SG_TIMEOUT_MS);
    for (int64_t i = 0; i < SEQ_WARM + SEQ_N; i++) {
        int64_t tag = i + 1;
        ac_answer ans;
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(router, msg_new(&SG_REQ, 1, tag, 0), SG_ASK_TIMEOUT_MS, &ans);
        int64_t el = now_ns() - t0;
        check_winner("scatter_seq", &env, st, &ans, tag);
        ac_answer_release(&ans);
        if (i >= SEQ_WARM)
            lat[i - SEQ_WARM] = el;
    }
    wait_all_answered(sys, &env, SEQ_WARM + SEQ_N, "scatter_seq");
    report_latency("scatter_seq", lat, SEQ_N, "scatters");
    stop_release(router);
    free(lat);
}

/* ------------------------------------------------------- scatter_seq_in --- */
/* The same, with an actor as the caller. scatter_seq_in tells the router
 * with itself as the sender: the winner's reply arrives as an ordinary
 * message whose sender is the winning routee. scatter_seq_in_ask uses
 * ac_ask_in with a continuation (its own reply ref and timer on top). */

typedef struct seq_env {
    ac_ref *router;
    routee_env *routees;
    int64_t *lat; /* read by the main thread after the last signal */
    bool use_ask;
    latch done;
} seq_env;

typedef struct seq_state {
    int64_t i, tag, t0;
} seq_state;

static void seq_answer(ac_ctx *ctx, const ac_answer *answer, void *user);

static void seq_next(ac_ctx *ctx, seq_state *st, seq_env *env)
{
    if (st->i == SEQ_WARM + SEQ_N) {
        latch_signal(&env->done, st->i, 0, 0);
        return;
    }
    st->tag = st->i + 1;
    st->t0 = now_ns();
    ac_msg *m = msg_new(&SG_REQ, 1, st->tag, 0);
    if (env->use_ask)
        check(ac_ask_in(ctx, env->router, m, SG_ASK_TIMEOUT_MS, seq_answer, env, NULL),
              "ac_ask_in");
    else
        tell(env->router, m, ac_self(ctx));
}

static void seq_record(ac_ctx *ctx, seq_state *st, seq_env *env, int64_t el)
{
    if (st->i >= SEQ_WARM)
        env->lat[st->i - SEQ_WARM] = el;
    st->i++;
    seq_next(ctx, st, env);
}

static void seq_answer(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    seq_state *st = ac_ctx_state(ctx);
    seq_env *env = user;
    int64_t el = now_ns() - st->t0;
    check_winner("scatter_seq_in_ask", env->routees, answer->error ? AC_EFAILED : AC_OK, answer,
                 st->tag);
    seq_record(ctx, st, env, el);
}

static void seq_receive(ac_ctx *ctx, ac_msg *msg)
{
    seq_state *st = ac_ctx_state(ctx);
    seq_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &SG_GO)) {
        st->i = 0;
        seq_next(ctx, st, env);
    } else if (!env->use_ask &&
               (ac_msg_is(msg, &ac_msg_type_int64) || ac_msg_is(msg, &ac_msg_type_error))) {
        int64_t el = now_ns() - st->t0;
        ac_answer a = {.reply = ac_msg_is(msg, &ac_msg_type_error) ? NULL : msg,
                       .error = ac_msg_error(msg),
                       .sender = ac_sender(ctx)};
        check_winner("scatter_seq_in", env->routees, a.error ? AC_EFAILED : AC_OK, &a,
                     st->tag);
        seq_record(ctx, st, env, el);
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def seq_caller = {
    .name = "ScatterCaller", .state_size = sizeof(seq_state), .receive = seq_receive};

static void run_seq_in(ac_system *sys, const char *wl, bool use_ask)
{
    routee_env renv = {0};
    seq_env env = {.routees = &renv, .use_ask = use_ask};
    uint64_t seen = 0;
    int64_t r[3];
    latch_init(&env.done);
    env.lat = xcalloc(SEQ_N, sizeof *env.lat);
    env.router = spawn_scatter(sys, &echo_routee, &renv, &renv, SG_TIMEOUT_MS);
    ac_ref *caller = spawn_top(sys, &seq_caller, &env);
    tell(caller, msg_new(&SG_GO, 0, 0, 0), NULL);
    latch_wait(&env.done, &seen, r);
    if (r[0] != SEQ_WARM + SEQ_N)
        fail("scatter_seq_in: scatter count");
    wait_all_answered(sys, &renv, SEQ_WARM + SEQ_N, wl);
    report_latency(wl, env.lat, SEQ_N, "scatters");
    stop_release(caller);
    stop_release(env.router);
    free(env.lat);
    latch_fini(&env.done);
}

void bench_scatter_seq_in(ac_system *sys, const void *param)
{
    (void)param;
    run_seq_in(sys, "scatter_seq_in", false);
}

void bench_scatter_seq_in_ask(ac_system *sys, const void *param)
{
    (void)param;
    run_seq_in(sys, "scatter_seq_in_ask", true);
}

/* ---------------------------------------------------------- scatter_par --- */
/* One operation: an actor caller tells the router 1,000 scatters with
 * itself as the sender, all in one turn, and counts first replies, each
 * tag exactly once and from a routee; timed in the caller from the first
 * send to the last first reply. 2 warm-up + 20 measured; the median rate.
 * After each (untimed) every routee must have answered every scatter. As
 * the peers: CAF's caller is outside its runtime, Erlang's a process. */

enum { PAR_K = 1000, PAR_WARM = 2, PAR_ITERS = 20 };

typedef struct par_env {
    ac_ref *router;
    routee_env *routees;
    uint8_t seen[PAR_K];
    latch done;
} par_env;

typedef struct par_state {
    int64_t base, firsts, t0;
} par_state;

static void par_receive(ac_ctx *ctx, ac_msg *msg)
{
    par_state *st = ac_ctx_state(ctx);
    par_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &SG_GO)) {
        st->base = arg(msg, 0);
        st->firsts = 0;
        memset(env->seen, 0, sizeof env->seen);
        st->t0 = now_ns();
        for (int64_t i = 0; i < PAR_K; i++)
            tell(env->router, msg_new(&SG_REQ, 1, st->base + i, 0), ac_self(ctx));
    } else if (ac_msg_is(msg, &ac_msg_type_int64)) {
        int64_t idx = ac_msg_int64(msg) - st->base;
        if (idx < 0 || idx >= PAR_K)
            fail("scatter_par: foreign tag");
        if (env->seen[idx])
            fail("scatter_par: a second reply to one scatter");
        if (!is_routee(env->routees, ac_sender(ctx)))
            fail("scatter_par: a reply whose sender is not a routee");
        env->seen[idx] = 1;
        if (++st->firsts == PAR_K)
            latch_signal(&env->done, st->firsts, now_ns() - st->t0, 0);
    } else if (ac_msg_is(msg, &ac_msg_type_error)) {
        ac_error_fprint(ac_msg_error(msg), stderr);
        fail("scatter_par: a scatter failed");
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def par_caller = {
    .name = "ScatterParCaller", .state_size = sizeof(par_state), .receive = par_receive};

void bench_scatter_par(ac_system *sys, const void *param)
{
    (void)param;
    routee_env renv = {0};
    par_env *env = xcalloc(1, sizeof *env);
    uint64_t seen = 0;
    int64_t r[3];
    double rates[PAR_ITERS];
    env->routees = &renv;
    latch_init(&env->done);
    env->router = spawn_scatter(sys, &echo_routee, &renv, &renv, SG_TIMEOUT_MS);
    ac_ref *caller = spawn_top(sys, &par_caller, env);
    for (int it = 0; it < PAR_WARM + PAR_ITERS; it++) {
        tell(caller, msg_new(&SG_GO, 1, (int64_t)it * PAR_K + 1, 0), NULL);
        latch_wait(&env->done, &seen, r);
        if (r[0] != PAR_K)
            fail("scatter_par: first-reply count");
        wait_all_answered(sys, &renv, (int64_t)(it + 1) * PAR_K, "scatter_par");
        if (it >= PAR_WARM)
            rates[it - PAR_WARM] = PAR_K * 1e9 / (double)r[1];
    }
    result("scatter_par", "scatters_per_s_median_iter", median(rates, PAR_ITERS), "scatters/s");
    stop_release(caller);
    stop_release(env->router);
    latch_fini(&env->done);
    free(env);
}

/* --------------------------------------------------------- scatter_tail --- */
/* Routees with a heavy tail: each request takes 1 ms (98%) or 100 ms (2%),
 * drawn independently per request and routee. A routee does not block: it
 * schedules a message to itself (ac_schedule_once, with the request's
 * reply target as that message's sender) and replies when it arrives. An
 * actor caller keeps 32 requests in flight (ac_ask_in) until 10,000 (after
 * 500 warm-up) have been answered, through (a) the scatter router over 3
 * such routees, then (b) a round-robin pool of 3. (c) the ideal: for each
 * scatter, the smallest of its 3 drawn delays.
 *
 * The delays are drawn up front (fixed seed, so every run draws the same),
 * as whole milliseconds. A timer never fires early: a routee's 1 ms takes
 * 1 ms plus the timer's lateness (up to a tick of 1 us and a wake-up)
 * plus the hops to the routee, whatever the router does. So each routee
 * records when its timer actually fired, from the request's start: that
 * is the latency
 * sample it produced. ideal_pNN are the percentiles of the smallest of the
 * 3 samples per scatter — the best any router could return from these
 * routees — and p99_overhead_pct compares the scatter with them: the
 * router's and the messaging's own cost. drawn_ideal_pNN are the same from
 * the drawn whole-ms delays, before the timers' rounding, and
 * p99_overhead_vs_drawn_pct compares with those. */

enum {
    TAIL_WARM = 500,
    TAIL_R = 10000,
    TAIL_TOTAL = TAIL_WARM + TAIL_R,
    TAIL_CONC = 32,
    TAIL_FAST_MS = 1,
    TAIL_SLOW_MS = 100,
    TAIL_SLOW_PER_10K = 200, /* 2% */
};
#define TAIL_SG_TIMEOUT_MS 1000
#define TAIL_SEED 0x5ca77e12u

enum { MODE_SCATTER = 0, MODE_RR = 1 };

typedef struct tail_env {
    routee_env routees;    /* its handled[] counts timers fired */
    ac_ref *target;        /* the router being asked */
    int64_t delay[TAIL_TOTAL][SG_N]; /* drawn, ms; scatter: routee k takes [req][k] */
    int64_t rr_delay[TAIL_TOTAL];    /* drawn, ms; round robin */
    int64_t fired[TAIL_TOTAL][SG_N]; /* ns from request start to timer fired (scatter) */
    int64_t rr_fired[TAIL_TOTAL];
    int64_t t0[TAIL_TOTAL];          /* request start, written by the caller */
    int64_t lat[TAIL_TOTAL];         /* ns, request start to answer */
    int mode;
    latch done;
} tail_env;

typedef struct tail_state {
    int64_t next, answered;
} tail_state;

static int64_t draw_delay(uint64_t *rng)
{
    return (xorshift64(rng) >> 11) % 10000 < TAIL_SLOW_PER_10K ? TAIL_SLOW_MS : TAIL_FAST_MS;
}

static void tail_routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    tail_env *env = ac_ctx_user_data(ctx);
    int idx = routee_index(ctx);
    if (ac_msg_is(msg, &TAIL_REQ)) {
        int64_t req = arg(msg, 0), mode = arg(msg, 1);
        int64_t d = mode == MODE_SCATTER ? env->delay[req][idx] : env->rr_delay[req];
        /* The reply target travels as the scheduled message's sender. */
        ac_cancellable *c =
            ac_schedule_once(ac_self(ctx), d, msg_new(&TAIL_FIRE, 2, req, mode), ac_sender(ctx));
        if (!c)
            die("ac_schedule_once");
        ac_cancellable_release(c);
    } else if (ac_msg_is(msg, &TAIL_FIRE)) {
        int64_t req = arg(msg, 0), el = now_ns() - env->t0[req];
        if (arg(msg, 1) == MODE_SCATTER)
            env->fired[req][idx] = el;
        else
            env->rr_fired[req] = el;
        check(ac_reply(ctx, int64_msg(req)), "ac_reply");
        atomic_fetch_add_explicit(&env->routees.handled[idx], 1, memory_order_release);
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def tail_routee = {
    .name = "TailRoutee", .state_size = sizeof(routee_state), .receive = tail_routee_receive};

static void tail_answer(ac_ctx *ctx, const ac_answer *answer, void *user);

static void tail_issue(ac_ctx *ctx, tail_state *st, tail_env *env)
{
    int64_t req = st->next++;
    env->t0[req] = now_ns();
    check(ac_ask_in(ctx, env->target, msg_new(&TAIL_REQ, 2, req, env->mode), SG_ASK_TIMEOUT_MS,
                    tail_answer, (void *)(intptr_t)req, NULL),
          "ac_ask_in");
}

static void tail_answer(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    tail_state *st = ac_ctx_state(ctx);
    tail_env *env = ac_ctx_user_data(ctx);
    int64_t req = (int64_t)(intptr_t)user;
    int64_t el = now_ns() - env->t0[req];
    const char *wl = env->mode == MODE_SCATTER ? "scatter_tail (scatter)" : "scatter_tail (rr)";
    check_winner(wl, &env->routees, answer->error ? AC_EFAILED : AC_OK, answer, req);
    env->lat[req] = el;
    if (st->next < TAIL_TOTAL)
        tail_issue(ctx, st, env);
    if (++st->answered == TAIL_TOTAL)
        latch_signal(&env->done, st->answered, 0, 0);
}

static void tail_caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    tail_state *st = ac_ctx_state(ctx);
    tail_env *env = ac_ctx_user_data(ctx);
    if (!ac_msg_is(msg, &SG_GO))
        unexpected(ctx, msg);
    st->next = st->answered = 0;
    for (int j = 0; j < TAIL_CONC; j++)
        tail_issue(ctx, st, env);
}

static const ac_actor_def tail_caller = {
    .name = "TailCaller", .state_size = sizeof(tail_state), .receive = tail_caller_receive};

/* Run one phase: TAIL_TOTAL requests at `target`, then wait until every
 * routee timer has fired (per_routee each) and no timer is armed. */
static void tail_phase(ac_system *sys, tail_env *env, ac_ref *caller, int mode, ac_ref *target,
                       int64_t per_routee_base, int64_t per_routee, uint64_t *seen)
{
    int64_t r[3];
    env->mode = mode;
    env->target = target;
    tell(caller, msg_new(&SG_GO, 0, 0, 0), NULL);
    latch_wait(&env->done, seen, r);
    if (r[0] != TAIL_TOTAL)
        fail("scatter_tail: answer count");
    if (per_routee >= 0) {
        wait_all_answered(sys, &env->routees, per_routee_base + per_routee, "scatter_tail");
        return;
    }
    /* Round robin: the split over routees is the pool's business; wait for
     * the total. */
    for (int waited = 0;; waited++) {
        long long total = 0;
        for (int k = 0; k < SG_N; k++)
            total += atomic_load_explicit(&env->routees.handled[k], memory_order_acquire);
        if (total == SG_N * per_routee_base + TAIL_TOTAL && ac_timers_armed(sys) == 0)
            return;
        if (waited >= 10000)
            fail("scatter_tail: round-robin requests still open after 10 s");
        sleep_ms(1);
    }
}

/* p50, p99, p999 (ns) of v[0..n) into out (us); v is sorted. */
static void tail_pcts(int64_t *v, size_t n, double out[3])
{
    out[0] = (double)pct(v, n, 50) / 1000.0;
    out[1] = (double)pct(v, n, 99) / 1000.0;
    out[2] = (double)pct(v, n, 99.9) / 1000.0;
}

static void tail_report(const char *prefix, const double p[3])
{
    char m[64];
    static const char *const names[3] = {"p50", "p99", "p999"};
    for (int i = 0; i < 3; i++) {
        snprintf(m, sizeof m, "%s_%s", prefix, names[i]);
        result("scatter_tail", m, p[i], "us");
    }
}

void bench_scatter_tail(ac_system *sys, const void *param)
{
    (void)param;
    tail_env *env = xcalloc(1, sizeof *env);
    uint64_t seen = 0, rng = TAIL_SEED;
    latch_init(&env->done);
    for (int64_t q = 0; q < TAIL_TOTAL; q++) {
        for (int k = 0; k < SG_N; k++)
            env->delay[q][k] = draw_delay(&rng);
        env->rr_delay[q] = draw_delay(&rng);
    }
    ac_ref *caller = spawn_top(sys, &tail_caller, env);

    /* (a) scatter/gather over 3 routees. */
    ac_ref *sg = spawn_scatter(sys, &tail_routee, env, &env->routees, TAIL_SG_TIMEOUT_MS);
    tail_phase(sys, env, caller, MODE_SCATTER, sg, 0, TAIL_TOTAL, &seen);
    int64_t *sg_lat = xcalloc(TAIL_R, sizeof *sg_lat);
    memcpy(sg_lat, env->lat + TAIL_WARM, TAIL_R * sizeof *sg_lat);
    stop_release(sg);

    /* (b) round robin over 3 routees of the same kind. */
    ac_routee_options ro = {.user_data = env};
    ac_props *props = ac_router_round_robin(SG_N, &tail_routee, &ro);
    if (!props)
        die("ac_router_round_robin");
    ac_ref *rr = ac_spawn(sys, props, NULL);
    if (!rr)
        die("ac_spawn (round-robin router)");
    snprintf(env->routees.prefix, sizeof env->routees.prefix, "%s/routee-", ac_ref_path(rr));
    env->routees.prefix_len = strlen(env->routees.prefix);
    tail_phase(sys, env, caller, MODE_RR, rr, TAIL_TOTAL, -1, &seen);
    int64_t *rr_lat = xcalloc(TAIL_R, sizeof *rr_lat);
    memcpy(rr_lat, env->lat + TAIL_WARM, TAIL_R * sizeof *rr_lat);
    stop_release(rr);
    stop_release(caller);

    /* (c) the ideal, from the drawn delays; and what the timers allowed. */
    int64_t *ideal = xcalloc(TAIL_R, sizeof *ideal);
    int64_t *ideal_fired = xcalloc(TAIL_R, sizeof *ideal_fired);
    int64_t *rr_fired = xcalloc(TAIL_R, sizeof *rr_fired);
    int64_t *timer_late = xcalloc((size_t)TAIL_R * SG_N, sizeof *timer_late);
    int64_t slow_draws = 0, all_slow = 0;
    for (int64_t i = 0; i < TAIL_R; i++) {
        int64_t q = TAIL_WARM + i, best = INT64_MAX, best_fired = INT64_MAX;
        for (int k = 0; k < SG_N; k++) {
            best = env->delay[q][k] < best ? env->delay[q][k] : best;
            best_fired = env->fired[q][k] < best_fired ? env->fired[q][k] : best_fired;
            timer_late[i * SG_N + k] = env->fired[q][k] - env->delay[q][k] * 1000000;
            slow_draws += env->delay[q][k] == TAIL_SLOW_MS;
        }
        all_slow += best == TAIL_SLOW_MS;
        ideal[i] = best * 1000000;
        ideal_fired[i] = best_fired;
        rr_fired[i] = env->rr_fired[q];
    }
    double s[3], rrp[3], id[3], idf[3], rrf[3], late[3];
    tail_pcts(sg_lat, TAIL_R, s);
    tail_pcts(rr_lat, TAIL_R, rrp);
    tail_pcts(ideal, TAIL_R, id);
    tail_pcts(ideal_fired, TAIL_R, idf);
    tail_pcts(rr_fired, TAIL_R, rrf);
    tail_pcts(timer_late, (size_t)TAIL_R * SG_N, late);
    printf("INFO scatter_tail requests %d (after %d warm-up) in_flight %d routees %d;"
           " delay per request and routee %d ms (%.0f%%) or %d ms (%.0f%%), whole ms, drawn up"
           " front (xorshift64 seed 0x%x): %" PRId64 " slow of %d draws, %" PRId64
           " scatters with all %d slow\n",
           TAIL_R, TAIL_WARM, TAIL_CONC, SG_N, TAIL_FAST_MS, 100 - TAIL_SLOW_PER_10K / 100.0,
           TAIL_SLOW_MS, TAIL_SLOW_PER_10K / 100.0, (unsigned)TAIL_SEED, slow_draws,
           TAIL_R * SG_N, all_slow, SG_N);
    printf("INFO scatter_tail ideal_pNN: of min(request start to the routee's timer firing)"
           " over the 3 routees per scatter, measured: the routees' own latency samples."
           " drawn_ideal_pNN: percentiles of min(the 3 drawn delays) per scatter, in whole ms"
           " as drawn; a timer never fires early, so a d ms delay fires d ms after it is"
           " scheduled plus its lateness (a tick of 1 us at most, and a wake-up)\n");
    printf("INFO scatter_tail timer_fired_minus_drawn p50 %.1f p99 %.1f p999 %.1f us"
           " (request start to the routee's timer firing, minus its drawn delay);"
           " rr_timer p50 %.1f p99 %.1f p999 %.1f us; scatter_p99 above ideal_p99"
           " %.1f us\n",
           late[0], late[1], late[2], rrf[0], rrf[1], rrf[2], s[1] - idf[1]);
    fflush(stdout);
    tail_report("scatter", s);
    tail_report("rr", rrp);
    tail_report("ideal", idf);
    tail_report("drawn_ideal", id);
    result("scatter_tail", "p99_overhead_pct", (s[1] - idf[1]) / idf[1] * 100.0, "%");
    result("scatter_tail", "p99_overhead_vs_drawn_pct", (s[1] - id[1]) / id[1] * 100.0, "%");
    free(sg_lat);
    free(rr_lat);
    free(ideal);
    free(ideal_fired);
    free(rr_fired);
    free(timer_late);
    latch_fini(&env->done);
    free(env);
}

/* --------------------------------------------------------- scatter_open --- */
/* Memory (mem mode, a fresh process): 100,000 scatters open at once. An
 * actor caller tells the router 100,000 scatters with itself as the sender
 * (no ask on the caller's side, so the figure is the scatter's own cost);
 * the routees stash each request (its reply ref and message, retained)
 * and answer none until a Broadcast of Release. Measured: the heap's
 * growth (malloc's in-use bytes, mallinfo2 uordblks + hblkhd) from before
 * the first scatter to all 300,000 requests stashed, per scatter: the
 * scatter record (header, a slot and reply ref per routee, its timer), the
 * request message, and whatever the runtime keeps of the envelopes that
 * carried it; RSS growth as INFO. The stash slots and the caller's tables
 * are allocated and touched before the baseline, and a warm-up round of
 * 1,000 runs the same path first. Then every scatter must be answered
 * exactly once by a routee and every timer disarmed. */

enum { OPEN_N = 100000, OPEN_WARM = 1000 };

typedef struct open_env {
    routee_env routees;             /* handled[] counts stashed requests */
    ac_ref **senders[SG_N];          /* per routee, retained */
    ac_msg **msgs[SG_N];             /* per routee, retained */
    ac_ref *router;
    int64_t base, k;                 /* the round: tags base .. base+k-1 */
    uint8_t *seen;
    latch done;
} open_env;

typedef struct open_routee_state {
    routee_state rs;
    int64_t n; /* stashed */
} open_routee_state;

static void open_routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    open_routee_state *st = ac_ctx_state(ctx);
    open_env *env = ac_ctx_user_data(ctx);
    int idx = routee_index(ctx);
    if (ac_msg_is(msg, &SG_REQ)) {
        if (!ac_sender(ctx) || st->n >= OPEN_N)
            fail("scatter_open: a request without a sender, or too many");
        env->senders[idx][st->n] = ac_ref_retain(ac_sender(ctx));
        env->msgs[idx][st->n] = ac_msg_retain(msg);
        st->n++;
        atomic_fetch_add_explicit(&env->routees.handled[idx], 1, memory_order_release);
    } else if (ac_msg_is(msg, &SG_RELEASE)) {
        for (int64_t j = 0; j < st->n; j++) {
            tell(env->senders[idx][j], int64_msg(arg(env->msgs[idx][j], 0)), ac_self(ctx));
            ac_ref_release(env->senders[idx][j]);
            ac_msg_release(env->msgs[idx][j]);
            env->senders[idx][j] = NULL;
            env->msgs[idx][j] = NULL;
        }
        st->n = 0;
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def open_routee = {
    .name = "StashRoutee", .state_size = sizeof(open_routee_state), .receive = open_routee_receive};

typedef struct open_caller_state {
    int64_t answered;
} open_caller_state;

static void open_caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    open_caller_state *st = ac_ctx_state(ctx);
    open_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &SG_GO)) {
        env->base = arg(msg, 0);
        env->k = arg(msg, 1);
        st->answered = 0;
        for (int64_t i = 0; i < env->k; i++)
            tell(env->router, msg_new(&SG_REQ, 1, env->base + i, 0), ac_self(ctx));
    } else if (ac_msg_is(msg, &ac_msg_type_int64)) {
        int64_t idx = ac_msg_int64(msg) - env->base;
        if (idx < 0 || idx >= env->k)
            fail("scatter_open: foreign tag");
        if (env->seen[idx])
            fail("scatter_open: a second reply to one scatter");
        if (!is_routee(&env->routees, ac_sender(ctx)))
            fail("scatter_open: a reply whose sender is not a routee");
        env->seen[idx] = 1;
        if (++st->answered == env->k)
            latch_signal(&env->done, st->answered, 0, 0);
    } else if (ac_msg_is(msg, &ac_msg_type_error)) {
        ac_error_fprint(ac_msg_error(msg), stderr);
        fail("scatter_open: a scatter failed");
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def open_caller = {.name = "ScatterOpenCaller",
                                         .state_size = sizeof(open_caller_state),
                                         .receive = open_caller_receive};

/* One round of k scatters; measures (when rss != NULL) once all are open,
 * then releases and checks every answer. `stashed` counts per routee. */
static void open_round(ac_system *sys, open_env *env, ac_ref *caller, int64_t base, int64_t k,
                       int64_t stashed_before, uint64_t *seen, long *rss, long long *heap)
{
    int64_t r[3];
    memset(env->seen, 0, (size_t)k);
    tell(caller, msg_new(&SG_GO, 2, base, k), NULL);
    for (int waited = 0;; waited++) {
        bool all = true;
        for (int j = 0; j < SG_N; j++)
            all = all && atomic_load_explicit(&env->routees.handled[j], memory_order_acquire) ==
                             stashed_before + k;
        if (all)
            break;
        if (waited >= 60000)
            fail("scatter_open: requests not all stashed after 60 s");
        sleep_ms(1);
    }
    if (rss) {
        sleep_ms(200);
        *rss = rss_kib();
        *heap = heap_in_use();
    }
    if (ac_timers_armed(sys) < (size_t)k)
        fail("scatter_open: fewer timers armed than scatters open");
    tell(env->router, ac_broadcast_new(msg_new(&SG_RELEASE, 0, 0, 0)), NULL);
    latch_wait(&env->done, seen, r);
    if (r[0] != k)
        fail("scatter_open: answer count");
    wait_all_answered(sys, &env->routees, stashed_before + k, "scatter_open");
}

void bench_scatter_open(ac_system *sys, const void *param)
{
    (void)param;
    open_env *env = xcalloc(1, sizeof *env);
    uint64_t seen = 0;
    long rss_after = -1;
    long long heap_after = -1;
    latch_init(&env->done);
    for (int j = 0; j < SG_N; j++) {
        env->senders[j] = xcalloc(OPEN_N, sizeof *env->senders[j]);
        env->msgs[j] = xcalloc(OPEN_N, sizeof *env->msgs[j]);
        /* Touch them, so that their pages count in the baseline. */
        memset(env->senders[j], 0, OPEN_N * sizeof *env->senders[j]);
        memset(env->msgs[j], 0, OPEN_N * sizeof *env->msgs[j]);
    }
    env->seen = xcalloc(OPEN_N, 1);
    memset(env->seen, 0, OPEN_N);
    env->router = spawn_scatter(sys, &open_routee, env, &env->routees, SG_TIMEOUT_MS);
    ac_ref *caller = spawn_top(sys, &open_caller, env);
    open_round(sys, env, caller, 1, OPEN_WARM, 0, &seen, NULL, NULL);
    sleep_ms(200);
    long rss_before = rss_kib();
    long long heap_before = heap_in_use();
    open_round(sys, env, caller, 1 + OPEN_WARM, OPEN_N, OPEN_WARM, &seen, &rss_after,
               &heap_after);
    if (rss_before < 0 || rss_after < 0)
        fail("scatter_open: cannot read VmRSS");
    double rss_per = (double)(rss_after - rss_before) * 1024.0 / OPEN_N;
    if (heap_before >= 0) {
        double per = (double)(heap_after - heap_before) / OPEN_N;
        printf("INFO scatter_open open_scatters %d routees %d measure mallinfo2_uordblks+hblkhd"
               " heap_before %lld heap_after %lld B (%.1f MB for all) rss_before %ld rss_after"
               " %ld KiB rss_bytes_per_scatter %.1f\n",
               OPEN_N, SG_N, heap_before, heap_after, per * OPEN_N / 1e6, rss_before,
               rss_after, rss_per);
        result("scatter_open", "bytes_per_scatter", per, "B");
    } else {
        printf("INFO scatter_open open_scatters %d routees %d measure VmRSS rss_before %ld"
               " rss_after %ld KiB (%.1f MB for all)\n",
               OPEN_N, SG_N, rss_before, rss_after, rss_per * OPEN_N / 1e6);
        result("scatter_open", "bytes_per_scatter", rss_per, "B");
    }
    fflush(stdout);
    stop_release(caller);
    stop_release(env->router);
    for (int j = 0; j < SG_N; j++) {
        free(env->senders[j]);
        free(env->msgs[j]);
    }
    free(env->seen);
    latch_fini(&env->done);
    free(env);
}
