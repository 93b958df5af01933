/*
 * Stopping and restarting a hedged router, as scatter/gather does: every
 * open request fails at once with "stopped" (not at its deadline), hedges
 * not yet sent never go out, and after a restart the router works again
 * with its new routees.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

enum { OPEN = 200 };

static void test_stop_fails_every_open_request(void **state)
{
    hg_data *d = hg_setup(*state, "hg-stop", false, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, HG_SILENT, false);
    ac_hedged_options o = {.timeout_ms = 60000, .delay_us = 30000000};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(3, &hg_routee_def, &o, &ro), 3);
    ac_future *f[OPEN];
    for (int i = 0; i < OPEN; i++)
        f[i] = hg_ask(d, "k", 120000);
    hg_quiesce(d); /* every primary is out */
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s stopped while the request was still open",
             ac_ref_path(router));
    assert_status(ac_stop(router), AC_OK);
    for (int i = 0; i < OPEN; i++) {
        ac_answer a;
        ac_status st = hg_wait(f[i], &a);
        hg_assert_aggregate(st, &a, want, 0);
        assert_ptr_equal(a.sender, router);
        ac_answer_release(&a);
        ac_future_release(f[i]);
    }
    /* no hedge went out, and none will: their timers are gone with the
     * asks' (the silent routees' slots wait out their deadline, as
     * scatter/gather's do) */
    assert_int_equal(ac_timers_armed(d->sys), OPEN);
    assert_int_equal(hg_counter(d, "router_hedges_sent_total", NULL, 0), 0);
    const char *stopped[] = {"stopped"};
    assert_int_equal(hg_counter(d, "router_hedged_resolved_total", stopped, 1), OPEN);
    ac_ref_release(router);
}

/* The parent of a hedged router whose routees escalate their failures. */
static void parent_pre_start(ac_ctx *ctx)
{
    hg_data *d = ac_ctx_user_data(ctx);
    static const ac_supervisor_strategy escalate = {.directive = AC_ESCALATE};
    ac_routee_options ro = {.user_data = d, .supervisor = &escalate};
    ac_hedged_options o = {.timeout_ms = 60000, .delay_us = 1000000};
    ac_props *p = ac_router_hedged(3, &hg_routee_def, &o, &ro);
    d->router = p ? ac_spawn_child(ctx, p, "replicas") : NULL;
    if (!d->router)
        atomic_fetch_add(&d->bad, 1);
}

static void parent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def parent_def = {
    .name = "Parent", .pre_start = parent_pre_start, .receive = parent_receive};

/* routee-1 fails and escalates: the router fails, its parent restarts it,
 * its open requests are answered "stopped" at once (the manual clock
 * stands still, so no deadline or hedge has come), and the restarted
 * router answers from its new routees. */
static void test_restart_fails_open_requests_and_works_again(void **state)
{
    hg_data *d = hg_setup(*state, "hg-restart", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, HG_SILENT, false);
    ac_ref *parent = ts_spawn(d->sys, &parent_def, d, "parent");
    assert_non_null(parent);
    for (int k = 1; k <= 3; k++)
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "the first routees");
    assert_non_null(d->router);
    ac_ref *old1 = atomic_load(&d->self[1]);
    enum { N = 10 };
    ac_future *f[N];
    for (int i = 0; i < N; i++)
        f[i] = hg_ask(d, "k", 120000);
    hg_quiesce(d);
    assert_status(ac_tell(old1, ac_msg_str_new(HG_BOOM), NULL), AC_OK);
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s stopped while the request was still open",
             ac_ref_path(d->router));
    for (int i = 0; i < N; i++) {
        ac_answer a;
        hg_assert_aggregate(hg_wait(f[i], &a), &a, want, 0);
        ac_answer_release(&a);
        ac_future_release(f[i]);
    }
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    for (int k = 1; k <= 3; k++)
        assert_eventually(ts_wait_ge(&d->starts[k], 2, TS_WAIT_S), "the new routees");
    assert_true(atomic_load(&d->self[1]) != old1);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 0, false);
    for (int round = 0; round < 3; round++) {
        ac_future *g = hg_ask(d, "again", 0);
        ac_answer a;
        ac_status st = hg_wait(g, &a);
        assert_status(st, AC_OK);
        bool from_new = false;
        for (int k = 1; k <= 3; k++)
            from_new = from_new || a.sender == atomic_load(&d->self[k]);
        assert_true(from_new);
        ac_answer_release(&a);
        ac_future_release(g);
    }
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(parent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_stop_fails_every_open_request),
        TS_UNIT(test_restart_fails_open_requests_and_works_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
