/*
 * The Quorum message: a count and that many (reply, sender) pairs, each
 * holding a reference, released when the message goes. Built by the
 * gather that completes a quorum, read through the public accessors.
 */
#include <string.h>

#include "core/last_error.h"
#include "routing/quorum.h"
#include "routing/router_internal.h"

typedef struct quorum_entry {
    ac_msg *reply;
    ac_ref *sender;
} quorum_entry;

typedef struct quorum_payload {
    size_t n;
    quorum_entry entries[];
} quorum_payload;

static void quorum_destroy(void *payload, size_t size)
{
    (void)size;
    quorum_payload *q = payload;
    for (size_t i = 0; i < q->n; i++) {
        ac_msg_release(q->entries[i].reply);
        ac_ref_release(q->entries[i].sender);
    }
}

const ac_msg_type ac_msg_type_quorum = {.name = "actorc.Quorum", .destroy = quorum_destroy};

ac_msg *ac__quorum_new(size_t n)
{
    ac_msg *m = ac_msg_new(&ac_msg_type_quorum, sizeof(quorum_payload) + n * sizeof(quorum_entry));
    if (m)
        ((quorum_payload *)ac_msg_payload(m))->n = n;
    return m;
}

void ac__quorum_put(ac_msg *quorum, size_t i, ac_msg *reply, ac_ref *sender)
{
    quorum_entry *e = &((quorum_payload *)ac_msg_payload(quorum))->entries[i];
    e->reply = reply;
    e->sender = sender;
}

/* The payload of a Quorum message; NULL with the error recorded. */
static const quorum_payload *payload_of(const ac_msg *msg, const char *fn)
{
    if (!msg)
        return ac__fail_null(AC_EINVAL, "%s: message is NULL", fn);
    if (!ac_msg_is(msg, &ac_msg_type_quorum))
        return ac__fail_null(AC_ETYPE, "%s: a %s is not a Quorum", fn, ac_msg_type_name(msg));
    return ac_msg_data(msg);
}

size_t ac_quorum_count(const ac_msg *msg)
{
    ac__clear_status();
    const quorum_payload *q = payload_of(msg, "ac_quorum_count");
    return q ? q->n : 0;
}

static const quorum_entry *entry_of(const ac_msg *msg, size_t i, const char *fn)
{
    const quorum_payload *q = payload_of(msg, fn);
    if (!q)
        return NULL;
    if (i >= q->n)
        return ac__fail_null(AC_EINVAL, "%s: i = %zu, but the Quorum holds %zu replies", fn, i,
                             q->n);
    return &q->entries[i];
}

ac_msg *ac_quorum_reply(const ac_msg *msg, size_t i)
{
    ac__clear_status();
    const quorum_entry *e = entry_of(msg, i, "ac_quorum_reply");
    return e ? e->reply : NULL;
}

ac_ref *ac_quorum_sender(const ac_msg *msg, size_t i)
{
    ac__clear_status();
    const quorum_entry *e = entry_of(msg, i, "ac_quorum_sender");
    return e ? e->sender : NULL;
}
