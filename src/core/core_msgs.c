/*
 * The message types the core owns: Terminated (death watch), DeadLetter
 * (for subscribers), PoisonPill (stop after what is queued) and Run (a
 * function run in the receiver's turn). The poison pill is immortal and
 * static: sending it allocates nothing beyond an envelope when shared.
 */
#include "core/alloc.h"
#include "core/core_msgs.h"
#include "core/extension.h"
#include "core/last_error.h"
#include "core/ref.h"

/* ---- message types owned by the core ---------------------------------- */

typedef struct dead_letter_payload {
    ac_msg *msg;
    ac_ref *sender;
    ac_ref *recipient;
} dead_letter_payload;

static void terminated_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(((ac__terminated_payload *)payload)->who);
}

static void dead_letter_destroy(void *payload, size_t size)
{
    dead_letter_payload *p = payload;
    (void)size;
    ac_msg_release(p->msg);
    ac_ref_release(p->sender);
    ac_ref_release(p->recipient);
}

const ac_msg_type ac_msg_type_terminated = {.name = "actorc.Terminated",
                                            .destroy = terminated_destroy};
const ac_msg_type ac_msg_type_poison_pill = {.name = "actorc.PoisonPill"};

static void run_destroy(void *payload, size_t size)
{
    ac__run_header *h = payload;
    if (h->destroy)
        h->destroy(payload, size);
}

const ac_msg_type ac__msg_type_run = {.name = "actorc.Run", .destroy = run_destroy};
const ac_msg_type ac_msg_type_dead_letter = {.name = "actorc.DeadLetter",
                                             .destroy = dead_letter_destroy};

static ac_msg poison_pill = {
    .node = {.msg = &poison_pill},
    .type = &ac_msg_type_poison_pill,
    .refs = AC__MSG_IMMORTAL,
};

ac_msg *ac_poison_pill(void) { return &poison_pill; }

ac_ref *ac_terminated_ref(const ac_msg *msg)
{
    ac__clear_status();
    if (!msg || msg->type != &ac_msg_type_terminated)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL,
                             "ac_terminated_ref: message is %s, not a Terminated",
                             msg ? msg->type->name : "NULL");
    return ((const ac__terminated_payload *)(const void *)msg->payload)->who;
}

bool ac_terminated_node_lost(const ac_msg *msg)
{
    ac__clear_status();
    if (!msg || msg->type != &ac_msg_type_terminated)
        return ac__fail(msg ? AC_ETYPE : AC_EINVAL,
                        "ac_terminated_node_lost: message is %s, not a Terminated",
                        msg ? msg->type->name : "NULL") == AC_OK;
    return ((const ac__terminated_payload *)(const void *)msg->payload)->node_lost;
}

ac_msg *ac__ext_terminated_new(ac_ref *who, bool node_lost)
{
    ac_msg *m = ac_msg_new(&ac_msg_type_terminated, sizeof(ac__terminated_payload));
    if (AC__UNLIKELY(!m)) /* a watcher waits for it */
        ac__oom_abort("a Terminated message");
    ac__terminated_payload *p = (ac__terminated_payload *)(void *)m->payload;
    p->who = ac_ref_retain(who);
    p->node_lost = node_lost;
    return m;
}

static const dead_letter_payload *dead_letter_of(const ac_msg *msg, const char *fn)
{
    if (!msg || msg->type != &ac_msg_type_dead_letter)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "%s: message is %s, not a DeadLetter",
                             fn, msg ? msg->type->name : "NULL");
    return (const dead_letter_payload *)(const void *)msg->payload;
}

ac_msg *ac_dead_letter_msg(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_msg");
    return p ? p->msg : NULL;
}

ac_ref *ac_dead_letter_sender(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_sender");
    return p ? p->sender : NULL;
}

ac_ref *ac_dead_letter_recipient(const ac_msg *dl)
{
    const dead_letter_payload *p = dead_letter_of(dl, "ac_dead_letter_recipient");
    return p ? p->recipient : NULL;
}

ac_msg *ac__dead_letter_msg_new(ac_msg *msg, ac_ref *sender, ac_ref *recipient)
{
    ac_msg *dl = ac_msg_new(&ac_msg_type_dead_letter, sizeof(dead_letter_payload));
    if (!dl)
        return NULL;
    dead_letter_payload *p = (dead_letter_payload *)(void *)dl->payload;
    p->msg = ac_msg_retain(msg);
    p->sender = ac_ref_retain(sender);
    p->recipient = ac_ref_retain(recipient);
    return dl;
}
