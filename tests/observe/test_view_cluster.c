/*
 * The node and the cluster in the view: two systems on 127.0.0.1, each
 * with a node, joined in one cluster by static seeds. A's view has its
 * node (address, incarnation, peers, traffic) and its cluster (provider,
 * state, both members with status, incarnation and roles, B's Up event);
 * a cluster router on A shows both members' routees once both are up,
 * and the messages routed to them; after A's node is stopped and the
 * cluster left, the sections stay readable until the system goes.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <jansson.h>

#include <actorc/cluster.h>

#include "ts_test.h"

static json_t *view_of(ac_system *sys)
{
    char *text = ac_observe_json(sys, NULL);
    if (!text)
        fail_msg("ac_observe_json: %s", ac_last_error());
    json_error_t err;
    json_t *doc = json_loads(text, JSON_DECODE_INT_AS_REAL, &err);
    if (!doc)
        fail_msg("not JSON (%s): %.300s", err.text, text);
    free(text);
    return doc;
}

typedef struct two {
    ac_cluster *a;
    ac_node *na;
} two;

/* Both are members, and a's node has sent a frame of its own (its first
 * beat may follow the other's hello by a tick). */
static bool both_up(void *arg)
{
    ac_cluster_status st;
    ac_node_stats ns;
    return ac_cluster_status_get(((two *)arg)->a, &st) == AC_OK && st.members_up == 2 &&
           ac_node_stats_get(((two *)arg)->na, &ns) == AC_OK && ns.frames_out > 0;
}

static void quiet_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def quiet_def = {.name = "Quiet", .receive = quiet_receive};

/* The cluster router's element of A's view; NULL when not there. */
static json_t *cluster_router(json_t *doc)
{
    json_t *routers = json_object_get(doc, "routers"), *r;
    size_t i;
    json_array_foreach(routers, i, r) {
        const char *path = json_string_value(json_object_get(r, "path"));
        if (path && strstr(path, "/user/members"))
            return r;
    }
    return NULL;
}

typedef struct router_wait {
    ac_system *sys;
    double size, routed;
} router_wait;

/* The router shows `size` routees and `routed` messages. */
static bool router_shows(void *arg)
{
    router_wait *w = arg;
    json_t *doc = view_of(w->sys), *r = cluster_router(doc);
    bool ok = r && json_number_value(json_object_get(r, "size")) == w->size &&
              json_number_value(json_object_get(r, "routed")) == w->routed;
    json_decref(doc);
    return ok;
}

static ac_system *node_system(ts_fixture *fx, const char *name, ac_node **node)
{
    ac_system *sys = ts_fx_system(fx, name, &(ac_system_options){.workers = 1,
                                                                   .log_level = AC_LOG_ERROR});
    assert_non_null(sys);
    *node = ac_node_start(sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    if (!*node)
        fail_msg("ac_node_start: %s", ac_last_error());
    return sys;
}

static void test_node_and_cluster(void **state)
{
    ts_fixture *fx = *state;
    ac_node *na, *nb;
    ac_system *a = node_system(fx, "view-a", &na);
    ac_system *b = node_system(fx, "view-b", &nb);
    const char *seeds_a[] = {ac_node_address(nb)}, *seeds_b[] = {ac_node_address(na)};
    static const char *const roles[] = {"watcher", "replica"};
    ac_cluster_static_options sa = {.seeds = seeds_a, .seeds_count = 1};
    ac_cluster_static_options sb = {.seeds = seeds_b, .seeds_count = 1};
    ac_cluster *ca = ac_cluster_join(a, &(ac_cluster_options){.name = "viewed", .roles = roles,
                                                              .roles_count = 2,
                                                              .static_options = &sa});
    ac_cluster *cb = ac_cluster_join(b, &(ac_cluster_options){.name = "viewed",
                                                              .static_options = &sb});
    assert_non_null(ca);
    assert_non_null(cb);
    two t = {.a = ca, .na = na};
    assert_eventually(ts_wait_until(both_up, &t, TS_WAIT_S), "both members up");

    /* A cluster router: its set follows the members, its counts the tells. */
    ac_ref *qa = ac_spawn(a, ac_props_new(&quiet_def, NULL), "quiet");
    ac_ref *qb = ac_spawn(b, ac_props_new(&quiet_def, NULL), "quiet");
    ac_ref *router = ac_spawn(a, ac_cluster_router_round_robin(
                                     ca, &(ac_cluster_router_options){.path = "/user/quiet"}),
                              "members");
    assert_non_null(qa);
    assert_non_null(qb);
    assert_non_null(router);
    router_wait w = {.sys = a, .size = 2, .routed = 0};
    assert_eventually(ts_wait_until(router_shows, &w, TS_WAIT_S), "the router's two members");
    for (int i = 0; i < 6; i++)
        assert_status(ac_tell(router, ac_msg_str_new("hi"), NULL), AC_OK);
    w.routed = 6;
    assert_eventually(ts_wait_until(router_shows, &w, TS_WAIT_S), "six messages routed");
    json_t *rdoc = view_of(a), *r = cluster_router(rdoc);
    assert_string_equal(json_string_value(json_object_get(r, "kind")), "round-robin");
    assert_true(json_is_true(json_object_get(r, "group")));
    json_t *routees = json_object_get(r, "routees");
    for (size_t i = 0; i < 2; i++)
        assert_int_equal((int)json_number_value(json_object_get(json_array_get(routees, i),
                                                                 "routed")), 3);
    json_decref(rdoc);
    ac_ref_release(router);
    ac_ref_release(qa);
    ac_ref_release(qb);

    json_t *doc = view_of(a);
    json_t *nodes = json_object_get(doc, "node");
    assert_int_equal(json_array_size(nodes), 1);
    json_t *node = json_array_get(nodes, 0);
    assert_string_equal(json_string_value(json_object_get(node, "address")), ac_node_address(na));
    char hex[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, ac_node_incarnation(na));
    assert_string_equal(json_string_value(json_object_get(node, "incarnation_hex")), hex);
    assert_true(json_number_value(json_object_get(node, "peers")) >= 1);
    assert_true(json_number_value(json_object_get(node, "frames_out")) > 0);
    assert_true(json_number_value(json_object_get(node, "bytes_in")) > 0);
    assert_true(json_is_number(json_object_get(node, "pending_asks")));
    assert_true(json_is_number(json_object_get(node, "nodes_lost")));

    json_t *clusters = json_object_get(doc, "cluster");
    assert_int_equal(json_array_size(clusters), 1);
    json_t *c = json_array_get(clusters, 0);
    assert_string_equal(json_string_value(json_object_get(c, "name")), "viewed");
    assert_string_equal(json_string_value(json_object_get(c, "provider")), "static");
    assert_string_equal(json_string_value(json_object_get(c, "state")), "joined");
    assert_int_equal((int)json_number_value(json_object_get(c, "members_up")), 2);
    json_t *members = json_object_get(c, "members");
    assert_int_equal(json_array_size(members), 2);
    int selves = 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *m = json_array_get(members, i);
        assert_string_equal(json_string_value(json_object_get(m, "status")), "up");
        assert_int_equal(strlen(json_string_value(json_object_get(m, "incarnation_hex"))), 16);
        if (json_is_true(json_object_get(m, "self"))) {
            selves++;
            assert_string_equal(json_string_value(json_object_get(m, "address")),
                                ac_node_address(na));
            json_t *r = json_object_get(m, "roles");
            assert_int_equal(json_array_size(r), 2);
            assert_string_equal(json_string_value(json_array_get(r, 0)), "watcher");
        } else {
            assert_string_equal(json_string_value(json_object_get(m, "system")), "view-b");
        }
    }
    assert_int_equal(selves, 1);
    /* B's Up, newest first among at most 32. */
    json_t *events = json_object_get(c, "events");
    assert_true(json_array_size(events) >= 1);
    bool b_up = false;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        b_up |= strcmp(json_string_value(json_object_get(e, "kind")), "up") == 0 &&
                strcmp(json_string_value(json_object_get(e, "address")), ac_node_address(nb)) == 0;
    }
    assert_true(b_up);
    assert_true(json_number_value(json_object_get(c, "events_total")) >= 1);
    json_decref(doc);

    /* Left and stopped: still in the view, as it is now. */
    assert_status(ac_cluster_leave(ca), AC_OK);
    assert_status(ac_node_stop(na), AC_OK);
    doc = view_of(a);
    c = json_array_get(json_object_get(doc, "cluster"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "state")), "left");
    assert_int_equal(json_array_size(json_object_get(doc, "node")), 1);
    json_decref(doc);
    (void)cb;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_node_and_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
