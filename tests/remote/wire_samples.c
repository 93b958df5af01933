/*
 * Shared pieces of the wire tests (wire_samples.h).
 */
#include "wire_samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- test.Point ------------------------------------------------------- */

unsigned ws_point_encode_calls;

static void put_be32(uint8_t *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)(u >> 24), p[1] = (uint8_t)(u >> 16);
    p[2] = (uint8_t)(u >> 8), p[3] = (uint8_t)u;
}

static int32_t get_be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static size_t point_encode(const void *payload, size_t size, uint8_t *buf, size_t cap)
{
    const ws_point *p = payload;
    ws_point_encode_calls++;
    if (size != sizeof *p)
        return SIZE_MAX;
    size_t label = strnlen(p->label, sizeof p->label - 1);
    size_t need = 8 + label;
    if (need <= cap) {
        put_be32(buf, p->x);
        put_be32(buf + 4, p->y);
        memcpy(buf + 8, p->label, label);
    }
    return need;
}

static int point_decode(const uint8_t *buf, size_t len, void *payload, size_t size)
{
    ws_point *p = payload;
    if (size != sizeof *p || len < 8 || len - 8 > sizeof p->label - 1 ||
        memchr(buf + 8, 0, len - 8))
        return AC_EPROTO;
    p->x = get_be32(buf);
    p->y = get_be32(buf + 4);
    memcpy(p->label, buf + 8, len - 8);
    return AC_OK;
}

const ac_msg_type ws_point_type = {
    .name = "test.Point", .encode = point_encode, .decode = point_decode};

ac_msg *ws_point_new(int32_t x, int32_t y, const char *label)
{
    ac_msg *m = ac_msg_new(&ws_point_type, sizeof(ws_point));
    if (!m)
        return NULL;
    ws_point *p = ac_msg_payload(m);
    p->x = x;
    p->y = y;
    strncpy(p->label, label, sizeof p->label - 1);
    return m;
}

const ac_msg_type *ws_type_named(ac__wire_span name)
{
    const ac_msg_type *t = ac__wire_builtin_type(name);
    if (!t && ws_span_eq(name, ws_span(ws_point_type.name)))
        t = &ws_point_type;
    return t;
}

ac__wire_span ws_span(const char *s)
{
    return (ac__wire_span){(const uint8_t *)s, strlen(s)};
}

bool ws_span_eq(ac__wire_span a, ac__wire_span b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* ---- errors ------------------------------------------------------------ */

ac_error *ws_aggregate_of_timeouts(void)
{
    ac_error *t[3];
    for (int i = 0; i < 3; i++)
        t[i] = ac_error_new(AC_ASK_TIMEOUT_ERROR, "routee-%d did not answer within 250 ms", i + 1);
    ac_error *agg = ac_error_aggregate(t, 3, "all 3 routees failed");
    for (int i = 0; i < 3; i++)
        ac_error_release(t[i]);
    return agg;
}

ac_error *ws_mixed_error(void)
{
    ac_error *root = ac_error_new("DiskError", "sector 7 unreadable");
    ac_error *io = ac_error_new_caused("IoError", root, "read failed: bad byte \xff\xfe here");
    ac_error *timeout = ac_error_new(AC_ASK_TIMEOUT_ERROR, "slow");
    ac_error *members[] = {timeout, io, root};
    ac_error *agg = ac_error_aggregate(members, 3, "2 of 3 failed, \u00e9t\u00e9");
    ac_error *top = ac_error_new_caused("RequestError", agg, "request 42 failed");
    ac_error_release(root);
    ac_error_release(io);
    ac_error_release(timeout);
    ac_error_release(agg);
    return top;
}

/* ---- encoding into a buffer that grows -------------------------------- */

typedef size_t (*encoder)(const void *a, const void *b, uint8_t *buf, size_t cap);

static uint8_t *encode_growing(encoder enc, const void *a, const void *b, size_t *len)
{
    size_t cap = 16;
    for (;;) {
        uint8_t *buf = malloc(cap);
        size_t need = buf ? enc(a, b, buf, cap) : 0;
        if (need && need <= cap) {
            *len = need;
            return buf;
        }
        free(buf);
        if (!need)
            return NULL;
        cap = need;
    }
}

static size_t enc_env(const void *a, const void *b, uint8_t *buf, size_t cap)
{
    (void)b;
    return ac__wire_encode(a, buf, cap);
}

static size_t enc_msg(const void *a, const void *b, uint8_t *buf, size_t cap)
{
    return ac__wire_encode_msg(a, b, buf, cap);
}

static size_t enc_error(const void *a, const void *b, uint8_t *buf, size_t cap)
{
    (void)b;
    return ac__wire_encode_error(a, buf, cap);
}

uint8_t *ws_encode_env(const ac__wire_env *env, size_t *len)
{
    return encode_growing(enc_env, env, NULL, len);
}

uint8_t *ws_encode_msg(const ac__wire_env *env, const ac_msg *msg, size_t *len)
{
    return encode_growing(enc_msg, env, msg, len);
}

uint8_t *ws_encode_error(const ac_error *err, size_t *len)
{
    return encode_growing(enc_error, err, NULL, len);
}

/* ---- samples ---------------------------------------------------------- */

#define SENDER_KINDS 4
#define PAYLOAD_KINDS 6
/* HELLO once (with its node), every other kind with each sender. */
#define SAMPLES (1 + (AC__WIRE_KIND_MAX - 1) * SENDER_KINDS)

static const char *const kind_names[] = {
    "", "hello", "tell", "ask", "reply", "undeliverable", "watch", "unwatch", "terminated", "leave",
};
static const char *const sender_names[] = {"none", "local", "actor", "reply"};
static const char *const payload_names[] = {"string", "bytes", "int64", "error", "point", "raw"};

size_t ws_sample_count(void) { return SAMPLES; }

static void sample_shape(size_t i, ac__wire_kind *kind, ac__wire_sender_kind *sender)
{
    if (i == 0) {
        *kind = AC__WIRE_HELLO;
        *sender = AC__WIRE_SENDER_ACTOR;
        return;
    }
    *kind = (ac__wire_kind)(AC__WIRE_TELL + (i - 1) / SENDER_KINDS);
    *sender = (ac__wire_sender_kind)((int)((i - 1) % SENDER_KINDS) - 1);
}

static ac__wire_sender sample_sender(ac__wire_sender_kind kind)
{
    ac__wire_sender s = {.kind = kind};
    if (kind == AC__WIRE_SENDER_NONE)
        return s;
    s.path = ws_span("/user/client/asker-3");
    if (kind == AC__WIRE_SENDER_LOCAL)
        return s;
    s.system = ws_span("demo");
    s.address = ws_span("tcp://10.0.0.12:7000");
    s.incarnation = 0xdeadbeefcafe0001u;
    if (kind == AC__WIRE_SENDER_REPLY) {
        s.path = (ac__wire_span){0};
        s.corr = 77;
    }
    return s;
}

static ac_msg *sample_msg(size_t p)
{
    static const uint8_t bytes[] = {0, 1, 2, 3, 0, 0xff, 0x80, 0x7f, 'b', 'y', 't', 'e', 's', 0};
    switch (p) {
    case 0:
        return ac_msg_str_new("hello, wire \u2014 gr\u00fc\u00dfe");
    case 1:
        return ac_msg_bytes_new(bytes, sizeof bytes);
    case 2:
        return ac_msg_int64_new(-123456789);
    case 3:
        return ac_msg_error_new(ws_aggregate_of_timeouts());
    case 4:
        return ws_point_new(3, -4, "origin");
    default:
        return NULL;
    }
}

ac__wire_env ws_sample_env(size_t i, ac_msg **with_msg)
{
    ac__wire_kind kind;
    ac__wire_sender_kind sender;
    sample_shape(i, &kind, &sender);
    bool corr = kind == AC__WIRE_ASK || kind == AC__WIRE_REPLY || kind == AC__WIRE_UNDELIVERABLE;
    ac__wire_env env = {
        .kind = kind,
        .flags = kind == AC__WIRE_TERMINATED ? 1u : 0u,
        .corr = corr ? 1000 + i : 0,
        .target_inc = i % 2 ? 0x1122334455667788u : 0,
        .target_path = kind == AC__WIRE_HELLO ? ws_span("") : ws_span("/user/service/worker-17"),
        .sender = sample_sender(sender),
        .deadline_us = kind == AC__WIRE_ASK ? 250000 : 0,
        .type_name = ws_span("test.Raw"),
        .body = ws_span("a body no codec reads"),
    };
    ac_msg *msg = sample_msg(i % PAYLOAD_KINDS);
    if (with_msg)
        *with_msg = msg;
    else
        ac_msg_release(msg);
    return env;
}

uint8_t *ws_sample_frame(size_t i, size_t *len, const char **name)
{
    static char names[SAMPLES][48];
    ac__wire_kind kind;
    ac__wire_sender_kind sender;
    sample_shape(i, &kind, &sender);
    snprintf(names[i], sizeof names[i], "%s-%s-%s", kind_names[kind], sender_names[sender + 1],
             payload_names[i % PAYLOAD_KINDS]);
    *name = names[i];
    ac_msg *msg;
    ac__wire_env env = ws_sample_env(i, &msg);
    uint8_t *frame = msg ? ws_encode_msg(&env, msg, len) : ws_encode_env(&env, len);
    ac_msg_release(msg);
    return frame;
}

/* ---- the corpus's seeds ----------------------------------------------- */

ac_error *ws_error_chain(size_t depth)
{
    ac_error *err = NULL;
    for (size_t level = depth; level > 0; level--) {
        ac_error *up = ac_error_new_caused("ChainError", err, "level %zu", level);
        ac_error_release(err);
        if (!up)
            return NULL;
        err = up;
    }
    return err;
}

static uint8_t *copy_of(const void *data, size_t n, size_t *len)
{
    uint8_t *p = malloc(n ? n : 1);
    if (p && n)
        memcpy(p, data, n);
    *len = n;
    return p;
}

static uint8_t *error_seed(size_t k, size_t *len, const char **name)
{
    static const char *const names[] = {"error-aggregate-of-timeouts.cbor", "error-mixed.cbor",
                                        "error-chain-64.cbor"};
    ac_error *err = k == 0 ? ws_aggregate_of_timeouts()
                  : k == 1 ? ws_mixed_error()
                           : ws_error_chain(AC_ERROR_MAX_DEPTH);
    *name = names[k];
    uint8_t *seed = ws_encode_error(err, len);
    ac_error_release(err);
    return seed;
}

static uint8_t *other_seed(size_t k, size_t *len, const char **name)
{
    /* 1000000, -1, INT64_MIN, and "grüße" as a String's body. */
    static const uint8_t million[] = {0x1a, 0x00, 0x0f, 0x42, 0x40};
    static const uint8_t minus_one[] = {0x20};
    static const uint8_t min[] = {0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const char text[] = "gr\u00fc\u00dfe";
    switch (k) {
    case 0:
        *name = "int64-million.cbor";
        return copy_of(million, sizeof million, len);
    case 1:
        *name = "int64-minus-one.cbor";
        return copy_of(minus_one, sizeof minus_one, len);
    case 2:
        *name = "int64-min.cbor";
        return copy_of(min, sizeof min, len);
    case 3:
        *name = "string-utf8.txt";
        return copy_of(text, sizeof text - 1, len);
    case 4: { /* a message of three frames, as a node sends a burst */
        size_t n[3];
        const char *sample;
        uint8_t *f[3], *seq = NULL;
        for (int j = 0; j < 3; j++)
            f[j] = ws_sample_frame((size_t)j, &n[j], &sample);
        if (f[0] && f[1] && f[2] && (seq = malloc(n[0] + n[1] + n[2]))) {
            memcpy(seq, f[0], n[0]);
            memcpy(seq + n[0], f[1], n[1]);
            memcpy(seq + n[0] + n[1], f[2], n[2]);
            *len = n[0] + n[1] + n[2];
        }
        for (int j = 0; j < 3; j++)
            free(f[j]);
        *name = "batch-three-frames.cbor";
        return seq;
    }
    default:
        return NULL;
    }
}

uint8_t *ws_corpus_seed(size_t i, size_t *len, const char **name)
{
    static char frame_names[SAMPLES][64];
    if (i < SAMPLES) {
        const char *sample;
        uint8_t *frame = ws_sample_frame(i, len, &sample);
        snprintf(frame_names[i], sizeof frame_names[i], "frame-%s.cbor", sample);
        *name = frame_names[i];
        return frame;
    }
    i -= SAMPLES;
    if (i < 3)
        return error_seed(i, len, name);
    return other_seed(i - 3, len, name);
}
