/*
 * The direct TCP transport (tcp+direct://) against what strangers and
 * bad networks do: bytes that are not a preface, a preface that never
 * comes, a record longer than the node takes, a crowd of connections
 * that never say who they are, a peer that goes silent, a peer that
 * stops reading, and sends racing a node's stop. Raw sockets stand for
 * the stranger; every case ends with the node still serving a well-
 * behaved peer. The cases every transport shares run in remote.nodes.direct
 * (test_nodes.c), remote.idle and remote.fault.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <actorc.h>

#include "node_pair.h"
#include "node_serve.h"
#include "rt_proc.h"
#include "test_support.h"

#define BIND "tcp+direct://127.0.0.1:0"

static ac_node_stats stats_of(ac_node *n)
{
    ac_node_stats s;
    ac_node_stats_get(n, &s);
    return s;
}

/* A node b serving the echo actor, and a client node a that resolved it. */
typedef struct duo {
    ac_system *sa, *sb;
    ac_node *a, *b;
    ac_ref *echo;
} duo;

static void duo_start(duo *d, ac_node_options ob)
{
    d->sb = rt_node_system("b", BIND, ob, &d->b);
    assert_true(rt_serve(d->sb, d->b));
    d->sa = rt_node_system("a", BIND, (ac_node_options){0}, &d->a);
    d->echo = rt_resolve(d->a, "b", d->b, "/user/echo");
}

static void duo_end(duo *d)
{
    ac_ref_release(d->echo);
    ac_system_terminate(d->sa);
    ac_system_terminate(d->sb);
}

/* A raw connection to a node's address. */
static int raw_dial(ac_node *n)
{
    const char *addr = ac_node_address(n);
    const char *colon = strrchr(addr, ':');
    assert_non_null(colon);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Milliseconds until the node closes fd (an end of stream or a reset),
 * whatever it sends first; -1 when it stays open for timeout_ms. */
static int64_t await_closed(int fd, int timeout_ms)
{
    int64_t t0 = ts_now_ms();
    for (;;) {
        int64_t left = timeout_ms - (ts_now_ms() - t0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        uint8_t buf[256];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return ts_now_ms() - t0;
    }
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A well-formed preface: "ACTD", version 1, the time to live, an id. */
static void preface(uint8_t out[20], uint32_t ttl_ms, uint64_t id)
{
    memcpy(out, "ACTD\x01\0\0\0", 8);
    put_be32(out + 8, ttl_ms);
    memcpy(out + 12, &id, 8);
}

/* Bad input counted, awaited (it is counted on the node's thread). */
static void await_bad_input(ac_node *n, uint64_t at_least)
{
    int64_t t0 = ts_now_ms();
    while (stats_of(n).decode_errors < at_least && ts_now_ms() - t0 < 10000)
        ts_sleep_ms(5);
    assert_true(stats_of(n).decode_errors >= at_least);
}

/* ---- strangers ---------------------------------------------------------------- */

static void test_ten_random_bytes_never_hang_the_node(void **state)
{
    (void)state;
    duo d;
    duo_start(&d, (ac_node_options){.connect_timeout_ms = 300});
    srand(7);
    int fds[20];
    for (int i = 0; i < 20; i++) {
        uint8_t junk[10];
        for (int k = 0; k < 10; k++)
            junk[k] = (uint8_t)rand();
        fds[i] = raw_dial(d.b);
        if (i % 2) { /* after a good preface: a record header and then some */
            uint8_t pre[20];
            preface(pre, 0, 1000 + (uint64_t)i);
            send_all(fds[i], pre, sizeof pre);
        }
        send_all(fds[i], junk, sizeof junk);
    }
    rt_ask_echo(d.echo, "still here", 10000);
    /* Short of a preface they wait out its deadline; after one, a length
     * over the cap is closed at once and a short record is a dialler
     * that owes the rest (its time to live is 0: none). */
    for (int i = 0; i < 20; i += 2)
        assert_true(await_closed(fds[i], 10000) >= 0);
    for (int i = 0; i < 20; i++)
        close(fds[i]);
    await_bad_input(d.b, 10);
    rt_ask_echo(d.echo, "and after", 10000);
    duo_end(&d);
}

static void test_a_silent_connection_is_closed_at_the_preface_deadline(void **state)
{
    (void)state;
    duo d;
    duo_start(&d, (ac_node_options){.connect_timeout_ms = 400});
    uint64_t bad0 = stats_of(d.b).decode_errors;
    int fd = raw_dial(d.b);
    int64_t took = await_closed(fd, 10000);
    close(fd);
    print_message("a silent connection closed after %lld ms (deadline 400 ms)\n", (long long)took);
    assert_true(took >= 300 && took < 10000);
    await_bad_input(d.b, bad0 + 1);
    rt_ask_echo(d.echo, "up", 10000);
    duo_end(&d);
}

static void test_a_garbage_preface_is_closed_at_once(void **state)
{
    (void)state;
    duo d;
    duo_start(&d, (ac_node_options){.connect_timeout_ms = 20000});
    uint64_t bad0 = stats_of(d.b).decode_errors;
    int fd = raw_dial(d.b);
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, http, sizeof http - 1);
    int64_t took = await_closed(fd, 10000);
    close(fd);
    assert_true(took >= 0 && took < 5000); /* long before the 20 s deadline */
    await_bad_input(d.b, bad0 + 1);
    /* Another version of the protocol: the same. */
    fd = raw_dial(d.b);
    uint8_t pre[20];
    preface(pre, 0, 42);
    pre[4] = 2;
    send_all(fd, pre, sizeof pre);
    took = await_closed(fd, 10000);
    close(fd);
    assert_true(took >= 0 && took < 5000);
    await_bad_input(d.b, bad0 + 2);
    rt_ask_echo(d.echo, "up", 10000);
    duo_end(&d);
}

static void test_an_oversized_record_is_a_protocol_error(void **state)
{
    (void)state;
    duo d;
    duo_start(&d, (ac_node_options){.max_frame = 65536});
    uint64_t bad0 = stats_of(d.b).decode_errors;
    int fd = raw_dial(d.b);
    uint8_t pre[24];
    preface(pre, 0, 77);
    put_be32(pre + 20, 65537); /* one over the largest message b takes */
    send_all(fd, pre, sizeof pre);
    int64_t took = await_closed(fd, 10000);
    close(fd);
    assert_true(took >= 0 && took < 5000);
    await_bad_input(d.b, bad0 + 1);
    /* At the cap, a record is read whole (and, not being a node's
     * frames, dropped as bad input without closing anything). */
    fd = raw_dial(d.b);
    static uint8_t big[24 + 65536 + 4];
    preface(big, 0, 78);
    put_be32(big + 20, 65536);
    /* ... then a heartbeat (the last 4 bytes, zero): answered only once
     * the record before it was taken whole. */
    send_all(fd, big, sizeof big);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    uint8_t pong[4] = {1, 1, 1, 1};
    assert_int_equal(recv(fd, pong, sizeof pong, MSG_WAITALL), 4);
    assert_memory_equal(pong, "\0\0\0\0", 4);
    close(fd);
    rt_ask_echo(d.echo, "up", 10000);
    duo_end(&d);
}

/* 200 connections that never send a preface: at most 64 wait at once
 * (the oldest are closed for the newest), and a node that says who it
 * is still gets through. */
static void test_many_half_open_connections_are_bounded(void **state)
{
    (void)state;
    enum { N = 200 };
    duo d;
    duo_start(&d, (ac_node_options){.connect_timeout_ms = 60000});
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = raw_dial(d.b);
    rt_ask_echo(d.echo, "through the crowd", 10000);
    int closed = 0;
    for (int i = 0; i < N; i++)
        closed += await_closed(fds[i], i < N - 64 ? 10000 : 1) >= 0;
    print_message("%d of %d half-open connections closed\n", closed, N);
    assert_true(closed >= N - 64);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    rt_ask_echo(d.echo, "after the crowd", 10000);
    duo_end(&d);
}

/* ---- liveness ------------------------------------------------------------------ */

static void test_heartbeats_are_answered_and_a_silent_dialler_dropped(void **state)
{
    (void)state;
    duo d;
    duo_start(&d, (ac_node_options){0});
    int fd = raw_dial(d.b);
    uint8_t pre[24];
    preface(pre, 300, 99); /* a time to live of 300 ms */
    memset(pre + 20, 0, 4); /* a heartbeat */
    send_all(fd, pre, sizeof pre);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    uint8_t pong[4] = {1, 1, 1, 1};
    assert_int_equal(recv(fd, pong, sizeof pong, MSG_WAITALL), 4);
    assert_memory_equal(pong, "\0\0\0\0", 4);
    uint64_t bad0 = stats_of(d.b).decode_errors;
    int64_t took = await_closed(fd, 10000);
    close(fd);
    print_message("a silent dialler dropped after %lld ms (twice its time to live of 300 ms)\n",
                  (long long)took);
    assert_true(took >= 500 && took < 10000);
    assert_int_equal(stats_of(d.b).decode_errors, bad0); /* silence is no bad input */
    duo_end(&d);
}

/* A listener that takes connections and never answers: what a stopped
 * peer looks like. The dialler's heartbeats go unanswered and the peer
 * is lost within the heartbeat timeout, long before connect_timeout. */
static void test_an_unanswering_peer_is_lost_within_the_heartbeat_timeout(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l, 8), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    ac_node *a;
    ac_system *sa_sys = rt_node_system("a", BIND, (ac_node_options){.heartbeat_ivl_ms = 100,
                                            .heartbeat_timeout_ms = 500, .connect_timeout_ms = 30000}, &a);
    char path[128];
    snprintf(path, sizeof path, "actorc://b@127.0.0.1:%u/user/echo", ntohs(sa.sin_port));
    ac_ref *r = ac_node_resolve(a, path);
    assert_non_null(r);
    int64_t t0 = ts_now_ms();
    ac_answer ans = {0};
    assert_int_equal(ac_ask_wait(r, ac_msg_str_new("x"), 30000, &ans), AC_EFAILED);
    int64_t took = ts_now_ms() - t0;
    assert_string_equal(ac_error_name(ans.error), AC_NODE_DOWN_ERROR);
    print_message("lost after %lld ms (heartbeat timeout 500 ms): %s\n", (long long)took,
                  ac_error_message(ans.error));
    assert_non_null(strstr(ac_error_message(ans.error), "heartbeats stopped"));
    assert_true(took >= 400 && took < 10000);
    ac_answer_release(&ans);
    ac_ref_release(r);
    ac_system_terminate(sa_sys);
    close(l);
}

/* ---- backpressure ---------------------------------------------------------------- */

/* A peer process stopped: its socket fills, sends are refused once the
 * connection holds max_queue messages; continued, it drains, the node
 * is told the connection is writable again, and what waited goes. */
static void test_a_stopped_reader_fills_then_drains(void **state)
{
    (void)state;
    static const char *const args[] = {"--bind", BIND, "--hb", "5000", "20000", NULL};
    rt_proc peer;
    assert_true(rt_start(&peer, args));
    ac_node *a;
    ac_system *sa = rt_node_system("a", BIND, (ac_node_options){.max_queue = 64,
                                       .heartbeat_ivl_ms = 5000, .heartbeat_timeout_ms = 20000}, &a);
    char path[256];
    ac_ref *echo = ac_node_resolve(a, rt_path(&peer, "replicas", "/user/echo", path, sizeof path));
    assert_non_null(echo);
    rt_ask_echo(echo, "up", 10000);
    rt_signal(&peer, SIGSTOP);
    static uint8_t blob[16384];
    int refused = 0;
    for (int i = 0; i < 20000 && refused == 0; i++)
        refused += ac_tell(echo, ac_msg_bytes_new(blob, sizeof blob), NULL) != AC_OK;
    assert_true(refused > 0);
    assert_true(stats_of(a).dropped_backpressure >= 1);
    rt_signal(&peer, SIGCONT);
    /* Refused while the backlog is full; taken once the connection, told
     * writable, has let the backlog go. */
    int64_t t0 = ts_now_ms();
    ac_status st = AC_EFAILED;
    while (st != AC_OK && ts_now_ms() - t0 < 30000) {
        ac_answer ans = {0};
        st = ac_ask_wait(echo, ac_msg_str_new("drained"), 10000, &ans);
        ac_answer_release(&ans);
        if (st != AC_OK)
            ts_sleep_ms(20);
    }
    assert_int_equal(st, AC_OK);
    assert_int_equal(stats_of(a).nodes_down, 0);
    ac_ref_release(echo);
    ac_system_terminate(sa);
    rt_end(&peer, SIGKILL);
}

/* ---- races ---------------------------------------------------------------------- */

typedef struct asker {
    ac_ref *echo;
    atomic_int ok; /* read by the test thread while the asker runs */
    int failed;
} asker;

/* Until the stop has failed a few in a row (or for long enough). */
static void *ask_loop(void *arg)
{
    asker *k = arg;
    for (int i = 0; i < 200000 && k->failed < 20; i++) {
        ac_answer ans = {0};
        if (ac_ask_wait(k->echo, ac_msg_str_new("x"), 10000, &ans) == AC_OK)
            atomic_fetch_add(&k->ok, 1);
        else
            k->failed++;
        ac_answer_release(&ans);
    }
    return NULL;
}

/* Asks from four threads while the node they go to stops, three times
 * over: every ask settles, nothing crashes (TSan watches the rest). */
static void test_sends_race_a_stopping_peer(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        duo d;
        duo_start(&d, (ac_node_options){0});
        rt_ask_echo(d.echo, "up", 10000);
        asker k[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            k[i] = (asker){.echo = d.echo};
            assert_int_equal(pthread_create(&th[i], NULL, ask_loop, &k[i]), 0);
        }
        /* Every asker under way (one answer each), then the stop at a
         * point that moves round by round. */
        int64_t t0 = ts_now_ms();
        for (int i = 0; i < 4; i++)
            while (atomic_load(&k[i].ok) == 0 && ts_now_ms() - t0 < 20000)
                ts_sleep_ms(1);
        ts_sleep_ms(5 + 20 * round);
        ac_node_stop(d.b);
        int ok = 0, failed = 0;
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            ok += atomic_load(&k[i].ok), failed += k[i].failed;
            assert_true(atomic_load(&k[i].ok) > 0);
        }
        assert_int_equal(failed, 4 * 20); /* each saw the stop, and settled every ask */
        assert_true(ok > 0);
        duo_end(&d);
    }
}

/* ---- options ---------------------------------------------------------------------- */

static void test_bind_urls_and_options(void **state)
{
    (void)state;
    ac_system *sys = ac_system_create("opts", NULL);
    assert_non_null(sys);
    static const char *const bad[] = {"tcp+direct://127.0.0.1", "tcp+direct://127.0.0.1:99999",
                                      "tcp+direct://:1", "tcp+direct://127.0.0.1:x",
                                      "tcp+direct://[::1:5"};
    ac_node_options o = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.bind = bad[i];
        assert_null(ac_node_start(sys, &o));
        assert_int_equal(ac_last_status(), AC_EINVAL);
        assert_non_null(strstr(ac_last_error(), "options.bind"));
    }
    o.bind = "tcp+direct://0.0.0.0:0"; /* every interface: say where others reach it */
    assert_null(ac_node_start(sys, &o));
    assert_non_null(strstr(ac_last_error(), "options.advertise"));
    o.advertise = "127.0.0.1:1";
    assert_null(ac_node_start(sys, &o)); /* and not loopback: insecure must say so */
    assert_int_equal(ac_last_status(), AC_ESECURITY);
    assert_non_null(strstr(ac_last_error(), "options.insecure"));
    o.bind = "tcp+direct://127.0.0.1:0";
    o.advertise = NULL;
    ac_node_curve c = {0};
    o.curve = &c;
    assert_null(ac_node_start(sys, &o));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "options.curve"));
    o.curve = NULL;
    o.bind = "tcp+direct://localhost:*";
    ac_node *n = ac_node_start(sys, &o);
    assert_non_null(n);
    assert_int_equal(strncmp(ac_node_address(n), "127.0.0.1:", 10), 0);
    assert_int_equal(strncmp(ac_node_endpoint(n), "tcp+direct://127.0.0.1:", 23), 0);
    ac_node_stop(n);
    ac_system_terminate(sys);
    sys = ac_system_create("opts2", NULL);
    o = (ac_node_options){.bind = "tcp+direct://127.0.0.1:0", .advertise = "127.0.0.1:4242"};
    n = ac_node_start(sys, &o);
    assert_non_null(n);
    assert_string_equal(ac_node_address(n), "127.0.0.1:4242");
    ac_system_terminate(sys);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_urls_and_options),
        cmocka_unit_test(test_ten_random_bytes_never_hang_the_node),
        cmocka_unit_test(test_a_silent_connection_is_closed_at_the_preface_deadline),
        cmocka_unit_test(test_a_garbage_preface_is_closed_at_once),
        cmocka_unit_test(test_an_oversized_record_is_a_protocol_error),
        cmocka_unit_test(test_many_half_open_connections_are_bounded),
        cmocka_unit_test(test_heartbeats_are_answered_and_a_silent_dialler_dropped),
        cmocka_unit_test(test_an_unanswering_peer_is_lost_within_the_heartbeat_timeout),
        cmocka_unit_test(test_a_stopped_reader_fills_then_drains),
        cmocka_unit_test(test_sends_race_a_stopping_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
