/*
 * Messages and envelopes.
 *
 * A message is one allocation: header, embedded queue node, payload. A
 * message sent by its only owner travels in its own embedded node, so the
 * common tell allocates nothing beyond the message. A message with more
 * than one reference (broadcast, a retained message re-sent) may be queued
 * in several mailboxes at once, so each further send wraps it in a separate
 * envelope. The rule that decides it: refs == 1 at send time means nobody
 * else can see the message, hence nobody else can be using its node.
 *
 * A node holds a reference to its sender. An actor that sends many
 * messages in one turn names itself as the sender of each, and a retain
 * per message is a locked instruction per message on the hottest path. So
 * from its eighth send on, a turn takes references to itself in batches
 * (a per-thread credit) and hands them out one per node; the worker gives
 * back what is left when the turn ends (ac__self_credit_flush). A turn
 * that sends a few times (request/reply) retains per send, as before.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/msg_internal.h"
#include "core/ref.h"
#include "core/turn.h"

static inline bool is_immortal(const ac_msg *msg)
{
    return atomic_load_explicit(&msg->refs, memory_order_relaxed) == AC__MSG_IMMORTAL;
}

/* A message of a valid type and size whose payload the caller fills in
 * whole (the built-in constructors: no zeroing first). */
static inline ac_msg *msg_make(const char *fn, const ac_msg_type *type, size_t size)
{
    ac_msg *msg = ac__alloc_small(sizeof *msg + size);
    if (AC__UNLIKELY(!msg))
        return ac__fail_null(AC_ENOMEM, "%s: out of memory for %zu bytes", fn, size);
    msg->node.msg = msg;
    msg->node.sender = NULL;
    atomic_init(&msg->node.link.next, NULL);
    msg->type = type;
    atomic_init(&msg->refs, 1);
    msg->pad = 0;
    msg->size = size;
    return msg;
}

ac_msg *ac_msg_new(const ac_msg_type *type, size_t size)
{
    ac__clear_status();
    if (!type || !type->name)
        return ac__fail_null(AC_EINVAL, "ac_msg_new: message type (or its name) is NULL");
    if (size > ((size_t)1 << 40))
        return ac__fail_null(AC_EINVAL, "ac_msg_new: payload size %zu is too large", size);
    ac_msg *msg = msg_make("ac_msg_new", type, size);
    if (msg)
        memset(msg->payload, 0, size);
    return msg;
}

void *ac_msg_payload(ac_msg *msg) { return msg ? msg->payload : NULL; }
const void *ac_msg_data(const ac_msg *msg) { return msg ? msg->payload : NULL; }
size_t ac_msg_size(const ac_msg *msg) { return msg ? msg->size : 0; }
const ac_msg_type *ac_msg_type_of(const ac_msg *msg) { return msg ? msg->type : NULL; }
bool ac_msg_is(const ac_msg *msg, const ac_msg_type *type) { return msg && msg->type == type; }
const char *ac_msg_type_name(const ac_msg *msg) { return msg ? msg->type->name : "(null)"; }

ac_msg *ac_msg_retain(ac_msg *msg)
{
    if (msg && !is_immortal(msg))
        atomic_fetch_add_explicit(&msg->refs, 1, memory_order_relaxed);
    return msg;
}

void ac_msg_release(ac_msg *msg)
{
    if (!msg || is_immortal(msg))
        return;
    /* A count of 1 is ours alone: nobody can add to it, so no atomic
     * read-modify-write is needed (acquire: other holders' uses happened
     * before their releases brought it to 1). Otherwise acq_rel: every
     * other holder's uses happen before the free. */
    if (atomic_load_explicit(&msg->refs, memory_order_acquire) != 1 &&
        atomic_fetch_sub_explicit(&msg->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (msg->type->destroy)
        msg->type->destroy(msg->payload, msg->size);
    ac__free_small(msg, sizeof *msg + msg->size);
}

/* The send from which a turn takes batches, and their size. A turn of
 * fewer sends retains one by one, as before: a batch costs a second
 * atomic (giving back the rest), so it pays only from a few sends on; a
 * reply to an ask, say, sends twice in one turn (the reply, then the
 * answer to the asker). */
#define SELF_CREDIT_AFTER 8u
#define SELF_CREDIT_BATCH 128u

_Thread_local ac__self_credit ac__credit AC__TLS_FAST;

/* A batch is taken only inside the sender's own turn, which holds a
 * reference to it: outside one (end_turn, a destroy that sends) the actor
 * may be on its way out, and only the credit already held is used. The
 * retains here are relaxed, as any retain by a holder of a reference. */
static AC__NOINLINE ac_ref *retain_sender_slow(ac_ref *sender)
{
    ac__actor *self = ac__tls_actor;
    unsigned n = 1;
    if (self && sender == &self->ref) {
        if (!ac__credit.ref) {
            ac__credit.ref = sender; /* the turn's first send as itself */
            ac__credit.sent = 0;
        }
        if (sender == ac__credit.ref && ++ac__credit.sent >= SELF_CREDIT_AFTER) {
            /* Keep one of the batch for this node. */
            n = SELF_CREDIT_BATCH;
            ac__credit.n = SELF_CREDIT_BATCH - 1;
        }
    }
    unsigned before = atomic_fetch_add_explicit(&sender->refs, n, memory_order_relaxed);
    AC__DEBUG_ASSERT(before != 0); /* as in ac_ref_retain */
    (void)before;
    return sender;
}

/* A reference to `sender` for a node: from the turn's credit when the
 * sender is the running actor and credit is left. */
static inline ac_ref *retain_sender(ac_ref *sender)
{
    if (!sender)
        return NULL;
    if (AC__LIKELY(sender == ac__credit.ref && ac__credit.n > 0)) {
        ac__credit.n--;
        return sender;
    }
    return retain_sender_slow(sender);
}

void ac__self_credit_give_back(void)
{
    ac__ref_release_n(ac__credit.ref, ac__credit.n);
    ac__credit.n = 0;
}

ac__mailbox_node *ac__mailbox_node_make(ac_msg *msg, ac_ref *sender)
{
    ac__mailbox_node *node;
    /* Acquire pairs with the release in ac_msg_release: once we see 1, the
     * last user of the embedded node is done with it. */
    if (atomic_load_explicit(&msg->refs, memory_order_acquire) == 1) {
        node = &msg->node;
    } else {
        node = ac__alloc_small(sizeof *node);
        if (!node) {
            ac_msg_release(msg);
            return ac__fail_null(AC_ENOMEM, "out of memory for a message envelope");
        }
        node->msg = msg;
    }
    atomic_store_explicit(&node->link.next, NULL, memory_order_relaxed);
    node->sender = retain_sender(sender);
    return node;
}

ac_msg *ac__mailbox_node_take_msg(ac__mailbox_node *node, ac_ref **sender_out)
{
    ac_msg *msg = node->msg;
    ac_ref *sender = node->sender;
    if (node != &msg->node)
        ac__free_small(node, sizeof *node);
    if (sender_out)
        *sender_out = sender;
    else
        ac_ref_release(sender);
    return msg;
}

void ac__mailbox_node_free(ac__mailbox_node *node)
{
    ac_msg_release(ac__mailbox_node_take_msg(node, NULL));
}

/* ---- built-in types ---------------------------------------------------- */

const ac_msg_type ac_msg_type_str = {.name = "actorc.String"};
const ac_msg_type ac_msg_type_bytes = {.name = "actorc.Bytes"};
const ac_msg_type ac_msg_type_int64 = {.name = "actorc.Int64"};

static ac_status check_type(const ac_msg *msg, const ac_msg_type *type, const char *fn)
{
    if (!msg)
        return ac__fail(AC_EINVAL, "%s: message is NULL", fn);
    if (msg->type != type)
        return ac__fail(AC_ETYPE, "%s: message is a %s, not a %s", fn, msg->type->name,
                        type->name);
    return AC_OK;
}

ac_msg *ac_msg_str_new(const char *s)
{
    ac__clear_status();
    if (!s)
        return ac__fail_null(AC_EINVAL, "ac_msg_str_new: string is NULL");
    size_t len = strlen(s);
    ac_msg *msg = msg_make("ac_msg_str_new", &ac_msg_type_str, len + 1);
    if (msg)
        memcpy(msg->payload, s, len + 1);
    return msg;
}

ac_msg *ac_msg_printf(const char *fmt, ...)
{
    ac__clear_status();
    if (!fmt)
        return ac__fail_null(AC_EINVAL, "ac_msg_printf: format is NULL");
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return ac__fail_null(AC_EINVAL, "ac_msg_printf: bad format \"%s\"", fmt);
    ac_msg *msg = msg_make("ac_msg_printf", &ac_msg_type_str, (size_t)len + 1);
    if (!msg)
        return NULL;
    va_start(ap, fmt);
    vsnprintf((char *)msg->payload, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return msg;
}

const char *ac_msg_str(const ac_msg *msg)
{
    ac__clear_status();
    if (check_type(msg, &ac_msg_type_str, "ac_msg_str") != AC_OK)
        return NULL;
    return (const char *)msg->payload;
}

ac_msg *ac_msg_bytes_new(const void *data, size_t len)
{
    ac__clear_status();
    if (!data && len)
        return ac__fail_null(AC_EINVAL, "ac_msg_bytes_new: data is NULL but len is %zu", len);
    if (len > ((size_t)1 << 40))
        return ac__fail_null(AC_EINVAL, "ac_msg_bytes_new: len %zu is too large", len);
    ac_msg *msg = msg_make("ac_msg_bytes_new", &ac_msg_type_bytes, len);
    if (msg && len)
        memcpy(msg->payload, data, len);
    return msg;
}

const uint8_t *ac_msg_bytes(const ac_msg *msg, size_t *len)
{
    ac__clear_status();
    if (check_type(msg, &ac_msg_type_bytes, "ac_msg_bytes") != AC_OK)
        return NULL;
    if (len)
        *len = msg->size;
    return msg->payload;
}

ac_msg *ac_msg_int64_new(int64_t v)
{
    ac__clear_status();
    ac_msg *msg = msg_make("ac_msg_int64_new", &ac_msg_type_int64, sizeof v);
    if (msg)
        memcpy(msg->payload, &v, sizeof v);
    return msg;
}

ac_status ac_msg_int64_get(const ac_msg *msg, int64_t *out)
{
    ac_status st = check_type(msg, &ac_msg_type_int64, "ac_msg_int64_get");
    if (st != AC_OK)
        return st;
    if (!out)
        return ac__fail(AC_EINVAL, "ac_msg_int64_get: out is NULL");
    memcpy(out, msg->payload, sizeof *out);
    return AC_OK;
}

int64_t ac_msg_int64(const ac_msg *msg)
{
    ac__clear_status();
    int64_t v = 0;
    if (check_type(msg, &ac_msg_type_int64, "ac_msg_int64") != AC_OK)
        return 0;
    memcpy(&v, msg->payload, sizeof v);
    return v;
}
