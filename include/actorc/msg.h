/*
 * Messages.
 *
 * A message is a reference-counted, immutable-once-sent value typed by a
 * descriptor. Sending consumes the caller's reference; a handler borrows the
 * message it receives (retain it to keep it). Because a sent message never
 * changes, one message may be sent to many actors without copies.
 *
 * A user type takes a few lines:
 *
 *     typedef struct { double x, y; } point;
 *     static const ac_msg_type point_type = { .name = "app.Point" };
 *
 *     ac_msg *m = ac_msg_new(&point_type, sizeof(point));
 *     point *p = ac_msg_payload(m);           // writable until sent
 *     p->x = 1; p->y = 2;
 *     ac_tell(target, m, NULL);               // consumes m
 *
 *     // in the receiver:
 *     if (ac_msg_is(msg, &point_type)) { const point *p = ac_msg_data(msg); }
 *
 * All functions here may be called from any thread.
 */
#ifndef ACTORC_MSG_H
#define ACTORC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/export.h"
#include "actorc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_msg ac_msg;

/* Type descriptor. Give it static storage duration. */
typedef struct ac_msg_type {
    /* Stable name, unique per program; used on the wire later
     * ("actorc.String", "app.Point"). Required. */
    const char *name;
    /* Releases what the payload owns (not the payload itself). Optional. */
    void (*destroy)(void *payload, size_t size);
    /* Optional wire hooks (used by the later cluster codec). encode writes
     * at most cap bytes into buf and returns the byte count it needs (call
     * again with a bigger buffer when that exceeds cap); decode fills a
     * freshly allocated payload of `size` bytes and returns AC_OK. */
    size_t (*encode)(const void *payload, size_t size, uint8_t *buf, size_t cap);
    int (*decode)(const uint8_t *buf, size_t len, void *payload, size_t size);
} ac_msg_type;

/* A new message of `size` zeroed payload bytes and one reference, owned by
 * the caller. NULL (with ac_last_error) on a NULL type or out of memory. */
AC_API ac_msg *ac_msg_new(const ac_msg_type *type, size_t size);
/* Writable payload: only before the message is first sent. */
AC_API void *ac_msg_payload(ac_msg *msg);
/* Read-only payload and its size. NULL/0 for a NULL message. */
AC_API const void *ac_msg_data(const ac_msg *msg);
AC_API size_t ac_msg_size(const ac_msg *msg);
AC_API const ac_msg_type *ac_msg_type_of(const ac_msg *msg);
AC_API bool ac_msg_is(const ac_msg *msg, const ac_msg_type *type);
/* Name of the message's type, or "(null)". */
AC_API const char *ac_msg_type_name(const ac_msg *msg);

/* Reference counting. retain returns msg for chaining; both accept NULL. */
AC_API ac_msg *ac_msg_retain(ac_msg *msg);
AC_API void ac_msg_release(ac_msg *msg);

/* ---- built-in types ---------------------------------------------------- */

AC_API extern const ac_msg_type ac_msg_type_str;   /* "actorc.String" */
AC_API extern const ac_msg_type ac_msg_type_bytes; /* "actorc.Bytes"  */
AC_API extern const ac_msg_type ac_msg_type_int64; /* "actorc.Int64"  */

/* Strings (NUL-terminated copies). */
AC_API ac_msg *ac_msg_str_new(const char *s);
AC_API ac_msg *ac_msg_printf(const char *fmt, ...) AC_PRINTF(1, 2);
/* The string, or NULL with AC_ETYPE/AC_EINVAL in ac_last_error when `msg`
 * is NULL or not a string. */
AC_API const char *ac_msg_str(const ac_msg *msg);

/* Bytes (copied). */
AC_API ac_msg *ac_msg_bytes_new(const void *data, size_t len);
/* The bytes and their length, or NULL with AC_ETYPE/AC_EINVAL. */
AC_API const uint8_t *ac_msg_bytes(const ac_msg *msg, size_t *len);

/* 64-bit integers. */
AC_API ac_msg *ac_msg_int64_new(int64_t v);
/* AC_OK and *out, or AC_ETYPE/AC_EINVAL (and *out untouched). */
AC_API ac_status ac_msg_int64_get(const ac_msg *msg, int64_t *out);
/* Convenience: the value, or 0 when `msg` is not an int64 (the last error
 * then says why). */
AC_API int64_t ac_msg_int64(const ac_msg *msg);

#ifdef __cplusplus
}
#endif
#endif
