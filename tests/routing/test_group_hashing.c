/*
 * Consistent hashing over a group, and the hedged group: the same key
 * reaches the same routee, whatever order the routees were given in;
 * removing a routee moves only its own keys; a hedged group answers with
 * the routee as the sender; bad arguments are refused by name.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

enum { KEYS = 600 };

static uint64_t key_of_int(const ac_msg *msg, void *user)
{
    (void)user;
    return (uint64_t)(ac_msg_int64(msg) % KEYS); /* the same key each round */
}

/* Which routee (1..4) handled each key, from what the routees recorded
 * since they had recorded before[k] values each. */
static void owners(rt_pool *p, const long long *before, int *owner)
{
    for (int v = 0; v < KEYS; v++)
        owner[v] = 0;
    for (int k = 1; k <= 4; k++)
        for (long long j = before[k]; j < rt_got(p, k); j++) {
            int64_t v = rt_val(p, k, j) % KEYS;
            if (owner[v] != 0) {
                fail_msg("key %lld reached routee-%d and routee-%d", (long long)v, owner[v], k);
            }
            owner[v] = k;
        }
}

static void snapshot(rt_pool *p, long long *before)
{
    for (int k = 1; k <= 4; k++)
        before[k] = rt_got(p, k);
}

static void send_keys(rt_pool *p, ac_ref *router, int round, long long *before, int *owner)
{
    snapshot(p, before);
    long long total = rt_total(p);
    assert_true(rt_tell_ints(router, (int64_t)round * KEYS, KEYS));
    assert_eventually(rt_wait_total(p, total + KEYS, TS_WAIT_S), "every key handled");
    owners(p, before, owner);
}

static void test_keys_pinned_and_moved_only_from_the_removed(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_hash", NULL);
    assert_non_null(sys);
    ac_ref *r[4], *reversed[4];
    assert_true(rt_spawn_routees(sys, p, 4, r));
    for (int i = 0; i < 4; i++)
        reversed[i] = r[3 - i];
    ac_ref *a = rt_spawn(sys, ac_router_group_consistent_hashing(r, 4, key_of_int, NULL), "a");
    ac_ref *b =
        rt_spawn(sys, ac_router_group_consistent_hashing(reversed, 4, key_of_int, NULL), "b");
    assert_non_null(a);
    assert_non_null(b);

    long long before[5];
    int first[KEYS], again[KEYS], other_order[KEYS], after[KEYS];
    send_keys(p, a, 0, before, first);
    send_keys(p, a, 1, before, again);
    send_keys(p, b, 2, before, other_order);
    int per[5] = {0};
    for (int v = 0; v < KEYS; v++) {
        assert_int_equal(again[v], first[v]);
        assert_int_equal(other_order[v], first[v]);
        per[first[v]]++;
    }
    for (int k = 1; k <= 4; k++) {
        if (per[k] < KEYS / 8) { /* about 150 each; far below means no spread */
            fail_msg("routee-%d holds %d of %d keys", k, per[k], KEYS);
        }
    }

    ac_tell(a, ac_router_remove_routee_msg(r[1]), NULL);
    ac_ref *left[3] = {r[0], r[2], r[3]};
    assert_eventually(rt_wait_routees(a, left, 3, TS_WAIT_S), "routee-2 removed");
    send_keys(p, a, 3, before, after);
    for (int v = 0; v < KEYS; v++) {
        if (first[v] == 2) {
            assert_int_not_equal(after[v], 2);
        } else if (after[v] != first[v]) {
            fail_msg("key %d moved from routee-%d to routee-%d", v, first[v], after[v]);
        }
    }
    ac_ref_release(a);
    ac_ref_release(b);
    rt_release_all(r, 4);
}

static void test_hashing_with_no_routees_is_a_dead_letter(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "group_hash_empty", NULL);
    assert_non_null(sys);
    ac_ref *router =
        rt_spawn(sys, ac_router_group_consistent_hashing(NULL, 0, key_of_int, NULL), "g");
    assert_non_null(router);
    ac_answer ans;
    assert_status(ac_ask_wait(router, ac_msg_int64_new(7), RT_ASK_MS, &ans), AC_EDEAD);
    assert_string_equal(ac_error_message(ans.error),
                        "Ask to actorc://group_hash_empty/user/g failed: the router has no "
                        "routees left");
    ac_answer_release(&ans);
    ac_ref_release(router);
}

static void test_hedged_group_answers_as_the_routee(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_hedged", NULL);
    assert_non_null(sys);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    ac_hedged_options o = {.timeout_ms = RT_ASK_MS - 500, .delay_us = 200000};
    ac_ref *router = rt_spawn(sys, ac_router_group_hedged(r, 3, &o), "hedged");
    assert_non_null(router);
    for (int i = 0; i < 6; i++) {
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_ptr_equal(who, r[i % 3]); /* round-robin from a moving start */
        ac_ref_release(who);
    }
    ac_ref_release(router);

    ac_ref *none = rt_spawn(sys, ac_router_group_hedged(NULL, 0, NULL), "empty");
    assert_non_null(none);
    ac_answer ans;
    assert_status(ac_ask_wait(none, ac_msg_int64_new(1), RT_ASK_MS, &ans), AC_EFAILED);
    assert_string_equal(ac_error_message(ans.error),
                        "Hedged router actorc://group_hedged/user/empty has no routees left to "
                        "send to");
    ac_answer_release(&ans);
    ac_ref_release(none);
    rt_release_all(r, 3);
}

static void test_bad_arguments_refused(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_hash_bad", NULL);
    assert_non_null(sys);
    ac_ref *r[2];
    assert_true(rt_spawn_routees(sys, p, 2, r));
    assert_null(ac_router_group_consistent_hashing(r, 2, NULL, NULL));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), "ac_router_group_consistent_hashing: key_fn is NULL");
    ac_ref *twice[2] = {r[0], r[0]};
    assert_null(ac_router_group_consistent_hashing(twice, 2, key_of_int, NULL));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(),
                        "ac_router_group_consistent_hashing: routees[0] and routees[1] are the "
                        "same ref (actorc://group_hash_bad/user/routee-1)");
    ac_hedged_options o = {.max_attempts = 3};
    assert_null(ac_router_group_hedged(r, 2, &o));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(),
                        "ac_router_group_hedged: max_attempts = 3 is not usable for a pool of 2 "
                        "routees; use 1..2, or 0 for every routee");
    ac_hedged_options neg = {.delay_us = -1};
    assert_null(ac_router_group_hedged(r, 2, &neg));
    assert_last_error(AC_EINVAL);
    rt_release_all(r, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_keys_pinned_and_moved_only_from_the_removed),
        TS_UNIT(test_hashing_with_no_routees_is_a_dead_letter),
        TS_UNIT(test_hedged_group_answers_as_the_routee),
        TS_UNIT(test_bad_arguments_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
