/*
 * The membership API in one process: two systems, each with a node on
 * 127.0.0.1 (or, as cluster.api.inproc, over the in-process transport:
 * ACTORC_TEST_TRANSPORT=inproc), joined to one static cluster. What a subscriber sees and in
 * which order, a subscriber that stops, the member list and its roles,
 * the status, leaving, and every bad argument refused with a status and
 * a message naming it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "rt_proc.h"
#include "test_support.h"

#ifdef CL_SANITIZED
#define SLOW 5
#else
#define SLOW 1
#endif
#define WAIT_S (10.0 * SLOW)

/* ---- a subscriber that records "<kind> <address>" --------------------- */

static const char *kind_name(ac_member_event_kind k)
{
    static const char *const names[] = {"up", "unreachable", "reachable", "down"};
    return (unsigned)k < 4 ? names[k] : "?";
}

static void recorder_receive(ac_ctx *ctx, ac_msg *msg)
{
    ts_recorder *rec = ac_ctx_user_data(ctx);
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev && ev->kind != AC_MEMBER_EVENT_UNREACHABLE && ev->kind != AC_MEMBER_EVENT_REACHABLE)
        ts_rec_add(rec, "%s %s", kind_name(ev->kind), ev->member.address);
}
static const ac_actor_def recorder_def = {.name = "Recorder", .receive = recorder_receive};

static ac_ref *recorder(ac_system *sys, ts_recorder *rec)
{
    ac_ref *r = ac_spawn(sys, ac_props_new(&recorder_def, rec), NULL);
    assert_non_null(r);
    return r;
}

/* ---- two members ------------------------------------------------------- */

typedef struct pair {
    ac_system *sys[2];
    ac_node *node[2];
    ac_cluster *cluster[2];
    char addr[2][64];
} pair;

static ac_node *start_node(ac_system *sys)
{
    char bind[64];
    ac_node_options o = {.bind = rt_bind("member", bind, sizeof bind)};
    ac_node *n = ac_node_start(sys, &o);
    assert_non_null(n);
    return n;
}

static void pair_start(pair *p)
{
    static const char *const roles[2][2] = {{"front", "web"}, {"back", "db"}};
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 2; i++) {
        ac_system_options so = {.workers = 2};
        p->sys[i] = ac_system_create(i ? "beta" : "alpha", &so);
        assert_non_null(p->sys[i]);
        p->node[i] = start_node(p->sys[i]);
        snprintf(p->addr[i], sizeof p->addr[i], "%s", ac_node_address(p->node[i]));
    }
    for (int i = 0; i < 2; i++) {
        const char *seeds[] = {p->addr[0], p->addr[1]};
        ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = 2};
        ac_cluster_options o = {.name = "pair", .roles = roles[i], .roles_count = 2,
                                .static_options = &seed_opts};
        p->cluster[i] = ac_cluster_join(p->sys[i], &o);
        assert_non_null(p->cluster[i]);
        assert_ptr_equal(ac_system_cluster(p->sys[i]), p->cluster[i]);
    }
}

static void pair_end(pair *p)
{
    for (int i = 0; i < 2; i++)
        if (p->sys[i])
            ac_system_terminate(p->sys[i]);
}

static bool both_up(void *arg)
{
    ac_cluster *c = arg;
    ac_cluster_status st;
    return ac_cluster_status_get(c, &st) == AC_OK && st.members_up == 2;
}

static void test_order(void **state)
{
    (void)state;
    pair p;
    ts_recorder *early = ts_rec_new(), *late = ts_rec_new();
    pair_start(&p);
    ac_ref *e = recorder(p.sys[0], early);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], e), AC_OK);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], e), AC_EEXIST);
    assert_non_null(strstr(ac_last_error(), "subscribed already"));
    assert_true(ts_wait_until(both_up, p.cluster[0], WAIT_S));
    char up_self[96], up_other[96], down_other[96];
    snprintf(up_self, sizeof up_self, "up %s", p.addr[0]);
    snprintf(up_other, sizeof up_other, "up %s", p.addr[1]);
    snprintf(down_other, sizeof down_other, "down %s", p.addr[1]);
    assert_true(ts_rec_wait_for(early, up_other, WAIT_S));
    /* Subscribed first: itself Up at once, the other as it came. */
    char first[96];
    ts_rec_get(early, 0, first, sizeof first);
    assert_string_equal(first, up_self);

    /* Subscribed late: the current members as Up, sorted by address. */
    ac_ref *l = recorder(p.sys[0], late);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], l), AC_OK);
    assert_true(ts_rec_wait_count(late, 2, WAIT_S));
    char a[96], b[96];
    ts_rec_get(late, 0, a, sizeof a);
    ts_rec_get(late, 1, b, sizeof b);
    bool self_first = strcmp(p.addr[0], p.addr[1]) < 0;
    assert_string_equal(a, self_first ? up_self : up_other);
    assert_string_equal(b, self_first ? up_other : up_self);

    /* Then changes, in order, to both. */
    ac_system_terminate(p.sys[1]);
    p.sys[1] = NULL;
    assert_true(ts_rec_wait_for(early, down_other, WAIT_S));
    assert_true(ts_rec_wait_for(late, down_other, WAIT_S));
    assert_int_equal(ts_rec_index_of(late, down_other), 2);
    assert_true(ts_rec_index_of(early, down_other) > ts_rec_index_of(early, up_other));

    ac_member_list list;
    assert_int_equal(ac_cluster_members(p.cluster[0], &list), AC_OK);
    assert_int_equal(list.count, 1);
    assert_true(list.members[0].self);
    ac_member_list_free(&list);
    ac_ref_release(e);
    ac_ref_release(l);
    pair_end(&p);
    ts_rec_free(early);
    ts_rec_free(late);
}

/* ---- what a subscriber finds when its event comes ----------------------- */

/* Records "<kind> <address> listed|missing": whether the member list,
 * read in the subscriber's turn, already shows the change it is told. */
static void checker_receive(ac_ctx *ctx, ac_msg *msg)
{
    ts_recorder *rec = ac_ctx_user_data(ctx);
    const ac_member_event *ev = ac_member_event_get(msg);
    if (!ev || ev->kind == AC_MEMBER_EVENT_UNREACHABLE || ev->kind == AC_MEMBER_EVENT_REACHABLE)
        return;
    ac_member_list list;
    bool listed = false;
    if (ac_cluster_members(ac_system_cluster(ac_ctx_system(ctx)), &list) == AC_OK) {
        for (size_t i = 0; i < list.count; i++)
            listed = listed || strcmp(list.members[i].address, ev->member.address) == 0;
        ac_member_list_free(&list);
    }
    bool up = ev->kind == AC_MEMBER_EVENT_UP;
    ts_rec_add(rec, "%s %s %s", kind_name(ev->kind), ev->member.address,
               listed == up ? "listed" : "missing");
}
static const ac_actor_def checker_def = {.name = "Checker", .receive = checker_receive};

/* The list is changed before the event is told: a member told Up is
 * listed, one told Down is not, whatever the threads' timing. */
static void test_an_event_finds_the_list_changed(void **state)
{
    (void)state;
    pair p;
    ts_recorder *rec = ts_rec_new();
    pair_start(&p);
    ac_ref *s = ac_spawn(p.sys[0], ac_props_new(&checker_def, rec), NULL);
    assert_non_null(s);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], s), AC_OK);
    char up_other[128], down_other[128];
    snprintf(up_other, sizeof up_other, "up %s listed", p.addr[1]);
    snprintf(down_other, sizeof down_other, "down %s listed", p.addr[1]);
    bool up = ts_rec_wait_count(rec, 2, WAIT_S);
    ac_system_terminate(p.sys[1]);
    p.sys[1] = NULL;
    bool down = up && ts_rec_wait_count(rec, 3, WAIT_S);
    if (!up || !down || ts_rec_index_of(rec, up_other) < 0 ||
        ts_rec_index_of(rec, down_other) < 0) {
        ts_rec_dump(rec, "events and the list");
        fail_msg("a subscriber found the list behind its events");
    }
    ac_ref_release(s);
    pair_end(&p);
    ts_rec_free(rec);
}

/* A stopped subscriber is dropped (subscribing it again is no longer
 * "subscribed already"); an unsubscribed one hears nothing more. */
static void test_unsubscribe(void **state)
{
    (void)state;
    pair p;
    ts_recorder *rec = ts_rec_new(), *quiet = ts_rec_new();
    pair_start(&p);
    assert_true(ts_wait_until(both_up, p.cluster[0], WAIT_S));
    ac_ref *s = recorder(p.sys[0], rec);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], s), AC_OK);
    assert_true(ts_rec_wait_count(rec, 2, WAIT_S));
    assert_int_equal(ac_stop(s), AC_OK);
    double end = ts_now() + WAIT_S;
    ac_status st;
    while ((st = ac_cluster_subscribe(p.cluster[0], s)) == AC_EEXIST && ts_now() < end)
        ts_sleep_ms(10);
    assert_int_equal(st, AC_OK);

    ac_ref *q = recorder(p.sys[0], quiet);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], q), AC_OK);
    assert_true(ts_rec_wait_count(quiet, 2, WAIT_S));
    assert_int_equal(ac_cluster_unsubscribe(p.cluster[0], q), AC_OK);
    assert_int_equal(ac_cluster_unsubscribe(p.cluster[0], q), AC_ENOTFOUND);
    assert_non_null(strstr(ac_last_error(), "not subscribed"));
    /* A Down after the unsubscribe reaches the one still subscribed, not
     * this one: a subscriber added after it is the witness. */
    ts_recorder *witness = ts_rec_new();
    ac_ref *w = recorder(p.sys[0], witness);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], w), AC_OK);
    ac_system_terminate(p.sys[1]);
    p.sys[1] = NULL;
    char down_other[96];
    snprintf(down_other, sizeof down_other, "down %s", p.addr[1]);
    assert_true(ts_rec_wait_for(witness, down_other, WAIT_S));
    assert_int_equal(ts_rec_count_of(quiet, down_other), 0);
    ac_ref_release(s);
    ac_ref_release(q);
    ac_ref_release(w);
    pair_end(&p);
    ts_rec_free(rec);
    ts_rec_free(quiet);
    ts_rec_free(witness);
}

static void test_members_roles_status(void **state)
{
    (void)state;
    pair p;
    pair_start(&p);
    assert_true(ts_wait_until(both_up, p.cluster[0], WAIT_S));
    assert_true(ts_wait_until(both_up, p.cluster[1], WAIT_S));
    ac_member_list list;
    assert_int_equal(ac_cluster_members(p.cluster[1], &list), AC_OK);
    assert_int_equal(list.count, 2);
    assert_true(strcmp(list.members[0].address, list.members[1].address) < 0);
    for (size_t i = 0; i < 2; i++) {
        const ac_member *m = &list.members[i];
        bool is_beta = strcmp(m->address, p.addr[1]) == 0;
        assert_int_equal(m->self, is_beta);
        assert_int_equal(m->status, AC_MEMBER_UP);
        assert_string_equal(m->system, is_beta ? "beta" : "alpha");
        assert_int_equal(m->incarnation, ac_node_incarnation(p.node[is_beta ? 1 : 0]));
        assert_int_equal(m->roles_count, 2);
        assert_true(ac_member_has_role(m, is_beta ? "db" : "web"));
        assert_false(ac_member_has_role(m, is_beta ? "web" : "db"));
    }
    assert_false(ac_member_has_role(NULL, "db"));
    assert_false(ac_member_has_role(&list.members[0], NULL));
    ac_member_list_free(&list);
    assert_null(list.members);
    ac_member_list_free(&list);
    ac_member_list_free(NULL);

    ac_cluster_status st;
    assert_int_equal(ac_cluster_status_get(p.cluster[0], &st), AC_OK);
    assert_int_equal(st.state, AC_CLUSTER_JOINED);
    assert_int_equal(st.members_up, 2);
    assert_int_equal(st.members_unreachable, 0);

    /* Leaving: left, and every call but the status refused. */
    assert_int_equal(ac_cluster_leave(p.cluster[0]), AC_OK);
    assert_int_equal(ac_cluster_status_get(p.cluster[0], &st), AC_OK);
    assert_int_equal(st.state, AC_CLUSTER_LEFT);
    assert_int_equal(ac_cluster_leave(p.cluster[0]), AC_ESTOPPED);
    assert_non_null(strstr(ac_last_error(), "has left"));
    assert_int_equal(ac_cluster_members(p.cluster[0], &list), AC_ESTOPPED);
    assert_null(list.members);
    ts_recorder *rec = ts_rec_new();
    ac_ref *r = recorder(p.sys[0], rec);
    assert_int_equal(ac_cluster_subscribe(p.cluster[0], r), AC_ESTOPPED);
    assert_int_equal(ac_cluster_unsubscribe(p.cluster[0], r), AC_ESTOPPED);
    /* It stays the system's, left; joining again is refused. */
    assert_ptr_equal(ac_system_cluster(p.sys[0]), p.cluster[0]);
    const char *seeds[] = {p.addr[1]};
    ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = 1};
    ac_cluster_options o = {.name = "pair", .static_options = &seed_opts};
    assert_null(ac_cluster_join(p.sys[0], &o));
    assert_int_equal(ac_last_status(), AC_EEXIST);
    /* The other sees it Down. */
    double end = ts_now() + WAIT_S;
    while (ts_now() < end && ac_cluster_status_get(p.cluster[1], &st) == AC_OK &&
           st.members_up != 1)
        ts_sleep_ms(10);
    assert_int_equal(st.members_up, 1);
    ac_ref_release(r);
    pair_end(&p);
    ts_rec_free(rec);
}

/* The largest card there is (16 roles of 64 characters, a system name of
 * 64) travels whole in a HELLO and a beat. */
static void test_big_card(void **state)
{
    (void)state;
    static char roles_text[16][65];
    const char *roles[16];
    for (int i = 0; i < 16; i++) {
        memset(roles_text[i], 'a' + i, 64);
        roles_text[i][64] = '\0';
        roles[i] = roles_text[i];
    }
    char name[65];
    memset(name, 's', 64);
    name[64] = '\0';
    ac_system *sys[2];
    ac_node *node[2];
    ac_cluster *c[2];
    for (int i = 0; i < 2; i++) {
        ac_system_options so = {.workers = 1};
        sys[i] = ac_system_create(i ? name : "small", &so);
        assert_non_null(sys[i]);
        node[i] = start_node(sys[i]);
    }
    for (int i = 0; i < 2; i++) {
        const char *seeds[] = {ac_node_address(node[1 - i])};
        ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = 1};
        ac_cluster_options o = {.name = name, .roles = i ? roles : NULL, .roles_count = i ? 16 : 0,
                                .static_options = &seed_opts};
        c[i] = ac_cluster_join(sys[i], &o);
        assert_non_null(c[i]);
    }
    assert_true(ts_wait_until(both_up, c[0], WAIT_S));
    ac_member_list list;
    assert_int_equal(ac_cluster_members(c[0], &list), AC_OK);
    assert_int_equal(list.count, 2);
    for (size_t i = 0; i < 2; i++) {
        if (list.members[i].self)
            continue;
        assert_string_equal(list.members[i].system, name);
        assert_int_equal(list.members[i].roles_count, 16);
        for (int r = 0; r < 16; r++)
            assert_string_equal(list.members[i].roles[r], roles_text[r]);
    }
    ac_member_list_free(&list);
    for (int i = 0; i < 2; i++)
        ac_system_terminate(sys[i]);
}

/* ---- bad input ------------------------------------------------------------ */

static ac_system *bad_sys;

static void expect_refused(const ac_cluster_options *o, ac_status status, const char *needle)
{
    assert_null(ac_cluster_join(bad_sys, o));
    assert_int_equal(ac_last_status(), status);
    if (!strstr(ac_last_error(), needle))
        fail_msg("\"%s\" does not name %s", ac_last_error(), needle);
}

static void test_bad_options(void **state)
{
    (void)state;
    ac_system_options so = {.workers = 1};
    bad_sys = ac_system_create("bad", &so);
    assert_non_null(bad_sys);
    const ac_cluster_options ok = {.name = "c"};
    /* No node yet. */
    expect_refused(&ok, AC_ENOTFOUND, "has no node");
    start_node(bad_sys);

    assert_null(ac_cluster_join(NULL, &ok));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "system"));
    expect_refused(NULL, AC_EINVAL, "options");

    ac_cluster_options o = ok;
    const char *long_name = "a123456789b123456789c123456789d123456789e123456789f123456789g12345";
    const char *names[] = {NULL, "", "a b", "a/b", "ü", long_name};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        o.name = names[i];
        expect_refused(&o, AC_EINVAL, "options.name");
    }
    o = ok;
    o.roles_count = 1;
    expect_refused(&o, AC_EINVAL, "options.roles");
    const char *bad_roles[] = {"ok", "not ok"};
    o.roles = bad_roles;
    o.roles_count = 2;
    expect_refused(&o, AC_EINVAL, "options.roles[1]");
    const char *twice[] = {"r", "r"};
    o.roles = twice;
    expect_refused(&o, AC_EINVAL, "twice");
    const char *many[17];
    for (int i = 0; i < 17; i++)
        many[i] = "r";
    o.roles = many;
    o.roles_count = 17;
    expect_refused(&o, AC_EINVAL, "options.roles_count");

    o = ok;
    ac_cluster_static_options seed_opts = {0};
    o.static_options = &seed_opts;
    const char *seeds[] = {"host:0", "host", ":80", "h:65536", "h:12x", "a b:1", "h:1/x", NULL};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        seed_opts.seeds = &seeds[i];
        seed_opts.seeds_count = 1;
        expect_refused(&o, AC_EINVAL, "options.static_options.seeds[0]");
    }
    seed_opts.seeds = NULL;
    expect_refused(&o, AC_EINVAL, "options.static_options.seeds");

    o = ok;
    ac_cluster_etcd_options eo = {0};
    o.etcd_options = &eo;
#ifdef ACTORC_TEST_HAVE_ETCD
    expect_refused(&o, AC_EINVAL, "options.etcd_options.endpoints");
    const char *endpoints[] = {"ftp://x:1", "http://", "http://h:1/path", "127.0.0.1:2379", NULL};
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++) {
        eo.endpoints = &endpoints[i];
        eo.endpoints_count = 1;
        expect_refused(&o, AC_EINVAL, "options.etcd_options.endpoints[0]");
    }
    const char *good_endpoint[] = {"http://127.0.0.1:1"};
    eo.endpoints = good_endpoint;
    const char *prefixes[] = {"actorc", "/", "/a/", "/a//b", "/a b"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        eo.prefix = prefixes[i];
        expect_refused(&o, AC_EINVAL, "options.etcd_options.prefix");
    }
    eo.prefix = NULL;
    const int ttls[] = {1, -1, 3601};
    for (size_t i = 0; i < sizeof ttls / sizeof ttls[0]; i++) {
        eo.lease_ttl_s = ttls[i];
        expect_refused(&o, AC_EINVAL, "options.etcd_options.lease_ttl_s");
    }
    eo.lease_ttl_s = 0;
    /* One provider at a time. */
    o.static_options = &seed_opts;
    expect_refused(&o, AC_EINVAL, "choose one provider");
#else
    expect_refused(&o, AC_EINVAL, "built without etcd");
#endif

    o = ok;
    o.retry_initial_ms = -1;
    expect_refused(&o, AC_EINVAL, "options.retry_initial_ms");
    o.retry_initial_ms = 0;
    o.retry_max_ms = -5;
    expect_refused(&o, AC_EINVAL, "options.retry_max_ms");
    o.retry_initial_ms = 500;
    o.retry_max_ms = 100;
    expect_refused(&o, AC_EINVAL, "options.retry_max_ms");

    /* NULL handles. */
    ac_cluster_status st;
    ac_member_list list;
    assert_int_equal(ac_cluster_leave(NULL), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "cluster is NULL"));
    assert_int_equal(ac_cluster_members(NULL, &list), AC_EINVAL);
    assert_int_equal(ac_cluster_status_get(NULL, &st), AC_EINVAL);
    assert_int_equal(ac_cluster_subscribe(NULL, NULL), AC_EINVAL);
    assert_int_equal(ac_cluster_unsubscribe(NULL, NULL), AC_EINVAL);
    assert_null(ac_system_cluster(NULL));
    assert_null(ac_system_cluster(bad_sys));
    assert_null(ac_member_event_get(NULL));
    ac_msg *s = ac_msg_str_new("not an event");
    assert_null(ac_member_event_get(s));
    ac_msg_release(s);

    /* A joined system: its cluster, NULL arguments, a second join. */
    ac_cluster *c = ac_cluster_join(bad_sys, &ok);
    assert_non_null(c);
    assert_int_equal(ac_cluster_members(c, NULL), AC_EINVAL);
    assert_int_equal(ac_cluster_status_get(c, NULL), AC_EINVAL);
    assert_int_equal(ac_cluster_subscribe(c, NULL), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "subscriber is NULL"));
    assert_int_equal(ac_cluster_unsubscribe(c, NULL), AC_EINVAL);
    char remote[128];
    snprintf(remote, sizeof remote, "actorc://other@127.0.0.1:1/user/x");
    ac_ref *far = ac_node_resolve(ac_system_node(bad_sys), remote);
    assert_non_null(far);
    assert_int_equal(ac_cluster_subscribe(c, far), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "another node"));
    ac_ref_release(far);
    expect_refused(&ok, AC_EEXIST, "joined a cluster already");
    /* Alone, with no seeds: joined, itself the only member. */
    assert_int_equal(ac_cluster_status_get(c, &st), AC_OK);
    assert_int_equal(st.state, AC_CLUSTER_JOINED);
    assert_int_equal(ac_cluster_members(c, &list), AC_OK);
    assert_int_equal(list.count, 1);
    assert_true(list.members[0].self);
    ac_member_list_free(&list);
    ac_system_terminate(bad_sys);

    /* A system whose node has stopped. */
    bad_sys = ac_system_create("bad2", &so);
    ac_node *n = start_node(bad_sys);
    assert_int_equal(ac_node_stop(n), AC_OK);
    expect_refused(&ok, AC_ESTOPPED, "stopped");
    ac_system_terminate(bad_sys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_an_event_finds_the_list_changed),
        cmocka_unit_test(test_unsubscribe),
        cmocka_unit_test(test_members_roles_status),
        cmocka_unit_test(test_big_card),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
