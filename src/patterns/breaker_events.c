/*
 * A breaker's changes told: its on_transition callback and its
 * subscribers' BreakerTransition messages, in the order the changes
 * happened (the caller holds the breaker's lock), and the state gauge and
 * transition counters of its metrics.
 */
#include <stdlib.h>

#include "core/last_error.h"
#include "core/turn.h"
#include "patterns/breaker_state.h"

const char *ac_breaker_state_name(ac_breaker_state s)
{
    switch (s) {
    case AC_BREAKER_CLOSED:
        return "closed";
    case AC_BREAKER_HALF_OPEN:
        return "half-open";
    case AC_BREAKER_OPEN:
        return "open";
    }
    return "unknown";
}

/* ---- transition messages ---------------------------------------------- */

static void transition_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(&((ac_breaker_transition *)payload)->breaker->ref); /* not a handle */
}

const ac_msg_type ac_msg_type_breaker_transition = {.name = "actorc.BreakerTransition",
                                                    .destroy = transition_destroy};

const ac_breaker_transition *ac_breaker_transition_of(const ac_msg *msg)
{
    ac__clear_status();
    if (!ac_msg_is(msg, &ac_msg_type_breaker_transition))
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL,
                             "ac_breaker_transition_of: message is %s, not a transition",
                             ac_msg_type_name(msg));
    return ac_msg_data(msg);
}

static void tell_subscribers(ac_breaker *b, const ac_breaker_transition *t)
{
    for (uint32_t i = 0; i < b->subscribers.count; i++) {
        ac_msg *m = ac_msg_new(&ac_msg_type_breaker_transition, sizeof *t);
        if (!m)
            continue;
        ac_breaker_transition *p = ac_msg_payload(m);
        *p = *t;
        ac_ref_retain(&b->ref);
        ac_tell(b->subscribers.items[i], m, NULL);
    }
}

void ac__breaker_announce(ac_breaker *b, ac_breaker_state from, ac_breaker_state to)
{
    ac_gauge_set(b->state_gauge, (double)to);
    ac_counter_inc(b->transitions[to]);
    ac_breaker_transition t = {
        .breaker = b, .from = from, .to = to, .at_ms = ac__breaker_now_ms(b)};
    if (to == AC_BREAKER_OPEN)
        t.next_probe_ms = atomic_load_explicit(&b->open_until_ms, memory_order_relaxed);
    if (b->on_transition)
        b->on_transition(b, from, to, b->on_transition_user);
    tell_subscribers(b, &t);
}

ac_status ac_breaker_subscribe(ac_breaker *b, ac_ref *subscriber)
{
    if (!b || !subscriber)
        return ac__fail(AC_EINVAL, "ac_breaker_subscribe: %s is NULL",
                        b ? "subscriber" : "breaker");
    pthread_mutex_lock(&b->lock);
    int rc = ac__refset_add(&b->subscribers, subscriber);
    pthread_mutex_unlock(&b->lock);
    if (rc < 0)
        return ac__fail(AC_ENOMEM, "ac_breaker_subscribe: out of memory");
    return AC_OK;
}

ac_status ac_breaker_unsubscribe(ac_breaker *b, ac_ref *subscriber)
{
    if (!b || !subscriber)
        return ac__fail(AC_EINVAL, "ac_breaker_unsubscribe: %s is NULL",
                        b ? "subscriber" : "breaker");
    pthread_mutex_lock(&b->lock);
    bool removed = ac__refset_remove(&b->subscribers, subscriber);
    pthread_mutex_unlock(&b->lock);
    if (!removed)
        return ac__fail(AC_ENOTFOUND, "ac_breaker_unsubscribe: %s is not subscribed to \"%s\"",
                        ac_ref_path(subscriber), b->name);
    return AC_OK;
}
