/*
 * The handshake as a peer sees it, from raw ZeroMQ sockets that speak the
 * wire: a node answers a HELLO with its own, naming the peer's
 * incarnation; a second HELLO from that incarnation that does not know
 * the node's (the peer lost it and connects afresh) ends the old
 * connection and starts a new one, answered with a new HELLO; one that
 * knows it changes nothing. A hello that names an address the node cannot
 * reach (refused, or never answered) is lost after the connect timeout,
 * and asks to it fail then instead of waiting out their own timeouts; so
 * is one that names the node itself under another name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

#include <actorc.h>

#include "wire_samples.h"

#define FAKE_INC 0x0123456789abcdefull

typedef struct fake {
    void *zctx;
    void *router; /* where the node's DEALER connects */
    char address[128];
    void *dealers[4]; /* the fake peer's, closed at teardown at the latest */
    size_t dealer_count;
    ac_system *sys;
    ac_node *node;
} fake;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_int(void *s, int opt, int v) { assert_int_equal(zmq_setsockopt(s, opt, &v, sizeof v), 0); }

static int setup(void **state)
{
    fake *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->zctx = zmq_ctx_new();
    assert_non_null(f->zctx);
    f->router = zmq_socket(f->zctx, ZMQ_ROUTER);
    assert_non_null(f->router);
    set_int(f->router, ZMQ_LINGER, 0);
    /* As a node's: the node's new DEALER (same routing id) takes over
     * from its old one, which may not be torn down yet. */
    set_int(f->router, ZMQ_ROUTER_HANDOVER, 1);
    assert_int_equal(zmq_bind(f->router, "tcp://127.0.0.1:0"), 0);
    char endpoint[128];
    size_t len = sizeof endpoint;
    assert_int_equal(zmq_getsockopt(f->router, ZMQ_LAST_ENDPOINT, endpoint, &len), 0);
    assert_int_equal(strncmp(endpoint, "tcp://", 6), 0);
    snprintf(f->address, sizeof f->address, "%s", endpoint + 6);
    f->sys = ac_system_create("client", &(ac_system_options){.workers = 1});
    assert_non_null(f->sys);
    f->node = ac_node_start(f->sys, &(ac_node_options){.bind = "tcp://127.0.0.1:0"});
    if (!f->node)
        fail_msg("ac_node_start: %s", ac_last_error());
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fake *f = *state;
    ac_system_terminate(f->sys);
    for (size_t i = 0; i < f->dealer_count; i++)
        if (f->dealers[i])
            zmq_close(f->dealers[i]);
    zmq_close(f->router);
    zmq_ctx_term(f->zctx);
    free(f);
    return 0;
}

/* A DEALER of the fake peer (its routing id the fake incarnation),
 * connected to the node, that has sent a HELLO knowing `target_inc`: its
 * index in f->dealers. */
static size_t hello_from_fake(fake *f, uint64_t target_inc)
{
    assert_true(f->dealer_count < sizeof f->dealers / sizeof f->dealers[0]);
    void *d = zmq_socket(f->zctx, ZMQ_DEALER);
    assert_non_null(d);
    size_t k = f->dealer_count++;
    f->dealers[k] = d;
    set_int(d, ZMQ_LINGER, 0);
    uint64_t inc = FAKE_INC;
    assert_int_equal(zmq_setsockopt(d, ZMQ_ROUTING_ID, &inc, sizeof inc), 0);
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "tcp://%s", ac_node_address(f->node));
    assert_int_equal(zmq_connect(d, endpoint), 0);
    ac__wire_env hello = {.kind = AC__WIRE_HELLO, .target_inc = target_inc};
    hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR,
                                     .system = ws_span("fake"),
                                     .address = ws_span(f->address),
                                     .incarnation = FAKE_INC};
    uint8_t buf[512];
    size_t n = ac__wire_encode(&hello, buf, sizeof buf);
    assert_true(n > 0 && n <= sizeof buf);
    assert_int_equal(zmq_send(d, buf, n, 0), (int)n);
    return k;
}

static void close_dealer(fake *f, size_t k)
{
    zmq_close(f->dealers[k]);
    f->dealers[k] = NULL;
}

/* The next HELLO the node sends the fake peer within ms: true, with the
 * incarnation it names for the fake one. Other frames are skipped. */
static bool next_hello(fake *f, int ms, uint64_t *target_inc)
{
    int64_t end = now_ms() + ms;
    while (now_ms() < end) {
        zmq_pollitem_t it = {.socket = f->router, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 50) <= 0)
            continue;
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        assert_true(zmq_msg_recv(&id, f->router, 0) >= 0);
        assert_true(zmq_msg_more(&id));
        assert_true(zmq_msg_recv(&body, f->router, 0) >= 0);
        uint64_t rid = 0;
        assert_int_equal(zmq_msg_size(&id), sizeof rid);
        memcpy(&rid, zmq_msg_data(&id), sizeof rid);
        assert_true(rid == ac_node_incarnation(f->node));
        ac__wire_env env;
        const char *why = NULL;
        assert_int_equal(ac__wire_decode(zmq_msg_data(&body), zmq_msg_size(&body), NULL, &env, &why),
                         AC_OK);
        bool hello = env.kind == AC__WIRE_HELLO;
        if (hello) {
            assert_true(env.sender.incarnation == ac_node_incarnation(f->node));
            *target_inc = env.target_inc;
        }
        zmq_msg_close(&id);
        zmq_msg_close(&body);
        if (hello)
            return true;
    }
    return false;
}

static uint64_t nodes_down(fake *f)
{
    ac_node_stats st;
    assert_int_equal(ac_node_stats_get(f->node, &st), AC_OK);
    return st.nodes_down;
}

static void test_a_hello_that_does_not_know_this_node_starts_again(void **state)
{
    fake *f = *state;
    uint64_t known = 1;
    size_t d1 = hello_from_fake(f, 0);
    /* The node's answer names the fake incarnation, which it now knows. */
    assert_true(next_hello(f, 10000, &known));
    assert_true(known == FAKE_INC);
    assert_int_equal(nodes_down(f), 0);

    /* It says hello again knowing the node: the same connection goes on. */
    size_t d2 = hello_from_fake(f, ac_node_incarnation(f->node));
    assert_false(next_hello(f, 500, &known));
    assert_int_equal(nodes_down(f), 0);

    /* It lost the node and connects afresh: the old connection ends here
     * too, and the node says hello again. */
    close_dealer(f, d1);
    close_dealer(f, d2);
    size_t d3 = hello_from_fake(f, 0);
    known = 1;
    assert_true(next_hello(f, 10000, &known));
    assert_true(known == FAKE_INC);
    assert_int_equal(nodes_down(f), 1);
    ac_node_stats st;
    assert_int_equal(ac_node_stats_get(f->node, &st), AC_OK);
    assert_int_equal(st.peers, 1);
    close_dealer(f, d3);
}

/* One connection, one incarnation, many addresses: a node that took each
 * hello would dial address after address for one stranger. The first is
 * the fake peer's own; the rest are refused and counted. */
static void test_one_incarnation_names_one_address(void **state)
{
    fake *f = *state;
    uint64_t known = 1;
    size_t d = hello_from_fake(f, 0);
    assert_true(next_hello(f, 10000, &known));
    ac_node_stats before;
    assert_int_equal(ac_node_stats_get(f->node, &before), AC_OK);
    for (int i = 0; i < 50; i++) {
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.7.%d:9", 1 + i);
        ac__wire_env hello = {.kind = AC__WIRE_HELLO, .target_inc = ac_node_incarnation(f->node)};
        hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR, .system = ws_span("fake"),
                                         .address = ws_span(addr), .incarnation = FAKE_INC};
        uint8_t buf[512];
        size_t n = ac__wire_encode(&hello, buf, sizeof buf);
        assert_true(n > 0 && n <= sizeof buf);
        assert_int_equal(zmq_send(f->dealers[d], buf, n, 0), (int)n);
    }
    ac_node_stats st;
    int64_t end = now_ms() + 10000;
    do {
        assert_int_equal(ac_node_stats_get(f->node, &st), AC_OK);
    } while (st.decode_errors < before.decode_errors + 50 && now_ms() < end);
    assert_int_equal(st.decode_errors, before.decode_errors + 50);
    assert_int_equal(st.peers, 1);
    assert_int_equal(st.connections, 1);
    assert_int_equal(st.nodes_down, before.nodes_down);
    close_dealer(f, d);
}

/* A loopback TCP socket bound to a port of its own: its address in
 * `address`. Listening with a full accept queue when `silent` (SYNs go
 * unanswered, as to a host that vanished), else not listening
 * (connections are refused at once). The fds to close in fds[]. */
static size_t unreachable(bool silent, int fds[3], char *address, size_t cap)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    snprintf(address, cap, "127.0.0.1:%d", ntohs(a.sin_port));
    fds[0] = l;
    if (!silent)
        return 1;
    assert_int_equal(listen(l, 0), 0);
    for (int i = 1; i < 3; i++) { /* the queue holds backlog + 1 */
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        (void)connect(fds[i], (struct sockaddr *)&a, sizeof a);
    }
    return 3;
}

/* A DEALER of the fake incarnation says hello naming `address`: its
 * index in f->dealers. */
static size_t hello_naming(fake *f, const char *address)
{
    assert_true(f->dealer_count < sizeof f->dealers / sizeof f->dealers[0]);
    void *d = zmq_socket(f->zctx, ZMQ_DEALER);
    assert_non_null(d);
    size_t k = f->dealer_count++;
    f->dealers[k] = d;
    set_int(d, ZMQ_LINGER, 0);
    uint64_t inc = FAKE_INC;
    assert_int_equal(zmq_setsockopt(d, ZMQ_ROUTING_ID, &inc, sizeof inc), 0);
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "tcp://%s", ac_node_address(f->node));
    assert_int_equal(zmq_connect(d, endpoint), 0);
    ac__wire_env hello = {.kind = AC__WIRE_HELLO};
    hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR, .system = ws_span("ghost"),
                                     .address = ws_span(address), .incarnation = FAKE_INC};
    uint8_t buf[512];
    size_t n = ac__wire_encode(&hello, buf, sizeof buf);
    assert_true(n > 0 && n <= sizeof buf);
    assert_int_equal(zmq_send(d, buf, n, 0), (int)n);
    return k;
}

static void nap(void)
{
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
}

static uint64_t peers(fake *f)
{
    ac_node_stats st;
    assert_int_equal(ac_node_stats_get(f->node, &st), AC_OK);
    return st.peers;
}

/* The node takes the hello (the peer is up) and dials the address it
 * names, which refuses, or never answers. It said hello, so the
 * connect timeout used not to apply: the peer stayed up for good, with
 * its DEALER, and every ask to it waited out its own timeout. */
static void test_a_hello_from_an_address_the_node_cannot_reach_is_lost(void **state)
{
    fake *f = *state;
    for (int silent = 0; silent < 2; silent++) {
        int fds[3];
        char address[64], path[128];
        size_t nfds = unreachable(silent, fds, address, sizeof address);
        uint64_t downs = nodes_down(f);
        size_t d = hello_naming(f, address);
        /* The hello is taken: the peer is up, or already lost (an address
         * that refuses is known at once). */
        int64_t end = now_ms() + 10000;
        while (peers(f) == 0 && nodes_down(f) == downs && now_ms() < end)
            nap();
        assert_true(peers(f) == 1 || nodes_down(f) > downs);
        snprintf(path, sizeof path, "actorc://ghost@%s/user/x", address);
        ac_ref *ghost = ac_node_resolve(f->node, path);
        assert_non_null(ghost);
        int64_t start = now_ms();
        ac_answer a;
        assert_int_equal(ac_ask_wait(ghost, ac_msg_str_new("there?"), 20000, &a), AC_EFAILED);
        assert_true(ac_error_is(a.error, AC_NODE_DOWN_ERROR));
        /* The connect timeout (2 s by default), with room for a slow
         * machine; well before the ask's own 20 s. */
        assert_true(now_ms() - start < 10000);
        ac_answer_release(&a);
        ac_ref_release(ghost);
        end = now_ms() + 10000;
        while (peers(f) != 0 && now_ms() < end)
            nap();
        assert_int_equal(peers(f), 0);
        close_dealer(f, d);
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
    }
}

/* A hello naming the node itself under another name ("localhost:<port>"
 * for "127.0.0.1:<port>"): the node dials it, and its own hello comes
 * back to it. The peer stayed up for good, every frame to it coming back
 * to the node to be dropped, every ask to it waiting out its timeout. */
static void test_a_hello_naming_the_node_under_another_name_is_lost(void **state)
{
    fake *f = *state;
    const char *port = strrchr(ac_node_address(f->node), ':');
    assert_non_null(port);
    char alias[64], path[128];
    snprintf(alias, sizeof alias, "localhost%s", port);
    size_t d = hello_naming(f, alias);
    snprintf(path, sizeof path, "actorc://ghost@%s/user/x", alias);
    int64_t end = now_ms() + 10000;
    while (peers(f) == 0 && now_ms() < end)
        nap();
    ac_ref *ghost = ac_node_resolve(f->node, path);
    assert_non_null(ghost);
    ac_answer a;
    int64_t start = now_ms();
    assert_int_equal(ac_ask_wait(ghost, ac_msg_str_new("me?"), 20000, &a), AC_EFAILED);
    assert_true(ac_error_is(a.error, AC_NODE_DOWN_ERROR));
    assert_true(now_ms() - start < 10000);
    ac_answer_release(&a);
    ac_ref_release(ghost);
    end = now_ms() + 10000;
    while (peers(f) != 0 && now_ms() < end)
        nap();
    assert_int_equal(peers(f), 0);
    close_dealer(f, d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_hello_that_does_not_know_this_node_starts_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_incarnation_names_one_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_hello_from_an_address_the_node_cannot_reach_is_lost,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_hello_naming_the_node_under_another_name_is_lost,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
