/*
 * Refs (ref.c): the one interface behind every kind of ac_ref, its
 * reference count, and sets of refs. A ref is a counted object with a
 * vtable; this header knows no ref kind's struct. Depends on messages
 * (a deliver takes a node).
 */
#ifndef AC_CORE_REF_H
#define AC_CORE_REF_H

#include "core/msg_internal.h"

typedef enum ac__ref_kind {
    AC__REF_ACTOR = 1,
    AC__REF_REPLY,       /* one-shot reply refs (ask, scatter slots) */
    AC__REF_FOREIGN      /* kinds defined outside the core (remote refs) */
} ac__ref_kind;

typedef struct ac__ref_ops {
    ac__ref_kind kind;
    /* Deliver a node (consumed). */
    void (*deliver)(ac_ref *self, ac__mailbox_node *node);
    /* Free the object once its last reference is gone. */
    void (*destroy)(ac_ref *self);
    const char *(*path)(const ac_ref *self);
    /* Optional, for reply refs: is the request this ref awaits an answer
     * to no longer wanted (its asker has its answer from elsewhere)? With
     * `skip`, from a turn about to drop the request unhandled, a true
     * answer also settles the ref as cancelled. Any thread. */
    bool (*cancelled)(ac_ref *self, bool skip);
    /* Optional, for reply refs: has this ref had its one outcome, so that
     * whatever reaches it from now on is dropped? Lets whoever keeps it
     * for a later answer (a node's table of asks in flight) let go of it
     * early. NULL: never known to be. Any thread. */
    bool (*settled)(const ac_ref *self);
    /* Optional: a message this ref sent could not be delivered to
     * `recipient`, because it had stopped (why == NULL) or for the reason
     * `why`. Lets an ask fail fast. */
    void (*undeliverable)(ac_ref *self, ac_ref *recipient, const char *why);
    /* Optional: may this ref take `msg` at all? Called by ac_tell before
     * deliver; a refusal (recorded with ac__fail) makes the send fail
     * with that status and the message a dead letter. For refs that can
     * refuse what others take (a remote ref: a type with no codec). */
    ac_status (*admit)(ac_ref *self, const ac_msg *msg);
    /* Optional, for refs that are not actors but can be watched (remote
     * refs): `watcher` (a local actor, in its own turn) starts or stops
     * watching. The ref tells the watcher Terminated (ac__ext_terminated_new)
     * when what it stands for is gone. Without them ac_watch refuses. */
    void (*watch)(ac_ref *self, ac_ref *watcher);
    void (*unwatch)(ac_ref *self, ac_ref *watcher);
} ac__ref_ops;

struct ac_ref {
    const ac__ref_ops *ops;
    atomic_uint refs;
    ac_system *system;
};

AC__SPI void ac__ref_init(ac_ref *ref, const ac__ref_ops *ops, ac_system *system);
/* Drop n references at once. */
void ac__ref_release_n(ac_ref *ref, unsigned n);

/* Is this ref an actor that is stopping or stopped? */
bool ac__ref_is_stopping(const ac_ref *ref);
/* Is this ref a stopped actor? */
bool ac__ref_is_dead(const ac_ref *ref);

/* ---- refsets ---------------------------------------------------------- */

/* A growable set of retained refs (watchers, watched). Not synchronised:
 * its owner's turn (or lock) guards it. */
typedef struct ac__refset {
    ac_ref **items;
    uint32_t count, cap;
} ac__refset;

AC__SPI bool ac__refset_contains(const ac__refset *s, const ac_ref *r);
AC__SPI int ac__refset_add(ac__refset *s, ac_ref *r); /* retains; no duplicates */
AC__SPI bool ac__refset_remove(ac__refset *s, const ac_ref *r); /* releases */
AC__SPI void ac__refset_clear(ac__refset *s);           /* releases all */

#endif
