/*
 * Actors: definitions, spawning, the handler context, tell, stop, death
 * watch.
 *
 * An actor is defined by a const struct of callbacks plus the size of its
 * per-actor state. Its handlers run on one worker thread at a time; the
 * state is touched only there, so it needs no locks. Messages from one
 * sender to one receiver arrive in send order.
 *
 * Where each function may be called from:
 *   any thread      ac_tell, ac_stop, ac_ref_*, ac_props_*, ac_spawn
 *   inside an actor the ac_ctx functions (ctx is valid only during the
 *                   callback it was passed to), ac_spawn_child, ac_reply,
 *                   ac_forward, ac_watch, ac_unwatch
 */
#ifndef ACTORC_ACTOR_H
#define ACTORC_ACTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "actorc/export.h"
#include "actorc/log.h"
#include "actorc/msg.h"
#include "actorc/status.h"
#include "actorc/system.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_ctx ac_ctx;
typedef struct ac_props ac_props;
typedef struct ac_error ac_error;

/* An actor's behaviour. Give it static storage duration; every field but
 * `receive` is optional. */
typedef struct ac_actor_def {
    const char *name;  /* a type name for logs ("Replica"); optional */
    size_t state_size; /* bytes of per-actor state, zeroed before init */
    /* Initialise the state (called before pre_start, and again on restart). */
    void (*init)(ac_ctx *ctx, void *state);
    void (*pre_start)(ac_ctx *ctx);
    void (*receive)(ac_ctx *ctx, ac_msg *msg);
    void (*post_stop)(ac_ctx *ctx);
    /* Restart hooks (supervision). Defaults: pre_restart calls post_stop,
     * post_restart calls pre_start. */
    void (*pre_restart)(ac_ctx *ctx, const ac_error *cause, ac_msg *msg);
    void (*post_restart)(ac_ctx *ctx, const ac_error *cause);
} ac_actor_def;

/* ---- props: what to spawn --------------------------------------------- */

/* Props for `def`, with `user_data` handed to the actor (ac_ctx_user_data).
 * Borrows `def` (it must outlive the actor). NULL with ac_last_error when
 * def or def->receive is NULL. */
AC_API ac_props *ac_props_new(const ac_actor_def *def, void *user_data);
/* Called with user_data once the actor that owns it is gone (or when the
 * props are freed unspawned). */
AC_API ac_status ac_props_set_user_data_free(ac_props *props, void (*free_fn)(void *));
/* Free props that will not be spawned. Accepts NULL. */
AC_API void ac_props_free(ac_props *props);

/* ---- spawning --------------------------------------------------------- */

/* Spawn a top-level actor (actorc://<system>/user/<name>). Consumes `props`
 * whatever the outcome. `name` NULL spawns an anonymous actor ("$1", ...);
 * otherwise it must be free among its siblings and printable text, as it
 * appears in paths, logs, metric labels and refs sent to other nodes:
 *   - 1..255 bytes of valid UTF-8 in its shortest form: no overlong
 *     sequences, no UTF-16 surrogates (U+D800..U+DFFF), nothing beyond
 *     U+10FFFF, no sequence cut short;
 *   - no control characters: U+0000..U+001F, U+007F (DEL), U+0080..U+009F;
 *   - no whitespace: the space, and Unicode's other White_Space characters
 *     (U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
 *     U+3000);
 *   - no '/', and not starting with '$' (anonymous names).
 * Anything else goes: "café", "名前", "a-b_c.d:e$f". A name that breaks the
 * rule is refused with AC_ENAME and a message saying what and at which
 * byte. Returns a new ref owned by the caller, or NULL with ac_last_error
 * (AC_ENAME, AC_EEXIST, AC_ETERMINATED, AC_EINVAL, AC_ENOMEM). NULL props
 * is AC_EINVAL: a factory that returned NULL said why in ac_last_error
 * right after it returned. Any thread. */
AC_API ac_ref *ac_spawn(ac_system *system, ac_props *props, const char *name);
/* Spawn a child of the current actor. As ac_spawn; inside an actor only. */
AC_API ac_ref *ac_spawn_child(ac_ctx *ctx, ac_props *props, const char *name);

/* ---- refs ------------------------------------------------------------- */

/* A ref outlives its actor: telling a stopped actor sends the message to
 * dead letters. Refs are valid until their system is terminated. */
AC_API ac_ref *ac_ref_retain(ac_ref *ref);
AC_API void ac_ref_release(ac_ref *ref);
/* "actorc://demo/user/replicas/routee-1" and "routee-1"; "" for NULL. */
AC_API const char *ac_ref_path(const ac_ref *ref);
AC_API const char *ac_ref_name(const ac_ref *ref);
AC_API ac_system *ac_ref_system(const ac_ref *ref);

/* ---- sending ---------------------------------------------------------- */

/* Send `msg` to `target`. Consumes `msg` whatever the outcome; borrows
 * `target` and `sender` (NULL: no sender). A stopped target counts the
 * message as a dead letter and still returns AC_OK, as delivery is never
 * guaranteed; AC_EINVAL for NULL target or message, AC_ETERMINATED when the
 * system is terminated. Any thread. */
AC_API ac_status ac_tell(ac_ref *target, ac_msg *msg, ac_ref *sender);
/* Send `msg` to the sender of the current message, as self. Without a
 * sender the message goes to dead letters. Consumes msg. Inside an actor. */
AC_API ac_status ac_reply(ac_ctx *ctx, ac_msg *msg);
/* Send the current message on to `target`, keeping its original sender.
 * Inside an actor, during receive. */
AC_API ac_status ac_forward(ac_ctx *ctx, ac_ref *target);

/* ---- stopping and death watch ----------------------------------------- */

/* Stop an actor: its children stop first, then post_stop runs, then every
 * watcher gets Terminated, then what is left in its mailbox goes to dead
 * letters. Messages already queued behind the stop are not processed.
 * Stopping a stopped actor is a no-op. AC_ENOMEM (nothing sent) when the
 * stop cannot be allocated. Any thread. */
AC_API ac_status ac_stop(ac_ref *ref);
/* A new reference to the poison pill: processed in order like any message,
 * it stops its receiver. */
AC_API ac_msg *ac_poison_pill(void);

/* Watch `target`: when it stops, the current actor receives an
 * ac_msg_type_terminated message (sender: target) — at once if target is
 * already stopped. Watching twice delivers one Terminated. `target` may be
 * a remote ref (actorc/remote.h): its Terminated also comes when its node
 * is lost, flagged (ac_terminated_node_lost). AC_ENOMEM when
 * the watch cannot be set up: nothing is watched then. Inside an actor. */
AC_API ac_status ac_watch(ac_ctx *ctx, ac_ref *target);
/* Stop watching: no Terminated for `target` is delivered afterwards.
 * AC_ENOMEM when out of memory: the watch then stays. */
AC_API ac_status ac_unwatch(ac_ctx *ctx, ac_ref *target);

AC_API extern const ac_msg_type ac_msg_type_terminated;  /* "actorc.Terminated" */
AC_API extern const ac_msg_type ac_msg_type_poison_pill; /* "actorc.PoisonPill" */
/* The actor a Terminated message is about (borrowed), or NULL. */
AC_API ac_ref *ac_terminated_ref(const ac_msg *msg);
/* Did the Terminated come because the actor's node was lost (its
 * connection dropped, its heartbeats stopped, a new incarnation of it
 * appeared) rather than because the actor stopped? False for local
 * actors, and for a message that is not a Terminated (with the last
 * error saying so). */
AC_API bool ac_terminated_node_lost(const ac_msg *msg);

/* What a dead-letter subscriber receives (see ac_dead_letters_subscribe). */
AC_API extern const ac_msg_type ac_msg_type_dead_letter; /* "actorc.DeadLetter" */
/* The undelivered message, its sender (may be NULL) and its intended
 * recipient; all borrowed from `dead_letter`. */
AC_API ac_msg *ac_dead_letter_msg(const ac_msg *dead_letter);
AC_API ac_ref *ac_dead_letter_sender(const ac_msg *dead_letter);
AC_API ac_ref *ac_dead_letter_recipient(const ac_msg *dead_letter);

/* ---- the handler context ---------------------------------------------- */

AC_API ac_ref *ac_self(ac_ctx *ctx);          /* borrowed */
AC_API ac_ref *ac_sender(ac_ctx *ctx);        /* borrowed; NULL when none */
AC_API ac_ref *ac_parent(ac_ctx *ctx);        /* borrowed; the guardian for top level */
AC_API ac_system *ac_ctx_system(ac_ctx *ctx);
AC_API const char *ac_self_path(ac_ctx *ctx);
AC_API const char *ac_self_name(ac_ctx *ctx);
AC_API void *ac_ctx_state(ac_ctx *ctx);       /* def->state_size bytes */
AC_API void *ac_ctx_user_data(ac_ctx *ctx);
/* Number of live children; copies up to `cap` borrowed refs into `out`. */
AC_API size_t ac_children(ac_ctx *ctx, ac_ref **out, size_t cap);
/* The child called `name` (borrowed), or NULL. */
AC_API ac_ref *ac_child(ac_ctx *ctx, const char *name);

/* Log a line that names this actor's path. Inside an actor. */
AC_API void ac_log(ac_ctx *ctx, ac_log_level level, const char *fmt, ...) AC_PRINTF(3, 4);
AC_API void ac_logv(ac_ctx *ctx, ac_log_level level, const char *fmt, va_list ap);
#define ac_log_debug(ctx, ...) ac_log((ctx), AC_LOG_DEBUG, __VA_ARGS__)
#define ac_log_info(ctx, ...) ac_log((ctx), AC_LOG_INFO, __VA_ARGS__)
#define ac_log_warn(ctx, ...) ac_log((ctx), AC_LOG_WARN, __VA_ARGS__)
#define ac_log_error(ctx, ...) ac_log((ctx), AC_LOG_ERROR, __VA_ARGS__)

/* True when the calling thread is running an actor's handler. Any thread. */
AC_API bool ac_in_actor(void);

#ifdef __cplusplus
}
#endif
#endif
