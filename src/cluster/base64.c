/*
 * Base64 with the standard alphabet and padding.
 *
 * The decoder is strict, because what it reads comes from a server: a
 * length that is not a multiple of four, a character outside the
 * alphabet, padding anywhere but the end, or non-zero bits under the
 * padding are refused with the offset at fault, never guessed at. Every
 * encoding has exactly one decoding and the reverse.
 */
#include <stdint.h>

#include "cluster/base64.h"

static const char alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ac__base64_encoded_len(size_t n)
{
    if (n > (SIZE_MAX - 1) / 4 * 3)
        return 0;
    return (n + 2) / 3 * 4;
}

size_t ac__base64_encode(const void *src, size_t n, char *dst)
{
    const unsigned char *s = src;
    char *d = dst;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *d++ = alphabet[v >> 18];
        *d++ = alphabet[v >> 12 & 63];
        *d++ = alphabet[v >> 6 & 63];
        *d++ = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *d++ = alphabet[v >> 18];
        *d++ = alphabet[v >> 12 & 63];
        *d++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        *d++ = '=';
    }
    *d = '\0';
    return (size_t)(d - dst);
}

/* The value of a base64 character, or -1. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decode one group of four at src into up to three bytes at dst; `last`
 * says whether padding may end it. Returns the bytes written, or -1 with
 * *bad the offset in the group of the character at fault. */
static int decode_group(const unsigned char *src, bool last, unsigned char *dst, size_t *bad)
{
    int pad = last ? (src[3] == '=') + (src[3] == '=' && src[2] == '=') : 0;
    uint32_t v = 0;
    for (int k = 0; k < 4 - pad; k++) {
        int x = sextet(src[k]);
        if (x < 0) {
            *bad = (size_t)k;
            return -1;
        }
        v = v << 6 | (uint32_t)x;
    }
    v <<= 6 * pad;
    if ((pad == 1 && (v & 0xff)) || (pad == 2 && (v & 0xffff))) {
        *bad = (size_t)(3 - pad); /* the last character before the padding */
        return -1;
    }
    dst[0] = (unsigned char)(v >> 16);
    if (pad < 2)
        dst[1] = (unsigned char)(v >> 8);
    if (pad < 1)
        dst[2] = (unsigned char)v;
    return 3 - pad;
}

bool ac__base64_decode(const char *src, size_t n, void *dst, size_t *out_len, size_t *bad_at)
{
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *d = dst;
    *out_len = 0;
    if (n % 4 != 0) {
        *bad_at = n;
        return false;
    }
    for (size_t i = 0; i < n; i += 4) {
        size_t bad = 0;
        int got = decode_group(s + i, i + 4 == n, d, &bad);
        if (got < 0) {
            *bad_at = i + bad;
            return false;
        }
        d += got;
    }
    *out_len = (size_t)(d - (unsigned char *)dst);
    return true;
}
