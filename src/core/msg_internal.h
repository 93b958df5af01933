/*
 * Messages and the envelopes they travel in (msg.c). A message owns its
 * embedded node; a node names one receiver's copy of a send. Depends on
 * the base layer only (a node's sender is an opaque ac_ref here).
 */
#ifndef AC_CORE_MSG_INTERNAL_H
#define AC_CORE_MSG_INTERNAL_H

#include "core/base.h"

/* A mailbox node: one message on its way to one receiver, linked into a
 * mailbox by `link` (no relation to ac_node, a remote node). Every message
 * has one embedded in it, used when the message is sent by its only owner
 * (the common case); a shared message sent again gets a separate
 * envelope. */
typedef struct ac__link {
    _Atomic(struct ac__link *) next;
} ac__link;

typedef struct ac__mailbox_node {
    ac__link link; /* first: a queue's link is its node */
    ac_msg *msg;
    ac_ref *sender; /* retained, or NULL */
} ac__mailbox_node;

#define AC__MSG_IMMORTAL UINT32_MAX

struct ac_msg {
    ac__mailbox_node node;
    const ac_msg_type *type;
    atomic_uint refs; /* AC__MSG_IMMORTAL: static, never freed */
    uint32_t pad;
    size_t size;
    _Alignas(16) unsigned char payload[];
};

/* Wrap `msg` (consumed) and `sender` (borrowed, retained) in a node. NULL
 * when out of memory (msg is then released). */
ac__mailbox_node *ac__mailbox_node_make(ac_msg *msg, ac_ref *sender);
/* Self-references taken in advance for the running turn's sends (see
 * msg.c). `ref` is NULL or the running actor (set at its first send as
 * sender, cleared after its turn); `sent` counts its sends retained one by
 * one; `n` references to it are held, unused. Thread-local. */
typedef struct ac__self_credit {
    ac_ref *ref;
    unsigned n, sent;
} ac__self_credit;
extern _Thread_local ac__self_credit ac__credit AC__TLS_FAST;
void ac__self_credit_give_back(void);

/* Give back what the turn that just ended took in advance for its sends.
 * The worker calls it after every turn; inline, as most turns took none. */
static inline void ac__self_credit_flush(void)
{
    if (ac__credit.ref) {
        if (AC__UNLIKELY(ac__credit.n))
            ac__self_credit_give_back();
        ac__credit.ref = NULL;
    }
}
/* Release the node's message, sender and the node itself. */
void ac__mailbox_node_free(ac__mailbox_node *node);
/* Detach a node from its message: frees a separate envelope, releases the
 * sender; the message reference is handed to the caller. */
ac_msg *ac__mailbox_node_take_msg(ac__mailbox_node *node, ac_ref **sender_out);

#endif
