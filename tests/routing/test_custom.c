/*
 * Custom strategies: the function sees the live routees in pool order,
 * their count, the message index 0, 1, 2, ..., the message and its user
 * data; returning 0 drops the message silently, 1 sends it to one routee,
 * several to each of them.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

#define CS_MAX_CALLS 512

typedef struct cs_call {
    uint64_t index;
    size_t n;
    int64_t value;           /* the int, or -1 for anything else */
    int numbers[RT_MAX];     /* routee numbers, in the order given */
    void *user;
} cs_call;

typedef struct cs_data {
    rt_pool pool; /* its mutex guards the fields below too */
    int calls;
    cs_call call[CS_MAX_CALLS];
} cs_data;

static void cs_free(void *arg)
{
    rt_pool_fini(&((cs_data *)arg)->pool);
}

/* Ints: v % 3 == 0 drops, 1 goes to routees[v % n], 2 goes to all. Other
 * messages (pings) rotate by index. */
static size_t cs_strategy(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                          void *user, ac_ref **out)
{
    cs_data *d = user;
    int64_t v = ac_msg_is(msg, &ac_msg_type_int64) ? ac_msg_int64(msg) : -1;
    pthread_mutex_lock(&d->pool.mu);
    if (d->calls < CS_MAX_CALLS) {
        cs_call *c = &d->call[d->calls];
        c->index = index;
        c->n = n;
        c->value = v;
        c->user = user;
        for (size_t i = 0; i < n && i < RT_MAX; i++) {
            c->numbers[i] = rt_routee_number(ac_ref_name(routees[i]));
        }
    }
    d->calls++;
    pthread_mutex_unlock(&d->pool.mu);

    if (n == 0) {
        return 0;
    }
    if (v < 0) {
        out[0] = routees[index % n];
        return 1;
    }
    switch (v % 3) {
    case 0:
        return 0;
    case 1:
        out[0] = routees[(size_t)v % n];
        return 1;
    default:
        for (size_t i = 0; i < n; i++) {
            out[i] = routees[i];
        }
        return n;
    }
}

static int cs_calls(cs_data *d)
{
    pthread_mutex_lock(&d->pool.mu);
    int n = d->calls;
    pthread_mutex_unlock(&d->pool.mu);
    return n;
}

static cs_call cs_get(cs_data *d, int i)
{
    pthread_mutex_lock(&d->pool.mu);
    cs_call c = d->call[i];
    pthread_mutex_unlock(&d->pool.mu);
    return c;
}

/* The values routee-k recorded, from position `from`, equal want[0..n). */
static void assert_vals(rt_pool *p, int k, long long from, const int64_t *want, int n)
{
    if (rt_got(p, k) != from + n) {
        fail_msg("routee-%d recorded %lld values, expected %lld", k, rt_got(p, k), from + n);
    }
    for (int j = 0; j < n; j++) {
        if (rt_val(p, k, from + j) != want[j]) {
            fail_msg("routee-%d's value %lld is %lld, expected %lld", k, from + j,
                     (long long)rt_val(p, k, from + j), (long long)want[j]);
        }
    }
}

static void test_custom_strategy(void **state)
{
    ts_fixture *fx = *state;
    cs_data *d = ts_fx_data(fx, sizeof *d, cs_free);
    rt_pool_init(&d->pool);
    rt_pool *p = &d->pool;
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system *sys = ts_fx_system(fx, "custom", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_ref *router =
        rt_spawn(sys, ac_router_custom(4, &rt_routee_def, cs_strategy, d, &ro), "pool");
    assert_non_null(router);
    char path[256];
    snprintf(path, sizeof path, "%s", ac_ref_path(router));

    /* 0..29: ten dropped, ten to one routee, ten to all four. The last
     * goes to every routee, so its arrival is a barrier. */
    assert_true(rt_tell_ints(router, 0, 30));
    assert_eventually(rt_wait_total(p, 10 + 40, TS_WAIT_S), "50 deliveries handled");

    assert_int_equal(cs_calls(d), 30);
    for (int i = 0; i < 30; i++) {
        cs_call c = cs_get(d, i);
        assert_int_equal(c.index, i);
        assert_int_equal(c.n, 4);
        assert_int_equal(c.value, i);
        assert_ptr_equal(c.user, d);
        for (int j = 0; j < 4; j++) {
            assert_int_equal(c.numbers[j], j + 1);
        }
    }
    for (int k = 1; k <= 4; k++) {
        int64_t want[30];
        int n = 0;
        for (int v = 0; v < 30; v++) {
            if (v % 3 == 2 || (v % 3 == 1 && v % 4 == k - 1)) {
                want[n++] = v;
            }
        }
        assert_vals(p, k, 0, want, n);
    }
    assert_int_equal(rt_total(p), 50);
    /* Dropped silently: no dead letter, no warning or error. */
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_int_equal(rt_log_count_at(cap, AC_LOG_WARN, path), 0);
    assert_int_equal(rt_log_count_at(cap, AC_LOG_ERROR, path), 0);

    /* Stop routee-3: the strategy then sees routee-1, -2, -4. Pings rotate
     * by index, so the probe loop proves the pruning. */
    ac_ref *third = NULL;
    for (int i = 0; i < 8 && third == NULL; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        if (rt_routee_number(ac_ref_name(who)) == 3) {
            third = who;
        } else {
            ac_ref_release(who);
        }
    }
    assert_non_null(third);
    assert_status(ac_stop(third), AC_OK);
    assert_eventually(rt_wait_stopped(p, 3, 1, TS_WAIT_S), "routee-3 stopped");
    assert_true(rt_ask_until_run(router, 4, 200) > 0);

    long long before[5];
    for (int k = 1; k <= 4; k++) {
        before[k] = rt_got(p, k);
    }
    int calls = cs_calls(d);
    assert_true(rt_tell_ints(router, 2, 1));   /* to all */
    assert_true(rt_tell_ints(router, 1, 1));   /* to routees[1 % 3]: routee-2 */
    assert_true(rt_tell_ints(router, 5, 1));   /* to all: the barrier */
    assert_eventually(rt_wait_total(p, 50 + 3 + 1 + 3, TS_WAIT_S), "the last 7 handled");
    assert_int_equal(cs_calls(d), calls + 3);
    for (int i = calls; i < calls + 3; i++) {
        cs_call c = cs_get(d, i);
        assert_int_equal(c.n, 3);
        assert_int_equal(c.numbers[0], 1);
        assert_int_equal(c.numbers[1], 2);
        assert_int_equal(c.numbers[2], 4);
    }
    /* The index counts every message the strategy was given: 0, 1, 2, ...
     * with no gap, pings and failed asks included. */
    for (int i = 0; i < calls + 3; i++) {
        assert_int_equal(cs_get(d, i).index, i);
    }
    const int64_t all_then_5[] = {2, 5};
    const int64_t two_one_5[] = {2, 1, 5};
    assert_vals(p, 1, before[1], all_then_5, 2);
    assert_vals(p, 2, before[2], two_one_5, 3);
    assert_vals(p, 4, before[4], all_then_5, 2);
    assert_int_equal(rt_got(p, 3), before[3]);
    assert_int_equal(rt_bad(p, NULL, 0), 0);

    ac_ref_release(third);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_custom_strategy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
