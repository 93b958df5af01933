/*
 * The cluster routers across real processes on 127.0.0.1: three (or
 * four) member processes (actorc-test-router-node) and this process as
 * a client member, joined by static seeds on ports probed free. Every
 * process is ended by its pid at the end of its test, and at exit or on a
 * fatal signal when a test fails (rt_proc.c).
 *
 * What a user would observe: the routee set is the replica on every
 * member with the role, sorted by address, and follows joins and losses;
 * each strategy routes as its local counterpart; scatter/gather fails
 * with the local contract's AggregateError, members in scatter order,
 * NodeDownError for a node lost mid-scatter and UndeliverableError for a
 * member without the actor — never a silent timeout; a router without
 * routees answers as a local group with none; bad options are refused
 * at the factory.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <actorc/cluster.h>

#include "rt_proc.h"
#include "ts_test.h"

#define MAX_MEMBERS 5
#define HB_IVL "100"
/* The heartbeat timeout of the members and the client, ms: short, so that
 * a lost member is Down soon; a test of Unreachable sets a long one. */
static int hb_timeout_ms = 600;
#define ASK_MS 8000

typedef struct cluster_fx {
    int ports[MAX_MEMBERS + 1]; /* the members', then the client's */
    int n_ports;
    rt_proc members[MAX_MEMBERS];
    int n;
    ac_system *sys;
    ac_cluster *cluster;
} cluster_fx;

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Ports for `members` members and the client, all seeds of everyone. */
static void fx_ports(cluster_fx *c, int members)
{
    c->n_ports = members + 1;
    assert_int_equal(ac_node_free_ports(c->ports, (size_t)c->n_ports), AC_OK);
}

/* Member i (0-based) with its replica in `mode`. */
static void fx_start_member(cluster_fx *c, int i, const char *mode)
{
    char bind[64], seeds[MAX_MEMBERS + 1][32], timeout[16];
    const char *args[40];
    int a = 0;
    snprintf(timeout, sizeof timeout, "%d", hb_timeout_ms);
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", c->ports[i]);
    args[a++] = "--bind", args[a++] = bind;
    for (int k = 0; k < c->n_ports; k++) {
        snprintf(seeds[k], sizeof seeds[k], "127.0.0.1:%d", c->ports[k]);
        args[a++] = "--seed", args[a++] = seeds[k];
    }
    args[a++] = "--role", args[a++] = "replica";
    args[a++] = "--replica", args[a++] = mode;
    args[a++] = "--hb", args[a++] = HB_IVL, args[a++] = timeout;
    args[a] = NULL;
    assert_true(rt_start(&c->members[i], args));
    if (i >= c->n)
        c->n = i + 1;
}

static void fx_join_as(cluster_fx *c, ts_fixture *fx, const char *name, const char *role)
{
    c->sys = ts_fx_system(fx, name, NULL);
    assert_non_null(c->sys);
    char bind[64], seeds[MAX_MEMBERS + 1][32];
    const char *seed_list[MAX_MEMBERS + 1];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", c->ports[c->n_ports - 1]);
    for (int k = 0; k < c->n_ports; k++) {
        snprintf(seeds[k], sizeof seeds[k], "127.0.0.1:%d", c->ports[k]);
        seed_list[k] = seeds[k];
    }
    ac_node_options no = {.bind = bind, .heartbeat_ivl_ms = 100, .heartbeat_timeout_ms = hb_timeout_ms};
    assert_non_null(ac_node_start(c->sys, &no));
    const char *roles[] = {role};
    ac_cluster_static_options seed_opts = {.seeds = seed_list, .seeds_count = (size_t)c->n_ports};
    ac_cluster_options co = {.name = "routers", .roles = roles, .roles_count = 1,
                             .static_options = &seed_opts};
    c->cluster = ac_cluster_join(c->sys, &co);
    assert_non_null(c->cluster);
}

static void fx_join_client(cluster_fx *c, ts_fixture *fx, const char *name)
{
    fx_join_as(c, fx, name, "client");
}

static void fx_end(cluster_fx *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->members[i].pid > 0)
            rt_end(&c->members[i], SIGKILL);
}

/* The three-member cluster most tests use, member modes as given. */
static void fx_three(cluster_fx *c, ts_fixture *fx, const char *name, const char *m0,
                     const char *m1, const char *m2)
{
    fx_ports(c, 3);
    fx_start_member(c, 0, m0);
    fx_start_member(c, 1, m1);
    fx_start_member(c, 2, m2);
    fx_join_client(c, fx, name);
}

static ac_ref *spawn(cluster_fx *c, ac_props *props, const char *name)
{
    assert_non_null(props);
    ac_ref *r = ac_spawn(c->sys, props, name);
    assert_non_null(r);
    return r;
}

/* The routees' paths, in the router's order, into paths (joined by ' '). */
static size_t routees(ac_ref *router, char *paths, size_t cap)
{
    ac_answer a;
    paths[0] = '\0';
    if (ac_ask_wait(router, ac_router_get_routees_msg(), ASK_MS, &a) != AC_OK)
        return 0;
    size_t n = ac_routees_count(a.reply);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(paths + len, len < cap ? cap - len : 0, "%s%s", i ? " " : "",
                                ac_ref_path(ac_routees_at(a.reply, i)));
    ac_answer_release(&a);
    return n;
}

static bool wait_routees(ac_ref *router, size_t want, double timeout_s)
{
    char paths[1024];
    double end = ts_now() + timeout_s;
    do {
        if (routees(router, paths, sizeof paths) == want)
            return true;
        sleep_ms(20);
    } while (ts_now() < end);
    return false;
}

static const char *member_path(cluster_fx *c, int i, char *buf, size_t cap)
{
    return rt_path(&c->members[i], "routers", "/user/replica", buf, cap);
}

/* Members i, j, k's replica paths, sorted by address. */
static void sorted_paths(cluster_fx *c, int count, char *out, size_t cap)
{
    int idx[MAX_MEMBERS];
    for (int i = 0; i < count; i++)
        idx[i] = i;
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            if (strcmp(c->members[idx[j]].address, c->members[idx[i]].address) < 0) {
                int t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    size_t len = 0;
    for (int i = 0; i < count; i++) {
        char p[256];
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "",
                                member_path(c, idx[i], p, sizeof p));
    }
}

static const ac_cluster_router_options replicas = {.path = "/user/replica", .role = "replica"};

/* The sender's path of an ask answered through `router`. */
static void ask_sender(ac_ref *router, const char *text, char *out, size_t cap)
{
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_msg_str_new(text), ASK_MS, &a), AC_OK);
    assert_non_null(a.sender);
    snprintf(out, cap, "%s", ac_ref_path(a.sender));
    ac_answer_release(&a);
}

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
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    hb_timeout_ms = 8000;
    fx_three(&c, fx, "client_unreach", "echo", "echo", "echo");
    hb_timeout_ms = 600;
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
 * leaves the set within the heartbeat timeout. */
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
    snprintf(router_path, sizeof router_path, "actorc://client_agg@127.0.0.1:%d/user/sg",
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
 * member and a routee. */
static void test_breakers_route_around_a_silent_member(void **state)
{
    ts_fixture *fx = *state;
    cluster_fx c = {0};
    fx_three(&c, fx, "client_breakers", "echo", "slow", "echo");
    ac_breaker_options bo = {.max_failures = 1, .call_timeout_ms = 300,
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
    sleep_ms(200);
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
    snprintf(mine, sizeof mine, "actorc://client_self_nested@127.0.0.1:%d%s",
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
        TS_UNIT(test_routers_over_three_members),
        TS_UNIT(test_fourth_member_joins),
        TS_UNIT(test_unreachable_out_and_back),
        TS_UNIT(test_member_killed_mid_scatter),
        TS_UNIT(test_scatter_answers_after_a_kill),
        TS_UNIT(test_same_aggregate_on_a_third_node),
        TS_UNIT(test_member_without_the_actor),
        TS_UNIT(test_consistent_hashing_pins_and_moves_only_the_lost),
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
