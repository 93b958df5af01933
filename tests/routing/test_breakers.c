/*
 * Pool routers with a circuit breaker per routee: a routee whose breaker
 * opened receives nothing until its probe time; round-robin and random
 * pass its share on to the others, broadcast leaves it out; after a
 * successful probe it is used again. When every breaker is open an ask
 * fails at once with a CircuitBreakerOpenError.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define N 3

typedef struct pool {
    atomic_int failing[N + 1]; /* routee k answers with an error */
    atomic_llong seen[N + 1];
} pool;

static pool the_pool; /* outlives each test's system */

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    int k = atoi(ac_self_name(ctx) + strlen("routee-"));
    atomic_fetch_add(&the_pool.seen[k], 1);
    if (atomic_load(&the_pool.failing[k]))
        ac_reply(ctx, ac_msg_error_new(ac_error_new("OutageError", "routee-%d is down", k)));
    else
        ac_reply(ctx, ac_msg_int64_new(k));
}

static const ac_actor_def routee_def = {.name = "Routee", .receive = routee_receive};

static int setup(void **state)
{
    memset(&the_pool, 0, sizeof the_pool);
    return ts_setup(state);
}

static ac_ref *spawn_pool(ts_fixture *fx, ac_props *(*factory)(int, const ac_actor_def *,
                                                                 const ac_routee_options *))
{
    ac_system_options so = {.manual_clock = true, .metrics = true};
    ac_system *sys = ts_fx_system(fx, "rt-breakers", &so);
    assert_non_null(sys);
    ac_breaker_options bo = {.max_failures = 2, .reset_timeout_ms = 1000};
    ac_routee_options ro = {.breaker = &bo};
    ac_props *p = factory(N, &routee_def, &ro);
    assert_non_null(p);
    ac_ref *r = ac_spawn(sys, p, "pool");
    assert_non_null(r);
    return r;
}

/* Ask once; the routee number that answered, 0 for an error (in *err). */
static int ask(ac_ref *router, ac_status *st_out, bool *refused)
{
    ac_answer a;
    ac_status st = ac_ask_wait(router, ac_msg_str_new("q"), 5000, &a);
    int k = a.reply ? (int)ac_msg_int64(a.reply) : 0;
    if (refused)
        *refused = ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR);
    if (st_out)
        *st_out = st;
    ac_answer_release(&a);
    return k;
}

static long long seen(int k) { return atomic_load(&the_pool.seen[k]); }

static void test_round_robin_skips_open_routee(void **state)
{
    ts_fixture *fx = *state;
    ac_ref *router = spawn_pool(fx, ac_router_round_robin);
    atomic_store(&the_pool.failing[2], 1);
    for (int i = 0; i < 6; i++) { /* routee-2 fails twice: open */
        ask(router, NULL, NULL);
    }
    assert_int_equal(seen(2), 2);
    int got[N + 1] = {0};
    for (int i = 0; i < 12; i++) {
        got[ask(router, NULL, NULL)]++;
    }
    assert_int_equal(got[0], 0);  /* no errors, no timeouts */
    assert_int_equal(seen(2), 2); /* left out */
    assert_int_equal(got[1] + got[3], 12);
    char *page = ac_metrics_format(ac_ref_system(router));
    char needle[256];
    snprintf(needle, sizeof needle, "circuit_breaker_state{breaker=\"%s/routee-2\"} 2",
             ac_ref_path(router));
    assert_non_null(strstr(page, needle));
    free(page);

    atomic_store(&the_pool.failing[2], 0);
    assert_status(ac_clock_advance(ac_ref_system(router), 1000), AC_OK);
    for (int i = 0; i < 3; i++) {
        ask(router, NULL, NULL);
    }
    assert_int_equal(seen(2), 3); /* the probe */
    for (int i = 0; i < 6; i++) {
        got[ask(router, NULL, NULL)]++;
    }
    assert_int_equal(seen(2), 5); /* back in the rotation */
    ac_ref_release(router);
}

static void all_open_fails_at_once(ts_fixture *fx, ac_props *(*factory)(int, const ac_actor_def *,
                                                                        const ac_routee_options *))
{
    ac_ref *router = spawn_pool(fx, factory);
    for (int k = 1; k <= N; k++) {
        atomic_store(&the_pool.failing[k], 1);
    }
    for (int i = 0; i < 2 * N; i++) {
        ask(router, NULL, NULL);
    }
    long long before = seen(1) + seen(2) + seen(3);
    ac_status st;
    bool refused;
    ask(router, &st, &refused);
    assert_status(st, AC_EFAILED);
    assert_true(refused);
    assert_int_equal(seen(1) + seen(2) + seen(3), before);
    ac_ref_release(router);
}

static void test_round_robin_all_open(void **state) { all_open_fails_at_once(*state, ac_router_round_robin); }
static void test_random_all_open(void **state) { all_open_fails_at_once(*state, ac_router_random); }

/* Routee k's breaker state as the metrics show it (0 closed, 2 open). */
static double breaker_state(ac_ref *router, int k)
{
    char label[256];
    snprintf(label, sizeof label, "%s/routee-%d", ac_ref_path(router), k);
    const char *values[] = {label};
    ac_metric_value v;
    if (ac_metrics_read(ac_ref_system(router), "circuit_breaker_state", values, 1, &v) != AC_OK)
        return -1;
    return v.value;
}

typedef struct open_wait {
    ac_ref *router;
    int k;
} open_wait;

static bool breaker_is_open(void *arg)
{
    open_wait *w = arg;
    return breaker_state(w->router, w->k) == 2;
}

/* The pool's current routees: a Routees message, the caller's to release. */
static ac_msg *routees_of(ac_ref *router)
{
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), 5000, &a), AC_OK);
    ac_msg *list = ac_msg_retain(a.reply);
    ac_answer_release(&a);
    return list;
}

static void test_broadcast_leaves_open_routee_out(void **state)
{
    ts_fixture *fx = *state;
    ac_ref *router = spawn_pool(fx, ac_router_broadcast);
    atomic_store(&the_pool.failing[1], 1);
    for (int i = 0; i < 2; i++) {
        ask(router, NULL, NULL);
        assert_eventually(ts_wait_eq(&the_pool.seen[3], i + 1, TS_WAIT_S), "a broadcast");
    }
    /* routee-1's two error replies reach its breaker on their own way. */
    open_wait w = {router, 1};
    assert_eventually(ts_wait_until(breaker_is_open, &w, TS_WAIT_S), "routee-1's breaker to open");
    ask(router, NULL, NULL);
    assert_eventually(ts_wait_eq(&the_pool.seen[3], 3, TS_WAIT_S), "a broadcast");
    assert_eventually(ts_wait_eq(&the_pool.seen[2], 3, TS_WAIT_S), "a broadcast");
    /* The router sends to routee-1 first: a copy of the third broadcast,
     * had it been sent, was queued before routee-3's and so before this
     * direct ask, which routee-1 answers after everything queued before. */
    ac_msg *list = routees_of(router);
    ac_answer a;
    ac_ask_wait(ac_routees_at(list, 0), ac_msg_str_new("q"), 5000, &a);
    ac_answer_release(&a);
    ac_msg_release(list);
    assert_int_equal(seen(1), 3); /* two broadcasts and the direct ask */
    ac_ref_release(router);
}

static void test_bad_breaker_options_refused(void **state)
{
    (void)state;
    ac_breaker_options bo = {.random_factor = 2};
    ac_routee_options ro = {.breaker = &bo};
    assert_null(ac_router_round_robin(N, &routee_def, &ro));
    assert_true(ac_last_status() == AC_EINVAL && strstr(ac_last_error(), "random_factor") != NULL);
}

#define UNIT(f) cmocka_unit_test_setup_teardown(f, setup, ts_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        UNIT(test_round_robin_skips_open_routee),
        UNIT(test_round_robin_all_open),
        UNIT(test_random_all_open),
        UNIT(test_broadcast_leaves_open_routee_out),
        UNIT(test_bad_breaker_options_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
