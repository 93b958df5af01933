#define _GNU_SOURCE
/*
 * A node restarted the moment a partition heals: three member processes
 * in network namespaces of their own (ts_netns), keep-majority. Node c is
 * cut off (nftables drop rules), downs itself, and a and b down it; c is
 * killed while the cut stands, the cut is healed and c started again at
 * once on its address, a new incarnation. It must be Up on every node
 * and stay a member past stable_after plus the heartbeat timeout, never
 * Down anywhere and never downing itself: the majority
 * never takes a downed incarnation back, but a new one joins and stays.
 *
 * What this guards. While c was cut off, a and b kept dialling its
 * address (their beats to the member they held Unreachable, then its
 * seed listing), and those dials' SYNs were dropped: TCP retries one
 * after 1 s, then 3 s, while the remote layer's connect deadline (2 s)
 * runs from when the dial began. The new c says hello on its own
 * connection and is Up; a dial of a or b to it still waiting on TCP's
 * next retry would not connect before its deadline, and c was lost there
 * ("its address took no connection"), Unreachable, and downed by the
 * majority stable_after later: the new incarnation downed itself too. A
 * peer's hello now closes such a dial and dials afresh. The heal is timed
 * to land where that happened: about 2 s after a and b saw c Unreachable
 * (the remote layer loses c half a heartbeat timeout after that, and
 * dials at once; the window is that dial's second to third second), and
 * the case runs three rounds.
 *
 * Every process is ended by pid and the namespaces are removed at the
 * end, failed or not; without root (or namespaces, ip, nft) it skips.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cl_support.h"
#include "ts_netns.h"

#ifdef CL_SANITIZED
#define SLOW 5
#define ROUNDS 2
#else
#define SLOW 1
#define ROUNDS 3
#endif

#define N 3
#define PORT 7400
/* Five times longer under the sanitizers, whose slow nodes would
 * otherwise lose one another now and then: there the heal is not timed
 * into the window above, and the case only checks that nothing downs the
 * new incarnation. */
#define HB_TIMEOUT_MS (1000 * SLOW)
#define STABLE_MS (1000 * SLOW)
/* From the keepers' Unreachable to the heal (see above): the remote
 * layer's loss half a heartbeat timeout later, its dial, then 1.3 s. */
#define HEAL_AFTER_UNREACHABLE_MS (HB_TIMEOUT_MS / 2 + 1300)

static ts_netns net;
static cl_node nodes[N];
static const char *const systems[N] = {"a", "b", "c"};
static char addrs[N][48];

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++)
        cl_end(&nodes[i], SIGKILL);
    bool gone = ts_netns_destroy(&net);
    if (!gone)
        printf("# namespaces of %s are left\n", net.prefix);
    return gone ? 0 : -1;
}

static void start(int i)
{
    char hb_timeout[16], stable[16];
    snprintf(hb_timeout, sizeof hb_timeout, "%d", HB_TIMEOUT_MS);
    snprintf(stable, sizeof stable, "%d", STABLE_MS);
    const char *args[24] = {"--system", systems[i], "--hb", "200", hb_timeout, "--cluster",
                            "rejoin", "--downing", "keep-majority", "--stable", stable};
    int k = 11;
    for (int j = 0; j < N; j++) {
        args[k++] = "--seed";
        args[k++] = addrs[j];
    }
    args[k] = NULL;
    assert_true(cl_start_in(&nodes[i], ts_netns_ip(), net.name[i], net.addr[i], PORT, args));
}

static int sees(int i, int from, const char *kind, int j, const char *inc, int ms)
{
    return cl_event(&nodes[i], from, ms, kind, addrs[j], inc);
}

static void sleep_until(double t_ms)
{
    double left = t_ms - cl_now_ms();
    if (left <= 0)
        return;
    struct timespec t = {(time_t)(left / 1000), (long)((int)left % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* One round: c cut off and downed, killed, healed and restarted at once. */
static void round_of(int round)
{
    const int side[N] = {0, 0, 1};
    const int c = 2;
    char old[32];
    snprintf(old, sizeof old, "%s", nodes[c].proc.incarnation);
    int from[N];
    for (int i = 0; i < N; i++) {
        cl_pump(&nodes[i]);
        from[i] = nodes[i].count;
    }
    assert_true(ts_netns_partition(&net, side));
    int u = sees(0, from[0], "unreachable", c, old, 10000 * SLOW);
    assert_true(u >= 0);
    double unreachable_at = cl_now_ms();
    for (int i = 0; i < N - 1; i++) { /* the majority downs c */
        int d = sees(i, from[i], "down", c, old, 10000 * SLOW);
        assert_true(d >= 0);
    }
    /* c downed itself: its own Down, and its status says so. */
    assert_true(sees(c, from[c], "down", c, old, 10000 * SLOW) >= 0);
    const char *st = cl_ask(&nodes[c], "status", "STATUS", 5000);
    assert_non_null(st);
    assert_non_null(strstr(st, "STATUS left "));
    cl_end(&nodes[c], SIGKILL); /* killed while the cut stands */

    sleep_until(unreachable_at + HEAL_AFTER_UNREACHABLE_MS);
    double healed_at = cl_now_ms();
    assert_true(ts_netns_heal(&net));
    start(c);
    const char *inc = nodes[c].proc.incarnation;
    assert_string_not_equal(inc, old);
    for (int i = 0; i < N - 1; i++) /* its Up on a and b, after their Down of the old one */
        assert_true(sees(i, from[i], "up", c, inc, 10000 * SLOW) >= 0);
    for (int j = 0; j < N; j++)
        assert_true(sees(c, 0, "up", j, nodes[j].proc.incarnation, 10000 * SLOW) >= 0);
    printf("# round %d: healed %.0f ms after the Unreachable; the new incarnation Up on every "
           "node %.0f ms after the heal\n",
           round, healed_at - unreachable_at, cl_now_ms() - healed_at);

    /* It stays a member past stable_after plus the heartbeat timeout
     * (and a margin): no Down of it anywhere, no Down on it. (A member
     * silent for a moment on a loaded machine may be Unreachable and
     * Reachable again: that is not judged.) */
    int hold = STABLE_MS + HB_TIMEOUT_MS + 2000 * SLOW;
    const char *c_down[] = {"EVENT down", NULL};
    assert_int_equal(cl_find(&nodes[c], 0, hold, c_down), -1);
    char listed[64];
    snprintf(listed, sizeof listed, "%s=up", addrs[c]);
    for (int i = 0; i < N - 1; i++) {
        assert_int_equal(sees(i, from[i], "down", c, inc, 0), -1);
        /* Up there (awaited: Reachable again after a moment's silence). */
        const char *m = NULL;
        for (double until = cl_now_ms() + 10000 * SLOW; cl_now_ms() < until;
             sleep_until(cl_now_ms() + 100)) {
            m = cl_ask(&nodes[i], "members", "MEMBERS", 5000);
            if (m && strstr(m, listed))
                break;
        }
        assert_non_null(m);
        assert_non_null(strstr(m, "MEMBERS 3 "));
        assert_non_null(strstr(m, listed));
    }
    st = cl_ask(&nodes[c], "status", "STATUS", 5000);
    assert_non_null(st);
    assert_non_null(strstr(st, "STATUS joined "));
}

static void test_restarted_at_once_after_a_heal_stays_up(void **state)
{
    (void)state;
    char why[256];
    int made = ts_netns_create(&net, N, why, sizeof why);
    if (made == 0) {
        printf("# rejoin test skipped: %s\n", why);
        skip();
    }
    if (made < 0)
        fail_msg("%s", why);
    for (int i = 0; i < N; i++)
        snprintf(addrs[i], sizeof addrs[i], "%s:%d", net.addr[i], PORT);
    for (int i = 0; i < N; i++)
        start(i);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            assert_true(sees(i, 0, "up", j, nodes[j].proc.incarnation, 10000 * SLOW) >= 0);
    for (int r = 0; r < ROUNDS; r++)
        round_of(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_restarted_at_once_after_a_heal_stays_up, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
