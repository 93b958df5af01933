/*
 * The factory: props that spawn a pool whose routees are the router's
 * children routee-1 … routee-N, spawned at start and watched; option and
 * argument validation in the factory call, before anything is spawned.
 */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>

#include "sg_support.h"

/* The props spawn; routee-1 … routee-3 start before any message, as
 * children of the router, and no routee-4 ever does. */
static void test_props_spawn_routees_as_children_at_start(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-factory", false);

    ac_routee_options ro = {.user_data = d};
    ac_props *p = ac_router_scatter_gather_first_completed(3, &sg_routee_def, NULL, &ro);
    assert_non_null(p);
    ac_ref *router = ac_spawn(d->sys, p, "replicas");
    assert_non_null(router);
    assert_string_equal(ac_ref_path(router), "actorc://sg-factory/user/replicas");

    /* no message sent: the routees start with the router */
    for (int k = 1; k <= 3; k++) {
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "a routee to start");
    }
    /* The router answers GetRoutees only after its pre_start: the pool it
     * spawned there is routee-1..3 and no more. */
    ac_answer ga;
    assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), SG_WAIT_MS, &ga), AC_OK);
    assert_int_equal(ac_routees_count(ga.reply), 3);
    for (int k = 1; k <= 3; k++) {
        assert_ptr_equal(ac_routees_at(ga.reply, (size_t)k - 1), atomic_load(&d->refs[k][0]));
    }
    ac_answer_release(&ga);
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(atomic_load(&d->starts[k]), 1);
        sg_assert_seen_exactly(d, k, 1); /* the barrier alone: nothing came before it */
        ac_ref *r = atomic_load(&d->refs[k][0]);
        char name[32], path[128];
        snprintf(name, sizeof name, "routee-%d", k);
        snprintf(path, sizeof path, "%s/%s", ac_ref_path(router), name);
        assert_string_equal(ac_ref_name(r), name);
        assert_string_equal(ac_ref_path(r), path);
    }
    assert_int_equal(atomic_load(&d->starts[4]), 0);
    assert_int_equal(atomic_load(&d->bad), 0);

    /* children: stopping the router stops them */
    assert_status(ac_stop(router), AC_OK);
    ac_answer a;
    for (int k = 1; k <= 3; k++) {
        /* an ask to a stopped actor fails at once with AC_EDEAD */
        double end = ts_now() + TS_WAIT_S;
        ac_status st;
        while ((st = ac_ask_wait(atomic_load(&d->refs[k][0]), sg_key_new("ping", 0), SG_WAIT_MS,
                                 &a)) != AC_EDEAD &&
               ts_now() < end) {
            ac_answer_release(&a);
            ts_sleep_ms(5);
        }
        assert_status(st, AC_EDEAD);
        ac_answer_release(&a);
    }
    ac_ref_release(router);
}

/* Ask, let the silent routees time out on the manual clock, and return
 * the aggregate's message. */
static char *timed_out_message(sg_data *d, ac_ref *router, int64_t timeout_ms, int i,
                               ac_error **err_out)
{
    long long before1 = atomic_load(&d->seen[1]), before3 = atomic_load(&d->seen[3]);
    char key[32];
    snprintf(key, sizeof key, "probe-%d", i);
    ac_future *f = ac_ask(router, sg_key_new(key, i), 2 * timeout_ms);
    assert_non_null(f);
    /* the router handled it once the live routees have seen it */
    sg_wait_seen(d, 1, before1 + 1);
    sg_wait_seen(d, 3, before3 + 1);
    assert_status(ac_clock_advance(d->sys, timeout_ms), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    assert_status(st, AC_EFAILED);
    char *msg = strdup(ac_error_message(a.error));
    if (err_out != NULL) {
        *err_out = ac_error_retain(a.error);
    }
    ac_answer_release(&a);
    ac_future_release(f);
    return msg;
}

/* Routees are watched: one that stops is pruned from the pool, so the
 * scatter goes to the two left (and nothing goes to dead letters). */
static void test_stopped_routee_is_pruned(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-prune", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_scatter_gather_options o = {.timeout_ms = 100};
    ac_ref *router = sg_spawn_pool(d, 3, &o);
    const char *rp = ac_ref_path(router);

    char none3[256], none2[256];
    snprintf(none3, sizeof none3,
             "Scatter/gather router %s: none of 3 routees replied within 100ms", rp);
    snprintf(none2, sizeof none2,
             "Scatter/gather router %s: none of 2 routees replied within 100ms", rp);
    char *m = timed_out_message(d, router, 100, 0, NULL);
    assert_string_equal(m, none3);
    free(m);

    assert_status(ac_stop(atomic_load(&d->refs[2][0])), AC_OK);
    /* the router learns of it through Terminated; until then a scatter may
     * still go to the stopped routee */
    int i = 1;
    double end = ts_now() + TS_WAIT_S;
    for (;;) {
        m = timed_out_message(d, router, 100, i++, NULL);
        bool pruned = strcmp(m, none2) == 0;
        if (!pruned && ts_now() > end) {
            fail_msg("routee-2 was not pruned: the scatter still says \"%s\"", m);
        }
        free(m);
        if (pruned) {
            break;
        }
    }
    uint64_t dl = ac_dead_letter_count(d->sys);
    ac_error *err = NULL;
    m = timed_out_message(d, router, 100, i++, &err);
    assert_string_equal(m, none2);
    free(m);
    assert_int_equal(ac_error_member_count(err), 2);
    assert_non_null(strstr(ac_error_message(ac_error_member(err, 0)),
                           ac_ref_path(atomic_load(&d->refs[1][0]))));
    assert_non_null(strstr(ac_error_message(ac_error_member(err, 1)),
                           ac_ref_path(atomic_load(&d->refs[3][0]))));
    ac_error_release(err);
    assert_int_equal(ac_dead_letter_count(d->sys), dl);
    sg_assert_routees_ok(d);
    ac_ref_release(router);
}

typedef struct bad_case {
    int size;
    int64_t timeout_ms;
    bool with_options;
    const char *names[2]; /* what the error must mention */
} bad_case;

/* Negative timeout, timeout above INT32_MAX, size below 1: NULL with
 * AC_EINVAL naming the option and its value, and nothing spawned. */
static void test_validation_names_option_and_value(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-validate", false);
    const bad_case cases[] = {
        {3, -5, true, {"timeout_ms", "-5"}},
        {3, -1, true, {"timeout_ms", "-1"}},
        {3, (int64_t)INT32_MAX + 1, true, {"timeout_ms", "2147483648"}},
        {3, INT64_MAX, true, {"timeout_ms", "9223372036854775807"}},
        {3, INT64_MIN, true, {"timeout_ms", "-9223372036854775808"}},
        {0, 250, true, {"size", "0"}},
        {-3, 0, false, {"size", "-3"}},
        {INT_MIN, 0, false, {"size", "-2147483648"}},
    };
    ac_routee_options ro = {.user_data = d};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        ac_scatter_gather_options o = {.timeout_ms = c->timeout_ms};
        ac_clear_error();
        ac_props *p = ac_router_scatter_gather_first_completed(c->size, &sg_routee_def,
                                                               c->with_options ? &o : NULL, &ro);
        if (p != NULL) {
            fail_msg("case %zu (size %d, timeout_ms %lld) was accepted", i, c->size,
                     (long long)c->timeout_ms);
        }
        assert_last_error(AC_EINVAL);
        for (int j = 0; j < 2; j++) {
            if (strstr(ac_last_error(), c->names[j]) == NULL) {
                fail_msg("case %zu: the error \"%s\" does not mention \"%s\"", i, ac_last_error(),
                         c->names[j]);
            }
        }
    }
    /* the edges that are allowed */
    const int64_t good[] = {0, 1, 250, INT32_MAX};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ac_scatter_gather_options o = {.timeout_ms = good[i]};
        ac_props *p = ac_router_scatter_gather_first_completed(1, &sg_routee_def, &o, &ro);
        if (p == NULL) {
            fail_msg("timeout_ms %lld refused: %s", (long long)good[i], ac_last_error());
        }
        ac_props_free(p);
    }
    /* nothing was spawned by any of it: a factory takes no system, and
     * props that are freed unspawned start nothing */
    for (int k = 0; k <= SG_MAX; k++) {
        assert_int_equal(atomic_load(&d->starts[k]), 0);
    }
}

static const ac_actor_def no_receive_def = {.name = "NoReceive"};

/* A NULL routee definition (or one without receive, or a bad routee
 * supervisor) is refused with AC_EINVAL and an explanation. */
static void test_bad_input(void **state)
{
    (void)state;
    ac_scatter_gather_options o = {.timeout_ms = 250};

    ac_clear_error();
    assert_null(ac_router_scatter_gather_first_completed(3, NULL, &o, NULL));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "routee"));

    ac_clear_error();
    assert_null(ac_router_scatter_gather_first_completed(3, NULL, NULL, NULL));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_router_scatter_gather_first_completed(3, &no_receive_def, &o, NULL));
    assert_last_error(AC_EINVAL);

    ac_supervisor_strategy bad = {.directive = (ac_directive)42};
    ac_routee_options ro = {.supervisor = &bad};
    ac_clear_error();
    assert_null(ac_router_scatter_gather_first_completed(3, &sg_routee_def, &o, &ro));
    assert_last_error(AC_EINVAL);

    /* and the defaults are fine without a system around */
    ac_props *p = ac_router_scatter_gather_first_completed(1, &sg_routee_def, NULL, NULL);
    assert_non_null(p);
    ac_props_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_props_spawn_routees_as_children_at_start),
        TS_UNIT(test_stopped_routee_is_pruned),
        TS_UNIT(test_validation_names_option_and_value),
        TS_UNIT(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
