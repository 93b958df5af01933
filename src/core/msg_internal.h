/*
 * Messages and the envelopes they travel in (msg.c). A message owns its
 * embedded node; a node names one receiver's copy of a send. Depends on
 * the base layer only (a node's sender is an opaque ac_ref here).
 */
#ifndef AC_CORE_MSG_INTERNAL_H
#define AC_CORE_MSG_INTERNAL_H

#include "core/base.h"

/* A queue node: one message on its way to one receiver. Every message has
 * one embedded in it, used when the message is sent by its only owner (the
 * common case); a shared message sent again gets a separate envelope. */
typedef struct ac__link {
    _Atomic(struct ac__link *) next;
} ac__link;

typedef struct ac__node {
    ac__link link; /* first: a queue's link is its node */
    ac_msg *msg;
    ac_ref *sender; /* retained, or NULL */
} ac__node;

#define AC__MSG_IMMORTAL UINT32_MAX

struct ac_msg {
    ac__node node;
    const ac_msg_type *type;
    atomic_uint refs; /* AC__MSG_IMMORTAL: static, never freed */
    uint32_t pad;
    size_t size;
    _Alignas(16) unsigned char payload[];
};

/* Wrap `msg` (consumed) and `sender` (borrowed, retained) in a node. NULL
 * when out of memory (msg is then released). */
ac__node *ac__node_make(ac_msg *msg, ac_ref *sender);
/* Release the node's message, sender and the node itself. */
void ac__node_free(ac__node *node);
/* Detach a node from its message: frees a separate envelope, releases the
 * sender; the message reference is handed to the caller. */
ac_msg *ac__node_take_msg(ac__node *node, ac_ref **sender_out);

#endif
