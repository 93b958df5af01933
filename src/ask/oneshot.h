/*
 * One-shot reply refs (oneshot.c): the piece that an ask's reply ref and
 * a scatter's slots share. A one-shot ref settles exactly once, whoever
 * comes first: a reply, an error reply, the news that the request was not
 * delivered, or its deadline. The first claims it (a CAS on its claim
 * word, 0 -> 1); everything later is dropped without a trace.
 *
 * A kind of one-shot ref supplies an ac__oneshot_ops whose `ref` member is
 * its ref ops (with ac__oneshot_deliver and ac__oneshot_undeliverable),
 * says where its claim word is, and settles. The claim word lives in the
 * kind's own struct, so that a one-shot ref costs no byte more than it
 * did. Any thread.
 */
#ifndef AC_ASK_ONESHOT_H
#define AC_ASK_ONESHOT_H

#include "core/ref.h"

typedef struct ac__oneshot_ops {
    ac__ref_ops ref; /* first: a ref's ops pointer leads here */
    size_t claim_offset; /* of an atomic_int, 0 while unclaimed */
    /* The one outcome, run once, by the claimer: a reply or an error
     * (exactly one non-NULL) with the sender that sent it (may be NULL);
     * consumes all three. */
    void (*settle)(ac_ref *self, ac_msg *reply, ac_error *error, ac_ref *sender);
    /* Whom the request went to: named by an undeliverable error. */
    ac_ref *(*target)(const ac_ref *self);
} ac__oneshot_ops;

/* Win the one outcome. True for exactly one caller. */
bool ac__oneshot_claim(ac_ref *self);
/* ac__ref_ops.settled: has it been claimed? */
bool ac__oneshot_settled(const ac_ref *self);
/* ac__ref_ops.deliver: claim and settle with the reply (an error message
 * settles with its error), or drop the node. */
void ac__oneshot_deliver(ac_ref *self, ac__mailbox_node *node);
/* ac__ref_ops.undeliverable: claim and settle with ActorStoppedError or
 * UndeliverableError. */
void ac__oneshot_undeliverable(ac_ref *self, ac_ref *recipient, const char *why);
/* The error a deadline settles with: AskTimeoutError naming the target.
 * Never NULL: an ask must be answered, so when the error cannot be made
 * the out-of-memory rule aborts, naming `what`. */
ac_error *ac__oneshot_timeout_error(const ac_ref *target, uint32_t timeout_ms, const char *what);

#endif
