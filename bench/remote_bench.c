/*
 * actorc-bench-remote: remoting between two processes on 127.0.0.1, with
 * raw ZeroMQ as the baseline in the same harness and the same run.
 *
 *   actorc-bench-remote [all|plain|curve [ask|tell]]
 *                                           the workloads (default: all;
 *                                           ask or tell: only those, for
 *                                           profiling one path)
 *   actorc-bench-remote scatter             remote_scatter and its baselines
 *                                           alone (`all` ends with them)
 *   ACTORC_BENCH_TRANSPORT=tcp+direct actorc-bench-remote [all|plain [ask|tell]] | scatter
 *                                           the same over the node's own
 *                                           TCP (tcp+direct://), the
 *                                           workloads named *_direct, and
 *                                           remote_ask_over_zmq beside
 *                                           remote_ask_direct (no CURVE)
 *   actorc-bench-remote serve actorc|actorc-zmq|zmq|tcp|replicaK|zreplicaK
 *                         [SERVER_PUB SERVER_SEC PUB SEC ALLOWED]
 *                                           the second process (started by
 *                                           the first; not for people)
 *
 * Workloads, mirroring the peers' remote ones (peers/README.md), against
 * fresh second processes (an actorc node and a ZeroMQ ROUTER), with and
 * without CURVE (`_curve`):
 *
 *   zmq_rtt         a DEALER asks a ROUTER, which answers; a request as
 *                   big as actorc's Int64 ask frame, a reply as big as its
 *                   reply frame; 1,000 warm-up + 5,000 sequential (p50, p99)
 *   tcp_rtt         the same over a plain TCP connection (frames behind a
 *                   4-byte length), one blocking thread on either side and
 *                   no ZeroMQ: the floor of a round trip between two
 *                   processes of this machine (without CURVE only)
 *   remote_ask      ac_ask_wait from the main thread to an actor on the
 *                   other node replying x+1 (Int64); same counts
 *   remote_ask_in   the same from inside an actor, with ac_ask_in
 *   zmq_pipelined   100,000 frames as big as actorc's tell frame, back to
 *                   back, then one round trip for the server's count and
 *                   sum; 1 warm-up + 5 iterations, the median rate
 *   remote_tell     an actor tells 100,000 Int64s (i & 0xff) to a
 *                   counting actor on the other node, then asks it for
 *                   count and sum; same iterations
 *   remote_scatter  a scatter of 3 over replicas in 3 other processes,
 *                   beside the same scatter over local replicas and raw
 *                   ZeroMQ's (zmq_scatter); see "remote_scatter" below
 *
 * and the ratios of each actorc figure to its ZeroMQ one, computed here:
 * remote_ask p50_vs_zmq and p99_vs_zmq (latency: actorc / zmq, lower is
 * better), remote_tell vs_zmq (throughput: actorc / zmq, higher is
 * better). The frame sizes the ZeroMQ workloads use are measured from
 * actorc's warm-ups (its node's byte and frame counts), so the two carry
 * the same bytes; the INFO line says which.
 *
 * Interleaved: an actorc server and a ZeroMQ server run side by side, and
 * the workloads take turns within one run (asks in 10 rounds of a block
 * of 500 each, the order rotating; tell iterations alternating), so that
 * the load of a shared machine, which drifts over seconds, falls on both
 * alike and the ratios stay meaningful where absolute figures do not.
 *
 * A second process is this executable again, told what to serve on its
 * command line. It prints `READY <address> <incarnation>`, serves until
 * its standard input closes (or 10 minutes pass, or its parent dies), and
 * is ended by pid with the remote tests' process helpers (rt_proc.h): by
 * closing its input and waiting, then SIGKILL; on any failure of this
 * process too (fail paths, SIGALRM after 15 minutes, SIGINT, SIGTERM).
 * Every loop is bounded in count, and every wait in time: asks have
 * deadlines, ZeroMQ sockets time out.
 *
 * A failed check prints `VERIFICATION FAILED: ...` and exits 2; a failing
 * call prints `ERROR: ...` and exits 1.
 */
#define _GNU_SOURCE

#include <actorc.h>
#include <zmq.h>

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "rt_proc.h"
#include "replica_log.h"
#include "tail_replica.h"

enum { ASK_WARM = 1000, ASK_N = 5000 };
enum { TELL_N = 100000, TELL_WARM = 1, TELL_ITERS = 5 };
#define ASK_TIMEOUT_MS 10000
#define COUNT_TIMEOUT_MS 30000
#define SOCKET_TIMEOUT_MS 10000
#define SERVE_MAX_S 600 /* a server outlives no run by more than this */
#define RUN_MAX_S 900
/* The ZeroMQ frames' layout: kind, reply size, value, sum. */
#define ZF_KIND 0
#define ZF_REPLY_SIZE 4
#define ZF_VALUE 8
#define ZF_SUM 16
#define ZF_MIN 24
#define ZF_MAX 4096

/* ------------------------------------------------------- failing loudly --- */

/* The message after `prefix` on stderr, the second processes ended, and
 * out with `status`. */
static _Noreturn void rb_vexit(int status, const char *prefix, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s", prefix);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    rt_end_all();
    _Exit(status);
}

static _Noreturn void rb_fail(const char *fmt, ...) AC_PRINTF(1, 2);
static _Noreturn void rb_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rb_vexit(2, "VERIFICATION FAILED: ", fmt, ap);
}

static _Noreturn void rb_die(const char *fmt, ...) AC_PRINTF(1, 2);
static _Noreturn void rb_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rb_vexit(1, "ERROR: ", fmt, ap);
}

static _Noreturn void rb_die_ac(const char *what)
{
    rb_die("%s: %s (%s)", what, ac_last_error(), ac_status_name(ac_last_status()));
}

static _Noreturn void rb_die_zmq(const char *what)
{
    rb_die("%s: %s", what, zmq_strerror(zmq_errno()));
}

static void rb_check(ac_status st, const char *what)
{
    if (st != AC_OK)
        rb_die_ac(what);
}

/* ---------------------------------------------------------------- keys --- */

/* The server pair every node shares, and each node's own pair (a: this
 * process, b: the second). */
typedef struct keys {
    char spub[41], ssec[41], apub[41], asec[41], bpub[41], bsec[41];
} keys;

static void keys_make(keys *k)
{
    if (zmq_curve_keypair(k->spub, k->ssec) != 0 || zmq_curve_keypair(k->apub, k->asec) != 0 ||
        zmq_curve_keypair(k->bpub, k->bsec) != 0)
        rb_die_zmq("zmq_curve_keypair (is libzmq built with CURVE?)");
}

/* --------------------------------------------------- the second process --- */

/* A second process: this executable again, serving `what`. */
static void server_start(rt_proc *s, const char *what, const keys *k)
{
    const char *args[] = {"serve", what, k ? k->spub : NULL, k ? k->ssec : NULL,
                          k ? k->bpub : NULL, k ? k->bsec : NULL, k ? k->apub : NULL, NULL};
    if (!rt_spawn(s, rt_self(), args))
        rb_die("the %s server did not start", what);
}

/* Close its input (it then ends), wait up to 10 s, then SIGKILL. */
static void server_end(rt_proc *s)
{
    pid_t pid = s->pid;
    int status = rt_end(s, 0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rb_die("the server (pid %d) ended badly (status %d)", (int)pid, status);
}

/* Has our input closed (the parent is done), or has time run out? */
static bool serve_should_end(int64_t deadline)
{
    struct pollfd pf = {.fd = 0, .events = POLLIN};
    char buf[64];
    if (poll(&pf, 1, 0) > 0 && read(0, buf, sizeof buf) <= 0)
        return true;
    return now_ns() > deadline;
}

/* ----------------------------------------------------------- ZeroMQ side --- */

static void zset(void *s, int opt, int v)
{
    if (zmq_setsockopt(s, opt, &v, sizeof v) != 0)
        rb_die_zmq("zmq_setsockopt");
}

static void zset_key(void *s, int opt, const char *z85)
{
    if (zmq_setsockopt(s, opt, z85, 41) != 0)
        rb_die_zmq("zmq_setsockopt (a CURVE key)");
}

static void put_u32(uint8_t *b, size_t at, uint32_t v) { memcpy(b + at, &v, sizeof v); }
static void put_i64(uint8_t *b, size_t at, int64_t v) { memcpy(b + at, &v, sizeof v); }
static uint32_t get_u32(const uint8_t *b, size_t at)
{
    uint32_t v;
    memcpy(&v, b + at, sizeof v);
    return v;
}
static int64_t get_i64(const uint8_t *b, size_t at)
{
    int64_t v;
    memcpy(&v, b + at, sizeof v);
    return v;
}

/* The server's answer to one frame (zmq_serve): 'A' x -> x+1; 'T' x ->
 * counted; 'C' -> count and sum, then both reset. Replies are as big as
 * the frame asks for. */
typedef struct zcount {
    int64_t n, sum;
} zcount;

static void zserve_frame(void *router, zmq_msg_t *id, const uint8_t *f, size_t len, zcount *c)
{
    if (len < ZF_MIN || (f[ZF_KIND] != 'A' && f[ZF_KIND] != 'T' && f[ZF_KIND] != 'C'))
        return;
    if (f[ZF_KIND] == 'T') {
        c->n++;
        c->sum += get_i64(f, ZF_VALUE);
        return;
    }
    uint8_t out[ZF_MAX] = {0};
    uint32_t size = get_u32(f, ZF_REPLY_SIZE);
    if (size < ZF_MIN || size > ZF_MAX)
        return;
    out[ZF_KIND] = 'R';
    if (f[ZF_KIND] == 'A') {
        put_i64(out, ZF_VALUE, get_i64(f, ZF_VALUE) + 1);
    } else {
        put_i64(out, ZF_VALUE, c->n);
        put_i64(out, ZF_SUM, c->sum);
        *c = (zcount){0};
    }
    zmq_send(router, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE);
    zmq_send(router, out, size, 0);
}

/* The ZeroMQ server: one ROUTER, one thread, blocking receives (the
 * idiom raw ZeroMQ is written in), waking every 100 ms to see whether it
 * should end. */
static int zmq_serve(const keys *k)
{
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    zset(router, ZMQ_LINGER, 0);
    zset(router, ZMQ_RCVTIMEO, 100);
    zset(router, ZMQ_RCVHWM, 0);
    if (k) {
        zset(router, ZMQ_CURVE_SERVER, 1);
        zset_key(router, ZMQ_CURVE_SECRETKEY, k->ssec);
    }
    if (zmq_bind(router, "tcp://127.0.0.1:*") != 0)
        rb_die_zmq("zmq_bind");
    char endpoint[256];
    size_t len = sizeof endpoint;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len);
    printf("READY %s -\n", endpoint); /* no incarnation */
    fflush(stdout);
    int64_t deadline = now_ns() + SERVE_MAX_S * 1000000000ll;
    zcount c = {0};
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (!serve_should_end(deadline)) {
        while (zmq_msg_recv(&id, router, 0) >= 0) {
            if (zmq_msg_more(&id) && zmq_msg_recv(&body, router, 0) >= 0)
                zserve_frame(router, &id, zmq_msg_data(&body), zmq_msg_size(&body), &c);
        }
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    zmq_close(router);
    zmq_ctx_term(ctx);
    return 0;
}

/* ------------------------------------------------------------ TCP side --- */

/* All of n bytes, or false (the peer closed, an error, or the socket's
 * timeout). */
static bool tcp_full(int fd, void *buf, size_t n, bool out)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = out ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL)
                        : recv(fd, (char *)buf + done, n - done, 0);
        if (r == 0)
            errno = ECONNRESET; /* the peer closed */
        if (r <= 0 && !(r < 0 && errno == EINTR))
            return false;
        done += r > 0 ? (size_t)r : 0;
    }
    return true;
}

/* No delay; with `timeouts`, reads and writes that give up after
 * SOCKET_TIMEOUT_MS (the client's: the server waits between blocks). */
static void tcp_options(int fd, bool timeouts)
{
    int one = 1;
    struct timeval tv = {.tv_sec = SOCKET_TIMEOUT_MS / 1000};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (timeouts) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
}

/* The server between frames: until the next arrives (true), or it is
 * told to end. Blocks of other workloads come between tcp_rtt's, for
 * seconds on a busy machine. */
static bool tcp_await(int fd, int64_t deadline)
{
    while (!serve_should_end(deadline)) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 100) > 0)
            return true;
    }
    return false;
}

/* One length-prefixed frame into f (at most ZF_MAX bytes): its length,
 * or 0. */
static size_t tcp_frame_in(int fd, uint8_t *f)
{
    uint32_t len;
    if (!tcp_full(fd, &len, sizeof len, false) || len < ZF_MIN || len > ZF_MAX ||
        !tcp_full(fd, f, len, false))
        return 0;
    return len;
}

static bool tcp_frame_out(int fd, uint8_t *f, uint32_t len)
{
    uint8_t buf[4 + ZF_MAX];
    memcpy(buf, &len, sizeof len);
    memcpy(buf + 4, f, len);
    return tcp_full(fd, buf, 4 + (size_t)len, true);
}

/* The TCP server: one connection, one thread, blocking reads, answering
 * 'A' x with x+1 in a frame as big as asked for. */
static int tcp_serve(void)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
        rb_die("tcp server: %s", strerror(errno));
    printf("READY 127.0.0.1:%d -\n", ntohs(a.sin_port));
    fflush(stdout);
    int64_t deadline = now_ns() + SERVE_MAX_S * 1000000000ll;
    int fd = -1;
    while (fd < 0 && !serve_should_end(deadline)) {
        struct pollfd pf = {.fd = ls, .events = POLLIN};
        if (poll(&pf, 1, 100) > 0)
            fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    }
    if (fd >= 0) {
        tcp_options(fd, false);
        uint8_t f[ZF_MAX], out[ZF_MAX] = {0};
        while (tcp_await(fd, deadline) && tcp_frame_in(fd, f) > 0) {
            uint32_t size = get_u32(f, ZF_REPLY_SIZE);
            if (f[ZF_KIND] != 'A' || size < ZF_MIN || size > ZF_MAX)
                break;
            out[ZF_KIND] = 'R';
            put_i64(out, ZF_VALUE, get_i64(f, ZF_VALUE) + 1);
            if (!tcp_frame_out(fd, out, size))
                break;
        }
        close(fd);
    }
    close(ls);
    while (!serve_should_end(deadline))
        sleep_ms(50);
    return 0;
}

static int tcp_connect(const char *address)
{
    const char *colon = strrchr(address, ':');
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)atoi(colon ? colon + 1 : "0"))};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        rb_die("tcp connect %s: %s", address, strerror(errno));
    tcp_options(fd, true);
    return fd;
}

static void *zclient_open(void *ctx, const char *endpoint, const keys *k)
{
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    zset(d, ZMQ_LINGER, 0);
    zset(d, ZMQ_RCVTIMEO, SOCKET_TIMEOUT_MS);
    zset(d, ZMQ_SNDTIMEO, SOCKET_TIMEOUT_MS);
    if (k) {
        zset_key(d, ZMQ_CURVE_SERVERKEY, k->spub);
        zset_key(d, ZMQ_CURVE_PUBLICKEY, k->apub);
        zset_key(d, ZMQ_CURVE_SECRETKEY, k->asec);
    }
    if (zmq_connect(d, endpoint) != 0)
        rb_die_zmq("zmq_connect");
    return d;
}

static void zsend(void *d, const uint8_t *f, size_t len)
{
    if (zmq_send(d, f, len, 0) != (int)len)
        rb_die_zmq("zmq_send");
}

/* One reply of `size` bytes. */
static void zrecv(void *d, uint8_t *out, size_t size, const char *wl)
{
    int n = zmq_recv(d, out, ZF_MAX, 0);
    if (n < 0)
        rb_die_zmq(wl);
    if ((size_t)n != size || out[ZF_KIND] != 'R')
        rb_fail("%s: a reply of %d bytes, not %zu", wl, n, size);
}

static uint8_t *zframe(uint8_t *f, char kind, size_t reply_size, int64_t value)
{
    f[ZF_KIND] = (uint8_t)kind;
    put_u32(f, ZF_REPLY_SIZE, (uint32_t)reply_size);
    put_i64(f, ZF_VALUE, value);
    return f;
}

/* ------------------------------------------------------------ figures --- */

/* The frame sizes actorc sent and received, for the ZeroMQ frames to copy. */
typedef struct frame_sizes {
    size_t ask, reply, tell, count_ask, count_reply;
} frame_sizes;

static int64_t expected_sum(int64_t n)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += i & 0xff;
    return s;
}

/* ----------------------------------------------------------- actorc side --- */

static void inc_receive(ac_ctx *ctx, ac_msg *msg)
{
    int64_t x;
    if (ac_msg_int64_get(msg, &x) == AC_OK)
        ac_reply(ctx, ac_msg_int64_new(x + 1));
}
static const ac_actor_def inc_def = {.name = "Inc", .receive = inc_receive};

/* Int64s are counted; "take" answers "<count> <sum>" and starts over. */
typedef struct counter_state {
    int64_t n, sum;
} counter_state;

static void counter_receive(ac_ctx *ctx, ac_msg *msg)
{
    counter_state *st = ac_ctx_state(ctx);
    int64_t x;
    if (ac_msg_int64_get(msg, &x) == AC_OK) {
        st->n++;
        st->sum += x;
        return;
    }
    ac_reply(ctx, ac_msg_printf("%" PRId64 " %" PRId64, st->n, st->sum));
    *st = (counter_state){0};
}
static const ac_actor_def counter_def = {.name = "Counter", .state_size = sizeof(counter_state),
                                         .receive = counter_receive};

static ac_system *system_new(const char *name)
{
    ac_system_options so = {.log_level = AC_LOG_ERROR};
    ac_system *sys = ac_system_create(name, &so);
    if (!sys)
        rb_die_ac("ac_system_create");
    return sys;
}

/* The transport the actorc nodes bind: ZeroMQ, or with
 * ACTORC_BENCH_TRANSPORT=tcp+direct the node's own TCP (the second
 * processes inherit it), whose workloads carry "_direct" in their
 * names. force_zmq: a server of the ZeroMQ transport all the same (the
 * remote_ask_over_zmq baseline of a direct run). */
static bool direct, force_zmq;

static const char *node_bind(void)
{
    return direct && !force_zmq ? "tcp+direct://127.0.0.1:0" : "tcp://127.0.0.1:0";
}

/* base with the run's suffix ("_direct" or nothing), in one of a few
 * rotating buffers. */
static const char *named(const char *base)
{
    static char buf[4][64];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s%s", base, direct ? "_direct" : "");
    return buf[i];
}

/* A node on 127.0.0.1, an OS-chosen port; CURVE when k (own pair: a or b). */
static ac_node *node_new(ac_system *sys, const keys *k, bool own_is_a, ac_node_curve *curve,
                         const char **allowed)
{
    /* Room for a whole burst and the ask that counts it, twice over: the
     * tell workload measures throughput, not the backpressure rule (a
     * burst of exactly max_queue could be refused its count ask whenever
     * the transport is kept off its core for the burst). */
    ac_node_options o = {.bind = k ? "tcp://127.0.0.1:0" : node_bind(), .max_queue = 2 * TELL_N + 16};
    if (k) {
        *allowed = own_is_a ? k->bpub : k->apub;
        *curve = (ac_node_curve){.server_public_key = k->spub, .server_secret_key = k->ssec,
                                 .public_key = own_is_a ? k->apub : k->bpub,
                                 .secret_key = own_is_a ? k->asec : k->bsec,
                                 .allowed = allowed, .allowed_count = 1};
        o.curve = curve;
    }
    ac_node *node = ac_node_start(sys, &o);
    if (!node)
        rb_die_ac("ac_node_start");
    return node;
}

/* Say READY, serve until told to end (serve_should_end), and end the
 * system. */
static void serve_node(ac_system *sys, ac_node *node)
{
    printf("READY %s %016llx\n", ac_node_address(node),
           (unsigned long long)ac_node_incarnation(node));
    fflush(stdout);
    int64_t deadline = now_ns() + SERVE_MAX_S * 1000000000ll;
    while (!serve_should_end(deadline))
        sleep_ms(50);
    ac_system_terminate(sys);
}

static int actorc_serve(const keys *k)
{
    ac_system *sys = system_new("bench_b");
    ac_node_curve curve;
    const char *allowed;
    ac_node *node = node_new(sys, k, false, &curve, &allowed);
    if (!ac_spawn(sys, ac_props_new(&inc_def, NULL), "inc") ||
        !ac_spawn(sys, ac_props_new(&counter_def, NULL), "counter"))
        rb_die_ac("ac_spawn");
    serve_node(sys, node);
    return 0;
}

static void check_reply(const char *wl, ac_status st, const ac_answer *ans, int64_t x)
{
    if (st != AC_OK || ans->error)
        rb_fail("%s: ask %" PRId64 " failed: %s (%s: %s)", wl, x, ac_status_name(st),
                ac_error_name(ans->error), ac_error_message(ans->error));
    int64_t r;
    if (ac_msg_int64_get(ans->reply, &r) != AC_OK || r != x + 1)
        rb_fail("%s: ask %" PRId64 " got a wrong reply (%s)", wl, x, ac_msg_type_name(ans->reply));
}

static ac_node_stats stats_of(ac_node *node)
{
    ac_node_stats s;
    rb_check(ac_node_stats_get(node, &s), "ac_node_stats_get");
    return s;
}

/* Bytes per frame, out and in, between two readings. */
static void frame_bytes(const ac_node_stats *a, const ac_node_stats *b, size_t *out, size_t *in)
{
    uint64_t fo = b->frames_out - a->frames_out, fi = b->frames_in - a->frames_in;
    *out = fo ? (size_t)((b->bytes_out - a->bytes_out) / fo) : 0;
    *in = fi ? (size_t)((b->bytes_in - a->bytes_in) / fi) : 0;
}


/* ------------------------------------------------------ one mode's run --- */

/* Both second processes, both clients, and where each sequence stands.
 * The workloads alternate in blocks within one run, so that a shared
 * machine's changing load falls on actorc and ZeroMQ alike. */
enum { ASK_BLOCKS = 10, ASK_BLOCK = ASK_N / ASK_BLOCKS };
_Static_assert(ASK_N % ASK_BLOCKS == 0, "asks split evenly into blocks");

/* The asker (remote_ask_in): asks `n` times on a GO {n}, writing
 * latencies to env->lat unless it is NULL, then signals. The main thread
 * sets env->lat before its GO and reads it after the signal. */
typedef struct asker_env {
    const char *wl;
    ac_ref *target;
    int64_t *lat;
    latch done;
} asker_env;

typedef struct asker_state {
    int64_t i, n, x, t0;
} asker_state;

/* The sender (remote_tell): on a GO {n} it fires n Int64s, then asks the
 * count and signals (count, sum, elapsed ns): its first send to the
 * count's arrival, as the peers' tell_sender. */
typedef struct sender_env {
    ac_ref *target;
    ac_node *node;
    latch done;
} sender_env;

typedef struct sender_state {
    int64_t t0;
} sender_state;

static bool run_asks = true, run_tells = true;

typedef struct run {
    char wl[5][64]; /* remote_ask, remote_ask_in, zmq_rtt, remote_tell / zmq_pipelined, tcp_rtt */
    const char *suffix;
    rt_proc actorc_srv, zmq_srv, tcp_srv;
    int tcp_fd; /* -1: no tcp_rtt (with CURVE) */
    ac_system *sys;
    ac_node *node;
    ac_ref *inc, *counter, *asker, *sender;
    asker_env aenv;
    sender_env senv;
    uint64_t aseen, sseen;
    void *zctx, *dealer;
    frame_sizes fs;
    int64_t ax, zx, tx; /* the next x of remote_ask, zmq_rtt, tcp_rtt */
    /* A direct run's remote_ask_over_zmq: the same asks from a second
     * system whose node is ZeroMQ's, to a server of ZeroMQ's, in turn
     * with the others. */
    char wl_over[64];
    rt_proc over_srv;
    ac_system *over_sys;
    ac_ref *over_inc;
    int64_t ox;
} run;

static const char *wl_name(char *buf, size_t cap, const char *base, const char *suffix)
{
    snprintf(buf, cap, "%s%s", base, suffix);
    return buf;
}

/* A frame size actorc measured, as the ZeroMQ frames take it (they need
 * ZF_MIN bytes for their own fields). */
static size_t usable_size(size_t n, const char *what)
{
    if (n == 0 || n > ZF_MAX)
        rb_fail("an actorc %s frame of %zu bytes measured: outside this harness's 1..%d", what, n,
                ZF_MAX);
    return n < ZF_MIN ? ZF_MIN : n;
}

/* ---- remote_ask, remote_ask_in, zmq_rtt: one block each ---------------- */

static void ask_block_outside(run *r, int64_t *lat, int n)
{
    for (int i = 0; i < n; i++, r->ax++) {
        ac_answer ans;
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(r->inc, ac_msg_int64_new(r->ax), ASK_TIMEOUT_MS, &ans);
        int64_t el = now_ns() - t0;
        check_reply(r->wl[0], st, &ans, r->ax);
        ac_answer_release(&ans);
        if (lat)
            lat[i] = el;
    }
}

static void asker_answer(ac_ctx *ctx, const ac_answer *answer, void *user);

static void asker_next(ac_ctx *ctx, asker_state *st, asker_env *env)
{
    if (st->i == st->n) {
        latch_signal(&env->done, st->i, 0, 0);
        return;
    }
    st->t0 = now_ns();
    rb_check(ac_ask_in(ctx, env->target, ac_msg_int64_new(st->x), ASK_TIMEOUT_MS, asker_answer,
                       env, NULL),
             "ac_ask_in");
}

static void asker_answer(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    asker_state *st = ac_ctx_state(ctx);
    asker_env *env = user;
    int64_t el = now_ns() - st->t0;
    check_reply(env->wl, answer->error ? AC_EFAILED : AC_OK, answer, st->x);
    if (env->lat)
        env->lat[st->i] = el;
    st->i++;
    st->x++;
    asker_next(ctx, st, env);
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    asker_state *st = ac_ctx_state(ctx);
    st->i = 0;
    st->n = ac_msg_int64(msg);
    asker_next(ctx, st, ac_ctx_user_data(ctx));
}
static const ac_actor_def asker_def = {.name = "Asker", .state_size = sizeof(asker_state),
                                       .receive = asker_receive};

static void ask_block_inside(run *r, int64_t *lat, int n)
{
    int64_t got[3];
    r->aenv.lat = lat;
    rb_check(ac_tell(r->asker, ac_msg_int64_new(n), NULL), "ac_tell");
    latch_wait(&r->aenv.done, &r->aseen, got);
    if (got[0] != n)
        rb_fail("%s: %" PRId64 " asks, not %d", r->wl[1], got[0], n);
}

static void over_zmq_block(run *r, int64_t *lat, int n)
{
    for (int i = 0; i < n; i++, r->ox++) {
        ac_answer ans;
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(r->over_inc, ac_msg_int64_new(r->ox), ASK_TIMEOUT_MS, &ans);
        int64_t el = now_ns() - t0;
        check_reply(r->wl_over, st, &ans, r->ox);
        ac_answer_release(&ans);
        if (lat)
            lat[i] = el;
    }
}

static void zmq_block(run *r, int64_t *lat, int n)
{
    uint8_t f[ZF_MAX] = {0}, rep[ZF_MAX];
    for (int i = 0; i < n; i++, r->zx++) {
        int64_t t0 = now_ns();
        zsend(r->dealer, zframe(f, 'A', r->fs.reply, r->zx), r->fs.ask);
        zrecv(r->dealer, rep, r->fs.reply, r->wl[2]);
        int64_t el = now_ns() - t0;
        if (get_i64(rep, ZF_VALUE) != r->zx + 1)
            rb_fail("%s: request %" PRId64 " got %" PRId64, r->wl[2], r->zx, get_i64(rep, ZF_VALUE));
        if (lat)
            lat[i] = el;
    }
}

static void tcp_block(run *r, int64_t *lat, int n)
{
    uint8_t f[ZF_MAX] = {0}, rep[ZF_MAX];
    for (int i = 0; i < n; i++, r->tx++) {
        int64_t t0 = now_ns();
        if (!tcp_frame_out(r->tcp_fd, zframe(f, 'A', r->fs.reply, r->tx), (uint32_t)r->fs.ask) ||
            tcp_frame_in(r->tcp_fd, rep) != r->fs.reply)
            rb_die("%s: request %" PRId64 ": %s", r->wl[4], r->tx, strerror(errno));
        int64_t el = now_ns() - t0;
        if (get_i64(rep, ZF_VALUE) != r->tx + 1)
            rb_fail("%s: request %" PRId64 " got %" PRId64, r->wl[4], r->tx, get_i64(rep, ZF_VALUE));
        if (lat)
            lat[i] = el;
    }
}

typedef void (*ask_block_fn)(run *r, int64_t *lat, int n);

/* Warm-ups (actorc's first, measuring its frames), then ASK_BLOCKS
 * rounds of one block each, the order rotating (remote_ask_over_zmq's
 * among them in a direct run); tcp_rtt's block (when there is one) after
 * each round. out: remote_ask, remote_ask_in, zmq_rtt, tcp_rtt,
 * remote_ask_over_zmq. */
static void ask_phase(run *r, latency out[5])
{
    static const ask_block_fn block[4] = {ask_block_outside, ask_block_inside, zmq_block,
                                          over_zmq_block};
    static const int slot[4] = {0, 1, 2, 4}; /* block k's latencies */
    ac_node_stats a = stats_of(r->node);
    ask_block_outside(r, NULL, ASK_WARM);
    ac_node_stats b = stats_of(r->node);
    frame_bytes(&a, &b, &r->fs.ask, &r->fs.reply);
    r->fs.ask = usable_size(r->fs.ask, "ask");
    r->fs.reply = usable_size(r->fs.reply, "reply");
    ask_block_inside(r, NULL, ASK_WARM);
    zmq_block(r, NULL, ASK_WARM);
    bool tcp = r->tcp_fd >= 0, over = r->over_inc != NULL;
    int nb = over ? 4 : 3;
    if (tcp)
        tcp_block(r, NULL, ASK_WARM);
    if (over)
        over_zmq_block(r, NULL, ASK_WARM);
    int64_t *lat[5];
    for (int w = 0; w < 5; w++)
        lat[w] = xcalloc(ASK_N, sizeof(int64_t));
    for (int k = 0; k < ASK_BLOCKS; k++) {
        for (int j = 0; j < nb; j++) {
            int w = (k + j) % nb;
            block[w](r, lat[slot[w]] + k * ASK_BLOCK, ASK_BLOCK);
        }
        if (tcp)
            tcp_block(r, lat[3] + k * ASK_BLOCK, ASK_BLOCK);
    }
    for (int w = 0; w < 5; w++) {
        if (w < 3 || (w == 3 && tcp))
            out[w] = report_latency(w < 3 ? r->wl[w] : r->wl[4], lat[w], ASK_N,
                                    w < 2 ? "asks" : NULL);
        else if (w == 4 && over)
            out[w] = report_latency(r->wl_over, lat[w], ASK_N, "asks");
        free(lat[w]);
    }
}

/* ---- remote_tell, zmq_pipelined: one iteration each --------------------- */

static void sender_counted(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    sender_state *st = ac_ctx_state(ctx);
    sender_env *env = user;
    int64_t el = now_ns() - st->t0;
    long long n = -1, sum = -1;
    const char *s = answer->reply ? ac_msg_str(answer->reply) : NULL;
    if (!s || sscanf(s, "%lld %lld", &n, &sum) != 2) {
        ac_node_stats ns = stats_of(env->node);
        rb_fail("remote_tell: the count ask failed: %s (frames out %" PRIu64
                ", refused for backpressure %" PRIu64 ")",
                answer->error ? ac_error_message(answer->error) : "not a count", ns.frames_out,
                ns.dropped_backpressure);
    }
    latch_signal(&env->done, n, sum, el);
}

static void sender_receive(ac_ctx *ctx, ac_msg *msg)
{
    sender_state *st = ac_ctx_state(ctx);
    sender_env *env = ac_ctx_user_data(ctx);
    int64_t n = ac_msg_int64(msg);
    st->t0 = now_ns();
    for (int64_t i = 0; i < n; i++)
        rb_check(ac_tell(env->target, ac_msg_int64_new(i & 0xff), ac_self(ctx)), "ac_tell");
    rb_check(ac_ask_in(ctx, env->target, ac_msg_str_new("take"), COUNT_TIMEOUT_MS, sender_counted,
                       env, NULL),
             "ac_ask_in");
}
static const ac_actor_def sender_def = {.name = "Sender", .state_size = sizeof(sender_state),
                                        .receive = sender_receive};

/* One iteration's elapsed ns; the first also measures the frames. */
static int64_t tell_once_actorc(run *r, bool measure)
{
    ac_node_stats before = stats_of(r->node);
    int64_t got[3];
    rb_check(ac_tell(r->sender, ac_msg_int64_new(TELL_N), NULL), "ac_tell");
    latch_wait(&r->senv.done, &r->sseen, got);
    if (got[0] != TELL_N || got[1] != expected_sum(TELL_N))
        rb_fail("%s: the counter counted %" PRId64 " messages summing to %" PRId64
                " (dead letters here: %" PRIu64 ")",
                r->wl[3], got[0], got[1], ac_dead_letter_count(r->sys));
    if (measure) {
        ac_node_stats after = stats_of(r->node);
        uint64_t frames = after.frames_out - before.frames_out;
        uint64_t bytes = after.bytes_out - before.bytes_out;
        r->fs.tell = frames > 1 ? (size_t)((bytes - r->fs.count_ask) / (frames - 1)) : 0;
        size_t out;
        frame_bytes(&before, &after, &out, &r->fs.count_reply);
    }
    return got[2];
}

static int64_t tell_once_zmq(run *r)
{
    uint8_t f[ZF_MAX] = {0}, rep[ZF_MAX];
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < TELL_N; i++)
        zsend(r->dealer, zframe(f, 'T', 0, i & 0xff), r->fs.tell);
    zsend(r->dealer, zframe(f, 'C', r->fs.count_reply, 0), r->fs.count_ask);
    zrecv(r->dealer, rep, r->fs.count_reply, "zmq_pipelined");
    int64_t el = now_ns() - t0;
    if (get_i64(rep, ZF_VALUE) != TELL_N || get_i64(rep, ZF_SUM) != expected_sum(TELL_N))
        rb_fail("zmq_pipelined: the server counted %" PRId64 " frames summing to %" PRId64,
                get_i64(rep, ZF_VALUE), get_i64(rep, ZF_SUM));
    return el;
}

/* The count ask's own frame ("take" to the counter). */
static void measure_count_ask(run *r)
{
    ac_node_stats a = stats_of(r->node);
    ac_answer ans;
    rb_check(ac_ask_wait(r->counter, ac_msg_str_new("take"), ASK_TIMEOUT_MS, &ans), "ac_ask_wait");
    ac_answer_release(&ans);
    ac_node_stats b = stats_of(r->node);
    size_t in;
    frame_bytes(&a, &b, &r->fs.count_ask, &in);
}

/* Iterations alternate: actorc first (its warm-up measures the frames),
 * then the order flips each time. Returns the medians (actorc, zmq). */
static void tell_phase(run *r, double *actorc_rate, double *zmq_rate)
{
    double ra[TELL_ITERS], rz[TELL_ITERS];
    measure_count_ask(r);
    for (int it = 0; it < TELL_WARM + TELL_ITERS; it++) {
        int64_t ea, ez;
        if (it % 2 == 0) {
            ea = tell_once_actorc(r, it == 0);
            if (it == 0) {
                r->fs.tell = usable_size(r->fs.tell, "tell");
                r->fs.count_ask = usable_size(r->fs.count_ask, "count ask");
                r->fs.count_reply = usable_size(r->fs.count_reply, "count reply");
            }
            ez = tell_once_zmq(r);
        } else {
            ez = tell_once_zmq(r);
            ea = tell_once_actorc(r, false);
        }
        if (it >= TELL_WARM) {
            ra[it - TELL_WARM] = TELL_N * 1e9 / (double)ea;
            rz[it - TELL_WARM] = TELL_N * 1e9 / (double)ez;
        }
    }
    *actorc_rate = median(ra, TELL_ITERS);
    *zmq_rate = median(rz, TELL_ITERS);
}

/* ---- setting up and ending a run --------------------------------------- */

static ac_ref *spawn_local(ac_system *sys, const ac_actor_def *def, void *user)
{
    ac_ref *r = ac_spawn(sys, ac_props_new(def, user), NULL);
    if (!r)
        rb_die_ac("ac_spawn");
    return r;
}

static ac_ref *resolve(ac_node *node, const char *address, const char *path)
{
    char full[512];
    snprintf(full, sizeof full, "actorc://bench_b@%s%s", address, path);
    ac_ref *r = ac_node_resolve(node, full);
    if (!r)
        rb_die_ac("ac_node_resolve");
    return r;
}

static void run_begin(run *r, const char *suffix, const keys *k, ac_node_curve *curve,
                      const char **allowed)
{
    r->suffix = suffix;
    static const char *const names[] = {"remote_ask", "remote_ask_in", "zmq_rtt", "remote_tell",
                                        "tcp_rtt"};
    for (int i = 0; i < 5; i++)
        wl_name(r->wl[i], sizeof r->wl[i], names[i], suffix);
    server_start(&r->actorc_srv, "actorc", k);
    server_start(&r->zmq_srv, "zmq", k);
    r->tcp_fd = -1;
    if (!k && run_asks) {
        server_start(&r->tcp_srv, "tcp", NULL);
        r->tcp_fd = tcp_connect(r->tcp_srv.address);
    }
    r->sys = system_new("bench_a");
    r->node = node_new(r->sys, k, true, curve, allowed);
    r->inc = resolve(r->node, r->actorc_srv.address, "/user/inc");
    r->counter = resolve(r->node, r->actorc_srv.address, "/user/counter");
    r->aenv = (asker_env){.wl = r->wl[1], .target = r->inc};
    latch_init(&r->aenv.done);
    r->senv = (sender_env){.target = r->counter, .node = r->node};
    latch_init(&r->senv.done);
    r->asker = spawn_local(r->sys, &asker_def, &r->aenv);
    r->sender = spawn_local(r->sys, &sender_def, &r->senv);
    r->zctx = zmq_ctx_new();
    r->dealer = zclient_open(r->zctx, r->zmq_srv.address, k);
    if (direct && run_asks) {
        wl_name(r->wl_over, sizeof r->wl_over, "remote_ask_over_zmq", suffix);
        server_start(&r->over_srv, "actorc-zmq", NULL);
        r->over_sys = system_new("bench_a_zmq");
        ac_node_options o = {.bind = "tcp://127.0.0.1:0"};
        ac_node *n = ac_node_start(r->over_sys, &o);
        if (!n)
            rb_die_ac("ac_node_start");
        r->over_inc = resolve(n, r->over_srv.address, "/user/inc");
    }
}

static void run_end(run *r)
{
    zmq_close(r->dealer);
    zmq_ctx_term(r->zctx);
    ac_ref_release(r->inc);
    ac_ref_release(r->counter);
    ac_ref_release(r->asker);
    ac_ref_release(r->sender);
    ac_system_terminate(r->sys);
    latch_fini(&r->aenv.done);
    latch_fini(&r->senv.done);
    server_end(&r->actorc_srv);
    server_end(&r->zmq_srv);
    if (r->tcp_fd >= 0) {
        close(r->tcp_fd);
        server_end(&r->tcp_srv);
    }
    if (r->over_inc) {
        ac_ref_release(r->over_inc);
        ac_system_terminate(r->over_sys);
        server_end(&r->over_srv);
    }
}

static void report_ratios(const char *suffix, const latency l[5], bool tcp, bool over,
                          double tell, double zmq)
{
    char wl[64];
    if (over) { /* the two transports of actorc, in the same run */
        wl_name(wl, sizeof wl, "remote_ask", suffix);
        result(wl, "p50_vs_zmq_transport", l[0].p50_us / l[4].p50_us, "x");
        result(wl, "p99_vs_zmq_transport", l[0].p99_us / l[4].p99_us, "x");
        if (tcp) {
            wl_name(wl, sizeof wl, "remote_ask_over_zmq", suffix);
            result(wl, "p50_vs_tcp", l[4].p50_us / l[3].p50_us, "x");
            result(wl, "p99_vs_tcp", l[4].p99_us / l[3].p99_us, "x");
        }
    }
    for (int w = 0; w < 2; w++) {
        wl_name(wl, sizeof wl, w == 0 ? "remote_ask" : "remote_ask_in", suffix);
        result(wl, "p50_vs_zmq", l[w].p50_us / l[2].p50_us, "x");
        result(wl, "p99_vs_zmq", l[w].p99_us / l[2].p99_us, "x");
        if (tcp) {
            result(wl, "p50_vs_tcp", l[w].p50_us / l[3].p50_us, "x");
            result(wl, "p99_vs_tcp", l[w].p99_us / l[3].p99_us, "x");
        }
    }
    result(wl_name(wl, sizeof wl, "remote_tell", suffix), "vs_zmq", tell / zmq, "x");
}

static void run_mode(const char *suffix, const keys *k)
{
    run *r = xcalloc(1, sizeof *r);
    ac_node_curve curve;
    const char *allowed;
    char wl[64];
    run_begin(r, suffix, k, &curve, &allowed);
    latency l[5] = {{0}};
    if (run_asks)
        ask_phase(r, l);
    double tell = 0, zmq = 0;
    if (run_tells) {
        tell_phase(r, &tell, &zmq);
        result(r->wl[3], "msgs_per_s", tell, "msg/s");
        result(wl_name(wl, sizeof wl, "zmq_pipelined", suffix), "msgs_per_s", zmq, "msg/s");
    }
    printf("INFO remote%s frame_bytes ask %zu reply %zu tell %zu count_ask %zu count_reply %zu\n",
           suffix, r->fs.ask, r->fs.reply, r->fs.tell, r->fs.count_ask, r->fs.count_reply);
    if (run_asks && run_tells)
        report_ratios(suffix, l, r->tcp_fd >= 0, r->over_inc != NULL, tell, zmq);
    run_end(r);
    free(r);
}

/* ------------------------------------------------------- remote_scatter --- */
/* A scatter of 3 over replicas in 3 other processes (a group
 * scatter/gather router over their remote refs), each request taking a
 * replica 1 ms (98%) or 100 ms (2%), drawn from (replica, request) by a
 * hash both sides compute. The same scatter over 3 local replicas with the
 * same draws is measured in the same run. Sequential asks from outside.
 *
 * The ideal is measured as scatter_tail measures it in one process: each
 * replica notes when its timer fired (replica_log.h), and the ideal of a
 * scatter is the earliest of the three firings from the request's start,
 * the best any router could return from these replicas (a timer never
 * fires early, and the request's way to a replica comes before it).
 * p99_overhead_pct compares the remote scatter's p99 with that ideal's;
 * p99_overhead_vs_drawn_pct with the drawn delays' (whole ms, before the
 * wire's and the timers' share); p99_vs_local_pct with the local
 * scatter's; p99_vs_zmq with raw ZeroMQ's (zmq_scatter, below). The
 * three take turns in blocks of requests. The INFO lines split the earliest replica's way into the
 * request's way there, the timer's lateness and the answer's way back. */

enum { SC_WARM = 200, SC_N = 3000, SC_FAST_MS = 1, SC_SLOW_MS = 100, SC_SLOW_PER_10K = 200 };
_Static_assert(SC_WARM + SC_N <= REPLICA_LOG_MAX, "every request is noted");

/* 1 ms (98%) or 100 ms (2%), from the draw every process computes. */
static int64_t sc_delay_ms(int replica, int64_t req)
{
    return tail_replica_draw(replica, req) % 10000 < SC_SLOW_PER_10K ? SC_SLOW_MS : SC_FAST_MS;
}

static tail_replica *sc_replica_new(int index)
{
    tail_replica *rep = xcalloc(1, sizeof *rep);
    tail_replica_init(rep, index, sc_delay_ms);
    return rep;
}

static int replica_serve(int replica)
{
    char name[32];
    snprintf(name, sizeof name, "replica%d", replica);
    ac_system *sys = system_new(name);
    ac_node_curve curve;
    const char *allowed;
    ac_node *node = node_new(sys, NULL, false, &curve, &allowed);
    tail_replica *rep = sc_replica_new(replica);
    if (!ac_spawn(sys, ac_props_new(&tail_replica_def, rep), "replica"))
        rb_die_ac("ac_spawn");
    serve_node(sys, node);
    free(rep);
    return 0;
}

/* Requests [from, to) of a run of SC_WARM + SC_N sequential scatters
 * through `router`; the measured ones' starts and answers' arrivals (ns). */
typedef struct sc_run {
    int64_t t0[SC_N], end[SC_N], lat[SC_N];
} sc_run;

static void sc_measure(ac_ref *router, const char *wl, sc_run *run, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        ac_answer a = {0};
        int64_t t0 = now_ns();
        ac_status st = ac_ask_wait(router, ac_msg_int64_new(i), 10000, &a);
        int64_t t1 = now_ns();
        int64_t r;
        if (st != AC_OK || ac_msg_int64_get(a.reply, &r) != AC_OK || r != i)
            rb_fail("%s: scatter %" PRId64 " failed: %s %s", wl, i, ac_status_name(st),
                    a.error ? ac_error_message(a.error) : "");
        ac_answer_release(&a);
        if (i >= SC_WARM) {
            run->t0[i - SC_WARM] = t0;
            run->end[i - SC_WARM] = t1;
            run->lat[i - SC_WARM] = t1 - t0;
        }
    }
}

/* --------------------------------------------------------- zmq_scatter --- */
/* remote_scatter's raw ZeroMQ baseline, in the same harness and run: three
 * more processes, each a ROUTER on one thread that notes a request's
 * arrival, arms a timerfd for its drawn delay (the same draws as the
 * actorc replicas') and answers when the timer fires, waiting in zmq_poll
 * over the socket and the timerfd: the idiom a hand-written ZeroMQ
 * server is written in. The client sends each request on three DEALERs,
 * one per replica, and takes the first answer to it (zmq_poll over the
 * three); answers to earlier requests are noted and dropped. Each answer
 * carries its replica's notes (arrival, firing), so the ideal is measured
 * as remote_scatter's is, and the overhead over it is what raw ZeroMQ's
 * way back costs on the machine it runs on: the floor under
 * remote_scatter's. */

/* A replica holds every request it has not answered yet: one that was not
 * scheduled for a while (a loaded machine) takes many at once, so it has
 * room for a whole run rather than dying when the machine is busy. */
enum { ZS_FRAME = 48, ZS_PENDING = SC_WARM + SC_N, ZS_ID_MAX = 256 };
#define ZS_RECV 16 /* answer: the replica's arrival and firing (ns) */
#define ZS_FIRE 24

typedef struct zs_pending {
    int64_t req, recv, due;
    uint8_t id[ZS_ID_MAX];
    size_t id_len;
} zs_pending;

/* The timerfd armed for the earliest due request (disarmed for none). */
static void zs_arm(int tfd, const zs_pending *p, int n)
{
    struct itimerspec its = {0};
    int64_t due = INT64_MAX;
    for (int i = 0; i < n; i++)
        due = p[i].due < due ? p[i].due : due;
    if (n) {
        its.it_value.tv_sec = due / 1000000000;
        its.it_value.tv_nsec = due % 1000000000;
    }
    if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
        rb_die("timerfd_settime: %s", strerror(errno));
}

/* Take every waiting request ('S', its number as the value). */
static void zs_take(void *router, int replica, zs_pending *p, int *n)
{
    zmq_msg_t id;
    uint8_t f[ZF_MAX];
    zmq_msg_init(&id);
    while (zmq_msg_recv(&id, router, ZMQ_DONTWAIT) >= 0) {
        int len = zmq_msg_more(&id) ? zmq_recv(router, f, sizeof f, 0) : -1;
        if (len < ZS_FRAME || f[ZF_KIND] != 'S' || zmq_msg_size(&id) > ZS_ID_MAX)
            continue;
        if (*n == ZS_PENDING)
            rb_die("zreplica%d: more than %d requests pending", replica, ZS_PENDING);
        zs_pending *q = &p[(*n)++];
        q->recv = replica_log_now();
        q->req = get_i64(f, ZF_VALUE);
        q->due = q->recv + sc_delay_ms(replica, q->req) * 1000000;
        q->id_len = zmq_msg_size(&id);
        memcpy(q->id, zmq_msg_data(&id), q->id_len);
    }
    zmq_msg_close(&id);
}

/* Answer every request whose time has come. */
static void zs_answer(void *router, zs_pending *p, int *n)
{
    int64_t now = replica_log_now();
    for (int i = 0; i < *n;) {
        if (p[i].due > now) {
            i++;
            continue;
        }
        uint8_t out[ZS_FRAME] = {'R'};
        put_i64(out, ZF_VALUE, p[i].req);
        put_i64(out, ZS_RECV, p[i].recv);
        put_i64(out, ZS_FIRE, now);
        zmq_send(router, p[i].id, p[i].id_len, ZMQ_SNDMORE);
        zmq_send(router, out, sizeof out, 0);
        p[i] = p[--*n];
    }
}

static int zreplica_serve(int replica)
{
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    zset(router, ZMQ_LINGER, 0);
    if (zmq_bind(router, "tcp://127.0.0.1:*") != 0)
        rb_die_zmq("zmq_bind");
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tfd < 0)
        rb_die("timerfd_create: %s", strerror(errno));
    char endpoint[256];
    size_t len = sizeof endpoint;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len);
    printf("READY %s -\n", endpoint);
    fflush(stdout);
    int64_t deadline = now_ns() + SERVE_MAX_S * 1000000000ll;
    static zs_pending pending[ZS_PENDING];
    int n = 0;
    for (;;) {
        zmq_pollitem_t it[3] = {{.socket = router, .events = ZMQ_POLLIN},
                                {.fd = tfd, .events = ZMQ_POLLIN},
                                {.fd = 0, .events = ZMQ_POLLIN}};
        int rc = zmq_poll(it, 3, 100);
        if (rc < 0 && zmq_errno() != EINTR)
            rb_die_zmq("zmq_poll");
        if ((rc == 0 || it[2].revents) && serve_should_end(deadline)) /* EOF: POLLHUP */
            break;
        if (it[1].revents & ZMQ_POLLIN) {
            uint64_t expirations;
            if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
                rb_die("read (timerfd): %s", strerror(errno));
        }
        zs_answer(router, pending, &n);
        if (it[0].revents & ZMQ_POLLIN)
            zs_take(router, replica, pending, &n);
        zs_arm(tfd, pending, n);
    }
    close(tfd);
    zmq_close(router);
    zmq_ctx_term(ctx);
    return 0;
}

/* The client's three DEALERs, and the notes the answers carry. */
typedef struct zs_client {
    void *ctx, *d[3];
    replica_log *logs[3];
} zs_client;

/* Take every waiting answer on d[k]; true when one is request `want`'s. */
static bool zs_drain(zs_client *c, int k, int64_t want)
{
    bool got = false;
    uint8_t f[ZF_MAX];
    int len;
    while ((len = zmq_recv(c->d[k], f, sizeof f, ZMQ_DONTWAIT)) >= 0) {
        int64_t req = get_i64(f, ZF_VALUE);
        if (len != ZS_FRAME || f[ZF_KIND] != 'R' || req < 0 || req >= REPLICA_LOG_MAX)
            rb_fail("zmq_scatter: a malformed answer (%d bytes)", len);
        c->logs[k]->recv[req] = get_i64(f, ZS_RECV);
        c->logs[k]->fire[req] = get_i64(f, ZS_FIRE);
        got |= req == want;
    }
    return got;
}

/* Wait up to timeout_ms for answers; true when request `want`'s came. */
static bool zs_wait(zs_client *c, int64_t want, long timeout_ms)
{
    zmq_pollitem_t it[3];
    for (int k = 0; k < 3; k++)
        it[k] = (zmq_pollitem_t){.socket = c->d[k], .events = ZMQ_POLLIN};
    if (zmq_poll(it, 3, timeout_ms) < 0 && zmq_errno() != EINTR)
        rb_die_zmq("zmq_poll");
    bool got = false;
    for (int k = 0; k < 3; k++)
        if (it[k].revents & ZMQ_POLLIN)
            got |= zs_drain(c, k, want);
    return got;
}

/* Requests [from, to) as scatters, each answered by its first answer. */
static void zs_measure(zs_client *c, sc_run *run, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        uint8_t f[ZS_FRAME] = {'S'};
        put_i64(f, ZF_VALUE, i);
        int64_t t0 = now_ns();
        for (int k = 0; k < 3; k++)
            zsend(c->d[k], f, sizeof f);
        while (!zs_wait(c, i, SOCKET_TIMEOUT_MS))
            if (now_ns() - t0 > SOCKET_TIMEOUT_MS * 1000000ll)
                rb_fail("zmq_scatter: request %" PRId64 " was not answered", i);
        int64_t t1 = now_ns();
        if (i >= SC_WARM) {
            run->t0[i - SC_WARM] = t0;
            run->end[i - SC_WARM] = t1;
            run->lat[i - SC_WARM] = t1 - t0;
        }
    }
}

/* The answers still to come (the slow draws), for the notes. */
static void zs_collect(zs_client *c, int64_t n)
{
    int64_t deadline = now_ns() + (2 * SC_SLOW_MS + 1000) * 1000000ll;
    for (int64_t q = 0; q < n; q++)
        for (int k = 0; k < 3; k++)
            while (!c->logs[k]->fire[q] && now_ns() < deadline)
                zs_wait(c, -1, 10);
}

static void zs_open(zs_client *c, const rt_proc *rep)
{
    c->ctx = zmq_ctx_new();
    for (int k = 0; k < 3; k++) {
        c->d[k] = zclient_open(c->ctx, rep[k].address, NULL);
        c->logs[k] = xcalloc(1, sizeof *c->logs[k]);
    }
}

static void zs_close(zs_client *c)
{
    for (int k = 0; k < 3; k++) {
        zmq_close(c->d[k]);
        free(c->logs[k]);
    }
    zmq_ctx_term(c->ctx);
}

/* The three replicas' notes, fetched once their last timers have fired. */
static void sc_fetch(ac_ref *const *replicas, replica_log *const *logs, const char *wl)
{
    sleep_ms(2 * SC_SLOW_MS);
    for (int k = 0; k < 3; k++)
        if (!replica_log_fetch(replicas[k], logs[k], SC_WARM + SC_N))
            rb_fail("%s: replica %d did not report its notes", wl, k);
}

static double sc_p(int64_t *v, double p) { return (double)pct(v, SC_N, p) / 1e3; }

/* The ideal's p99 (us), and the split of the run printed as INFO. */
static double sc_ideal_p99(const char *wl, replica_log *const *logs, sc_run *run)
{
    scatter_split sp = {xcalloc(SC_N, 8), xcalloc(SC_N, 8), xcalloc(SC_N, 8), xcalloc(SC_N, 8)};
    replica_log_split(logs, 3, run->t0, run->end, SC_WARM, SC_N, sc_delay_ms, &sp);
    double ip = sc_p(sp.ideal, 99);
    printf("INFO %s p50 %.1f p99 %.1f us; the earliest replica's way, p50/p99 us: out %.1f/%.1f"
           " timer_late %.1f/%.1f back %.1f/%.1f; ideal p50 %.1f p99 %.1f us\n",
           wl, sc_p(run->lat, 50), sc_p(run->lat, 99), sc_p(sp.out, 50), sc_p(sp.out, 99),
           sc_p(sp.timer_late, 50), sc_p(sp.timer_late, 99), sc_p(sp.back, 50),
           sc_p(sp.back, 99), sc_p(sp.ideal, 50), ip);
    free(sp.ideal);
    free(sp.out);
    free(sp.timer_late);
    free(sp.back);
    return ip;
}

static double sc_drawn_ideal_p99(void)
{
    int64_t *ideal = xcalloc(SC_N, sizeof *ideal);
    tail_replica_drawn_ideal(3, sc_delay_ms, SC_WARM, SC_N, ideal);
    double ip = sc_p(ideal, 99);
    free(ideal);
    return ip;
}

/* The RESULT lines of the remote run, the local one and raw ZeroMQ's. */
static void sc_report(replica_log *const *rlogs, sc_run *rrun, replica_log *const *llogs,
                      sc_run *lrun, zs_client *zc, sc_run *zrun)
{
    double lip = sc_ideal_p99("remote_scatter (local)", llogs, lrun);
    double rip = sc_ideal_p99("remote_scatter", rlogs, rrun);
    double zip = sc_ideal_p99("zmq_scatter", zc->logs, zrun);
    double dip = sc_drawn_ideal_p99();
    double rp = sc_p(rrun->lat, 99), lp = sc_p(lrun->lat, 99), zp = sc_p(zrun->lat, 99);
    result(named("zmq_scatter"), "p99", zp, "us");
    result(named("zmq_scatter"), "ideal_p99", zip, "us");
    result(named("zmq_scatter"), "p99_overhead_pct", (zp - zip) / zip * 100.0, "%");
    result(named("remote_scatter"), "p99", rp, "us");
    result(named("remote_scatter"), "ideal_p99", rip, "us");
    result(named("remote_scatter"), "drawn_ideal_p99", dip, "us");
    result(named("remote_scatter"), "local_p99", lp, "us");
    result(named("remote_scatter"), "local_ideal_p99", lip, "us");
    result(named("remote_scatter"), "p99_overhead_pct", (rp - rip) / rip * 100.0, "%");
    result(named("remote_scatter"), "p99_overhead_vs_drawn_pct", (rp - dip) / dip * 100.0, "%");
    result(named("remote_scatter"), "local_p99_overhead_pct", (lp - lip) / lip * 100.0, "%");
    result(named("remote_scatter"), "p99_vs_local_pct", (rp - lp) / lp * 100.0, "%");
    result(named("remote_scatter"), "p99_vs_zmq", rp / zp, "x");
}

/* The three workloads take turns in blocks of requests (the first of a
 * block rotating), so that a shared machine's drift falls on all alike. */
enum { SC_BLOCKS = 8 };

static void scatter_phase(void)
{
    rt_proc rep[3], zrep[3];
    for (int k = 0; k < 3; k++) {
        char what[16];
        snprintf(what, sizeof what, "replica%d", k);
        server_start(&rep[k], what, NULL);
        snprintf(what, sizeof what, "zreplica%d", k);
        server_start(&zrep[k], what, NULL);
    }
    ac_system *sys = system_new("bench_a");
    ac_node_curve curve;
    const char *allowed;
    ac_node *node = node_new(sys, NULL, true, &curve, &allowed);
    ac_ref *remote[3], *local[3];
    tail_replica *lrep[3];
    replica_log *rlogs[3], *llogs[3];
    for (int k = 0; k < 3; k++) {
        char path[320];
        snprintf(path, sizeof path, "actorc://replica%d@%s/user/replica", k, rep[k].address);
        if (!(remote[k] = ac_node_resolve(node, path)))
            rb_die_ac("ac_node_resolve");
        char name[16];
        snprintf(name, sizeof name, "local%d", k);
        lrep[k] = sc_replica_new(k);
        if (!(local[k] = ac_spawn(sys, ac_props_new(&tail_replica_def, lrep[k]), name)))
            rb_die_ac("ac_spawn");
        rlogs[k] = xcalloc(1, sizeof *rlogs[k]);
        llogs[k] = xcalloc(1, sizeof *llogs[k]);
    }
    ac_scatter_gather_options o = {.timeout_ms = 5000};
    ac_ref *rsg = ac_spawn(sys, ac_router_group_scatter_gather_first_completed(remote, 3, &o), "rsg");
    ac_ref *lsg = ac_spawn(sys, ac_router_group_scatter_gather_first_completed(local, 3, &o), "lsg");
    if (!rsg || !lsg)
        rb_die_ac("ac_spawn (router)");
    zs_client zc;
    zs_open(&zc, zrep);
    sc_run *lrun = xcalloc(1, sizeof *lrun), *rrun = xcalloc(1, sizeof *rrun),
           *zrun = xcalloc(1, sizeof *zrun);
    const int64_t total = SC_WARM + SC_N;
    for (int b = 0; b < SC_BLOCKS; b++) {
        int64_t from = total * b / SC_BLOCKS, to = total * (b + 1) / SC_BLOCKS;
        for (int w = 0; w < 3; w++) {
            switch ((b + w) % 3) {
            case 0: sc_measure(lsg, "remote_scatter (local)", lrun, from, to); break;
            case 1: sc_measure(rsg, "remote_scatter", rrun, from, to); break;
            default: zs_measure(&zc, zrun, from, to); break;
            }
        }
    }
    sc_fetch(local, llogs, "remote_scatter (local)");
    sc_fetch(remote, rlogs, "remote_scatter");
    zs_collect(&zc, total);
    sc_report(rlogs, rrun, llogs, lrun, &zc, zrun);
    zs_close(&zc);
    for (int k = 0; k < 3; k++) {
        ac_ref_release(remote[k]);
        ac_ref_release(local[k]);
    }
    ac_ref_release(rsg);
    ac_ref_release(lsg);
    ac_system_terminate(sys);
    for (int k = 0; k < 3; k++) {
        server_end(&rep[k]);
        server_end(&zrep[k]);
        free(lrep[k]);
        free(rlogs[k]);
        free(llogs[k]);
    }
    free(lrun);
    free(rrun);
    free(zrun);
}

static int usage(void)
{
    fprintf(stderr, "usage: actorc-bench-remote [all|plain|curve [ask|tell]] | scatter\n");
    return 64;
}

static int serve_main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* even if our input stays open */
    keys k;
    const keys *kp = NULL;
    if (argc == 8) { /* serve WHAT SERVER_PUB SERVER_SEC PUB SEC ALLOWED: b's view */
        snprintf(k.spub, sizeof k.spub, "%s", argv[3]);
        snprintf(k.ssec, sizeof k.ssec, "%s", argv[4]);
        snprintf(k.bpub, sizeof k.bpub, "%s", argv[5]);
        snprintf(k.bsec, sizeof k.bsec, "%s", argv[6]);
        snprintf(k.apub, sizeof k.apub, "%s", argv[7]);
        kp = &k;
    } else if (argc != 3) {
        return usage();
    }
    direct = getenv("ACTORC_BENCH_TRANSPORT") &&
             strcmp(getenv("ACTORC_BENCH_TRANSPORT"), "tcp+direct") == 0;
    if (strcmp(argv[2], "actorc") == 0)
        return actorc_serve(kp);
    if (strcmp(argv[2], "actorc-zmq") == 0) {
        force_zmq = true;
        return actorc_serve(kp);
    }
    if (strcmp(argv[2], "zmq") == 0)
        return zmq_serve(kp);
    if (strcmp(argv[2], "tcp") == 0)
        return tcp_serve();
    if (strncmp(argv[2], "replica", 7) == 0 && argv[2][7] >= '0' && argv[2][7] <= '2' && !argv[2][8])
        return replica_serve(argv[2][7] - '0');
    if (strncmp(argv[2], "zreplica", 8) == 0 && argv[2][8] >= '0' && argv[2][8] <= '2' && !argv[2][9])
        return zreplica_serve(argv[2][8] - '0');
    return usage();
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && strcmp(argv[1], "serve") == 0)
        return serve_main(argc, argv);
    const char *what = argc > 1 ? argv[1] : "all";
    const char *transport = getenv("ACTORC_BENCH_TRANSPORT");
    direct = transport && strcmp(transport, "tcp+direct") == 0;
    if (transport && !direct && strcmp(transport, "tcp") != 0) {
        fprintf(stderr, "actorc-bench-remote: ACTORC_BENCH_TRANSPORT is tcp or tcp+direct\n");
        return 64;
    }
    if (strcmp(what, "scatter") == 0 && argc == 2) {
        alarm(RUN_MAX_S);
        scatter_phase();
        return 0;
    }
    bool plain = strcmp(what, "all") == 0 || strcmp(what, "plain") == 0;
    /* CURVE is the ZeroMQ transport's: a direct run has none. */
    bool curve = !direct && (strcmp(what, "all") == 0 || strcmp(what, "curve") == 0);
    if (direct && strcmp(what, "curve") == 0)
        return usage();
    if (argc == 3) {
        run_asks = strcmp(argv[2], "ask") == 0;
        run_tells = strcmp(argv[2], "tell") == 0;
    }
    if ((!plain && !curve) || argc > 3 || (!run_asks && !run_tells))
        return usage();
    alarm(RUN_MAX_S);
    if (plain)
        run_mode(direct ? "_direct" : "", NULL);
    if (curve) {
        keys k;
        keys_make(&k);
        run_mode("_curve", &k);
    }
    if (strcmp(what, "all") == 0 && run_asks && run_tells)
        scatter_phase();
    return 0;
}
