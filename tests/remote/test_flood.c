#define _GNU_SOURCE
/*
 * A stranger floods a node with tells whose senders name thousands of
 * different addresses a second. The node (the node program, a process of
 * its own, so that its memory and descriptors can be read) answers each
 * tell's sender, so it must dial them all; its limits keep that bounded.
 * Two well-behaved peers ask it throughout: one connected before the
 * flood, one that first connects in the middle of it. Both are answered
 * within the ask timeout, every time; after each flood the node's memory
 * is back within 20 % of its baseline or has given back at least half of
 * what the flood took, and its descriptors are at theirs.
 * And node processes that come, ask and exit, 200 times over.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "ts_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_proc.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Well-behaved peers ask with a timeout of 2 s: answered within a few ms
 * at p99 here, even mid-flood (the figures are printed). A sanitizer
 * makes the node several times slower, on a machine that may be loaded:
 * there the test is of what the sanitizer sees, with a bound to match. */
#define ASK_TIMEOUT_MS (SANITIZED ? 10000 : 2000)

#define FLOOD_S 4.0
#define FLOOD_MAX 40000

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static int fd_count(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A well-behaved peer asking the node's echo every 10 ms from its own
 * thread, each ask timed; a failure is kept with its reason. */
typedef struct asker {
    ac_system *sys;
    ac_node *node;
    ac_ref *echo;
    pthread_t thread;
    atomic_bool stop;
    atomic_int asks, failures;
    char first_failure[256];
    int64_t lat_us[4096];
    atomic_int nlat;
} asker;

static void *asker_main(void *arg)
{
    asker *a = arg;
    while (!atomic_load(&a->stop)) {
        double t0 = ts_now();
        ac_answer ans;
        ac_status st = ac_ask_wait(a->echo, ac_msg_str_new("hello"), ASK_TIMEOUT_MS, &ans);
        int64_t us = (int64_t)((ts_now() - t0) * 1e6);
        if (st != AC_OK && atomic_fetch_add(&a->failures, 1) == 0)
            snprintf(a->first_failure, sizeof a->first_failure, "%s",
                     ans.error ? ac_error_message(ans.error) : ac_last_error());
        if (st == AC_OK) {
            int k = atomic_load(&a->nlat);
            if (k < (int)(sizeof a->lat_us / sizeof a->lat_us[0])) {
                a->lat_us[k] = us;
                atomic_store(&a->nlat, k + 1);
            }
        }
        ac_answer_release(&ans);
        atomic_fetch_add(&a->asks, 1);
        ts_sleep_ms(10);
    }
    return NULL;
}

static void asker_start(asker *a, const char *name, const rt_proc *server)
{
    memset(a, 0, sizeof *a);
    a->sys = ac_system_create(name, &(ac_system_options){.workers = 1});
    assert_non_null(a->sys);
    /* A heartbeat timeout of 10 s: what is under test is the flooded
     * node's service, not how this process's threads fare on a machine
     * loaded besides (at a load of 16 on two cores, a 1 s timeout lost
     * the server for want of CPU, not of answers). */
    a->node = ac_node_start(a->sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0",
                                                        .heartbeat_timeout_ms = 10000});
    assert_non_null(a->node);
    char buf[256];
    a->echo = ac_node_resolve(a->node, rt_path(server, "replicas", "/user/echo", buf, sizeof buf));
    assert_non_null(a->echo);
    assert_int_equal(pthread_create(&a->thread, NULL, asker_main, a), 0);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static void asker_stop(asker *a, const char *name)
{
    atomic_store(&a->stop, true);
    pthread_join(a->thread, NULL);
    int n = atomic_load(&a->nlat);
    if (n > 0) {
        qsort(a->lat_us, (size_t)n, sizeof a->lat_us[0], cmp_i64);
        print_message("%s: %d asks, %d failed; p50 %lld us, p99 %lld us, max %lld us\n", name,
                      atomic_load(&a->asks), atomic_load(&a->failures),
                      (long long)a->lat_us[n / 2], (long long)a->lat_us[n * 99 / 100],
                      (long long)a->lat_us[n - 1]);
    }
    ac_ref_release(a->echo);
    assert_status(ac_system_terminate(a->sys), AC_OK);
    if (atomic_load(&a->failures))
        fail_msg("%s: %d of %d asks failed, the first: %s", name, atomic_load(&a->failures),
                 atomic_load(&a->asks), a->first_failure);
    assert_true(atomic_load(&a->asks) > 0);
}

/* A port that nothing listens on at any loopback address: bound on every
 * address and never listened on, so a connect there is refused. */
static int closed_port(int *fd)
{
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(*fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* The stranger: tells to the node's echo, each naming a sender at a
 * different address 127.a.b.c:port (refused at once there), 100 every
 * 10 ms, for `seconds` or `max` tells; `during` runs once, half-way. */
typedef struct flood {
    ac_system *sys;
    ac_node *node;
    ac_ref *echo;
    int port;
    int next; /* addresses named so far, over every wave */
} flood;

typedef struct wave {
    int sent;
    double seconds;
    long rss_peak;
    int fds_peak;
} wave;

static wave flood_wave(flood *f, const rt_proc *server, double seconds, int max,
                       void (*during)(void *), void *arg)
{
    wave w = {.rss_peak = rss_kb(server->pid), .fds_peak = fd_count(server->pid)};
    double t0 = ts_now();
    bool done_during = !during;
    while (w.sent < max && ts_now() - t0 < seconds) {
        for (int k = 0; k < 100 && w.sent < max; k++, w.sent++, f->next++) {
            unsigned a = 1 + (unsigned)f->next / 65536, b = ((unsigned)f->next / 256) % 256,
                     c = 1 + (unsigned)f->next % 250;
            char ghost[128];
            snprintf(ghost, sizeof ghost, "actorc://ghost@127.%u.%u.%u:%d/user/g", a, b, c,
                     f->port);
            ac_ref *g = ac_node_resolve(f->node, ghost);
            if (!g)
                fail_msg("resolve %s: %s", ghost, ac_last_error());
            (void)ac_tell(f->echo, ac_msg_str_new("flood"), g);
            ac_ref_release(g);
        }
        ts_sleep_ms(10);
        if (!done_during && ts_now() - t0 > seconds / 2) {
            during(arg);
            done_during = true;
        }
        long r = rss_kb(server->pid);
        int fd = fd_count(server->pid);
        w.rss_peak = r > w.rss_peak ? r : w.rss_peak;
        w.fds_peak = fd > w.fds_peak ? fd : w.fds_peak;
    }
    w.seconds = ts_now() - t0;
    return w;
}

/* Wait until the node's memory and descriptors settle back (the connect
 * timeouts and sweeps done): RSS within 20 % of rss0 and descriptors at
 * fds0, or 20 s. */
static void settle(const rt_proc *server, long rss0, int fds0, long *rss, int *fds)
{
    double end = ts_now() + 20;
    do {
        ts_sleep_ms(250);
        *rss = rss_kb(server->pid);
        *fds = fd_count(server->pid);
    } while ((*rss > rss0 * 6 / 5 || *fds > fds0) && ts_now() < end);
}

typedef struct fresh_arg {
    asker *a;
    const rt_proc *server;
    bool started;
} fresh_arg;

static void start_fresh(void *arg)
{
    fresh_arg *fa = arg;
    asker_start(fa->a, "fresh", fa->server); /* first connects now, mid-flood */
    fa->started = true;
}

static void test_flood_of_sender_addresses(void **state)
{
    (void)state;
    static const char *const args[] = {NULL};
    rt_proc server;
    assert_true(rt_start(&server, args));
    int port_fd;
    flood f = {.port = closed_port(&port_fd)};
    f.sys = ac_system_create("stranger", &(ac_system_options){.workers = 1});
    assert_non_null(f.sys);
    f.node = ac_node_start(f.sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    assert_non_null(f.node);
    char buf[256];
    f.echo = ac_node_resolve(f.node, rt_path(&server, "replicas", "/user/echo", buf, sizeof buf));
    assert_non_null(f.echo);

    asker old;
    asker_start(&old, "old", &server);
    /* The baseline: the node serving one peer, having met a few strangers
     * already (what a node allocates once, on first use, is not a flood's). */
    wave warm = flood_wave(&f, &server, 1.0, 1000, NULL, NULL);
    long rss0 = 0;
    int fds0 = fd_count(server.pid);
    settle(&server, 1 << 30, fds0, &rss0, &fds0);
    ts_sleep_ms(1000);
    rss0 = rss_kb(server.pid);
    fds0 = fd_count(server.pid);
    print_message("warm-up: %d addresses; baseline RSS %ld kB, %d descriptors\n", warm.sent,
                  rss0, fds0);

    asker fresh;
    fresh_arg fa = {.a = &fresh, .server = &server};
    long rss1 = 0, first_after = 0, peak[2] = {0, 0};
    int fds1 = 0;
    for (int round = 0; round < 2; round++) {
        wave w = flood_wave(&f, &server, FLOOD_S, FLOOD_MAX, round == 0 ? start_fresh : NULL, &fa);
        peak[round] = w.rss_peak;
        print_message("flood %d: %d tells naming %d new addresses in %.1f s (%.0f a second); "
                      "node RSS %ld kB at most, descriptors %d at most\n",
                      round + 1, w.sent, w.sent, w.seconds, w.sent / w.seconds, w.rss_peak,
                      w.fds_peak);
        if (round == 0) {
            assert_true(fa.started);
            ts_sleep_ms(500); /* it keeps asking a while after */
            asker_stop(&fresh, "the peer that came during the flood");
        }
        settle(&server, rss0, fds0, &rss1, &fds1);
        print_message("after flood %d: RSS %ld kB (baseline %ld), descriptors %d (baseline %d)\n",
                      round + 1, rss1, rss0, fds1, fds0);
        if (round == 0)
            first_after = rss1;
    }
    ac_ref_release(f.echo);
    assert_status(ac_system_terminate(f.sys), AC_OK);
    asker_stop(&old, "the peer connected before the floods");
    /* Memory, where the allocator is malloc's: a sanitizer's keeps what is
     * freed (ASan's quarantine) or maps its own way, and its leak check
     * at the node's exit is the test there. */
    if (!SANITIZED) {
        /* After each flood the node is back within 20 % of its baseline,
         * or has given back at least half of what the flood took: what
         * a flood left behind for good (a stranger's state kept) stays
         * near the peak, and a second flood would build on it. (On a
         * machine loaded besides, glibc keeps a few MB of a 7 MB process
         * now and then, which the 20 % alone called a leak.) */
        long bound1 = rss0 + (peak[0] - rss0) / 2, bound2 = rss0 + (peak[1] - rss0) / 2;
        bound1 = bound1 > rss0 * 6 / 5 ? bound1 : rss0 * 6 / 5;
        bound2 = bound2 > rss0 * 6 / 5 ? bound2 : rss0 * 6 / 5;
        if (first_after > bound1 || rss1 > bound2)
            fail_msg("the node's RSS is %ld kB after the first flood (peak %ld) and %ld kB after "
                     "the second (peak %ld): over %ld and %ld kB, from a %ld kB baseline",
                     first_after, peak[0], rss1, peak[1], bound1, bound2, rss0);
    }
    assert_true(fds1 <= fds0);
    close(port_fd);
    rt_end(&server, 0);
}

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

/* Node processes that connect, ask this process's node and exit (by
 * closing their input, and every third by SIGKILL), 200 times over; after
 * each the node answers a standing peer. Closing the connection to one
 * that left once hung a node's I/O for good. */
static void test_processes_come_ask_and_exit(void **state)
{
    (void)state;
    ac_system *srv_sys = ac_system_create("srv", &(ac_system_options){.workers = 1});
    assert_non_null(srv_sys);
    ac_node *srv = ac_node_start(srv_sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    assert_non_null(srv);
    ac_ref_release(ts_spawn(srv_sys, &echo_def, NULL, "echo"));
    char echo_path[256];
    snprintf(echo_path, sizeof echo_path, "actorc://srv@%s/user/echo", ac_node_address(srv));

    ac_system *cli_sys = ac_system_create("cli", &(ac_system_options){.workers = 1});
    assert_non_null(cli_sys);
    ac_node *cli = ac_node_start(cli_sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    assert_non_null(cli);
    ac_ref *echo = ac_node_resolve(cli, echo_path);
    assert_non_null(echo);

    static const char *const args[] = {NULL};
    long rounds = ts_env_long("ACTORC_TEST_PEER_ROUNDS", 200);
    for (long i = 0; i < rounds; i++) {
        rt_proc v;
        assert_true(rt_start(&v, args));
        char buf[256];
        ac_ref *asker = ac_node_resolve(cli, rt_path(&v, "replicas", "/user/asker", buf, sizeof buf));
        assert_non_null(asker);
        ac_answer a;
        ac_status st = ac_ask_wait(asker, ac_msg_str_new(echo_path), ASK_TIMEOUT_MS * 5, &a);
        if (st != AC_OK || !ac_msg_is(a.reply, &ac_msg_type_str) ||
            strncmp(ac_msg_str(a.reply), "ping|", 5) != 0)
            fail_msg("round %ld: the visitor's ask of the node: %s", i,
                     st == AC_OK ? ac_msg_str(a.reply) : ac_last_error());
        ac_answer_release(&a);
        ac_ref_release(asker);
        rt_end(&v, i % 3 == 2 ? SIGKILL : 0);
        st = ac_ask_wait(echo, ac_msg_str_new("still there?"), ASK_TIMEOUT_MS, &a);
        if (st != AC_OK)
            fail_msg("round %ld: after a visitor left, the node did not answer: %s", i,
                     a.error ? ac_error_message(a.error) : ac_last_error());
        ac_answer_release(&a);
    }
    ac_ref_release(echo);
    assert_status(ac_system_terminate(cli_sys), AC_OK);
    assert_status(ac_system_terminate(srv_sys), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flood_of_sender_addresses),
        cmocka_unit_test(test_processes_come_ask_and_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
