/*
 * The message types the core owns (core_msgs.c): Terminated, DeadLetter,
 * PoisonPill and the internal Run. Their payload layouts are shared with
 * the turn, which recognises them.
 */
#ifndef AC_CORE_CORE_MSGS_H
#define AC_CORE_CORE_MSGS_H

#include "core/msg_internal.h"

/* A Terminated message's payload. */
typedef struct ac__terminated_payload {
    ac_ref *who; /* retained */
    bool node_lost;
} ac__terminated_payload;

/* A message that runs a function in its receiver's turn instead of
 * receive (ask continuations). Its payload starts with this header. */
typedef struct ac__run_header {
    void (*run)(ac_ctx *ctx, ac_msg *msg);
    void (*destroy)(void *payload, size_t size); /* optional */
} ac__run_header;
extern const ac_msg_type ac__msg_type_run; /* "actorc.Run" */

/* A dead-letter notice for subscribers (retains all three). */
ac_msg *ac__dead_letter_msg_new(ac_msg *msg, ac_ref *sender, ac_ref *recipient);

#endif
