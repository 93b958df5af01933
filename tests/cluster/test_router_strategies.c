/*
 * The cluster routers' strategies across real processes on 127.0.0.1
 * (or threads of this process over the in-process transport, as
 * cluster.router_strategies.inproc),
 * with the fixture of router_fx.h (member processes ended by their pid,
 * also when a test fails): smallest-mailbox from the depths members
 * publish, nested paths and this node's own routee included; breakers
 * and hedging around a silent member; a router stopped mid-scatter; a
 * router without routees answers as a local group with none; bad
 * options are refused at the factory. The routee set and failures are
 * in test_routers.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <string.h>

#include "router_fx.h"

/* Member 0's replica at `path` is held busy with a queue; the router,
 * told the depths, sends the next requests to the idle ones. */
static void expect_smallest_prefers_the_idle(ts_fixture *fx, const char *name, const char *path)
{
    cluster_fx c = {0};
    fx_three(&c, fx, name, "echo", "echo", "echo");
    ac_cluster_router_options o = {.path = path, .role = "replica"};
    ac_ref *sm = spawn(&c, ac_cluster_router_smallest_mailbox(c.cluster, &o), "sm");
    assert_eventually(wait_routees(sm, 3, TS_WAIT_S), "three routees");
    char busy[256];
    rt_path(&c.members[0], "routers", path, busy, sizeof busy);
    ac_ref *busy_ref = ac_node_resolve(ac_system_node(c.sys), busy);
    for (int i = 0; i < 20; i++) /* 20 turns of 300 ms: busy for 6 s */
        ac_tell(busy_ref, ac_msg_str_new("hold 300"), NULL);
    sleep_ms(400); /* a few depth reports: its queue is long */
    for (int i = 0; i < 10; i++) {
        char who[256];
        ask_sender(sm, "work", who, sizeof who);
        assert_string_not_equal(who, busy);
    }
    ac_ref_release(busy_ref);
    ac_ref_release(sm);
    fx_end(&c);
}

static void test_smallest_mailbox_prefers_the_idle(void **state)
{
    expect_smallest_prefers_the_idle(*state, "client_smallest", "/user/replica");
}

/* The same with a nested routee path: the members locate the child and
 * publish its depth as they do a top-level actor's. */
static void test_smallest_mailbox_nested_path(void **state)
{
    expect_smallest_prefers_the_idle(*state, "client_smallest_nested", "/user/pool/replica");
}

/* Breakers in front of the members: a member whose replica never
 * answers fails one request, by its breaker's call timeout; its breaker
 * opens, and round-robin passes it by from then on, though it stays a
 * member and a routee. The call timeout is long enough that a live
 * member's answer on a loaded machine never reaches it (at 300 ms one
 * did, under a load of 18 on two cores, and its breaker opened too). */
static void test_breakers_route_around_a_silent_member(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_breakers", "echo", "slow", "echo");
    ac_breaker_options bo = {.max_failures = 1, .call_timeout_ms = 2000,
                             .reset_timeout_ms = 600000};
    ac_cluster_router_options o = replicas;
    o.breaker = &bo;
    ac_ref *rr = spawn(&c, ac_cluster_router_round_robin(c.cluster, &o), "rr");
    assert_eventually(wait_routees(rr, 3, TS_WAIT_S), "three routees");
    char silent[256];
    member_path(&c, 1, silent, sizeof silent);
    int failures = 0;
    for (int i = 0; i < 12; i++) {
        ac_answer a;
        ac_status st = ac_ask_wait(rr, ac_msg_str_new("q"), ASK_MS, &a);
        if (st != AC_OK) {
            if (!ac_error_is(a.error, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR))
                fail_msg("ask %d: %s: %s", i, ac_strerror(st),
                         a.error ? ac_error_to_string(a.error) : "no error");
            failures++;
        } else {
            assert_string_not_equal(ac_ref_path(a.sender), silent);
        }
        ac_answer_release(&a);
    }
    assert_int_equal(failures, 1);
    assert_int_equal(routees(rr, (char[1024]){0}, 1024), 3);
    ac_ref_release(rr);
    fx_end(&c);
}

/* Hedged over the wire: a member that never answers is hedged past, and
 * the answer comes from a live one, as its sender. */
static void test_hedged_past_a_silent_member(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_hedged", "slow", "echo", "slow");
    ac_hedged_options o = {.timeout_ms = 6000, .delay_us = 50000};
    ac_ref *h = spawn(&c, ac_cluster_router_hedged(c.cluster, &replicas, &o), "hedged");
    assert_eventually(wait_routees(h, 3, TS_WAIT_S), "three routees");
    char live[256];
    member_path(&c, 1, live, sizeof live);
    for (int i = 0; i < 6; i++) {
        char who[256];
        ask_sender(h, "q", who, sizeof who);
        assert_string_equal(who, live);
    }
    ac_ref_release(h);
    fx_end(&c);
}

/* The router stopped mid-scatter fails the open scatter at once with the
 * local contract's message; a bare tell is dropped with a warning. */
static void test_stop_mid_scatter_and_bare_tell(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_stop", "slow", "slow", "slow");
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, NULL), "sg");
    assert_eventually(wait_routees(sg, 3, TS_WAIT_S), "three routees");
    assert_status(ac_tell(sg, ac_msg_str_new("bare"), NULL), AC_OK);
    assert_true(ts_log_wait_text(ts_fx_log(fx), "without a sender: no reply target, nothing "
                                                "scattered",
                                 TS_WAIT_S));
    ac_future *f = ac_ask(sg, ac_msg_str_new("q"), ASK_MS);
    /* The router scatters in its own turn: stopped before that, it would
     * drop the ask unread. Out means three asks wait on the members. */
    assert_eventually(wait_pending_asks(c.sys, 3, TS_WAIT_S), "the scatter to go out");
    double t0 = ts_now();
    ac_stop(sg);
    ac_answer a;
    assert_status(ac_future_wait(f, ASK_MS, &a), AC_EFAILED);
    assert_true(ts_now() - t0 < 3.0); /* not the 4.5 s default deadline */
    assert_string_equal(ac_error_message(a.error),
                        "Scatter/gather router actorc://client_stop/user/sg stopped while the "
                        "scatter was still open");
    assert_int_equal(ac_error_member_count(a.error), 0);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(sg);
    fx_end(&c);
}

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def local_replica_def = {.name = "LocalReplica", .receive = echo_receive};

/* This node is a replica member too: its own actor is a routee (the
 * local actor, not a remote ref to itself), unless exclude_self. */
static void test_this_node_and_exclude_self(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_ports(&c, 2);
    fx_start_member(&c, 0, "echo");
    fx_start_member(&c, 1, "echo");
    fx_join_as(&c, fx, "client_self", "replica");
    ac_ref *mine = ts_spawn(c.sys, &local_replica_def, NULL, "replica");
    assert_non_null(mine);
    ac_ref *all = spawn(&c, ac_cluster_router_round_robin(c.cluster, &replicas), "all");
    ac_cluster_router_options others = replicas;
    others.exclude_self = true;
    ac_ref *rest = spawn(&c, ac_cluster_router_round_robin(c.cluster, &others), "rest");
    assert_eventually(wait_routees(all, 3, TS_WAIT_S), "two members and this node");
    assert_eventually(wait_routees(rest, 2, TS_WAIT_S), "the two other members");
    char got[1024];
    routees(all, got, sizeof got);
    assert_non_null(strstr(got, "actorc://client_self/user/replica"));
    routees(rest, got, sizeof got);
    assert_null(strstr(got, "client_self"));
    int local = 0;
    for (int i = 0; i < 6; i++) {
        char who[256];
        ask_sender(all, "q", who, sizeof who);
        local += strcmp(who, "actorc://client_self/user/replica") == 0;
    }
    assert_int_equal(local, 2);
    ac_ref_release(all);
    ac_ref_release(rest);
    ac_ref_release(mine);
    fx_end(&c);
}

static void local_pool_pre_start(ac_ctx *ctx)
{
    ac_ref *r = ac_spawn_child(ctx, ac_props_new(&local_replica_def, NULL), "replica");
    assert_non_null(r);
    ac_ref_release(r);
}

static void ignore_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def local_pool_def = {
    .name = "LocalPool", .pre_start = local_pool_pre_start, .receive = ignore_receive};

/* This node's own nested routee is reached through this node (a ref by
 * path), so its depth comes from this node's publisher like a member's:
 * with both members' queues long, the idle local one takes every request. */
static void test_smallest_mailbox_nested_on_this_node(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_ports(&c, 2);
    fx_start_member(&c, 0, "echo");
    fx_start_member(&c, 1, "echo");
    fx_join_as(&c, fx, "client_self_nested", "replica");
    ac_ref *pool = ts_spawn(c.sys, &local_pool_def, NULL, "pool");
    assert_non_null(pool);
    ac_cluster_router_options o = {.path = "/user/pool/replica", .role = "replica"};
    ac_ref *sm = spawn(&c, ac_cluster_router_smallest_mailbox(c.cluster, &o), "sm");
    assert_eventually(wait_routees(sm, 3, TS_WAIT_S), "two members and this node");
    for (int m = 0; m < 2; m++) {
        char path[256];
        rt_path(&c.members[m], "routers", o.path, path, sizeof path);
        ac_ref *member = ac_node_resolve(ac_system_node(c.sys), path);
        for (int i = 0; i < 200; i++) /* 200 turns of 50 ms: busy for 10 s */
            ac_tell(member, ac_msg_str_new("hold 50"), NULL);
        ac_ref_release(member);
    }
    char mine[256];
    snprintf(mine, sizeof mine,
             rt_inproc() ? "actorc://client_self_nested@member:%d%s"
                         : "actorc://client_self_nested@127.0.0.1:%d%s",
             c.ports[c.n_ports - 1], o.path);
    sleep_ms(400); /* a few depth reports: their queues are long */
    for (int i = 0; i < 10; i++) {
        char who[256];
        ask_sender(sm, "work", who, sizeof who);
        assert_string_equal(who, mine);
    }
    ac_ref_release(sm);
    ac_ref_release(pool);
    fx_end(&c);
}

/* A role no member has: the same answers as a local group with none. */
static void test_no_routees_answers_as_an_empty_group(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_ports(&c, 1);
    fx_start_member(&c, 0, "echo");
    fx_join_client(&c, fx, "client_empty");
    ac_cluster_router_options none = {.path = "/user/replica", .role = "nobody"};
    ac_ref *rr = spawn(&c, ac_cluster_router_round_robin(c.cluster, &none), "rr");
    ac_ref *sg = spawn(
        &c, ac_cluster_router_scatter_gather_first_completed(c.cluster, &none, NULL), "sg");
    ac_ref *hg = spawn(&c, ac_cluster_router_hedged(c.cluster, &none, NULL), "hedged");
    ac_ref *lrr = spawn(&c, ac_router_group_round_robin(NULL, 0), "lrr");
    ac_ref *lsg = spawn(&c, ac_router_group_scatter_gather_first_completed(NULL, 0, NULL), "lsg");
    ac_answer a, b;
    assert_status(ac_ask_wait(rr, ac_msg_str_new("q"), ASK_MS, &a), AC_EDEAD);
    assert_status(ac_ask_wait(lrr, ac_msg_str_new("q"), ASK_MS, &b), AC_EDEAD);
    assert_string_equal(ac_error_message(a.error),
                        "Ask to actorc://client_empty/user/rr failed: the router has no routees "
                        "left");
    assert_string_equal(ac_error_name(a.error), ac_error_name(b.error));
    ac_answer_release(&a);
    ac_answer_release(&b);
    assert_status(ac_ask_wait(sg, ac_msg_str_new("q"), ASK_MS, &a), AC_EFAILED);
    assert_string_equal(ac_error_message(a.error),
                        "Scatter/gather router actorc://client_empty/user/sg has no routees left "
                        "to scatter to");
    assert_int_equal(ac_error_member_count(a.error), 0);
    ac_answer_release(&a);
    assert_status(ac_ask_wait(hg, ac_msg_str_new("q"), ASK_MS, &a), AC_EFAILED);
    assert_string_equal(ac_error_message(a.error),
                        "Hedged router actorc://client_empty/user/hedged has no routees left to "
                        "send to");
    ac_answer_release(&a);
    /* A bare tell to a scatter/gather router is dropped with a warning. */
    assert_status(ac_tell(sg, ac_msg_str_new("bare"), NULL), AC_OK);
    ac_ref *refs[] = {rr, sg, hg, lrr, lsg};
    for (size_t i = 0; i < 5; i++)
        ac_ref_release(refs[i]);
    fx_end(&c);
}

static void expect_refused(ac_props *props, ac_status status, const char *message)
{
    if (props) {
        ac_props_free(props);
        fail_msg("accepted what should fail with \"%s\"", message);
    }
    assert_last_error(status);
    assert_string_equal(ac_last_error(), message);
}

static void test_bad_options_refused(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_ports(&c, 1);
    fx_start_member(&c, 0, "echo");
    fx_join_client(&c, fx, "client_bad");
    expect_refused(ac_cluster_router_round_robin(NULL, &replicas), AC_EINVAL,
                   "ac_cluster_router_round_robin: cluster is NULL");
    expect_refused(ac_cluster_router_random(c.cluster, NULL), AC_EINVAL,
                   "ac_cluster_router_random: options is NULL; options->path is required");
    ac_cluster_router_options bad_path = {.path = "/replica"};
    expect_refused(ac_cluster_router_broadcast(c.cluster, &bad_path), AC_EINVAL,
                   "ac_cluster_router_broadcast: path \"/replica\" is not an actor path under "
                   "/user (such as \"/user/replica\")");
    ac_cluster_router_options bad_role = {.path = "/user/replica", .role = "a b"};
    expect_refused(ac_cluster_router_smallest_mailbox(c.cluster, &bad_role), AC_EINVAL,
                   "ac_cluster_router_smallest_mailbox: role \"a b\" is not a role name; use "
                   "[A-Za-z0-9._-]{1,64}, or NULL for every member");
    expect_refused(ac_cluster_router_consistent_hashing(c.cluster, &replicas, NULL, NULL),
                   AC_EINVAL, "ac_cluster_router_consistent_hashing: key is NULL");
    ac_scatter_gather_options sg = {.timeout_ms = -5};
    expect_refused(ac_cluster_router_scatter_gather_first_completed(c.cluster, &replicas, &sg),
                   AC_EINVAL,
                   "ac_cluster_router_scatter_gather_first_completed: timeout_ms = -5 is not "
                   "usable; use 1..2147483647, or 0 for the default (4500)");
    ac_breaker_options bo = {.max_failures = -1};
    ac_cluster_router_options bad_breaker = {.path = "/user/replica", .breaker = &bo};
    expect_refused(ac_cluster_router_round_robin(c.cluster, &bad_breaker), AC_EINVAL,
                   "ac_cluster_router_round_robin: max_failures = -1; use 1..1000000, or 0 "
                   "for the default (5)");
    ac_hedged_options h = {.delay_us = -1};
    expect_refused(ac_cluster_router_hedged(c.cluster, &replicas, &h), AC_EINVAL,
                   "ac_cluster_router_hedged: delay_us = -1 is negative; use a hedge delay of 1 "
                   "us or more, or 0 for the default (10000 us)");
    fx_end(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_smallest_mailbox_prefers_the_idle),
        TS_UNIT(test_smallest_mailbox_nested_path),
        TS_UNIT(test_breakers_route_around_a_silent_member),
        TS_UNIT(test_hedged_past_a_silent_member),
        TS_UNIT(test_stop_mid_scatter_and_bare_tell),
        TS_UNIT(test_this_node_and_exclude_self),
        TS_UNIT(test_smallest_mailbox_nested_on_this_node),
        TS_UNIT(test_no_routees_answers_as_an_empty_group),
        TS_UNIT(test_bad_options_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
