/*
 * GetRoutees: asking a router which routees it has.
 *
 * The request is one immortal message, like the poison pill: asking for it
 * allocates nothing and cannot fail. Every router kind answers it in its
 * own turn, before any strategy sees it, with a Routees message that holds
 * a retained copy of the live routees in pool order. Being built in the
 * router's turn, the copy shows the pool as that turn sees it: pruned of
 * every routee whose Terminated the router has handled, and, after a
 * restart of the router, the routees spawned anew.
 *
 * The copy holds its own references, so the refs stay valid (and keep
 * their paths) for as long as the answer is kept, whatever the router does
 * in the meantime.
 */
#include <string.h>

#include "core/last_error.h"
#include "routing/router_internal.h"

typedef struct routees_payload {
    size_t n;
    ac_ref *refs[];
} routees_payload;

static void routees_destroy(void *payload, size_t size)
{
    (void)size;
    routees_payload *p = payload;
    for (size_t i = 0; i < p->n; i++)
        ac_ref_release(p->refs[i]);
}

const ac_msg_type ac_msg_type_get_routees = {.name = "actorc.GetRoutees"};
const ac_msg_type ac_msg_type_routees = {.name = "actorc.Routees", .destroy = routees_destroy};

static ac_msg get_routees = {
    .node = {.msg = &get_routees},
    .type = &ac_msg_type_get_routees,
    .refs = AC__MSG_IMMORTAL,
};

ac_msg *ac_router_get_routees_msg(void) { return &get_routees; }

static ac_msg *routees_new(ac_ref *const *routees, size_t n)
{
    ac_msg *m = ac_msg_new(&ac_msg_type_routees, sizeof(routees_payload) + n * sizeof(ac_ref *));
    if (!m)
        return NULL;
    routees_payload *p = ac_msg_payload(m);
    p->n = n;
    for (size_t i = 0; i < n; i++)
        p->refs[i] = ac_ref_retain(routees[i]);
    return m;
}

void ac__router_answer_routees(ac_ctx *ctx, ac_ref *const *routees, size_t n)
{
    ac_msg *m = routees_new(routees, n);
    if (!m) /* fail the ask rather than leave it to time out */
        m = ac_msg_error_new(ac_error_new("RouterError", "%s: out of memory for %zu routees",
                                          ac_self_path(ctx), n));
    if (m)
        ac_reply(ctx, m);
}

static const routees_payload *routees_of(const ac_msg *msg, const char *fn)
{
    if (!ac_msg_is(msg, &ac_msg_type_routees))
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "%s: message is %s, not a Routees", fn,
                             msg ? ac_msg_type_name(msg) : "NULL");
    return ac_msg_data(msg);
}

size_t ac_routees_count(const ac_msg *msg)
{
    ac__clear_status();
    const routees_payload *p = routees_of(msg, "ac_routees_count");
    return p ? p->n : 0;
}

ac_ref *ac_routees_at(const ac_msg *msg, size_t i)
{
    ac__clear_status();
    const routees_payload *p = routees_of(msg, "ac_routees_at");
    if (!p)
        return NULL;
    if (i >= p->n)
        return ac__fail_null(AC_EINVAL, "ac_routees_at: index %zu is out of range (%zu routees)",
                             i, p->n);
    return p->refs[i];
}
