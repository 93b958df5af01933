/*
 * CBOR items in and out (cbor_io.h).
 *
 * Writing (inline, in cbor_io.h): every put reserves its bytes first;
 * what does not fit is only counted, so a short buffer costs one pass,
 * never an overrun. Heads are written in the shortest form (the size
 * ac__cbor_head_size predicts): a frame is a handful of heads, and a call
 * into libcbor per head cost more than the head.
 *
 * Reading: the heads of integers, strings and arrays of definite length
 * (all but the rarest items of a frame) are read inline (cbor_io.h), a
 * string's bytes checked to lie within the input; any other item comes
 * here, to cbor_stream_decode, which decodes one item per call and
 * reports it through a callback. The callbacks only record the item in the reader,
 * so the caller decides, item by item, what the frame may hold. Either
 * way a span recorded here is always inside the input.
 */
#include "remote/cbor_io.h"

#include <string.h>

#include <cbor.h>

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

const char *ac__cbor_next_other(ac__cbor_in *in)
{
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
