/*
 * Members from DNS, through the cluster API, with real nodes in this
 * process (one system and node each, on 127.0.0.1) and a real dnsmasq:
 *
 *   SRV records   a node is a member while a record names it: the nodes
 *                 listed see each other Up; one not listed sees them but
 *                 is not seen; a record added is an Up everywhere, a
 *                 record dropped a Down (its connection stays) and a
 *                 record back an Up again. Records change by restarting
 *                 dnsmasq on its port (it reads SRV lines only at start).
 *   A records     a name and a port; the hosts file changed and SIGHUP:
 *                 the same Up and Down. With dnsmasq gone the cluster
 *                 says RETRYING and keeps its members; back, JOINED.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "dnsmasq_harness.h"
#include "test_support.h"

#define WAIT_S 20.0
#define INTERVAL_MS 100
#define N 3
#define SRV_NAME "_members._tcp." DH_DOMAIN

static dh_dnsmasq *dns;

static int group_setup(void **state)
{
    (void)state;
    dns = dh_start(NULL, 0, "127.0.0.1 n0." DH_DOMAIN "\n127.0.0.1 n1." DH_DOMAIN "\n"
                            "127.0.0.1 n2." DH_DOMAIN "\n");
    return dns ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    dh_destroy(dns);
    dns = NULL;
    return 0;
}

/* ---- nodes and what they hear ------------------------------------------- */

static void recorder_receive(ac_ctx *ctx, ac_msg *msg)
{
    static const char *const kinds[] = {"up", "unreachable", "reachable", "down"};
    ts_recorder *rec = ac_ctx_user_data(ctx);
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev && (ev->kind == AC_MEMBER_EVENT_UP || ev->kind == AC_MEMBER_EVENT_DOWN))
        ts_rec_add(rec, "%s %s", kinds[ev->kind], ev->member.address);
}
static const ac_actor_def recorder_def = {.name = "Recorder", .receive = recorder_receive};

typedef struct member {
    ac_system *sys;
    ac_cluster *cluster;
    ts_recorder *rec;
    char address[64];
    int port;
} member;

static void member_start(member *m, const char *name)
{
    ac_system_options so = {.workers = 2, .log_level = AC_LOG_ERROR};
    m->sys = ac_system_create(name, &so);
    assert_non_null(m->sys);
    ac_node_options no = {.bind = "tcp://127.0.0.1:0"};
    ac_node *node = ac_node_start(m->sys, &no);
    assert_non_null(node);
    snprintf(m->address, sizeof m->address, "%s", ac_node_address(node));
    m->port = atoi(strrchr(m->address, ':') + 1);
    m->rec = ts_rec_new();
}

static void member_join(member *m, const char *dns_name, int port)
{
    const char *servers[] = {dns->server};
    ac_cluster_dns_options d = {.name = dns_name, .port = port, .servers = servers,
                                .servers_count = 1, .interval_ms = INTERVAL_MS};
    ac_cluster_options o = {.name = "dnsc", .dns_options = &d, .retry_initial_ms = 50,
                            .retry_max_ms = 500};
    m->cluster = ac_cluster_join(m->sys, &o);
    assert_non_null(m->cluster);
    ac_ref *r = ac_spawn(m->sys, ac_props_new(&recorder_def, m->rec), NULL);
    assert_non_null(r);
    assert_int_equal(ac_cluster_subscribe(m->cluster, r), AC_OK);
    ac_ref_release(r);
}

static void member_end(member *m)
{
    if (m->sys)
        ac_system_terminate(m->sys);
    ts_rec_free(m->rec);
    *m = (member){0};
}

static void expect_event(member *m, const char *kind, const member *about, size_t count)
{
    char label[96];
    snprintf(label, sizeof label, "%s %s", kind, about->address);
    if (!ts_rec_wait_count_of(m->rec, label, count, WAIT_S)) {
        ts_rec_dump(m->rec, m->address);
        fail_msg("%s did not hear \"%s\" %zu times", m->address, label, count);
    }
}

static size_t heard(member *m, const char *kind, const member *about)
{
    char label[96];
    snprintf(label, sizeof label, "%s %s", kind, about->address);
    return ts_rec_count_of(m->rec, label);
}

/* SRV records for the members whose bit is set in `listed`. */
static void list_srv(const member *ms, unsigned listed)
{
    char lines[N][200];
    const char *srv[N];
    size_t n = 0;
    for (int i = 0; i < N; i++)
        if (listed & (1u << i)) {
            snprintf(lines[n], sizeof lines[n], SRV_NAME ",n%d." DH_DOMAIN ",%d", i, ms[i].port);
            srv[n] = lines[n];
            n++;
        }
    assert_true(dh_set_srv(dns, srv, n));
}

static void expect_members(member *m, size_t count)
{
    double end = ts_now() + WAIT_S;
    ac_cluster_status st = {0};
    while (ts_now() < end && ac_cluster_status_get(m->cluster, &st) == AC_OK &&
           st.members_up != count)
        ts_sleep_ms(10);
    assert_int_equal(st.members_up, count);
}

/* ---- SRV ------------------------------------------------------------------ */

static void test_srv_records_make_the_members(void **state)
{
    (void)state;
    member m[N] = {0};
    const char *names[N] = {"n0", "n1", "n2"};
    for (int i = 0; i < N; i++)
        member_start(&m[i], names[i]);
    list_srv(m, 0x3); /* n0 and n1 */
    for (int i = 0; i < N; i++)
        member_join(&m[i], SRV_NAME, 0);

    /* The listed see each other; n2 sees them, they do not see n2. */
    expect_event(&m[0], "up", &m[1], 1);
    expect_event(&m[1], "up", &m[0], 1);
    expect_event(&m[2], "up", &m[0], 1);
    expect_event(&m[2], "up", &m[1], 1);
    expect_members(&m[0], 2);
    assert_int_equal(heard(&m[0], "up", &m[2]), 0);
    assert_int_equal(heard(&m[1], "up", &m[2]), 0);

    /* n2's record added: Up on both. */
    list_srv(m, 0x7);
    expect_event(&m[0], "up", &m[2], 1);
    expect_event(&m[1], "up", &m[2], 1);
    expect_members(&m[0], 3);

    /* n1's record dropped: Down on the others, n1 still running. */
    list_srv(m, 0x5);
    expect_event(&m[0], "down", &m[1], 1);
    expect_event(&m[2], "down", &m[1], 1);
    expect_members(&m[0], 2);
    ac_member_list list;
    assert_int_equal(ac_cluster_members(m[0].cluster, &list), AC_OK);
    assert_int_equal(list.count, 2);
    for (size_t i = 0; i < list.count; i++)
        assert_string_not_equal(list.members[i].address, m[1].address);
    ac_member_list_free(&list);

    /* Back: Up again, the same incarnation. */
    list_srv(m, 0x7);
    expect_event(&m[0], "up", &m[1], 2);
    expect_event(&m[2], "up", &m[1], 2);
    expect_members(&m[0], 3);

    /* A member that leaves is Down at once, whatever DNS says. */
    assert_int_equal(ac_cluster_leave(m[2].cluster), AC_OK);
    expect_event(&m[0], "down", &m[2], 1);
    expect_event(&m[1], "down", &m[2], 1);
    for (int i = 0; i < N; i++)
        member_end(&m[i]);
}

/* ---- A records ---------------------------------------------------------------- */

static ac_cluster_state state_of(ac_cluster *c)
{
    ac_cluster_status st;
    assert_int_equal(ac_cluster_status_get(c, &st), AC_OK);
    return st.state;
}

static bool state_is(ac_cluster *c, ac_cluster_state want)
{
    double end = ts_now() + WAIT_S;
    while (ts_now() < end && state_of(c) != want)
        ts_sleep_ms(10);
    return state_of(c) == want;
}

static void test_a_records_and_a_lost_server(void **state)
{
    (void)state;
    member watcher = {0}, target = {0};
    member_start(&watcher, "watcher");
    member_start(&target, "target");
    member_join(&watcher, "t." DH_DOMAIN, target.port);
    member_join(&target, "t." DH_DOMAIN, target.port);
    assert_true(state_is(watcher.cluster, AC_CLUSTER_JOINING)); /* no such name yet */

    const char *base = "127.0.0.1 n0." DH_DOMAIN "\n";
    char hosts[256];
    snprintf(hosts, sizeof hosts, "%s127.0.0.1 t." DH_DOMAIN "\n", base);
    assert_true(dh_set_hosts(dns, hosts));
    expect_event(&watcher, "up", &target, 1);
    assert_true(state_is(watcher.cluster, AC_CLUSTER_JOINED));

    /* DNS gone: RETRYING, the members kept. */
    dh_stop(dns);
    assert_true(state_is(watcher.cluster, AC_CLUSTER_RETRYING));
    expect_members(&watcher, 2);
    assert_int_equal(heard(&watcher, "down", &target), 0);
    assert_true(dh_run(dns));
    assert_true(state_is(watcher.cluster, AC_CLUSTER_JOINED));

    /* The record dropped: Down. */
    assert_true(dh_set_hosts(dns, base));
    expect_event(&watcher, "down", &target, 1);
    expect_members(&watcher, 1);
    assert_int_equal(heard(&target, "up", &watcher), 0); /* never listed */
    member_end(&watcher);
    member_end(&target);
}

int main(void)
{
    if (dh_skip("dns.members"))
        return TS_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srv_records_make_the_members),
        cmocka_unit_test(test_a_records_and_a_lost_server),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
