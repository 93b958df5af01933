/*
 * The DNS provider's lookups (dns_resolve.h) against a real dnsmasq on
 * 127.0.0.1: an SRV record gives each target's addresses at the
 * record's port, an A name gives its addresses at the port asked; a name
 * or a target without records is an answer without addresses; records
 * changed under it (hosts file and SIGHUP, conf and a restart) are seen;
 * a server that does not answer is a failure, not an empty answer; a
 * lookup under way is cancelled at once; names and servers are checked.
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
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/dns_resolve.h"
#include "dnsmasq_harness.h"
#include "test_support.h"

#define WAIT_S 10.0

static dh_dnsmasq *dns;

static const char *const SRV[] = {
    "_two._tcp." DH_DOMAIN ",n0." DH_DOMAIN ",7101",
    "_two._tcp." DH_DOMAIN ",n1." DH_DOMAIN ",7102",
    "_lost._tcp." DH_DOMAIN ",gone." DH_DOMAIN ",7104",
};
static const char HOSTS[] = "127.0.0.1 n0." DH_DOMAIN "\n127.0.0.1 n1." DH_DOMAIN "\n"
                            "127.0.0.1 a." DH_DOMAIN "\n";

static int group_setup(void **state)
{
    (void)state;
    dns = dh_start(SRV, 3, HOSTS);
    return dns ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    dh_destroy(dns);
    dns = NULL;
    return 0;
}

/* Look up at `server` with a fresh resolver. */
static ac__dns_result lookup_at(const char *server, const char *name, int port, int timeout_ms)
{
    const char *servers[] = {server};
    ac__dns *d = ac__dns_open(servers, 1, timeout_ms);
    assert_non_null(d);
    ac__dns_result r;
    assert_int_equal(ac__dns_resolve(d, name, port, &r), AC_OK);
    ac__dns_close(d);
    return r;
}

static void expect_found(const char *name, int port, const char *want)
{
    char buf[512];
    const char *got = dh_lookup(dns, name, port, buf, sizeof buf);
    assert_non_null(got);
    assert_string_equal(got, want);
}

static void test_srv_targets_at_their_ports(void **state)
{
    (void)state;
    expect_found("_two._tcp." DH_DOMAIN, 0, "127.0.0.1:7101 127.0.0.1:7102");
}

static void test_a_records_at_the_port(void **state)
{
    (void)state;
    expect_found("a." DH_DOMAIN, 9000, "127.0.0.1:9000");
    expect_found("a." DH_DOMAIN ".", 9001, "127.0.0.1:9001");
}

static void test_no_records_is_an_answer(void **state)
{
    (void)state;
    ac__dns_result r = lookup_at(dns->server, "_none._tcp." DH_DOMAIN, 0, 500);
    assert_int_equal(r.outcome, AC__DNS_NONE);
    assert_int_equal(r.count, 0);
    assert_non_null(strstr(r.why, "no such name"));
    ac__dns_result_free(&r);
    /* The SRV record is there, its target is not. */
    r = lookup_at(dns->server, "_lost._tcp." DH_DOMAIN, 0, 500);
    assert_int_equal(r.outcome, AC__DNS_NONE);
    assert_non_null(strstr(r.why, "gone." DH_DOMAIN));
    ac__dns_result_free(&r);
}

static bool lookup_is(const char *name, int port, const char *want)
{
    char buf[512];
    const char *got = dh_lookup(dns, name, port, buf, sizeof buf);
    return got && strcmp(got, want) == 0;
}

static void test_hosts_reloaded_on_sighup(void **state)
{
    (void)state;
    char more[256];
    snprintf(more, sizeof more, "%s127.0.0.1 b." DH_DOMAIN "\n", HOSTS);
    assert_true(dh_set_hosts(dns, more));
    double end = ts_now() + WAIT_S;
    while (!lookup_is("b." DH_DOMAIN, 7000, "127.0.0.1:7000") && ts_now() < end)
        ts_sleep_ms(20);
    assert_true(lookup_is("b." DH_DOMAIN, 7000, "127.0.0.1:7000"));
    assert_true(dh_set_hosts(dns, HOSTS));
    end = ts_now() + WAIT_S;
    while (!lookup_is("b." DH_DOMAIN, 7000, "") && ts_now() < end)
        ts_sleep_ms(20);
    assert_true(lookup_is("b." DH_DOMAIN, 7000, ""));
}

static void test_srv_changed_by_a_restart(void **state)
{
    (void)state;
    int port = dns->port;
    const char *more[] = {SRV[0], SRV[1], SRV[2], "_two._tcp." DH_DOMAIN ",a." DH_DOMAIN ",7100"};
    assert_true(dh_set_srv(dns, more, 4));
    assert_int_equal(dns->port, port);
    expect_found("_two._tcp." DH_DOMAIN, 0, "127.0.0.1:7100 127.0.0.1:7101 127.0.0.1:7102");
    assert_true(dh_set_srv(dns, SRV, 3));
    expect_found("_two._tcp." DH_DOMAIN, 0, "127.0.0.1:7101 127.0.0.1:7102");
}

static void test_no_server_is_a_failure(void **state)
{
    (void)state;
    /* A port where nothing listens: refused, so no answer. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char server[32];
    snprintf(server, sizeof server, "127.0.0.1:%d", ntohs(a.sin_port));
    close(fd);
    double start = ts_now();
    ac__dns_result r = lookup_at(server, "_two._tcp." DH_DOMAIN, 0, 200);
    assert_int_equal(r.outcome, AC__DNS_FAILED);
    assert_int_equal(r.count, 0);
    assert_true(strlen(r.why) > 0);
    assert_true(ts_now() - start < WAIT_S);
    ac__dns_result_free(&r);
}

/* ---- cancelling ---------------------------------------------------------- */

typedef struct cancel_run {
    ac__dns *d;
    ac__dns_result r;
    double took;
} cancel_run;

static void *resolve_thread(void *arg)
{
    cancel_run *run = arg;
    double start = ts_now();
    ac__dns_resolve(run->d, "_two._tcp." DH_DOMAIN, 0, &run->r);
    run->took = ts_now() - start;
    return NULL;
}

static void test_cancel_ends_a_lookup_at_once(void **state)
{
    (void)state;
    /* A server that never answers: a socket that is bound and not read. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char server[32];
    snprintf(server, sizeof server, "127.0.0.1:%d", ntohs(a.sin_port));
    const char *servers[] = {server};
    cancel_run run = {.d = ac__dns_open(servers, 1, 10000)};
    assert_non_null(run.d);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, resolve_thread, &run), 0);
    ts_sleep_ms(100);
    ac__dns_cancel(run.d);
    pthread_join(t, NULL);
    assert_int_equal(run.r.outcome, AC__DNS_CANCELLED);
    assert_true(run.took < 5.0);
    ac__dns_result_free(&run.r);
    /* Cancelled for good. */
    assert_int_equal(ac__dns_resolve(run.d, "a." DH_DOMAIN, 1, &run.r), AC_OK);
    assert_int_equal(run.r.outcome, AC__DNS_CANCELLED);
    ac__dns_close(run.d);
    close(fd);
}

static void test_names_and_servers(void **state)
{
    (void)state;
    const char *good[] = {"a", "a.b", "_actorc._tcp.shop.example.org", "a-b.c_d.", "x1.y2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(ac__dns_name_ok(good[i]));
    char long_label[80], long_name[300];
    memset(long_label, 'a', 64);
    long_label[64] = '\0';
    memset(long_name, 'a', 259); /* "a.a.a...a", 259 characters */
    for (int i = 1; i < 258; i += 2)
        long_name[i] = '.';
    long_name[259] = '\0';
    const char *bad[] = {NULL, "", ".", "a..b", ".a", "a b", "a/b", "ü.test", "a.b..",
                         long_label, long_name};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(ac__dns_name_ok(bad[i]));
    const char *good_servers[] = {"127.0.0.1", "127.0.0.1:53", "10.1.2.3:65535"};
    for (size_t i = 0; i < sizeof good_servers / sizeof good_servers[0]; i++)
        assert_true(ac__dns_server_ok(good_servers[i]));
    const char *bad_servers[] = {"", "localhost", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                                 "127.0.0.1:5x", "::1", "[::1]:53", "1.2.3:53", ":53"};
    for (size_t i = 0; i < sizeof bad_servers / sizeof bad_servers[0]; i++)
        assert_false(ac__dns_server_ok(bad_servers[i]));
}

int main(void)
{
    if (dh_skip("dns.resolve"))
        return TS_SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srv_targets_at_their_ports),
        cmocka_unit_test(test_a_records_at_the_port),
        cmocka_unit_test(test_no_records_is_an_answer),
        cmocka_unit_test(test_hosts_reloaded_on_sighup),
        cmocka_unit_test(test_srv_changed_by_a_restart),
        cmocka_unit_test(test_no_server_is_a_failure),
        cmocka_unit_test(test_cancel_ends_a_lookup_at_once),
        cmocka_unit_test(test_names_and_servers),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
