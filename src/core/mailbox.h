/*
 * The mailbox (mailbox.c): an intrusive multi-producer, single-consumer
 * queue of nodes. Depends on messages only.
 */
#ifndef AC_CORE_MAILBOX_H
#define AC_CORE_MAILBOX_H

#include "core/msg_internal.h"

/* Intrusive MPSC queue (after Vyukov): producers exchange `head`, the one
 * consumer owns `tail`. `stub` is a next-pointer-only placeholder. */
typedef struct ac__mailbox {
    _Atomic(ac__link *) head; /* producers */
    ac__link *tail;           /* consumer */
    ac__link stub;            /* placeholder, never handed out */
} ac__mailbox;

void ac__mailbox_init(ac__mailbox *mb);
/* Any thread. */
void ac__mailbox_push(ac__mailbox *mb, ac__mailbox_node *node);
/* Consumer only. NULL when empty (or when a push is half done). */
ac__mailbox_node *ac__mailbox_pop(ac__mailbox *mb);
/* Consumer only: may the queue hold something (including a push in
 * progress)? Sequentially consistent with producers' pushes. */
bool ac__mailbox_maybe_nonempty(ac__mailbox *mb);

#endif
