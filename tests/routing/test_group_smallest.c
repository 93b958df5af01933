/*
 * Smallest-mailbox over a group, where a routee's depth may be unknown.
 * Plain actors (which do not count their queues) read as 0 while idle and
 * as unknown while busy; a pool routee, which counts, reads its depth.
 * The router prefers a known depth, and with none known takes the busy
 * routees in turn. White-box: the test reads the depths the strategy
 * reads (ac__mailbox_len), to wait until a routee is idle before routing.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

#include "core/internal.h"

#define GATES 4

/* Routees that block on a gate when told to, and count the ints they get. */
typedef struct gated {
    ts_gate gates[GATES];
    atomic_llong got[RT_MAX + 1];
    atomic_llong total;
    atomic_llong bad;
} gated;

static const ac_msg_type block_type = {.name = "test.Block"};

static ac_msg *block_msg(int gate)
{
    ac_msg *m = ac_msg_new(&block_type, sizeof gate);
    assert_non_null(m);
    memcpy(ac_msg_payload(m), &gate, sizeof gate);
    return m;
}

static void gated_receive(ac_ctx *ctx, ac_msg *msg)
{
    gated *g = ac_ctx_user_data(ctx);
    int k = rt_routee_number(ac_self_name(ctx));
    if (ac_msg_is(msg, &block_type)) {
        int gate;
        memcpy(&gate, ac_msg_data(msg), sizeof gate);
        if (!ts_gate_wait(&g->gates[gate], TS_WAIT_S)) {
            atomic_fetch_add(&g->bad, 1);
        }
    } else if (ac_msg_is(msg, &ac_msg_type_int64)) {
        atomic_fetch_add(&g->got[k], 1);
        atomic_fetch_add(&g->total, 1);
    } else {
        ac_reply(ctx, ac_msg_str_new(ac_self_path(ctx)));
    }
}

static const ac_actor_def gated_def = {.name = "Gated", .receive = gated_receive};

/* Enough workers for every blocked routee, the router and the others. */
static ac_system *gated_system(ts_fixture *fx, const char *name)
{
    ac_system_options o = {.workers = 6};
    ac_system *sys = ts_fx_system(fx, name, &o);
    assert_non_null(sys);
    return sys;
}

static gated *setup(ts_fixture *fx)
{
    gated *g = ts_fx_data(fx, sizeof *g, NULL);
    for (int i = 0; i < GATES; i++) {
        ts_gate_init(&g->gates[i]);
    }
    return g;
}

static void spawn_gated(ac_system *sys, gated *g, int n, ac_ref **out)
{
    for (int k = 1; k <= n; k++) {
        char name[32];
        snprintf(name, sizeof name, "routee-%d", k);
        out[k - 1] = ts_spawn(sys, &gated_def, g, name);
        assert_non_null(out[k - 1]);
    }
}

/* Block `r` on gate `gate`: it is busy until the gate opens. */
static void block(gated *g, ac_ref *r, int gate, int waiters)
{
    assert_status(ac_tell(r, block_msg(gate), NULL), AC_OK);
    double end = ts_now() + TS_WAIT_S;
    while (atomic_load(&g->gates[gate].waiting) < waiters) {
        if (ts_now() > end) {
            fail_msg("%s did not block", ac_ref_path(r));
        }
        ts_sleep_ms(1);
    }
}

static void wait_depth(ac_ref *r, int depth)
{
    double end = ts_now() + TS_WAIT_S;
    while (ac__mailbox_len(r) != depth) {
        if (ts_now() > end) {
            fail_msg("%s reads depth %d, expected %d", ac_ref_path(r), ac__mailbox_len(r), depth);
        }
        ts_sleep_ms(1);
    }
}

/* The router has started (GetRoutees is answered in its turn, after
 * pre_start) and every routee has handled the watch it sent, so nothing
 * is queued anywhere. Then a routee told to block from this thread is
 * woken by the scheduler for that message alone, never queued behind one
 * that has blocked already: a worker stuck in a long turn holds what it
 * had queued until that turn ends. */
static void quiesce(ac_ref *router, ac_ref **r, int n)
{
    ac_ref *listed[8];
    assert_int_equal(rt_routees(router, listed, 8), n);
    for (int k = 0; k < n; k++) {
        wait_depth(r[k], 0);
    }
}

/* What the strategy reads: 0 idle, unknown busy, stopped; exact for a
 * routee that counts. */
static void test_depths(void **state)
{
    ts_fixture *fx = *state;
    gated *g = setup(fx);
    ac_system *sys = gated_system(fx, "group_depths");
    ac_ref *r[1];
    spawn_gated(sys, g, 1, r);
    wait_depth(r[0], 0);
    block(g, r[0], 0, 1);
    assert_int_equal(ac__mailbox_len(r[0]), AC__MAILBOX_UNKNOWN);
    assert_status(ac_tell(r[0], ac_msg_int64_new(1), NULL), AC_OK);
    assert_int_equal(ac__mailbox_len(r[0]), AC__MAILBOX_UNKNOWN);
    ts_gate_open(&g->gates[0]);
    assert_true(ts_wait_ge(&g->total, 1, TS_WAIT_S));
    wait_depth(r[0], 0);
    assert_status(ac_stop(r[0]), AC_OK);
    wait_depth(r[0], AC__MAILBOX_STOPPED);

    /* A smallest-mailbox pool's routee counts its queue. */
    ac_ref *pool = rt_spawn(sys, ac_router_smallest_mailbox(1, &gated_def, &(ac_routee_options){
                                                                            .user_data = g}),
                            "pool");
    assert_non_null(pool);
    ac_ref *counted[1];
    assert_int_equal(rt_routees(pool, counted, 1), 1);
    wait_depth(counted[0], 0);
    block(g, counted[0], 1, 1);
    for (int i = 0; i < 3; i++) {
        assert_status(ac_tell(counted[0], ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_int_equal(ac__mailbox_len(counted[0]), 4); /* 3 queued, 1 running */
    ts_gate_open(&g->gates[1]);
    assert_true(ts_wait_ge(&g->total, 4, TS_WAIT_S));
    wait_depth(counted[0], 0);
    assert_int_equal(atomic_load(&g->bad), 0);
    ac_ref_release(pool);
    ac_ref_release(r[0]);
}

/* routee-1 and routee-2 busy, routee-3 idle: every message goes to
 * routee-3, the one whose depth is known. */
static void test_idle_routee_preferred(void **state)
{
    ts_fixture *fx = *state;
    gated *g = setup(fx);
    ac_system *sys = gated_system(fx, "group_idle");
    ac_ref *r[3];
    spawn_gated(sys, g, 3, r);
    ac_ref *router = rt_spawn(sys, ac_router_group_smallest_mailbox(r, 3), "group");
    assert_non_null(router);
    quiesce(router, r, 3);
    block(g, r[0], 0, 1);
    block(g, r[1], 0, 2);
    for (int i = 0; i < 20; i++) {
        wait_depth(r[2], 0);
        assert_status(ac_tell(router, ac_msg_int64_new(i), NULL), AC_OK);
        assert_true(ts_wait_ge(&g->got[3], i + 1, TS_WAIT_S));
    }
    ts_gate_open(&g->gates[0]);
    for (int k = 0; k < 2; k++) { /* barriers: whatever was queued is handled */
        ac_status st;
        ac_ref *who = rt_ask_routee(r[k], &st);
        assert_status(st, AC_OK);
        ac_ref_release(who);
    }
    assert_int_equal(atomic_load(&g->got[1]), 0);
    assert_int_equal(atomic_load(&g->got[2]), 0);
    assert_int_equal(atomic_load(&g->got[3]), 20);
    assert_int_equal(atomic_load(&g->bad), 0);
    ac_ref_release(router);
    for (int k = 0; k < 3; k++) {
        ac_ref_release(r[k]);
    }
}

/* Every routee busy: no depth is known, and the messages go to them in
 * turn, exactly evenly. */
static void test_all_unknown_round_robin(void **state)
{
    ts_fixture *fx = *state;
    gated *g = setup(fx);
    ac_system *sys = gated_system(fx, "group_unknown");
    ac_ref *r[3];
    spawn_gated(sys, g, 3, r);
    ac_ref *router = rt_spawn(sys, ac_router_group_smallest_mailbox(r, 3), "group");
    assert_non_null(router);
    quiesce(router, r, 3);
    for (int k = 0; k < 3; k++) {
        block(g, r[k], 0, k + 1);
    }
    for (int i = 0; i < 30; i++) {
        assert_status(ac_tell(router, ac_msg_int64_new(i), NULL), AC_OK);
    }
    /* GetRoutees is a barrier: the router answers it itself, after it has
     * routed the 30 (one sender's messages arrive in order), while every
     * routee is still busy */
    ac_ref *listed[3];
    assert_int_equal(rt_routees(router, listed, 3), 3);
    ts_gate_open(&g->gates[0]);
    assert_true(ts_wait_ge(&g->total, 30, TS_WAIT_S));
    for (int k = 1; k <= 3; k++) {
        if (atomic_load(&g->got[k]) != 10) {
            fail_msg("routee-%d got %lld of 30, expected 10 (%lld %lld %lld)", k,
                     (long long)atomic_load(&g->got[k]), (long long)atomic_load(&g->got[1]),
                     (long long)atomic_load(&g->got[2]), (long long)atomic_load(&g->got[3]));
        }
    }
    assert_int_equal(atomic_load(&g->bad), 0);
    ac_ref_release(router);
    for (int k = 0; k < 3; k++) {
        ac_ref_release(r[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_depths),
        TS_UNIT(test_idle_routee_preferred),
        TS_UNIT(test_all_unknown_round_robin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
