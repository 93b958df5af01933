/*
 * A cell's front door (front.c, spawn.c): an object that a props can give
 * the actors spawned from it, which sees every message sent to the actor
 * before its mailbox does and may take it instead, on the sender's thread.
 * A router uses it to pick its routee in the sender's thread (routing/
 * router_front.c), so that a message reaches the routee in one hop; what
 * the front leaves goes to the mailbox as for any actor.
 *
 * The front lives as long as the cell (freed with it), so a sender holding
 * a reference to the actor may always call it, whatever state the actor is
 * in; what the front must not outlive (the actor's user data, freed when
 * it stops) it must not reach from its deliver.
 */
#ifndef AC_CORE_FRONT_H
#define AC_CORE_FRONT_H

#include "core/base.h"
#include "core/cell.h"
#include "core/msg_internal.h"
#include "core/ref.h"

typedef struct ac__front ac__front;

typedef struct ac__front_ops {
    /* Take `node` (a message and its sender) sent to `self`, and return
     * true; or leave it (false), and it is queued at the actor. Any
     * thread; must not block. */
    bool (*deliver)(ac__front *front, ac_ref *self, ac__mailbox_node *node);
    /* Free the front: the cell is being freed, nobody can send any more. */
    void (*free)(ac__front *front);
    /* Optional: the cell's own ref ops, in place of the core's (which call
     * `deliver` above, then the mailbox): a front on every message's path
     * saves a call by being the cell's deliver itself. Their deliver finds
     * the front with ac__front_of and hands what it leaves to
     * ac__actor_deliver; their destroy and path are ac__cell_destroy and
     * ac__cell_path, their kind AC__REF_ACTOR. */
    const ac__ref_ops *cell_ops;
} ac__front_ops;

struct ac__front {
    const ac__front_ops *ops;
};

/* A cell's ref ops' destroy and path, for a front's cell_ops. */
void ac__cell_destroy(ac_ref *self);
const char *ac__cell_path(const ac_ref *self);

/* The front of a cell spawned with one. Any thread. */
static inline ac__front *ac__front_of(ac_ref *self) { return ((ac__actor *)self)->front; }

/* Give actors spawned from `props` the front `front` (owned by the props
 * until a spawn moves it into the cell; ac_props_free frees it). One
 * props, one cell: a props spawns once. */
void ac__props_front(ac_props *props, ac__front *front);

/* Deliver `node` to `target` as ac_tell would: through the target's admit
 * check when it has one (a refusal makes the message a dead letter), then
 * its deliver. Consumes node. Any thread. */
void ac__ref_deliver_node(ac_ref *target, ac__mailbox_node *node);

#endif
