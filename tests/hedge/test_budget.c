/*
 * The hedge budget: extra requests capped at a share of primary ones.
 * The hedged router stops hedging when the bucket is empty and starts
 * again as primaries refill it; scatter/gather asks fewer routees, never
 * fewer than its quorum (so never none), and spreads the fewer over the
 * pool. Each shortfall counts in router_hedge_budget_exhausted_total.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

static long long ask_and_count(hg_data *d, const char *key, int64_t advance_ms)
{
    long long before = hg_seen_total(d);
    ac_future *f = hg_ask(d, key, 0);
    if (advance_ms)
        hg_advance(d, advance_ms);
    ac_answer a;
    ac_status st = hg_wait(f, &a);
    if (st != AC_OK)
        fail_msg("%s: %s", key, ac_error_message(a.error));
    ac_answer_release(&a);
    ac_future_release(f);
    hg_quiesce(d);
    return hg_seen_total(d) - before;
}

/* A quarter of a hedge per message, a bucket of one: the first message
 * is hedged, the next three are not (the budget is spent), the fifth is
 * again, and so on. */
static void test_hedged_budget_exhausts_and_refills(void **state)
{
    hg_data *d = hg_setup(*state, "hg-budget", true, 0);
    hg_set(d, 1, 30, false);
    hg_set(d, 2, 30, false);
    ac_hedge_budget b = {.ratio = 0.25, .max_tokens = 1};
    ac_hedged_options o = {.timeout_ms = 1000, .delay_us = 10000, .budget = &b};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, &o, &ro), 2);
    static const long long expected[] = {2, 1, 1, 1, 2, 1, 1, 1, 2};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char key[16];
        snprintf(key, sizeof key, "m%zu", i);
        long long calls = ask_and_count(d, key, 70);
        if (calls != expected[i])
            fail_msg("message %zu: %lld calls, expected %lld", i, calls, expected[i]);
    }
    const char *hedged[] = {"hedged"};
    assert_int_equal(hg_counter(d, "router_hedges_sent_total", NULL, 0), 3);
    assert_int_equal(hg_counter(d, "router_hedge_budget_exhausted_total", hedged, 1), 6);
    ac_ref_release(router);
}

/* Half an extra routee per message, a bucket of two, three routees: 3
 * asked (the full bucket), then 1, 2, 1, 2 … as the bucket refills. */
static void test_scatter_budget_degrades_to_fewer_routees(void **state)
{
    hg_data *d = hg_setup(*state, "hg-sgbudget", false, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    ac_hedge_budget b = {.ratio = 0.5, .max_tokens = 2};
    ac_scatter_gather_options o = {.timeout_ms = 5000, .budget = &b};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(
        d, ac_router_scatter_gather_first_completed(3, &hg_routee_def, &o, &ro), 3);
    static const long long expected[] = {3, 1, 2, 1, 2, 1, 2};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        long long before = hg_seen_total(d);
        ac_future *f = hg_ask(d, "k", 0);
        ac_answer a;
        assert_status(hg_wait(f, &a), AC_OK);
        ac_answer_release(&a);
        ac_future_release(f);
        hg_barrier(d, 3);
        if (hg_seen_total(d) - before != expected[i])
            fail_msg("message %zu: %lld routees asked, expected %lld", i,
                     hg_seen_total(d) - before, expected[i]);
    }
    const char *sg[] = {"scatter-gather"};
    assert_int_equal(hg_counter(d, "router_hedge_budget_exhausted_total", sg, 1), 6);
    ac_ref_release(router);
}

static void ask_ok(hg_data *d, int size)
{
    ac_future *f = hg_ask(d, "k", 0);
    ac_answer a;
    assert_status(hg_wait(f, &a), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
    hg_barrier(d, size);
}

/* No budget for extras at all: one routee per message once the bucket's
 * one token is spent, never none, each routee in turn. */
static void test_scatter_never_asks_none(void **state)
{
    hg_data *d = hg_setup(*state, "hg-sgnone", false, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    ac_hedge_budget none = {.ratio = 0, .max_tokens = 1};
    ac_scatter_gather_options o = {.budget = &none};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(
        d, ac_router_scatter_gather_first_completed(3, &hg_routee_def, &o, &ro), 3);
    ask_ok(d, 3);
    assert_int_equal(hg_seen_total(d), 2); /* one extra: the token */
    for (int i = 1; i <= 6; i++)
        ask_ok(d, 3);
    assert_int_equal(hg_seen_total(d), 8);
    for (int k = 1; k <= 3; k++)
        assert_true(atomic_load(&d->seen[k]) >= 2); /* spread over the pool */
    ac_ref_release(router);
}

/* With a quorum of 2 and no budget: exactly two routees per message. */
static void test_scatter_never_asks_fewer_than_its_quorum(void **state)
{
    hg_data *d = hg_setup(*state, "hg-sgquorum", false, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    ac_hedge_budget none = {.ratio = 0, .max_tokens = 1};
    ac_scatter_gather_options o = {.budget = &none, .quorum = 2};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(
        d, ac_router_scatter_gather_first_completed(3, &hg_routee_def, &o, &ro), 3);
    ask_ok(d, 3); /* 3: the token */
    for (int i = 1; i <= 3; i++)
        ask_ok(d, 3);
    assert_int_equal(hg_seen_total(d), 3 + 3 * 2);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_hedged_budget_exhausts_and_refills),
        TS_UNIT(test_scatter_budget_degrades_to_fewer_routees),
        TS_UNIT(test_scatter_never_asks_none),
        TS_UNIT(test_scatter_never_asks_fewer_than_its_quorum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
