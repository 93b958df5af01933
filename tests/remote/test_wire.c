/*
 * The wire codec (src/remote/wire.c, codec.c), white-box: envelopes of
 * every kind and sender round trip; every built-in payload and a user
 * type's hooks round trip; errors keep their names, messages, members
 * and causes, print the same, and are refused past their depth and
 * count; every truncation, flipped bit, malformed item and oversized
 * field of a valid frame is refused with AC_EPROTO and a reason, never a
 * crash or a leak (the suite runs under ASan).
 */
#include "ts_test.h"
#include "wire_samples.h"

#include "remote/cbor_io.h"

/* ---- helpers ---------------------------------------------------------- */

/* Bytes from hex: "8b 01 02". */
static size_t hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s) {
        if (*s == ' ') {
            s++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(s, "%2x", &v), 1);
        assert_true(n < cap);
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void assert_span(ac__wire_span got, const char *want)
{
    assert_true(ws_span_eq(got, ws_span(want)));
}

static void assert_env_eq(const ac__wire_env *a, const ac__wire_env *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->flags, b->flags);
    assert_true(a->corr == b->corr);
    assert_true(a->target_inc == b->target_inc);
    assert_true(ws_span_eq(a->target_path, b->target_path));
    assert_int_equal(a->sender.kind, b->sender.kind);
    assert_true(ws_span_eq(a->sender.system, b->sender.system));
    assert_true(ws_span_eq(a->sender.address, b->sender.address));
    assert_true(ws_span_eq(a->sender.path, b->sender.path));
    assert_true(a->sender.incarnation == b->sender.incarnation);
    assert_true(a->sender.corr == b->sender.corr);
    assert_true(ws_span_eq(a->type_name, b->type_name));
    assert_true(a->deadline_us == b->deadline_us);
    assert_true(a->payload_size == b->payload_size);
    assert_true(ws_span_eq(a->body, b->body));
}

/* Decoding `frame` is refused with `why` (NULL: any reason). */
static void assert_refused(const uint8_t *frame, size_t len, const ac__wire_limits *limits,
                           const char *why)
{
    ac__wire_env env;
    const char *got = NULL;
    int rc = ac__wire_decode(frame, len, limits, &env, &got);
    if (rc != AC_EPROTO)
        fail_msg("decode of %zu bytes: %s, expected AC_EPROTO (%s)", len, ac_status_name(rc),
                 why ? why : "any reason");
    assert_non_null(got);
    if (why && strcmp(got, why) != 0)
        fail_msg("refused for \"%s\", expected \"%s\"", got, why);
    assert_status(ac_last_status(), AC_EPROTO);
    assert_non_null(strstr(ac_last_error(), got));
}

static void assert_hex_refused(const char *frame, const char *why)
{
    uint8_t buf[256];
    size_t len = hex(frame, buf, sizeof buf);
    assert_refused(buf, len, NULL, why);
}

/* The payload of `msg` through its codec and back. */
static ac_msg *payload_round_trip(const ac_msg *msg)
{
    uint64_t payload_size = 99;
    size_t need = ac__wire_encode_payload(msg, NULL, 0, &payload_size);
    assert_true(need != SIZE_MAX);
    uint8_t *body = malloc(need + 1);
    assert_non_null(body);
    assert_int_equal(ac__wire_encode_payload(msg, body, need, &payload_size), need);
    assert_true(payload_size == ac__wire_payload_size(msg));
    const char *why = NULL;
    ac_msg *back = ac__wire_decode_payload(ac_msg_type_of(msg), body, need, payload_size, NULL,
                                           &why);
    if (!back)
        fail_msg("payload of %s refused: %s", ac_msg_type_name(msg), why);
    assert_ptr_equal(ac_msg_type_of(back), ac_msg_type_of(msg));
    free(body);
    return back;
}

/* Decoding `body` as a payload of `type` is refused with `status`. */
static void assert_payload_refused(const ac_msg_type *type, const uint8_t *body, size_t len,
                                   uint64_t payload_size, ac_status status)
{
    const char *why = NULL;
    ac_msg *msg = ac__wire_decode_payload(type, body, len, payload_size, NULL, &why);
    if (msg)
        fail_msg("payload of %zu bytes decoded, expected %s", len, ac_status_name(status));
    assert_non_null(why);
    assert_status(ac_last_status(), status);
}

static void assert_same_error(const ac_error *a, const ac_error *b)
{
    char *sa = ac_error_to_string(a), *sb = ac_error_to_string(b);
    assert_non_null(sa);
    assert_non_null(sb);
    assert_string_equal(sa, sb);
    assert_int_equal(ac_error_depth(a), ac_error_depth(b));
    free(sa);
    free(sb);
}

static ac_error *error_round_trip(const ac_error *err, size_t max_errors)
{
    size_t len;
    uint8_t *buf = ws_encode_error(err, &len);
    assert_non_null(buf);
    const char *why = NULL;
    ac_error *back = ac__wire_decode_error(buf, len, max_errors, &why);
    if (!back)
        fail_msg("error refused: %s", why);
    free(buf);
    return back;
}

static void assert_error_refused(const uint8_t *buf, size_t len, size_t max_errors,
                                 const char *why)
{
    const char *got = NULL;
    ac_error *err = ac__wire_decode_error(buf, len, max_errors, &got);
    if (err)
        fail_msg("error decoded, expected a refusal (%s)", why ? why : "any reason");
    assert_non_null(got);
    if (why && strcmp(got, why) != 0)
        fail_msg("error refused for \"%s\", expected \"%s\"", got, why);
    assert_status(ac_last_status(), AC_EPROTO);
}

/* The head of an error item: the tag, [name, message, and n members. */
static void put_error_head(ac__cbor_out *o, const char *name, const char *msg, size_t n)
{
    ac__cbor_put_tag(o, AC__WIRE_ERROR_TAG);
    ac__cbor_put_array(o, 4);
    ac__cbor_put_text(o, name, strlen(name));
    ac__cbor_put_text(o, msg, strlen(msg));
    ac__cbor_put_array(o, n);
}

static void put_leaf_error(ac__cbor_out *o, const char *name)
{
    put_error_head(o, name, "leaf", 0);
    ac__cbor_put_null(o);
}

/* ---- envelopes -------------------------------------------------------- */

static void test_every_kind_and_sender_round_trips(void **state)
{
    (void)state;
    for (size_t i = 0; i < ws_sample_count(); i++) {
        ac__wire_env env = ws_sample_env(i, NULL);
        size_t len;
        uint8_t *frame = ws_encode_env(&env, &len);
        assert_non_null(frame);
        ac__wire_env back;
        const char *why = NULL;
        int rc = ac__wire_decode(frame, len, NULL, &back, &why);
        if (rc != AC_OK)
            fail_msg("sample %zu refused: %s", i, why);
        assert_int_equal(back.version, AC__WIRE_VERSION);
        assert_env_eq(&env, &back);
        /* Zero-copy: the spans point into the frame. */
        assert_true(back.body.ptr > frame && back.body.ptr + back.body.len == frame + len);
        free(frame);
    }
}

static void test_a_small_frame_is_as_expected(void **state)
{
    (void)state;
    ac__wire_env env = {.kind = AC__WIRE_TELL, .sender = {.kind = AC__WIRE_SENDER_NONE}};
    uint8_t buf[64], want[64];
    size_t n = ac__wire_encode(&env, buf, sizeof buf);
    size_t wn = hex("8b 01 02 00 00 00 60 f6 60 00 00 40", want, sizeof want);
    assert_int_equal(n, wn);
    assert_memory_equal(buf, want, wn);
}

static void test_encode_reports_the_size_it_needs(void **state)
{
    (void)state;
    ac__wire_env env = ws_sample_env(7, NULL);
    size_t need = ac__wire_encode(&env, NULL, 0);
    assert_true(need > 0);
    uint8_t *buf = malloc(need);
    assert_non_null(buf);
    for (size_t cap = 0; cap <= need; cap++)
        assert_int_equal(ac__wire_encode(&env, buf, cap), need);
    ac__wire_env back;
    assert_status(ac__wire_decode(buf, need, NULL, &back, NULL), AC_OK);
    assert_env_eq(&env, &back);
    free(buf);
}

static void test_encode_refuses_what_it_cannot_write(void **state)
{
    (void)state;
    uint8_t buf[256];
    ac__wire_env env = {.kind = AC__WIRE_TELL, .sender = {.kind = AC__WIRE_SENDER_NONE}};
    assert_true(ac__wire_encode(&env, buf, sizeof buf) > 0);
    assert_int_equal(ac__wire_encode(NULL, buf, sizeof buf), 0);
    env.kind = 0;
    assert_int_equal(ac__wire_encode(&env, buf, sizeof buf), 0);
    env.kind = AC__WIRE_KIND_MAX + 1;
    assert_int_equal(ac__wire_encode(&env, buf, sizeof buf), 0);
    env.kind = AC__WIRE_TELL;
    env.sender.kind = 7;
    assert_int_equal(ac__wire_encode(&env, buf, sizeof buf), 0);
    env.sender.kind = AC__WIRE_SENDER_LOCAL;
    env.sender.path = (ac__wire_span){NULL, 3};
    assert_int_equal(ac__wire_encode(&env, buf, sizeof buf), 0);
    env.sender.path = ws_span("/user/a");
    env.body = (ac__wire_span){NULL, 1};
    assert_int_equal(ac__wire_encode(&env, buf, sizeof buf), 0);
}

static void test_decode_rejects_null_arguments(void **state)
{
    (void)state;
    uint8_t buf[64];
    ac__wire_env env = {.kind = AC__WIRE_TELL, .sender = {.kind = AC__WIRE_SENDER_NONE}};
    size_t n = ac__wire_encode(&env, buf, sizeof buf);
    assert_status(ac__wire_decode(buf, n, NULL, NULL, NULL), AC_EINVAL);
    assert_refused(NULL, 0, NULL, "truncated");
    assert_refused(NULL, 5, NULL, "truncated");
    assert_refused(buf, 0, NULL, "truncated");
    ac__wire_env back;
    assert_status(ac__wire_decode(buf, n, NULL, &back, NULL), AC_OK); /* why may be NULL */
}

/* ---- malformed frames ------------------------------------------------- */

/* A valid TELL is "8b 01 02 00 00 00 60 f6 60 00 00 40": [1, 2, 0, 0, 0,
 * "", null, "", 0, 0, h'']. Each case changes one thing. */
static void test_malformed_frames_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *frame, *why;
    } cases[] = {
        {"", "truncated"},
        {"1c", "malformed"},
        {"00", "expected an array"},
        {"ab 01 02 00 00 00 60 f6 60 00 00 40", "expected an array"},
        {"d9 69 79 8b 01 02 00 00 00 60 f6 60 00 00 40", "expected an array"},
        {"9f 01 02 00 00 00 60 f6 60 00 00 40 ff", "indefinite length"},
        {"8a 01 02 00 00 00 60 f6 60 00 00", "wrong envelope length"},
        {"8c 01 02 00 00 00 60 f6 60 00 00 40 40", "wrong envelope length"},
        {"8b 02 02 00 00 00 60 f6 60 00 00 40", "unsupported version"},
        {"8b 00 02 00 00 00 60 f6 60 00 00 40", "unsupported version"},
        {"8b 01 00 00 00 00 60 f6 60 00 00 40", "unknown kind"},
        {"8b 01 0a 00 00 00 60 f6 60 00 00 40", "unknown kind"},
        {"8b 01 1b 00 00 00 01 00 00 00 02 00 00 00 60 f6 60 00 00 40", "unknown kind"},
        {"8b 01 02 1b 00 00 00 01 00 00 00 00 00 00 60 f6 60 00 00 40", "flags out of range"},
        {"8b 01 02 00 20 00 60 f6 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 f9 3c 00 00 60 f6 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 f7 00 60 f6 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 f5 00 60 f6 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 00 00 40 f6 60 00 00 40", "expected text"},
        {"8b 01 02 00 00 00 7f ff f6 60 00 00 40", "indefinite length"},
        {"8b 01 02 00 00 00 61 ff f6 60 00 00 40", "text not UTF-8 or with a NUL"},
        {"8b 01 02 00 00 00 62 2f 00 f6 60 00 00 40", "text not UTF-8 or with a NUL"},
        {"8b 01 02 00 00 00 62 c0 af f6 60 00 00 40", "text not UTF-8 or with a NUL"},
        {"8b 01 02 00 00 00 63 ed a0 80 f6 60 00 00 40", "text not UTF-8 or with a NUL"},
        {"8b 01 02 00 00 00 60 61 78 60 00 00 40", "sender: expected null or an array"},
        {"8b 01 02 00 00 00 60 9f ff 60 00 00 40", "indefinite length"},
        {"8b 01 02 00 00 00 60 82 03 60 60 00 00 40", "unknown sender kind"},
        {"8b 01 02 00 00 00 60 82 20 60 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 00 00 60 83 00 60 60 60 00 00 40", "sender: wrong item count"},
        {"8b 01 02 00 00 00 60 82 01 60 60 00 00 40", "sender: wrong item count"},
        {"8b 01 02 00 00 00 60 85 02 60 60 00 60 60 00 00 40", "expected an unsigned integer"},
        {"8b 01 02 00 00 00 60 85 01 60 60 00 00 60 00 00 40", "expected text"},
        {"8b 01 01 00 00 00 60 f6 60 00 00 40", "hello without its node"},
        {"8b 01 01 00 00 00 60 82 00 60 60 00 00 40", "hello without its node"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 60", "expected a byte string"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 5f ff", "indefinite length"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 40 00", "trailing bytes"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 40 8b", "trailing bytes"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 5b 00 00 00 00 00 00 00 01", "truncated"},
        {"8b 01 02 00 00 00 60 f6 60 00 00 5b ff ff ff ff ff ff ff ff", "truncated"},
        {"8b 01 02 00 00 00 7b ff ff ff ff ff ff ff ff", "truncated"},
        {"8b 01 02 00 00 00 60 f6 60 00 1b 00 00 00 01 00 00 00 00 40", "payload too large"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_hex_refused(cases[i].frame, cases[i].why);
    /* HELLO with its node is fine, as is a TELL with any 32-bit flags. */
    uint8_t buf[64];
    ac__wire_env env;
    size_t n = hex("8b 01 01 00 00 00 60 85 01 60 60 00 60 60 00 00 40", buf, sizeof buf);
    assert_status(ac__wire_decode(buf, n, NULL, &env, NULL), AC_OK);
    n = hex("8b 01 02 1a ff ff ff ff 00 00 60 f6 60 00 00 40", buf, sizeof buf);
    assert_status(ac__wire_decode(buf, n, NULL, &env, NULL), AC_OK);
    assert_true(env.flags == UINT32_MAX);
    /* Integers in longer heads than needed are still integers. */
    n = hex("8b 18 01 19 00 02 00 00 00 60 f6 60 00 00 40", buf, sizeof buf);
    assert_status(ac__wire_decode(buf, n, NULL, &env, NULL), AC_OK);
    assert_int_equal(env.kind, AC__WIRE_TELL);
}

static void test_every_truncation_is_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < ws_sample_count(); i++) {
        size_t len;
        const char *name;
        uint8_t *frame = ws_sample_frame(i, &len, &name);
        assert_non_null(frame);
        for (size_t cut = 0; cut < len; cut++) {
            /* A copy of exactly `cut` bytes, so that ASan sees any read past it. */
            uint8_t *prefix = malloc(cut ? cut : 1);
            assert_non_null(prefix);
            memcpy(prefix, frame, cut);
            assert_refused(prefix, cut, NULL, NULL);
            free(prefix);
        }
        free(frame);
    }
}

static void test_trailing_bytes_are_refused(void **state)
{
    (void)state;
    size_t len;
    const char *name;
    uint8_t *frame = ws_sample_frame(3, &len, &name);
    uint8_t *longer = malloc(len + 1);
    assert_non_null(longer);
    memcpy(longer, frame, len);
    longer[len] = 0;
    assert_refused(longer, len + 1, NULL, "trailing bytes");
    free(longer);
    free(frame);
}

/* Decode, and decode the payload when the frame names a known type. */
static void decode_whatever(const uint8_t *frame, size_t len)
{
    ac__wire_env env;
    const char *why = NULL;
    int rc = ac__wire_decode(frame, len, NULL, &env, &why);
    assert_true(rc == AC_OK || (rc == AC_EPROTO && why));
    if (rc != AC_OK)
        return;
    const ac_msg_type *type = ws_type_named(env.type_name);
    if (!type)
        return;
    ac_msg *msg = ac__wire_decode_payload(type, env.body.ptr, env.body.len, env.payload_size,
                                          NULL, &why);
    ac_msg_release(msg);
}

static void test_bit_flips_never_crash(void **state)
{
    (void)state;
    size_t accepted = 0, refused = 0;
    for (size_t i = 0; i < ws_sample_count(); i++) {
        size_t len;
        const char *name;
        uint8_t *frame = ws_sample_frame(i, &len, &name);
        for (size_t bit = 0; bit < len * 8; bit++) {
            frame[bit / 8] ^= (uint8_t)(1u << bit % 8);
            ac__wire_env env;
            if (ac__wire_decode(frame, len, NULL, &env, NULL) == AC_OK)
                accepted++;
            else
                refused++;
            decode_whatever(frame, len);
            frame[bit / 8] ^= (uint8_t)(1u << bit % 8);
        }
        free(frame);
    }
    /* Most flips land in text or numbers and still decode; many do not. */
    assert_true(accepted > 0 && refused > 0);
}

/* ---- several frames in one message ------------------------------------ */

/* Frames back to back decode one after the other, each borrowing its own
 * bytes; ac__wire_decode alone takes none of them (trailing bytes). */
static void test_a_sequence_of_frames_decodes_in_turn(void **state)
{
    (void)state;
    enum { N = 4 };
    uint8_t *frames[N], seq[4096];
    size_t lens[N], total = 0;
    for (size_t i = 0; i < N; i++) {
        ac__wire_env env = ws_sample_env(i, NULL);
        frames[i] = ws_encode_env(&env, &lens[i]);
        assert_non_null(frames[i]);
        assert_true(total + lens[i] <= sizeof seq);
        memcpy(seq + total, frames[i], lens[i]);
        total += lens[i];
    }
    ac__wire_env env;
    assert_refused(seq, total, NULL, "trailing bytes");
    size_t at = 0;
    for (size_t i = 0; i < N; i++) {
        size_t used = 0;
        assert_status(ac__wire_decode_next(seq + at, total - at, NULL, &env, &used, NULL), AC_OK);
        assert_int_equal(used, lens[i]);
        ac__wire_env want, one = ws_sample_env(i, NULL);
        assert_status(ac__wire_decode(frames[i], lens[i], NULL, &want, NULL), AC_OK);
        assert_int_equal(env.kind, one.kind);
        assert_true(ws_span_eq(env.target_path, want.target_path));
        assert_true(env.target_path.ptr >= seq + at && env.target_path.ptr < seq + at + used);
        at += used;
    }
    assert_int_equal(at, total);
    /* A lone frame is a sequence of one. */
    size_t used = 0;
    assert_status(ac__wire_decode_next(frames[0], lens[0], NULL, &env, &used, NULL), AC_OK);
    assert_int_equal(used, lens[0]);
    for (size_t i = 0; i < N; i++)
        free(frames[i]);
}

/* A frame cut short or broken in a sequence is refused like a lone one;
 * the frames before it still decode; each frame is bounded by max_frame,
 * not the whole. */
static void test_a_bad_frame_in_a_sequence_is_refused(void **state)
{
    (void)state;
    ac__wire_env env = ws_sample_env(5, NULL);
    size_t len;
    uint8_t *frame = ws_encode_env(&env, &len);
    uint8_t seq[2048];
    assert_true(2 * len <= sizeof seq);
    memcpy(seq, frame, len);
    memcpy(seq + len, frame, len);
    ac__wire_env back;
    size_t used = 0;
    const char *why = NULL;
    for (size_t cut = 1; cut < len; cut++) {
        assert_status(ac__wire_decode_next(seq, len + cut, NULL, &back, &used, NULL), AC_OK);
        assert_int_equal(used, len);
        why = NULL;
        assert_status(ac__wire_decode_next(seq + len, cut, NULL, &back, &used, &why), AC_EPROTO);
        assert_non_null(why);
    }
    seq[len] = 0xff; /* a break where a frame should start */
    assert_status(ac__wire_decode_next(seq + len, len, NULL, &back, &used, &why), AC_EPROTO);
    memcpy(seq + len, frame, len);
    ac__wire_limits lim = ac__wire_default_limits;
    lim.max_frame = len;
    assert_status(ac__wire_decode_next(seq, 2 * len, &lim, &back, &used, NULL), AC_OK);
    lim.max_frame = len - 1;
    assert_status(ac__wire_decode_next(seq, 2 * len, &lim, &back, &used, &why), AC_EPROTO);
    assert_string_equal(why, "frame too large");
    assert_status(ac__wire_decode_next(seq, 2 * len, NULL, &back, NULL, NULL), AC_EINVAL);
    free(frame);
}

/* ---- limits ----------------------------------------------------------- */

static void test_limits_are_enforced(void **state)
{
    (void)state;
    ac__wire_env env = ws_sample_env(5, NULL); /* a TELL from another node */
    size_t len;
    uint8_t *frame = ws_encode_env(&env, &len);
    ac__wire_limits lim = ac__wire_default_limits;
    ac__wire_env back;
    assert_status(ac__wire_decode(frame, len, &lim, &back, NULL), AC_OK);

    lim.max_frame = len - 1;
    assert_refused(frame, len, &lim, "frame too large");
    lim = ac__wire_default_limits;
    lim.max_text = strlen("/user/service/worker-17") - 1;
    assert_refused(frame, len, &lim, "text too long");
    lim = ac__wire_default_limits;
    lim.max_body = env.body.len - 1;
    assert_refused(frame, len, &lim, "body too large");
    free(frame);

    env.payload_size = 1000;
    frame = ws_encode_env(&env, &len);
    lim = ac__wire_default_limits;
    lim.max_payload = 999;
    assert_refused(frame, len, &lim, "payload too large");
    lim.max_payload = 1000;
    assert_status(ac__wire_decode(frame, len, &lim, &back, NULL), AC_OK);
    free(frame);
}

static void test_default_text_limit(void **state)
{
    (void)state;
    char path[1100];
    memset(path, 'a', sizeof path);
    path[0] = '/';
    ac__wire_env env = {.kind = AC__WIRE_TELL, .sender = {.kind = AC__WIRE_SENDER_NONE}};
    env.target_path = (ac__wire_span){(const uint8_t *)path, ac__wire_default_limits.max_text};
    size_t len;
    uint8_t *frame = ws_encode_env(&env, &len);
    ac__wire_env back;
    assert_status(ac__wire_decode(frame, len, NULL, &back, NULL), AC_OK);
    free(frame);
    env.target_path.len++;
    frame = ws_encode_env(&env, &len);
    assert_refused(frame, len, NULL, "text too long");
    free(frame);
}

/* ---- built-in payloads ------------------------------------------------ */

static void test_string_payloads(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "", "hello", "gr\u00fc\u00dfe \u2713 \U0001d11e", "/user/a/b/c-17 with spaces",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        ac_msg *m = ac_msg_str_new(texts[i]);
        assert_true(ac__wire_payload_size(m) == strlen(texts[i]) + 1);
        ac_msg *back = payload_round_trip(m);
        assert_string_equal(ac_msg_str(back), texts[i]);
        assert_int_equal(ac_msg_size(back), ac_msg_size(m));
        ac_msg_release(back);
        ac_msg_release(m);
    }
}

static void test_string_refusals(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "61 00 62",    /* a NUL inside */
        "c0 80",       /* an overlong NUL */
        "e0 80 80",    /* overlong */
        "ed a0 80",    /* a surrogate */
        "f4 90 80 80", /* past U+10FFFF */
        "80",          /* a lone continuation byte */
        "e2 82",       /* a sequence cut short */
        "ff",          /* never in UTF-8 */
        "61 62 63 64 65 66 67 c3", /* cut short after a run of ASCII */
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        uint8_t body[16];
        size_t n = hex(bodies[i], body, sizeof body);
        assert_payload_refused(&ac_msg_type_str, body, n, n + 1, AC_EPROTO);
    }
    assert_payload_refused(&ac_msg_type_str, (const uint8_t *)"abc", 3, 3, AC_EPROTO);
    assert_payload_refused(&ac_msg_type_str, (const uint8_t *)"abc", 3, 5, AC_EPROTO);
    /* A String that is not UTF-8 has no wire form. */
    ac_msg *m = ac_msg_str_new("caf\xe9");
    uint64_t ps;
    assert_true(ac__wire_encode_payload(m, NULL, 0, &ps) == SIZE_MAX);
    ac_msg_release(m);
}

static void test_bytes_payloads(void **state)
{
    (void)state;
    uint8_t big[1000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    const size_t lens[] = {0, 1, 23, 24, sizeof big};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        ac_msg *m = ac_msg_bytes_new(big, lens[i]);
        ac_msg *back = payload_round_trip(m);
        size_t n;
        const uint8_t *b = ac_msg_bytes(back, &n);
        assert_int_equal(n, lens[i]);
        if (n)
            assert_memory_equal(b, big, n);
        ac_msg_release(back);
        ac_msg_release(m);
    }
    assert_payload_refused(&ac_msg_type_bytes, big, 10, 11, AC_EPROTO);
}

static void test_int64_payloads(void **state)
{
    (void)state;
    static const int64_t values[] = {
        0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295, 4294967296, INT64_MAX,
        -1, -24, -25, -256, -257, -65537, -4294967297, INT64_MIN,
    };
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        ac_msg *m = ac_msg_int64_new(values[i]);
        ac_msg *back = payload_round_trip(m);
        assert_true(ac_msg_int64(back) == values[i]);
        ac_msg_release(back);
        ac_msg_release(m);
    }
    static const char *const refused[] = {
        "",                            /* nothing */
        "61 31",                       /* text */
        "80",                          /* an array */
        "f9 3c 00",                    /* a float */
        "1b 80 00 00 00 00 00 00 00",  /* 2^63 */
        "3b 80 00 00 00 00 00 00 00",  /* -1 - 2^63 */
        "01 00",                       /* trailing bytes */
        "1a 00 00",                    /* truncated */
        "5f ff",                       /* indefinite */
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        uint8_t body[16];
        size_t n = hex(refused[i], body, sizeof body);
        assert_payload_refused(&ac_msg_type_int64, body, n, 8, AC_EPROTO);
    }
    uint8_t one = 0x01;
    assert_payload_refused(&ac_msg_type_int64, &one, 1, 4, AC_EPROTO);
}

static void test_error_payload(void **state)
{
    (void)state;
    ac_error *err = ws_aggregate_of_timeouts();
    ac_msg *m = ac_msg_error_new(ac_error_retain(err));
    assert_true(ac__wire_payload_size(m) == 0);
    ac_msg *back = payload_round_trip(m);
    ac_error *got = ac_msg_error(back);
    assert_non_null(got);
    assert_same_error(err, got);
    assert_true(ac_error_all_timeouts(got));
    ac_msg_release(back);
    ac_msg_release(m);
    ac_error_release(err);
    /* The receiver makes its own error message: payload_size is 0. */
    size_t len;
    ac_error *mixed = ws_mixed_error();
    uint8_t *body = ws_encode_error(mixed, &len);
    assert_payload_refused(&ac_msg_type_error, body, len, 8, AC_EPROTO);
    free(body);
    ac_error_release(mixed);
}

/* ---- user types ------------------------------------------------------- */

static void test_user_type_codec(void **state)
{
    (void)state;
    ac_msg *m = ws_point_new(-7, 1 << 20, "north-east");
    assert_true(ac__wire_has_codec(&ws_point_type));
    /* The hook is called with a buffer that grows until it fits. */
    ws_point_encode_calls = 0;
    size_t cap = 1, need;
    uint8_t *buf = NULL;
    uint64_t ps = 0;
    for (;;) {
        buf = realloc(buf, cap);
        need = ac__wire_encode_payload(m, buf, cap, &ps);
        if (need <= cap)
            break;
        cap *= 2;
    }
    assert_true(ws_point_encode_calls >= 2);
    assert_true(ps == sizeof(ws_point));
    ac_msg *back = ac__wire_decode_payload(&ws_point_type, buf, need, ps, NULL, NULL);
    assert_non_null(back);
    const ws_point *p = ac_msg_data(back);
    assert_int_equal(p->x, -7);
    assert_int_equal(p->y, 1 << 20);
    assert_string_equal(p->label, "north-east");
    ac_msg_release(back);
    /* What the hook refuses is refused, and nothing leaks. */
    assert_payload_refused(&ws_point_type, buf, 5, ps, AC_EPROTO);
    assert_payload_refused(&ws_point_type, buf, need, ps + 1, AC_EPROTO);
    free(buf);
    ac_msg_release(m);
}

static size_t encode_only(const void *payload, size_t size, uint8_t *buf, size_t cap)
{
    (void)payload, (void)buf, (void)cap;
    return size;
}

static void test_types_without_a_codec(void **state)
{
    (void)state;
    static const ac_msg_type plain = {.name = "test.Plain"};
    static const ac_msg_type half = {.name = "test.Half", .encode = encode_only};
    assert_false(ac__wire_has_codec(&plain));
    assert_false(ac__wire_has_codec(&half));
    assert_false(ac__wire_has_codec(NULL));
    assert_true(ac__wire_has_codec(&ac_msg_type_str));
    assert_true(ac__wire_has_codec(&ac_msg_type_error));
    ac_msg *m = ac_msg_new(&plain, 8);
    uint64_t ps = 5;
    assert_true(ac__wire_encode_payload(m, NULL, 0, &ps) == SIZE_MAX);
    assert_true(ps == 0);
    ac__wire_env env = {.kind = AC__WIRE_TELL, .sender = {.kind = AC__WIRE_SENDER_NONE}};
    uint8_t buf[128];
    assert_int_equal(ac__wire_encode_msg(&env, m, buf, sizeof buf), 0);
    assert_true(ac__wire_encode_payload(NULL, buf, sizeof buf, &ps) == SIZE_MAX);
    ac_msg_release(m);
    assert_payload_refused(&plain, buf, 4, 8, AC_ECODEC);
    assert_payload_refused(NULL, buf, 4, 8, AC_EINVAL);
    /* A built-in message not shaped as its constructor makes it. */
    ac_msg *odd = ac_msg_new(&ac_msg_type_int64, 3);
    assert_true(ac__wire_encode_payload(odd, buf, sizeof buf, &ps) == SIZE_MAX);
    ac_msg_release(odd);
    ac_msg *no_error = ac_msg_new(&ac_msg_type_error, sizeof(ac_error *));
    assert_true(ac__wire_encode_payload(no_error, buf, sizeof buf, &ps) == SIZE_MAX);
    ac_msg_release(no_error);
}

static void test_builtin_types_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(ac__wire_builtin_type(ws_span("actorc.String")), &ac_msg_type_str);
    assert_ptr_equal(ac__wire_builtin_type(ws_span("actorc.Bytes")), &ac_msg_type_bytes);
    assert_ptr_equal(ac__wire_builtin_type(ws_span("actorc.Int64")), &ac_msg_type_int64);
    assert_ptr_equal(ac__wire_builtin_type(ws_span("actorc.Error")), &ac_msg_type_error);
    assert_null(ac__wire_builtin_type(ws_span("actorc.Strin")));
    assert_null(ac__wire_builtin_type(ws_span("")));
}

/* ---- whole frames from messages --------------------------------------- */

static void test_frames_from_messages(void **state)
{
    (void)state;
    for (size_t i = 0; i < ws_sample_count(); i++) {
        ac_msg *msg;
        ac__wire_env env = ws_sample_env(i, &msg);
        if (!msg)
            continue;
        size_t len;
        uint8_t *frame = ws_encode_msg(&env, msg, &len);
        assert_non_null(frame);
        ac__wire_env back;
        assert_status(ac__wire_decode(frame, len, NULL, &back, NULL), AC_OK);
        assert_span(back.type_name, ac_msg_type_name(msg));
        assert_true(back.payload_size == ac__wire_payload_size(msg));
        assert_int_equal(back.kind, env.kind);
        ac_msg *got = ac__wire_decode_payload(ws_type_named(back.type_name), back.body.ptr,
                                              back.body.len, back.payload_size, NULL, NULL);
        assert_non_null(got);
        ac_msg *direct = payload_round_trip(msg);
        if (ac_msg_is(msg, &ac_msg_type_error)) {
            assert_same_error(ac_msg_error(got), ac_msg_error(msg));
        } else {
            assert_int_equal(ac_msg_size(got), ac_msg_size(direct));
            assert_memory_equal(ac_msg_data(got), ac_msg_data(direct), ac_msg_size(got));
        }
        ac_msg_release(direct);
        ac_msg_release(got);
        ac_msg_release(msg);
        free(frame);
    }
}

/* Bodies around every head width, into buffers of every size near the
 * frame's: the body written in place moves to sit behind its head. */
static void test_frames_in_place_at_every_size(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 22, 23, 24, 25, 200, 255, 256, 257, 65535, 65536, 70000};
    uint8_t *data = malloc(70000);
    assert_non_null(data);
    for (size_t i = 0; i < 70000; i++)
        data[i] = (uint8_t)(i * 13 + 5);
    ac__wire_env env = ws_sample_env(2, NULL);
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        ac_msg *m = ac_msg_bytes_new(data, lens[k]);
        size_t need = ac__wire_encode_msg(&env, m, NULL, 0);
        assert_true(need > lens[k]);
        uint8_t *buf = malloc(need + 16);
        size_t frame = 0;
        for (size_t cap = need > 24 ? need - 24 : 0; cap <= need + 16; cap++) {
            size_t n = ac__wire_encode_msg(&env, m, buf, cap);
            if (n > cap) {
                /* Short: retrying with what it asked for works. */
                assert_true(ac__wire_encode_msg(&env, m, buf, n) <= n);
                continue;
            }
            assert_true(frame == 0 || n == frame);
            frame = n;
            ac__wire_env back;
            assert_status(ac__wire_decode(buf, n, NULL, &back, NULL), AC_OK);
            assert_int_equal(back.body.len, lens[k]);
            if (lens[k])
                assert_memory_equal(back.body.ptr, data, lens[k]);
        }
        assert_true(frame > 0);
        free(buf);
        ac_msg_release(m);
    }
    free(data);
}

/* ---- errors ------------------------------------------------------------ */

static void test_aggregate_of_timeouts(void **state)
{
    (void)state;
    ac_error *err = ws_aggregate_of_timeouts();
    ac_error *back = error_round_trip(err, ac__wire_default_limits.max_errors);
    assert_true(ac_error_is(back, AC_AGGREGATE_ERROR));
    assert_string_equal(ac_error_message(back), "all 3 routees failed");
    assert_int_equal(ac_error_member_count(back), 3);
    for (size_t i = 0; i < 3; i++)
        assert_true(ac_error_is(ac_error_member(back, i), AC_ASK_TIMEOUT_ERROR));
    assert_null(ac_error_cause(back));
    assert_true(ac_error_all_timeouts(err) == ac_error_all_timeouts(back));
    assert_true(ac_error_all_timeouts(back));
    assert_same_error(err, back);
    ac_error_release(back);
    ac_error_release(err);
}

static void test_nested_causes_and_members(void **state)
{
    (void)state;
    ac_error *err = ws_mixed_error();
    ac_error *back = error_round_trip(err, ac__wire_default_limits.max_errors);
    assert_same_error(err, back);
    assert_false(ac_error_all_timeouts(back));
    ac_error *agg = ac_error_cause(back);
    assert_true(ac_error_is(agg, AC_AGGREGATE_ERROR));
    assert_int_equal(ac_error_member_count(agg), 3);
    /* A message that is not UTF-8 crosses byte for byte. */
    assert_string_equal(ac_error_message(ac_error_member(agg, 1)),
                        "read failed: bad byte \xff\xfe here");
    assert_true(ac_error_is(ac_error_cause(ac_error_member(agg, 1)), "DiskError"));
    ac_error_release(back);
    ac_error_release(err);
    /* An empty aggregate, and an error with only a name. */
    ac_error *empty = ac_error_aggregate(NULL, 0, "nothing to ask");
    back = error_round_trip(empty, 1);
    assert_same_error(empty, back);
    ac_error_release(back);
    ac_error_release(empty);
    ac_error *bare = ac_error_new("E", "%s", "");
    back = error_round_trip(bare, 1);
    assert_same_error(bare, back);
    ac_error_release(back);
    ac_error_release(bare);
}

/* An error nested `depth` deep on the wire: a chain of causes, or of
 * aggregates with one member each. */
static uint8_t *deep_error(size_t depth, bool as_members, size_t *len)
{
    size_t cap = depth * 32 + 64;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    ac__cbor_out o = ac__cbor_out_make(buf, cap);
    for (size_t level = 1; level < depth; level++)
        put_error_head(&o, as_members ? AC_AGGREGATE_ERROR : "ChainError", "level",
                       as_members ? 1 : 0);
    put_leaf_error(&o, "Bottom");
    for (size_t level = 1; as_members && level < depth; level++)
        ac__cbor_put_null(&o); /* each aggregate's cause */
    assert_true(o.len <= cap);
    *len = o.len;
    return buf;
}

static void test_error_depth_is_capped(void **state)
{
    (void)state;
    ac_error *deepest = ws_error_chain(AC_ERROR_MAX_DEPTH);
    assert_int_equal(ac_error_depth(deepest), AC_ERROR_MAX_DEPTH);
    ac_error *back = error_round_trip(deepest, ac__wire_default_limits.max_errors);
    assert_same_error(deepest, back);
    ac_error_release(back);
    ac_error_release(deepest);

    for (int as_members = 0; as_members < 2; as_members++) {
        size_t len;
        uint8_t *buf = deep_error(AC_ERROR_MAX_DEPTH, as_members, &len);
        ac_error *e = ac__wire_decode_error(buf, len, SIZE_MAX, NULL);
        assert_non_null(e);
        assert_int_equal(ac_error_depth(e), AC_ERROR_MAX_DEPTH);
        ac_error_release(e);
        free(buf);
        /* One level more, which no ac_error can be, and far more: refused
         * before anything is built for the level past the cap, and all
         * that was built above it released. */
        static const size_t too_deep[] = {AC_ERROR_MAX_DEPTH + 1, 100000};
        for (size_t k = 0; k < 2; k++) {
            buf = deep_error(too_deep[k], as_members, &len);
            assert_error_refused(buf, len, SIZE_MAX, "error nests too deep");
            free(buf);
        }
    }
}

static void test_error_count_is_capped(void **state)
{
    (void)state;
    ac_error *members[10];
    for (size_t i = 0; i < 10; i++)
        members[i] = ac_error_new(AC_ASK_TIMEOUT_ERROR, "member %zu", i);
    ac_error *agg = ac_error_aggregate(members, 10, "ten");
    for (size_t i = 0; i < 10; i++)
        ac_error_release(members[i]);
    size_t len;
    uint8_t *buf = ws_encode_error(agg, &len);
    assert_error_refused(buf, len, 10, "too many errors"); /* 11 errors */
    assert_error_refused(buf, len, 0, "too many errors");
    ac_error *back = ac__wire_decode_error(buf, len, 11, NULL);
    assert_non_null(back);
    assert_same_error(agg, back);
    ac_error_release(back);
    free(buf);
    ac_error_release(agg);

    /* A member count far past the bytes or the budget is refused before
     * the members' array is allocated. */
    uint8_t small[64];
    ac__cbor_out o = ac__cbor_out_make(small, sizeof small);
    put_error_head(&o, AC_AGGREGATE_ERROR, "many", 100000);
    put_leaf_error(&o, "One");
    assert_error_refused(small, o.len, SIZE_MAX, "truncated");
    assert_error_refused(small, o.len, 100, "too many errors");
}

static void test_error_shapes_refused(void **state)
{
    (void)state;
    uint8_t buf[512];
    ac__cbor_out o;

    o = ac__cbor_out_make(buf, sizeof buf); /* members on a non-aggregate */
    put_error_head(&o, "CustomError", "x", 1);
    put_leaf_error(&o, "A");
    ac__cbor_put_null(&o);
    assert_error_refused(buf, o.len, 100,
                         "error: members on an error that is not an AggregateError");

    o = ac__cbor_out_make(buf, sizeof buf); /* an aggregate with a cause */
    put_error_head(&o, AC_AGGREGATE_ERROR, "x", 1);
    put_leaf_error(&o, "A");
    put_leaf_error(&o, "Cause");
    assert_error_refused(buf, o.len, 100, "error: an AggregateError with a cause");

    o = ac__cbor_out_make(buf, sizeof buf); /* no name */
    put_error_head(&o, "", "x", 0);
    ac__cbor_put_null(&o);
    assert_error_refused(buf, o.len, 100, "error without a name");

    char name[AC__WIRE_MAX_ERROR_NAME + 2];
    memset(name, 'N', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    o = ac__cbor_out_make(buf, sizeof buf); /* a name too long */
    put_error_head(&o, name, "x", 0);
    ac__cbor_put_null(&o);
    assert_error_refused(buf, o.len, 100, "error: text too long");
    name[AC__WIRE_MAX_ERROR_NAME] = '\0'; /* the longest is fine */
    o = ac__cbor_out_make(buf, sizeof buf);
    put_error_head(&o, name, "x", 0);
    ac__cbor_put_null(&o);
    ac_error *ok = ac__wire_decode_error(buf, o.len, 1, NULL);
    assert_non_null(ok);
    assert_string_equal(ac_error_name(ok), name);
    ac_error_release(ok);

    static const struct {
        const char *bytes, *why;
    } cases[] = {
        {"", "truncated"},
        {"d9 69 78 84 61 45 60 80 f6", "expected an error"},      /* another tag */
        {"84 61 45 60 80 f6", "expected an error"},               /* no tag */
        {"d9 69 79 83 61 45 60 80", "error: wrong item count"},
        {"d9 69 79 84 61 45 60 80 f6 00", "trailing bytes"},
        {"d9 69 79 84 41 45 42 61 00 80 f6", "error: text not UTF-8 or with a NUL"},
        {"d9 69 79 84 62 45 00 60 80 f6", "error: text not UTF-8 or with a NUL"},
        {"d9 69 79 84 00 60 80 f6", "error: expected text"},
        {"d9 69 79 84 7f ff 60 80 f6", "indefinite length"},
        {"d9 69 79 84 61 45 60 9f ff f6", "indefinite length"},
        {"d9 69 79 84 61 45 60 80 00", "error: expected null or a cause"},
        {"d9 69 79 84 61 45 60 80 d9 69 79 84 61 45 60 80", "truncated"},
        {"d9 69 79 84 61 45 60 80 d9 69 79 84 61 45 60 80 f6", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t b[64];
        size_t n = hex(cases[i].bytes, b, sizeof b);
        if (cases[i].why) {
            assert_error_refused(b, n, 100, cases[i].why);
        } else {
            ac_error *e = ac__wire_decode_error(b, n, 100, NULL);
            assert_non_null(e); /* E caused by E, both with empty messages */
            assert_non_null(ac_error_cause(e));
            ac_error_release(e);
        }
    }
}

static void test_failed_error_decode_releases_what_it_built(void **state)
{
    (void)state;
    uint8_t buf[512];
    ac__cbor_out o = ac__cbor_out_make(buf, sizeof buf);
    put_error_head(&o, AC_AGGREGATE_ERROR, "seven", 7); /* more than fit inline */
    for (int i = 0; i < 6; i++) {
        put_error_head(&o, "Inner", "with a cause", 0);
        put_leaf_error(&o, "Cause");
    }
    put_error_head(&o, "Broken", "x", 0);
    ac__cbor_put_uint(&o, 5); /* not a cause */
    ac__cbor_put_null(&o);
    assert_error_refused(buf, o.len, 100, "error: expected null or a cause");
    /* LeakSanitizer checks that the six members and their causes went. */
}

static void test_every_error_truncation_is_refused(void **state)
{
    (void)state;
    ac_error *err = ws_mixed_error();
    size_t len;
    uint8_t *buf = ws_encode_error(err, &len);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *prefix = malloc(cut ? cut : 1);
        memcpy(prefix, buf, cut);
        assert_error_refused(prefix, cut, 100, NULL);
        free(prefix);
    }
    for (size_t bit = 0; bit < len * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
        ac_error *e = ac__wire_decode_error(buf, len, 100, NULL);
        ac_error_release(e);
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
    }
    free(buf);
    ac_error_release(err);
    assert_int_equal(ac__wire_encode_error(NULL, NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_and_sender_round_trips),
        cmocka_unit_test(test_a_small_frame_is_as_expected),
        cmocka_unit_test(test_encode_reports_the_size_it_needs),
        cmocka_unit_test(test_encode_refuses_what_it_cannot_write),
        cmocka_unit_test(test_decode_rejects_null_arguments),
        cmocka_unit_test(test_malformed_frames_are_refused),
        cmocka_unit_test(test_every_truncation_is_refused),
        cmocka_unit_test(test_trailing_bytes_are_refused),
        cmocka_unit_test(test_bit_flips_never_crash),
        cmocka_unit_test(test_a_sequence_of_frames_decodes_in_turn),
        cmocka_unit_test(test_a_bad_frame_in_a_sequence_is_refused),
        cmocka_unit_test(test_limits_are_enforced),
        cmocka_unit_test(test_default_text_limit),
        cmocka_unit_test(test_string_payloads),
        cmocka_unit_test(test_string_refusals),
        cmocka_unit_test(test_bytes_payloads),
        cmocka_unit_test(test_int64_payloads),
        cmocka_unit_test(test_error_payload),
        cmocka_unit_test(test_user_type_codec),
        cmocka_unit_test(test_types_without_a_codec),
        cmocka_unit_test(test_builtin_types_by_name),
        cmocka_unit_test(test_frames_from_messages),
        cmocka_unit_test(test_frames_in_place_at_every_size),
        cmocka_unit_test(test_aggregate_of_timeouts),
        cmocka_unit_test(test_nested_causes_and_members),
        cmocka_unit_test(test_error_depth_is_capped),
        cmocka_unit_test(test_error_count_is_capped),
        cmocka_unit_test(test_error_shapes_refused),
        cmocka_unit_test(test_failed_error_decode_releases_what_it_built),
        cmocka_unit_test(test_every_error_truncation_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
