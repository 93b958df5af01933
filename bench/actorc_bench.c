/*
 * actorc-bench: actorc's side of the peer benchmarks (CAF 0.17.6, Erlang/OTP
 * 25; see the peers' README.md and bench.cpp / bench.erl).
 *
 *   actorc-bench suite     every workload of the suite group, then idle
 *   actorc-bench mem       the memory workloads (idle actors, asks in
 *                          flight), each in a fresh child process
 *   actorc-bench idle      CPU used by an idle system of 10,000 actors
 *   actorc-bench NAME      one workload (see `actorc-bench list`)
 *   actorc-bench version | compiler    for the run header
 *
 * Design. Each workload mirrors the peers' one: same operation, warm-ups,
 * iteration counts, completion checks, nearest-rank percentiles and medians,
 * and the same `RESULT <workload> <metric> <value> <unit>` lines. Figures
 * that an actor can time (tell, ping-pong, spawn_in) are timed inside the
 * driving actor, as the peers do; the main thread only starts an operation
 * and waits on a `latch` (mutex + condvar) that the driving actor signals
 * with the operation's results, which the main thread then verifies. The
 * `spawn` workload is driven by the main thread itself: it spawns, stops and
 * times; a collector actor stands in for the peers' blocking receive (it
 * watches every spawnee when the spawnee reports started, since watching
 * needs an actor). A failed check prints `VERIFICATION FAILED: ...` and
 * exits 2; a failing API call prints `ERROR: ...` and exits 1.
 *
 * One system serves a whole process, as one actor_system or one VM does for
 * the peers. Workloads live in a table so that new ones are a function and a
 * row; latencies take nearest-rank percentiles, as the peers' pct() does.
 * The memory workloads each want a process of their own (one run's freed
 * memory would be reused by the next and hide its growth), so `mem` forks a
 * child per workload before any system exists.
 */
#define _POSIX_C_SOURCE 200809L

#include <actorc.h>

#include "breaker_bench.h"
#include "hedge_bench.h"
#include "scatter_bench.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#ifdef ACTORC_BENCH_HTTP /* tell_10k_observed's client */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

/* ------------------------------------------------------------- messages --- */

/* Payloads are up to three int64s; signal-only messages have none. */
typedef struct args {
    int64_t v[3];
} args;

static const ac_msg_type GO = {.name = "bench.Go"};           /* {n}; {} to the spawner */
static const ac_msg_type STARTED = {.name = "bench.Started"}; /* {} */
static const ac_msg_type COUNT = {.name = "bench.Count"};     /* {} */
static const ac_msg_type COUNTS = {.name = "bench.Counts"};   /* {n, sum} */
static const ac_msg_type PING = {.name = "bench.Ping"};       /* {k} */
static const ac_msg_type PONG = {.name = "bench.Pong"};       /* {k} */
static const ac_msg_type ASK = {.name = "bench.Ask"};         /* {x}; the reply is int64 x+1 */
static const ac_msg_type RELEASE = {.name = "bench.Release"}; /* {} */

/* -------------------------------------------------------- spawn, spawn_in --- */
/* One operation: a batch of 100 spawn + watch, each child reports started,
 * stop each, every Terminated received. 50 warm-up + 100 measured batches. */

enum { SPAWN_BATCH = 100, SPAWN_WARM = 50, SPAWN_MEASURED = 100 };

/* Reports started to the ref in its user data, then idles until stopped. */
static void spawnee_pre_start(ac_ctx *ctx)
{
    tell(ac_ctx_user_data(ctx), msg_new(&STARTED, 0, 0, 0), ac_self(ctx));
}

static void spawnee_receive(ac_ctx *ctx, ac_msg *msg)
{
    unexpected(ctx, msg);
}

static const ac_actor_def spawnee = {
    .name = "Spawnee", .pre_start = spawnee_pre_start, .receive = spawnee_receive};

static void report_spawn_rates(const char *wl, double *rates, int64_t total_ns)
{
    double med = median(rates, SPAWN_MEASURED);
    result(wl, "actors_per_s_median_batch", med, "actors/s");
    result(wl, "per_op_median_batch", 1e9 / med, "ns/actor");
    result(wl, "actors_per_s_overall", SPAWN_BATCH * SPAWN_MEASURED * 1e9 / (double)total_ns,
           "actors/s");
}

/* spawn (from outside): the collector watches each spawnee once it reports
 * started and signals twice per batch: all started, all terminated. */
typedef struct collector_state {
    int64_t started, down;
} collector_state;

static void collector_receive(ac_ctx *ctx, ac_msg *msg)
{
    collector_state *st = ac_ctx_state(ctx);
    latch *done = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &STARTED)) {
        check(ac_watch(ctx, ac_sender(ctx)), "ac_watch");
        if (++st->started == SPAWN_BATCH)
            latch_signal(done, st->started, 0, 0);
    } else if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        if (!ac_terminated_ref(msg))
            fail("spawn: Terminated without its actor");
        if (++st->down == SPAWN_BATCH) {
            latch_signal(done, st->started, st->down, 0);
            st->started = st->down = 0;
        }
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def collector = {
    .name = "Collector", .state_size = sizeof(collector_state), .receive = collector_receive};

static int64_t spawn_batch_outside(ac_system *sys, ac_ref *coll, latch *done, uint64_t *seen)
{
    ac_ref *kids[SPAWN_BATCH];
    int64_t r[3];
    int64_t t0 = now_ns();
    for (int i = 0; i < SPAWN_BATCH; i++)
        kids[i] = spawn_top(sys, &spawnee, coll);
    latch_wait(done, seen, r);
    if (r[0] != SPAWN_BATCH)
        fail("spawn: started count");
    for (int i = 0; i < SPAWN_BATCH; i++)
        check(ac_stop(kids[i]), "ac_stop");
    latch_wait(done, seen, r);
    int64_t el = now_ns() - t0;
    if (r[0] != SPAWN_BATCH || r[1] != SPAWN_BATCH)
        fail("spawn: counts");
    for (int i = 0; i < SPAWN_BATCH; i++)
        ac_ref_release(kids[i]);
    return el;
}

static void bench_spawn(ac_system *sys, const void *param)
{
    (void)param;
    latch done;
    uint64_t seen = 0;
    double rates[SPAWN_MEASURED];
    int64_t total_ns = 0;
    latch_init(&done);
    ac_ref *coll = spawn_top(sys, &collector, &done);
    for (int b = 0; b < SPAWN_WARM + SPAWN_MEASURED; b++) {
        int64_t el = spawn_batch_outside(sys, coll, &done, &seen);
        if (b >= SPAWN_WARM) {
            rates[b - SPAWN_WARM] = SPAWN_BATCH * 1e9 / (double)el;
            total_ns += el;
        }
    }
    report_spawn_rates("spawn", rates, total_ns);
    stop_release(coll);
    latch_fini(&done);
}

/* spawn_in: the spawner actor spawns and watches a batch of children on Go,
 * stops them once all started, and signals when all terminated, timing the
 * batch itself. */
typedef struct spawner_state {
    int64_t started, down, t0;
    ac_ref *kids[SPAWN_BATCH];
} spawner_state;

static void spawner_go(ac_ctx *ctx, spawner_state *st)
{
    st->started = st->down = 0;
    st->t0 = now_ns();
    for (int i = 0; i < SPAWN_BATCH; i++) {
        ac_props *props = ac_props_new(&spawnee, ac_self(ctx));
        if (!props)
            die("ac_props_new");
        st->kids[i] = ac_spawn_child(ctx, props, NULL);
        if (!st->kids[i])
            die("ac_spawn_child");
        check(ac_watch(ctx, st->kids[i]), "ac_watch");
    }
}

static void spawner_receive(ac_ctx *ctx, ac_msg *msg)
{
    spawner_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &GO)) {
        spawner_go(ctx, st);
    } else if (ac_msg_is(msg, &STARTED)) {
        if (++st->started == SPAWN_BATCH)
            for (int i = 0; i < SPAWN_BATCH; i++)
                check(ac_stop(st->kids[i]), "ac_stop");
    } else if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        if (!ac_terminated_ref(msg))
            fail("spawn_in: Terminated without its actor");
        if (++st->down == SPAWN_BATCH) {
            int64_t el = now_ns() - st->t0;
            for (int i = 0; i < SPAWN_BATCH; i++)
                ac_ref_release(st->kids[i]);
            latch_signal(ac_ctx_user_data(ctx), st->started, st->down, el);
        }
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def spawner = {
    .name = "Spawner", .state_size = sizeof(spawner_state), .receive = spawner_receive};

static void bench_spawn_in(ac_system *sys, const void *param)
{
    (void)param;
    latch done;
    uint64_t seen = 0;
    int64_t r[3], total_ns = 0;
    double rates[SPAWN_MEASURED];
    latch_init(&done);
    ac_ref *sp = spawn_top(sys, &spawner, &done);
    for (int b = 0; b < SPAWN_WARM + SPAWN_MEASURED; b++) {
        tell(sp, msg_new(&GO, 0, 0, 0), NULL);
        latch_wait(&done, &seen, r);
        if (r[0] != SPAWN_BATCH || r[1] != SPAWN_BATCH)
            fail("spawn_in: counts");
        if (b >= SPAWN_WARM) {
            rates[b - SPAWN_WARM] = SPAWN_BATCH * 1e9 / (double)r[2];
            total_ns += r[2];
        }
    }
    report_spawn_rates("spawn_in", rates, total_ns);
    stop_release(sp);
    latch_fini(&done);
}

/* ----------------------------------------------------------------- tell --- */
/* One operation: one sender actor fires N small ints (i & 0xff) at one
 * counting actor, then asks it for count and sum (FIFO per pair, so the
 * request is handled after all N). Timed in the sender, first send to reply. */

typedef struct tell_params {
    const char *name;
    int64_t n;
    int iters, warm;
} tell_params;

static const tell_params TELL_1K = {"tell_1k", 1000, 100, 10};
static const tell_params TELL_10K = {"tell_10k", 10000, 30, 3};

typedef struct counter_state {
    int64_t n, sum;
} counter_state;

static void counter_receive(ac_ctx *ctx, ac_msg *msg)
{
    counter_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        st->n++;
        st->sum += ac_msg_int64(msg);
    } else if (ac_msg_is(msg, &COUNT)) {
        check(ac_reply(ctx, msg_new(&COUNTS, 2, st->n, st->sum)), "ac_reply");
        st->n = st->sum = 0;
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def counter = {
    .name = "Counter", .state_size = sizeof(counter_state), .receive = counter_receive};

/* The sender's and the pinger's user data: its peer and the main thread's
 * latch. */
typedef struct driver_env {
    ac_ref *peer;
    latch done;
} driver_env;

typedef struct tell_sender_state {
    int64_t t0;
} tell_sender_state;

static void tell_sender_receive(ac_ctx *ctx, ac_msg *msg)
{
    tell_sender_state *st = ac_ctx_state(ctx);
    driver_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &GO)) {
        int64_t n = arg(msg, 0);
        st->t0 = now_ns();
        for (int64_t i = 0; i < n; i++) {
            ac_msg *m = ac_msg_int64_new(i & 0xff);
            if (!m)
                die("ac_msg_int64_new");
            tell(env->peer, m, ac_self(ctx));
        }
        tell(env->peer, msg_new(&COUNT, 0, 0, 0), ac_self(ctx));
    } else if (ac_msg_is(msg, &COUNTS)) {
        int64_t el = now_ns() - st->t0;
        latch_signal(&env->done, arg(msg, 0), arg(msg, 1), el);
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def tell_sender = {.name = "TellSender",
                                         .state_size = sizeof(tell_sender_state),
                                         .receive = tell_sender_receive};

/* Prints the median rate as p->name's RESULT (none when the name is
 * NULL) and returns it. */
static double tell_median(ac_system *sys, const tell_params *p)
{
    driver_env env;
    uint64_t seen = 0;
    int64_t r[3], expected_sum = 0;
    double *rates = xcalloc((size_t)p->iters, sizeof *rates);
    for (int64_t i = 0; i < p->n; i++)
        expected_sum += i & 0xff;
    latch_init(&env.done);
    env.peer = spawn_top(sys, &counter, NULL);
    ac_ref *snd = spawn_top(sys, &tell_sender, &env);
    for (int it = 0; it < p->warm + p->iters; it++) {
        tell(snd, msg_new(&GO, 1, p->n, 0), NULL);
        latch_wait(&env.done, &seen, r);
        if (r[0] != p->n || r[1] != expected_sum)
            fail("tell: receiver count/sum mismatch");
        if (it >= p->warm)
            rates[it - p->warm] = (double)p->n * 1e9 / (double)r[2];
    }
    double rate = median(rates, (size_t)p->iters);
    if (p->name)
        result(p->name, "msgs_per_s_median_iter", rate, "msg/s");
    stop_release(snd);
    stop_release(env.peer);
    latch_fini(&env.done);
    free(rates);
    return rate;
}

static void bench_tell(ac_system *sys, const void *param)
{
    (void)tell_median(sys, param);
}

/* ------------------------------------------------------------ router_rr --- */
/* tell_10k through a pool: one sender actor fires N small ints (i & 0xff)
 * at a 4-routee round-robin pool of counters, then a Broadcast(Count); the
 * pool keeps the original sender, so each routee replies straight to the
 * sender, which checks that every share was exactly N/4 and sums them.
 * Timed in the sender, first send to the last reply. The same sender
 * telling one counter directly, alternated iteration by iteration on the
 * same system, gives the figure to compare with. */

enum { RR_ROUTEES = 4, RR_N = 10000, RR_ITERS = 30, RR_WARM = 3 };

typedef struct rr_env {
    ac_ref *peer;    /* the pool, or one counter */
    int64_t replies; /* Counts replies per operation */
    latch done;
} rr_env;

typedef struct rr_sender_state {
    int64_t t0, n, sum, replies, uneven;
} rr_sender_state;

static void rr_sender_receive(ac_ctx *ctx, ac_msg *msg)
{
    rr_sender_state *st = ac_ctx_state(ctx);
    rr_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &GO)) {
        memset(st, 0, sizeof *st);
        st->t0 = now_ns();
        for (int64_t i = 0; i < RR_N; i++) {
            ac_msg *m = ac_msg_int64_new(i & 0xff);
            if (!m)
                die("ac_msg_int64_new");
            tell(env->peer, m, ac_self(ctx));
        }
        ac_msg *count = msg_new(&COUNT, 0, 0, 0);
        if (env->replies > 1 && !(count = ac_broadcast_new(count)))
            die("ac_broadcast_new");
        tell(env->peer, count, ac_self(ctx));
    } else if (ac_msg_is(msg, &COUNTS)) {
        st->uneven += arg(msg, 0) != RR_N / env->replies;
        st->n += arg(msg, 0);
        st->sum += arg(msg, 1);
        if (++st->replies == env->replies)
            latch_signal(&env->done, st->uneven ? -1 : st->n, st->sum, now_ns() - st->t0);
    } else {
        unexpected(ctx, msg);
    }
}

static void bench_router_rr(ac_system *sys, const void *param)
{
    static const ac_actor_def rr_sender = {.name = "RouterSender",
                                           .state_size = sizeof(rr_sender_state),
                                           .receive = rr_sender_receive};
    (void)param;
    rr_env env[2]; /* 0: direct, 1: through the pool */
    ac_ref *snd[2];
    uint64_t seen[2] = {0, 0};
    double rates[2][RR_ITERS];
    int64_t r[3], expected_sum = 0;
    for (int64_t i = 0; i < RR_N; i++)
        expected_sum += i & 0xff;
    ac_props *pool = ac_router_round_robin(RR_ROUTEES, &counter, NULL);
    if (!pool)
        die("ac_router_round_robin");
    env[0].peer = spawn_top(sys, &counter, NULL);
    env[0].replies = 1;
    if (!(env[1].peer = ac_spawn(sys, pool, NULL)))
        die("ac_spawn");
    env[1].replies = RR_ROUTEES;
    for (int k = 0; k < 2; k++) {
        latch_init(&env[k].done);
        snd[k] = spawn_top(sys, &rr_sender, &env[k]);
    }
    for (int it = 0; it < RR_WARM + RR_ITERS; it++) {
        for (int k = 0; k < 2; k++) {
            tell(snd[k], msg_new(&GO, 0, 0, 0), NULL);
            latch_wait(&env[k].done, &seen[k], r);
            if (r[0] < 0)
                fail("router_rr: a routee's share was not N/4 (round-robin)");
            if (r[0] != RR_N || r[1] != expected_sum)
                fail("router_rr: receivers' count/sum mismatch");
            if (it >= RR_WARM)
                rates[k][it - RR_WARM] = (double)RR_N * 1e9 / (double)r[2];
        }
    }
    result("router_rr", "msgs_per_s", median(rates[1], RR_ITERS), "msg/s");
    result("router_rr", "direct_msgs_per_s", median(rates[0], RR_ITERS), "msg/s");
    for (int k = 0; k < 2; k++) {
        stop_release(snd[k]);
        stop_release(env[k].peer);
        latch_fini(&env[k].done);
    }
}

/* ------------------------------------------------------------- pingpong --- */
/* One operation: two actors volley 10,000 exchanges (ping k, pong k); the
 * pinger checks the sequence of every pong. 2 warm-up + 20 measured. */

enum { PP_N = 10000, PP_ITERS = 20, PP_WARM = 2 };

static void ponger_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (!ac_msg_is(msg, &PING))
        unexpected(ctx, msg);
    check(ac_reply(ctx, msg_new(&PONG, 1, arg(msg, 0), 0)), "ac_reply");
}

static const ac_actor_def ponger = {.name = "Ponger", .receive = ponger_receive};

typedef struct pinger_state {
    int64_t n, expect, t0;
} pinger_state;

static void pinger_receive(ac_ctx *ctx, ac_msg *msg)
{
    pinger_state *st = ac_ctx_state(ctx);
    driver_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &GO)) {
        st->n = arg(msg, 0);
        st->expect = 1;
        st->t0 = now_ns();
        tell(env->peer, msg_new(&PING, 1, 1, 0), ac_self(ctx));
    } else if (ac_msg_is(msg, &PONG)) {
        int64_t k = arg(msg, 0);
        if (k != st->expect)
            fail("ping-pong out of sequence");
        if (k == st->n) {
            latch_signal(&env->done, k, now_ns() - st->t0, 0);
        } else {
            st->expect = k + 1;
            tell(env->peer, msg_new(&PING, 1, k + 1, 0), ac_self(ctx));
        }
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def pinger = {
    .name = "Pinger", .state_size = sizeof(pinger_state), .receive = pinger_receive};

static void bench_pingpong(ac_system *sys, const void *param)
{
    (void)param;
    driver_env env;
    uint64_t seen = 0;
    int64_t r[3];
    double rates[PP_ITERS];
    latch_init(&env.done);
    env.peer = spawn_top(sys, &ponger, NULL);
    ac_ref *pi = spawn_top(sys, &pinger, &env);
    for (int it = 0; it < PP_WARM + PP_ITERS; it++) {
        tell(pi, msg_new(&GO, 1, PP_N, 0), NULL);
        latch_wait(&env.done, &seen, r);
        if (r[0] != PP_N)
            fail("ping-pong: exchange count");
        if (it >= PP_WARM)
            rates[it - PP_WARM] = PP_N * 1e9 / (double)r[1];
    }
    result("pingpong", "exchanges_per_s_median_iter", median(rates, PP_ITERS), "exch/s");
    stop_release(pi);
    stop_release(env.peer);
    latch_fini(&env.done);
}

/* ------------------------------------------------------------------ ask --- */
/* One operation: one request {x} to a server actor that replies x+1; the
 * caller checks every reply's type and value. 1,000 warm-up + 5,000
 * measured, sequential. `ask`: the caller is the main thread, blocked in
 * ac_ask_wait; `ask_in`: the caller is an actor, using ac_ask_in with a
 * continuation that times the ask, checks it and issues the next one. As
 * the peers do, the time of one ask covers making the request through
 * having the reply; asks/s is the measured count over the summed times.
 * The peers wait without limit; an ask here has a deadline far beyond any
 * answer, and a timeout fails the check. */

enum { ASK_WARM = 1000, ASK_N = 5000 };
#define ASK_TIMEOUT_MS 60000

static void ask_server_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (!ac_msg_is(msg, &ASK))
        unexpected(ctx, msg);
    ac_msg *reply = ac_msg_int64_new(arg(msg, 0) + 1);
    if (!reply)
        die("ac_msg_int64_new");
    check(ac_reply(ctx, reply), "ac_reply");
}

static const ac_actor_def ask_server = {.name = "AskServer", .receive = ask_server_receive};

/* Fails unless the ask succeeded with the reply x+1. */
static void check_answer(const char *wl, ac_status st, const ac_answer *ans, int64_t x)
{
    char what[512];
    if (st != AC_OK || ans->error) {
        snprintf(what, sizeof what, "%s: ask %" PRId64 " failed: %s (%s: %s)", wl, x,
                 ac_status_name(st), ac_error_name(ans->error), ac_error_message(ans->error));
        fail(what);
    }
    int64_t r;
    if (ac_msg_int64_get(ans->reply, &r) != AC_OK || r != x + 1) {
        snprintf(what, sizeof what, "%s: ask %" PRId64 " got a wrong reply (%s)", wl, x,
                 ac_msg_type_name(ans->reply));
        fail(what);
    }
}

static void bench_ask(ac_system *sys, const void *param)
{
    (void)param;
    int64_t *lat = xcalloc(ASK_N, sizeof *lat);
    ac_ref *srv = spawn_top(sys, &ask_server, NULL);
    for (int64_t i = 0; i < ASK_WARM + ASK_N; i++) {
        int64_t x = i;
        ac_answer ans;
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(srv, msg_new(&ASK, 1, x, 0), ASK_TIMEOUT_MS, &ans);
        int64_t el = now_ns() - t0;
        check_answer("ask", st, &ans, x);
        ac_answer_release(&ans);
        if (i >= ASK_WARM)
            lat[i - ASK_WARM] = el;
    }
    report_latency("ask", lat, ASK_N, "asks");
    stop_release(srv);
    free(lat);
}

/* ask_in: the asker's user data. The latencies are read by the main thread
 * only after the asker's last signal (the latch orders them). */
typedef struct asker_env {
    ac_ref *server;
    int64_t *lat;
    latch done;
} asker_env;

typedef struct asker_state {
    int64_t warm, n, i, x, t0;
} asker_state;

static void asker_answer(ac_ctx *ctx, const ac_answer *answer, void *user);

static void asker_next(ac_ctx *ctx, asker_state *st, asker_env *env)
{
    if (st->i == st->warm + st->n) {
        latch_signal(&env->done, st->i, 0, 0);
        return;
    }
    st->x = st->i;
    st->t0 = now_ns();
    check(ac_ask_in(ctx, env->server, msg_new(&ASK, 1, st->x, 0), ASK_TIMEOUT_MS, asker_answer,
                    env, NULL),
          "ac_ask_in");
}

static void asker_answer(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    asker_state *st = ac_ctx_state(ctx);
    asker_env *env = user;
    int64_t el = now_ns() - st->t0;
    check_answer("ask_in", answer->error ? AC_EFAILED : AC_OK, answer, st->x);
    if (st->i >= st->warm)
        env->lat[st->i - st->warm] = el;
    st->i++;
    asker_next(ctx, st, env);
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    asker_state *st = ac_ctx_state(ctx);
    if (!ac_msg_is(msg, &GO))
        unexpected(ctx, msg);
    st->warm = arg(msg, 0);
    st->n = arg(msg, 1);
    st->i = 0;
    asker_next(ctx, st, ac_ctx_user_data(ctx));
}

static const ac_actor_def asker = {
    .name = "Asker", .state_size = sizeof(asker_state), .receive = asker_receive};

static void bench_ask_in(ac_system *sys, const void *param)
{
    (void)param;
    asker_env env;
    uint64_t seen = 0;
    int64_t r[3];
    latch_init(&env.done);
    env.lat = xcalloc(ASK_N, sizeof *env.lat);
    env.server = spawn_top(sys, &ask_server, NULL);
    ac_ref *a = spawn_top(sys, &asker, &env);
    tell(a, msg_new(&GO, 2, ASK_WARM, ASK_N), NULL);
    latch_wait(&env.done, &seen, r);
    if (r[0] != ASK_WARM + ASK_N)
        fail("ask_in: ask count");
    report_latency("ask_in", env.lat, ASK_N, "asks");
    stop_release(a);
    stop_release(env.server);
    free(env.lat);
    latch_fini(&env.done);
}

/* ------------------------------------------------------------- ask_par --- */
/* Throughput: the main thread fires 100,000 asks (ac_ask futures) at one
 * server, then collects every future in order and checks its reply; one
 * operation is the lot, from the first ask to the last future released.
 * 2 warm-up + 10 measured; the median rate. Every settled ask must have
 * cancelled its timer. */

enum { PAR_N = 100000, PAR_WARM = 2, PAR_ITERS = 10 };

/* Collect futures[0..n) (asked with x = base + i): wait, check, release. */
static void collect_futures(const char *wl, ac_future **futures, int64_t n, int64_t base)
{
    for (int64_t i = 0; i < n; i++) {
        ac_answer ans;
        ac_status st = ac_future_wait(futures[i], -1, &ans);
        check_answer(wl, st, &ans, base + i);
        ac_answer_release(&ans);
        ac_future_release(futures[i]);
        futures[i] = NULL;
    }
}

static void fire_asks(ac_ref *target, ac_future **futures, int64_t n, int64_t base)
{
    for (int64_t i = 0; i < n; i++) {
        futures[i] = ac_ask(target, msg_new(&ASK, 1, base + i, 0), ASK_TIMEOUT_MS);
        if (!futures[i])
            die("ac_ask");
    }
}

static void check_no_timers(ac_system *sys, const char *wl)
{
    char what[256];
    size_t armed = ac_timers_armed(sys);
    if (armed != 0) {
        snprintf(what, sizeof what, "%s: %zu timers still armed after every ask settled", wl,
                 armed);
        fail(what);
    }
}

static void bench_ask_par(ac_system *sys, const void *param)
{
    (void)param;
    ac_future **futures = xcalloc(PAR_N, sizeof *futures);
    double rates[PAR_ITERS];
    ac_ref *srv = spawn_top(sys, &ask_server, NULL);
    for (int it = 0; it < PAR_WARM + PAR_ITERS; it++) {
        int64_t base = (int64_t)it * PAR_N;
        int64_t t0 = now_ns();
        fire_asks(srv, futures, PAR_N, base);
        collect_futures("ask_par", futures, PAR_N, base);
        int64_t el = now_ns() - t0;
        check_no_timers(sys, "ask_par");
        if (it >= PAR_WARM)
            rates[it - PAR_WARM] = PAR_N * 1e9 / (double)el;
    }
    result("ask_par", "asks_per_s", median(rates, PAR_ITERS), "asks/s");
    stop_release(srv);
    free(futures);
}

/* ask_par_mem (mem mode, fresh process): memory per ask in flight. 100,000
 * asks from the main thread to a server that stashes each request (the
 * message and its sender, the ask's reply ref, both retained) and answers
 * none until told to release; the figure is the heap's growth between
 * before the first ask and all 100,000 stashed, per ask: the ask's reply
 * ref (future, timer, bookkeeping) and its request message, malloc's
 * headers included. The caller's future array and the server's stash slots
 * are allocated before the baseline, and a warm-up round of 1,000 runs the
 * same path first. RSS growth over the same interval is printed as INFO. */

enum { ASK_MEM_N = 100000, ASK_MEM_WARM = 1000 };

typedef struct stash_env {
    ac_ref **senders; /* retained */
    ac_msg **msgs;    /* retained */
    int64_t expect;   /* signal when this many are stashed */
    latch done;
} stash_env;

typedef struct stasher_state {
    int64_t n;
} stasher_state;

static void stasher_receive(ac_ctx *ctx, ac_msg *msg)
{
    stasher_state *st = ac_ctx_state(ctx);
    stash_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ASK)) {
        if (!ac_sender(ctx))
            fail("ask_par_mem: a request without a sender");
        env->senders[st->n] = ac_ref_retain(ac_sender(ctx));
        env->msgs[st->n] = ac_msg_retain(msg);
        if (++st->n == env->expect)
            latch_signal(&env->done, st->n, 0, 0);
    } else if (ac_msg_is(msg, &RELEASE)) {
        for (int64_t k = 0; k < st->n; k++) {
            ac_msg *reply = ac_msg_int64_new(arg(env->msgs[k], 0) + 1);
            if (!reply)
                die("ac_msg_int64_new");
            tell(env->senders[k], reply, ac_self(ctx));
            ac_ref_release(env->senders[k]);
            ac_msg_release(env->msgs[k]);
        }
        st->n = 0;
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def stasher = {
    .name = "Stasher", .state_size = sizeof(stasher_state), .receive = stasher_receive};

/* Fire n asks, wait until all are stashed, then measure (before release). */
static void stash_round(ac_ref *srv, stash_env *env, ac_future **futures, int64_t n,
                        int64_t base, uint64_t *seen, long *rss, long long *heap)
{
    int64_t r[3];
    env->expect = n;
    fire_asks(srv, futures, n, base);
    latch_wait(&env->done, seen, r);
    if (r[0] != n)
        fail("ask_par_mem: stash count");
    if (rss) {
        sleep_ms(200);
        *rss = rss_kib();
        *heap = heap_in_use();
    }
    tell(srv, msg_new(&RELEASE, 0, 0, 0), NULL);
    collect_futures("ask_par_mem", futures, n, base);
}

static void bench_ask_par_mem(ac_system *sys, const void *param)
{
    (void)param;
    stash_env env;
    uint64_t seen = 0;
    long rss_after = -1;
    long long heap_after = -1;
    latch_init(&env.done);
    env.senders = xcalloc(ASK_MEM_N, sizeof *env.senders);
    env.msgs = xcalloc(ASK_MEM_N, sizeof *env.msgs);
    ac_future **futures = xcalloc(ASK_MEM_N, sizeof *futures);
    /* Touch the arrays so that their pages count in the baseline. */
    memset(env.senders, 0, ASK_MEM_N * sizeof *env.senders);
    memset(env.msgs, 0, ASK_MEM_N * sizeof *env.msgs);
    memset(futures, 0, ASK_MEM_N * sizeof *futures);
    ac_ref *srv = spawn_top(sys, &stasher, &env);
    stash_round(srv, &env, futures, ASK_MEM_WARM, 0, &seen, NULL, NULL);
    sleep_ms(200);
    long rss_before = rss_kib();
    long long heap_before = heap_in_use();
    stash_round(srv, &env, futures, ASK_MEM_N, ASK_MEM_WARM, &seen, &rss_after, &heap_after);
    check_no_timers(sys, "ask_par_mem");
    if (rss_before < 0 || rss_after < 0)
        fail("ask_par_mem: cannot read VmRSS");
    double rss_per = (double)(rss_after - rss_before) * 1024.0 / ASK_MEM_N;
    if (heap_before >= 0) {
        printf("INFO ask_par_mem asks_in_flight %d measure mallinfo2_uordblks+hblkhd"
               " heap_before %lld heap_after %lld B rss_before %ld rss_after %ld KiB"
               " rss_bytes_per_ask %.1f\n",
               ASK_MEM_N, heap_before, heap_after, rss_before, rss_after, rss_per);
        result("ask_par", "bytes_per_ask", (double)(heap_after - heap_before) / ASK_MEM_N, "B");
    } else {
        printf("INFO ask_par_mem asks_in_flight %d measure VmRSS rss_before %ld rss_after %ld"
               " KiB\n",
               ASK_MEM_N, rss_before, rss_after);
        result("ask_par", "bytes_per_ask", rss_per, "B");
    }
    fflush(stdout);
    stop_release(srv);
    free(futures);
    free(env.msgs);
    free(env.senders);
    latch_fini(&env.done);
}

/* --------------------------------------------------------- idle actors --- */
/* Idle actors count their starts and stops in shared atomics (no messages,
 * so no message garbage inflates RSS) and wait to be stopped. */

typedef struct idle_env {
    atomic_llong started, stopped;
} idle_env;

static void idler_pre_start(ac_ctx *ctx)
{
    idle_env *env = ac_ctx_user_data(ctx);
    atomic_fetch_add_explicit(&env->started, 1, memory_order_relaxed);
}

static void idler_post_stop(ac_ctx *ctx)
{
    idle_env *env = ac_ctx_user_data(ctx);
    atomic_fetch_add_explicit(&env->stopped, 1, memory_order_relaxed);
}

static void idler_receive(ac_ctx *ctx, ac_msg *msg)
{
    unexpected(ctx, msg);
}

static const ac_actor_def idler = {.name = "Idler",
                                   .pre_start = idler_pre_start,
                                   .receive = idler_receive,
                                   .post_stop = idler_post_stop};

/* Poll (1 ms) until *count reaches n; false after timeout_ms. */
static int wait_count(atomic_llong *count, long long n, long timeout_ms)
{
    for (long waited = 0; atomic_load(count) < n; waited++) {
        if (waited >= timeout_ms)
            return 0;
        sleep_ms(1);
    }
    return 1;
}

static void spawn_idlers(ac_system *sys, idle_env *env, ac_ref **refs, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        refs[i] = spawn_top(sys, &idler, env);
    if (!wait_count(&env->started, n, 60000))
        fail("idle actors: not all started");
}

static void stop_idlers(idle_env *env, ac_ref **refs, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        stop_release(refs[i]);
    if (!wait_count(&env->stopped, n, 10000))
        fail("idle actors: not all terminated");
}

/* idle_mem: 100,000 idle actors; resident memory growth per actor. The ref
 * array is allocated before the baseline. */
enum { MEM_ACTORS = 100000 };

static void bench_idle_mem(ac_system *sys, const void *param)
{
    (void)param;
    idle_env env = {0};
    ac_ref **refs = xcalloc(MEM_ACTORS, sizeof *refs);
    sleep_ms(200);
    long before = rss_kib();
    spawn_idlers(sys, &env, refs, MEM_ACTORS);
    sleep_ms(200);
    long after = rss_kib();
    if (before < 0 || after < 0)
        fail("mem: cannot read VmRSS");
    result("idle_mem", "rss_before", (double)before, "KiB");
    result("idle_mem", "rss_after", (double)after, "KiB");
    result("idle_mem", "bytes_per_actor_rss", (double)(after - before) * 1024.0 / MEM_ACTORS,
           "B/actor");
    stop_idlers(&env, refs, MEM_ACTORS);
    free(refs);
}

/* idle: process CPU time while 10,000 actors idle for 2 s (the main thread
 * sleeps), as a percentage of one core. */
enum { IDLE_ACTORS = 10000, IDLE_SETTLE_MS = 200, IDLE_WINDOW_MS = 2000 };

static void bench_idle(ac_system *sys, const void *param)
{
    (void)param;
    idle_env env = {0};
    ac_ref **refs = xcalloc(IDLE_ACTORS, sizeof *refs);
    spawn_idlers(sys, &env, refs, IDLE_ACTORS);
    sleep_ms(IDLE_SETTLE_MS);
    int64_t cpu0 = cpu_ns(), wall0 = now_ns();
    sleep_ms(IDLE_WINDOW_MS);
    int64_t cpu = cpu_ns() - cpu0, wall = now_ns() - wall0;
    printf("INFO idle actors %d cpu_ns %" PRId64 " wall_ns %" PRId64 "\n", IDLE_ACTORS, cpu,
           wall);
    fflush(stdout);
    result("idle", "cpu_pct_of_one_core", 100.0 * (double)cpu / (double)wall, "%");
    stop_idlers(&env, refs, IDLE_ACTORS);
    free(refs);
}

/* -------------------------------------------------------------- restart --- */
/* One operation: M int messages to an actor that fails (ac_fail) on every
 * odd one and counts the even ones, then a Count; its supervisor restarts
 * it every time (no restart limit). The Count reply carries the handled and
 * restart counts, which live outside the actor's state (a restart resets
 * that): M/2 each, so no failed message was retried and none was lost.
 * Timed by the main thread, first send to the reply. Its own system, with
 * logging off, so that the error line of every failure is not written. */

enum { RESTART_MSGS = 100000, RESTART_ITERS = 10, RESTART_WARM = 2 };

typedef struct restart_env {
    latch done;
    ac_ref *failer;   /* set by the supervisor's pre_start, before it signals */
    int64_t handled;  /* only the failer's handlers touch these two */
    int64_t restarts;
} restart_env;

static void failer_receive(ac_ctx *ctx, ac_msg *msg)
{
    restart_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        if (ac_msg_int64(msg) & 1) {
            ac_error *e = ac_error_new("bench.Odd", "odd message");
            if (!e)
                die("ac_error_new");
            check(ac_fail(ctx, e), "ac_fail");
        } else {
            env->handled++;
        }
    } else if (ac_msg_is(msg, &COUNT)) {
        latch_signal(&env->done, env->handled, env->restarts, now_ns());
    } else {
        unexpected(ctx, msg);
    }
}

static void failer_post_restart(ac_ctx *ctx, const ac_error *cause)
{
    restart_env *env = ac_ctx_user_data(ctx);
    if (!ac_error_is(cause, "bench.Odd"))
        fail("restart: restarted for another cause");
    env->restarts++;
}

static const ac_actor_def failer = {
    .name = "Failer", .receive = failer_receive, .post_restart = failer_post_restart};

static void restart_sup_pre_start(ac_ctx *ctx)
{
    restart_env *env = ac_ctx_user_data(ctx);
    ac_props *props = ac_props_new(&failer, env);
    if (!props)
        die("ac_props_new");
    env->failer = ac_spawn_child(ctx, props, "failer");
    if (!env->failer)
        die("ac_spawn_child");
    latch_signal(&env->done, 0, 0, 0);
}

static void restart_sup_receive(ac_ctx *ctx, ac_msg *msg)
{
    unexpected(ctx, msg);
}

static const ac_actor_def restart_sup = {
    .name = "RestartSupervisor", .pre_start = restart_sup_pre_start, .receive = restart_sup_receive};

static void bench_restart(ac_system *bench_sys, const void *param)
{
    (void)bench_sys;
    (void)param;
    ac_system_options opts = {.log_level = AC_LOG_OFF};
    ac_system *sys = ac_system_create("bench_restart", &opts);
    if (!sys)
        die("ac_system_create");
    restart_env env = {0};
    uint64_t seen = 0;
    int64_t r[3];
    double rates[RESTART_ITERS];
    latch_init(&env.done);
    ac_props *props = ac_props_new(&restart_sup, &env);
    if (!props)
        die("ac_props_new");
    ac_supervisor_strategy never_give_up = {.directive = AC_RESTART, .max_restarts = -1};
    check(ac_props_set_supervisor(props, &never_give_up), "ac_props_set_supervisor");
    ac_ref *sup = ac_spawn(sys, props, "supervisor");
    if (!sup)
        die("ac_spawn");
    latch_wait(&env.done, &seen, r);
    for (int it = 0; it < RESTART_WARM + RESTART_ITERS; it++) {
        int64_t t0 = now_ns();
        for (int64_t i = 0; i < RESTART_MSGS; i++) {
            ac_msg *m = ac_msg_int64_new(i);
            if (!m)
                die("ac_msg_int64_new");
            tell(env.failer, m, NULL);
        }
        tell(env.failer, msg_new(&COUNT, 0, 0, 0), NULL);
        latch_wait(&env.done, &seen, r);
        int64_t rounds = it + 1;
        if (r[0] != rounds * RESTART_MSGS / 2)
            fail("restart: handled count (a failed message retried or one lost)");
        if (r[1] != rounds * RESTART_MSGS / 2)
            fail("restart: restart count");
        if (it >= RESTART_WARM)
            rates[it - RESTART_WARM] = (RESTART_MSGS / 2) * 1e9 / (double)(r[2] - t0);
    }
    result("restart", "restarts_per_s", median(rates, RESTART_ITERS), "restarts/s");
    ac_ref_release(env.failer);
    stop_release(sup);
    check(ac_system_terminate(sys), "ac_system_terminate");
    latch_fini(&env.done);
}

/* ------------------------------------------------------ timer precision --- */
/* How late a timer fires, as a user sees it: an actor arms it and the
 * lateness is taken when the actor receives its outcome. Lateness =
 * arrival - (arm time + delay): the timer's own and the hand-off to a
 * worker. One timer at a time (the machine otherwise idle); the next is
 * armed from the handler that received the last.
 *   late_pNN_200us/_1ms/_10ms  ac_schedule_once_us to self, armed in a turn
 *   ask_late_pNN_1ms/_10ms     ac_ask_in to an actor that never answers:
 *                              the ask's timeout, at its continuation
 *   os_sleep_late_pNN_1ms      the machine's own: a plain thread's
 *                              clock_nanosleep to an absolute time 1 ms
 *                              ahead, without timer slack, no runtime
 *                              involved. The floor under the rows above
 *                              on the machine it runs on (a virtual
 *                              machine whose idle cores halt wakes a
 *                              sleeper tens of us late).
 * 2,000 / 1,000 / 200 timers (500 / 100 asks, 1,000 sleeps) after 20 of
 * warm-up each. */

enum { PRECISION_WARM = 20 };

static const ac_msg_type PRECISION_GO = {.name = "bench.PrecisionGo"};     /* {delay_us, n, ask} */
static const ac_msg_type PRECISION_FIRE = {.name = "bench.PrecisionFire"}; /* {} */

typedef struct precision_env {
    latch done;
    ac_ref *silent; /* never answers: asks to it time out */
    int64_t *late;  /* ns, one per measured timer */
} precision_env;

typedef struct precision_state {
    int64_t delay_us, n, i, ask;
    int64_t t0;
} precision_state;

static void precision_arm(ac_ctx *ctx, precision_state *st, precision_env *env);

static void precision_landed(ac_ctx *ctx, precision_state *st, precision_env *env)
{
    int64_t late = now_ns() - st->t0 - st->delay_us * 1000;
    if (late < 0)
        fail("timer_precision: a timer fired early");
    if (st->i >= PRECISION_WARM)
        env->late[st->i - PRECISION_WARM] = late;
    if (++st->i == st->n + PRECISION_WARM) {
        latch_signal(&env->done, st->n, 0, 0);
        return;
    }
    precision_arm(ctx, st, env);
}

static void precision_timed_out(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    (void)user;
    if (!answer->error || !ac_error_is(answer->error, AC_ASK_TIMEOUT_ERROR))
        fail("timer_precision: an ask to the silent actor did not time out");
    precision_landed(ctx, ac_ctx_state(ctx), ac_ctx_user_data(ctx));
}

static void precision_arm(ac_ctx *ctx, precision_state *st, precision_env *env)
{
    st->t0 = now_ns();
    if (st->ask) {
        check(ac_ask_in(ctx, env->silent, ac_msg_int64_new(st->i), st->delay_us / 1000,
                        precision_timed_out, NULL, NULL),
              "ac_ask_in");
        return;
    }
    ac_cancellable *c = ac_schedule_once_us(ac_self(ctx), st->delay_us,
                                            msg_new(&PRECISION_FIRE, 0, 0, 0), NULL);
    if (!c)
        die("ac_schedule_once_us");
    ac_cancellable_release(c);
}

static void precision_receive(ac_ctx *ctx, ac_msg *msg)
{
    precision_state *st = ac_ctx_state(ctx);
    precision_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &PRECISION_GO)) {
        st->delay_us = arg(msg, 0);
        st->n = arg(msg, 1);
        st->ask = arg(msg, 2);
        st->i = 0;
        precision_arm(ctx, st, env);
    } else if (ac_msg_is(msg, &PRECISION_FIRE)) {
        precision_landed(ctx, st, env);
    } else {
        unexpected(ctx, msg);
    }
}

static const ac_actor_def precision_armer = {
    .name = "PrecisionArmer", .state_size = sizeof(precision_state), .receive = precision_receive};

static void silent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def silent = {.name = "Silent", .receive = silent_receive};

static void precision_run(ac_ref *armer, precision_env *env, uint64_t *seen, int64_t delay_us,
                          int n, bool ask, const char *metric)
{
    env->late = xcalloc((size_t)n, sizeof *env->late);
    ac_msg *go = ac_msg_new(&PRECISION_GO, 3 * sizeof(int64_t));
    if (!go)
        die("ac_msg_new");
    int64_t *v = ac_msg_payload(go);
    v[0] = delay_us;
    v[1] = n;
    v[2] = ask;
    tell(armer, go, NULL);
    int64_t out[3];
    latch_wait(&env->done, seen, out);
    if (out[0] != n)
        fail("timer_precision: timer count");
    qsort(env->late, (size_t)n, sizeof *env->late, cmp_i64);
    char name[64];
    const char *prefix = ask ? "ask_late" : "late";
    snprintf(name, sizeof name, "%s_p50_%s", prefix, metric);
    result("timer_precision", name, (double)pct(env->late, (size_t)n, 50) / 1e3, "us");
    snprintf(name, sizeof name, "%s_p99_%s", prefix, metric);
    result("timer_precision", name, (double)pct(env->late, (size_t)n, 99) / 1e3, "us");
    free(env->late);
    env->late = NULL;
}

static void os_sleep_lateness(void)
{
    enum { N = 1000 };
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* as the timer thread */
#endif
    int64_t *late = xcalloc(N, sizeof *late);
    for (int i = -PRECISION_WARM; i < N; i++) {
        int64_t due = now_ns() + 1000000;
        struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
        if (i >= 0)
            late[i] = now_ns() - due;
    }
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL); /* back to the default */
#endif
    qsort(late, N, sizeof *late, cmp_i64);
    result("timer_precision", "os_sleep_late_p50_1ms", (double)pct(late, N, 50) / 1e3, "us");
    result("timer_precision", "os_sleep_late_p99_1ms", (double)pct(late, N, 99) / 1e3, "us");
    free(late);
}

static void bench_timer_precision(ac_system *sys, const void *param)
{
    (void)param;
    precision_env env = {0};
    uint64_t seen = 0;
    latch_init(&env.done);
    env.silent = spawn_top(sys, &silent, NULL);
    ac_ref *armer = spawn_top(sys, &precision_armer, &env);
    precision_run(armer, &env, &seen, 200, 2000, false, "200us");
    precision_run(armer, &env, &seen, 1000, 1000, false, "1ms");
    precision_run(armer, &env, &seen, 10000, 200, false, "10ms");
    precision_run(armer, &env, &seen, 1000, 500, true, "1ms");
    precision_run(armer, &env, &seen, 10000, 100, true, "10ms");
    stop_release(armer);
    stop_release(env.silent);
    check_no_timers(sys, "timer_precision");
    latch_fini(&env.done);
    os_sleep_lateness();
}

/* ------------------------------------------------------------ timer ops --- */
/* What arming and cancelling a timer costs a caller, alone and with a
 * second thread doing the same (the timers' one lock then contended):
 * ac_schedule_once of a message due in 60 s, ac_cancel, and
 * ac_cancellable_release, from threads outside the system (the message a
 * retained one, so no allocation but the handle's).
 *   arm_cancel_ns_1_thread    ns per arm + cancel, one thread
 *   arm_cancel_ns_2_threads   the same, per thread, two at once
 * Medians of 5 rounds of 200,000 pairs per thread. */

enum { TIMER_OPS_PAIRS = 200000, TIMER_OPS_ROUNDS = 5 };

typedef struct timer_ops_arg {
    ac_ref *target;
    ac_msg *msg;
    int64_t ns;
} timer_ops_arg;

static void *timer_ops_thread(void *p)
{
    timer_ops_arg *a = p;
    int64_t t0 = now_ns();
    for (int i = 0; i < TIMER_OPS_PAIRS; i++) {
        ac_cancellable *c = ac_schedule_once(a->target, 60000, ac_msg_retain(a->msg), NULL);
        if (!c)
            die("ac_schedule_once");
        if (!ac_cancel(c))
            fail("timer_ops: a timer due in 60 s could not be cancelled");
        ac_cancellable_release(c);
    }
    a->ns = now_ns() - t0;
    return NULL;
}

static double timer_ops_round(ac_ref *target, ac_msg *msg, int threads)
{
    pthread_t th[2];
    timer_ops_arg args[2];
    for (int i = 0; i < threads; i++) {
        args[i] = (timer_ops_arg){.target = target, .msg = msg};
        if (pthread_create(&th[i], NULL, timer_ops_thread, &args[i]) != 0)
            fail("timer_ops: pthread_create");
    }
    double sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        sum += (double)args[i].ns / TIMER_OPS_PAIRS;
    }
    return sum / threads;
}

static void bench_timer_ops(ac_system *sys, const void *param)
{
    (void)param;
    ac_ref *target = spawn_top(sys, &silent, NULL);
    ac_msg *msg = msg_new(&PRECISION_FIRE, 0, 0, 0);
    for (int threads = 1; threads <= 2; threads++) {
        double ns[TIMER_OPS_ROUNDS];
        for (int r = 0; r < TIMER_OPS_ROUNDS; r++)
            ns[r] = timer_ops_round(target, msg, threads);
        result("timer_ops", threads == 1 ? "arm_cancel_ns_1_thread" : "arm_cancel_ns_2_threads",
               median(ns, TIMER_OPS_ROUNDS), "ns");
    }
    ac_msg_release(msg);
    stop_release(target);
    check_no_timers(sys, "timer_ops");
}

/* ------------------------------------------------------------ the table --- */

typedef struct workload {
    const char *name;
    const char *mode; /* the mode that runs it: "suite", "mem" or "idle" */
    void (*run)(ac_system *sys, const void *param);
    const void *param;
} workload;

static void bench_tell_metrics_on(ac_system *bench_sys, const void *param);
static void bench_tell_observed(ac_system *bench_sys, const void *param);

static const workload WORKLOADS[] = {
    {"spawn", "suite", bench_spawn, NULL},
    {"spawn_in", "suite", bench_spawn_in, NULL},
    {"tell_1k", "suite", bench_tell, &TELL_1K},
    {"tell_10k", "suite", bench_tell, &TELL_10K},
    {"tell_10k_metrics_on", "suite", bench_tell_metrics_on, NULL},
    {"tell_10k_observed", "suite", bench_tell_observed, NULL},
    {"router_rr", "suite", bench_router_rr, NULL},
    {"ask", "suite", bench_ask, NULL},
    {"ask_in", "suite", bench_ask_in, NULL},
    {"pingpong", "suite", bench_pingpong, NULL},
    {"ask_par", "suite", bench_ask_par, NULL},
    {"idle_mem", "mem", bench_idle_mem, NULL},
    {"ask_par_mem", "mem", bench_ask_par_mem, NULL},
    {"restart", "suite", bench_restart, NULL},
    {"scatter_seq", "suite", bench_scatter_seq, NULL},
    {"scatter_seq_in", "suite", bench_scatter_seq_in, NULL},
    {"scatter_seq_in_ask", "suite", bench_scatter_seq_in_ask, NULL},
    {"scatter_par", "suite", bench_scatter_par, NULL},
    {"scatter_tail", "suite", bench_scatter_tail, NULL},
    {"hedge_tail", "suite", bench_hedge_tail, NULL},
    {"scatter_open", "mem", bench_scatter_open, NULL},
    {"breaker_ask", "suite", bench_breaker_ask, NULL},
    {"timer_precision", "suite", bench_timer_precision, NULL},
    {"timer_ops", "suite", bench_timer_ops, NULL},
    {"idle", "idle", bench_idle, NULL},
};
enum { NWORKLOADS = sizeof WORKLOADS / sizeof WORKLOADS[0] };

/* suite runs its own group and then idle: the idle figure costs 2 s and
 * belongs in every run; mem needs a fresh process, so it stays apart. */
static int selected(const workload *w, const char *arg)
{
    if (strcmp(arg, "suite") == 0)
        return strcmp(w->mode, "suite") == 0 || strcmp(w->mode, "idle") == 0;
    return strcmp(arg, w->mode) == 0 || strcmp(arg, w->name) == 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#if defined(__clang__)
#define COMPILER "clang-" STR(__clang_major__) "." STR(__clang_minor__) "." STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define COMPILER "gcc-" STR(__GNUC__) "." STR(__GNUC_MINOR__) "." STR(__GNUC_PATCHLEVEL__)
#else
#define COMPILER "unknown"
#endif

static int usage(void)
{
    fprintf(stderr, "usage: actorc-bench suite|mem|idle|list|version|compiler|WORKLOAD\n");
    return 64;
}

static int list_workloads(void)
{
    for (size_t i = 0; i < NWORKLOADS; i++)
        printf("%-12s %s\n", WORKLOADS[i].name, WORKLOADS[i].mode);
    return 0;
}

/* After a workload has released everything it made (asks settled,
 * routers stopped, breakers released), none of its timers may stay armed
 * in the shared system: one that did would be a leak in the library, and
 * would be charged to the next workload's check. A stopped actor's last
 * turn may still be running, so allow it a moment. */
static void check_no_timers_left(ac_system *sys, const char *wl)
{
    int64_t end = now_ns() + 2000000000;
    while (ac_timers_armed(sys) != 0 && now_ns() < end)
        sleep_ms(1);
    char what[256];
    size_t armed = ac_timers_armed(sys);
    if (armed != 0) {
        snprintf(what, sizeof what, "%s: %zu timers still armed after it ended", wl, armed);
        fail(what);
    }
}

/* Run the selected workloads in this process, on one system. */
static int run_here(const char *arg, const workload *only)
{
    ac_system *sys = ac_system_create("bench", NULL);
    if (!sys)
        die("ac_system_create");
    printf("INFO actorc_version %d.%d.%d workers %d\n", AC_VERSION_MAJOR, AC_VERSION_MINOR,
           AC_VERSION_PATCH, ac_system_workers(sys));
    fflush(stdout);
    for (size_t i = 0; i < NWORKLOADS; i++)
        if (only ? &WORKLOADS[i] == only : selected(&WORKLOADS[i], arg)) {
            WORKLOADS[i].run(sys, WORKLOADS[i].param);
            check_no_timers_left(sys, WORKLOADS[i].name);
        }
    check(ac_system_terminate(sys), "ac_system_terminate");
    return 0;
}

/* Run one workload in a child process, forked while this process has no
 * system (no threads); its exit status is the result. */
static int run_in_child(const workload *w)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("ERROR: fork");
        return 1;
    }
    if (pid == 0) {
        int rc = run_here(NULL, w);
        fflush(stdout);
        _exit(rc);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    fprintf(stderr, "ERROR: %s: killed by signal %d\n", w->name, WTERMSIG(status));
    return 1;
}

static int run_selected(const char *arg)
{
    size_t todo = 0;
    for (size_t i = 0; i < NWORKLOADS; i++)
        todo += (size_t)selected(&WORKLOADS[i], arg);
    if (todo == 0)
        return usage();
    if (strcmp(arg, "mem") != 0)
        return run_here(arg, NULL);
    for (size_t i = 0; i < NWORKLOADS; i++) {
        if (!selected(&WORKLOADS[i], arg))
            continue;
        int rc = run_in_child(&WORKLOADS[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : "suite";
    if (argc > 2)
        return usage();
    if (strcmp(arg, "list") == 0)
        return list_workloads();
    if (strcmp(arg, "version") == 0) {
        printf("%d.%d.%d\n", AC_VERSION_MAJOR, AC_VERSION_MINOR, AC_VERSION_PATCH);
        return 0;
    }
    if (strcmp(arg, "compiler") == 0) {
        printf("%s\n", COMPILER);
        return 0;
    }
    return run_selected(arg);
}

/* ------------------------------------------------- tell, metrics on --- */
/* tell_10k again, on a system of its own with the metrics registry on (as
 * many workers, defaults otherwise): what the runtime's instrumentation
 * costs the tell path, printed beside tell_10k (the aim: >= 90% of it).
 * Checks that the messages were counted: all N of every iteration but the
 * last (its final turns may end after the sender has signalled). */

static void bench_tell_metrics_on(ac_system *bench_sys, const void *param)
{
    static const tell_params p = {"tell_10k_metrics_on", 10000, 30, 3};
    (void)param;
    ac_system_options opts = {.workers = ac_system_workers(bench_sys), .metrics = true};
    ac_system *sys = ac_system_create("bench_metrics", &opts);
    if (!sys)
        die("ac_system_create");
    bench_tell(sys, &p);
    char *page = ac_metrics_format(sys);
    const char *line = page ? strstr(page, "\nactorc_messages_processed_total ") : NULL;
    double counted = line ? strtod(line + strlen("\nactorc_messages_processed_total "), NULL) : 0;
    if (counted < (double)(p.warm + p.iters - 1) * (double)p.n)
        fail("tell_10k_metrics_on: messages processed not counted");
    free(page);
    check(ac_system_terminate(sys), "ac_system_terminate");
}

/* --------------------------------------------------- tell, observed --- */
/* What watching a system costs it: tell_10k on a system that serves its
 * view (observe.h) over HTTP, with 1,000 more actors and a hedged router
 * in it, while a client GETs /view (the observer page's poll: the
 * system, the first 100 actors, the routers) every 100 ms, against the
 * same without the client. Rounds alternate, unobserved then observed,
 * so that the machine's drift falls on both; each side's rate is the
 * median of its rounds' medians, and the ratio the median of the rounds'
 * ratios (observed over the unobserved just before). The aim: the observed rate within 5 %
 * of the unobserved (ratio >= 0.95). Also prints how long a view took
 * the client, GET to the last byte. Without actorc_http, says so. */

#define OBSERVED_ROUNDS 7
#define OBSERVED_ACTORS 1000
#define POLL_MS 100

#ifdef ACTORC_BENCH_HTTP
typedef struct poller {
    int port;
    atomic_int stop;
    int64_t polls, bytes, ns_total, ns_max;
    pthread_t thread;
} poller;

/* One GET of /view; the bytes read, -1 on failure. */
static long get_view(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char req[] = "GET /view HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    long total = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        char buf[16384];
        ssize_t n;
        total = 0;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            total += n;
        if (n < 0 || memcmp(buf, "HTTP/1.", 7) != 0)
            total = total > 0 ? total : -1;
    }
    close(fd);
    return total;
}

static void *poll_main(void *arg)
{
    poller *p = arg;
    while (!atomic_load(&p->stop)) {
        int64_t t0 = now_ns();
        long n = get_view(p->port);
        int64_t el = now_ns() - t0;
        if (n <= 0)
            fail("tell_10k_observed: GET /view failed");
        p->polls++;
        p->bytes += n;
        p->ns_total += el;
        if (el > p->ns_max)
            p->ns_max = el;
        for (int waited = 0; waited < POLL_MS && !atomic_load(&p->stop); waited += 5)
            sleep_ms(5);
    }
    return NULL;
}
#endif

static void bench_tell_observed(ac_system *bench_sys, const void *param)
{
    (void)param;
#ifndef ACTORC_BENCH_HTTP
    (void)bench_sys;
    printf("# tell_10k_observed: built without actorc_http: skipped\n");
#else
    /* half a second a side at 30M msg/s: five polls or so */
    static const tell_params quiet = {NULL, 10000, 1500, 20};
    ac_system_options opts = {.workers = ac_system_workers(bench_sys), .metrics = true};
    ac_system *sys = ac_system_create("bench_observed", &opts);
    if (!sys)
        die("ac_system_create");
    ac_ref **idle = xcalloc(OBSERVED_ACTORS, sizeof *idle);
    for (int i = 0; i < OBSERVED_ACTORS; i++)
        idle[i] = spawn_top(sys, &counter, NULL);
    ac_ref *router = ac_spawn(sys, ac_router_hedged(3, &counter, NULL, NULL), "hedged");
    if (!router)
        die("ac_router_hedged");
    check(ac_metrics_serve(sys, NULL), "ac_metrics_serve");
    poller p = {.port = ac_metrics_http_port(sys)};
    double quiet_rates[OBSERVED_ROUNDS], watched_rates[OBSERVED_ROUNDS], ratios[OBSERVED_ROUNDS];
    for (int r = 0; r < OBSERVED_ROUNDS; r++) {
        quiet_rates[r] = tell_median(sys, &quiet);
        atomic_store(&p.stop, 0);
        if (pthread_create(&p.thread, NULL, poll_main, &p) != 0)
            die("pthread_create");
        watched_rates[r] = tell_median(sys, &quiet);
        atomic_store(&p.stop, 1);
        pthread_join(p.thread, NULL);
        ratios[r] = watched_rates[r] / quiet_rates[r];
    }
    double q = median(quiet_rates, OBSERVED_ROUNDS), w = median(watched_rates, OBSERVED_ROUNDS);
    result("tell_10k_observed", "msgs_per_s_median_iter", w, "msg/s");
    result("tell_10k_observed", "unobserved_msgs_per_s", q, "msg/s");
    result("tell_10k_observed", "ratio_to_unobserved", median(ratios, OBSERVED_ROUNDS), "x");
    if (p.polls) {
        result("tell_10k_observed", "view_ms_mean", (double)p.ns_total / (double)p.polls / 1e6,
               "ms");
        result("tell_10k_observed", "view_ms_max", (double)p.ns_max / 1e6, "ms");
        result("tell_10k_observed", "view_bytes_mean", (double)p.bytes / (double)p.polls, "B");
    }
    result("tell_10k_observed", "polls", (double)p.polls, "polls");
    stop_release(router);
    for (int i = 0; i < OBSERVED_ACTORS; i++)
        stop_release(idle[i]);
    free(idle);
    check(ac_system_terminate(sys), "ac_system_terminate");
#endif
}

