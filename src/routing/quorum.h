/*
 * The Quorum message (quorum.c): what a scatter with a quorum of K >= 2
 * answers, K replies and their senders in arrival order.
 */
#ifndef AC_ROUTING_QUORUM_H
#define AC_ROUTING_QUORUM_H

#include <stddef.h>

#include "actorc/msg.h"

/* A Quorum message with room for n replies; NULL when out of memory. */
ac_msg *ac__quorum_new(size_t n);
/* Fill place i (before the message is sent): consumes reply and sender. */
void ac__quorum_put(ac_msg *quorum, size_t i, ac_msg *reply, ac_ref *sender);

#endif
