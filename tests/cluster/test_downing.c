#define _GNU_SOURCE
/*
 * Split-brain resolution of the static provider, with member processes
 * on 127.0.0.1. A member stopped (SIGSTOP) is a partition of one: the
 * two others, a majority, see it Unreachable and, after stable_after,
 * Down; its incarnation is never taken back. When it runs again (its
 * peers' last beats still queued for it) the others tell it that it was
 * downed, and it downs itself (had it not heard, it would have decided
 * so itself, being the minority): its ask on
 * another node fails with a NodeDownError saying so, its subscriber is
 * told Down of every member and of itself, its status is left with the
 * reason. Restarted, it is a new incarnation and Up everywhere.
 *
 * Heartbeats time out after 2 s and stable_after is 2 s (five times both
 * under the sanitizers), the shortest stable_after join accepts: the
 * remote layer loses the stopped node before the resolver decides, so
 * the ask is checked for the NodeDownError only and the resolver's
 * reason in the status. Also: the downing options are checked at join,
 * stable_after below the heartbeat timeout among them.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <actorc.h>
#include <actorc/cluster.h>
#include <actorc/remote.h>

#include "cl_support.h"

#ifdef CL_SANITIZED
#define SLOW 5
#else
#define SLOW 1
#endif

#define N 3
static cl_node nodes[N];
static int ports[N];
static char addrs[N][32];
static const char *const systems[N] = {"a", "b", "c"};

static int setup(void **state)
{
    (void)state;
    if (ac_node_free_ports(ports, N) != AC_OK)
        return -1;
    for (int i = 0; i < N; i++)
        cl_addr(ports[i], addrs[i], sizeof addrs[i]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++)
        cl_end(&nodes[i], SIGKILL);
    return 0;
}

static void start(int i)
{
    char hb[16];
    snprintf(hb, sizeof hb, "%d", 2000 * SLOW); /* the heartbeat timeout and stable_after */
    const char *args[] = {"--system", systems[i], "--hb", "500", hb, "--cluster", "sbr",
                          "--downing", "keep-majority", "--stable", hb, "--router",
                          "--seed", addrs[0],
                          "--seed", addrs[1], "--seed", addrs[2], NULL};
    assert_true(cl_start(&nodes[i], ports[i], args));
}

static int sees(int i, int from, const char *kind, int j, const char *inc, int ms)
{
    return cl_event(&nodes[i], from, ms, kind, addrs[j], inc);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void test_minority_downs_itself(void **state)
{
    (void)state;
    if (rt_inproc())
        skip(); /* SIGSTOP: processes only */
    for (int i = 0; i < N; i++)
        start(i);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            assert_true(sees(i, 0, "up", j, nodes[j].proc.incarnation, 5000 * SLOW) >= 0);
    char inc2[32];
    snprintf(inc2, sizeof inc2, "%s", nodes[2].proc.incarnation);
    char ask_line[96];
    snprintf(ask_line, sizeof ask_line, "ask %s %s", systems[0], addrs[0]);
    const char *asked = cl_ask(&nodes[2], ask_line, "ASKED", 5000);
    assert_non_null(asked);
    assert_non_null(strstr(asked, addrs[0]));

    rt_signal(&nodes[2].proc, SIGSTOP);
    int down[2];
    for (int i = 0; i < 2; i++) {
        int unreachable = sees(i, 0, "unreachable", 2, inc2, 20000 * SLOW);
        assert_true(unreachable >= 0);
        down[i] = sees(i, unreachable, "down", 2, inc2, 20000 * SLOW);
        assert_true(down[i] > unreachable);
    }
    rt_signal(&nodes[2].proc, SIGCONT);
    /* The minority downs itself: Down of the others and of itself, the
     * ask failed, its cluster left by the resolver. */
    for (int j = 0; j < N; j++)
        assert_true(sees(2, 0, "down", j, nodes[j].proc.incarnation, 20000 * SLOW) >= 0);
    const char *needles[] = {"ANSWER NodeDownError", NULL};
    assert_true(cl_find(&nodes[2], 0, 10000 * SLOW, needles) >= 0);
    const char *st = cl_ask(&nodes[2], "status", "STATUS", 5000);
    assert_non_null(st);
    assert_non_null(strstr(st, "STATUS left "));
    assert_non_null(strstr(st, "downed itself"));
    /* Its cluster router has no routees left. */
    const char *r = cl_ask(&nodes[2], "routees", "ROUTEES", 5000);
    assert_non_null(r);
    assert_non_null(strstr(r, "ROUTEES 0"));
    /* The majority never takes that incarnation back. */
    sleep_ms(3000);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sees(i, down[i], "up", 2, inc2, 0), -1);
        const char *m = cl_ask(&nodes[i], "members", "MEMBERS", 5000);
        assert_non_null(m);
        assert_non_null(strstr(m, "MEMBERS 2 "));
    }
    /* Restarted: a new incarnation, Up on both. */
    cl_end(&nodes[2], SIGKILL);
    start(2);
    assert_string_not_equal(nodes[2].proc.incarnation, inc2);
    for (int i = 0; i < 2; i++)
        assert_true(sees(i, down[i], "up", 2, nodes[2].proc.incarnation, 10000 * SLOW) > down[i]);
    for (int j = 0; j < 2; j++)
        assert_true(sees(2, 0, "up", j, nodes[j].proc.incarnation, 10000 * SLOW) >= 0);
}

/* Bad downing options: AC_EINVAL naming the option, for each. */
static void test_options(void **state)
{
    (void)state;
    ac_system_options so = {.workers = 1};
    ac_system *sys = ac_system_create("opts", &so);
    assert_non_null(sys);
    ac_node_options no = {.bind = "tcp://127.0.0.1:0"};
    assert_non_null(ac_node_start(sys, &no));
    const char *endpoints[] = {"http://127.0.0.1:1"};
    ac_cluster_etcd_options etcd = {.endpoints = endpoints, .endpoints_count = 1};
    struct {
        ac_cluster_options o;
        const char *names;
    } bad[] = {
        {{.name = "x", .downing = (ac_cluster_downing)9}, "options.downing"},
        {{.name = "x", .downing = (ac_cluster_downing)-1}, "options.downing"},
        {{.name = "x", .stable_after_ms = 99}, "options.stable_after_ms"},
        {{.name = "x", .stable_after_ms = 600001}, "options.stable_after_ms"},
        {{.name = "x", .stable_after_ms = -5}, "options.stable_after_ms"},
        {{.name = "x", .downing = AC_CLUSTER_DOWNING_STATIC_QUORUM}, "options.quorum_size"},
        {{.name = "x", .downing = AC_CLUSTER_DOWNING_STATIC_QUORUM, .quorum_size = 1025},
         "options.quorum_size"},
        {{.name = "x", .quorum_size = 2}, "options.quorum_size"},
        {{.name = "x", .downing = AC_CLUSTER_DOWNING_DOWN_ALL, .etcd_options = &etcd},
         "static provider"},
        {{.name = "x", .stable_after_ms = 1000, .etcd_options = &etcd}, "static provider"},
        /* Below the node's heartbeat timeout (1,000 ms by default). */
        {{.name = "x", .stable_after_ms = 999}, "options.stable_after_ms 999 is below the node's "
                                                "heartbeat_timeout_ms 1000"},
        {{.name = "x", .downing = AC_CLUSTER_DOWNING_KEEP_OLDEST, .stable_after_ms = 100},
         "heartbeat_timeout_ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(ac_cluster_join(sys, &bad[i].o));
        assert_int_equal(ac_last_status(), AC_EINVAL);
        if (!strstr(ac_last_error(), bad[i].names))
            fail_msg("case %zu: \"%s\" does not name %s", i, ac_last_error(), bad[i].names);
    }
    /* Good ones join (each its own system: one join per system). */
    ac_cluster_options good = {.name = "x", .downing = AC_CLUSTER_DOWNING_STATIC_QUORUM,
                               .quorum_size = 2, .stable_after_ms = 1000};
    ac_cluster *c = ac_cluster_join(sys, &good);
    assert_non_null(c);
    assert_int_equal(ac_cluster_leave(c), AC_OK);
    ac_system_terminate(sys);
    /* A node with a shorter heartbeat timeout takes a shorter
     * stable_after; without resolution it is not used, and not judged. */
    ac_system *fast = ac_system_create("fast", &so);
    ac_system *off = ac_system_create("off", &so);
    assert_non_null(fast);
    assert_non_null(off);
    ac_node_options fast_no = {.bind = "tcp://127.0.0.1:0", .heartbeat_ivl_ms = 50,
                               .heartbeat_timeout_ms = 300};
    assert_non_null(ac_node_start(fast, &fast_no));
    assert_non_null(ac_node_start(off, &no));
    ac_cluster_options o300 = {.name = "x", .stable_after_ms = 300};
    assert_non_null(ac_cluster_join(fast, &o300));
    ac_cluster_options o100 = {.name = "x", .downing = AC_CLUSTER_DOWNING_OFF,
                               .stable_after_ms = 100};
    assert_non_null(ac_cluster_join(off, &o100));
    ac_system_terminate(fast);
    ac_system_terminate(off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_minority_downs_itself, setup, teardown),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
