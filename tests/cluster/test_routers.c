/*
 * The cluster routers across real processes on 127.0.0.1 (as
 * cluster.routers.inproc: threads of this process over the in-process
 * transport, ACTORC_TEST_TRANSPORT=inproc): three (or
 * four) member processes (actorc-test-router-node) and this process as
 * a client member, joined by static seeds on ports probed free
 * (router_fx.h). Every process is ended by its pid at the end of its
 * test, and at exit or on a fatal signal when a test fails (rt_proc.c).
 *
 * The routee set and failures: the set is the replica on every member
 * with the role, sorted by address, and follows joins and losses; each
 * strategy routes as its local counterpart; scatter/gather fails with
 * the local contract's AggregateError, members in scatter order,
 * NodeDownError for a node lost mid-scatter and UndeliverableError for a
 * member without the actor — never a silent timeout; consistent hashing
 * moves only the keys of a member lost. The strategies' finer points are
 * in test_router_strategies.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <string.h>

#include "router_fx.h"

/* ---- tests ------------------------------------------------------------ */

static void test_routers_over_three_members(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_rr", "echo", "echo", "echo");
    ac_ref *rr = spawn(&c, ac_cluster_router_round_robin(c.cluster, &replicas), "rr");
    assert_eventually(wait_routees(rr, 3, TS_WAIT_S), "three routees");
    char got[1024], want[1024];
    routees(rr, got, sizeof got);
    sorted_paths(&c, 3, want, sizeof want);
    assert_string_equal(got, want); /* one per replica member, sorted by address */

    /* Round-robin in that order, twice around; the routee is the sender. */
    char first[3][256];
    for (int i = 0; i < 6; i++) {
        char who[256];
        ask_sender(rr, "hello", who, sizeof who);
        if (i < 3)
            snprintf(first[i], sizeof first[i], "%s", who);
        else
            assert_string_equal(who, first[i - 3]);
    }
    assert_true(strstr(want, first[0]) && strstr(want, first[1]) && strstr(want, first[2]));
    assert_string_not_equal(first[0], first[1]);
    assert_string_not_equal(first[1], first[2]);

    /* Random and broadcast reach the members; broadcast's first answer
     * settles the ask. */
    ac_ref *rnd = spawn(&c, ac_cluster_router_random(c.cluster, &replicas), "random");
    ac_ref *bc = spawn(&c, ac_cluster_router_broadcast(c.cluster, &replicas), "bcast");
    assert_eventually(wait_routees(rnd, 3, TS_WAIT_S), "random has three routees");
    assert_eventually(wait_routees(bc, 3, TS_WAIT_S), "broadcast has three routees");
    char who[256];
    ask_sender(rnd, "x", who, sizeof who);
    assert_non_null(strstr(want, who));
    ask_sender(bc, "y", who, sizeof who);
    assert_non_null(strstr(want, who));
    ac_ref_release(rr);
    ac_ref_release(rnd);
    ac_ref_release(bc);
    fx_end(&c);
}

static void test_fourth_member_joins(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_ports(&c, 4);
    for (int i = 0; i < 3; i++)
        fx_start_member(&c, i, "echo");
    fx_join_client(&c, fx, "client_join");
    ac_ref *rr = spawn(&c, ac_cluster_router_round_robin(c.cluster, &replicas), "rr");
    ac_ref *sg = spawn(&c,
                       ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas,
                                                                        NULL),
                       "sg");
    assert_eventually(wait_routees(rr, 3, TS_WAIT_S), "three routees");
    fx_start_member(&c, 3, "echo");
    assert_eventually(wait_routees(rr, 4, TS_WAIT_S), "the fourth member is a routee");
    assert_eventually(wait_routees(sg, 4, TS_WAIT_S), "and the scatter's too");
    char got[1024], want[1024];
    routees(rr, got, sizeof got);
    sorted_paths(&c, 4, want, sizeof want);
    assert_string_equal(got, want);
    ac_ref_release(rr);
    ac_ref_release(sg);
    fx_end(&c);
}

/* SIGSTOP: the member goes Unreachable (at half the heartbeat timeout)
 * and out of the set at once, before it could be Down; SIGCONT: it is
 * Reachable and back, at its place. The timeout is long (8 s) so that the
 * member is back well before it would be Down. */
static void test_unreachable_out_and_back(void **state)
{
    if (rt_inproc())
        skip(); /* SIGSTOP: processes only */
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    hb_timeout_ms = 8000;
    fx_three(&c, fx, "client_unreach", "echo", "echo", "echo");
    hb_timeout_ms = HB_TIMEOUT_MS;
    ac_ref *rr = spawn(&c, ac_cluster_router_round_robin(c.cluster, &replicas), "rr");
    assert_eventually(wait_routees(rr, 3, TS_WAIT_S), "three routees");
    char before[1024], stopped[256];
    routees(rr, before, sizeof before);
    member_path(&c, 1, stopped, sizeof stopped);
    rt_signal(&c.members[1], SIGSTOP);
    assert_eventually(wait_routees(rr, 2, TS_WAIT_S), "the silent member left the set");
    char during[1024];
    routees(rr, during, sizeof during);
    assert_null(strstr(during, stopped));
    for (int i = 0; i < 4; i++) { /* new requests go to the other two only */
        char who[256];
        ask_sender(rr, "q", who, sizeof who);
        assert_string_not_equal(who, stopped);
    }
    rt_signal(&c.members[1], SIGCONT);
    assert_eventually(wait_routees(rr, 3, TS_WAIT_S), "the member is back");
    char after[1024];
    routees(rr, after, sizeof after);
    assert_string_equal(after, before);
    ac_ref_release(rr);
    fx_end(&c);
}

/* kill -9 of a member mid-scatter: the others answer (here: fail), the
 * lost one is a NodeDownError at once, not a timeout, and the member
 * leaves the set at once too (its connection dropped). */
static void test_member_killed_mid_scatter(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_kill", "fail", "fail", "slow");
    ac_scatter_gather_options o = {.timeout_ms = 6000};
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, &o), "sg");
    assert_eventually(wait_routees(sg, 3, TS_WAIT_S), "three routees");
    ac_future *f = ac_ask(sg, ac_msg_str_new("q"), 7000);
    assert_non_null(f);
    sleep_ms(200); /* the scatter is out: two have failed, the slow one waits */
    double t0 = ts_now();
    rt_end(&c.members[2], SIGKILL);
    ac_answer a;
    assert_status(ac_future_wait(f, 7000, &a), AC_EFAILED);
    double took = ts_now() - t0;
    assert_true(took < 4.0); /* far below the scatter's 6 s: the node's loss, not a timeout */
    assert_int_equal(ac_error_member_count(a.error), 3);
    size_t node_down = 0, replica = 0;
    for (size_t i = 0; i < 3; i++) {
        node_down += ac_error_is(ac_error_member(a.error, i), AC_NODE_DOWN_ERROR);
        replica += ac_error_is(ac_error_member(a.error, i), "ReplicaError");
    }
    assert_int_equal(node_down, 1);
    assert_int_equal(replica, 2);
    ac_answer_release(&a);
    ac_future_release(f);
    assert_eventually(wait_routees(sg, 2, TS_WAIT_S), "the lost member left the set");
    ac_ref_release(sg);
    fx_end(&c);
}

/* A scatter over echo members answers though one is killed. */
static void test_scatter_answers_after_a_kill(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_kill2", "echo", "echo", "slow");
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, NULL), "sg");
    assert_eventually(wait_routees(sg, 3, TS_WAIT_S), "three routees");
    rt_end(&c.members[2], SIGKILL);
    ac_answer a;
    assert_status(ac_ask_wait(sg, ac_msg_str_new("still"), ASK_MS, &a), AC_OK);
    assert_string_equal(ac_msg_str(a.reply), "still");
    ac_answer_release(&a);
    assert_eventually(wait_routees(sg, 2, TS_WAIT_S), "the lost member left the set");
    ac_ref_release(sg);
    fx_end(&c);
}

/* Every routee fails: the AggregateError printed on a third node (which
 * asked the router over the wire) is byte for byte the one printed here. */
static void test_same_aggregate_on_a_third_node(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_agg", "fail", "fail", "fail");
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, NULL), "sg");
    assert_eventually(wait_routees(sg, 3, TS_WAIT_S), "three routees");
    ac_answer here;
    assert_status(ac_ask_wait(sg, ac_msg_str_new("ping"), ASK_MS, &here), AC_EFAILED);
    char *local = ac_error_to_string(here.error);
    assert_non_null(strstr(local, "all 3 routees failed"));

    char asker[256], router_path[256];
    rt_path(&c.members[0], "routers", "/user/asker", asker, sizeof asker);
    snprintf(router_path, sizeof router_path,
             rt_inproc() ? "actorc://client_agg@member:%d/user/sg"
                         : "actorc://client_agg@127.0.0.1:%d/user/sg",
             c.ports[c.n_ports - 1]);
    ac_ref *remote_asker = ac_node_resolve(ac_system_node(c.sys), asker);
    assert_non_null(remote_asker);
    ac_answer there;
    assert_status(ac_ask_wait(remote_asker, ac_msg_str_new(router_path), ASK_MS, &there),
                  AC_OK);
    assert_string_equal(ac_msg_str(there.reply), local);
    free(local);
    ac_answer_release(&here);
    ac_answer_release(&there);
    ac_ref_release(remote_asker);
    ac_ref_release(sg);
    fx_end(&c);
}

/* A member without the actor: its part of the scatter is an
 * UndeliverableError, at once. */
static void test_member_without_the_actor(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_undeliv", "fail", "none", "fail");
    ac_scatter_gather_options o = {.timeout_ms = 6000};
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, &o), "sg");
    assert_eventually(wait_routees(sg, 3, TS_WAIT_S), "three routees, one without the actor");
    double t0 = ts_now();
    ac_answer a;
    assert_status(ac_ask_wait(sg, ac_msg_str_new("q"), ASK_MS, &a), AC_EFAILED);
    assert_true(ts_now() - t0 < 4.0);
    assert_int_equal(ac_error_member_count(a.error), 3);
    size_t undeliverable = 0;
    for (size_t i = 0; i < 3; i++)
        undeliverable += ac_error_is(ac_error_member(a.error, i), AC_UNDELIVERABLE_ERROR);
    assert_int_equal(undeliverable, 1);
    ac_answer_release(&a);
    ac_ref_release(sg);
    fx_end(&c);
}

static uint64_t key_of_str(const ac_msg *msg, void *user)
{
    (void)user;
    uint64_t h = 1469598103934665603ull;
    for (const char *s = ac_msg_str(msg); s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

enum { HASH_KEYS = 60 };

static void owners(ac_ref *router, char owner[HASH_KEYS][256])
{
    for (int k = 0; k < HASH_KEYS; k++) {
        char key[32];
        snprintf(key, sizeof key, "key-%d", k);
        ask_sender(router, key, owner[k], sizeof owner[k]);
    }
}

static void test_consistent_hashing_pins_and_moves_only_the_lost(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_hash", "echo", "echo", "echo");
    ac_ref *h = spawn(&c, ac_cluster_router_consistent_hashing(c.cluster, &replicas, key_of_str,
                                                               NULL),
                      "hash");
    assert_eventually(wait_routees(h, 3, TS_WAIT_S), "three routees");
    static char before[HASH_KEYS][256], again[HASH_KEYS][256], after[HASH_KEYS][256];
    owners(h, before);
    owners(h, again);
    for (int k = 0; k < HASH_KEYS; k++)
        assert_string_equal(again[k], before[k]);
    char lost[256];
    member_path(&c, 1, lost, sizeof lost);
    rt_end(&c.members[1], SIGKILL);
    assert_eventually(wait_routees(h, 2, TS_WAIT_S), "the lost member left the set");
    owners(h, after);
    for (int k = 0; k < HASH_KEYS; k++) {
        if (strcmp(before[k], lost) == 0)
            assert_string_not_equal(after[k], lost);
        else
            assert_string_equal(after[k], before[k]);
    }
    ac_ref_release(h);
    fx_end(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_routers_over_three_members),
        TS_UNIT(test_fourth_member_joins),
        TS_UNIT(test_unreachable_out_and_back),
        TS_UNIT(test_member_killed_mid_scatter),
        TS_UNIT(test_scatter_answers_after_a_kill),
        TS_UNIT(test_same_aggregate_on_a_third_node),
        TS_UNIT(test_member_without_the_actor),
        TS_UNIT(test_consistent_hashing_pins_and_moves_only_the_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
