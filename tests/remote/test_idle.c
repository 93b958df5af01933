/*
 * Idle connections (ac_node_options.idle_timeout_ms), over both
 * transports: a connection is opened by the first send, closed once
 * nothing crossed it for the timeout, and opened again by the next send,
 * with nothing lost or reordered across the close, however the sends
 * fall against the closes; the peer stays up throughout. A peer that
 * went while its connection was closed is lost at the next send. The
 * option is checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <actorc.h>

#include "node_pair.h"
#include "node_serve.h"
#include "test_support.h"

#define IDLE_MS 100

static ac_node_stats stats_of(ac_node *n)
{
    ac_node_stats s;
    assert_int_equal(ac_node_stats_get(n, &s), AC_OK);
    return s;
}

/* Wait (10 s at most) until `n` has closed `idled` idle connections in
 * all and has none open. */
static void await_idle(ac_node *n, uint64_t idled)
{
    ac_node_stats s = stats_of(n);
    for (int i = 0; i < 1000 && (s.connections_idled < idled || s.connections != 0); i++) {
        ts_sleep_ms(10);
        s = stats_of(n);
    }
    if (s.connections_idled < idled || s.connections != 0)
        fail_msg("after 10 s: %llu idle closes (%llu wanted), %llu connections open",
                 (unsigned long long)s.connections_idled, (unsigned long long)idled,
                 (unsigned long long)s.connections);
}

static const char *bind_for(const char *transport, const char *name, char *buf, size_t cap)
{
    if (strncmp(transport, "tcp", 3) == 0) /* tcp (ZeroMQ) or tcp+direct */
        snprintf(buf, cap, "%s://127.0.0.1:0", transport);
    else
        snprintf(buf, cap, "inproc://%s:0", name);
    return buf;
}

/* ---- opened on first send, closed when idle, opened again -------------------- */

static void opened_closed_reopened(const char *transport)
{
    char ba[64], bb[64];
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", bind_for(transport, "idle-a", ba, sizeof ba),
                                    (ac_node_options){.idle_timeout_ms = IDLE_MS}, &a);
    ac_system *sb = rt_node_system("b", bind_for(transport, "idle-b", bb, sizeof bb),
                                    (ac_node_options){.idle_timeout_ms = 0}, &b);
    assert_true(rt_serve(sb, b));
    ac_ref *echo = rt_resolve(a, "b", b, "/user/echo");
    assert_int_equal(stats_of(a).connections, 0); /* a resolve dials nothing */
    rt_ask_echo(echo, "first", 10000);
    assert_int_equal(stats_of(a).connections, 1);
    await_idle(a, 1);
    for (int round = 2; round <= 4; round++) {
        rt_ask_echo(echo, "again", 10000); /* dials again: the peer is the same */
        assert_int_equal(stats_of(a).connections, 1);
        await_idle(a, (uint64_t)round);
    }
    ac_node_stats sa_stats = stats_of(a), sb_stats = stats_of(b);
    assert_int_equal(sa_stats.nodes_down, 0);
    assert_int_equal(sb_stats.nodes_down, 0);
    assert_int_equal(sa_stats.peers, 1);
    /* b never closes: its option is off (the default). */
    assert_int_equal(sb_stats.connections_idled, 0);
    ac_ref_release(echo);
    ac_system_terminate(sb);
    ac_system_terminate(sa);
}

static void test_inproc_opened_closed_reopened(void **state)
{
    (void)state;
    opened_closed_reopened("inproc");
}

static void test_tcp_opened_closed_reopened(void **state)
{
    (void)state;
    opened_closed_reopened("tcp");
}

static void test_direct_opened_closed_reopened(void **state)
{
    (void)state;
    opened_closed_reopened("tcp+direct");
}

/* ---- nothing lost or reordered across closes -------------------------------- */

typedef struct seq_seen {
    atomic_llong next;       /* the value expected next */
    atomic_llong out_of_order;
} seq_seen;

static void seq_receive(ac_ctx *ctx, ac_msg *msg)
{
    seq_seen *s = ac_ctx_user_data(ctx);
    int64_t v;
    if (ac_msg_int64_get(msg, &v) == AC_OK) {
        long long want = atomic_load(&s->next);
        if (v != want)
            atomic_fetch_add(&s->out_of_order, 1);
        atomic_store(&s->next, (long long)v + 1);
        return;
    }
    ac_reply(ctx, ac_msg_int64_new(atomic_load(&s->next)));
}
static const ac_actor_def seq_def = {.name = "Seq", .receive = seq_receive};

enum { BURSTS = 16, PER_BURST = 200 };

/* Bursts of numbered tells with pauses around the idle timeout, so that
 * sends land before, on and after the closes; both nodes close idle
 * connections. Every number arrives, in order. */
static void no_loss_across_closes(const char *transport)
{
    char ba[64], bb[64];
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", bind_for(transport, "order-a", ba, sizeof ba),
                                    (ac_node_options){.idle_timeout_ms = IDLE_MS}, &a);
    ac_system *sb = rt_node_system("b", bind_for(transport, "order-b", bb, sizeof bb),
                                    (ac_node_options){.idle_timeout_ms = IDLE_MS}, &b);
    seq_seen seen = {0};
    ac_ref *local = ac_spawn(sb, ac_props_new(&seq_def, &seen), "seq");
    assert_non_null(local);
    ac_ref *seq = rt_resolve(a, "b", b, "/user/seq");
    int64_t v = 0;
    for (int burst = 0; burst < BURSTS; burst++) {
        for (int k = 0; k < PER_BURST; k++)
            assert_int_equal(ac_tell(seq, ac_msg_int64_new(v++), NULL), AC_OK);
        /* 80 .. 150 ms: under, at and past the timeout plus a
         * housekeeping turn. */
        ts_sleep_ms(80 + (burst * 23) % 71);
    }
    ac_answer ans = {0};
    assert_int_equal(ac_ask_wait(seq, ac_msg_str_new("next"), 10000, &ans), AC_OK);
    assert_int_equal(ac_msg_int64(ans.reply), v);
    ac_answer_release(&ans);
    assert_int_equal(atomic_load(&seen.out_of_order), 0);
    ac_node_stats s = stats_of(a);
    print_message("%s: %llu idle closes over %d bursts\n", transport,
                  (unsigned long long)s.connections_idled, BURSTS);
    assert_true(s.connections_idled >= 2);
    assert_int_equal(s.nodes_down, 0);
    assert_int_equal(stats_of(b).nodes_down, 0);
    ac_ref_release(seq);
    ac_ref_release(local);
    ac_system_terminate(sb);
    ac_system_terminate(sa);
}

static void test_inproc_no_loss_across_closes(void **state)
{
    (void)state;
    no_loss_across_closes("inproc");
}

static void test_tcp_no_loss_across_closes(void **state)
{
    (void)state;
    no_loss_across_closes("tcp");
}

static void test_direct_no_loss_across_closes(void **state)
{
    (void)state;
    no_loss_across_closes("tcp+direct");
}

/* ---- a peer gone while closed ------------------------------------------------- */

/* Both sides closed their connections; b stops (no connection to say
 * LEAVE on): a learns it at its next send, which fails NodeDownError
 * rather than waiting out the ask. */
static void lost_while_closed(const char *transport)
{
    char ba[64], bb[64];
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", bind_for(transport, "gone-a", ba, sizeof ba),
                                    (ac_node_options){.idle_timeout_ms = IDLE_MS}, &a);
    ac_system *sb = rt_node_system("b", bind_for(transport, "gone-b", bb, sizeof bb),
                                    (ac_node_options){.idle_timeout_ms = IDLE_MS}, &b);
    assert_true(rt_serve(sb, b));
    ac_ref *echo = rt_resolve(a, "b", b, "/user/echo");
    rt_ask_echo(echo, "up", 10000);
    await_idle(a, 1);
    await_idle(b, 1);
    ac_system_terminate(sb);
    assert_int_equal(stats_of(a).nodes_down, 0); /* nothing told it */
    ac_answer ans = {0};
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("x"), 30000, &ans), AC_EFAILED);
    assert_non_null(ans.error);
    assert_string_equal(ac_error_name(ans.error), AC_NODE_DOWN_ERROR);
    ac_answer_release(&ans);
    assert_int_equal(stats_of(a).nodes_down, 1);
    ac_ref_release(echo);
    ac_system_terminate(sa);
}

static void test_inproc_lost_while_closed(void **state)
{
    (void)state;
    lost_while_closed("inproc");
}

static void test_tcp_lost_while_closed(void **state)
{
    (void)state;
    lost_while_closed("tcp");
}

static void test_direct_lost_while_closed(void **state)
{
    (void)state;
    lost_while_closed("tcp+direct");
}

/* ---- the option --------------------------------------------------------------- */

/* ---- a node with nothing under way sleeps ------------------------------------- */

/* The transport's wake-ups over 2 s of nothing: housekeeping waits for
 * its next deadline (at most a second away) instead of ticking every
 * 20 ms, which made 100 in that time. 12 leaves room for a slow machine
 * (a late wake-up is not an extra one). */
#define QUIET_WINDOW_MS 2000
#define QUIET_WAKEUPS_MAX 12

static uint64_t wakeups_over_quiet_window(ac_node *n)
{
    ts_sleep_ms(300); /* what the start or the last ask set off settles */
    uint64_t w0 = stats_of(n).transport_wakeups;
    ts_sleep_ms(QUIET_WINDOW_MS);
    return stats_of(n).transport_wakeups - w0;
}

/* tcp+direct runs its heartbeats on this thread: with a connection open
 * either way, each interval wakes it to send one, to read its answer
 * and to answer the peer's. Those are allowed for, at a one-second
 * interval, on top of the housekeeping's. */
#define DIRECT_HB_MS 1000
#define DIRECT_HB_WAKEUPS (3 * QUIET_WINDOW_MS / DIRECT_HB_MS)

static void quiet_node_sleeps(const char *transport)
{
    char ba[64], bb[64];
    ac_node *a, *b;
    bool direct = strcmp(transport, "tcp+direct") == 0;
    ac_node_options o = {0};
    if (direct)
        o.heartbeat_ivl_ms = DIRECT_HB_MS, o.heartbeat_timeout_ms = 5 * DIRECT_HB_MS;
    ac_system *sa = rt_node_system("a", bind_for(transport, "quiet-a", ba, sizeof ba), o, &a);
    uint64_t alone = wakeups_over_quiet_window(a);
    if (alone > QUIET_WAKEUPS_MAX)
        fail_msg("a lone idle node's transport woke %llu times in %d ms",
                 (unsigned long long)alone, QUIET_WINDOW_MS);
    /* With a connection open and heartbeated (ZeroMQ's own, off this
     * thread), nothing crossing it. */
    ac_system *sb = rt_node_system("b", bind_for(transport, "quiet-b", bb, sizeof bb), o, &b);
    assert_true(rt_serve(sb, b));
    ac_ref *echo = rt_resolve(a, "b", b, "/user/echo");
    rt_ask_echo(echo, "once", 10000);
    assert_int_equal(stats_of(a).connections, 1);
    uint64_t paired = wakeups_over_quiet_window(a);
    if (paired > QUIET_WAKEUPS_MAX + (direct ? DIRECT_HB_WAKEUPS : 0))
        fail_msg("an idle node with an open connection woke %llu times in %d ms",
                 (unsigned long long)paired, QUIET_WINDOW_MS);
    /* Asleep, it still serves at once, and its connection still stands. */
    rt_ask_echo(echo, "after", 10000);
    assert_int_equal(stats_of(a).connections, 1);
    assert_int_equal(stats_of(a).nodes_down, 0);
    ac_ref_release(echo);
    ac_system_terminate(sb);
    ac_system_terminate(sa);
}

static void test_inproc_quiet_node_sleeps(void **state)
{
    (void)state;
    quiet_node_sleeps("inproc");
}

static void test_tcp_quiet_node_sleeps(void **state)
{
    (void)state;
    quiet_node_sleeps("tcp");
}

static void test_direct_quiet_node_sleeps(void **state)
{
    (void)state;
    quiet_node_sleeps("tcp+direct");
}

static void test_idle_timeout_is_checked(void **state)
{
    (void)state;
    ac_system_options so = {.workers = 1};
    ac_system *sys = ac_system_create("chk", &so);
    assert_non_null(sys);
    ac_node_options o = {.bind = "inproc://idle-chk:0", .idle_timeout_ms = -1};
    assert_null(ac_node_start(sys, &o));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "idle_timeout_ms is negative"));
    o.idle_timeout_ms = AC_NODE_MIN_IDLE_TIMEOUT_MS - 1;
    assert_null(ac_node_start(sys, &o));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "idle_timeout_ms 99 is under 100"));
    o.idle_timeout_ms = AC_NODE_MIN_IDLE_TIMEOUT_MS;
    ac_node *n = ac_node_start(sys, &o);
    assert_non_null(n);
    ac_system_terminate(sys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_timeout_is_checked),
        cmocka_unit_test(test_inproc_quiet_node_sleeps),
        cmocka_unit_test(test_tcp_quiet_node_sleeps),
        cmocka_unit_test(test_direct_quiet_node_sleeps),
        cmocka_unit_test(test_inproc_opened_closed_reopened),
        cmocka_unit_test(test_tcp_opened_closed_reopened),
        cmocka_unit_test(test_direct_opened_closed_reopened),
        cmocka_unit_test(test_inproc_no_loss_across_closes),
        cmocka_unit_test(test_tcp_no_loss_across_closes),
        cmocka_unit_test(test_direct_no_loss_across_closes),
        cmocka_unit_test(test_inproc_lost_while_closed),
        cmocka_unit_test(test_tcp_lost_while_closed),
        cmocka_unit_test(test_direct_lost_while_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
