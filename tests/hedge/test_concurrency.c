/*
 * Racing paths, on the real clock: hedge delays of 100 us against routees
 * that answer within a few hundred us (from the timer thread, straight to
 * the reply ref), fail now and then, or never answer, so that hedge
 * timers, replies, error-triggered attempts, deadlines, budget refusals
 * and cancellations collide; asked from several threads at once, and once
 * with the router stopped in the middle. Every ask is answered exactly
 * once, every answer is a routee's reply or an AggregateError, nothing is
 * left armed once the deadlines have passed, and the per-routee counts
 * add up.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "hg_support.h"

#define THREADS 4
#define PER_THREAD (HG_TSAN ? 300 : 2000)

typedef struct race {
    ac_system *sys;
    ac_ref *router;
    atomic_llong handled;  /* requests routees handled */
    atomic_llong asked, answered; /* asks made, answered */
    atomic_llong ok, failed, dead, bad;
    atomic_llong next_seed;
} race;

typedef struct race_state {
    uint64_t rng;
} race_state;

static uint64_t next_rand(race_state *st)
{
    st->rng ^= st->rng << 13;
    st->rng ^= st->rng >> 7;
    st->rng ^= st->rng << 17;
    return st->rng;
}

static void race_init(ac_ctx *ctx, void *state)
{
    race *r = ac_ctx_user_data(ctx);
    race_state *st = state;
    st->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(atomic_fetch_add(&r->next_seed, 1) + 1);
}

/* 80 % answer within 0..400 us, 10 % fail within as long, 10 % never
 * answer; every answer goes from the timer thread to the reply ref. */
static void race_receive(ac_ctx *ctx, ac_msg *msg)
{
    race *r = ac_ctx_user_data(ctx);
    race_state *st = ac_ctx_state(ctx);
    uint64_t x = next_rand(st);
    unsigned what = (unsigned)(x % 10);
    int64_t us = (int64_t)((x >> 8) % 400);
    atomic_fetch_add(&r->handled, 1);
    if (what == 9 || ac_request_cancelled(ctx))
        return;
    ac_msg *answer = what == 8
                         ? ac_msg_error_new(ac_error_new("RaceError", "%s failed",
                                                         ac_self_name(ctx)))
                         : ac_msg_retain(msg);
    ac_cancellable_release(ac_schedule_once_us(ac_sender(ctx), us, answer, ac_self(ctx)));
}

static const ac_actor_def race_routee = {.name = "RaceRoutee",
                                         .state_size = sizeof(race_state),
                                         .init = race_init,
                                         .receive = race_receive};

static void on_answer(const ac_answer *a, void *user)
{
    race *r = user;
    if (a->reply && ac_msg_is(a->reply, &ac_msg_type_str) && a->sender && !a->error)
        atomic_fetch_add(&r->ok, 1);
    else if (a->reply && ac_msg_is(a->reply, &ac_msg_type_quorum) && !a->error)
        atomic_fetch_add(&r->ok, 1);
    else if (a->error && ac_error_is(a->error, AC_AGGREGATE_ERROR))
        atomic_fetch_add(&r->failed, 1);
    else if (a->error && ac_error_is(a->error, AC_ACTOR_STOPPED_ERROR))
        atomic_fetch_add(&r->dead, 1); /* asked after the router stopped */
    else
        atomic_fetch_add(&r->bad, 1);
    atomic_fetch_add(&r->answered, 1);
}

static void *asker(void *arg)
{
    race *r = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        /* keep the open requests bounded: the timers stay busy, not swamped */
        while (atomic_load(&r->asked) - atomic_load(&r->answered) > 256)
            ts_sleep_ms(1);
        atomic_fetch_add(&r->asked, 1);
        ac_future *f = ac_ask(r->router, ac_msg_str_new("k"), 10000);
        if (!f || ac_future_on_complete(f, on_answer, r) != AC_OK)
            atomic_fetch_add(&r->bad, 1);
        ac_future_release(f);
    }
    return NULL;
}

static void run_askers(race *r)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, asker, r), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

static uint64_t counter(ac_system *sys, const char *name, const char *const *labels, size_t n)
{
    ac_metric_value v;
    return ac_metrics_read(sys, name, labels, n, &v) == AC_OK ? v.count : 0;
}

static uint64_t outcomes(ac_system *sys, const char *router, int size, const char *only)
{
    static const char *const names[] = {"win", "loss", "error", "timeout"};
    uint64_t n = 0;
    for (int k = 1; k <= size; k++)
        for (int o = 0; o < 4; o++) {
            if (only && strcmp(only, names[o]) != 0)
                continue;
            char routee[32];
            snprintf(routee, sizeof routee, "routee-%d", k);
            const char *labels[] = {router, routee, names[o]};
            n += counter(sys, "router_routee_outcomes_total", labels, 3);
        }
    return n;
}

static bool all_quiet(void *arg)
{
    race *r = arg;
    return ac_timers_armed(r->sys) == 0;
}

static void race_router(void **state, const char *name, ac_props *(*make)(race *r),
                        const char *label, bool stop_midway)
{
    ts_fixture *fx = *state;
    race *r = ts_fx_data(fx, sizeof *r, NULL);
    ac_system_options o = {.workers = 3, .metrics = true};
    r->sys = ts_fx_system(fx, name, &o);
    assert_non_null(r->sys);
    r->router = ac_spawn(r->sys, make(r), "replicas");
    assert_non_null(r->router);
    if (stop_midway) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, asker, r), 0);
        assert_eventually(ts_wait_ge(&r->answered, PER_THREAD / 4, TS_WAIT_S), "some answers");
        assert_status(ac_stop(r->router), AC_OK);
        pthread_join(t, NULL);
    } else {
        run_askers(r);
    }
    long long total = stop_midway ? PER_THREAD : (long long)PER_THREAD * THREADS;
    assert_eventually(ts_wait_eq(&r->answered, total, TS_WAIT_S), "every ask answered");
    assert_int_equal(atomic_load(&r->bad), 0);
    assert_int_equal(atomic_load(&r->ok) + atomic_load(&r->failed) + atomic_load(&r->dead),
                     total);
    if (!stop_midway)
        assert_int_equal(atomic_load(&r->dead), 0);
    assert_eventually(ts_wait_until(all_quiet, r, TS_WAIT_S), "every timer to go");
    if (!stop_midway) {
        /* a gather's counts are in once the last envelope naming one of
         * its slots has gone (at the end of its routee's turn), a request
         * dropped unhandled (cancel_losers) counted as a loss. No timer
         * armed is not yet the end: a hedge sent as its gather resolved
         * may still wait in a routee's mailbox, to be handled (and to arm
         * that routee's answer) a moment later; so both sides are read
         * afresh until they agree. */
        const char *router[] = {label};
        uint64_t want = 0, got = 0;
        for (double end = ts_now() + TS_WAIT_S; ts_now() < end; ts_sleep_ms(1)) {
            uint64_t skipped = counter(r->sys, "router_losers_cancelled_total", router, 1);
            want = (uint64_t)atomic_load(&r->handled) + skipped;
            got = outcomes(r->sys, label, 3, NULL);
            if (got == want && ac_timers_armed(r->sys) == 0)
                break;
        }
        assert_int_equal(got, want);
        const char *first[] = {"first"};
        const char *family = strcmp(label, "hedged") == 0 ? "router_hedged_resolved_total"
                                                          : "router_scatter_gather_resolved_total";
        assert_int_equal(counter(r->sys, family, first, 1), (uint64_t)atomic_load(&r->ok));
    }
    print_message("%s: %lld ok, %lld failed, %lld requests handled\n", name,
                  (long long)atomic_load(&r->ok), (long long)atomic_load(&r->failed),
                  (long long)atomic_load(&r->handled));
    ac_ref_release(r->router);
}

static ac_props *fixed_hedged(race *r)
{
    ac_hedged_options o = {.timeout_ms = 20, .delay_us = 100};
    ac_routee_options ro = {.user_data = r};
    return ac_router_hedged(3, &race_routee, &o, &ro);
}

static ac_props *adaptive_budget_cancel(race *r)
{
    static const ac_hedge_budget b = {.ratio = 0.3, .max_tokens = 5};
    ac_hedged_options o = {.timeout_ms = 20,
                           .delay_kind = AC_HEDGE_DELAY_ADAPTIVE,
                           .delay_us = 100,
                           .window = 64,
                           .min_samples = 16,
                           .percentile = 60,
                           .budget = &b,
                           .cancel_losers = true};
    ac_routee_options ro = {.user_data = r};
    return ac_router_hedged(3, &race_routee, &o, &ro);
}

static ac_props *quorum_scatter(race *r)
{
    static const ac_hedge_budget b = {.ratio = 0.5};
    ac_scatter_gather_options o = {.timeout_ms = 20, .quorum = 2, .budget = &b,
                                   .cancel_losers = true};
    ac_routee_options ro = {.user_data = r};
    return ac_router_scatter_gather_first_completed(3, &race_routee, &o, &ro);
}

static void test_fixed_delay_races(void **state)
{
    race_router(state, "hg-race-fixed", fixed_hedged, "hedged", false);
}

static void test_adaptive_budget_cancel_races(void **state)
{
    race_router(state, "hg-race-adaptive", adaptive_budget_cancel, "hedged", false);
}

static void test_quorum_races(void **state)
{
    race_router(state, "hg-race-quorum", quorum_scatter, "scatter-gather", false);
}

static void test_stop_midway(void **state)
{
    race_router(state, "hg-race-stop", adaptive_budget_cancel, "hedged", true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_fixed_delay_races),
        TS_UNIT(test_adaptive_budget_cancel_races),
        TS_UNIT(test_quorum_races),
        TS_UNIT(test_stop_midway),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
