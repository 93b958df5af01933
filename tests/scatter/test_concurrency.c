/*
 * Concurrency: the router's handler fires the asks and returns, so
 * scatters overlap freely — 10,000 of them over routees that each take
 * 50 ms finish in a small part of the 500 s they would take one after
 * another (well under a second on an idle machine; how fast is for
 * bench/), and a scatter nobody answers holds up no other caller.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

#define SCATTERS 10000
/* A small part of the 500 s the scatters would take one after another:
 * proof that they overlap, with room for a loaded machine and sanitizers
 * (each ask times out then too). */
#define OVERLAP_BOUND_S 20.0

/* 10,000 concurrent scatters, each routee taking 50 ms (a schedule to
 * itself, not a blocked worker): one after another that would be 500 s. */
static void test_ten_thousand_concurrent_scatters(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-many", false);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_LATER, 50);
    }
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_future **f = calloc(SCATTERS, sizeof *f);
    assert_non_null(f);

    double t0 = ts_now();
    for (int i = 0; i < SCATTERS; i++) {
        char key[32];
        snprintf(key, sizeof key, "%d", i);
        f[i] = ac_ask(router, sg_key_new(key, i), (int64_t)(OVERLAP_BOUND_S * 1000));
        assert_non_null(f[i]);
    }
    double sent = ts_now() - t0;
    double deadline = t0 + OVERLAP_BOUND_S;
    for (int i = 0; i < SCATTERS; i++) {
        ac_answer a;
        int64_t left_ms = (int64_t)((deadline - ts_now()) * 1000);
        ac_status st = ac_future_wait(f[i], left_ms > 0 ? left_ms : 0, &a);
        if (st == AC_EPENDING) {
            fail_msg("scatter %d of %d still open after %.1f s", i, SCATTERS, ts_now() - t0);
        }
        int k = sg_routee_index(a.sender);
        if (st != AC_OK || k < 1 || k > 3 || sg_key_n(a.reply) != (int64_t)i * 16 + k) {
            char *e = ac_error_to_string(a.error);
            fail_msg("scatter %d: %s, reply %lld from %s %s", i, ac_status_name(st),
                     (long long)sg_key_n(a.reply), a.sender ? ac_ref_path(a.sender) : "nobody",
                     e ? e : "");
        }
        char key[32];
        snprintf(key, sizeof key, "%d", i);
        sg_assert_reply_from(d, st, &a, k, 0, key);
        ac_answer_release(&a);
    }
    double elapsed = ts_now() - t0;
    print_message("%d scatters over 3 routees taking 50 ms each: all sent in %.1f ms, "
                  "all answered in %.1f ms\n",
                  SCATTERS, sent * 1000, elapsed * 1000);
    if (elapsed >= OVERLAP_BOUND_S) {
        fail_msg("%d concurrent scatters took %.3f s", SCATTERS, elapsed);
    }
    for (int i = 0; i < SCATTERS; i++) {
        ac_future_release(f[i]);
    }
    free(f);

    /* the losers ran to completion (not cancelled), silently */
    for (int k = 1; k <= 3; k++) {
        assert_eventually(ts_wait_ge(&d->replies[k], SCATTERS, TS_WAIT_S),
                          "every routee to answer every scatter");
        sg_wait_seen(d, k, SCATTERS); /* counted just after the reply */
        assert_int_equal(atomic_load(&d->seen[k]), SCATTERS);
    }
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    sg_assert_routees_ok(d);
    ac_ref_release(router);
}

/* routee-1 never replies to anything, and one scatter is answered by
 * nobody (the clock stands still, so it stays open): neither holds up the
 * 200 callers that come after. */
static void test_stalled_scatter_holds_up_nobody(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-stall", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_ECHO, 0);
    sg_set(d, 3, SG_ECHO, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);

    ac_future *stalled = ac_ask(router, sg_key_new(SG_STALL, 0), 0);
    assert_non_null(stalled);
    sg_wait_seen_all(d, 3, 1);

    enum { OTHERS = 200 };
    ac_future *f[OTHERS];
    double t0 = ts_now();
    for (int i = 0; i < OTHERS; i++) {
        char key[32];
        snprintf(key, sizeof key, "%d", i);
        f[i] = ac_ask(router, sg_key_new(key, i), 0);
        assert_non_null(f[i]);
    }
    for (int i = 0; i < OTHERS; i++) {
        ac_answer a;
        ac_status st = sg_wait_future(f[i], &a);
        int k = sg_routee_index(a.sender);
        if (k != 2 && k != 3) {
            fail_msg("caller %d: %s from %s", i, ac_status_name(st),
                     a.sender ? ac_ref_path(a.sender) : "nobody");
        }
        char key[32];
        snprintf(key, sizeof key, "%d", i);
        sg_assert_reply_from(d, st, &a, k, 0, key);
        ac_answer_release(&a);
        ac_future_release(f[i]);
    }
    double elapsed = ts_now() - t0;
    print_message("%d callers answered in %.1f ms behind an open scatter\n", OTHERS,
                  elapsed * 1000);
    if (elapsed >= 2.0) {
        fail_msg("%d callers took %.3f s", OTHERS, elapsed);
    }
    sg_assert_pending(stalled, "the stalled scatter");
    assert_int_equal(atomic_load(&d->replies[1]), 0);
    ac_future_release(stalled);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_ten_thousand_concurrent_scatters),
        TS_UNIT(test_stalled_scatter_holds_up_nobody),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
