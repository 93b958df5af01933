/*
 * Payload codecs and errors on the wire (wire.h).
 *
 * A message type's codec is found by the type's address: the four
 * built-in types have their own, any other type the pair of hooks it
 * carries. A decoded payload is a new message made the way its type's
 * constructor makes it (ac_msg_bytes_new, ac_msg_int64_new,
 * ac_msg_error_new, ac_msg_new plus the type's decode hook), so that a
 * message from the wire is indistinguishable from a local one.
 *
 * Errors are built bottom up with the public constructors: members and
 * cause first, then the error that holds them, which retains them. Only
 * two shapes of error exist (ac_error_aggregate's: members and no cause;
 * ac_error_new_caused's: a cause or none, no members), so a frame with
 * any other shape is refused rather than approximated. Decoding recurses
 * once per level of nesting, and the levels are capped at
 * AC_ERROR_MAX_DEPTH before anything of a deeper error is read; the total
 * count of errors is a budget spent as each one starts, and a member
 * count is checked against it (and against the bytes left) before the
 * members' array is allocated. A failure anywhere releases what the
 * levels above it had built, on the way out.
 *
 * An error's name or message whose bytes are not UTF-8 (a C string may
 * hold anything but NUL) travels as a byte string instead of text, so
 * that every error crosses the wire as it is.
 */
#include "remote/wire.h"

#include <stdlib.h>
#include <string.h>

#include "remote/cbor_io.h"

/* The fields of an error item, and the fewest bytes one can take: tag (3),
 * array (1), name (2), message (1), members (1), null (1). */
#define ERROR_FIELDS 4
#define MIN_ERROR_BYTES 9
/* Members held without an allocation. */
#define SMALL_MEMBERS 4

typedef enum codec {
    CODEC_NONE,
    CODEC_STRING,
    CODEC_BYTES,
    CODEC_INT64,
    CODEC_ERROR,
    CODEC_HOOKS
} codec;

static codec codec_of(const ac_msg_type *type)
{
    if (!type)
        return CODEC_NONE;
    if (type == &ac_msg_type_str)
        return CODEC_STRING;
    if (type == &ac_msg_type_bytes)
        return CODEC_BYTES;
    if (type == &ac_msg_type_int64)
        return CODEC_INT64;
    if (type == &ac_msg_type_error)
        return CODEC_ERROR;
    return type->encode && type->decode ? CODEC_HOOKS : CODEC_NONE;
}

static bool span_is(ac__wire_span s, const char *name)
{
    size_t n = strlen(name);
    return s.len == n && (n == 0 || memcmp(s.ptr, name, n) == 0);
}

const ac_msg_type *ac__wire_builtin_type(ac__wire_span name)
{
    static const ac_msg_type *const builtins[] = {&ac_msg_type_str, &ac_msg_type_bytes,
                                                  &ac_msg_type_int64, &ac_msg_type_error};
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (span_is(name, builtins[i]->name))
            return builtins[i];
    return NULL;
}

bool ac__wire_has_codec(const ac_msg_type *type) { return codec_of(type) != CODEC_NONE; }

/* A failure to report: its static reason and its status. */
typedef struct refusal {
    const char *why;
    ac_status status;
} refusal;

static void *refuse(refusal *r, ac_status status, const char *why)
{
    r->why = why;
    r->status = status;
    return NULL;
}

/* ---- encoding payloads ------------------------------------------------ */

/* The error an error message carries, or NULL when msg is not shaped as
 * ac_msg_error_new makes one. */
static const ac_error *error_in(const ac_msg *msg)
{
    ac_error *err = NULL;
    if (ac_msg_size(msg) == sizeof err)
        memcpy(&err, ac_msg_data(msg), sizeof err);
    return err;
}

static size_t string_len(const ac_msg *msg)
{
    return strnlen(ac_msg_data(msg), ac_msg_size(msg));
}

uint64_t ac__wire_payload_size(const ac_msg *msg)
{
    switch (codec_of(ac_msg_type_of(msg))) {
    case CODEC_STRING:
        return (uint64_t)string_len(msg) + 1;
    case CODEC_INT64:
        return sizeof(int64_t);
    case CODEC_BYTES:
    case CODEC_HOOKS:
        return ac_msg_size(msg);
    default:
        return 0;
    }
}

static size_t put_raw(uint8_t *buf, size_t cap, const void *data, size_t n)
{
    if (buf && n <= cap && n)
        memcpy(buf, data, n);
    return n;
}

static size_t encode_string(const ac_msg *msg, uint8_t *buf, size_t cap)
{
    size_t n = string_len(msg);
    if (!ac__utf8_ok(ac_msg_data(msg), n))
        return SIZE_MAX;
    return put_raw(buf, cap, ac_msg_data(msg), n);
}

static size_t encode_int64(const ac_msg *msg, uint8_t *buf, size_t cap)
{
    int64_t v;
    if (ac_msg_size(msg) != sizeof v)
        return SIZE_MAX;
    memcpy(&v, ac_msg_data(msg), sizeof v);
    ac__cbor_out o = ac__cbor_out_make(buf, cap);
    if (v >= 0)
        ac__cbor_put_uint(&o, (uint64_t)v);
    else
        ac__cbor_put_negint(&o, (uint64_t)(-1 - v));
    return o.len;
}

static size_t encode_error_msg(const ac_msg *msg, uint8_t *buf, size_t cap)
{
    const ac_error *err = error_in(msg);
    return err ? ac__wire_encode_error(err, buf, cap) : SIZE_MAX;
}

static size_t encode_body(const ac_msg *msg, uint8_t *buf, size_t cap)
{
    const ac_msg_type *type = ac_msg_type_of(msg);
    switch (codec_of(type)) {
    case CODEC_STRING:
        return encode_string(msg, buf, cap);
    case CODEC_BYTES:
        return put_raw(buf, cap, ac_msg_data(msg), ac_msg_size(msg));
    case CODEC_INT64:
        return encode_int64(msg, buf, cap);
    case CODEC_ERROR:
        return encode_error_msg(msg, buf, cap);
    case CODEC_HOOKS:
        return type->encode(ac_msg_data(msg), ac_msg_size(msg), buf, cap);
    default:
        return SIZE_MAX;
    }
}

size_t ac__wire_encode_payload(const ac_msg *msg, uint8_t *buf, size_t cap, uint64_t *payload_size)
{
    size_t need = encode_body(msg, buf, buf ? cap : 0);
    if (payload_size)
        *payload_size = need == SIZE_MAX ? 0 : ac__wire_payload_size(msg);
    return need;
}

/* ---- errors ------------------------------------------------------------ */

static void put_error_string(ac__cbor_out *o, const char *s)
{
    size_t n = strlen(s);
    if (ac__utf8_ok((const uint8_t *)s, n))
        ac__cbor_put_text(o, s, n);
    else
        ac__cbor_put_bytes(o, s, n);
}

/* Recursion as deep as the error nests: at most AC_ERROR_MAX_DEPTH. */
static void put_error(ac__cbor_out *o, const ac_error *err)
{
    size_t n = ac_error_member_count(err);
    const ac_error *cause = ac_error_cause(err);
    ac__cbor_put_tag(o, AC__WIRE_ERROR_TAG);
    ac__cbor_put_array(o, ERROR_FIELDS);
    put_error_string(o, ac_error_name(err));
    put_error_string(o, ac_error_message(err));
    ac__cbor_put_array(o, n);
    for (size_t i = 0; i < n; i++)
        put_error(o, ac_error_member(err, i));
    if (cause)
        put_error(o, cause);
    else
        ac__cbor_put_null(o);
}

size_t ac__wire_encode_error(const ac_error *err, uint8_t *buf, size_t cap)
{
    if (!err)
        return 0;
    ac__cbor_out o = ac__cbor_out_make(buf, cap);
    put_error(&o, err);
    return o.len;
}

/* An error being decoded: the input, what may still be built, how it
 * failed, and room for one name (copied out of the frame right before
 * the error named is built, after its parts). */
typedef struct error_reader {
    ac__cbor_in in;
    size_t budget; /* errors that may still start */
    refusal refused;
    char name[AC__WIRE_MAX_ERROR_NAME + 1];
} error_reader;

/* What one error is made of, as read so far. */
typedef struct error_parts {
    const uint8_t *name, *message;
    size_t name_len, message_len;
    ac_error **members;
    size_t n; /* members built so far */
    ac_error *small[SMALL_MEMBERS];
    ac_error *cause;
} error_parts;

static ac_error *read_error_body(error_reader *r, unsigned level);

static void parts_release(error_parts *p)
{
    for (size_t i = 0; i < p->n; i++)
        ac_error_release(p->members[i]);
    if (p->members != p->small)
        free(p->members);
    ac_error_release(p->cause);
}

static const char *get_error_string(ac__cbor_in *in, size_t max, const uint8_t **s, size_t *n)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_TEXT && in->kind != AC__CBOR_BYTES)
        return ac__cbor_wrong(in, "error: expected text");
    if (in->value > max)
        return "error: text too long";
    size_t len = (size_t)in->value;
    if (in->kind == AC__CBOR_TEXT ? !ac__utf8_ok(in->str, len) : memchr(in->str, 0, len) != NULL)
        return "error: text not UTF-8 or with a NUL";
    *s = in->str;
    *n = len;
    return NULL;
}

static bool is_aggregate(const error_parts *p)
{
    ac__wire_span name = {p->name, p->name_len};
    return span_is(name, AC_AGGREGATE_ERROR);
}

/* The tag that starts an error item, already read: is it one? */
static bool at_error_tag(const ac__cbor_in *in)
{
    return in->kind == AC__CBOR_TAG && in->value == AC__WIRE_ERROR_TAG;
}

/* An error item: the tag, then the body. */
static ac_error *read_error(error_reader *r, unsigned level)
{
    const char *why = ac__cbor_next(&r->in);
    if (why)
        return refuse(&r->refused, AC_EPROTO, why);
    if (!at_error_tag(&r->in))
        return refuse(&r->refused, AC_EPROTO, ac__cbor_wrong(&r->in, "expected an error"));
    return read_error_body(r, level);
}

/* [name, message, and the members' count. */
static const char *read_head(error_reader *r, error_parts *p, uint64_t *members)
{
    uint64_t fields;
    const char *why = ac__cbor_get_array(&r->in, &fields);
    if (!why && fields != ERROR_FIELDS)
        why = "error: wrong item count";
    if (!why)
        why = get_error_string(&r->in, AC__WIRE_MAX_ERROR_NAME, &p->name, &p->name_len);
    if (!why && p->name_len == 0)
        why = "error without a name";
    if (!why)
        why = get_error_string(&r->in, AC__WIRE_MAX_ERROR_MESSAGE, &p->message, &p->message_len);
    if (!why)
        why = ac__cbor_get_array(&r->in, members);
    return why;
}

/* Is there room for n members? Checked against the budget and the bytes
 * left before anything is allocated for them. */
static const char *members_room(const error_reader *r, const error_parts *p, uint64_t n)
{
    if (n > r->budget)
        return "too many errors";
    if (n > ac__cbor_left(&r->in) / MIN_ERROR_BYTES)
        return "truncated";
    if (n && !is_aggregate(p))
        return "error: members on an error that is not an AggregateError";
    return NULL;
}

static bool alloc_members(error_reader *r, error_parts *p, uint64_t n)
{
    if (n <= SMALL_MEMBERS)
        return true;
    ac_error **members = malloc((size_t)n * sizeof *members);
    if (!members) {
        refuse(&r->refused, AC_ENOMEM, "out of memory");
        return false;
    }
    p->members = members;
    return true;
}

static bool read_members(error_reader *r, error_parts *p, uint64_t n, unsigned level)
{
    while (p->n < n) {
        ac_error *m = read_error(r, level + 1);
        if (!m)
            return false;
        p->members[p->n++] = m;
    }
    return true;
}

/* The cause: null, or an error item; an aggregate has none. */
static bool read_cause(error_reader *r, error_parts *p, unsigned level)
{
    const char *why = ac__cbor_next(&r->in);
    if (!why && r->in.kind == AC__CBOR_NULL)
        return true;
    if (!why && !at_error_tag(&r->in))
        why = ac__cbor_wrong(&r->in, "error: expected null or a cause");
    if (!why && p->n)
        why = "error: an AggregateError with a cause";
    if (why) {
        refuse(&r->refused, AC_EPROTO, why);
        return false;
    }
    p->cause = read_error_body(r, level + 1);
    return p->cause != NULL;
}

/* The error the parts make; the parts are released either way. */
static ac_error *build(error_reader *r, error_parts *p)
{
    memcpy(r->name, p->name, p->name_len);
    r->name[p->name_len] = '\0';
    const char *message = p->message_len ? (const char *)p->message : "";
    int len = (int)p->message_len;
    ac_error *err = p->n ? ac_error_aggregate(p->members, p->n, "%.*s", len, message)
                         : ac_error_new_caused(r->name, p->cause, "%.*s", len, message);
    parts_release(p);
    return err ? err : refuse(&r->refused, AC_ENOMEM, "out of memory");
}

/* An error whose tag has been read, at `level` (the outermost is 1). */
static ac_error *read_error_body(error_reader *r, unsigned level)
{
    if (level > AC_ERROR_MAX_DEPTH)
        return refuse(&r->refused, AC_EPROTO, "error nests too deep");
    if (r->budget == 0)
        return refuse(&r->refused, AC_EPROTO, "too many errors");
    r->budget--;
    error_parts p = {.n = 0};
    p.members = p.small;
    uint64_t n;
    const char *why = read_head(r, &p, &n);
    if (!why)
        why = members_room(r, &p, n);
    if (why)
        return refuse(&r->refused, AC_EPROTO, why);
    if (!alloc_members(r, &p, n))
        return NULL;
    if (!read_members(r, &p, n, level) || !read_cause(r, &p, level)) {
        parts_release(&p);
        return NULL;
    }
    return build(r, &p);
}

static ac_error *error_from(const uint8_t *buf, size_t len, size_t max_errors, refusal *out)
{
    error_reader r = {.in = ac__cbor_in_make(buf, len)};
    r.budget = max_errors < AC_ERROR_MAX_NODES ? max_errors : AC_ERROR_MAX_NODES;
    ac_error *err = read_error(&r, 1);
    if (err && r.in.p != r.in.end) {
        ac_error_release(err);
        err = refuse(&r.refused, AC_EPROTO, "trailing bytes");
    }
    if (!err)
        *out = r.refused;
    return err;
}

ac_error *ac__wire_decode_error(const uint8_t *buf, size_t len, size_t max_errors, const char **why)
{
    refusal r;
    ac_error *err = error_from(buf, len, max_errors, &r);
    if (err)
        return err;
    if (why)
        *why = r.why;
    ac_set_error(r.status, "wire: error refused: %s", r.why);
    return NULL;
}

/* ---- decoding payloads ------------------------------------------------ */

static const char *const SIZE_MISMATCH = "payload size does not match the body";

static ac_msg *decode_string(const uint8_t *body, size_t len, uint64_t payload_size, refusal *r)
{
    if (payload_size != (uint64_t)len + 1)
        return refuse(r, AC_EPROTO, SIZE_MISMATCH);
    if (!ac__utf8_ok(body, len))
        return refuse(r, AC_EPROTO, "text not UTF-8 or with a NUL");
    ac_msg *msg = ac_msg_new(&ac_msg_type_str, len + 1); /* zeroed: the NUL is there */
    if (!msg)
        return refuse(r, AC_ENOMEM, "out of memory");
    if (len)
        memcpy(ac_msg_payload(msg), body, len);
    return msg;
}

static ac_msg *decode_bytes(const uint8_t *body, size_t len, uint64_t payload_size, refusal *r)
{
    if (payload_size != len)
        return refuse(r, AC_EPROTO, SIZE_MISMATCH);
    ac_msg *msg = ac_msg_bytes_new(body, len);
    return msg ? msg : refuse(r, AC_ENOMEM, "out of memory");
}

/* One CBOR integer within int64, and nothing after it. */
static const char *get_int64(const uint8_t *body, size_t len, int64_t *v)
{
    ac__cbor_in in = ac__cbor_in_make(body, len);
    const char *why = ac__cbor_next(&in);
    if (why)
        return why;
    if (in.kind != AC__CBOR_UINT && in.kind != AC__CBOR_NEGINT)
        return ac__cbor_wrong(&in, "expected an integer");
    if (in.value > INT64_MAX)
        return "integer out of range";
    *v = in.kind == AC__CBOR_UINT ? (int64_t)in.value : -1 - (int64_t)in.value;
    return in.p == in.end ? NULL : "trailing bytes";
}

static ac_msg *decode_int64(const uint8_t *body, size_t len, uint64_t payload_size, refusal *r)
{
    int64_t v = 0;
    if (payload_size != sizeof v)
        return refuse(r, AC_EPROTO, SIZE_MISMATCH);
    const char *why = get_int64(body, len, &v);
    if (why)
        return refuse(r, AC_EPROTO, why);
    ac_msg *msg = ac_msg_int64_new(v);
    return msg ? msg : refuse(r, AC_ENOMEM, "out of memory");
}

static ac_msg *decode_error_msg(const uint8_t *body, size_t len, uint64_t payload_size,
                                size_t max_errors, refusal *r)
{
    if (payload_size != 0)
        return refuse(r, AC_EPROTO, SIZE_MISMATCH);
    ac_error *err = error_from(body, len, max_errors, r);
    if (!err)
        return NULL;
    ac_msg *msg = ac_msg_error_new(err); /* consumes err, also when it fails */
    return msg ? msg : refuse(r, AC_ENOMEM, "out of memory");
}

static ac_msg *decode_with_hooks(const ac_msg_type *type, const uint8_t *body, size_t len,
                                 uint64_t payload_size, refusal *r)
{
    ac_msg *msg = ac_msg_new(type, (size_t)payload_size);
    if (!msg)
        return refuse(r, AC_ENOMEM, "could not allocate the payload");
    if (type->decode(body, len, ac_msg_payload(msg), (size_t)payload_size) != AC_OK) {
        ac_msg_release(msg);
        return refuse(r, AC_EPROTO, "the type's decoder refused the body");
    }
    return msg;
}

static ac_msg *decode_body(const ac_msg_type *type, const uint8_t *body, size_t len,
                           uint64_t payload_size, const ac__wire_limits *limits, refusal *r)
{
    if (len > limits->max_body)
        return refuse(r, AC_EPROTO, "body too large");
    if (payload_size > limits->max_payload)
        return refuse(r, AC_EPROTO, "payload too large");
    if (!body && len)
        return refuse(r, AC_EINVAL, "body is NULL");
    switch (codec_of(type)) {
    case CODEC_STRING:
        return decode_string(body, len, payload_size, r);
    case CODEC_BYTES:
        return decode_bytes(body, len, payload_size, r);
    case CODEC_INT64:
        return decode_int64(body, len, payload_size, r);
    case CODEC_ERROR:
        return decode_error_msg(body, len, payload_size, limits->max_errors, r);
    case CODEC_HOOKS:
        return decode_with_hooks(type, body, len, payload_size, r);
    default:
        return refuse(r, AC_ECODEC, "the message type has no codec");
    }
}

ac_msg *ac__wire_decode_payload(const ac_msg_type *type, const uint8_t *body, size_t len,
                                uint64_t payload_size, const ac__wire_limits *limits,
                                const char **why)
{
    refusal r;
    ac_msg *msg = type ? decode_body(type, body, len, payload_size,
                                     limits ? limits : &ac__wire_default_limits, &r)
                       : refuse(&r, AC_EINVAL, "message type is NULL");
    if (msg)
        return msg;
    if (why)
        *why = r.why;
    ac_set_error(r.status, "wire: payload refused: %s (%s)", r.why,
                 type && type->name ? type->name : "no type");
    return NULL;
}
