/*
 * The mailbox: an intrusive multi-producer single-consumer queue (after
 * Dmitry Vyukov's non-intrusive-free MPSC design).
 *
 * Producers never wait: a push is one atomic exchange of `head` followed by
 * linking the previous head to the new node. Between those two steps the
 * queue is momentarily "broken": the consumer sees a node with no
 * successor although head has moved on. pop() then reports empty and
 * maybe_nonempty() reports non-empty, so the worker reschedules the actor
 * and finds the node on its next turn. FIFO holds per producer because each
 * producer's exchanges are ordered.
 *
 * The stub node keeps the queue non-empty from the consumer's point of
 * view, so the last real node can be handed out: it is pushed back when
 * the consumer reaches the last node.
 */
#include "core/internal.h"

void ac__mailbox_init(ac__mailbox *mb)
{
    atomic_init(&mb->stub.next, NULL);
    atomic_init(&mb->head, &mb->stub);
    mb->tail = &mb->stub;
}

static void push_link(ac__mailbox *mb, ac__link *link)
{
    atomic_store_explicit(&link->next, NULL, memory_order_relaxed);
    /* seq_cst: pairs with the consumer's seq_cst load of head in
     * maybe_nonempty (after it clears `scheduled`), so that either the
     * producer sees scheduled == 0 or the consumer sees this push. */
    ac__link *prev = atomic_exchange_explicit(&mb->head, link, memory_order_seq_cst);
    /* Release: publishes the node's contents to the consumer's acquire
     * load of prev->next. */
    atomic_store_explicit(&prev->next, link, memory_order_release);
}

void ac__mailbox_push(ac__mailbox *mb, ac__mailbox_node *node)
{
    push_link(mb, &node->link);
}

/* The link is a node's first member. */
static ac__mailbox_node *node_of(ac__link *link) { return (ac__mailbox_node *)(void *)link; }

/* Every acquire load of a `next` pairs with push_link's release store of
 * prev->next: a node seen linked is seen whole. */
ac__mailbox_node *ac__mailbox_pop(ac__mailbox *mb)
{
    ac__link *tail = mb->tail;
    ac__link *next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (tail == &mb->stub) {
        if (!next)
            return NULL;
        mb->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next) {
        mb->tail = next;
        return node_of(tail);
    }
    /* Acquire pairs with the producers' exchange of head. */
    if (tail != atomic_load_explicit(&mb->head, memory_order_acquire))
        return NULL; /* a push is half done; the node will appear shortly */
    push_link(mb, &mb->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        mb->tail = next;
        return node_of(tail);
    }
    return NULL;
}

bool ac__mailbox_maybe_nonempty(ac__mailbox *mb)
{
    if (mb->tail != &mb->stub)
        return true;
    if (atomic_load_explicit(&mb->stub.next, memory_order_acquire)) /* as in pop */
        return true;
    /* seq_cst pairs with push_link's exchange (see there). */
    return atomic_load_explicit(&mb->head, memory_order_seq_cst) != &mb->stub;
}
