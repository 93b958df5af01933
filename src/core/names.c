/*
 * Actor names: the rule and its check.
 *
 * A name is the last segment of an actor's path, and paths appear in logs,
 * in metric labels and in refs that travel to other nodes. So a name is
 * text anyone can print and read back: valid UTF-8 in its shortest form,
 * without control characters or whitespace, without '/' (the path
 * separator) and not starting with '$' (anonymous actors' names).
 *
 * The decoder is strict (RFC 3629): it refuses overlong forms, UTF-16
 * surrogates, code points above U+10FFFF and sequences cut short. A refusal
 * says what is wrong and at which byte, and quotes the name with every byte
 * that is not printable ASCII escaped, so that the message itself is safe
 * to print.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/names.h"

#define NAME_MAX_BYTES 255
#define QUOTE_MAX_BYTES 48 /* of a name, in a message; longer ones end in "..." */
_Static_assert(QUOTE_MAX_BYTES * 4 + 8 <= AC__NAME_QUOTE_SIZE, "room for a quoted name");

typedef enum utf8_fault {
    UTF8_OK,
    UTF8_BAD_BYTE,  /* a continuation byte without a lead, or 0xf8..0xff */
    UTF8_CUT_SHORT, /* a lead byte without all its continuation bytes */
    UTF8_OVERLONG,  /* a longer form than the code point needs */
    UTF8_SURROGATE, /* U+D800..U+DFFF, which only UTF-16 may use */
    UTF8_TOO_BIG,   /* beyond U+10FFFF */
} utf8_fault;

/* Bytes in the sequence a lead byte starts; 0 when `b` cannot lead. */
static size_t utf8_length(unsigned char b)
{
    if (b < 0x80)
        return 1;
    if ((b & 0xe0) == 0xc0)
        return 2;
    if ((b & 0xf0) == 0xe0)
        return 3;
    return (b & 0xf8) == 0xf0 ? 4 : 0;
}

/* Decode the code point at `s` (NUL-terminated: a NUL ends a sequence cut
 * short, so nothing past it is read). *len is its length in bytes, or 1 on
 * a fault; *cp is the value decoded, even when it is not allowed. */
static utf8_fault utf8_decode(const unsigned char *s, uint32_t *cp, size_t *len)
{
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = utf8_length(s[0]);
    *len = 1;
    *cp = s[0];
    if (n == 0)
        return UTF8_BAD_BYTE;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return UTF8_CUT_SHORT;
        c = c << 6 | (s[i] & 0x3fu);
    }
    *cp = c;
    if (c < least[n])
        return UTF8_OVERLONG;
    if (c >= 0xd800 && c <= 0xdfff)
        return UTF8_SURROGATE;
    if (c > 0x10ffff)
        return UTF8_TOO_BIG;
    *len = n;
    return UTF8_OK;
}

/* C0, DEL and C1. */
static bool is_control(uint32_t c) { return c < 0x20 || (c >= 0x7f && c <= 0x9f); }

/* Unicode's White_Space characters that are not controls. */
static bool is_space(uint32_t c)
{
    return c == 0x20 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
           c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Byte by byte, not by character: the name may not be UTF-8 at all. */
const char *ac__name_quote(const char *name, char *buf, size_t cap)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t at = 0, out = 0;
    buf[out++] = '"';
    for (; s[at] && at < QUOTE_MAX_BYTES && out + 8 < cap; at++) {
        if (s[at] == '"' || s[at] == '\\')
            buf[out++] = '\\';
        if (s[at] >= 0x20 && s[at] < 0x7f)
            buf[out++] = (char)s[at];
        else
            out += (size_t)snprintf(buf + out, cap - out, "\\x%02x", s[at]);
    }
    snprintf(buf + out, cap - out, "%s\"", s[at] ? "..." : "");
    return buf;
}

static ac_status bad_name(const char *name, const char *fmt, ...) AC_PRINTF(2, 3);

static ac_status bad_name(const char *name, const char *fmt, ...)
{
    char quoted[AC__NAME_QUOTE_SIZE];
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ac__fail(AC_ENAME, "invalid actor name %s: %s",
                    ac__name_quote(name, quoted, sizeof quoted), why);
}

/* What is wrong with the sequence at byte `at`. */
static ac_status bad_encoding(const char *name, size_t at, utf8_fault fault, unsigned c)
{
    switch (fault) {
    case UTF8_BAD_BYTE:
        return bad_name(name, "byte %zu (0x%02x) cannot start a UTF-8 character", at, c);
    case UTF8_CUT_SHORT:
        return bad_name(name, "the UTF-8 sequence at byte %zu is cut short", at);
    case UTF8_OVERLONG:
        return bad_name(name,
                        "the UTF-8 sequence at byte %zu is overlong (U+%04X in more bytes than "
                        "it needs)",
                        at, c);
    case UTF8_SURROGATE:
        return bad_name(name, "the UTF-8 sequence at byte %zu encodes U+%04X, a UTF-16 surrogate",
                        at, c);
    default:
        return bad_name(name, "the UTF-8 sequence at byte %zu encodes U+%X, beyond U+10FFFF", at,
                        c);
    }
}

/* What is wrong with the code point `c` at byte `at`, or AC_OK. */
static ac_status check_char(const char *name, size_t at, unsigned c)
{
    if (c == '/')
        return bad_name(name, "'/' (byte %zu) separates path segments", at);
    if (is_control(c))
        return bad_name(name, "byte %zu is the control character U+%04X", at, c);
    if (is_space(c))
        return bad_name(name, "byte %zu is whitespace (U+%04X)", at, c);
    return AC_OK;
}

ac_status ac__check_actor_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return bad_name(name, "a name must not be empty");
    if (len > NAME_MAX_BYTES)
        return bad_name(name, "longer than %d bytes", NAME_MAX_BYTES);
    if (name[0] == '$')
        return bad_name(name, "names starting with '$' are reserved");
    const unsigned char *s = (const unsigned char *)name;
    for (size_t at = 0, n; at < len; at += n) {
        uint32_t c;
        utf8_fault fault = utf8_decode(s + at, &c, &n);
        if (fault != UTF8_OK)
            return bad_encoding(name, at, fault, (unsigned)c);
        if (check_char(name, at, (unsigned)c) != AC_OK)
            return AC_ENAME;
    }
    return AC_OK;
}
