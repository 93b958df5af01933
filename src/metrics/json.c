/*
 * A JSON writer for the view (observe.c) and its sources: text appended
 * to one growing buffer, commas and colons placed from a stack of what
 * is open.
 *
 * The writer never refuses a call. Out of memory, or asked for what JSON
 * cannot hold (a key outside an object, a value where a key belongs,
 * nesting beyond JSON_MAX_DEPTH, closing what is not open), it records the
 * failure and ignores everything after; the view then fails as a whole,
 * so a document is either well-formed or not produced. Strings are
 * escaped for JSON and for an HTML page that embeds them ('<' and '>'
 * as \u003c and \u003e), and kept valid UTF-8: a byte that does not
 * begin or continue a valid sequence is written as U+FFFD.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "metrics/json.h"

static void fail(ac_json *j, ac_status st)
{
    if (j->status == AC_OK)
        j->status = st;
}

static void put(ac_json *j, const char *s, size_t n)
{
    if (j->status != AC_OK)
        return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 1024;
        while (j->len + n + 1 > cap)
            cap *= 2;
        char *buf = ac__realloc(j->buf, cap);
        if (!buf) {
            fail(j, AC_ENOMEM);
            return;
        }
        j->buf = buf;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(ac_json *j, const char *s) { put(j, s, strlen(s)); }

/* Before a value: the comma after a sibling, and check that a value may
 * go here (in an array, after a key, or at the top once). */
static void before_value(ac_json *j)
{
    if (j->status != AC_OK)
        return;
    if (j->depth == 0) {
        if (j->done)
            fail(j, AC_EINVAL);
        j->done = true;
        return;
    }
    json_level *l = &j->stack[j->depth - 1];
    if (l->object) {
        if (!l->keyed)
            fail(j, AC_EINVAL); /* a value without its key */
        l->keyed = false;
        return;
    }
    if (l->count++ > 0)
        put(j, ",", 1);
}

static void open_(ac_json *j, bool object)
{
    before_value(j);
    if (j->status != AC_OK)
        return;
    if (j->depth == JSON_MAX_DEPTH) {
        fail(j, AC_EINVAL);
        return;
    }
    j->stack[j->depth++] = (json_level){.object = object};
    put(j, object ? "{" : "[", 1);
}

static void close_(ac_json *j, bool object)
{
    if (j->status != AC_OK)
        return;
    if (j->depth == 0 || j->stack[j->depth - 1].object != object ||
        j->stack[j->depth - 1].keyed) {
        fail(j, AC_EINVAL);
        return;
    }
    j->depth--;
    put(j, object ? "}" : "]", 1);
}

void ac_json_object(ac_json *json) { open_(json, true); }
void ac_json_object_end(ac_json *json) { close_(json, true); }
void ac_json_array(ac_json *json) { open_(json, false); }
void ac_json_array_end(ac_json *json) { close_(json, false); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when s[0] does
 * not begin one (RFC 3629: no overlong forms, surrogates, or code points
 * beyond U+10FFFF). */
static size_t utf8_valid(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

static void quoted(ac_json *j, const char *s)
{
    put(j, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p && j->status == AC_OK) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\' && *p != '<' && *p != '>')
            p++;
        put(j, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        char esc[8];
        size_t n;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(j, esc, 2);
            p++;
        } else if (*p < 0x80) { /* a control character, '<' or '>' */
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(j, esc, 6);
            p++;
        } else if ((n = utf8_valid(p)) != 0) {
            put(j, (const char *)p, n);
            p += n;
        } else {
            put(j, "\xef\xbf\xbd", 3); /* U+FFFD */
            p++;
        }
    }
    put(j, "\"", 1);
}

void ac_json_key(ac_json *json, const char *key)
{
    if (json->status != AC_OK)
        return;
    if (!key || json->depth == 0 || !json->stack[json->depth - 1].object ||
        json->stack[json->depth - 1].keyed) {
        fail(json, AC_EINVAL);
        return;
    }
    json_level *l = &json->stack[json->depth - 1];
    if (l->count++ > 0)
        put(json, ",", 1);
    quoted(json, key);
    put(json, ":", 1);
    l->keyed = true;
}

void ac_json_string(ac_json *json, const char *value)
{
    before_value(json);
    if (json->status == AC_OK)
        value ? quoted(json, value) : puts_(json, "null");
}

void ac_json_uint(ac_json *json, uint64_t value)
{
    char buf[24];
    before_value(json);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)value);
    puts_(json, buf);
}

void ac_json_int(ac_json *json, int64_t value)
{
    char buf[24];
    before_value(json);
    snprintf(buf, sizeof buf, "%lld", (long long)value);
    puts_(json, buf);
}

void ac_json_double(ac_json *json, double value)
{
    char buf[32];
    before_value(json);
    if (!isfinite(value)) {
        puts_(json, "null");
        return;
    }
    snprintf(buf, sizeof buf, "%.17g", value);
    /* Shorter when the shorter form reads back the same. */
    char shorter[32];
    snprintf(shorter, sizeof shorter, "%.6g", value);
    puts_(json, strtod(shorter, NULL) == value ? shorter : buf);
}

void ac_json_bool(ac_json *json, bool value)
{
    before_value(json);
    puts_(json, value ? "true" : "false");
}

void ac_json_null(ac_json *json)
{
    before_value(json);
    puts_(json, "null");
}

void ac__json_init(ac_json *j)
{
    memset(j, 0, sizeof *j);
    j->status = AC_OK;
}

char *ac__json_finish(ac_json *j, const char *fn)
{
    if (j->status == AC_OK && (j->depth != 0 || !j->done))
        fail(j, AC_EINVAL);
    if (j->status == AC_OK && j->buf)
        return j->buf;
    free(j->buf);
    j->buf = NULL;
    if (j->status == AC_ENOMEM)
        ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    else
        ac__fail(AC_EINVAL, "%s: a source wrote malformed JSON", fn);
    return NULL;
}
