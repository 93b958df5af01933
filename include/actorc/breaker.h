/*
 * Circuit breaker: stop calling a dependency that is failing.
 *
 * A breaker counts the outcomes of calls made through it. While it is
 * CLOSED every call goes through; max_failures consecutive failures OPEN
 * it. While it is open every call fails at once with a
 * CircuitBreakerOpenError, without reaching the target. Once the reset
 * timeout has passed it is HALF-OPEN: exactly one call (the probe) goes
 * through at a time, and its outcome closes the breaker or opens it again,
 * for a longer reset timeout when backoff is configured.
 *
 * A failure is an error answer that the is-failure filter counts (all
 * errors by default: a filter can say that "not found" is an answer, not
 * an outage), a timeout (the caller's ask timeout, or call_timeout_ms:
 * CircuitBreakerTimeoutError), or a request that could not be delivered
 * (ActorStoppedError, UndeliverableError). A reply is a success and
 * resets the count.
 *
 * Three ways to call through a breaker:
 *   outside actors   ac_breaker_ask_wait (blocking), or ac_breaker_ask ->
 *                    an ac_future (ask.h)
 *   inside an actor  ac_breaker_ask_in: the answer arrives in the asker's
 *                    own turn, as with ac_ask_in
 *   anything else    ac_breaker_acquire, then ac_breaker_record with the
 *                    call's outcome (a database call, a file read), or
 *                    ac_breaker_tell to pass an answer on to a sender
 *
 * The breaker's clock is its system's (ac_clock_now_ms): with the manual
 * clock, reset timeouts and call timeouts move only with ac_clock_advance.
 *
 * A breaker is reference counted. ac_breaker_create returns the caller's
 * reference; calls in flight hold their own, so releasing a breaker with
 * calls in flight is safe. Every function may be called from any thread,
 * inside actors or not, except where a comment says otherwise. A breaker
 * may be used until its system is terminated; after that, only
 * ac_breaker_release.
 */
#ifndef ACTORC_BREAKER_H
#define ACTORC_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/ask.h"
#include "actorc/error.h"
#include "actorc/export.h"
#include "actorc/msg.h"
#include "actorc/status.h"
#include "actorc/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A call refused because the breaker is open (or half-open with its probe
 * in flight). The message names the breaker and says when the next probe
 * is allowed. */
#define AC_CIRCUIT_BREAKER_OPEN_ERROR "CircuitBreakerOpenError"
/* A call that took longer than the breaker's call_timeout_ms. */
#define AC_CIRCUIT_BREAKER_TIMEOUT_ERROR "CircuitBreakerTimeoutError"

#define AC_BREAKER_DEFAULT_MAX_FAILURES 5
#define AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS 10000
#define AC_BREAKER_DEFAULT_BACKOFF 2.0
/* The largest max_failures accepted. */
#define AC_BREAKER_MAX_FAILURES_LIMIT 1000000

typedef struct ac_breaker ac_breaker;

/* The value of the circuit_breaker_state gauge is this number. */
typedef enum ac_breaker_state {
    AC_BREAKER_CLOSED = 0,
    AC_BREAKER_HALF_OPEN = 1,
    AC_BREAKER_OPEN = 2,
} ac_breaker_state;

/* "closed", "half-open", "open"; "unknown" for anything else. */
AC_API const char *ac_breaker_state_name(ac_breaker_state state);

/* Is `err` (borrowed) an outage, to be counted as a failure? Runs on the
 * thread that completes the call; must be short, must not block, must not
 * call through this breaker. Never asked about timeouts: they always
 * count. */
typedef bool (*ac_breaker_failure_fn)(const ac_error *err, void *user);

/* A state change of `breaker` (borrowed for the call). Runs on the thread
 * that caused it (a completing call, a caller, the timer thread, or
 * ac_clock_advance), in the order of the changes, with the breaker's
 * transition lock held: it must be short, must not block and must not
 * call through this breaker (ac_breaker_state_of and ac_breaker_get_info
 * are fine). */
typedef void (*ac_breaker_transition_fn)(ac_breaker *breaker, ac_breaker_state from,
                                         ac_breaker_state to, void *user);

/* Zero means "default" for every number. */
typedef struct ac_breaker_options {
    /* Names the breaker in errors, logs and the `breaker` label of its
     * metrics (copied): 1..255 bytes. Required for ac_breaker_create;
     * ignored for the per-routee breakers of a router (router.h), which
     * are named after their routees' paths. */
    const char *name;
    /* Consecutive failures that open the breaker; 0: 5. At most
     * AC_BREAKER_MAX_FAILURES_LIMIT. */
    int max_failures;
    /* A call not answered within this many ms fails with a
     * CircuitBreakerTimeoutError and counts as a failure; 0: no limit of
     * the breaker's own (the caller's ask timeout still applies, and its
     * AskTimeoutError counts too). 1..INT32_MAX. */
    int64_t call_timeout_ms;
    /* How long the breaker stays open before it lets a probe through;
     * 0: 10,000. 1..INT32_MAX. */
    int64_t reset_timeout_ms;
    /* Exponential backoff: each failed probe multiplies the reset timeout
     * by `backoff` (0: 2.0; 1..1000), up to max_reset_timeout_ms; a
     * successful probe restores reset_timeout_ms. 0: no backoff (the
     * same reset timeout every time); otherwise reset_timeout_ms..
     * INT32_MAX. */
    int64_t max_reset_timeout_ms;
    double backoff;
    /* Jitter, 0..1: each open period lasts the (backed-off) reset timeout
     * times 1 + random_factor * u, u uniform in [0, 1), so that breakers
     * opened together do not probe together. It may take a period up to
     * that factor beyond max_reset_timeout_ms. */
    double random_factor;
    /* Seed of the breaker's own generator for the jitter; 0: one derived
     * from the breaker's address and the time. Tests set it. */
    uint64_t seed;
    /* NULL: every error is a failure. */
    ac_breaker_failure_fn is_failure;
    void *is_failure_user;
    /* NULL: no callback. See also ac_breaker_subscribe. */
    ac_breaker_transition_fn on_transition;
    void *on_transition_user;
} ac_breaker_options;

/* A new breaker in `system` (the caller's reference), closed. Options are
 * copied; NULL or {0} fields give the defaults, but `name` is required.
 * With metrics on (metrics.h) it keeps, labelled breaker=<name>:
 *   circuit_breaker_state               gauge: 0 closed, 1 half-open, 2 open
 *   circuit_breaker_calls_total         counter, label outcome: success,
 *                                       failure, timeout, ignored (an error
 *                                       the filter let pass), rejected
 *   circuit_breaker_transitions_total   counter, label to: closed,
 *                                       half-open, open
 * (metrics turned on later are not picked up by breakers made before).
 * NULL with ac_last_error naming the option and the bad value
 * (AC_EINVAL), AC_ENOMEM, AC_ETERMINATED. Any thread. */
AC_API ac_breaker *ac_breaker_create(ac_system *system, const ac_breaker_options *options);
/* Check options as ac_breaker_create would, without creating anything;
 * `need_name` false skips the name (as for a router's breakers). AC_OK or
 * AC_EINVAL with ac_last_error. `fn` names the caller in the message. */
AC_API ac_status ac_breaker_options_check(const char *fn, const ac_breaker_options *options,
                                          bool need_name);
AC_API ac_breaker *ac_breaker_retain(ac_breaker *breaker);
/* Accepts NULL. */
AC_API void ac_breaker_release(ac_breaker *breaker);

/* ---- calls ------------------------------------------------------------ */

/* As ac_ask_wait (ask.h) on `target` through the breaker. Consumes msg;
 * borrows breaker and target. While the breaker refuses the call, returns
 * AC_EFAILED at once with answer->error a CircuitBreakerOpenError (no
 * sender) and msg released unsent. A call that outlives call_timeout_ms
 * returns AC_EFAILED with a CircuitBreakerTimeoutError; otherwise the
 * statuses of ac_ask_wait. AC_EINVAL for bad arguments (among them a
 * target in another system than the breaker's), AC_EINACTOR inside
 * an actor (*answer zeroed then). Outside actors only. */
AC_API ac_status ac_breaker_ask_wait(ac_breaker *breaker, ac_ref *target, ac_msg *msg,
                                     int64_t timeout_ms, ac_answer *answer);
/* As ac_ask through the breaker: a future (the caller's reference), which
 * is already settled with the CircuitBreakerOpenError while the breaker
 * refuses the call. NULL with ac_last_error on bad arguments (msg is
 * released). Any thread. */
AC_API ac_future *ac_breaker_ask(ac_breaker *breaker, ac_ref *target, ac_msg *msg,
                                 int64_t timeout_ms);
/* As ac_ask_in (ask.h) through the breaker: `fn`, or receive, gets the
 * answer in a later turn of this actor; a refused call is answered the
 * same way, with the CircuitBreakerOpenError, in the next turn. Inside an
 * actor. */
AC_API ac_status ac_breaker_ask_in(ac_ctx *ctx, ac_breaker *breaker, ac_ref *target,
                                   ac_msg *msg, int64_t timeout_ms, ac_ask_fn fn, void *user,
                                   uint64_t *id_out);

/* ---- calls of any kind ------------------------------------------------ */

/* The right to make one call. Opaque; fill it with ac_breaker_acquire. */
typedef struct ac_breaker_permit {
    uint64_t word;
} ac_breaker_permit;

/* May a call go through now? True with *permit filled; then exactly one
 * of ac_breaker_record, ac_breaker_cancel or ac_breaker_tell must follow
 * for that permit (a half-open breaker admits no other call until it
 * does). False while the breaker refuses calls; then, when `open_error`
 * is non-NULL, *open_error is the CircuitBreakerOpenError (the caller's
 * reference; NULL only when out of memory). False and AC_EINVAL for NULL
 * arguments. */
AC_API bool ac_breaker_acquire(ac_breaker *breaker, ac_breaker_permit *permit,
                               ac_error **open_error);
/* The outcome of a permitted call: `err` NULL (borrowed) for a success,
 * otherwise the error, which counts as a failure when it is a timeout
 * (AskTimeoutError, CircuitBreakerTimeoutError) or the filter says so. */
AC_API void ac_breaker_record(ac_breaker *breaker, const ac_breaker_permit *permit,
                              const ac_error *err);
/* The permitted call was not made: no outcome is counted. */
AC_API void ac_breaker_cancel(ac_breaker *breaker, const ac_breaker_permit *permit);
/* Make the permitted call by telling `msg` (consumed) to `target`
 * (borrowed) from a one-shot reply ref of the breaker's. The first answer
 * (a reply, an error reply, the news that the target had stopped, or none
 * within timeout_ms, or call_timeout_ms if shorter) is recorded and then
 * passed on to `sender` (borrowed; NULL: nobody), with the answering
 * actor as its sender. timeout_ms: 0 = AC_ASK_DEFAULT_TIMEOUT_MS. The
 * permit is used up whatever the outcome; AC_EINVAL (bad arguments, the
 * permit then cancelled) or AC_ENOMEM. Any thread. */
AC_API ac_status ac_breaker_tell(ac_breaker *breaker, const ac_breaker_permit *permit,
                                 ac_ref *target, ac_msg *msg, ac_ref *sender,
                                 int64_t timeout_ms);

/* ---- state and events ------------------------------------------------- */

typedef struct ac_breaker_info {
    ac_breaker_state state;
    /* Consecutive failures counted while closed. */
    int failures;
    /* While open: when it opened and when the next probe is allowed, in
     * ms on the system's clock; 0 otherwise. */
    int64_t opened_at_ms;
    int64_t next_probe_ms;
    /* The reset timeout the current (or next) open period is based on,
     * before jitter: reset_timeout_ms, backed off by failed probes. */
    int64_t reset_timeout_ms;
    /* Times the breaker opened so far. */
    uint64_t opened;
} ac_breaker_info;

/* The state now: OPEN turns HALF_OPEN when its reset timeout has passed,
 * whether or not a probe went through yet. */
AC_API ac_breaker_state ac_breaker_state_of(ac_breaker *breaker);
/* State and counters now, without a lock (each field is read on its own,
 * so a change meanwhile may show in some fields only); may be called from
 * a transition callback. AC_EINVAL for NULL. */
AC_API ac_status ac_breaker_get_info(ac_breaker *breaker, ac_breaker_info *info);
/* The name given at creation (or the routee's path); "" for NULL. */
AC_API const char *ac_breaker_name(const ac_breaker *breaker);

/* Subscribe an actor (borrowed: retained until unsubscribed or the
 * breaker goes) to state changes: it is told one
 * ac_msg_type_breaker_transition message per change, in order, with no
 * sender. Subscribing twice has no further effect. AC_EINVAL, AC_ENOMEM. */
AC_API ac_status ac_breaker_subscribe(ac_breaker *breaker, ac_ref *subscriber);
/* AC_ENOTFOUND when not subscribed. */
AC_API ac_status ac_breaker_unsubscribe(ac_breaker *breaker, ac_ref *subscriber);

AC_API extern const ac_msg_type ac_msg_type_breaker_transition; /* "actorc.BreakerTransition" */

typedef struct ac_breaker_transition {
    ac_breaker *breaker; /* borrowed from the message */
    ac_breaker_state from, to;
    /* When it happened, and (to OPEN) when the next probe is allowed, in
     * ms on the system's clock. */
    int64_t at_ms;
    int64_t next_probe_ms;
} ac_breaker_transition;

/* The transition in a message (borrowed), or NULL with AC_ETYPE. */
AC_API const ac_breaker_transition *ac_breaker_transition_of(const ac_msg *msg);

#ifdef __cplusplus
}
#endif
#endif
