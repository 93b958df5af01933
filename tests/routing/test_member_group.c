/*
 * Member groups (routing/member_group.h), driven by a test driver: the
 * set is kept sorted by the driver's keys whatever order they come in, a
 * key given again replaces its routee, removal closes the gap; routees
 * are not watched (a stopped one stays until the driver removes it);
 * AddRoutee and RemoveRoutee are refused; consistent hashing follows the
 * keys, not the refs or their order; the set starts empty at each start
 * and the driver's hooks run in pairs; with breakers, each routee's
 * breaker moves with it in the sorted set and stays with its key.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

#include "core/internal.h"
#include "routing/member_group.h"

/* ---- the test driver -------------------------------------------------- */

typedef struct change {
    bool add;
    char key[32];
    ac_ref *routee; /* retained; NULL for a removal */
} change;

static void change_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(((change *)payload)->routee);
}

static const ac_msg_type change_type = {.name = "test.MemberChange", .destroy = change_destroy};

typedef struct driver {
    atomic_int starts, stops, frees;
} driver;

static void drv_start(ac_ctx *ctx, void *user)
{
    (void)ctx;
    atomic_fetch_add(&((driver *)user)->starts, 1);
}

static bool drv_receive(ac_ctx *ctx, void *user, ac_msg *msg)
{
    (void)user;
    if (!ac_msg_is(msg, &change_type))
        return false;
    const change *c = ac_msg_data(msg);
    if (c->add)
        (void)ac__member_group_add(ctx, c->routee, c->key);
    else
        (void)ac__member_group_remove(ctx, c->key);
    return true;
}

static void drv_stop(ac_ctx *ctx, void *user)
{
    (void)ctx;
    atomic_fetch_add(&((driver *)user)->stops, 1);
}

static void drv_free(void *user) { atomic_fetch_add(&((driver *)user)->frees, 1); }

/* A driver that outlives the router (the fixture terminates the system
 * after the test returns): static, a fresh one per call. */
static driver *new_driver(void)
{
    static driver drivers[16];
    static int used;
    assert_true(used < 16);
    driver *d = &drivers[used++];
    atomic_init(&d->starts, 0);
    atomic_init(&d->stops, 0);
    atomic_init(&d->frees, 0);
    return d;
}

static const ac__member_group_ops test_ops = {
    .start = drv_start, .receive = drv_receive, .stop = drv_stop, .free = drv_free};

static ac_ref *spawn_guarded(ac_system *sys, driver *d, ac__member_group_strategy s,
                             ac_hash_key_fn key, const ac_breaker_options *breaker,
                             const char *name)
{
    ac__member_group_spec spec = {.fn = "test_member_group", .strategy = s, .key = key,
                                  .breaker = breaker, .ops = &test_ops, .user = d};
    return rt_spawn(sys, ac__member_group_props(&spec), name);
}

static ac_ref *spawn_group(ac_system *sys, driver *d, ac__member_group_strategy s,
                           ac_hash_key_fn key, const char *name)
{
    return spawn_guarded(sys, d, s, key, NULL, name);
}

static void tell_change(ac_ref *router, bool add, const char *key, ac_ref *routee)
{
    ac_msg *m = ac_msg_new(&change_type, sizeof(change));
    change *c = ac_msg_payload(m);
    c->add = add;
    snprintf(c->key, sizeof c->key, "%s", key);
    c->routee = routee ? ac_ref_retain(routee) : NULL;
    assert_status(ac_tell(router, m, NULL), AC_OK);
}

static void expect_routees(ac_ref *router, ac_ref *const *want, size_t n)
{
    ac_ref *got[16];
    long k = rt_routees(router, got, 16);
    assert_int_equal(k, (long)n);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("routee %zu is %s, expected %s", i, ac_ref_path(got[i]),
                     ac_ref_path(want[i]));
        }
    }
}

/* ---- tests ------------------------------------------------------------ */

static void test_sorted_by_key_and_replaced(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "member_sorted", NULL);
    assert_non_null(sys);
    ac_ref *r[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    driver *d = new_driver();
    ac_ref *router = spawn_group(sys, d, AC__MEMBER_ROUND_ROBIN, NULL, "members");
    assert_non_null(router);
    expect_routees(router, NULL, 0); /* it starts empty */

    tell_change(router, true, "127.0.0.1:9003", r[2]);
    tell_change(router, true, "127.0.0.1:9001", r[0]);
    tell_change(router, true, "127.0.0.1:9002", r[1]);
    expect_routees(router, (ac_ref *[]){r[0], r[1], r[2]}, 3);
    tell_change(router, true, "127.0.0.1:9002", r[3]); /* the same key: replaced */
    expect_routees(router, (ac_ref *[]){r[0], r[3], r[2]}, 3);
    tell_change(router, false, "127.0.0.1:9001", NULL);
    tell_change(router, false, "127.0.0.1:9009", NULL); /* none: nothing changes */
    expect_routees(router, (ac_ref *[]){r[3], r[2]}, 2);

    /* Round-robin follows the sorted set. */
    for (int i = 0; i < 4; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_ptr_equal(who, i % 2 ? r[2] : r[3]);
        ac_ref_release(who);
    }
    ac_ref_release(router);
    rt_release_all(r, 4);
}

/* A stopped routee is not pruned: the driver decides; the ask to it
 * fails as to any stopped actor. AddRoutee and RemoveRoutee are refused. */
static void test_not_watched_and_changes_refused(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "member_unwatched", NULL);
    ts_log_capture *logs = ts_fx_log(fx);
    assert_non_null(sys);
    ac_ref *r[2];
    assert_true(rt_spawn_routees(sys, p, 2, r));
    driver *d = new_driver();
    ac_ref *router = spawn_group(sys, d, AC__MEMBER_ROUND_ROBIN, NULL, "members");
    tell_change(router, true, "a", r[0]);
    tell_change(router, true, "b", r[1]);
    expect_routees(router, (ac_ref *[]){r[0], r[1]}, 2);
    ac_stop(r[0]);
    assert_eventually(rt_wait_stopped(p, 1, 1, TS_WAIT_S), "routee-1 stopped");
    expect_routees(router, (ac_ref *[]){r[0], r[1]}, 2);
    ac_answer a;
    assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_EDEAD);
    assert_true(ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR));
    ac_answer_release(&a);

    assert_status(ac_tell(router, ac_router_add_routee_msg(r[1]), NULL), AC_OK);
    assert_status(ac_tell(router, ac_router_remove_routee_msg(r[1]), NULL), AC_OK);
    expect_routees(router, (ac_ref *[]){r[0], r[1]}, 2);
    assert_true(ts_log_wait_text(logs, "its members, one per member", TS_WAIT_S));
    ac_ref_release(router);
    rt_release_all(r, 2);
}

static uint64_t key_of_int(const ac_msg *msg, void *user)
{
    (void)user;
    return (uint64_t)ac_msg_int64(msg);
}

/* Two routers given the same keys in other orders, with other refs under
 * them, map every key to the same key's routee. */
static void test_hashing_follows_the_keys(void **state)
{
    enum { KEYS = 300 };
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "member_hash", NULL);
    assert_non_null(sys);
    ac_ref *r[6];
    assert_true(rt_spawn_routees(sys, p, 6, r));
    driver *d1 = new_driver(), *d2 = new_driver();
    ac_ref *a = spawn_group(sys, d1, AC__MEMBER_CONSISTENT_HASHING, key_of_int, "a");
    ac_ref *b = spawn_group(sys, d2, AC__MEMBER_CONSISTENT_HASHING, key_of_int, "b");
    const char *keys[3] = {"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"};
    for (int i = 0; i < 3; i++) {
        tell_change(a, true, keys[i], r[i]);         /* routee-1..3 */
        tell_change(b, true, keys[2 - i], r[5 - i]); /* routee-6..4, reversed */
    }
    assert_true(rt_tell_ints(a, 0, KEYS));
    assert_true(rt_tell_ints(b, 0, KEYS));
    assert_eventually(rt_wait_total(p, 2 * KEYS, TS_WAIT_S), "every key handled twice");
    /* Under key i, a has routee-(i+1) and b routee-(i+4). */
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(rt_got(p, k), rt_got(p, k + 3));
        for (long long j = 0; j < rt_got(p, k); j++)
            assert_int_equal(rt_val(p, k, j), rt_val(p, k + 3, j));
    }
    ac_ref_release(a);
    ac_ref_release(b);
    rt_release_all(r, 6);
}

static void ignore_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def silent_def = {.name = "Silent", .receive = ignore_receive};

/* A silent routee's breaker opens on its first timeout and from then on
 * round-robin passes it by: the breaker is the silent one's, though the
 * set shifted under both when "b" and then "a" joined before them. A routee put under the
 * same key (the same member, resolved again) keeps that open breaker. */
static void test_breakers_follow_their_routees(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "member_breakers", NULL);
    assert_non_null(sys);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    ac_ref *silent = ts_spawn(sys, &silent_def, NULL, "silent");
    assert_non_null(silent);
    ac_breaker_options bo = {.max_failures = 1, .call_timeout_ms = 100,
                             .reset_timeout_ms = 600000};
    ac_ref *router = spawn_guarded(sys, new_driver(), AC__MEMBER_ROUND_ROBIN, NULL, &bo, "cb");
    assert_non_null(router);
    tell_change(router, true, "c", r[1]);
    tell_change(router, true, "b", silent);
    tell_change(router, true, "a", r[0]);
    expect_routees(router, (ac_ref *[]){r[0], silent, r[1]}, 3);
    int failures = 0;
    for (int i = 0; i < 9; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        failures += who == NULL;
        assert_ptr_not_equal(who, silent);
        ac_ref_release(who);
    }
    assert_int_equal(failures, 1);
    tell_change(router, true, "b", r[2]);
    expect_routees(router, (ac_ref *[]){r[0], r[2], r[1]}, 3);
    for (int i = 0; i < 6; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_ptr_not_equal(who, r[2]);
        ac_ref_release(who);
    }
    ac_ref_release(router);
    ac_ref_release(silent);
    rt_release_all(r, 3);

    ac_breaker_options bad = {.max_failures = -1};
    driver *d = new_driver();
    ac__member_group_spec spec = {.fn = "test_member_group", .strategy = AC__MEMBER_RANDOM,
                                  .breaker = &bad, .ops = &test_ops, .user = d};
    assert_null(ac__member_group_props(&spec));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&d->frees), 1);
}

/* Stopped, the router's set goes with it; the hooks ran once each, and
 * the driver was freed with the router. Empty, it answers as a group with
 * none; a factory that fails frees the driver too. */
static void test_empty_stop_and_free(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "member_stop", NULL);
    assert_non_null(sys);
    driver *d = new_driver();
    ac_ref *router = spawn_group(sys, d, AC__MEMBER_SCATTER_GATHER, NULL, "sg");
    ac_answer a;
    assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_EFAILED);
    assert_string_equal(ac_error_message(a.error),
                        "Scatter/gather router actorc://member_stop/user/sg has no routees left "
                        "to scatter to");
    ac_answer_release(&a);
    assert_int_equal(atomic_load(&d->starts), 1);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->stops), 1);
    assert_int_equal(atomic_load(&d->frees), 1);

    driver *bad = new_driver();
    ac__member_group_spec spec = {.fn = "test_member_group",
                                  .strategy = AC__MEMBER_CONSISTENT_HASHING,
                                  .ops = &test_ops,
                                  .user = bad};
    assert_null(ac__member_group_props(&spec));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), "test_member_group: key is NULL");
    assert_int_equal(atomic_load(&bad->frees), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_sorted_by_key_and_replaced),
        TS_UNIT(test_not_watched_and_changes_refused),
        TS_UNIT(test_hashing_follows_the_keys),
        TS_UNIT(test_empty_stop_and_free),
        TS_UNIT(test_breakers_follow_their_routees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
