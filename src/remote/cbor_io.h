/*
 * CBOR items in and out (cbor_io.c), the pieces wire.c and codec.c share.
 *
 * Out: a writer over a caller's buffer that keeps counting once the
 * buffer is full, so that one pass both writes what fits and learns the
 * size a retry needs. Heads are written in their shortest form.
 *
 * In: a reader that takes one item at a time (definite heads of integers,
 * strings and arrays itself, anything else through cbor_stream_decode)
 * and keeps what it saw (kind, value, span into the input). A string is a
 * span of the input, never a copy. Each read returns NULL or
 * a static reason; the typed reads check the kind and the limits.
 */
#ifndef AC_REMOTE_CBOR_IO_H
#define AC_REMOTE_CBOR_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- out -------------------------------------------------------------- */

typedef struct ac__cbor_out {
    uint8_t *buf;
    size_t cap;
    size_t len; /* bytes the items so far need; past cap once they stop fitting */
} ac__cbor_out;

static inline ac__cbor_out ac__cbor_out_make(uint8_t *buf, size_t cap)
{
    return (ac__cbor_out){.buf = buf, .cap = buf ? cap : 0, .len = 0};
}

/* The bytes of a head carrying `v`: 1, 2, 3, 5 or 9. */
static inline size_t ac__cbor_head_size(uint64_t v)
{
    return v < 24 ? 1 : v <= UINT8_MAX ? 2 : v <= UINT16_MAX ? 3 : v <= UINT32_MAX ? 5 : 9;
}

/* Where `n` more bytes go, or NULL when they do not fit (len still
 * counts them; it saturates rather than wrap). */
static inline uint8_t *ac__cbor_reserve(ac__cbor_out *o, size_t n)
{
    uint8_t *at = o->buf && o->len <= o->cap && n <= o->cap - o->len ? o->buf + o->len : NULL;
    o->len = n <= SIZE_MAX - o->len ? o->len + n : SIZE_MAX;
    return at;
}

/* A head of major type `major` carrying v, in its shortest form (RFC 8949
 * section 3: the argument in the initial byte below 24, else in the 1, 2,
 * 4 or 8 bytes that follow, big-endian). */
static inline void ac__cbor_put_head(ac__cbor_out *o, unsigned major, uint64_t v)
{
    size_t n = ac__cbor_head_size(v);
    uint8_t *at = ac__cbor_reserve(o, n);
    if (!at)
        return;
    uint8_t m = (uint8_t)(major << 5);
    switch (n) {
    case 1:
        at[0] = (uint8_t)(m | v);
        return;
    case 2:
        at[0] = m | 24;
        at[1] = (uint8_t)v;
        return;
    case 3:
        at[0] = m | 25;
        at[1] = (uint8_t)(v >> 8);
        at[2] = (uint8_t)v;
        return;
    case 5:
        at[0] = m | 26;
        for (int i = 0; i < 4; i++)
            at[1 + i] = (uint8_t)(v >> (24 - 8 * i));
        return;
    default:
        at[0] = m | 27;
        for (int i = 0; i < 8; i++)
            at[1 + i] = (uint8_t)(v >> (56 - 8 * i));
        return;
    }
}

static inline void ac__cbor_put_raw(ac__cbor_out *o, const void *s, size_t n)
{
    uint8_t *at = ac__cbor_reserve(o, n);
    if (at && n)
        memcpy(at, s, n);
}

static inline void ac__cbor_put_uint(ac__cbor_out *o, uint64_t v) { ac__cbor_put_head(o, 0, v); }
/* The integer -1 - v. */
static inline void ac__cbor_put_negint(ac__cbor_out *o, uint64_t v) { ac__cbor_put_head(o, 1, v); }
static inline void ac__cbor_put_array(ac__cbor_out *o, size_t n) { ac__cbor_put_head(o, 4, n); }
static inline void ac__cbor_put_tag(ac__cbor_out *o, uint64_t tag) { ac__cbor_put_head(o, 6, tag); }
/* The head of a byte string of n bytes, the bytes to follow. */
static inline void ac__cbor_put_bytes_head(ac__cbor_out *o, size_t n)
{
    ac__cbor_put_head(o, 2, n);
}

static inline void ac__cbor_put_null(ac__cbor_out *o)
{
    uint8_t *at = ac__cbor_reserve(o, 1);
    if (at)
        at[0] = 0xf6; /* major 7, simple value 22 */
}

static inline void ac__cbor_put_text(ac__cbor_out *o, const void *s, size_t n)
{
    ac__cbor_put_head(o, 3, n);
    ac__cbor_put_raw(o, s, n);
}

static inline void ac__cbor_put_bytes(ac__cbor_out *o, const void *s, size_t n)
{
    ac__cbor_put_head(o, 2, n);
    ac__cbor_put_raw(o, s, n);
}

/* ---- in --------------------------------------------------------------- */

typedef enum ac__cbor_kind {
    AC__CBOR_UINT,
    AC__CBOR_NEGINT, /* value v stands for -1 - v */
    AC__CBOR_BYTES,
    AC__CBOR_TEXT,
    AC__CBOR_ARRAY,
    AC__CBOR_MAP,
    AC__CBOR_TAG,
    AC__CBOR_NULL,
    AC__CBOR_INDEFINITE, /* an indefinite-length start or a break */
    AC__CBOR_OTHER       /* floats, booleans, undefined */
} ac__cbor_kind;

typedef struct ac__cbor_in {
    const uint8_t *p, *end;
    /* The last item read. */
    ac__cbor_kind kind;
    uint64_t value;      /* an integer, a count, a tag or a string's length */
    const uint8_t *str;  /* a string's bytes */
} ac__cbor_in;

static inline ac__cbor_in ac__cbor_in_make(const uint8_t *buf, size_t len)
{
    return (ac__cbor_in){.p = buf, .end = buf ? buf + len : buf};
}

static inline size_t ac__cbor_left(const ac__cbor_in *in) { return (size_t)(in->end - in->p); }

/* Any item but the definite heads of majors 0 to 4: through libcbor. */
const char *ac__cbor_next_other(ac__cbor_in *in);

/* The next item, whatever it is: NULL, or "truncated" or "malformed".
 * Integers, strings and arrays of definite length, nearly all a frame
 * holds, are read here: the head and, for a string, its bytes, which
 * must lie within the input (as libcbor checks). */
static inline const char *ac__cbor_next(ac__cbor_in *in)
{
    if (in->p == in->end)
        return "truncated";
    unsigned major = *in->p >> 5, info = *in->p & 31u;
    if (major > 4 || info >= 28)
        return ac__cbor_next_other(in);
    size_t extra = info < 24 ? 0 : (size_t)1 << (info - 24);
    if (ac__cbor_left(in) - 1 < extra)
        return "truncated";
    uint64_t v = info < 24 ? info : 0;
    for (size_t i = 1; i <= extra; i++)
        v = v << 8 | in->p[i];
    const uint8_t *after = in->p + 1 + extra;
    if (major == 2 || major == 3) {
        if (v > (uint64_t)(in->end - after))
            return "truncated";
        in->str = after;
        after += v;
    }
    static const ac__cbor_kind kind[5] = {AC__CBOR_UINT, AC__CBOR_NEGINT, AC__CBOR_BYTES,
                                          AC__CBOR_TEXT, AC__CBOR_ARRAY};
    in->kind = kind[major];
    in->value = v;
    in->p = after;
    return NULL;
}

/* The reason an item of the last kind read is not the `wanted` one. */
static inline const char *ac__cbor_wrong(const ac__cbor_in *in, const char *wanted)
{
    return in->kind == AC__CBOR_INDEFINITE ? "indefinite length" : wanted;
}

/* Valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF) with no NUL in it. */
bool ac__utf8_ok(const uint8_t *s, size_t n);

/* The next item, which must be of these kinds; NULL or a reason. */
static inline const char *ac__cbor_get_uint(ac__cbor_in *in, uint64_t *v)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_UINT)
        return ac__cbor_wrong(in, "expected an unsigned integer");
    *v = in->value;
    return NULL;
}

static inline const char *ac__cbor_get_array(ac__cbor_in *in, uint64_t *n)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_ARRAY)
        return ac__cbor_wrong(in, "expected an array");
    *n = in->value;
    return NULL;
}

/* Text: UTF-8 without NUL, at most max bytes. */
static inline const char *ac__cbor_get_text(ac__cbor_in *in, size_t max, const uint8_t **s,
                                            size_t *n)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_TEXT)
        return ac__cbor_wrong(in, "expected text");
    if (in->value > max)
        return "text too long";
    if (!ac__utf8_ok(in->str, (size_t)in->value))
        return "text not UTF-8 or with a NUL";
    *s = in->str;
    *n = (size_t)in->value;
    return NULL;
}

static inline const char *ac__cbor_get_bytes(ac__cbor_in *in, size_t max, const uint8_t **s,
                                             size_t *n)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_BYTES)
        return ac__cbor_wrong(in, "expected a byte string");
    if (in->value > max)
        return "body too large";
    *s = in->str;
    *n = (size_t)in->value;
    return NULL;
}

#endif
