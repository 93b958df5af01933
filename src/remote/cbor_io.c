/*
 * CBOR items in and out (cbor_io.h).
 *
 * Writing: every put reserves its bytes first; what does not fit is only
 * counted, so a short buffer costs one pass, never an overrun. Heads are
 * written here, in the shortest form (the size ac__cbor_head_size
 * predicts): a frame is a handful of heads, and a call into libcbor per
 * head cost more than the head.
 *
 * Reading: the heads of integers, strings and arrays of definite length
 * (all but the rarest items of a frame) are read here, a string's bytes
 * checked to lie within the input; any other item goes to
 * cbor_stream_decode, which decodes one item per call and reports it
 * through a callback. The callbacks only record the item in the reader,
 * so the caller decides, item by item, what the frame may hold. Either
 * way a span recorded here is always inside the input.
 */
#include "remote/cbor_io.h"

#include <string.h>

#include <cbor.h>

/* ---- out -------------------------------------------------------------- */

/* A head of major type `major` carrying v, in its shortest form (RFC 8949
 * section 3: the argument in the initial byte below 24, else in the 1, 2,
 * 4 or 8 bytes that follow, big-endian). */
static void put_head(ac__cbor_out *o, unsigned major, uint64_t v)
{
    size_t n = ac__cbor_head_size(v);
    uint8_t *at = ac__cbor_reserve(o, n);
    if (!at)
        return;
    uint8_t m = (uint8_t)(major << 5);
    if (n == 1) {
        at[0] = (uint8_t)(m | v);
        return;
    }
    at[0] = (uint8_t)(m | (n == 2 ? 24 : n == 3 ? 25 : n == 5 ? 26 : 27));
    for (size_t i = n - 1; i >= 1; i--, v >>= 8)
        at[i] = (uint8_t)v;
}

void ac__cbor_put_uint(ac__cbor_out *o, uint64_t v) { put_head(o, 0, v); }
void ac__cbor_put_negint(ac__cbor_out *o, uint64_t v) { put_head(o, 1, v); }
void ac__cbor_put_array(ac__cbor_out *o, size_t n) { put_head(o, 4, n); }
void ac__cbor_put_tag(ac__cbor_out *o, uint64_t tag) { put_head(o, 6, tag); }
void ac__cbor_put_bytes_head(ac__cbor_out *o, size_t n) { put_head(o, 2, n); }

void ac__cbor_put_null(ac__cbor_out *o)
{
    uint8_t *at = ac__cbor_reserve(o, 1);
    if (at)
        at[0] = 0xf6; /* major 7, simple value 22 */
}

static void put_raw(ac__cbor_out *o, const void *s, size_t n)
{
    uint8_t *at = ac__cbor_reserve(o, n);
    if (at && n)
        memcpy(at, s, n);
}

void ac__cbor_put_text(ac__cbor_out *o, const void *s, size_t n)
{
    put_head(o, 3, n);
    put_raw(o, s, n);
}

void ac__cbor_put_bytes(ac__cbor_out *o, const void *s, size_t n)
{
    put_head(o, 2, n);
    put_raw(o, s, n);
}

/* ---- in --------------------------------------------------------------- */

static void on_item(void *ctx, ac__cbor_kind kind, uint64_t value)
{
    ac__cbor_in *in = ctx;
    in->kind = kind;
    in->value = value;
}

static void on_uint8(void *ctx, uint8_t v) { on_item(ctx, AC__CBOR_UINT, v); }
static void on_uint16(void *ctx, uint16_t v) { on_item(ctx, AC__CBOR_UINT, v); }
static void on_uint32(void *ctx, uint32_t v) { on_item(ctx, AC__CBOR_UINT, v); }
static void on_uint64(void *ctx, uint64_t v) { on_item(ctx, AC__CBOR_UINT, v); }
static void on_negint8(void *ctx, uint8_t v) { on_item(ctx, AC__CBOR_NEGINT, v); }
static void on_negint16(void *ctx, uint16_t v) { on_item(ctx, AC__CBOR_NEGINT, v); }
static void on_negint32(void *ctx, uint32_t v) { on_item(ctx, AC__CBOR_NEGINT, v); }
static void on_negint64(void *ctx, uint64_t v) { on_item(ctx, AC__CBOR_NEGINT, v); }
static void on_array(void *ctx, size_t n) { on_item(ctx, AC__CBOR_ARRAY, n); }
static void on_map(void *ctx, size_t n) { on_item(ctx, AC__CBOR_MAP, n); }
static void on_tag(void *ctx, uint64_t tag) { on_item(ctx, AC__CBOR_TAG, tag); }
static void on_null(void *ctx) { on_item(ctx, AC__CBOR_NULL, 0); }
static void on_indefinite(void *ctx) { on_item(ctx, AC__CBOR_INDEFINITE, 0); }
static void on_other(void *ctx) { on_item(ctx, AC__CBOR_OTHER, 0); }
static void on_float(void *ctx, float v) { (void)v, on_other(ctx); }
static void on_double(void *ctx, double v) { (void)v, on_other(ctx); }
static void on_bool(void *ctx, bool v) { (void)v, on_other(ctx); }

static void on_string(void *ctx, ac__cbor_kind kind, cbor_data s, size_t n)
{
    ac__cbor_in *in = ctx;
    on_item(ctx, kind, n);
    in->str = s;
}

static void on_bytes(void *ctx, cbor_data s, size_t n) { on_string(ctx, AC__CBOR_BYTES, s, n); }
static void on_text(void *ctx, cbor_data s, size_t n) { on_string(ctx, AC__CBOR_TEXT, s, n); }

/* libcbor 0.8 names the definite string callbacks `byte_string` and
 * `string`, and the indefinite starts `byte_string_start` and
 * `string_start` (its header's comments have them the other way round). */
static const struct cbor_callbacks callbacks = {
    .uint8 = on_uint8,
    .uint16 = on_uint16,
    .uint32 = on_uint32,
    .uint64 = on_uint64,
    .negint8 = on_negint8,
    .negint16 = on_negint16,
    .negint32 = on_negint32,
    .negint64 = on_negint64,
    .byte_string = on_bytes,
    .byte_string_start = on_indefinite,
    .string = on_text,
    .string_start = on_indefinite,
    .array_start = on_array,
    .indef_array_start = on_indefinite,
    .map_start = on_map,
    .indef_map_start = on_indefinite,
    .tag = on_tag,
    .float2 = on_float,
    .float4 = on_float,
    .float8 = on_double,
    .undefined = on_other,
    .null = on_null,
    .boolean = on_bool,
    .indef_break = on_indefinite,
};

/* The kinds of majors 0 to 4, which the reader takes itself. */
static const ac__cbor_kind direct_kind[5] = {AC__CBOR_UINT, AC__CBOR_NEGINT, AC__CBOR_BYTES,
                                             AC__CBOR_TEXT, AC__CBOR_ARRAY};

const char *ac__cbor_next(ac__cbor_in *in)
{
    if (in->p == in->end)
        return "truncated";
    /* Integers, strings and arrays of definite length, which are nearly
     * all a frame holds, are read here: the head and, for a string, its
     * bytes, which must lie within the input, as libcbor checks. */
    unsigned major = *in->p >> 5, info = *in->p & 31u;
    if (major <= 4 && info < 28) {
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
        in->kind = direct_kind[major];
        in->value = v;
        in->p = after;
        return NULL;
    }
    in->kind = AC__CBOR_OTHER;
    struct cbor_decoder_result r = cbor_stream_decode(in->p, ac__cbor_left(in), &callbacks, in);
    switch (r.status) {
    case CBOR_DECODER_FINISHED:
        in->p += r.read;
        return NULL;
    case CBOR_DECODER_NEDATA:
        return "truncated";
    default:
        return "malformed";
    }
}

const char *ac__cbor_wrong(const ac__cbor_in *in, const char *wanted)
{
    return in->kind == AC__CBOR_INDEFINITE ? "indefinite length" : wanted;
}

const char *ac__cbor_get_uint(ac__cbor_in *in, uint64_t *v)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_UINT)
        return ac__cbor_wrong(in, "expected an unsigned integer");
    *v = in->value;
    return NULL;
}

const char *ac__cbor_get_array(ac__cbor_in *in, uint64_t *n)
{
    const char *why = ac__cbor_next(in);
    if (why)
        return why;
    if (in->kind != AC__CBOR_ARRAY)
        return ac__cbor_wrong(in, "expected an array");
    *n = in->value;
    return NULL;
}

const char *ac__cbor_get_text(ac__cbor_in *in, size_t max, const uint8_t **s, size_t *n)
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

const char *ac__cbor_get_bytes(ac__cbor_in *in, size_t max, const uint8_t **s, size_t *n)
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

/* ---- UTF-8 ------------------------------------------------------------ */

/* Eight bytes at once: none with its high bit set, none zero. */
static inline bool plain_ascii8(const uint8_t *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof w);
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    return !(w & highs) && !((w - ones) & ~w & highs);
}

/* The length of the sequence a lead byte starts (0: not a lead byte), its
 * payload bits, and the smallest code point it may carry. */
static size_t lead(uint8_t c, uint32_t *cp, uint32_t *min)
{
    if ((c & 0xE0) == 0xC0) {
        *cp = c & 0x1F, *min = 0x80;
        return 2;
    }
    if ((c & 0xF0) == 0xE0) {
        *cp = c & 0x0F, *min = 0x800;
        return 3;
    }
    if ((c & 0xF8) == 0xF0) {
        *cp = c & 0x07, *min = 0x10000;
        return 4;
    }
    return 0;
}

/* One multi-byte sequence at s[0..left): its length, or 0 when invalid. */
static size_t sequence(const uint8_t *s, size_t left)
{
    uint32_t cp, min;
    size_t k = lead(s[0], &cp, &min);
    if (k == 0 || k > left)
        return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[j] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

bool ac__utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (n - i >= 8 && plain_ascii8(s + i)) {
            i += 8;
        } else if (s[i] && s[i] < 0x80) {
            i++;
        } else {
            size_t k = s[i] ? sequence(s + i, n - i) : 0;
            if (k == 0)
                return false;
            i += k;
        }
    }
    return true;
}
