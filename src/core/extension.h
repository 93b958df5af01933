/*
 * The extension interface (extension.c, and the ac__ext_* functions of
 * lifecycle.c and core_msgs.c): what the core offers to actorc's own
 * optional libraries that add kinds of refs (actorc_remote: remote refs,
 * reply targets on other nodes). Exported from libactorc (AC__SPI) though
 * internal; no promise to any other program.
 *
 * A foreign ref kind fills an ac__ref_ops with kind AC__REF_FOREIGN and
 * initialises its refs with ac__ref_init. Messages come to its deliver as
 * nodes; ac__ext_node_take takes one apart.
 */
#ifndef AC_CORE_EXTENSION_H
#define AC_CORE_EXTENSION_H

#include "core/ref.h"

/* ac__mailbox_node_take_msg, exported: the node's message (the caller's
 * reference) and *sender (retained, or NULL); the node is gone. */
AC__SPI ac_msg *ac__ext_node_take(ac__mailbox_node *node, ac_ref **sender);
/* A Terminated about `who` (retained by the message), flagged when what
 * ended is the connection to `who`'s node. Aborts when out of memory (a
 * watcher waits for it). */
AC__SPI ac_msg *ac__ext_terminated_new(ac_ref *who, bool node_lost);

/* `watcher` (any ref; it is retained and told Terminated like any
 * watcher) starts or stops watching the local actor `target`. Nothing
 * when target is not a local actor. Any thread. */
AC__SPI void ac__ext_watch_as(ac_ref *target, ac_ref *watcher);
AC__SPI void ac__ext_unwatch_as(ac_ref *target, ac_ref *watcher);

/* Deliver `msg` (consumed) with `sender` (borrowed) to the local actor at
 * `path` (len bytes, "/user/a" or "/user/a/b/c": the part of an actor's
 * path after "actorc://<system>"). A top-level actor is found at once;
 * a deeper one through its ancestors, a hop per level, each in its
 * ancestor's turn (so messages to one path stay in order). When no actor
 * is there the message is a dead letter, and a sender waiting for an
 * answer is told why ("no actor at <path>"). AC_EINVAL for a path
 * outside "/user"; AC_ETERMINATED when the system is terminating. Any
 * thread. */
AC__SPI ac_status ac__ext_deliver_path(ac_system *sys, const char *path, size_t len, ac_msg *msg,
                                       ac_ref *sender);

/* The local actor at `path` (len bytes, as above), retained, when it is
 * a top-level actor that has not stopped; NULL otherwise (deeper paths
 * are reached with ac__ext_deliver_path). Any thread. */
AC__SPI ac_ref *ac__ext_lookup_top(ac_system *sys, const char *path, size_t len);

/* Find the local actor at `path` (len bytes, as above) for `asker`,
 * which is told a Located message in answer (without a sender): the path
 * and the actor's ref, or no ref when no live actor is there. A top-level
 * actor is found at once; a deeper one through its ancestors, as
 * ac__ext_deliver_path goes, but the actor itself is told nothing, and a
 * missing one is no dead letter. The answer may be lost when memory runs
 * out; an asker that needs it asks again. AC_EINVAL for a path outside
 * "/user" or a NULL asker (then no answer comes). Any thread. */
AC__SPI ac_status ac__ext_locate(ac_system *sys, const char *path, size_t len, ac_ref *asker);
AC__SPI extern const ac_msg_type ac__ext_located_type; /* "actorc.Located" */
/* A Located message's actor (borrowed from the message; NULL: none) and
 * path; false for a message of another type. */
AC__SPI bool ac__ext_located_read(const ac_msg *msg, ac_ref **actor, const char **path);

/* Has the local actor `ref` stopped (false for other refs)? Any thread. */
AC__SPI bool ac__ext_ref_is_dead(const ac_ref *ref);

/* Count, log and publish an undeliverable message (consumed) from
 * `sender` (borrowed) to `recipient` (borrowed, may be NULL), telling a
 * sender that waits for an answer `why` (NULL: the recipient stopped). */
AC__SPI void ac__ext_dead_letter(ac_system *sys, ac_msg *msg, ac_ref *sender, ac_ref *recipient,
                                 const char *why);

/* ---- a part attached to a system --------------------------------------- */

/* An optional part that lives as long as a system (a node). At
 * ac_system_terminate, after every actor has stopped, `stop` runs (the
 * part must then stop calling into the system: no more tells), then the
 * workers and timers stop and every cell is freed (releasing the refs
 * cells held), then `free` runs. Either may be NULL. */
typedef struct ac__ext_part {
    const char *key; /* one part per key and system */
    void (*stop)(void *ctx);
    void (*free)(void *ctx);
    void *ctx;
    struct ac__ext_part *next; /* the core's */
} ac__ext_part;

/* Attach `part` (which must live until its free runs). AC_EEXIST when a
 * part with its key is attached, AC_ETERMINATED when the system is
 * terminating. Any thread. */
AC__SPI ac_status ac__ext_attach(ac_system *sys, ac__ext_part *part);
/* Detach it again (its stop and free are not run). Any thread. */
AC__SPI void ac__ext_detach(ac_system *sys, ac__ext_part *part);
/* The context of the part attached with `key`, or NULL. Any thread. */
AC__SPI void *ac__ext_find(ac_system *sys, const char *key);

#endif
