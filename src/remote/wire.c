/*
 * The wire: a frame's envelope (wire.h).
 *
 * Encoding is one pass of the writer (cbor_io.h) over the caller's
 * buffer: what fits is written, the rest is counted, so a short buffer
 * gets the size to retry with. ac__wire_encode_msg writes the message's
 * body in place, behind a head sized for the room left, and moves it down
 * when the body turns out to need a shorter head; no scratch buffer, no
 * second copy of the body.
 *
 * Decoding reads the eleven fields in order, one streaming-decoder call
 * per item, each checked for its kind and limit as it comes: nothing is
 * allocated and nothing copied, the spans point into the frame. The frame
 * has a fixed shape (an array in which only the sender nests, one level),
 * so no depth needs counting here; errors, which nest, are codec.c's.
 */
#include "remote/wire.h"

#include <string.h>

#include "remote/cbor_io.h"

const ac__wire_limits ac__wire_default_limits = {
    .max_frame = 1u << 20,
    .max_text = 1024,
    .max_body = 1u << 20,
    .max_payload = 1u << 20,
    .max_errors = 4096,
};

#define ENVELOPE_FIELDS 11
#define SENDER_LOCAL_ITEMS 2
#define SENDER_REMOTE_ITEMS 5

#define TRY(expr)                                                             \
    do {                                                                      \
        const char *why_ = (expr);                                            \
        if (why_)                                                             \
            return why_;                                                      \
    } while (0)

/* ---- encoding --------------------------------------------------------- */

static bool span_ok(ac__wire_span s) { return s.ptr || s.len == 0; }

static bool sender_ok(const ac__wire_sender *s)
{
    switch (s->kind) {
    case AC__WIRE_SENDER_NONE:
        return true;
    case AC__WIRE_SENDER_LOCAL:
        return span_ok(s->path);
    case AC__WIRE_SENDER_ACTOR:
        return span_ok(s->system) && span_ok(s->address) && span_ok(s->path);
    case AC__WIRE_SENDER_REPLY:
        return span_ok(s->system) && span_ok(s->address);
    }
    return false;
}

/* What every frame needs before its type name is written. */
static bool encodable(const ac__wire_env *env)
{
    return env && env->kind >= AC__WIRE_HELLO && env->kind <= AC__WIRE_KIND_MAX &&
           span_ok(env->target_path) && sender_ok(&env->sender);
}

static void put_span(ac__cbor_out *o, ac__wire_span s) { ac__cbor_put_text(o, s.ptr, s.len); }

static void put_sender(ac__cbor_out *o, const ac__wire_sender *s)
{
    if (s->kind == AC__WIRE_SENDER_NONE) {
        ac__cbor_put_null(o);
        return;
    }
    if (s->kind == AC__WIRE_SENDER_LOCAL) {
        ac__cbor_put_array(o, SENDER_LOCAL_ITEMS);
        ac__cbor_put_uint(o, AC__WIRE_SENDER_LOCAL);
        put_span(o, s->path);
        return;
    }
    ac__cbor_put_array(o, SENDER_REMOTE_ITEMS);
    ac__cbor_put_uint(o, (uint64_t)s->kind);
    put_span(o, s->system);
    put_span(o, s->address);
    ac__cbor_put_uint(o, s->incarnation);
    if (s->kind == AC__WIRE_SENDER_ACTOR)
        put_span(o, s->path);
    else
        ac__cbor_put_uint(o, s->corr);
}

/* The fields before the type name. */
static void put_prefix(ac__cbor_out *o, const ac__wire_env *env)
{
    ac__cbor_put_array(o, ENVELOPE_FIELDS);
    ac__cbor_put_uint(o, AC__WIRE_VERSION);
    ac__cbor_put_uint(o, (uint64_t)env->kind);
    ac__cbor_put_uint(o, env->flags);
    ac__cbor_put_uint(o, env->corr);
    ac__cbor_put_uint(o, env->target_inc);
    put_span(o, env->target_path);
    put_sender(o, &env->sender);
}

size_t ac__wire_encode(const ac__wire_env *env, uint8_t *buf, size_t cap)
{
    if (!encodable(env) || !span_ok(env->type_name) || !span_ok(env->body))
        return 0;
    ac__cbor_out o = ac__cbor_out_make(buf, cap);
    put_prefix(&o, env);
    put_span(&o, env->type_name);
    ac__cbor_put_uint(&o, env->deadline_us);
    ac__cbor_put_uint(&o, env->payload_size);
    ac__cbor_put_bytes(&o, env->body.ptr, env->body.len);
    return o.len;
}

/* The body of `msg` at o's end: encoded behind the longest head the room
 * left could need, then moved down to sit right behind its own head. */
static size_t put_body_in_place(ac__cbor_out *o, const ac_msg *msg)
{
    size_t pos = o->len;
    size_t room = pos <= o->cap ? o->cap - pos : 0;
    size_t gap = ac__cbor_head_size(room);
    uint8_t *at = room > gap ? o->buf + pos + gap : NULL;
    size_t body_room = at ? room - gap : 0;
    uint64_t payload_size;
    size_t len = ac__wire_encode_payload(msg, at, body_room, &payload_size);
    if (len == SIZE_MAX)
        return 0;
    if (len > body_room) /* a retry with this much has room for any head */
        return pos <= SIZE_MAX - 9 && len <= SIZE_MAX - 9 - pos ? pos + 9 + len : SIZE_MAX;
    ac__cbor_put_bytes_head(o, len);
    uint8_t *final = ac__cbor_reserve(o, len);
    if (final && len && final != at)
        memmove(final, at, len);
    return o->len;
}

size_t ac__wire_encode_msg(const ac__wire_env *env, const ac_msg *msg, uint8_t *buf, size_t cap)
{
    if (!encodable(env) || !ac__wire_has_codec(ac_msg_type_of(msg)))
        return 0;
    const char *name = ac_msg_type_name(msg);
    ac__cbor_out o = ac__cbor_out_make(buf, cap);
    put_prefix(&o, env);
    ac__cbor_put_text(&o, name, strlen(name));
    ac__cbor_put_uint(&o, env->deadline_us);
    ac__cbor_put_uint(&o, ac__wire_payload_size(msg));
    return put_body_in_place(&o, msg);
}

/* ---- decoding --------------------------------------------------------- */

static const char *get_span(ac__cbor_in *in, size_t max, ac__wire_span *s)
{
    return ac__cbor_get_text(in, max, &s->ptr, &s->len);
}

/* [1, system, address, incarnation, path] or [2, ..., corr], after the
 * kind. */
static const char *get_remote_sender(ac__cbor_in *in, size_t max_text, ac__wire_sender *s)
{
    TRY(get_span(in, max_text, &s->system));
    TRY(get_span(in, max_text, &s->address));
    TRY(ac__cbor_get_uint(in, &s->incarnation));
    if (s->kind == AC__WIRE_SENDER_ACTOR)
        return get_span(in, max_text, &s->path);
    return ac__cbor_get_uint(in, &s->corr);
}

static const char *get_sender(ac__cbor_in *in, size_t max_text, ac__wire_sender *s)
{
    *s = (ac__wire_sender){.kind = AC__WIRE_SENDER_NONE};
    TRY(ac__cbor_next(in));
    if (in->kind == AC__CBOR_NULL)
        return NULL;
    if (in->kind != AC__CBOR_ARRAY)
        return ac__cbor_wrong(in, "sender: expected null or an array");
    uint64_t items = in->value, kind;
    TRY(ac__cbor_get_uint(in, &kind));
    if (kind == AC__WIRE_SENDER_LOCAL) {
        if (items != SENDER_LOCAL_ITEMS)
            return "sender: wrong item count";
        s->kind = AC__WIRE_SENDER_LOCAL;
        return get_span(in, max_text, &s->path);
    }
    if (kind != AC__WIRE_SENDER_ACTOR && kind != AC__WIRE_SENDER_REPLY)
        return "unknown sender kind";
    if (items != SENDER_REMOTE_ITEMS)
        return "sender: wrong item count";
    s->kind = (ac__wire_sender_kind)kind;
    return get_remote_sender(in, max_text, s);
}

/* Version, kind, flags, corr, target. */
static const char *get_head(ac__cbor_in *in, const ac__wire_limits *lim, ac__wire_env *env)
{
    uint64_t n, v;
    TRY(ac__cbor_get_array(in, &n));
    if (n != ENVELOPE_FIELDS)
        return "wrong envelope length";
    TRY(ac__cbor_get_uint(in, &v));
    if (v != AC__WIRE_VERSION)
        return "unsupported version";
    env->version = (uint32_t)v;
    TRY(ac__cbor_get_uint(in, &v));
    if (v < AC__WIRE_HELLO || v > AC__WIRE_KIND_MAX)
        return "unknown kind";
    env->kind = (ac__wire_kind)v;
    TRY(ac__cbor_get_uint(in, &v));
    if (v > UINT32_MAX)
        return "flags out of range";
    env->flags = (uint32_t)v;
    TRY(ac__cbor_get_uint(in, &env->corr));
    TRY(ac__cbor_get_uint(in, &env->target_inc));
    return get_span(in, lim->max_text, &env->target_path);
}

/* Type name, deadline, payload size, body. */
static const char *get_tail(ac__cbor_in *in, const ac__wire_limits *lim, ac__wire_env *env)
{
    TRY(get_span(in, lim->max_text, &env->type_name));
    TRY(ac__cbor_get_uint(in, &env->deadline_us));
    TRY(ac__cbor_get_uint(in, &env->payload_size));
    if (env->payload_size > lim->max_payload)
        return "payload too large";
    return ac__cbor_get_bytes(in, lim->max_body, &env->body.ptr, &env->body.len);
}

static const char *get_frame(ac__cbor_in *in, const ac__wire_limits *lim, ac__wire_env *env)
{
    TRY(get_head(in, lim, env));
    TRY(get_sender(in, lim->max_text, &env->sender));
    TRY(get_tail(in, lim, env));
    if (env->kind == AC__WIRE_HELLO && env->sender.kind != AC__WIRE_SENDER_ACTOR)
        return "hello without its node";
    return NULL;
}

/* The first frame of buf[0..len): AC_OK with *used its bytes, or the
 * refusal; `whole`: nothing may follow it. */
static int decode_first(const uint8_t *buf, size_t len, const ac__wire_limits *limits,
                        ac__wire_env *env, size_t *used, bool whole, const char **why)
{
    if (!env)
        return ac_set_error(AC_EINVAL, "ac__wire_decode: env is NULL");
    if (!limits)
        limits = &ac__wire_default_limits;
    const char *reason = "frame too large";
    if (len <= limits->max_frame || !whole) {
        ac__cbor_in in = ac__cbor_in_make(buf, len);
        reason = get_frame(&in, limits, env);
        size_t n = (size_t)(in.p - buf);
        if (!reason && n > limits->max_frame)
            reason = "frame too large";
        else if (!reason && whole && n != len)
            reason = "trailing bytes";
        if (!reason) {
            if (used)
                *used = n;
            return AC_OK;
        }
    }
    memset(env, 0, sizeof *env);
    if (why)
        *why = reason;
    return ac_set_error(AC_EPROTO, "wire: frame refused: %s", reason);
}

int ac__wire_decode(const uint8_t *buf, size_t len, const ac__wire_limits *limits,
                    ac__wire_env *env, const char **why)
{
    return decode_first(buf, len, limits, env, NULL, true, why);
}

int ac__wire_decode_next(const uint8_t *buf, size_t len, const ac__wire_limits *limits,
                         ac__wire_env *env, size_t *used, const char **why)
{
    if (!used)
        return ac_set_error(AC_EINVAL, "ac__wire_decode_next: used is NULL");
    return decode_first(buf, len, limits, env, used, false, why);
}
