/*
 * The gateway's JSON, as the client reads and writes it: int64 fields as
 * decimal strings (proto3's JSON mapping; absent means zero), bytes as
 * base64, and a prefix as the range [prefix, prefix + 1). Also the
 * helpers every part of the client uses to say what went wrong.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/base64.h"
#include "cluster/etcd_internal.h"
#include "core/alloc.h"

ac_status ac__etcd_errf(ac__etcd_err *err, ac_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

const char *ac__etcd_quote(const char *s, size_t n, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    buf[o++] = '\'';
    size_t i = 0;
    for (; i < n && o + 4 + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (i < n) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

ac_status ac__etcd_check_key(const char *key, bool may_be_empty, const char *what,
                             ac__etcd_err *err)
{
    if (!key)
        return ac__etcd_errf(err, AC_EINVAL, "%s: the key is NULL", what);
    if (!may_be_empty && !key[0])
        return ac__etcd_errf(err, AC_EINVAL, "%s: the key is empty", what);
    return AC_OK;
}

/* ---- reading ------------------------------------------------------------ */

bool ac__etcd_json_i64(json_t *obj, const char *name, int64_t *out)
{
    json_t *v = json_object_get(obj, name);
    *out = 0;
    if (!v)
        return true;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = (int64_t)x;
    return true;
}

ac_status ac__etcd_json_bytes(json_t *obj, const char *name, char **out, size_t *len,
                              const char *what, ac__etcd_err *err)
{
    *out = NULL;
    *len = 0;
    json_t *v = json_object_get(obj, name);
    if (v && !json_is_string(v))
        return ac__etcd_errf(err, AC_EPROTO, "%s: the answer's \"%s\" is not a string", what,
                             name);
    const char *s = v ? json_string_value(v) : "";
    size_t n = v ? json_string_length(v) : 0;
    char *bytes = ac__malloc(ac__base64_decoded_max(n) + 1);
    if (!bytes)
        return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for a %zu-byte %s", what,
                             ac__base64_decoded_max(n), name);
    size_t bad = 0;
    if (!ac__base64_decode(s, n, bytes, len, &bad)) {
        free(bytes);
        return ac__etcd_errf(err, AC_EPROTO, "%s: the answer's \"%s\" is not base64 "
                             "(at offset %zu of %zu)", what, name, bad, n);
    }
    bytes[*len] = '\0';
    *out = bytes;
    return AC_OK;
}

/* ---- writing ------------------------------------------------------------ */

bool ac__etcd_json_set_bytes(json_t *obj, const char *name, const void *p, size_t n)
{
    size_t len = ac__base64_encoded_len(n);
    if (n > 0 && len == 0)
        return false;
    char *text = ac__malloc(len + 1);
    if (!text)
        return false;
    ac__base64_encode(p, n, text);
    json_t *v = json_stringn_nocheck(text, len);
    free(text);
    return v && json_object_set_new(obj, name, v) == 0;
}

bool ac__etcd_json_set_i64(json_t *obj, const char *name, int64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)v);
    json_t *s = json_string_nocheck(text);
    return s && json_object_set_new(obj, name, s) == 0;
}

/* The end of the range of keys that start with prefix: the prefix with
 * its last byte below 0xff incremented and what follows dropped; "\0"
 * (no end) when there is no such byte. etcd's own clients do the same. */
bool ac__etcd_json_set_prefix(json_t *obj, const char *prefix, size_t n)
{
    static const char zero = '\0';
    if (n == 0) /* every key: from "\0" to no end */
        return ac__etcd_json_set_bytes(obj, "key", &zero, 1) &&
               ac__etcd_json_set_bytes(obj, "range_end", &zero, 1);
    char *end = ac__malloc(n);
    if (!end)
        return false;
    memcpy(end, prefix, n);
    size_t m = n;
    while (m > 0 && (unsigned char)end[m - 1] == 0xff)
        m--;
    bool ok;
    if (m == 0) {
        ok = ac__etcd_json_set_bytes(obj, "range_end", &zero, 1);
    } else {
        end[m - 1] = (char)((unsigned char)end[m - 1] + 1);
        ok = ac__etcd_json_set_bytes(obj, "range_end", end, m);
    }
    free(end);
    return ok && ac__etcd_json_set_bytes(obj, "key", prefix, n);
}
