/*
 * Errors that travel: ac_error.
 *
 * An ac_error has a name ("AskTimeoutError", "AggregateError", or a name
 * of the program's own), a message, member errors (for aggregates, in
 * order) and an optional cause. It is immutable and reference counted,
 * so one error may be shared by many answers. Names and messages are plain
 * strings and members and causes nest, at most AC_ERROR_MAX_DEPTH deep, so
 * an error encodes onto a wire as is.
 *
 * An error is also a message: ac_msg_error_new wraps one, and replying with
 * it to an ask rejects the ask.
 *
 * All functions may be called from any thread.
 */
#ifndef ACTORC_ERROR_H
#define ACTORC_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "actorc/export.h"
#include "actorc/msg.h"
#include "actorc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_error ac_error;

#define AC_ASK_TIMEOUT_ERROR "AskTimeoutError"
#define AC_AGGREGATE_ERROR "AggregateError"
/* An ask to an actor that had already stopped. */
#define AC_ACTOR_STOPPED_ERROR "ActorStoppedError"
/* An ask whose request could not be delivered for another reason (a pool
 * router with no routees left); the message says why. */
#define AC_UNDELIVERABLE_ERROR "UndeliverableError"
/* An ask whose target's node was lost (its connection dropped, its
 * heartbeats stopped or a new incarnation of it was seen) before it
 * answered; the message names the node and its incarnation. */
#define AC_NODE_DOWN_ERROR "NodeDownError"

/* How deep errors may nest. An error without members or cause has depth 1;
 * any other, 1 + the depth of its deepest member or cause. Creating an error
 * that would nest deeper is refused: NULL with AC_EINVAL, and the last
 * error says so (nothing is truncated, and nothing is retained). So
 * releasing and printing an error take bounded stack and indentation
 * however it was built, by this program or by a decoder from a peer's
 * bytes. */
#define AC_ERROR_MAX_DEPTH 64
/* At most this many errors in one, counting the error itself, its members
 * and causes at every level, and a part shared under several parents once
 * for each place it appears (so the printed form has at most this many
 * lines). Building a larger one is refused like a deeper one. */
#define AC_ERROR_MAX_NODES 1000000

/* A new error (one reference, the caller's). `name` must be non-empty.
 * NULL with ac_last_error on bad arguments, or (AC_EINVAL) when a member or
 * the cause is already AC_ERROR_MAX_DEPTH deep, or the new error would pass
 * AC_ERROR_MAX_NODES. */
AC_API ac_error *ac_error_new(const char *name, const char *fmt, ...) AC_PRINTF(2, 3);
/* As ac_error_new, with a cause (borrowed: retained). */
AC_API ac_error *ac_error_new_caused(const char *name, ac_error *cause, const char *fmt, ...)
    AC_PRINTF(3, 4);
/* An AggregateError with `n` members (borrowed: each retained) in order. */
AC_API ac_error *ac_error_aggregate(ac_error *const *members, size_t n, const char *fmt, ...)
    AC_PRINTF(3, 4);

AC_API ac_error *ac_error_retain(ac_error *err);
AC_API void ac_error_release(ac_error *err);

AC_API const char *ac_error_name(const ac_error *err);    /* "" for NULL */
AC_API const char *ac_error_message(const ac_error *err); /* "" for NULL */
AC_API ac_error *ac_error_cause(const ac_error *err);     /* borrowed, or NULL */
AC_API size_t ac_error_member_count(const ac_error *err);
AC_API ac_error *ac_error_member(const ac_error *err, size_t i); /* borrowed, or NULL */
/* How deep `err` nests (see AC_ERROR_MAX_DEPTH); 0 for NULL. An error can be
 * a member or cause of a new one while this is below AC_ERROR_MAX_DEPTH. */
AC_API size_t ac_error_depth(const ac_error *err);

/* Is this error of kind `name`? */
AC_API bool ac_error_is(const ac_error *err, const char *name);
/* True for an aggregate with at least one member whose members are all
 * AskTimeoutErrors: "was it just too slow?". */
AC_API bool ac_error_all_timeouts(const ac_error *err);

/* Print "Name: message", then each member ("[i] ") and the cause
 * ("caused by "), each on its own line, indented two spaces per level of
 * nesting. Nesting is capped, so a line is indented by at most
 * 2 * (AC_ERROR_MAX_DEPTH - 1) spaces and the text grows linearly with the
 * number of errors printed (an error held by several others is printed
 * under each). Returns the number of characters written, or -1. */
AC_API int ac_error_fprint(const ac_error *err, FILE *out);
/* The same text as a new string (free it with free()); NULL with AC_ENOMEM
 * in ac_last_error on no memory. */
AC_API char *ac_error_to_string(const ac_error *err);

/* ---- errors as messages ------------------------------------------------ */

AC_API extern const ac_msg_type ac_msg_type_error; /* "actorc.Error" */
/* A message carrying `err` (consumed). NULL when err is NULL. */
AC_API ac_msg *ac_msg_error_new(ac_error *err);
/* The error in an error message (borrowed), or NULL with AC_ETYPE. */
AC_API ac_error *ac_msg_error(const ac_msg *msg);

#ifdef __cplusplus
}
#endif
#endif
