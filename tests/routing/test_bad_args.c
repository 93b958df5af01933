/*
 * Bad arguments fail at the factory, before anything is spawned: NULL with
 * AC_EINVAL and a last error naming the argument. ac_spawn of the NULL
 * props then reports its own failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

static void noop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def good_def = {.name = "Good", .receive = noop_receive};
static const ac_actor_def no_receive_def = {.name = "NoReceive"};

static size_t first_only(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                         void *user, ac_ref **out)
{
    (void)index;
    (void)msg;
    (void)user;
    if (n == 0) {
        return 0;
    }
    out[0] = routees[0];
    return 1;
}

typedef enum kind { RR, RANDOM, BROADCAST, SMALLEST, CUSTOM, NKINDS } kind;

static const char *const kind_fn[NKINDS] = {
    "ac_router_round_robin", "ac_router_random", "ac_router_broadcast",
    "ac_router_smallest_mailbox", "ac_router_custom",
};

static ac_props *make(kind k, int n, const ac_actor_def *def, const ac_routee_options *ro)
{
    switch (k) {
    case RR:
        return ac_router_round_robin(n, def, ro);
    case RANDOM:
        return ac_router_random(n, def, ro);
    case BROADCAST:
        return ac_router_broadcast(n, def, ro);
    case SMALLEST:
        return ac_router_smallest_mailbox(n, def, ro);
    case CUSTOM:
    default:
        return ac_router_custom(n, def, first_only, NULL, ro);
    }
}

/* The factory returned NULL with AC_EINVAL and a message that contains
 * every one of `needles` (NULL-terminated). */
static void expect_einval(ac_props *props, const char *what, const char *const *needles)
{
    if (props != NULL) {
        ac_props_free(props);
        fail_msg("%s: the factory accepted it", what);
    }
    if (ac_last_status() != AC_EINVAL) {
        fail_msg("%s: status %s, expected AC_EINVAL (\"%s\")", what,
                 ac_status_name(ac_last_status()), ac_last_error());
    }
    for (const char *const *n = needles; *n != NULL; n++) {
        if (strstr(ac_last_error(), *n) == NULL) {
            fail_msg("%s: last error \"%s\" does not mention \"%s\"", what, ac_last_error(), *n);
        }
    }
}

static void test_factories_reject(void **state)
{
    (void)state;
    ac_supervisor_strategy bad_high = {.directive = (ac_directive)7};
    ac_supervisor_strategy bad_low = {.directive = (ac_directive)-1};
    ac_routee_options ro_high = {.supervisor = &bad_high};
    ac_routee_options ro_low = {.supervisor = &bad_low};
    for (kind k = RR; k < NKINDS; k++) {
        char what[96];
        const char *fn = kind_fn[k];

        snprintf(what, sizeof what, "%s(0, ...)", fn);
        ac_clear_error();
        const char *size0[] = {fn, "0", NULL};
        expect_einval(make(k, 0, &good_def, NULL), what, size0);

        snprintf(what, sizeof what, "%s(-3, ...)", fn);
        ac_clear_error();
        const char *size_neg[] = {fn, "-3", NULL};
        expect_einval(make(k, -3, &good_def, NULL), what, size_neg);

        snprintf(what, sizeof what, "%s(2, NULL, ...)", fn);
        ac_clear_error();
        const char *null_def[] = {fn, "definition", NULL};
        expect_einval(make(k, 2, NULL, NULL), what, null_def);

        snprintf(what, sizeof what, "%s(2, def without receive, ...)", fn);
        ac_clear_error();
        const char *no_recv[] = {fn, "receive", NULL};
        expect_einval(make(k, 2, &no_receive_def, NULL), what, no_recv);

        snprintf(what, sizeof what, "%s with supervisor directive 7", fn);
        ac_clear_error();
        const char *directive[] = {fn, "directive", NULL};
        expect_einval(make(k, 2, &good_def, &ro_high), what, directive);

        snprintf(what, sizeof what, "%s with supervisor directive -1", fn);
        ac_clear_error();
        expect_einval(make(k, 2, &good_def, &ro_low), what, directive);

        /* And good arguments give props (freed unspawned). */
        ac_clear_error();
        ac_props *ok = make(k, 2, &good_def, NULL);
        assert_non_null(ok);
        ac_props_free(ok);
    }

    ac_clear_error();
    const char *strategy[] = {"ac_router_custom", "strategy", NULL};
    expect_einval(ac_router_custom(2, &good_def, NULL, NULL, NULL), "custom without strategy",
                  strategy);
}

/* A failed factory says why right away; ac_spawn of its NULL then reports
 * its own failure (props is NULL, AC_EINVAL), not an earlier call's, and
 * no actor was spawned: the name is still free. */
static void expect_spawn_of_null(ac_system *sys, ac_props *props, const char *reason)
{
    assert_null(props);
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), reason));
    assert_null(ac_spawn(sys, props, "x"));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "ac_spawn: props is NULL"));
}

static void test_spawn_of_failed_factory(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "badargs", NULL);
    assert_non_null(sys);

    expect_spawn_of_null(sys, ac_router_round_robin(2, NULL, NULL), "definition");
    expect_spawn_of_null(sys, ac_router_custom(3, &good_def, NULL, NULL, NULL), "strategy");
    ac_supervisor_strategy bad = {.directive = (ac_directive)42};
    ac_routee_options ro = {.supervisor = &bad};
    expect_spawn_of_null(sys, ac_router_random(3, &good_def, &ro), "directive");

    /* Nothing was spawned: "x" is free, and a good pool spawns there. */
    ac_ref *r = ac_spawn(sys, ac_router_round_robin(2, &good_def, NULL), "x");
    assert_non_null(r);
    assert_string_equal(ac_ref_path(r), "actorc://badargs/user/x");
    ac_ref_release(r);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A pool of one works, and the routee user data may be absent. */
static void test_pool_of_one(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "one", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = p};
    ac_ref *r = rt_spawn(sys, ac_router_smallest_mailbox(1, &rt_routee_def, &ro), "solo");
    assert_non_null(r);
    assert_true(rt_tell_ints(r, 0, 10));
    assert_eventually(rt_wait_total(p, 10, TS_WAIT_S), "10 handled");
    assert_int_equal(rt_got(p, 1), 10);
    ac_ref_release(r);

    ac_ref *q = rt_spawn(sys, ac_router_round_robin(1, &good_def, NULL), "plain");
    assert_non_null(q);
    assert_true(rt_tell_ints(q, 0, 10));
    ac_ref_release(q);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_factories_reject),
        TS_UNIT(test_spawn_of_failed_factory),
        TS_UNIT(test_pool_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
