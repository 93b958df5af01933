/*
 * Ask: request/response with a deadline.
 *
 * An ask sends `msg` to `target` with a fresh one-shot reply ref as its
 * sender. The first message that reaches the reply ref settles the ask: an
 * error message (ac_msg_error_new) rejects it, anything else fulfils it.
 * If nothing arrives within the timeout, the ask is rejected with an
 * AskTimeoutError naming the target and the timeout. Anything arriving
 * after the ask settled is dropped silently: no dead letter, no log line.
 * An ask to an actor that has stopped fails at once with an
 * ActorStoppedError (and the message counts as a dead letter). An ask
 * still open when its system terminates settles then, the same way, as
 * its target stops without answering: a future's callback runs once, on
 * the terminating thread, before ac_system_terminate returns.
 *
 * Three ways to wait:
 *   outside actors   ac_ask_wait (blocking), or ac_ask -> ac_future, which
 *                    can be waited on, polled, or given a callback
 *   inside an actor  ac_ask_in: the answer arrives later, in the asker's own
 *                    turn, either to a continuation or to receive as an
 *                    ac_msg_type_answer message matched by its id
 */
#ifndef ACTORC_ASK_H
#define ACTORC_ASK_H

#include <stdbool.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/error.h"
#include "actorc/export.h"
#include "actorc/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default timeout of an ask, used when timeout_ms is 0. */
#define AC_ASK_DEFAULT_TIMEOUT_MS 5000

/* The outcome of an ask: exactly one of reply and error is set. The answer
 * owns a reference to each; ac_answer_release drops them.
 *
 * `sender` is whoever sent the reply or the error message:
 *   a reply, or an error reply    the actor that sent it; through a pool
 *                                 router, the routee that answered (for
 *                                 broadcast, the first); through
 *                                 scatter/gather, the winning routee
 *   a router's own answers        the router: the Routees answer to
 *                                 GetRoutees; a scatter/gather failure
 *                                 (its AggregateError, AC_EFAILED)
 *   AskTimeoutError               NULL (the ask's own timeout)
 *   ActorStoppedError,            NULL (the request was not delivered: the
 *   UndeliverableError            target, or the routee a router picked,
 *                                 had stopped; or a pool router other than
 *                                 scatter/gather had no routees left;
 *                                 AC_EDEAD)
 * router.h lists what each router kind answers. */
typedef struct ac_answer {
    ac_msg *reply;
    ac_error *error;
    ac_ref *sender;
} ac_answer;

AC_API void ac_answer_release(ac_answer *answer);
/* The status that ac_ask_wait and ac_future_wait return for `answer`
 * (borrowed): AC_OK for a reply, AC_ETIMEOUT for an AskTimeoutError,
 * AC_EDEAD for an ActorStoppedError or UndeliverableError, AC_EFAILED for
 * any other error; AC_EINVAL for NULL. For completion callbacks, which get
 * the answer alone. Any thread. */
AC_API ac_status ac_answer_status(const ac_answer *answer);

typedef struct ac_future ac_future;

/* Ask and block until the answer. Consumes `msg`; borrows `target`.
 * timeout_ms: 0 = AC_ASK_DEFAULT_TIMEOUT_MS; negative is AC_EINVAL.
 * Returns AC_OK with answer->reply, or, with answer->error set:
 *   AC_ETIMEOUT  AskTimeoutError: nothing came back in time
 *   AC_EDEAD     the request was not delivered: ActorStoppedError (the
 *                target, or the routee a router picked, had stopped), or
 *                UndeliverableError from a round-robin, random, broadcast,
 *                smallest-mailbox or custom router with no routees left
 *   AC_EFAILED   an error reply; from a scatter/gather router, its
 *                AggregateError (also when it has no routees left to
 *                scatter to)
 * Bad arguments: AC_EINVAL, AC_EINACTOR inside an actor (it would block a
 * worker), AC_ETERMINATED; *answer is then zeroed. Outside actors only. */
AC_API ac_status ac_ask_wait(ac_ref *target, ac_msg *msg, int64_t timeout_ms,
                             ac_answer *answer);

/* Ask without blocking. Returns a future (the caller's reference; release
 * it with ac_future_release whether or not it settled), or NULL with
 * ac_last_error. Consumes msg. Any thread. */
AC_API ac_future *ac_ask(ac_ref *target, ac_msg *msg, int64_t timeout_ms);
/* Wait up to wait_ms (negative, or beyond what the monotonic clock can
 * count in nanoseconds, about 580 years: no limit) for the future to settle; then
 * as ac_ask_wait. AC_EPENDING (answer zeroed) if it has not settled yet.
 * Outside actors only. */
AC_API ac_status ac_future_wait(ac_future *future, int64_t wait_ms, ac_answer *answer);
/* Has it settled? If so and `answer` is non-NULL, fill it (new references)
 * and return true. Any thread. */
AC_API bool ac_future_poll(ac_future *future, ac_answer *answer);
/* Call `fn` exactly once when the future settles: on the settling thread,
 * or at once on this thread if it already has. `answer` is borrowed for the
 * call. One callback per future (AC_EINVAL for a second). A callback must
 * be short and must not block. Any thread. */
typedef void (*ac_future_fn)(const ac_answer *answer, void *user);
AC_API ac_status ac_future_on_complete(ac_future *future, ac_future_fn fn, void *user);
AC_API void ac_future_release(ac_future *future);

/* ---- inside actors ---------------------------------------------------- */

/* A continuation run in the asker's own turn, with ctx's sender set to who
 * answered. `answer` is borrowed for the call. */
typedef void (*ac_ask_fn)(ac_ctx *ctx, const ac_answer *answer, void *user);

/* Ask from inside an actor. When `fn` is non-NULL it runs with the answer
 * in a later turn of this actor; otherwise receive gets an
 * ac_msg_type_answer message whose ac_answer_id equals *id_out (id_out
 * may be NULL). A settled ask cancels its timer (see ac_timers_armed).
 * Consumes msg. If the asker has stopped by then, the answer goes to dead
 * letters like any message to a stopped actor. Inside an actor. */
AC_API ac_status ac_ask_in(ac_ctx *ctx, ac_ref *target, ac_msg *msg, int64_t timeout_ms,
                           ac_ask_fn fn, void *user, uint64_t *id_out);

AC_API extern const ac_msg_type ac_msg_type_answer; /* "actorc.Answer" */
/* The answer in an ac_msg_type_answer message (borrowed), or NULL. */
AC_API const ac_answer *ac_answer_of(const ac_msg *msg);
/* Its correlation id (as returned by ac_ask_in), or 0. */
AC_API uint64_t ac_answer_id(const ac_msg *msg);

#ifdef __cplusplus
}
#endif
#endif
