/*
 * The DNS provider's side of the cluster API in one process, against a
 * real dnsmasq on 127.0.0.1: every bad option refused with AC_EINVAL and
 * a message naming it; a name without records, or a server that does not
 * answer, joins (the cluster retries) and says why in its status rather
 * than failing or hanging; leaving and terminating end its lookups; a
 * stopped node is refused. Sanitizer builds check that none of it leaks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "dnsmasq_harness.h"
#include "test_support.h"

#define WAIT_S 20.0

static dh_dnsmasq *dns;

static int group_setup(void **state)
{
    (void)state;
    static const char *const srv[] = {"_one._tcp." DH_DOMAIN ",n0." DH_DOMAIN ",7101"};
    dns = dh_start(srv, 1, "127.0.0.1 n0." DH_DOMAIN "\n");
    return dns ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    dh_destroy(dns);
    dns = NULL;
    return 0;
}

static ac_system *system_with_node(const char *name)
{
    ac_system_options so = {.workers = 1, .log_level = AC_LOG_ERROR};
    ac_system *sys = ac_system_create(name, &so);
    assert_non_null(sys);
    ac_node_options no = {.bind = "tcp://127.0.0.1:0"};
    assert_non_null(ac_node_start(sys, &no));
    return sys;
}

static void expect_refused(ac_system *sys, const ac_cluster_options *o, const char *needle)
{
    assert_null(ac_cluster_join(sys, o));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    if (!strstr(ac_last_error(), needle))
        fail_msg("\"%s\" does not name %s", ac_last_error(), needle);
}

static void test_bad_options(void **state)
{
    (void)state;
    ac_system *sys = system_with_node("bad");
    const char *servers[] = {dns->server};
    ac_cluster_dns_options d = {.name = "_one._tcp." DH_DOMAIN, .servers = servers,
                                .servers_count = 1};
    ac_cluster_options o = {.name = "c", .dns_options = &d};

    const char *names[] = {NULL, "", "a..b", "a b", "a/b", ".", "a.b\n"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        d.name = names[i];
        expect_refused(sys, &o, "options.dns_options.name");
    }
    d.name = "_one._tcp." DH_DOMAIN;
    const int ports[] = {-1, 65536};
    for (size_t i = 0; i < 2; i++) {
        d.port = ports[i];
        expect_refused(sys, &o, "options.dns_options.port");
    }
    d.port = 0;
    const int intervals[] = {-1, 99, 3600001};
    for (size_t i = 0; i < 3; i++) {
        d.interval_ms = intervals[i];
        expect_refused(sys, &o, "options.dns_options.interval_ms");
    }
    d.interval_ms = 0;
    const char *bad_servers[] = {"localhost", "127.0.0.1:0", "::1", NULL};
    for (size_t i = 0; i < 4; i++) {
        d.servers = &bad_servers[i];
        expect_refused(sys, &o, "options.dns_options.servers[0]");
    }
    d.servers = NULL;
    expect_refused(sys, &o, "options.dns_options.servers");
    const char *nine[9];
    for (int i = 0; i < 9; i++)
        nine[i] = "127.0.0.1";
    d.servers = nine;
    d.servers_count = 9;
    expect_refused(sys, &o, "options.dns_options.servers_count");
    d.servers_count = 2;
    expect_refused(sys, &o, "twice");
    d.servers = servers;
    d.servers_count = 1;

    ac_cluster_static_options seeds = {0};
    o.static_options = &seeds;
    expect_refused(sys, &o, "choose one provider");
    o.static_options = NULL;

    /* None of it joined. */
    assert_null(ac_system_cluster(sys));
    ac_system_terminate(sys);
}

/* ---- what the status says ------------------------------------------------ */

typedef struct status_wait {
    ac_cluster *c;
    const char *needle;
} status_wait;

static bool status_says(void *arg)
{
    status_wait *w = arg;
    ac_cluster_status st;
    return ac_cluster_status_get(w->c, &st) == AC_OK && st.attempts_failed > 0 &&
           strstr(st.last_error, w->needle) != NULL;
}

static void expect_status(ac_cluster *c, const char *needle, ac_cluster_state state)
{
    status_wait w = {c, needle};
    bool said = ts_wait_until(status_says, &w, WAIT_S);
    ac_cluster_status st;
    assert_int_equal(ac_cluster_status_get(c, &st), AC_OK);
    if (!said)
        fail_msg("the status says \"%s\", not \"%s\"", st.last_error, needle);
    assert_int_equal(st.state, state);
    assert_int_equal(st.members_up, 1);
    ac_member_list list;
    assert_int_equal(ac_cluster_members(c, &list), AC_OK);
    assert_int_equal(list.count, 1);
    assert_true(list.members[0].self);
    ac_member_list_free(&list);
}

static void test_a_name_without_records_joins_and_says_so(void **state)
{
    (void)state;
    ac_system *sys = system_with_node("nobody");
    const char *servers[] = {dns->server};
    ac_cluster_dns_options d = {.name = "_nobody._tcp." DH_DOMAIN, .servers = servers,
                                .servers_count = 1, .interval_ms = 100};
    ac_cluster_options o = {.name = "c", .dns_options = &d};
    ac_cluster *c = ac_cluster_join(sys, &o);
    assert_non_null(c);
    expect_status(c, "_nobody._tcp." DH_DOMAIN ": no such name", AC_CLUSTER_JOINING);
    assert_int_equal(ac_cluster_leave(c), AC_OK);
    ac_cluster_status st;
    assert_int_equal(ac_cluster_status_get(c, &st), AC_OK);
    assert_int_equal(st.state, AC_CLUSTER_LEFT);
    assert_int_equal(ac_cluster_leave(c), AC_ESTOPPED);
    ac_system_terminate(sys);
}

static void test_a_server_that_does_not_answer_joins_and_says_so(void **state)
{
    (void)state;
    /* A port where nothing answers. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char server[32];
    snprintf(server, sizeof server, "127.0.0.1:%d", ntohs(a.sin_port));
    close(fd);
    ac_system *sys = system_with_node("unanswered");
    const char *servers[] = {server};
    ac_cluster_dns_options d = {.name = "_one._tcp." DH_DOMAIN, .servers = servers,
                                .servers_count = 1, .interval_ms = 100};
    ac_cluster_options o = {.name = "c", .dns_options = &d};
    double start = ts_now();
    ac_cluster *c = ac_cluster_join(sys, &o);
    assert_non_null(c);
    assert_true(ts_now() - start < 1.0); /* join does not wait for DNS */
    expect_status(c, "dns: _one._tcp." DH_DOMAIN, AC_CLUSTER_JOINING);
    /* Terminating ends the lookups, whatever they wait for. */
    start = ts_now();
    ac_system_terminate(sys);
    assert_true(ts_now() - start < 5.0);
}

static void test_a_stopped_node_is_refused(void **state)
{
    (void)state;
    ac_system *sys = system_with_node("stopped");
    assert_int_equal(ac_node_stop(ac_system_node(sys)), AC_OK);
    const char *servers[] = {dns->server};
    ac_cluster_dns_options d = {.name = "_one._tcp." DH_DOMAIN, .servers = servers,
                                .servers_count = 1};
    ac_cluster_options o = {.name = "c", .dns_options = &d};
    assert_null(ac_cluster_join(sys, &o));
    assert_int_equal(ac_last_status(), AC_ESTOPPED);
    assert_non_null(strstr(ac_last_error(), "stopped"));
    ac_system_terminate(sys);
}

int main(void)
{
    if (dh_skip("dns.api"))
        return TS_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_a_name_without_records_joins_and_says_so),
        cmocka_unit_test(test_a_server_that_does_not_answer_joins_and_says_so),
        cmocka_unit_test(test_a_stopped_node_is_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
