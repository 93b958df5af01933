/*
 * The view of a running system: one JSON document of what it holds now,
 * for an operator to look at (the observer page of the optional
 * actorc_http library, GET /view) or for a program to read.
 *
 * The document has the system (workers, live actors, dead letters, timers
 * armed), a page of its actor tree (path, kind, state, mailbox depth,
 * restarts, children) and, beside them, what the runtime's optional parts
 * add as *sources*: every router (pools and groups: messages routed to
 * each routee, the breakers that guard them; scatter/gather and hedged:
 * per-routee counts, breakers, the hedge delay, the winner-latency
 * histogram), every circuit breaker, the node of actorc_remote and the
 * cluster of actorc_cluster. A program adds sources of its own the same
 * way. docs/observer.md describes every field.
 *
 * Taking the view never stops the world. Counters are read one by one
 * with relaxed loads while they move, so the document is consistent
 * enough, not a point in time: a router's routee counts may be a message
 * apart from its totals. The actor page is read under the lock that
 * spawning and freeing cells take, never one that a turn takes, and only
 * the page is copied; its cost grows with the number of actors (a walk
 * of the list), not with their traffic. Sources are called outside every
 * lock of the core.
 *
 * All functions may be called from any thread, inside actors or not.
 */
#ifndef ACTORC_OBSERVE_H
#define ACTORC_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/export.h"
#include "actorc/status.h"
#include "actorc/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- writing JSON ----------------------------------------------------- */

/* A JSON writer, handed to sources. It places commas and colons itself:
 * a source opens and closes objects and arrays, writes a key before each
 * member of an object and a value after it. Strings are escaped and kept
 * valid UTF-8 (a byte that is not part of a valid sequence becomes
 * U+FFFD); a NaN or infinite double is written as null. Out of memory,
 * the writer goes on accepting calls and the whole document fails. */
typedef struct ac_json ac_json;

AC_API void ac_json_object(ac_json *json);
AC_API void ac_json_object_end(ac_json *json);
AC_API void ac_json_array(ac_json *json);
AC_API void ac_json_array_end(ac_json *json);
AC_API void ac_json_key(ac_json *json, const char *key);
/* NULL is written as null. */
AC_API void ac_json_string(ac_json *json, const char *value);
AC_API void ac_json_uint(ac_json *json, uint64_t value);
AC_API void ac_json_int(ac_json *json, int64_t value);
AC_API void ac_json_double(ac_json *json, double value);
AC_API void ac_json_bool(ac_json *json, bool value);
AC_API void ac_json_null(ac_json *json);

/* ---- sources ---------------------------------------------------------- */

/* Writes one JSON value (an object, usually) about what `arg` observes.
 * Called on the thread that takes the view, concurrently with anything
 * else the program does (two views taken at once call it at once), and
 * never after ac_observe_remove has returned. It must not block
 * on the system's workers (no asks), and should read atomics or take
 * locks that are only held briefly. */
typedef void ac_observe_fn(ac_json *out, void *arg);

typedef struct ac_observe_source ac_observe_source;

/* Add a source to the view of `system`: its value joins the array of
 * `section` ([a-z_]{1,32}, not one of the core's: "version", "system",
 * "actors"). Sections appear in the document in the order of their first
 * source, their values in the order they were added. NULL with
 * ac_last_error: AC_EINVAL for a NULL system or fn or a bad section name,
 * AC_ETERMINATED when the system is terminating, AC_ENOMEM. */
AC_API ac_observe_source *ac_observe_add(ac_system *system, const char *section,
                                         ac_observe_fn *fn, void *arg);
/* Remove a source (NULL: nothing). Waits while a view being taken is
 * inside its fn, then frees it; after it returns fn is not called again,
 * and `arg` may go. Valid until then, even after the system has been
 * terminated. */
AC_API void ac_observe_remove(ac_observe_source *source);

/* ---- taking the view -------------------------------------------------- */

/* Which page of the actor tree to take: actors in the order they were
 * spawned (a parent before its children), `limit` of them from
 * `offset`. A NULL query, or `{0}`, is the first
 * AC_OBSERVE_DEFAULT_PAGE. */
#define AC_OBSERVE_DEFAULT_PAGE 100
#define AC_OBSERVE_MAX_PAGE 1000
typedef struct ac_observe_query {
    uint64_t offset;
    uint64_t limit; /* 0: AC_OBSERVE_DEFAULT_PAGE; at most AC_OBSERVE_MAX_PAGE */
} ac_observe_query;

/* The whole view as a JSON document, a new string for the caller to
 * free(): {"version":1, "system":{…}, "actors":{…}, then one array per
 * section}. NULL with ac_last_error: AC_EINVAL for a NULL system or a
 * limit beyond AC_OBSERVE_MAX_PAGE (the message names it), AC_ENOMEM. */
AC_API char *ac_observe_json(ac_system *system, const ac_observe_query *query);
/* Only the page of the actor tree: {"total":…, "offset":…, "limit":…,
 * "items":[…]}, as the view's "actors" member. Errors as above. */
AC_API char *ac_observe_actors_json(ac_system *system, const ac_observe_query *query);

#ifdef __cplusplus
}
#endif
#endif
