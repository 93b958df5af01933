/*
 * hedge_tail: scatter_tail's load (scatter_bench.c) through the hedged
 * router with the adaptive p95 delay, beside scatter/gather and round
 * robin in the same run: the tail each returns and the calls each makes
 * per request.
 *
 * The load. Routees that take 1 ms (98 %) or 100 ms (2 %) per request,
 * drawn up front per request and routee (fixed seed; whole ms, as the
 * routees schedule their reply with ac_schedule_once), answering from a
 * scheduled message to themselves so that they never block. An actor
 * caller keeps 32 requests in flight (ac_ask_in) until 10,000 have been
 * answered after 500 of warm-up (which also fills the hedged router's
 * window of observed latencies). Each router gets the same draws: routee
 * k takes delay[request][k] ms whoever asks it; round robin's single
 * routee takes rr_delay[request].
 *
 * Reported: the hedged router's p99 and calls per request (requests the
 * routees handled, warm-up included, over requests), and scatter/gather's
 * and round robin's p99 from the same run. Every answer is checked to be
 * the request's own tag from a routee; after each phase the routees'
 * counts must settle and no timer be left armed.
 */
#define _POSIX_C_SOURCE 200809L

#include "hedge_bench.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum {
    HT_N = 3, /* routees */
    HT_WARM = 500,
    HT_R = 10000,
    HT_TOTAL = HT_WARM + HT_R,
    HT_CONC = 32,
    HT_FAST_MS = 1,
    HT_SLOW_MS = 100,
    HT_SLOW_PER_10K = 200, /* 2 % */
};
#define HT_TIMEOUT_MS 1000
#define HT_ASK_TIMEOUT_MS 60000
#define HT_SEED 0x5ca77e12u

enum { MODE_ROUTEE = 0, MODE_RR = 1 };

static const ac_msg_type HT_REQ = {.name = "bench.HedgeReq"};   /* {req, mode} */
static const ac_msg_type HT_FIRE = {.name = "bench.HedgeFire"}; /* {req, mode} */
static const ac_msg_type HT_GO = {.name = "bench.HedgeGo"};     /* {} */

typedef struct ht_env {
    ac_ref *target;
    int mode;
    int64_t delay[HT_TOTAL][HT_N]; /* ms; routee k takes [req][k] */
    int64_t rr_delay[HT_TOTAL];    /* ms; round robin */
    int64_t t0[HT_TOTAL];          /* request start, written by the caller */
    int64_t lat[HT_TOTAL];         /* ns, request start to answer */
    atomic_llong handled;          /* requests the routees handled */
    atomic_llong fired;            /* replies the routees sent */
    char prefix[256];              /* "<router path>/routee-" */
    latch done;
} ht_env;

typedef struct ht_state {
    int64_t next, answered;
} ht_state;

typedef struct ht_routee_state {
    int idx1; /* routee-K: K, once known */
} ht_routee_state;

static int routee_index(ac_ctx *ctx)
{
    ht_routee_state *st = ac_ctx_state(ctx);
    if (!st->idx1) {
        const char *name = ac_self_name(ctx);
        long k = strncmp(name, "routee-", 7) == 0 ? strtol(name + 7, NULL, 10) : 0;
        if (k < 1 || k > HT_N)
            fail("hedge_tail: a routee with an unexpected name");
        st->idx1 = (int)k;
    }
    return st->idx1 - 1;
}

static void ht_routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    ht_env *env = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &HT_REQ)) {
        int64_t req = arg(msg, 0), mode = arg(msg, 1);
        int64_t d = mode == MODE_RR ? env->rr_delay[req] : env->delay[req][routee_index(ctx)];
        atomic_fetch_add_explicit(&env->handled, 1, memory_order_relaxed);
        /* The reply target travels as the scheduled message's sender. */
        ac_cancellable *c =
            ac_schedule_once(ac_self(ctx), d, msg_new(&HT_FIRE, 2, req, mode), ac_sender(ctx));
        if (!c)
            die("ac_schedule_once");
        ac_cancellable_release(c);
    } else if (ac_msg_is(msg, &HT_FIRE)) {
        ac_msg *reply = ac_msg_int64_new(arg(msg, 0));
        if (!reply)
            die("ac_msg_int64_new");
        check(ac_reply(ctx, reply), "ac_reply");
        atomic_fetch_add_explicit(&env->fired, 1, memory_order_release);
    } else {
        fail("hedge_tail: a routee got an unexpected message");
    }
}

static const ac_actor_def ht_routee = {
    .name = "HedgeTailRoutee", .state_size = sizeof(ht_routee_state), .receive = ht_routee_receive};

static void ht_answer(ac_ctx *ctx, const ac_answer *answer, void *user);

static void ht_issue(ac_ctx *ctx, ht_state *st, ht_env *env)
{
    int64_t req = st->next++;
    env->t0[req] = now_ns();
    check(ac_ask_in(ctx, env->target, msg_new(&HT_REQ, 2, req, env->mode), HT_ASK_TIMEOUT_MS,
                    ht_answer, (void *)(intptr_t)req, NULL),
          "ac_ask_in");
}

static void check_answer(const ht_env *env, const ac_answer *a, int64_t req)
{
    char what[512];
    int64_t got;
    if (a->error || ac_msg_int64_get(a->reply, &got) != AC_OK || got != req ||
        !a->sender || strncmp(ac_ref_path(a->sender), env->prefix, strlen(env->prefix)) != 0) {
        char *e = ac_error_to_string(a->error);
        snprintf(what, sizeof what, "hedge_tail: request %" PRId64 " answered wrongly: %s", req,
                 e ? e : ac_msg_type_name(a->reply));
        free(e);
        fail(what);
    }
}

static void ht_answer(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    ht_state *st = ac_ctx_state(ctx);
    ht_env *env = ac_ctx_user_data(ctx);
    int64_t req = (int64_t)(intptr_t)user;
    env->lat[req] = now_ns() - env->t0[req];
    check_answer(env, answer, req);
    if (st->next < HT_TOTAL)
        ht_issue(ctx, st, env);
    if (++st->answered == HT_TOTAL)
        latch_signal(&env->done, st->answered, 0, 0);
}

static void ht_caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    ht_state *st = ac_ctx_state(ctx);
    ht_env *env = ac_ctx_user_data(ctx);
    if (!ac_msg_is(msg, &HT_GO))
        fail("hedge_tail: the caller got an unexpected message");
    st->next = st->answered = 0;
    for (int j = 0; j < HT_CONC; j++)
        ht_issue(ctx, st, env);
}

static const ac_actor_def ht_caller = {
    .name = "HedgeTailCaller", .state_size = sizeof(ht_state), .receive = ht_caller_receive};

/* Wait until every request handled has been answered by its routee and no
 * timer is armed: nothing of the phase is left. */
static void settle(ac_system *sys, ht_env *env)
{
    for (int waited = 0;; waited++) {
        if (atomic_load_explicit(&env->fired, memory_order_acquire) ==
                atomic_load_explicit(&env->handled, memory_order_relaxed) &&
            ac_timers_armed(sys) == 0)
            return;
        if (waited >= 10000)
            fail("hedge_tail: requests or timers still open 10 s after a phase");
        sleep_ms(1);
    }
}

/* One phase through `props`: its p99 (us) over the measured requests, and
 * the calls it made per request. */
static double phase(ac_system *sys, ht_env *env, ac_ref *caller, ac_props *props, int mode,
                    uint64_t *seen, double *calls_per_request)
{
    if (!props)
        die("router props");
    ac_ref *router = ac_spawn(sys, props, NULL);
    if (!router)
        die("ac_spawn (router)");
    snprintf(env->prefix, sizeof env->prefix, "%s/routee-", ac_ref_path(router));
    env->target = router;
    env->mode = mode;
    long long before = atomic_load(&env->handled);
    int64_t r[3];
    check(ac_tell(caller, ac_msg_new(&HT_GO, 0), NULL), "ac_tell");
    latch_wait(&env->done, seen, r);
    if (r[0] != HT_TOTAL)
        fail("hedge_tail: answer count");
    settle(sys, env);
    *calls_per_request = (double)(atomic_load(&env->handled) - before) / (double)HT_TOTAL;
    check(ac_stop(router), "ac_stop");
    ac_ref_release(router);
    int64_t *lat = xcalloc(HT_R, sizeof *lat);
    memcpy(lat, env->lat + HT_WARM, HT_R * sizeof *lat);
    double p99 = (double)pct(lat, HT_R, 99) / 1000.0;
    free(lat);
    return p99;
}

static int64_t draw_delay(uint64_t *rng)
{
    return (xorshift64(rng) >> 11) % 10000 < HT_SLOW_PER_10K ? HT_SLOW_MS : HT_FAST_MS;
}

void bench_hedge_tail(ac_system *sys, const void *param)
{
    (void)param;
    ht_env *env = xcalloc(1, sizeof *env);
    uint64_t seen = 0, rng = HT_SEED;
    latch_init(&env->done);
    for (int64_t q = 0; q < HT_TOTAL; q++) {
        for (int k = 0; k < HT_N; k++)
            env->delay[q][k] = draw_delay(&rng);
        env->rr_delay[q] = draw_delay(&rng);
    }
    ac_props *cp = ac_props_new(&ht_caller, env);
    ac_ref *caller = cp ? ac_spawn(sys, cp, NULL) : NULL;
    if (!caller)
        die("ac_spawn (caller)");
    ac_routee_options ro = {.user_data = env};
    ac_hedged_options ho = {.timeout_ms = HT_TIMEOUT_MS, .delay_kind = AC_HEDGE_DELAY_ADAPTIVE};
    ac_scatter_gather_options so = {.timeout_ms = HT_TIMEOUT_MS};
    double hedged_calls, scatter_calls, rr_calls;
    double hedged = phase(sys, env, caller, ac_router_hedged(HT_N, &ht_routee, &ho, &ro),
                          MODE_ROUTEE, &seen, &hedged_calls);
    double scatter = phase(sys, env, caller,
                           ac_router_scatter_gather_first_completed(HT_N, &ht_routee, &so, &ro),
                           MODE_ROUTEE, &seen, &scatter_calls);
    double rr = phase(sys, env, caller, ac_router_round_robin(HT_N, &ht_routee, &ro), MODE_RR,
                      &seen, &rr_calls);
    check(ac_stop(caller), "ac_stop");
    ac_ref_release(caller);
    printf("INFO hedge_tail requests %d (after %d warm-up) in_flight %d routees %d; delay %d ms"
           " (%.0f%%) or %d ms (%.0f%%) per request and routee, drawn up front; hedged router:"
           " adaptive p95 delay (window %d, %d ms until %d samples); calls/request: hedged %.3f,"
           " scatter %.3f, rr %.3f\n",
           HT_R, HT_WARM, HT_CONC, HT_N, HT_FAST_MS, 100 - HT_SLOW_PER_10K / 100.0, HT_SLOW_MS,
           HT_SLOW_PER_10K / 100.0, AC_HEDGE_DEFAULT_WINDOW, AC_HEDGE_DEFAULT_DELAY_US / 1000,
           AC_HEDGE_DEFAULT_MIN_SAMPLES, hedged_calls, scatter_calls, rr_calls);
    fflush(stdout);
    result("hedge_tail", "p99", hedged, "us");
    result("hedge_tail", "calls_per_request", hedged_calls, "calls");
    result("hedge_tail", "scatter_p99", scatter, "us");
    result("hedge_tail", "rr_p99", rr, "us");
    latch_fini(&env->done);
    free(env);
}
