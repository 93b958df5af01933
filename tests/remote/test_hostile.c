/*
 * What reaches a node's port from strangers and bad networks, against a
 * real node in this process (a server with an echo actor) and a second,
 * well-behaved one asking it. After each, the server still answers:
 *
 *  - ten raw bytes that libzmq takes for ZMTP/1.0, two frames, the first
 *    with MORE set: dropped as one malformed message, counted once, the
 *    transport not spinning; a CURVE node does not speak ZMTP/1.0 at all;
 *  - a sender named at an address that swallows SYNs (a listener whose
 *    accept queue is full): the echo's reply makes the server connect
 *    there, the connect times out, and closing that connection must not
 *    stall the server's network I/O;
 *  - ordinary peers that connect, ask and leave, 200 times over;
 *  - a stranger naming thousands of sender addresses, against small
 *    limits: the peer table and the connections stay within them, the
 *    warnings come a line a second with a count, and a new peer is served;
 *  - the limits' options, checked.
 *  - senders named at addresses the server never answers: the peers they
 *    made do not stay in its table;
 *  - a connection whose routing id a second one took over, which speaks
 *    and then closes: libzmq 4.3.4 aborted the whole process on the
 *    server's next heartbeat.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.h>

/* Generous: a loaded machine (a parallel build on two cores) delays an
 * answer past a second now and then; a node that stopped serving its
 * peer fails the ask either way. */
#define ASK_TIMEOUT_MS 5000

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }

static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def sink_def = {.name = "Sink", .receive = sink_receive};

typedef struct pair {
    ac_system *srv_sys, *cli_sys;
    ac_node *srv, *cli;
    ac_ref *echo; /* on the client: the server's echo */
} pair;

static ac_node *start_node(ac_system *sys, const ac_node_options *extra)
{
    ac_node_options o = extra ? *extra : (ac_node_options){0};
    o.bind = "tcp://127.0.0.1:0";
    ac_node *n = ac_node_start(sys, &o);
    if (!n)
        fail_msg("ac_node_start: %s", ac_last_error());
    return n;
}

static void pair_start(pair *p, const ac_node_options *srv_opts, const ac_node_options *cli_opts)
{
    memset(p, 0, sizeof *p);
    p->srv_sys = ac_system_create("srv", &(ac_system_options){.workers = 1});
    p->cli_sys = ac_system_create("cli", &(ac_system_options){.workers = 1});
    assert_non_null(p->srv_sys);
    assert_non_null(p->cli_sys);
    p->srv = start_node(p->srv_sys, srv_opts);
    p->cli = start_node(p->cli_sys, cli_opts);
    ac_ref *e = ts_spawn(p->srv_sys, &echo_def, NULL, "echo");
    ac_ref_release(e);
    char path[256];
    snprintf(path, sizeof path, "actorc://srv@%s/user/echo", ac_node_address(p->srv));
    p->echo = ac_node_resolve(p->cli, path);
    assert_non_null(p->echo);
}

static void pair_stop(pair *p)
{
    ac_ref_release(p->echo);
    assert_status(ac_system_terminate(p->cli_sys), AC_OK);
    assert_status(ac_system_terminate(p->srv_sys), AC_OK);
}

/* The client's ask of the server's echo is answered, within its timeout. */
static void assert_answers(ac_ref *echo, const char *when)
{
    ac_answer a;
    ac_status st = ac_ask_wait(echo, ac_msg_str_new(when), ASK_TIMEOUT_MS, &a);
    if (st != AC_OK)
        fail_msg("%s: the ask failed: %s", when,
                 a.error ? ac_error_message(a.error) : ac_last_error());
    assert_string_equal(ac_msg_str(a.reply), when);
    ac_answer_release(&a);
}

static uint64_t decode_errors(ac_node *n)
{
    ac_node_stats s;
    assert_status(ac_node_stats_get(n, &s), AC_OK);
    return s.decode_errors;
}

static int port_of(const char *address)
{
    const char *colon = strrchr(address, ':');
    assert_non_null(colon);
    return atoi(colon + 1);
}

/* A TCP connection to 127.0.0.1:port, blocking. */
static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        fail_msg("connect to port %d: %s", port, strerror(errno));
    return fd;
}

static const uint8_t TEN_BYTES[10] = {0x01, 0x00, 0x03, 0x01, 0x61, 0x62, 0x03, 0x00, 0x63, 0x64};

/* Two ZMTP/1.0 frames, the first with MORE set, from a raw TCP client: one
 * malformed message, dropped and counted once; the node answers on. */
static void test_two_frames_of_zmtp1_do_not_hang_the_node(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL, NULL);
    assert_answers(p.echo, "before");
    uint64_t before = decode_errors(p.srv);
    int fd = tcp_connect(port_of(ac_node_address(p.srv)));
    assert_int_equal(write(fd, TEN_BYTES, sizeof TEN_BYTES), (ssize_t)sizeof TEN_BYTES);
    /* The message is counted once it is read... */
    double end = ts_now() + TS_WAIT_S;
    while (decode_errors(p.srv) == before && ts_now() < end)
        ts_sleep_ms(5);
    assert_int_equal(decode_errors(p.srv), before + 1);
    /* ...and only once: a transport spinning on it counts millions. */
    ts_sleep_ms(200);
    assert_int_equal(decode_errors(p.srv), before + 1);
    for (int i = 0; i < 5; i++)
        assert_answers(p.echo, "after the ten bytes");
    /* Again, with the same connection still open. */
    assert_int_equal(write(fd, TEN_BYTES, sizeof TEN_BYTES), (ssize_t)sizeof TEN_BYTES);
    assert_answers(p.echo, "after twenty");
    close(fd);
    pair_stop(&p);
}

/* A CURVE node never takes ZMTP/1.0: the connection is closed, nothing
 * reaches the node. */
static void test_curve_node_refuses_zmtp1(void **state)
{
    (void)state;
    char spub[41], ssec[41], pub[41], sec[41];
    if (ac_node_curve_keypair(spub, ssec) != AC_OK || ac_node_curve_keypair(pub, sec) != AC_OK)
        skip(); /* ZeroMQ without CURVE */
    ac_node_curve c = {.server_public_key = spub, .server_secret_key = ssec,
                       .public_key = pub, .secret_key = sec};
    ac_system *sys = ac_system_create("curve", &(ac_system_options){.workers = 1});
    assert_non_null(sys);
    ac_node *n = start_node(sys, &(ac_node_options){.curve = &c});
    int fd = tcp_connect(port_of(ac_node_address(n)));
    assert_int_equal(write(fd, TEN_BYTES, sizeof TEN_BYTES), (ssize_t)sizeof TEN_BYTES);
    /* Closed by the node: EOF or a reset, within the bound. */
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    bool closed = false;
    double end = ts_now() + TS_WAIT_S;
    while (!closed && ts_now() < end) {
        if (poll(&pfd, 1, 100) == 1) {
            uint8_t buf[256];
            ssize_t r = read(fd, buf, sizeof buf);
            closed = r == 0 || (r < 0 && errno == ECONNRESET);
        }
    }
    assert_true(closed);
    assert_int_equal(decode_errors(n), 0);
    close(fd);
    assert_status(ac_system_terminate(sys), AC_OK);
}

/* A listener on 127.0.0.1 whose accept queue is full: SYNs to it go
 * unanswered, as to a host that vanished. The fds to close in fds[]. */
static int silent_listener(int fds[4], size_t *nfds)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 0), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    int port = ntohs(a.sin_port);
    fds[0] = l;
    *nfds = 1;
    /* Fill the queue (it holds backlog + 1), never accepting. */
    for (int i = 0; i < 2; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(c >= 0);
        (void)connect(c, (struct sockaddr *)&a, sizeof a);
        fds[(*nfds)++] = c;
    }
    ts_sleep_ms(50);
    return port;
}

/* A sender named at a silent address: the server's echo answers it, so
 * the server connects there and gives up after its connect timeout. Its
 * network I/O goes on throughout and after. */
static void test_silent_sender_address_does_not_stop_the_node(void **state)
{
    (void)state;
    int fds[4];
    size_t nfds = 0;
    int port = silent_listener(fds, &nfds);
    pair p;
    pair_start(&p, &(ac_node_options){.connect_timeout_ms = 200}, NULL);
    assert_answers(p.echo, "before");
    for (int round = 0; round < 3; round++) {
        char ghost_path[128];
        snprintf(ghost_path, sizeof ghost_path, "actorc://ghost@127.0.0.1:%d/user/g%d", port, round);
        ac_ref *ghost = ac_node_resolve(p.cli, ghost_path);
        assert_non_null(ghost);
        assert_status(ac_tell(p.echo, ac_msg_str_new("to the ghost"), ghost), AC_OK);
        ac_ref_release(ghost);
        /* Through the connect timeout and the close after it. */
        double end = ts_now() + 0.6;
        while (ts_now() < end)
            assert_answers(p.echo, "while the server dials a silent address");
    }
    for (int i = 0; i < 5; i++)
        assert_answers(p.echo, "after");
    pair_stop(&p);
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
}

/* Peers that connect, ask and leave, one after the other: the server
 * closes its connection to each, and answers the next and a standing
 * client after every one. */
static void test_peers_come_and_go(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL, NULL);
    char path[256];
    snprintf(path, sizeof path, "actorc://srv@%s/user/echo", ac_node_address(p.srv));
    long rounds = ts_env_long("ACTORC_TEST_PEER_ROUNDS", 200);
    for (long i = 0; i < rounds; i++) {
        ac_system *sys = ac_system_create("visitor", &(ac_system_options){.workers = 1});
        assert_non_null(sys);
        ac_node *n = start_node(sys, NULL);
        ac_ref *echo = ac_node_resolve(n, path);
        assert_non_null(echo);
        for (int k = 0; k < 3; k++)
            assert_answers(echo, "a visitor's ask");
        ac_ref_release(echo);
        assert_status(ac_system_terminate(sys), AC_OK);
        assert_answers(p.echo, "after a visitor left");
    }
    pair_stop(&p);
}

/* Tell the server's echo `n` times from the client, each naming a sender
 * at a different address where nothing listens (refused at once). */
static void name_strangers(pair *p, int n, int port)
{
    for (int i = 0; i < n; i++) {
        char ghost[128];
        snprintf(ghost, sizeof ghost, "actorc://ghost@127.9.%d.%d:%d/user/g", i / 250 % 256,
                 1 + i % 250, port);
        ac_ref *g = ac_node_resolve(p->cli, ghost);
        if (!g)
            fail_msg("resolve %s: %s", ghost, ac_last_error());
        assert_status(ac_tell(p->echo, ac_msg_str_new("who?"), g), AC_OK);
        ac_ref_release(g);
        if (i % 100 == 99)
            ts_sleep_ms(5);
    }
}

static void test_strangers_stay_within_the_limits(void **state)
{
    (void)state;
    ts_log_capture *log = ts_log_capture_new();
    assert_non_null(log);
    int port_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    assert_int_equal(bind(port_fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t alen = sizeof a;
    assert_int_equal(getsockname(port_fd, (struct sockaddr *)&a, &alen), 0);
    int port = ntohs(a.sin_port); /* bound, never listening: refused */

    pair p;
    memset(&p, 0, sizeof p);
    p.srv_sys = ac_system_create("srv", &(ac_system_options){.workers = 1, .log_sink = ts_log_sink,
                                                             .log_sink_user = log});
    p.cli_sys = ac_system_create("cli", &(ac_system_options){.workers = 1});
    assert_non_null(p.srv_sys);
    assert_non_null(p.cli_sys);
    p.srv = start_node(p.srv_sys, &(ac_node_options){.max_peers = 64, .max_connections = 16,
                                                     .named_dials_per_s = 50});
    p.cli = start_node(p.cli_sys, NULL);
    ac_ref_release(ts_spawn(p.srv_sys, &echo_def, NULL, "echo"));
    char path[256];
    snprintf(path, sizeof path, "actorc://srv@%s/user/echo", ac_node_address(p.srv));
    p.echo = ac_node_resolve(p.cli, path);
    assert_non_null(p.echo);
    assert_answers(p.echo, "before");

    double t0 = ts_now();
    ac_node_stats s;
    for (int round = 0; round < 4; round++) {
        name_strangers(&p, 500, port);
        assert_status(ac_node_stats_get(p.srv, &s), AC_OK);
        assert_true(s.peers <= 64);
        assert_true(s.connections <= 16);
        assert_answers(p.echo, "during");
        ts_sleep_ms(600); /* over seconds: the warnings' limit shows */
    }
    /* A node that first connects now is served. */
    ac_system *nsys = ac_system_create("newcomer", &(ac_system_options){.workers = 1});
    assert_non_null(nsys);
    ac_node *nn = start_node(nsys, NULL);
    ac_ref *necho = ac_node_resolve(nn, path);
    assert_non_null(necho);
    name_strangers(&p, 200, port);
    assert_answers(necho, "a newcomer's ask");
    ac_ref_release(necho);
    assert_status(ac_system_terminate(nsys), AC_OK);
    double took = ts_now() - t0;

    /* The table empties of them: entries nothing refers to are forgotten. */
    double end = ts_now() + TS_WAIT_S;
    do {
        ts_sleep_ms(50);
        assert_status(ac_node_stats_get(p.srv, &s), AC_OK);
    } while (s.peers > 1 && ts_now() < end);
    print_message("peers %llu, connections %llu, forgotten %llu, evicted %llu, dials refused "
                  "%llu, nodes down %llu in %.1f s\n",
                  (unsigned long long)s.peers, (unsigned long long)s.connections,
                  (unsigned long long)s.peers_forgotten, (unsigned long long)s.peers_evicted,
                  (unsigned long long)s.dials_refused, (unsigned long long)s.nodes_down, took);
    assert_true(s.peers <= 1); /* the client */
    assert_true(s.dials_refused > 0);
    assert_true(s.peers_forgotten + s.peers_evicted + s.nodes_down >= 2000);
    /* Their losses were warned of a line a second at most, with counts. */
    size_t lines = ts_log_count_text(log, "never said hello");
    print_message("%zu warning lines about strangers\n", lines);
    assert_true(lines >= 1);
    assert_true(lines <= (size_t)took + 3);
    assert_true(ts_log_count_text(log, "more like it") >= 1);
    assert_answers(p.echo, "after");
    pair_stop(&p);
    close(port_fd);
    ts_log_capture_free(log);
}

static void test_limit_options_are_checked(void **state)
{
    (void)state;
    ac_system *sys = ac_system_create("opts", &(ac_system_options){.workers = 1});
    assert_non_null(sys);
    static const struct {
        ac_node_options o;
        const char *names;
    } bad[] = {
        {{.bind = "tcp://127.0.0.1:0", .backlog = -1}, "backlog"},
        {{.bind = "tcp://127.0.0.1:0", .named_dials_per_s = -5}, "named_dials_per_s"},
        {{.bind = "tcp://127.0.0.1:0", .max_peers = AC_NODE_MAX_PEERS_LIMIT + 1}, "max_peers"},
        {{.bind = "tcp://127.0.0.1:0", .max_connections = AC_NODE_MAX_CONNECTIONS_LIMIT + 1},
         "max_connections"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(ac_node_start(sys, &bad[i].o));
        assert_last_error(AC_EINVAL);
        if (!strstr(ac_last_error(), bad[i].names))
            fail_msg("the error does not name %s: %s", bad[i].names, ac_last_error());
    }
    assert_status(ac_system_terminate(sys), AC_OK);
}

static size_t peers_of(ac_node *n)
{
    ac_node_stats s;
    assert_status(ac_node_stats_get(n, &s), AC_OK);
    return (size_t)s.peers;
}

static bool peers_become(ac_node *n, size_t want)
{
    double end = ts_now() + TS_WAIT_S;
    while (peers_of(n) != want && ts_now() < end)
        ts_sleep_ms(5);
    return peers_of(n) == want;
}

/* Tells whose senders name addresses nobody ever sends to (the server's
 * sink keeps quiet): each address made a peer in the server's table, and
 * none went away, so a stranger could grow the table without end. A
 * peer never sent to and no longer referred to is forgotten, on both
 * sides; one still referred to stays. */
static void test_senders_never_answered_leave_no_peers(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL, NULL);
    ac_ref *sink = ts_spawn(p.srv_sys, &sink_def, NULL, "sink");
    ac_ref_release(sink);
    char path[256];
    snprintf(path, sizeof path, "actorc://srv@%s/user/sink", ac_node_address(p.srv));
    ac_ref *remote_sink = ac_node_resolve(p.cli, path);
    assert_non_null(remote_sink);
    assert_answers(p.echo, "before");
    for (int i = 0; i < 50; i++) {
        char ghost_path[128];
        snprintf(ghost_path, sizeof ghost_path, "actorc://ghost@127.0.0.%d:%d/user/g", 2 + i,
                 1 + i);
        ac_ref *ghost = ac_node_resolve(p.cli, ghost_path);
        assert_non_null(ghost);
        assert_status(ac_tell(remote_sink, ac_msg_str_new("from a ghost"), ghost), AC_OK);
        ac_ref_release(ghost);
    }
    assert_answers(p.echo, "after the ghosts' tells"); /* they came before the ask */
    assert_eventually(peers_become(p.srv, 1), "the server to forget the ghosts");
    assert_eventually(peers_become(p.cli, 1), "the client to forget the ghosts");
    /* A ref still held keeps its peer. */
    ac_ref *kept = ac_node_resolve(p.cli, "actorc://ghost@127.0.0.2:1/user/g");
    assert_non_null(kept);
    ts_sleep_ms(100); /* housekeeping runs every 20 ms */
    assert_int_equal(peers_of(p.cli), 2);
    ac_ref_release(kept);
    assert_eventually(peers_become(p.cli, 1), "the client to forget the last ghost");
    ac_ref_release(remote_sink);
    pair_stop(&p);
}

static void zset_int(void *s, int opt, int v) { assert_int_equal(zmq_setsockopt(s, opt, &v, sizeof v), 0); }

/* A DEALER of routing id "twin" connected to the node at `address`. */
static void *twin_dealer(void *zctx, const char *address)
{
    void *d = zmq_socket(zctx, ZMQ_DEALER);
    assert_non_null(d);
    zset_int(d, ZMQ_LINGER, 0);
    assert_int_equal(zmq_setsockopt(d, ZMQ_ROUTING_ID, "twin", 4), 0);
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "tcp://%s", address);
    assert_int_equal(zmq_connect(d, endpoint), 0);
    return d;
}

/* One malformed byte from d, and the node has counted it. */
static void junk_taken(ac_node *n, void *d)
{
    uint64_t before = decode_errors(n);
    assert_int_equal(zmq_send(d, "x", 1, 0), 1);
    double end = ts_now() + TS_WAIT_S;
    while (decode_errors(n) == before && ts_now() < end)
        ts_sleep_ms(1);
    assert_true(decode_errors(n) > before);
}

/* Two connections of one routing id: the node's ROUTER hands the id
 * over to the second, and the first's session is left without a pipe.
 * What the first sends then stops its input; when it closes, libzmq
 * 4.3.4 marks the connection failed, and the ROUTER's next heartbeat
 * on it hit an assertion in libzmq's I/O thread that aborted the
 * process (zeromq/libzmq#4364). The node's ROUTER no longer sends
 * heartbeats of its own (its peers' carry a time to live). */
static void test_a_routing_id_taken_over_does_not_abort_the_node(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL, NULL);
    void *zctx = zmq_ctx_new();
    assert_non_null(zctx);
    for (int round = 0; round < 3; round++) {
        void *first = twin_dealer(zctx, ac_node_address(p.srv));
        junk_taken(p.srv, first);
        void *second = twin_dealer(zctx, ac_node_address(p.srv));
        junk_taken(p.srv, second);
        assert_int_equal(zmq_send(first, "y", 1, 0), 1);
        ts_sleep_ms(20);
        zmq_close(first);
        ts_sleep_ms(500); /* beyond two heartbeat intervals */
        assert_answers(p.echo, "after a routing id was taken over");
        zmq_close(second);
    }
    zmq_ctx_term(zctx);
    pair_stop(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_frames_of_zmtp1_do_not_hang_the_node),
        cmocka_unit_test(test_curve_node_refuses_zmtp1),
        cmocka_unit_test(test_silent_sender_address_does_not_stop_the_node),
        cmocka_unit_test(test_peers_come_and_go),
        cmocka_unit_test(test_strangers_stay_within_the_limits),
        cmocka_unit_test(test_limit_options_are_checked),
        cmocka_unit_test(test_senders_never_answered_leave_no_peers),
        cmocka_unit_test(test_a_routing_id_taken_over_does_not_abort_the_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
