#define _GNU_SOURCE
/*
 * Remoting between processes on loopback: this test's system is one node,
 * the node program (node_main.c) another, started and ended by pid.
 *
 * With ACTORC_TEST_TRANSPORT=inproc (ctest's remote.nodes.inproc) the
 * same cases run over the in-process transport: the peer is the node
 * program's actors (node_serve.c) in a system of this process, and
 * ending it is stopping its node (its loss to ours, as a killed
 * process's) and terminating that system. The cases only processes can show (SIGSTOP, ports,
 * CURVE) are skipped there. With ACTORC_TEST_TRANSPORT=tcp+direct
 * (remote.nodes.direct) both sides bind tcp+direct://, the node's own
 * TCP; CURVE, ZeroMQ's, is skipped.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <actorc.h>

#include "node_serve.h"
#include "remote_test.h"
#include "rt_proc.h"

typedef struct fixture {
    ac_system *sys;
    ac_node *node;
    rt_proc peer;
} fixture;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- the peer: a process, or a system of this one -------------------------- */

/* The node program, or its actors in a system of this process bound at
 * inproc://peer:0 (args: --system, --bind, --hb as the program's). */
static bool peer_start(rt_proc *p, const char *const *args)
{
    if (!rt_inproc())
        return rt_start(p, args);
    memset(p, 0, sizeof *p);
    const char *system = "replicas", *bind = "inproc://peer:0";
    ac_node_options o = {0};
    for (int i = 0; args && args[i]; i++) {
        if (strcmp(args[i], "--system") == 0 && args[i + 1])
            system = args[++i];
        else if (strcmp(args[i], "--bind") == 0 && args[i + 1])
            bind = args[++i];
        else if (strcmp(args[i], "--hb") == 0 && args[i + 1] && args[i + 2]) {
            o.heartbeat_ivl_ms = atoi(args[++i]);
            o.heartbeat_timeout_ms = atoi(args[++i]);
        }
    }
    ac_system_options so = {.workers = 2};
    ac_system *sys = ac_system_create(system, &so);
    if (!sys)
        return false;
    o.bind = bind;
    ac_node *node = ac_node_start(sys, &o);
    if (!node || !rt_serve(sys, node)) {
        fprintf(stderr, "peer: %s\n", ac_last_error());
        ac_system_terminate(sys);
        return false;
    }
    snprintf(p->address, sizeof p->address, "%s", ac_node_address(node));
    snprintf(p->incarnation, sizeof p->incarnation, "%016llx",
             (unsigned long long)ac_node_incarnation(node));
    p->local = sys;
    return true;
}

/* End it: a signal to the process; or its node stopped first (its loss
 * to ours, as a killed process's, while its actors still run), then its
 * system terminated. */
static void peer_end(rt_proc *p, int sig)
{
    if (p->local) {
        ac_node_stop(ac_system_node(p->local));
        ac_system_terminate(p->local);
        p->local = NULL;
        return;
    }
    rt_end(p, sig);
}

static fixture *fixture_new(const char *const *peer_args, const ac_node_options *opts)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    ac_system_options so = {.workers = 2};
    f->sys = ac_system_create("client", &so);
    assert_non_null(f->sys);
    ac_node_options o = opts ? *opts : (ac_node_options){0};
    char bind[64];
    if (!o.bind)
        o.bind = rt_bind("client", bind, sizeof bind);
    f->node = ac_node_start(f->sys, &o);
    if (!f->node)
        fail_msg("ac_node_start: %s", ac_last_error());
    ac_node_register_type(f->node, &rt_point_type);
    if (peer_args)
        assert_true(peer_start(&f->peer, peer_args));
    return f;
}

static int setup(void **state)
{
    static const char *const args[] = {NULL};
    *state = fixture_new(args, NULL);
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    peer_end(&f->peer, SIGKILL);
    ac_system_terminate(f->sys);
    free(f);
    return 0;
}

static ac_ref *resolve(fixture *f, const char *path)
{
    char buf[256];
    ac_ref *r = ac_node_resolve(f->node, rt_path(&f->peer, "replicas", path, buf, sizeof buf));
    if (!r)
        fail_msg("resolve %s: %s", buf, ac_last_error());
    return r;
}

/* Ask a string, expect a string back. */
static void ask_echo(ac_ref *r, const char *text, int64_t timeout_ms)
{
    ac_answer a = {0};
    ac_status st = ac_ask_wait(r, ac_msg_str_new(text), timeout_ms, &a);
    if (st != AC_OK)
        fail_msg("ask %s of %s: %s (%s)", text, ac_ref_path(r), ac_status_name(st),
                 a.error ? ac_error_message(a.error) : ac_last_error());
    assert_string_equal(ac_msg_str(a.reply), text);
    ac_answer_release(&a);
}

/* ---- tell and ask ----------------------------------------------------------- */

static void test_ask_and_reply_sender(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    assert_true(ac_ref_is_remote(echo));
    char want[256];
    assert_string_equal(ac_ref_path(echo), rt_path(&f->peer, "replicas", "/user/echo", want, sizeof want));
    for (int i = 0; i < 50; i++)
        ask_echo(echo, "hello", 10000);
    /* The reply's sender is the replying actor's own remote ref. */
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("who"), 10000, &a), AC_OK);
    assert_ptr_equal(a.sender, echo); /* interned: the same ref */
    ac_answer_release(&a);
    /* Through a pool: the routee that answered. */
    ac_ref *pool = resolve(f, "/user/pool");
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ac_ask_wait(pool, ac_msg_str_new("x"), 10000, &a), AC_OK);
        assert_non_null(a.sender);
        assert_true(ac_ref_is_remote(a.sender));
        char routee[256];
        snprintf(routee, sizeof routee, "/user/pool/routee-%d", i % 3 + 1);
        assert_non_null(strstr(ac_ref_path(a.sender), routee));
        /* The routee itself answers a direct ask (a deep path). */
        ac_answer b = {0};
        assert_int_equal(ac_ask_wait(a.sender, ac_msg_str_new("direct"), 10000, &b), AC_OK);
        assert_string_equal(ac_msg_str(b.reply), "direct");
        assert_ptr_equal(b.sender, a.sender);
        ac_answer_release(&b);
        ac_answer_release(&a);
    }
    /* Tells are counted, in order, before the count. */
    for (int i = 0; i < 100; i++)
        assert_int_equal(ac_tell(echo, ac_msg_str_new("t"), NULL), AC_OK);
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("count"), 10000, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 50 + 1 + 100);
    ac_answer_release(&a);
    ac_ref_release(pool);
    ac_ref_release(echo);
}

/* A burst both ways: N Int64 tells to the peer's echo as fast as they
 * queue, each echoed back to a local actor. The transports send what
 * waits for a peer together, several frames in one message; every frame
 * still arrives, once, in order, and is counted as a frame. */
typedef struct in_order {
    atomic_int_fast64_t got, out_of_order;
} in_order;

static void in_order_receive(ac_ctx *ctx, ac_msg *msg)
{
    in_order *io = ac_ctx_user_data(ctx);
    int64_t x;
    if (ac_msg_int64_get(msg, &x) != AC_OK)
        return;
    int64_t want = atomic_load(&io->got);
    if (x != want)
        atomic_fetch_add(&io->out_of_order, 1);
    atomic_store(&io->got, want + 1);
}
static const ac_actor_def in_order_def = {.name = "InOrder", .receive = in_order_receive};

static void test_a_burst_arrives_in_order_frame_by_frame(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000);
    in_order io = {0};
    ac_ref *back = ac_spawn(f->sys, ac_props_new(&in_order_def, &io), "in-order");
    assert_non_null(back);
    ac_node_stats s0, s1;
    ac_node_stats_get(f->node, &s0);
    enum { N = 20000 };
    for (int64_t i = 0; i < N; i++)
        assert_int_equal(ac_tell(echo, ac_msg_int64_new(i), back), AC_OK);
    for (int i = 0; i < 3000 && atomic_load(&io.got) < N; i++)
        sleep_ms(10);
    ac_node_stats_get(f->node, &s1);
    print_message("%lld echoed back, %lld out of order; frames out %llu, in %llu\n",
                  (long long)atomic_load(&io.got), (long long)atomic_load(&io.out_of_order),
                  (unsigned long long)(s1.frames_out - s0.frames_out),
                  (unsigned long long)(s1.frames_in - s0.frames_in));
    assert_int_equal(atomic_load(&io.got), N);
    assert_int_equal(atomic_load(&io.out_of_order), 0);
    assert_true(s1.frames_out - s0.frames_out >= N);
    assert_true(s1.frames_in - s0.frames_in >= N);
    assert_int_equal(s1.decode_errors, s0.decode_errors);
    ac_ref_release(back);
    ac_ref_release(echo);
}

/* The other way: the peer asks an actor of ours, from inside an actor. */
static void test_ask_from_inside_an_actor_both_ways(void **state)
{
    fixture *f = *state;
    ac_ref *asker = resolve(f, "/user/asker");
    /* Its own echo, across its node (a path of its own address). */
    char path[256];
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(asker, ac_msg_str_new(rt_path(&f->peer, "replicas", "/user/echo", path,
                                                                sizeof path)),
                                 10000, &a),
                     AC_OK);
    assert_non_null(strstr(ac_msg_str(a.reply), "ping|"));
    ac_answer_release(&a);
    ac_ref_release(asker);
}

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

static void test_peer_asks_us(void **state)
{
    fixture *f = *state;
    ac_props *props = ac_props_new(&echo_def, NULL);
    ac_ref *mine = ac_spawn(f->sys, props, "mine");
    assert_non_null(mine);
    ac_ref *asker = resolve(f, "/user/asker");
    char path[256];
    snprintf(path, sizeof path, "actorc://client@%s/user/mine", ac_node_address(f->node));
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(asker, ac_msg_str_new(path), 10000, &a), AC_OK);
    char want[300];
    snprintf(want, sizeof want, "ping|%s", path);
    assert_string_equal(ac_msg_str(a.reply), want);
    ac_answer_release(&a);
    /* A local path of our own address resolves to the local actor. */
    ac_ref *same = ac_node_resolve(f->node, path);
    assert_ptr_equal(same, mine);
    ac_ref_release(same);
    ac_ref_release(asker);
}

/* ---- what crosses the wire -------------------------------------------------- */

static void test_errors_survive_the_wire(void **state)
{
    fixture *f = *state;
    ac_ref *fail = resolve(f, "/user/fail");
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(fail, ac_msg_str_new("x"), 10000, &a), AC_EFAILED);
    assert_non_null(a.error);
    ac_error *local = rt_aggregate_error();
    assert_string_equal(ac_error_name(a.error), AC_AGGREGATE_ERROR);
    assert_int_equal(ac_error_member_count(a.error), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(ac_error_name(ac_error_member(a.error, i)), AC_ASK_TIMEOUT_ERROR);
    assert_true(ac_error_all_timeouts(a.error));
    assert_int_equal(ac_error_all_timeouts(a.error), ac_error_all_timeouts(local));
    char *got = ac_error_to_string(a.error), *want = ac_error_to_string(local);
    assert_string_equal(got, want);
    free(got);
    free(want);
    ac_error_release(local);
    ac_answer_release(&a);
    ac_ref_release(fail);
}

static void test_user_codec_and_unknown_types(void **state)
{
    fixture *f = *state;
    ac_ref *point = resolve(f, "/user/point");
    ac_msg *m = ac_msg_new(&rt_point_type, sizeof(rt_point));
    rt_point *p = ac_msg_payload(m);
    p->x = 1.5;
    p->y = -2;
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(point, m, 10000, &a), AC_OK);
    assert_true(ac_msg_is(a.reply, &rt_point_type));
    const rt_point *q = ac_msg_data(a.reply);
    assert_true(q->x == 2.5 && q->y == -1);
    ac_answer_release(&a);

    /* No codec: the send fails, the message is a dead letter. */
    uint64_t dead = ac_dead_letter_count(f->sys);
    assert_int_equal(ac_tell(point, ac_msg_new(&rt_opaque_type, 8), NULL), AC_ECODEC);
    assert_non_null(strstr(ac_last_error(), "test.Opaque"));
    assert_int_equal(ac_dead_letter_count(f->sys), dead + 1);
    assert_int_equal(ac_ask_wait(point, ac_msg_new(&rt_opaque_type, 8), 10000, &a), AC_EDEAD);
    ac_answer_release(&a);

    /* A type the peer does not know: answered undeliverable, naming it. */
    m = ac_msg_new(&rt_unknown_type, sizeof(rt_point));
    assert_int_equal(ac_ask_wait(point, m, 10000, &a), AC_EDEAD);
    assert_string_equal(ac_error_name(a.error), AC_UNDELIVERABLE_ERROR);
    assert_non_null(strstr(ac_error_message(a.error), "test.Unknown"));
    ac_answer_release(&a);

    /* No actor at the path: undeliverable, naming the path. */
    ac_ref *none = resolve(f, "/user/nobody");
    assert_int_equal(ac_ask_wait(none, ac_msg_str_new("x"), 10000, &a), AC_EDEAD);
    assert_non_null(strstr(ac_error_message(a.error), "/user/nobody"));
    ac_answer_release(&a);
    ac_ref *deep = resolve(f, "/user/pool/nobody");
    assert_int_equal(ac_ask_wait(deep, ac_msg_str_new("x"), 10000, &a), AC_EDEAD);
    assert_non_null(strstr(ac_error_message(a.error), "/user/pool/nobody"));
    ac_answer_release(&a);
    ac_ref_release(deep);
    ac_ref_release(none);
    ac_ref_release(point);
}

static void test_timeouts_and_late_replies(void **state)
{
    fixture *f = *state;
    ac_ref *slow = resolve(f, "/user/slow");
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(slow, ac_msg_str_new("x"), 50, &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_ref_release(slow);
    /* The timed-out entry leaves the correlation table. */
    ac_node_stats s;
    for (int i = 0; i < 500; i++) {
        ac_node_stats_get(f->node, &s);
        if (s.pending_asks == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(s.pending_asks, 0);
}

/* ---- bad input -------------------------------------------------------------- */

static void test_bad_input(void **state)
{
    fixture *f = *state;
    assert_null(ac_node_resolve(NULL, "actorc://x@127.0.0.1:1/user/a"));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_null(ac_node_resolve(f->node, NULL));
    static const char *const bad[] = {
        "", "x", "actorc://", "actorc://replicas@127.0.0.1:1", "actorc://replicas@127.0.0.1:1/system/x",
        "actorc://replicas@:1/user/a", "actorc://replicas@127.0.0.1/user/a", "actorc://@127.0.0.1:1/user/a",
        "actorc://replicas@127.0.0.1:1/user/", "actorc://replicas@127.0.0.1:1/user//a",
        "actorc://other/user/a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(ac_node_resolve(f->node, bad[i]));
        assert_int_equal(ac_last_status(), AC_EINVAL);
        assert_true(strlen(ac_last_error()) > 0);
    }
    char own[256];
    snprintf(own, sizeof own, "actorc://client@%s/user/nobody", ac_node_address(f->node));
    assert_null(ac_node_resolve(f->node, own));
    assert_int_equal(ac_last_status(), AC_ENOTFOUND);

    /* A second node on the same system. */
    ac_node_options o = {.bind = "tcp://127.0.0.1:0"};
    assert_null(ac_node_start(f->sys, &o));
    assert_int_equal(ac_last_status(), AC_EEXIST);
    assert_ptr_equal(ac_system_node(f->sys), f->node);

    ac_system *sys = ac_system_create("other", NULL);
    assert_null(ac_node_start(sys, NULL));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    static const char *const binds[] = {"127.0.0.1:1", "tcp://127.0.0.1", "tcp://127.0.0.1:99999",
                                        "ipc:///tmp/x", "tcp://:1"};
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++) {
        o.bind = binds[i];
        assert_null(ac_node_start(sys, &o));
        assert_int_equal(ac_last_status(), AC_EINVAL);
        assert_non_null(strstr(ac_last_error(), "options.bind"));
    }
    /* Not loopback without keys: refused unless insecure is asked for. */
    o.bind = "tcp://0.0.0.0:0";
    o.advertise = "127.0.0.1:1";
    assert_null(ac_node_start(sys, &o));
    assert_int_equal(ac_last_status(), AC_ESECURITY);
    o.bind = "tcp://127.0.0.1:0";
    o.advertise = NULL;
    o.heartbeat_ivl_ms = -1;
    assert_null(ac_node_start(sys, &o));
    assert_non_null(strstr(ac_last_error(), "heartbeat_ivl_ms"));
    o.heartbeat_ivl_ms = 0;
    ac_node_curve c = {.server_public_key = "short"};
    o.curve = &c;
    assert_null(ac_node_start(sys, &o));
    assert_non_null(strstr(ac_last_error(), "server_public_key"));
    o.curve = NULL;
    /* The port (or the in-process name) in use. */
    char taken[160];
    snprintf(taken, sizeof taken, "%s", ac_node_endpoint(f->node));
    o.bind = taken;
    assert_null(ac_node_start(sys, &o));
    assert_int_equal(ac_last_status(), rt_inproc() ? AC_EEXIST : AC_ESYS);
    /* A good one, stopped twice, then used. */
    o.bind = "tcp://127.0.0.1:0";
    ac_node *n2 = ac_node_start(sys, &o);
    assert_non_null(n2);
    assert_int_equal(ac_node_register_type(n2, &rt_opaque_type), AC_ECODEC);
    assert_int_equal(ac_node_register_type(n2, NULL), AC_EINVAL);
    static const ac_msg_type clash = {.name = "test.Point", .encode = rt_point_encode,
                                      .decode = rt_point_decode};
    assert_int_equal(ac_node_register_type(n2, &rt_point_type), AC_OK);
    assert_int_equal(ac_node_register_type(n2, &clash), AC_EEXIST);
    assert_int_equal(ac_node_stop(n2), AC_OK);
    assert_int_equal(ac_node_stop(n2), AC_OK);
    char path[256];
    ac_ref *r = ac_node_resolve(n2, rt_path(&f->peer, "replicas", "/user/echo", path, sizeof path));
    assert_null(r);
    assert_int_equal(ac_node_stop(NULL), AC_EINVAL);
    ac_system_terminate(sys);
}

/* ---- node loss -------------------------------------------------------------- */

static void test_kill_fails_pending_asks_fast(void **state)
{
    fixture *f = *state;
    ac_ref *slow = resolve(f, "/user/slow");
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000); /* connected */
    ac_future *fu[8];
    for (int i = 0; i < 8; i++)
        fu[i] = ac_ask(slow, ac_msg_str_new("x"), 30000);
    sleep_ms(100);
    int64_t t0 = now_ms();
    peer_end(&f->peer, SIGKILL);
    for (int i = 0; i < 8; i++) {
        ac_answer a = {0};
        assert_int_equal(ac_future_wait(fu[i], 20000, &a), AC_EFAILED);
        assert_string_equal(ac_error_name(a.error), AC_NODE_DOWN_ERROR);
        assert_non_null(strstr(ac_error_message(a.error), "incarnation"));
        ac_answer_release(&a);
        ac_future_release(fu[i]);
    }
    int64_t took = now_ms() - t0;
    print_message("kill -9 seen, asks failed in %lld ms\n", (long long)took);
    /* Far under the asks' 30 s (kill -9 is seen through the dropped
     * connection; the bound is generous for loaded sanitizer runs). */
    assert_true(took < 5000);
    /* Its refs are dead: an ask fails at once, a tell is a dead letter. */
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("x"), 30000, &a), AC_EFAILED);
    assert_string_equal(ac_error_name(a.error), AC_NODE_DOWN_ERROR);
    ac_answer_release(&a);
    uint64_t dead = ac_dead_letter_count(f->sys);
    ac_tell(echo, ac_msg_str_new("x"), NULL);
    assert_int_equal(ac_dead_letter_count(f->sys), dead + 1);
    /* Counted before the asks were failed: seen as soon as they are. */
    ac_node_stats s;
    ac_node_stats_get(f->node, &s);
    assert_true(s.nodes_down >= 1);
    assert_true(s.asks_failed_by_node_loss >= 8);
    ac_ref_release(slow);
    ac_ref_release(echo);
}

static void test_sigstop_fails_after_heartbeat_timeout(void **state)
{
    (void)state;
    if (rt_inproc())
        skip(); /* processes and ZeroMQ only */
    static const char *const args[] = {"--hb", "100", "500", NULL};
    ac_node_options o = {.heartbeat_ivl_ms = 100, .heartbeat_timeout_ms = 500};
    fixture *f = fixture_new(args, &o);
    ac_ref *slow = resolve(f, "/user/slow");
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000);
    ac_future *fu = ac_ask(slow, ac_msg_str_new("x"), 30000);
    sleep_ms(50);
    int64_t t0 = now_ms();
    rt_signal(&f->peer, SIGSTOP);
    ac_answer a = {0};
    assert_int_equal(ac_future_wait(fu, 20000, &a), AC_EFAILED);
    int64_t took = now_ms() - t0;
    assert_string_equal(ac_error_name(a.error), AC_NODE_DOWN_ERROR);
    print_message("SIGSTOP seen after %lld ms (heartbeat timeout 500 ms)\n", (long long)took);
    assert_true(took >= 300 && took < 5000);
    ac_answer_release(&a);
    ac_future_release(fu);
    ac_ref_release(slow);
    ac_ref_release(echo);
    void *st = f;
    teardown(&st);
}

static void test_restart_on_same_port_is_a_new_incarnation(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "first", 10000);
    char bind[160], old_inc[32];
    snprintf(bind, sizeof bind, "%s://%s", rt_scheme(), f->peer.address);
    snprintf(old_inc, sizeof old_inc, "%s", f->peer.incarnation);
    peer_end(&f->peer, SIGKILL);
    const char *const args[] = {"--bind", bind, NULL};
    bool up = false;
    for (int i = 0; i < 50 && !up; i++) { /* the port may linger a moment */
        up = peer_start(&f->peer, args);
        if (!up)
            sleep_ms(100);
    }
    assert_true(up);
    assert_string_not_equal(f->peer.incarnation, old_inc);
    /* The old ref never reaches the new process. */
    for (int i = 0; i < 20; i++) {
        ac_tell(echo, ac_msg_str_new("old"), NULL);
        ac_answer a = {0};
        ac_status st = ac_ask_wait(echo, ac_msg_str_new("old"), 10000, &a);
        assert_int_equal(st, AC_EFAILED);
        assert_string_equal(ac_error_name(a.error), AC_NODE_DOWN_ERROR);
        ac_answer_release(&a);
    }
    ac_ref *fresh = resolve(f, "/user/echo");
    assert_ptr_not_equal(fresh, echo);
    ask_echo(fresh, "second", 10000);
    ac_answer a = {0};
    assert_int_equal(ac_ask_wait(fresh, ac_msg_str_new("count"), 10000, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 1);
    ac_answer_release(&a);
    ac_ref_release(fresh);
    ac_ref_release(echo);
}

/* ---- death watch ------------------------------------------------------------ */

typedef struct watch_log {
    pthread_mutex_t lock;
    char lines[8][256];
    int n;
} watch_log;

static void watch_receive(ac_ctx *ctx, ac_msg *msg)
{
    watch_log *log = ac_ctx_user_data(ctx);
    char line[256];
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        snprintf(line, sizeof line, "terminated %s lost=%d", ac_ref_path(ac_terminated_ref(msg)),
                 ac_terminated_node_lost(msg) ? 1 : 0);
    } else if (ac_msg_is(msg, &ac_msg_type_str)) {
        const char *s = ac_msg_str(msg);
        if (strncmp(s, "watch ", 6) == 0) {
            ac_ref *t = ac_node_resolve(ac_system_node(ac_ctx_system(ctx)), s + 6);
            assert_non_null(t);
            assert_int_equal(ac_watch(ctx, t), AC_OK);
            ac_reply(ctx, ac_msg_str_new("ok"));
            ac_ref_release(t);
            return;
        }
        if (strncmp(s, "unwatch ", 8) == 0) {
            ac_ref *t = ac_node_resolve(ac_system_node(ac_ctx_system(ctx)), s + 8);
            assert_int_equal(ac_unwatch(ctx, t), AC_OK);
            ac_reply(ctx, ac_msg_str_new("ok"));
            ac_ref_release(t);
            return;
        }
        snprintf(line, sizeof line, "%s", s);
    } else {
        return;
    }
    pthread_mutex_lock(&log->lock);
    if (log->n < 8)
        snprintf(log->lines[log->n++], sizeof log->lines[0], "%s", line);
    pthread_mutex_unlock(&log->lock);
}
static const ac_actor_def watch_def = {.name = "Watch", .receive = watch_receive};

static bool wait_line(watch_log *log, int n, int64_t ms)
{
    int64_t end = now_ms() + ms;
    while (now_ms() < end) {
        pthread_mutex_lock(&log->lock);
        int have = log->n;
        pthread_mutex_unlock(&log->lock);
        if (have >= n)
            return true;
        sleep_ms(5);
    }
    return false;
}

static void test_remote_death_watch_both_ways(void **state)
{
    fixture *f = *state;
    watch_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
    ac_props *props = ac_props_new(&watch_def, &log);
    ac_ref *w = ac_spawn(f->sys, props, "w");
    char path[256], cmd[300];
    ac_answer a = {0};
    /* We watch theirs: stopped. */
    snprintf(cmd, sizeof cmd, "watch %s", rt_path(&f->peer, "replicas", "/user/stopper", path, sizeof path));
    assert_int_equal(ac_ask_wait(w, ac_msg_str_new(cmd), 10000, &a), AC_OK);
    ac_answer_release(&a);
    ac_ref *stopper = resolve(f, "/user/stopper");
    ask_echo(stopper, "alive", 10000); /* the watch went out before this */
    ac_tell(stopper, ac_msg_str_new("stop"), NULL);
    assert_true(wait_line(&log, 1, 10000));
    char want[300];
    snprintf(want, sizeof want, "terminated %s lost=0", path);
    assert_string_equal(log.lines[0], want);

    /* They watch ours: their watcher reports to w. */
    ac_props *mp = ac_props_new(&echo_def, NULL);
    ac_ref *mine = ac_spawn(f->sys, mp, "mine");
    ac_ref *their_watcher = resolve(f, "/user/watcher");
    snprintf(cmd, sizeof cmd, "watch actorc://client@%s/user/mine", ac_node_address(f->node));
    /* Told with w as the sender: the report goes to w. */
    ac_tell(their_watcher, ac_msg_str_new(cmd), w);
    assert_true(wait_line(&log, 2, 10000)); /* "watching ...: AC_OK" */
    assert_non_null(strstr(log.lines[1], "AC_OK"));
    ac_stop(mine);
    assert_true(wait_line(&log, 3, 10000));
    snprintf(want, sizeof want, "terminated actorc://client@%s/user/mine lost=0", ac_node_address(f->node));
    assert_string_equal(log.lines[2], want);

    /* Unwatch, then watch another and lose the node: flagged. */
    snprintf(cmd, sizeof cmd, "watch %s", rt_path(&f->peer, "replicas", "/user/echo", path, sizeof path));
    assert_int_equal(ac_ask_wait(w, ac_msg_str_new(cmd), 10000, &a), AC_OK);
    ac_answer_release(&a);
    snprintf(cmd, sizeof cmd, "watch %s", rt_path(&f->peer, "replicas", "/user/slow", path, sizeof path));
    assert_int_equal(ac_ask_wait(w, ac_msg_str_new(cmd), 10000, &a), AC_OK);
    ac_answer_release(&a);
    snprintf(cmd, sizeof cmd, "unwatch %s", rt_path(&f->peer, "replicas", "/user/slow", path, sizeof path));
    assert_int_equal(ac_ask_wait(w, ac_msg_str_new(cmd), 10000, &a), AC_OK);
    ac_answer_release(&a);
    peer_end(&f->peer, SIGKILL);
    assert_true(wait_line(&log, 4, 10000));
    snprintf(want, sizeof want, "terminated %s lost=1",
             rt_path(&f->peer, "replicas", "/user/echo", path, sizeof path));
    assert_string_equal(log.lines[3], want);
    sleep_ms(200);
    assert_int_equal(log.n, 4); /* nothing for the unwatched one */
    ac_ref_release(their_watcher);
    ac_ref_release(stopper);
    ac_ref_release(w);
}

/* ---- CURVE ------------------------------------------------------------------ */

static void test_curve_admits_listed_keys_only(void **state)
{
    (void)state;
    if (strcmp(rt_scheme(), "tcp") != 0)
        skip(); /* processes and ZeroMQ only */
    char spub[41], ssec[41], cpub[41], csec[41], ppub[41], psec[41], xpub[41], xsec[41];
    assert_int_equal(ac_node_curve_keypair(spub, ssec), AC_OK);
    assert_int_equal(ac_node_curve_keypair(cpub, csec), AC_OK);
    assert_int_equal(ac_node_curve_keypair(ppub, psec), AC_OK);
    assert_int_equal(ac_node_curve_keypair(xpub, xsec), AC_OK);
    /* The peer lets in the client's key. */
    const char *const args[] = {"--curve", spub, ssec, ppub, psec, cpub, NULL};
    const char *allowed[] = {ppub};
    ac_node_curve c = {.server_public_key = spub, .server_secret_key = ssec, .public_key = cpub,
                       .secret_key = csec, .allowed = allowed, .allowed_count = 1};
    ac_node_options o = {.curve = &c};
    fixture *f = fixture_new(args, &o);
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "secret", 10000);
    ac_ref_release(echo);

    /* A third node with an unknown key gets nothing through. */
    ac_system *x = ac_system_create("intruder", NULL);
    const char *xallowed[] = {ppub};
    ac_node_curve xc = {.server_public_key = spub, .server_secret_key = ssec, .public_key = xpub,
                        .secret_key = xsec, .allowed = xallowed, .allowed_count = 1};
    ac_node_options xo = {.bind = "tcp://127.0.0.1:0", .curve = &xc};
    ac_node *xn = ac_node_start(x, &xo);
    assert_non_null(xn);
    char path[256];
    ac_ref *xr = ac_node_resolve(xn, rt_path(&f->peer, "replicas", "/user/echo", path, sizeof path));
    ac_answer a = {0};
    for (int i = 0; i < 5; i++)
        ac_tell(xr, ac_msg_str_new("intruder"), NULL);
    assert_int_equal(ac_ask_wait(xr, ac_msg_str_new("intruder"), 10000, &a), AC_EFAILED);
    assert_string_equal(ac_error_name(a.error), AC_NODE_DOWN_ERROR);
    ac_answer_release(&a);
    ac_ref_release(xr);
    ac_system_terminate(x);
    /* The peer's echo saw none of it. */
    echo = resolve(f, "/user/echo");
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("count"), 10000, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 1);
    ac_answer_release(&a);
    ac_ref_release(echo);
    void *st = f;
    teardown(&st);
}

/* ---- the correlation table under churn --------------------------------------- */

static void test_many_asks_leave_no_entries(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    ac_ref *slow = resolve(f, "/user/slow");
    ask_echo(echo, "up", 10000);
    enum { N = 100000, WINDOW = 2000 };
    ac_future **fu = calloc(N, sizeof *fu);
    int replies = 0, timeouts = 0, down = 0;
    for (int i = 0; i < N; i++) {
        ac_ref *t = i % 10 == 0 ? slow : echo;
        fu[i] = ac_ask(t, ac_msg_str_new("x"), i % 10 == 0 ? 5 : 20000);
        if (i == N * 3 / 4)
            peer_end(&f->peer, SIGKILL);
        if (i >= WINDOW) {
            ac_answer a = {0};
            ac_status st = ac_future_wait(fu[i - WINDOW], 30000, &a);
            replies += st == AC_OK;
            timeouts += st == AC_ETIMEOUT;
            down += st == AC_EFAILED && ac_error_is(a.error, AC_NODE_DOWN_ERROR);
            assert_true(st == AC_OK || st == AC_ETIMEOUT || st == AC_EFAILED);
            ac_answer_release(&a);
            ac_future_release(fu[i - WINDOW]);
        }
    }
    for (int i = N - WINDOW; i < N; i++) {
        ac_answer a = {0};
        ac_status st = ac_future_wait(fu[i], 30000, &a);
        replies += st == AC_OK;
        timeouts += st == AC_ETIMEOUT;
        down += st == AC_EFAILED && ac_error_is(a.error, AC_NODE_DOWN_ERROR);
        ac_answer_release(&a);
        ac_future_release(fu[i]);
    }
    free(fu);
    print_message("%d replies, %d timeouts, %d node-down\n", replies, timeouts, down);
    assert_true(replies > 0 && timeouts > 0 && down > 0);
    assert_int_equal(replies + timeouts + down, N);
    ac_node_stats s;
    for (int i = 0; i < 1000; i++) {
        ac_node_stats_get(f->node, &s);
        if (s.pending_asks == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(s.pending_asks, 0);
    ac_ref_release(echo);
    ac_ref_release(slow);
}

/* Calls through a circuit breaker to a remote actor: the breaker's own
 * reply ref waits in the correlation table like an ask's, through the
 * node's sweeps, until its answer or its timeout, and leaves no entry. */
static void test_breaker_calls_across_the_wire(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    ac_ref *slow = resolve(f, "/user/slow");
    ask_echo(echo, "up", 10000);
    ac_breaker_options bo = {.name = "remote", .max_failures = 1000};
    ac_breaker *b = ac_breaker_create(f->sys, &bo);
    assert_non_null(b);
    ac_future *waiting = ac_breaker_ask(b, slow, ac_msg_str_new("x"), 2000);
    assert_non_null(waiting);
    sleep_ms(300); /* many sweeps of the table */
    ac_node_stats s;
    ac_node_stats_get(f->node, &s);
    assert_int_equal(s.pending_asks, 1);
    for (int i = 0; i < 200; i++) {
        ac_answer a = {0};
        ac_future *fu = ac_breaker_ask(b, echo, ac_msg_str_new("y"), 10000);
        assert_int_equal(ac_future_wait(fu, 20000, &a), AC_OK);
        assert_string_equal(ac_msg_str(a.reply), "y");
        ac_answer_release(&a);
        ac_future_release(fu);
    }
    ac_answer a = {0};
    assert_int_equal(ac_future_wait(waiting, 20000, &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_future_release(waiting);
    for (int i = 0; i < 100; i++) {
        ac_node_stats_get(f->node, &s);
        if (s.pending_asks == 0)
            break;
        sleep_ms(20);
    }
    assert_int_equal(s.pending_asks, 0);
    ac_breaker_release(b);
    ac_ref_release(echo);
    ac_ref_release(slow);
}

/* A peer that stops reading: at most max_queue frames wait for it, then
 * sends are refused, counted, and their messages are dead letters. */
static void test_backpressure_is_bounded(void **state)
{
    (void)state;
    if (rt_inproc())
        skip(); /* processes and ZeroMQ only */
    static const char *const args[] = {"--hb", "5000", "20000", NULL};
    ac_node_options o = {.max_queue = 64, .heartbeat_ivl_ms = 5000, .heartbeat_timeout_ms = 20000};
    fixture *f = fixture_new(args, &o);
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000);
    rt_signal(&f->peer, SIGSTOP);
    static uint8_t blob[16384];
    uint64_t dead0 = ac_dead_letter_count(f->sys);
    int refused = 0;
    for (int i = 0; i < 20000 && refused == 0; i++)
        refused += ac_tell(echo, ac_msg_bytes_new(blob, sizeof blob), NULL) != AC_OK;
    for (int i = 0; i < 1000; i++)
        refused += ac_tell(echo, ac_msg_bytes_new(blob, sizeof blob), NULL) != AC_OK;
    ac_node_stats s;
    ac_node_stats_get(f->node, &s);
    print_message("%d sends refused, %llu frames dropped for backpressure\n", refused,
                  (unsigned long long)s.dropped_backpressure);
    assert_true(refused > 0);
    assert_true(s.dropped_backpressure >= (uint64_t)refused);
    assert_true(ac_dead_letter_count(f->sys) >= dead0 + (uint64_t)refused);
    rt_signal(&f->peer, SIGCONT);
    ac_ref_release(echo);
    void *st = f;
    teardown(&st);
}

static void test_key_files(void **state)
{
    (void)state;
    if (rt_inproc())
        skip(); /* processes and ZeroMQ only */
    char pub[41], sec[41], back[41];
    assert_int_equal(ac_node_curve_keypair(pub, sec), AC_OK);
    assert_int_equal(strlen(pub), 40);
    char path[] = "/tmp/actorc-key-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s\n", sec);
    fclose(f);
    assert_int_equal(ac_node_curve_read_key(path, back), AC_OK);
    assert_string_equal(back, sec);
    f = fopen(path, "w");
    fprintf(f, "not a key\n");
    fclose(f);
    assert_int_equal(ac_node_curve_read_key(path, back), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "no Z85 key"));
    unlink(path);
    assert_int_equal(ac_node_curve_read_key(path, back), AC_ENOTFOUND);
    assert_int_equal(ac_node_curve_read_key(NULL, back), AC_EINVAL);
    assert_int_equal(ac_node_curve_keypair(NULL, sec), AC_EINVAL);
}

static void test_free_ports(void **state)
{
    (void)state;
    if (rt_inproc())
        skip(); /* processes and ZeroMQ only */
    int ports[AC_NODE_FREE_PORTS_MAX];
    assert_int_equal(ac_node_free_ports(ports, AC_NODE_FREE_PORTS_MAX), AC_OK);
    for (int i = 0; i < AC_NODE_FREE_PORTS_MAX; i++) {
        assert_true(ports[i] > 0 && ports[i] < 65536);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(ports[i], ports[j]);
    }
    /* Free indeed: a node binds the first. */
    ac_system *sys = ac_system_create("ports", NULL);
    assert_non_null(sys);
    char bind[64];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", ports[0]);
    assert_non_null(ac_node_start(sys, &(ac_node_options){.bind = bind}));
    ac_system_terminate(sys);
    assert_int_equal(ac_node_free_ports(NULL, 1), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "ports is NULL"));
    assert_int_equal(ac_node_free_ports(ports, 0), AC_EINVAL);
    assert_int_equal(ac_node_free_ports(ports, AC_NODE_FREE_PORTS_MAX + 1), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "from 1 to 64"));
}

/* ---- scatter/gather across nodes ---------------------------------------------- */

static ac_ref *resolve_on(fixture *f, const rt_proc *p, const char *path)
{
    char buf[256];
    ac_ref *r = ac_node_resolve(f->node, rt_path(p, "replicas", path, buf, sizeof buf));
    if (!r)
        fail_msg("resolve %s: %s", buf, ac_last_error());
    return r;
}

static void test_scatter_across_nodes(void **state)
{
    fixture *f = *state; /* f->peer is A */
    static const char *const args[] = {NULL};
    rt_proc b, c;
    assert_true(peer_start(&b, args));
    assert_true(peer_start(&c, args));

    /* The first success wins; its sender is the winning remote routee. */
    ac_ref *r1[3] = {resolve_on(f, &f->peer, "/user/slow"), resolve_on(f, &b, "/user/echo"),
                     resolve_on(f, &c, "/user/echo")};
    ac_scatter_gather_options so = {.timeout_ms = 5000};
    ac_ref *sg = ac_spawn(f->sys, ac_router_group_scatter_gather_first_completed(r1, 3, &so), "sg1");
    assert_non_null(sg);
    for (int i = 0; i < 20; i++) {
        ac_answer a = {0};
        assert_int_equal(ac_ask_wait(sg, ac_msg_str_new("q"), 10000, &a), AC_OK);
        assert_string_equal(ac_msg_str(a.reply), "q");
        assert_true(a.sender == r1[1] || a.sender == r1[2]);
        ac_answer_release(&a);
    }

    /* Routees on a node that is lost mid-scatter: NodeDownError members at
     * once, a timeout for the one still silent, in scatter order. */
    ac_ref *r2[3] = {resolve_on(f, &f->peer, "/user/slow"), resolve_on(f, &b, "/user/slow"),
                     resolve_on(f, &c, "/user/slow")};
    so.timeout_ms = 1500;
    ac_ref *sg2 = ac_spawn(f->sys, ac_router_group_scatter_gather_first_completed(r2, 3, &so), "sg2");
    ac_future *fu = ac_ask(sg2, ac_msg_str_new("q"), 20000);
    sleep_ms(100);
    peer_end(&f->peer, SIGKILL);
    ac_answer a = {0};
    assert_int_equal(ac_future_wait(fu, 20000, &a), AC_EFAILED);
    ac_future_release(fu);
    assert_string_equal(ac_error_name(a.error), AC_AGGREGATE_ERROR);
    assert_int_equal(ac_error_member_count(a.error), 3);
    assert_string_equal(ac_error_name(ac_error_member(a.error, 0)), AC_NODE_DOWN_ERROR);
    assert_string_equal(ac_error_name(ac_error_member(a.error, 1)), AC_ASK_TIMEOUT_ERROR);
    assert_string_equal(ac_error_name(ac_error_member(a.error, 2)), AC_ASK_TIMEOUT_ERROR);
    assert_false(ac_error_all_timeouts(a.error)); /* broken, not slow */
    ac_answer_release(&a);

    /* Every routee's node lost: answered long before the deadline. */
    ac_ref *r3[2] = {resolve_on(f, &b, "/user/slow"), resolve_on(f, &c, "/user/slow")};
    so.timeout_ms = 30000;
    ac_ref *sg3 = ac_spawn(f->sys, ac_router_group_scatter_gather_first_completed(r3, 2, &so), "sg3");
    fu = ac_ask(sg3, ac_msg_str_new("q"), 40000);
    sleep_ms(100);
    int64_t t0 = now_ms();
    peer_end(&b, SIGKILL);
    peer_end(&c, SIGKILL);
    assert_int_equal(ac_future_wait(fu, 40000, &a), AC_EFAILED);
    assert_true(now_ms() - t0 < 10000);
    ac_future_release(fu);
    assert_int_equal(ac_error_member_count(a.error), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(ac_error_name(ac_error_member(a.error, i)), AC_NODE_DOWN_ERROR);
    assert_false(ac_error_all_timeouts(a.error));
    assert_non_null(strstr(ac_error_message(a.error), "all 2 routees failed"));
    ac_answer_release(&a);
    for (int i = 0; i < 3; i++) {
        ac_ref_release(r1[i]);
        ac_ref_release(r2[i]);
    }
    ac_ref_release(r3[0]);
    ac_ref_release(r3[1]);
    ac_ref_release(sg);
    ac_ref_release(sg2);
    ac_ref_release(sg3);
}

/* ---- collisions -------------------------------------------------------------- */

typedef struct collide_arg {
    ac_ref *echo;
    int seed, asks, ok, timeouts, down, other;
} collide_arg;

/* Asks until the node's stop has been seen (a node-down), at least 3,000
 * (an in-process transport answers those before the stop comes), at
 * most for 60 s. */
static void *collide_thread(void *p)
{
    collide_arg *c = p;
    unsigned r = (unsigned)c->seed;
    int64_t end = now_ms() + 60000;
    for (int i = 0; i < 3000 || (c->down == 0 && now_ms() < end); i++) {
        c->asks++;
        r = r * 1103515245u + 12345u;
        ac_answer a = {0};
        /* Timeouts about one round trip: replies and deadlines meet. */
        ac_status st = ac_ask_wait(c->echo, ac_msg_str_new("c"), 1 + (int64_t)(r >> 16) % 3, &a);
        if (st == AC_OK)
            c->ok++;
        else if (st == AC_ETIMEOUT)
            c->timeouts++;
        else if (st == AC_EFAILED && ac_error_is(a.error, AC_NODE_DOWN_ERROR))
            c->down++;
        else
            c->other++;
        ac_answer_release(&a);
    }
    return NULL;
}

/* Replies meeting their timeouts, and a node stop meeting sends, from
 * four threads at once. Every ask settles once; nothing is left behind. */
static void test_replies_timeouts_and_stop_collide(void **state)
{
    fixture *f = *state;
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000);
    collide_arg c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (collide_arg){.echo = echo, .seed = i + 1};
        pthread_create(&t[i], NULL, collide_thread, &c[i]);
    }
    sleep_ms(300);
    assert_int_equal(ac_node_stop(f->node), AC_OK);
    int ok = 0, timeouts = 0, down = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].other, 0);
        ok += c[i].ok;
        timeouts += c[i].timeouts;
        down += c[i].down;
    }
    print_message("%d replies, %d timeouts, %d node-down\n", ok, timeouts, down);
    int asks = 0;
    for (int i = 0; i < 4; i++)
        asks += c[i].asks;
    assert_int_equal(ok + timeouts + down, asks);
    assert_true(down > 0);
    ac_node_stats s;
    for (int i = 0; i < 1000; i++) {
        ac_node_stats_get(f->node, &s);
        if (s.pending_asks == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(s.pending_asks, 0);
    ac_ref_release(echo);
}

/* ---- metrics --------------------------------------------------------------- */

static void test_metrics_per_peer(void **state)
{
    (void)state;
    static const char *const args[] = {NULL};
    /* A fixture whose system has metrics on before its node starts. */
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->sys = ac_system_create("client", &(ac_system_options){.workers = 2});
    assert_int_equal(ac_metrics_enable(f->sys), AC_OK);
    char bind[64];
    f->node = ac_node_start(f->sys, &(ac_node_options){.bind = rt_bind("client", bind, sizeof bind)});
    assert_non_null(f->node);
    assert_true(peer_start(&f->peer, args));
    ac_ref *echo = resolve(f, "/user/echo");
    for (int i = 0; i < 10; i++)
        ask_echo(echo, "m", 10000);
    char peer[200];
    snprintf(peer, sizeof peer, "replicas@%s", f->peer.address);
    const char *v[] = {peer};
    ac_metric_value mv;
    assert_int_equal(ac_metrics_read(f->sys, "actorc_remote_frames_sent_total", v, 1, &mv), AC_OK);
    assert_true(mv.value >= 10);
    assert_int_equal(ac_metrics_read(f->sys, "actorc_remote_frames_received_total", v, 1, &mv), AC_OK);
    assert_true(mv.value >= 10);
    assert_int_equal(ac_metrics_read(f->sys, "actorc_remote_bytes_sent_total", v, 1, &mv), AC_OK);
    assert_true(mv.value >= 10 * 20);
    ac_ref *slow = resolve(f, "/user/slow");
    ac_future *fu = ac_ask(slow, ac_msg_str_new("x"), 30000);
    ac_ref_release(slow);
    sleep_ms(50);
    peer_end(&f->peer, SIGKILL);
    ac_answer a = {0};
    assert_int_equal(ac_future_wait(fu, 20000, &a), AC_EFAILED);
    ac_answer_release(&a);
    ac_future_release(fu);
    assert_int_equal(ac_metrics_read(f->sys, "actorc_remote_nodes_down_total", NULL, 0, &mv), AC_OK);
    assert_true(mv.value == 1);
    assert_int_equal(ac_metrics_read(f->sys, "actorc_remote_asks_failed_node_down_total", NULL, 0, &mv),
                     AC_OK);
    assert_true(mv.value == 1);
    ac_ref_release(echo);
    void *st = f;
    teardown(&st);
}

/* ---- backpressure ---------------------------------------------------------- */

/* A burst far over max_queue: every tell arrives, or is refused (a dead
 * letter here, counted); none vanish, also when ZeroMQ's own queue to the
 * peer is full and frames must wait. */
static void test_a_burst_loses_nothing_silently(void **state)
{
    (void)state;
    static const char *const args[] = {NULL};
    ac_node_options o = {.max_queue = 500};
    fixture *f = fixture_new(args, &o);
    ac_ref *echo = resolve(f, "/user/echo");
    ask_echo(echo, "up", 10000);
    uint64_t dead0 = ac_dead_letter_count(f->sys);
    enum { N = 50000 };
    uint64_t refused = 0;
    for (int i = 0; i < N; i++) {
        ac_status st = ac_tell(echo, ac_msg_str_new("t"), NULL);
        assert_true(st == AC_OK || st == AC_EFAILED);
        refused += st != AC_OK;
    }
    /* The count, once the queue has room for the ask again (a refused
     * ask fails at once, and is a dead letter too). */
    ac_answer a = {0};
    ac_status st = AC_EFAILED;
    uint64_t refused_asks = 0;
    for (int i = 0; i < 3000 && st != AC_OK; i++) {
        st = ac_ask_wait(echo, ac_msg_str_new("count"), 30000, &a);
        if (st != AC_OK) {
            assert_int_equal(st, AC_EDEAD);
            refused_asks++;
            ac_answer_release(&a);
            sleep_ms(10);
        }
    }
    assert_int_equal(st, AC_OK);
    int64_t delivered = ac_msg_int64(a.reply) - 1; /* less the "up" */
    ac_answer_release(&a);
    ac_node_stats s;
    ac_node_stats_get(f->node, &s);
    uint64_t dead = ac_dead_letter_count(f->sys) - dead0;
    print_message("%lld delivered, %llu refused\n", (long long)delivered, (unsigned long long)refused);
    assert_int_equal((uint64_t)delivered + refused, N);
    assert_int_equal(dead, refused + refused_asks);
    assert_int_equal(s.dropped_backpressure, dead); /* each refusal a dead letter, no other loss */
    assert_true(delivered > 0);
    ac_ref_release(echo);
    void *st_ptr = f;
    teardown(&st_ptr);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ask_and_reply_sender, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_burst_arrives_in_order_frame_by_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ask_from_inside_an_actor_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_asks_us, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_survive_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_codec_and_unknown_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeouts_and_late_replies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_fails_pending_asks_fast, setup, teardown),
        cmocka_unit_test(test_sigstop_fails_after_heartbeat_timeout),
        cmocka_unit_test_setup_teardown(test_restart_on_same_port_is_a_new_incarnation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_death_watch_both_ways, setup, teardown),
        cmocka_unit_test(test_curve_admits_listed_keys_only),
        cmocka_unit_test(test_metrics_per_peer),
        cmocka_unit_test(test_key_files),
        cmocka_unit_test(test_free_ports),
        cmocka_unit_test(test_backpressure_is_bounded),
        cmocka_unit_test(test_a_burst_loses_nothing_silently),
        cmocka_unit_test_setup_teardown(test_many_asks_leave_no_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_breaker_calls_across_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replies_timeouts_and_stop_collide, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scatter_across_nodes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
