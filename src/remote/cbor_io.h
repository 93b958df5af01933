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

void ac__cbor_put_uint(ac__cbor_out *o, uint64_t v);
void ac__cbor_put_negint(ac__cbor_out *o, uint64_t v); /* the integer -1 - v */
void ac__cbor_put_array(ac__cbor_out *o, size_t n);
void ac__cbor_put_tag(ac__cbor_out *o, uint64_t tag);
void ac__cbor_put_null(ac__cbor_out *o);
void ac__cbor_put_text(ac__cbor_out *o, const void *s, size_t n);
void ac__cbor_put_bytes(ac__cbor_out *o, const void *s, size_t n);
/* The head of a byte string of n bytes, the bytes to follow. */
void ac__cbor_put_bytes_head(ac__cbor_out *o, size_t n);

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

/* The next item, whatever it is: NULL, or "truncated" or "malformed". */
const char *ac__cbor_next(ac__cbor_in *in);
/* The next item, which must be of these kinds; NULL or a reason. */
const char *ac__cbor_get_uint(ac__cbor_in *in, uint64_t *v);
const char *ac__cbor_get_array(ac__cbor_in *in, uint64_t *n);
/* Text: UTF-8 without NUL, at most max bytes. */
const char *ac__cbor_get_text(ac__cbor_in *in, size_t max, const uint8_t **s, size_t *n);
const char *ac__cbor_get_bytes(ac__cbor_in *in, size_t max, const uint8_t **s, size_t *n);
/* The reason an item of the last kind read is not the `wanted` one. */
const char *ac__cbor_wrong(const ac__cbor_in *in, const char *wanted);

/* Valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF) with no NUL in it. */
bool ac__utf8_ok(const uint8_t *s, size_t n);

#endif
