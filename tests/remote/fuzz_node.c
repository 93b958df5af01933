/*
 * The whole inbound path of a node under arbitrary input: a fuzz target.
 *
 * A real node ("srv", with an echo, a sink, a watcher and an echo one
 * level down) runs in this process, started once and kept across inputs.
 * Each input (fuzz_node.h) is a program a peer made of raw ZeroMQ sockets
 * runs against it over loopback: DEALERs with routing ids of its choice
 * say HELLO and send messages of one part or several, raw bytes or
 * envelopes built from fuzzed fields with ac__wire_encode; this thread
 * resolves fuzzed paths on srv and tells and asks through what they give.
 * Fuzzed sender fields and paths name addresses, and srv dials them: the
 * peer's own ROUTERs, srv itself, a refused port, a listener that never
 * answers, or text.
 *
 * After each input the target checks, and abort()s when one fails, that
 *  - srv took every message sent (its transport reads on),
 *  - every ask made through srv's refs settled,
 *  - srv answers an ask from a second node in this process ("probe"),
 *  - and, once the peer has left and closed its DEALERs, srv's tables
 *    are back where they were: no peer but the probe, no correlation
 *    entry, no more interned remote refs than before. State must not
 *    grow from input to input.
 *
 * Where addresses may go. Under a network namespace of its own (the
 * fuzzer is run under `unshare -n`, see docs/remoting.md), which the
 * target recognises by having no interface but loopback, any address
 * goes. Anywhere else (the replay in the suite) an address that is not
 * one the harness made is rewritten to the refused port before srv sees
 * it, in envelopes it builds, in paths it resolves, and in frames of raw
 * messages (re-encoded): fuzzed text may name any host, and the suite
 * must not dial one, nor any other program's port on this machine. In
 * both, an address at the probe's port is rewritten too (the probe's
 * address is in srv's tables, where the fuzzer's comparisons find it):
 * a HELLO naming it with another incarnation takes the probe's place in
 * srv, by the rules, and the check would fail for what is no fault.
 * Routing ids never equal the probe's incarnation, for the same reason.
 *
 * Built two ways: with clang's -fsanitize=fuzzer as the fuzzer fuzz_node
 * (when the compiler has it), and into the suite's remote.node_corpus,
 * which replays the committed corpus (corpus-node/).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "fuzz_node.h"
#include "remote/node_internal.h"
#include "wire_samples.h"

/* Bounds of the checks, generous for sanitizer builds on a busy machine. */
#define TAKE_MS 10000     /* srv takes what was sent */
#define SERVE_MS 10000    /* srv answers the probe */
#define SETTLE_MS 10000   /* an ask settles after its timeout */
#define CLEAN_MS 10000    /* srv's tables are back */
#define CONNECT_TIMEOUT_MS 200
#define HEARTBEAT_TIMEOUT_MS 10000
#define MAX_FRAME 4096    /* small, so that inputs reach it */
#define MAX_MSG 16384     /* what srv's ROUTER takes (AC__WIRE_BATCH_MAX) */
#define MAX_ACTIONS 24
#define MAX_FUTURES 8
#define REFS 4
#define SLOTS 2

static void die(const char *fmt, ...) AC_PRINTF(1, 2);

/* ---- the input -------------------------------------------------------- */

typedef struct fn_in {
    const uint8_t *p;
    size_t n;
} fn_in;

static uint8_t u8(fn_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint64_t u64(fn_in *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | u8(in);
    return v;
}

static ac__wire_span bytes(fn_in *in, size_t n)
{
    if (n > in->n)
        n = in->n;
    ac__wire_span s = {in->p, n};
    in->p += n;
    in->n -= n;
    return s;
}

static ac__wire_span text(fn_in *in) { return bytes(in, u8(in)); }

/* ---- the harness ------------------------------------------------------- */

typedef struct slot {
    void *dealer;
    uint8_t id[32];
    size_t id_len;
    /* Its routing id is srv's incarnation, which srv's own DEALERs carry
     * too: when srv dials itself (an address naming its port), its
     * ROUTER hands the id over to whichever connected last, and messages
     * on the other connection are lost before srv sees them. */
    bool srv_id;
} slot;

static struct {
    bool up;
    bool confined; /* a network namespace of its own */
    ac_system *srv_sys, *probe_sys;
    ac_node *srv, *probe;
    ac_ref *echo, *sink, *watcher, *parent; /* on srv */
    ac_ref *probe_echo;                     /* srv's echo, from the probe */
    uint16_t probe_port;
    void *zctx;
    void *fake[2]; /* the peer's ROUTERs */
    char fake_addr[2][64], fake_endpoint[2][80];
    int refused_fd, silent_fds[3];
    char refused_addr[64], silent_addr[64], srv_by_name[64];
    size_t base_rrefs;
    /* Per input. */
    slot slots[SLOTS];
    ac_ref *refs[REFS];
    ac_future *futures[MAX_FUTURES];
    size_t nfutures;
    uint64_t expect_bytes; /* srv's bytes_in once it took what was sent */
    uint64_t unsure_bytes; /* of those, sent where they may be lost (slot.srv_id) */
    uint8_t buf[MAX_MSG];  /* a message being put together */
} H;

/* The nodes' last warnings, printed when a check fails: what they saw
 * tells a lost connection from a slow node. Every line is printed as it
 * comes with ACTORC_FUZZ_LOG set. */
#define LOG_LINES 32
static struct {
    pthread_mutex_t lock;
    char lines[LOG_LINES][320];
    unsigned next;
    bool verbose;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void log_sink(void *user, ac_log_level level, const char *system, const char *path,
                     const char *text)
{
    (void)user;
    if (L.verbose)
        fprintf(stderr, "[%s] %s%s%s: %s\n", ac_log_level_name(level), system, path ? " " : "",
                path ? path : "", text);
    pthread_mutex_lock(&L.lock);
    snprintf(L.lines[L.next++ % LOG_LINES], sizeof L.lines[0], "[%s] %s: %s",
             ac_log_level_name(level), system, text);
    pthread_mutex_unlock(&L.lock);
}

static void log_dump(void)
{
    pthread_mutex_lock(&L.lock);
    unsigned first = L.next > LOG_LINES ? L.next - LOG_LINES : 0;
    for (unsigned i = first; i < L.next; i++)
        fprintf(stderr, "  %s\n", L.lines[i % LOG_LINES]);
    pthread_mutex_unlock(&L.lock);
}

static ac_system *system_new(const char *name)
{
    ac_system_options o = {.workers = 1,
                           .log_level = L.verbose ? AC_LOG_INFO : AC_LOG_WARN,
                           .log_sink = log_sink,
                           .dead_letter_log_per_s = L.verbose ? 10 : -1};
    ac_system *s = ac_system_create(name, &o);
    if (!s)
        die("ac_system_create: %s", ac_last_error());
    return s;
}

/* ---- actors on srv ---------------------------------------------------- */

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}
static const ac_actor_def sink_def = {.name = "Sink", .receive = sink_receive};

/* Watches the remote senders of what it is told; "unwatch" unwatches. */
static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_ref *from = ac_sender(ctx);
    if (!from || !ac_ref_is_remote(from) || ac_msg_is(msg, &ac_msg_type_terminated))
        return;
    if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), "unwatch") == 0)
        ac_unwatch(ctx, from);
    else
        ac_watch(ctx, from);
}
static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

static void parent_start(ac_ctx *ctx)
{
    ac_ref_release(ac_spawn_child(ctx, ac_props_new(&echo_def, NULL), "kid"));
}
static const ac_actor_def parent_def = {.name = "Parent", .pre_start = parent_start,
                                        .receive = sink_receive};

static ac_ref *spawn(const ac_actor_def *def, const char *name)
{
    ac_ref *r = ac_spawn(H.srv_sys, ac_props_new(def, NULL), name);
    if (!r)
        die("ac_spawn %s: %s", name, ac_last_error());
    return r;
}

/* ---- addresses ----------------------------------------------------------- */

static uint16_t port_of_text(const char *address)
{
    const char *colon = strrchr(address, ':');
    return colon ? (uint16_t)atoi(colon + 1) : 0;
}

/* The port libzmq connects to for `a`: what follows its last ':', read
 * as libzmq reads it (atoi, cut to 16 bits). */
static uint16_t port_of(ac__wire_span a)
{
    char s[300];
    size_t n = a.len < sizeof s - 1 ? a.len : sizeof s - 1;
    memcpy(s, a.ptr, n);
    s[n] = '\0';
    return port_of_text(s);
}

static bool span_is(ac__wire_span a, const char *s) { return ws_span_eq(a, ws_span(s)); }

/* May srv be told of address `a` as it is? */
static bool address_ok(ac__wire_span a)
{
    if (a.len && memchr(a.ptr, 0, a.len))
        return true; /* text with a NUL: refused by the decoder, never dialled */
    if (a.len && port_of(a) == H.probe_port)
        return false;
    if (H.confined)
        return true;
    return span_is(a, H.fake_addr[0]) || span_is(a, H.fake_addr[1]) ||
           span_is(a, ac_node_address(H.srv)) || span_is(a, H.refused_addr) ||
           span_is(a, H.silent_addr) || span_is(a, H.srv_by_name) || span_is(a, "127.0.0.1") ||
           a.len == 0;
}

static ac__wire_span address_safe(ac__wire_span a)
{
    return address_ok(a) ? a : ws_span(H.refused_addr);
}

static ac__wire_span take_address(fn_in *in)
{
    switch (u8(in) % FN_ADDR_COUNT) {
    case FN_ADDR_FAKE_A: return ws_span(H.fake_addr[0]);
    case FN_ADDR_FAKE_B: return ws_span(H.fake_addr[1]);
    case FN_ADDR_SRV: return ws_span(ac_node_address(H.srv));
    case FN_ADDR_REFUSED: return ws_span(H.refused_addr);
    case FN_ADDR_SILENT: return ws_span(H.silent_addr);
    case FN_ADDR_SRV_BY_NAME: return ws_span(H.srv_by_name);
    case FN_ADDR_NO_PORT: return ws_span("127.0.0.1");
    default: return address_safe(text(in));
    }
}

/* ---- choices ------------------------------------------------------------- */

static uint64_t inc_safe(uint64_t inc)
{
    return inc == ac_node_incarnation(H.probe) ? FN_INC_A_VALUE : inc;
}

static uint64_t take_inc(fn_in *in)
{
    switch (u8(in) % FN_INC_COUNT) {
    case FN_INC_A: return FN_INC_A_VALUE;
    case FN_INC_B: return FN_INC_B_VALUE;
    case FN_INC_C: return FN_INC_C_VALUE;
    case FN_INC_ZERO: return 0;
    case FN_INC_SRV: return ac_node_incarnation(H.srv);
    case FN_INC_RAW8: return inc_safe(u64(in));
    default: return u8(in);
    }
}

static ac__wire_span take_path(fn_in *in)
{
    static const char *const named[] = {
        [FN_PATH_ECHO] = "/user/echo",         [FN_PATH_SINK] = "/user/sink",
        [FN_PATH_KID] = "/user/parent/kid",    [FN_PATH_PARENT] = "/user/parent",
        [FN_PATH_WATCHER] = "/user/watcher",   [FN_PATH_NOBODY] = "/user/nobody",
        [FN_PATH_SYS_WATCH] = "/system/watch", [FN_PATH_SYS_OTHER] = "/system/other",
        [FN_PATH_EMPTY] = "",
    };
    unsigned k = u8(in) % FN_PATH_COUNT;
    return k == FN_PATH_TEXT ? text(in) : ws_span(named[k]);
}

static ac__wire_span take_system(fn_in *in)
{
    switch (u8(in) % FN_SYS_COUNT) {
    case FN_SYS_FAKE: return ws_span("fake");
    case FN_SYS_SRV: return ws_span("srv");
    case FN_SYS_EMPTY: return ws_span("");
    default: return text(in);
    }
}

static ac__wire_span take_type(fn_in *in)
{
    static const char *const named[] = {
        [FN_TYPE_STRING] = "actorc.String", [FN_TYPE_BYTES] = "actorc.Bytes",
        [FN_TYPE_INT64] = "actorc.Int64",   [FN_TYPE_ERROR] = "actorc.Error",
        [FN_TYPE_POINT] = "test.Point",     [FN_TYPE_EMPTY] = "",
        [FN_TYPE_UNKNOWN] = "no.Such",
    };
    unsigned k = u8(in) % FN_TYPE_COUNT;
    return k == FN_TYPE_TEXT ? text(in) : ws_span(named[k]);
}

/* The last correlation id srv gave an ask, as its next is one more. */
static uint64_t srv_last_corr(void)
{
    return atomic_load_explicit(&H.srv->next_corr, memory_order_relaxed) - 1;
}

static uint64_t take_corr(fn_in *in)
{
    switch (u8(in) % FN_CORR_COUNT) {
    case FN_CORR_ZERO: return 0;
    case FN_CORR_ONE: return 1;
    case FN_CORR_LAST: return srv_last_corr();
    case FN_CORR_BEFORE: return srv_last_corr() - 1;
    default: return u64(in);
    }
}

static uint64_t take_payload_size(fn_in *in, size_t body_len)
{
    switch (u8(in) % FN_SIZE_COUNT) {
    case FN_SIZE_BODY: return body_len;
    case FN_SIZE_BODY_NUL: return body_len + 1;
    case FN_SIZE_EIGHT: return 8;
    case FN_SIZE_ZERO: return 0;
    case FN_SIZE_BYTE: return u8(in);
    default: return 1ull << 40;
    }
}

static void text_copy(ac__wire_span t, char *out, size_t cap)
{
    size_t n = t.len < cap - 1 ? t.len : cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = t.ptr[i] ? (char)t.ptr[i] : '?';
    out[n] = '\0';
}

static ac_msg *take_error_msg(fn_in *in)
{
    unsigned flags = u8(in);
    char name[256], message[256];
    text_copy(text(in), name, sizeof name);
    text_copy(text(in), message, sizeof message);
    ac_error *e = ac_error_new(name[0] ? name : "FuzzError", "%s", message);
    if (e && (flags & 1)) {
        ac_error *outer = ac_error_new_caused("Outer", e, "caused");
        ac_error_release(e);
        e = outer;
    }
    if (e && (flags & 2)) {
        ac_error *members[2] = {e, e};
        ac_error *agg = ac_error_aggregate(members, 2, "two of %s", name);
        ac_error_release(e);
        e = agg;
    }
    return e ? ac_msg_error_new(e) : ac_msg_str_new("no error");
}

static ac_msg *take_msg(fn_in *in)
{
    char s[256];
    ac__wire_span t;
    switch (u8(in) % FN_MSG_COUNT) {
    case FN_MSG_STRING:
        text_copy(text(in), s, sizeof s);
        return ac_msg_str_new(s);
    case FN_MSG_BYTES:
        t = text(in);
        return ac_msg_bytes_new(t.ptr, t.len);
    case FN_MSG_INT64:
        return ac_msg_int64_new((int64_t)u64(in));
    case FN_MSG_ERROR:
        return take_error_msg(in);
    case FN_MSG_POINT: {
        int32_t x = (int8_t)u8(in), y = (int8_t)u8(in);
        text_copy(text(in), s, 24);
        return ws_point_new(x, y, s);
    }
    default:
        return ac_msg_str_new("unwatch");
    }
}

/* ---- the peer's DEALERs -------------------------------------------------- */

static void set_int(void *s, int opt, int v)
{
    if (zmq_setsockopt(s, opt, &v, sizeof v) != 0)
        die("zmq_setsockopt %d: %s", opt, zmq_strerror(zmq_errno()));
}

/* A routing id of 1..24 bytes that is no node's. */
static void take_odd_rid(fn_in *in, slot *s, bool shorter)
{
    uint8_t n = u8(in);
    s->id_len = shorter ? 1 + n % 7u : 9 + n % 16u;
    memset(s->id, 0x5a, sizeof s->id);
    ac__wire_span b = bytes(in, s->id_len);
    memcpy(s->id, b.ptr, b.len);
}

static void take_rid(fn_in *in, slot *s)
{
    uint64_t inc;
    unsigned k = u8(in) % FN_RID_COUNT;
    switch (k) {
    case FN_RID_A: inc = FN_INC_A_VALUE; break;
    case FN_RID_B: inc = FN_INC_B_VALUE; break;
    case FN_RID_C: inc = FN_INC_C_VALUE; break;
    case FN_RID_SRV: inc = ac_node_incarnation(H.srv); break;
    case FN_RID_RAW8: inc = inc_safe(u64(in)); break;
    default:
        take_odd_rid(in, s, k == FN_RID_SHORT);
        inc = 0;
        break;
    }
    if (k < FN_RID_SHORT) {
        /* As a node's: its incarnation's bytes, in this machine's order. */
        memcpy(s->id, &inc, sizeof inc);
        s->id_len = sizeof inc;
    }
    if (!s->id[0])
        s->id[0] = 1;
    if (s->id_len == sizeof inc) {
        memcpy(&inc, s->id, sizeof inc);
        inc = inc_safe(inc);
        memcpy(s->id, &inc, sizeof inc);
    }
    s->srv_id = s->id_len == sizeof inc && inc == ac_node_incarnation(H.srv);
}

static void slot_open(slot *s)
{
    void *d = zmq_socket(H.zctx, ZMQ_DEALER);
    if (!d)
        die("zmq_socket: %s", zmq_strerror(zmq_errno()));
    /* Closed at once: what it sent was taken before (sync_srv), and a
     * closed DEALER that lingers could still connect later and take its
     * routing id over from the next DEALER that has it. */
    set_int(d, ZMQ_LINGER, 0);
    set_int(d, ZMQ_SNDTIMEO, TAKE_MS);
    if (zmq_setsockopt(d, ZMQ_ROUTING_ID, s->id, s->id_len) != 0)
        die("ZMQ_ROUTING_ID: %s", zmq_strerror(zmq_errno()));
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "tcp://%s", ac_node_address(H.srv));
    if (zmq_connect(d, endpoint) != 0)
        die("zmq_connect %s: %s", endpoint, zmq_strerror(zmq_errno()));
    s->dealer = d;
}

static void sync_srv(void);
static void slot_close(slot *s);

/* The DEALER a slot operand picks, opened when it is not. Another one
 * with the same routing id is closed first, what it sent taken: srv's
 * ROUTER would hand the id over to the new connection and drop what
 * waits on the old one (a peer that connects again does the same). */
static slot *take_slot(fn_in *in)
{
    slot *s = &H.slots[u8(in) % SLOTS];
    if (s->dealer)
        return s;
    take_rid(in, s);
    for (size_t i = 0; i < SLOTS; i++) {
        slot *o = &H.slots[i];
        if (o != s && o->dealer && o->id_len == s->id_len && memcmp(o->id, s->id, s->id_len) == 0) {
            sync_srv();
            slot_close(o);
        }
    }
    slot_open(s);
    return s;
}

/* The routing id of a slot as a node's incarnation (0: not 8 bytes). */
static uint64_t slot_inc(const slot *s)
{
    uint64_t inc = 0;
    if (s->id_len == sizeof inc)
        memcpy(&inc, s->id, sizeof inc);
    return inc;
}

static void send_part(slot *s, const void *data, size_t len, bool more)
{
    if (zmq_send(s->dealer, data, len, more ? ZMQ_SNDMORE : 0) != (int)len)
        die("zmq_send of %zu bytes: %s", len, zmq_strerror(zmq_errno()));
}

/* A message of one part, which srv counts in bytes_in once it has it. */
static void send_one(slot *s, const uint8_t *data, size_t len)
{
    send_part(s, data, len, false);
    H.expect_bytes += len;
    if (s->srv_id)
        H.unsure_bytes += len;
}

/* ---- raw messages, their addresses made safe ---------------------------- */

static bool sender_needs_address(const ac__wire_env *env)
{
    return env->sender.kind == AC__WIRE_SENDER_ACTOR || env->sender.kind == AC__WIRE_SENDER_REPLY;
}

/* Frames of `data` as srv reads them, with every sender address that may
 * not be named rewritten, into H.buf: its length, or 0 when there is
 * nothing to rewrite (send data as it is). */
static size_t rewrite_addresses(const uint8_t *data, size_t len)
{
    size_t at = 0, out = 0;
    bool changed = false;
    while (at < len) {
        ac__wire_env env;
        size_t used = 0;
        if (ac__wire_decode_next(data + at, len - at, &H.srv->limits, &env, &used, NULL) != AC_OK)
            break;
        if (sender_needs_address(&env) && !address_ok(env.sender.address)) {
            env.sender.address = address_safe(env.sender.address);
            size_t n = ac__wire_encode(&env, H.buf + out, sizeof H.buf - out);
            if (n == 0 || n > sizeof H.buf - out)
                return SIZE_MAX; /* no room: not sent */
            out += n;
            changed = true;
        } else {
            if (used > sizeof H.buf - out)
                return SIZE_MAX;
            memcpy(H.buf + out, data + at, used);
            out += used;
        }
        at += used;
    }
    if (!changed)
        return 0;
    if (len - at > sizeof H.buf - out)
        return SIZE_MAX;
    memcpy(H.buf + out, data + at, len - at);
    return out + len - at;
}

static void send_raw(slot *s, const uint8_t *data, size_t len)
{
    if (len > MAX_MSG)
        len = MAX_MSG;
    size_t n = rewrite_addresses(data, len);
    if (n == SIZE_MAX)
        return;
    if (n)
        send_one(s, H.buf, n);
    else
        send_one(s, data, len);
}

/* ---- actions ------------------------------------------------------------- */

static void act_raw(fn_in *in)
{
    slot *s = take_slot(in);
    size_t len = (size_t)u8(in) << 8;
    len |= u8(in);
    ac__wire_span b = bytes(in, len);
    send_raw(s, b.ptr, b.len);
}

/* Several parts: srv drops the message whole (nodes send one part). */
static void act_parts(fn_in *in)
{
    slot *s = take_slot(in);
    unsigned n = 2 + u8(in) % 3;
    for (unsigned i = 0; i < n; i++) {
        ac__wire_span b = text(in);
        send_part(s, b.ptr, b.len, i + 1 < n);
    }
}

static void take_sender(fn_in *in, ac__wire_sender *s)
{
    *s = (ac__wire_sender){.kind = (ac__wire_sender_kind)((int)(u8(in) % 4) - 1)};
    switch (s->kind) {
    case AC__WIRE_SENDER_LOCAL:
        s->path = take_path(in);
        break;
    case AC__WIRE_SENDER_ACTOR:
    case AC__WIRE_SENDER_REPLY:
        s->system = take_system(in);
        s->address = take_address(in);
        s->incarnation = take_inc(in);
        if (s->kind == AC__WIRE_SENDER_ACTOR)
            s->path = take_path(in);
        else
            s->corr = take_corr(in);
        break;
    default:
        break;
    }
}

/* One envelope, appended at H.buf[*at]. */
static void take_envelope(fn_in *in, size_t *at)
{
    ac__wire_env env = {.kind = (ac__wire_kind)(u8(in) % 11)};
    env.flags = u8(in);
    env.corr = take_corr(in);
    env.target_inc = take_inc(in);
    env.target_path = take_path(in);
    take_sender(in, &env.sender);
    ac_msg *msg = NULL;
    if (u8(in) % 2 == 0) {
        msg = take_msg(in);
    } else {
        env.type_name = take_type(in);
        env.body = text(in);
        env.payload_size = take_payload_size(in, env.body.len);
    }
    env.deadline_us = (uint64_t)u8(in) * 1000;
    size_t cap = sizeof H.buf - *at;
    size_t n = msg ? ac__wire_encode_msg(&env, msg, H.buf + *at, cap)
                   : ac__wire_encode(&env, H.buf + *at, cap);
    ac_msg_release(msg);
    if (n > 0 && n <= cap)
        *at += n;
}

static void act_frames(fn_in *in)
{
    slot *s = take_slot(in);
    unsigned n = 1 + u8(in) % 3;
    size_t len = 0;
    for (unsigned i = 0; i < n; i++)
        take_envelope(in, &len);
    if (len)
        send_one(s, H.buf, len);
}

static void act_hello(fn_in *in)
{
    slot *s = take_slot(in);
    ac__wire_env hello = {.kind = AC__WIRE_HELLO, .target_inc = take_inc(in)};
    /* One operand after the other (an initializer list's order is not). */
    hello.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_ACTOR, .incarnation = slot_inc(s)};
    hello.sender.address = take_address(in);
    hello.sender.system = take_system(in);
    unsigned flags = u8(in);
    if (flags & FN_HELLO_OTHER_INC)
        hello.sender.incarnation = take_inc(in);
    if (flags & FN_HELLO_CARD) {
        hello.type_name = text(in);
        hello.body = text(in);
    }
    size_t n = ac__wire_encode(&hello, H.buf, sizeof H.buf);
    if (n > 0 && n <= sizeof H.buf)
        send_one(s, H.buf, n);
}

/* A path "actorc://<system>[@<address>]/<local>" put together. */
#define PATH_MAX_LEN 1024
static void take_composed_path(fn_in *in, char out[PATH_MAX_LEN])
{
    ac__wire_span sys = take_system(in);
    bool remote = u8(in) % 2;
    ac__wire_span addr = remote ? take_address(in) : ws_span("");
    ac__wire_span local = take_path(in);
    char s[256], a[256], l[256];
    text_copy(sys, s, sizeof s);
    text_copy(addr, a, sizeof a);
    text_copy(local, l, sizeof l);
    snprintf(out, PATH_MAX_LEN, "actorc://%s%s%s%s", s, remote ? "@" : "", a, l);
}

/* A path's address made safe, parsed as ac_node_resolve parses it. */
static void path_safe(char *path, size_t cap)
{
    if (strncmp(path, "actorc://", 9) != 0)
        return;
    char *sys = path + 9, *slash = strchr(sys, '/');
    char *at = slash ? memchr(sys, '@', (size_t)(slash - sys)) : NULL;
    if (!at)
        return;
    ac__wire_span addr = {(const uint8_t *)at + 1, (size_t)(slash - at - 1)};
    if (address_ok(addr))
        return;
    char rest[PATH_MAX_LEN];
    snprintf(rest, sizeof rest, "%s", slash);
    snprintf(at + 1, cap - (size_t)(at + 1 - path), "%s%s", H.refused_addr, rest);
}

static void act_resolve(fn_in *in)
{
    unsigned k = u8(in) % REFS;
    char path[PATH_MAX_LEN];
    if (u8(in) % 2 == 0)
        take_composed_path(in, path);
    else
        text_copy(text(in), path, sizeof path);
    path_safe(path, sizeof path);
    ac_ref_release(H.refs[k]);
    H.refs[k] = ac_node_resolve(H.srv, path);
}

static ac_ref *take_target(fn_in *in)
{
    unsigned k = u8(in) % FN_TARGET_COUNT;
    switch (k) {
    case FN_TARGET_ECHO: return H.echo;
    case FN_TARGET_SINK: return H.sink;
    case FN_TARGET_WATCHER: return H.watcher;
    case FN_TARGET_KID: return H.parent; /* its child is reached through it */
    default: return H.refs[k - FN_TARGET_REF0];
    }
}

static ac_ref *take_sender_ref(fn_in *in)
{
    unsigned k = u8(in) % FN_SENDER_COUNT;
    switch (k) {
    case FN_SENDER_NONE: return NULL;
    case FN_SENDER_ECHO: return H.echo;
    case FN_SENDER_WATCHER: return H.watcher;
    default: return H.refs[k - FN_SENDER_REF0];
    }
}

static void act_tell(fn_in *in)
{
    ac_ref *target = take_target(in);
    ac_msg *msg = take_msg(in);
    ac_ref *sender = take_sender_ref(in);
    if (target && msg)
        (void)ac_tell(target, msg, sender);
    else
        ac_msg_release(msg);
}

static void wait_settled(ac_future *f)
{
    ac_answer a;
    if (ac_future_wait(f, SETTLE_MS, &a) == AC_EPENDING)
        die("an ask through one of srv's refs did not settle within %d ms of its timeout",
            SETTLE_MS);
    ac_answer_release(&a);
    ac_future_release(f);
}

static void act_ask(fn_in *in)
{
    ac_ref *target = take_target(in);
    ac_msg *msg = take_msg(in);
    int64_t timeout_ms = 1 + u8(in) % 50;
    if (!target || !msg) {
        ac_msg_release(msg);
        return;
    }
    ac_future *f = ac_ask(target, msg, timeout_ms);
    if (!f)
        return;
    if (H.nfutures == MAX_FUTURES) {
        wait_settled(H.futures[0]);
        memmove(H.futures, H.futures + 1, (MAX_FUTURES - 1) * sizeof *H.futures);
        H.nfutures--;
    }
    H.futures[H.nfutures++] = f;
}

/* ---- what srv took ------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000l};
    nanosleep(&ts, NULL);
}

static ac_node_stats srv_stats(void)
{
    ac_node_stats st;
    if (ac_node_stats_get(H.srv, &st) != AC_OK)
        die("ac_node_stats_get: %s", ac_last_error());
    return st;
}

/* Wait until srv has taken everything sent: a last one-byte message
 * (malformed, so it changes nothing) on each DEALER, and srv's count of
 * bytes taken. A DEALER's messages come in order, and srv handles one
 * at a time, so what came before them is handled then. */
static void sync_srv(void)
{
    static const uint8_t mark = 0xff;
    for (size_t i = 0; i < SLOTS; i++)
        if (H.slots[i].dealer)
            send_one(&H.slots[i], &mark, 1);
    double end = now_s() + TAKE_MS / 1000.0;
    while (srv_stats().bytes_in < H.expect_bytes - H.unsure_bytes) {
        if (now_s() > end)
            die("srv took %" PRIu64 " bytes of %" PRIu64 " within %d ms: its transport stopped "
                "reading",
                srv_stats().bytes_in, H.expect_bytes - H.unsure_bytes, TAKE_MS);
        sleep_ms(1);
    }
}

static void slot_close(slot *s)
{
    if (s->dealer)
        zmq_close(s->dealer);
    s->dealer = NULL;
}

static void act_close(fn_in *in)
{
    unsigned k = u8(in) % SLOTS;
    if (!H.slots[k].dealer)
        return;
    sync_srv();
    slot_close(&H.slots[k]);
}

static void act_settle(fn_in *in)
{
    sync_srv();
    sleep_ms((u8(in) % 8) * 5);
}

/* ---- after each input ---------------------------------------------------- */

static void dump_peers(ac_node *n);

static void check_serving(void)
{
    ac_answer a;
    ac_status st = ac_ask_wait(H.probe_echo, ac_msg_str_new("still there?"), SERVE_MS, &a);
    if (st != AC_OK || !a.reply || strcmp(ac_msg_str(a.reply), "still there?") != 0) {
        dump_peers(H.srv);
        dump_peers(H.probe);
        die("srv did not answer the probe's ask: %s: %s", ac_status_name(st),
            a.error ? ac_error_message(a.error) : ac_last_error());
    }
    ac_answer_release(&a);
}

/* An UP peer of srv's with this incarnation? */
static bool srv_has_up(uint64_t inc)
{
    bool found = false;
    pthread_mutex_lock(&H.srv->lock);
    found = ac__ptab_by_inc(&H.srv->peers, inc, H.srv->self) != NULL;
    pthread_mutex_unlock(&H.srv->lock);
    return found;
}

/* Each DEALER leaves as a node does (LEAVE), as often as srv has a peer
 * of its incarnation up (a HELLO may have named several addresses). */
static void slots_leave(void)
{
    uint8_t leave[64];
    ac__wire_env env = {.kind = AC__WIRE_LEAVE};
    env.sender.kind = AC__WIRE_SENDER_NONE;
    size_t n = ac__wire_encode(&env, leave, sizeof leave);
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &H.slots[i];
        for (int k = 0; s->dealer && k < 32 && slot_inc(s) && srv_has_up(slot_inc(s)); k++) {
            send_one(s, leave, n);
            sync_srv();
        }
        slot_close(s);
    }
}

/* Is a peer of srv's at `address` (up or connecting)? */
static bool srv_has_peer_at(const char *address)
{
    bool found = false;
    pthread_mutex_lock(&H.srv->lock);
    found = ac__ptab_by_address(&H.srv->peers, address, strlen(address)) != NULL;
    pthread_mutex_unlock(&H.srv->lock);
    return found;
}

static void fake_open(int i)
{
    void *r = zmq_socket(H.zctx, ZMQ_ROUTER);
    if (!r)
        die("zmq_socket: %s", zmq_strerror(zmq_errno()));
    set_int(r, ZMQ_LINGER, 0);
    set_int(r, ZMQ_ROUTER_HANDOVER, 1);
    set_int(r, ZMQ_RCVHWM, 0);
    const char *endpoint = H.fake_endpoint[i][0] ? H.fake_endpoint[i] : "tcp://127.0.0.1:0";
    for (int tries = 0; zmq_bind(r, endpoint) != 0; tries++) {
        if (zmq_errno() != EADDRINUSE || tries > 2000)
            die("zmq_bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
        sleep_ms(1); /* the last one's listener is closing */
    }
    size_t len = sizeof H.fake_endpoint[i];
    if (!H.fake_endpoint[i][0] &&
        zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, H.fake_endpoint[i], &len) != 0)
        die("ZMQ_LAST_ENDPOINT: %s", zmq_strerror(zmq_errno()));
    /* "tcp://" and the address: at most 80 bytes in all. */
    memcpy(H.fake_addr[i], H.fake_endpoint[i] + 6, sizeof H.fake_addr[i] - 1);
    H.fake_addr[i][sizeof H.fake_addr[i] - 1] = '\0';
    H.fake[i] = r;
}

/* Read (and drop) what srv sent the peer's ROUTER. */
static void fake_drain(int i)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, H.fake[i], ZMQ_DONTWAIT) >= 0)
        ;
    zmq_msg_close(&m);
}

/* A peer srv still has at the peer's ROUTER is up by every sign srv has
 * (its connection stands, libzmq answers heartbeats): the peer went
 * away only when that ROUTER closes. Closed and bound again, on the
 * same port. */
static void fakes_leave(void)
{
    for (int i = 0; i < 2; i++) {
        fake_drain(i);
        if (!srv_has_peer_at(H.fake_addr[i]))
            continue;
        zmq_close(H.fake[i]);
        fake_open(i);
    }
}

static void dump_peers(ac_node *n)
{
    ac_node_stats st;
    ac_node_stats_get(n, &st);
    fprintf(stderr,
            "  node %s: frames in %" PRIu64 ", out %" PRIu64 ", decode errors %" PRIu64
            ", stale %" PRIu64 ", nodes down %" PRIu64 "\n",
            n->address, st.frames_in, st.frames_out, st.decode_errors, st.dropped_stale,
            st.nodes_down);
    pthread_mutex_lock(&n->lock);
    for (ac__peer *p = n->peers.newest; p; p = p->older)
        fprintf(stderr,
                "  peer %s%s: state %d, incarnation %016" PRIx64
                ", refs %u, connection %s%s%s, backlog %s\n",
                p->address, p == n->self ? " (itself)" : "",
                atomic_load_explicit(&p->state, memory_order_relaxed), p->incarnation,
                atomic_load_explicit(&p->refs, memory_order_relaxed), p->conn ? "open" : "none",
                p->conn_made ? ", connected" : "", p->refused ? ", refused" : "",
                p->backlog_head ? "waiting" : "empty");
    fprintf(stderr, "  interned remote refs %zu, pending asks %zu\n", n->rref_count,
            n->corr_count);
    pthread_mutex_unlock(&n->lock);
}

static size_t srv_rrefs(void)
{
    pthread_mutex_lock(&H.srv->lock);
    size_t n = H.srv->rref_count;
    pthread_mutex_unlock(&H.srv->lock);
    return n;
}

static bool srv_clean(void)
{
    ac_node_stats st = srv_stats();
    return st.peers == 1 && st.pending_asks == 0 && srv_rrefs() <= H.base_rrefs;
}

/* srv's tables come back to where they were: the probe its only peer,
 * no ask pending, no more interned refs than at the start. */
static void check_clean(void)
{
    double end = now_s() + CLEAN_MS / 1000.0;
    while (!srv_clean()) {
        if (now_s() > end) {
            fprintf(stderr,
                    "fuzz_node: srv's tables did not come back within %d ms (%zu interned "
                    "refs at the start):\n",
                    CLEAN_MS, H.base_rrefs);
            dump_peers(H.srv);
            die("state grows from input to input");
        }
        sleep_ms(2);
    }
}

static void input_end(void)
{
    sync_srv();
    for (size_t i = 0; i < H.nfutures; i++)
        wait_settled(H.futures[i]);
    H.nfutures = 0;
    check_serving();
    for (size_t i = 0; i < REFS; i++) {
        ac_ref_release(H.refs[i]);
        H.refs[i] = NULL;
    }
    slots_leave();
    fakes_leave();
    check_clean();
}

/* ---- setting up ------------------------------------------------------------ */

/* No interface but loopback: a network namespace of its own. */
static bool confined(void)
{
    struct if_nameindex *ifs = if_nameindex();
    if (!ifs)
        return false;
    bool only_lo = true;
    for (struct if_nameindex *i = ifs; i->if_index; i++)
        only_lo = only_lo && strcmp(i->if_name, "lo") == 0;
    if_freenameindex(ifs);
    return only_lo;
}

static int tcp_socket_bound(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *a = (struct sockaddr_in){.sin_family = AF_INET};
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *a;
    if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) != 0 ||
        getsockname(fd, (struct sockaddr *)a, &len) != 0)
        die("a loopback socket: %s (in a network namespace of its own, bring lo up)",
            strerror(errno));
    return fd;
}

/* A port bound and not listening: connections to it are refused. */
static void refused_open(void)
{
    struct sockaddr_in a;
    H.refused_fd = tcp_socket_bound(&a);
    snprintf(H.refused_addr, sizeof H.refused_addr, "127.0.0.1:%d", ntohs(a.sin_port));
}

/* A listener whose accept queue is full, never accepting: SYNs to it go
 * unanswered, as to a host that vanished. */
static void silent_open(void)
{
    struct sockaddr_in a;
    int l = tcp_socket_bound(&a);
    if (listen(l, 0) != 0)
        die("listen: %s", strerror(errno));
    H.silent_fds[0] = l;
    for (int i = 1; i < 3; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        (void)connect(c, (struct sockaddr *)&a, sizeof a);
        H.silent_fds[i] = c;
    }
    snprintf(H.silent_addr, sizeof H.silent_addr, "127.0.0.1:%d", ntohs(a.sin_port));
}

static ac_node *node_start(ac_system *sys, int connect_timeout_ms)
{
    /* Heartbeats time out after HEARTBEAT_TIMEOUT_MS, not a second: a
     * sanitizer build on a busy machine starves ZeroMQ's threads for
     * that long, and the probe would lose srv for no fault of srv's. */
    ac_node_options o = {.bind = "tcp://127.0.0.1:0",
                         .connect_timeout_ms = connect_timeout_ms,
                         .heartbeat_timeout_ms = HEARTBEAT_TIMEOUT_MS,
                         .max_frame = MAX_FRAME};
    ac_node *n = ac_node_start(sys, &o);
    if (!n)
        die("ac_node_start: %s", ac_last_error());
    return n;
}

static void harness_up(void)
{
    H.confined = confined();
    L.verbose = getenv("ACTORC_FUZZ_LOG") != NULL; /* before any thread reads it */
    H.zctx = zmq_ctx_new();
    if (!H.zctx)
        die("zmq_ctx_new");
    /* The peer's I/O thread is "9/ZMQbg/IO/0" in a debugger, the nodes'
     * are "ZMQbg/IO/0". */
    zmq_ctx_set(H.zctx, ZMQ_THREAD_NAME_PREFIX, 9);
    refused_open();
    silent_open();
    fake_open(0);
    fake_open(1);
    H.srv_sys = system_new("srv");
    H.probe_sys = system_new("probe");
    /* srv gives up on what an input names within CONNECT_TIMEOUT_MS, so
     * that an input stays quick; the probe, which talks to srv only,
     * waits as long as the other bounds (at 200 ms, under ASan on a busy
     * machine, srv's hello came late and the probe lost it). */
    H.srv = node_start(H.srv_sys, CONNECT_TIMEOUT_MS);
    H.probe = node_start(H.probe_sys, SERVE_MS);
    H.probe_port = port_of_text(ac_node_address(H.probe));
    snprintf(H.srv_by_name, sizeof H.srv_by_name, "localhost:%u",
             (unsigned)port_of_text(ac_node_address(H.srv)));
    if (ac_node_register_type(H.srv, &ws_point_type) != AC_OK)
        die("ac_node_register_type: %s", ac_last_error());
    H.echo = spawn(&echo_def, "echo");
    H.sink = spawn(&sink_def, "sink");
    H.watcher = spawn(&watcher_def, "watcher");
    H.parent = spawn(&parent_def, "parent");
    char path[128];
    snprintf(path, sizeof path, "actorc://srv@%s/user/echo", ac_node_address(H.srv));
    H.probe_echo = ac_node_resolve(H.probe, path);
    if (!H.probe_echo)
        die("ac_node_resolve %s: %s", path, ac_last_error());
    check_serving();
    H.base_rrefs = srv_rrefs();
    H.up = true;
}

void fuzz_node_teardown(void)
{
    if (!H.up)
        return;
    ac_ref_release(H.probe_echo);
    ac_ref_release(H.echo);
    ac_ref_release(H.sink);
    ac_ref_release(H.watcher);
    ac_ref_release(H.parent);
    ac_system_terminate(H.probe_sys);
    ac_system_terminate(H.srv_sys);
    zmq_close(H.fake[0]);
    zmq_close(H.fake[1]);
    zmq_ctx_term(H.zctx);
    close(H.refused_fd);
    for (int i = 0; i < 3; i++)
        close(H.silent_fds[i]);
    memset(&H, 0, sizeof H);
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (H.up) {
        fprintf(stderr, "fuzz_node: the nodes' last warnings:\n");
        log_dump();
    }
    fprintf(stderr, "fuzz_node: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!H.up)
        harness_up();
    fn_in in = {data, size};
    H.expect_bytes = srv_stats().bytes_in;
    H.unsure_bytes = 0;
    for (int k = 0; in.n && k < MAX_ACTIONS; k++) {
        switch (u8(&in) % FN_OP_COUNT) {
        case FN_OP_RAW: act_raw(&in); break;
        case FN_OP_PARTS: act_parts(&in); break;
        case FN_OP_FRAMES: act_frames(&in); break;
        case FN_OP_HELLO: act_hello(&in); break;
        case FN_OP_RESOLVE: act_resolve(&in); break;
        case FN_OP_TELL: act_tell(&in); break;
        case FN_OP_ASK: act_ask(&in); break;
        case FN_OP_CLOSE: act_close(&in); break;
        default: act_settle(&in); break;
        }
    }
    input_end();
    return 0;
}
