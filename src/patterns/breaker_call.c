/*
 * Calls through a circuit breaker: asks from outside and inside actors,
 * and tells whose answer is passed on.
 *
 * A call is one allocation holding two refs and a timer. `reply` is the
 * sender of the request to the target. The first thing to reach it claims
 * it (CAS on `claimed`): a reply, an error reply, the news that the target
 * had stopped, or the timer. The claimer records the outcome in the
 * breaker and only then passes the answer on to the caller, so an answer
 * seen implies its outcome counted. Every permit ends in exactly one
 * record or cancel.
 *
 * `entry` lets the ask layer own the waiting: ac_breaker_ask is
 * ac_ask(&entry, ...), so the future (or, inside an actor, the
 * continuation) is an ordinary ask's. The request reaches entry on the
 * asking thread, inside ac_ask; entry takes the ask's reply ref as the
 * caller and sends the request on from `reply`. entry's path is the
 * target's, so an ask that times out names the target.
 *
 * References to a call (`refs`): one per embedded ref still alive and one
 * for the armed timer. `reply` starts with two of its own: its hold until
 * claimed, and the sender's until the request has been told (the timer is
 * armed first and may claim it meanwhile, as in scatter_gather.c).
 */
#include <stdlib.h>
#include <string.h>

#include "ask/ask_internal.h"
#include "core/last_error.h"
#include "core/ref.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"
#include "patterns/breaker_internal.h"

typedef struct call {
    ac_ref entry;
    ac_ref reply;
    atomic_uint refs;
    atomic_int claimed;
    ac__timer timer;
    ac_breaker *b;   /* retained */
    ac_breaker_permit permit;
    ac_ref *target;  /* retained */
    ac_ref *caller;  /* retained until answered; NULL: nobody to pass it to */
    uint32_t timeout_ms;
    bool breaker_timeout; /* the timer is call_timeout_ms, not the caller's */
    bool started;    /* the request went out (read by the asking thread) */
} call;

static call *of_entry(ac_ref *r) { return (call *)(void *)((char *)r - offsetof(call, entry)); }
static call *of_reply(ac_ref *r) { return (call *)(void *)((char *)r - offsetof(call, reply)); }
static call *of_timer(ac__timer *t)
{
    return (call *)(void *)((char *)t - offsetof(call, timer));
}

static void call_unref(call *c)
{
    /* acq_rel: every holder's use happens before the free (as ac_ref_release) */
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    ac_ref_release(c->target);
    ac_ref_release(c->caller);
    ac_ref_release(ac__breaker_ref(c->b)); /* an internal hold, not a handle */
    free(c);
}

/* acq_rel: the claimer sees the call as set up by its starter (the timer
 * arm and the tell publish it too); relaxed on failure: a loser reads
 * nothing. */
static bool claim(call *c)
{
    int expected = 0;
    return atomic_compare_exchange_strong_explicit(&c->claimed, &expected, 1,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* Answer the caller (msg consumed, sender borrowed) and let go of it at
 * once: an ask's reply ref holds our entry, so holding it until the call
 * is freed would keep both alive for ever. */
static void answer_caller(call *c, ac_msg *msg, ac_ref *sender)
{
    if (c->caller && msg)
        ac_tell(c->caller, msg, sender);
    else
        ac_msg_release(msg);
    ac_ref_release(c->caller);
    c->caller = NULL;
}

/* The claimer's part: record, then answer the caller, then let go of
 * reply's hold. */
static void finish(call *c, const ac_error *err, ac_msg *msg, ac_ref *sender)
{
    if (ac__timer_cancel(c->reply.system->timers, &c->timer))
        call_unref(c); /* the timer's reference */
    ac_breaker_record(c->b, &c->permit, err);
    answer_caller(c, msg, sender);
    ac_ref_release(&c->reply);
}

static void finish_error(call *c, ac_error *err)
{
    ac_breaker_record(c->b, &c->permit, err);
    if (ac__timer_cancel(c->reply.system->timers, &c->timer))
        call_unref(c);
    answer_caller(c, ac_msg_error_new(err) /* consumes err */, NULL);
    ac_ref_release(&c->reply);
}

/* ---- reply: the target answers here ----------------------------------- */

static void reply_deliver(ac_ref *self, ac__mailbox_node *node)
{
    call *c = of_reply(self);
    if (!claim(c)) {
        ac__mailbox_node_free(node); /* settled already: dropped, silently */
        return;
    }
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    const ac_error *err = ac_msg_is(msg, &ac_msg_type_error) ? ac_msg_error(msg) : NULL;
    finish(c, err, msg, sender);
    ac_ref_release(sender);
}

static void reply_undeliverable(ac_ref *self, ac_ref *recipient, const char *why)
{
    call *c = of_reply(self);
    if (claim(c))
        finish_error(c, ac__undeliverable_error(recipient ? recipient : c->target, why));
}

static void reply_destroy(ac_ref *self) { call_unref(of_reply(self)); }

static bool reply_settled(const ac_ref *self)
{
    /* acquire: pairs with the claimer's CAS */
    return atomic_load_explicit(&of_reply((ac_ref *)self)->claimed, memory_order_acquire) != 0;
}

static const char *reply_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/breaker-call";
}

static const ac__ref_ops reply_ops = {
    .kind = AC__REF_REPLY,
    .deliver = reply_deliver,
    .destroy = reply_destroy,
    .path = reply_path,
    .settled = reply_settled,
    .undeliverable = reply_undeliverable,
};

/* ---- the timer -------------------------------------------------------- */

static ac_error *timeout_error(call *c)
{
    if (c->breaker_timeout)
        return ac_error_new(AC_CIRCUIT_BREAKER_TIMEOUT_ERROR,
                            "Call through circuit breaker \"%s\" to %s timed out after %u ms",
                            ac_breaker_name(c->b), ac_ref_path(c->target), c->timeout_ms);
    return ac_error_new(AC_ASK_TIMEOUT_ERROR, "Ask timed out on %s after %u ms",
                        ac_ref_path(c->target), c->timeout_ms);
}

static void timer_fire(ac__timer *t)
{
    call *c = of_timer(t);
    if (claim(c)) {
        ac_error *err = timeout_error(c);
        if (AC__UNLIKELY(!err)) /* a call must be answered */
            ac__oom_abort("a circuit breaker call's timeout error");
        finish_error(c, err);
    }
    call_unref(c);
}

static void timer_discard(ac__timer *t)
{
    /* System teardown: nobody is listening any more. */
    call *c = of_timer(t);
    if (claim(c)) {
        ac_breaker_cancel(c->b, &c->permit);
        answer_caller(c, NULL, NULL);
        ac_ref_release(&c->reply);
    }
    call_unref(c);
}

static const ac__timer_ops call_timer_ops = {.fire = timer_fire, .discard = timer_discard};

/* ---- starting a call -------------------------------------------------- */

static call *call_new(ac_breaker *b, const ac_breaker_permit *p, ac_ref *target,
                      int64_t timeout_ms, bool with_entry);

/* Arm, then tell the request from `reply`. */
static void call_start(call *c, ac_msg *msg)
{
    c->started = true;
    ac__timer_arm(c->reply.system->timers, &c->timer, c->timeout_ms);
    ac_tell(c->target, msg, &c->reply);
    ac_ref_release(&c->reply); /* the sender's hold: the envelope has its own */
}

/* A call that never started: nothing counted, everything let go. */
static void call_abandon(call *c)
{
    ac_breaker_cancel(c->b, &c->permit);
    ac__ref_release_n(&c->reply, 2);
    call_unref(c); /* the timer's, never armed */
}

/* ---- entry: where an ask through the breaker is sent ------------------ */

static void entry_deliver(ac_ref *self, ac__mailbox_node *node)
{
    call *c = of_entry(self);
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    if (c->started) { /* only the ask's own request ever comes here */
        ac_msg_release(msg);
        ac_ref_release(sender);
        return;
    }
    c->caller = sender; /* the node's reference, taken over */
    call_start(c, msg);
}

static void entry_destroy(ac_ref *self) { call_unref(of_entry(self)); }

static const char *entry_path(const ac_ref *self)
{
    return ac_ref_path(of_entry((ac_ref *)self)->target);
}

static const ac__ref_ops entry_ops = {
    .kind = AC__REF_REPLY,
    .deliver = entry_deliver,
    .destroy = entry_destroy,
    .path = entry_path,
};

static call *call_new(ac_breaker *b, const ac_breaker_permit *p, ac_ref *target,
                      int64_t timeout_ms, bool with_entry)
{
    call *c = ac__calloc(1, sizeof *c);
    if (!c)
        return ac__fail_null(AC_ENOMEM, "circuit breaker call: out of memory");
    ac_system *sys = ac_ref_system(target);
    atomic_init(&c->refs, with_entry ? 3u : 2u); /* entry, reply, timer */
    atomic_init(&c->claimed, 0);
    ac__ref_init(&c->reply, &reply_ops, sys);
    atomic_init(&c->reply.refs, 2); /* its hold and the sender's (see the top) */
    if (with_entry)
        ac__ref_init(&c->entry, &entry_ops, sys);
    c->timer.ops = &call_timer_ops;
    c->b = b;
    ac_ref_retain(ac__breaker_ref(b));
    c->permit = *p;
    c->target = ac_ref_retain(target);
    uint32_t t = (uint32_t)(timeout_ms ? timeout_ms : AC_ASK_DEFAULT_TIMEOUT_MS);
    uint32_t ct = ac__breaker_call_timeout_ms(b);
    c->breaker_timeout = ct != 0 && ct <= t;
    c->timeout_ms = c->breaker_timeout ? ct : t;
    return c;
}

/* ---- the public calls ------------------------------------------------- */

static ac_status check_call(const char *fn, ac_breaker *b, ac_ref *target, ac_msg *msg,
                            int64_t timeout_ms)
{
    const char *bad = !b ? "breaker" : !target ? "target" : !msg ? "message" : NULL;
    if (bad) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "%s: %s is NULL", fn, bad);
    }
    if (timeout_ms < 0 || timeout_ms > INT32_MAX) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "%s: timeout_ms = %lld; use 1..%d, or 0 for the default (%d)",
                        fn, (long long)timeout_ms, INT32_MAX, AC_ASK_DEFAULT_TIMEOUT_MS);
    }
    ac_system *sys = ac_ref_system(ac__breaker_ref(b));
    if (ac_ref_system(target) != sys) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "%s: %s is not in system \"%s\", the breaker's", fn,
                        ac_ref_path(target), ac_system_name(sys));
    }
    return AC_OK;
}

ac_status ac_breaker_tell(ac_breaker *b, const ac_breaker_permit *p, ac_ref *target, ac_msg *msg,
                          ac_ref *sender, int64_t timeout_ms)
{
    if (!p) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_breaker_tell: permit is NULL");
    }
    if (check_call("ac_breaker_tell", b, target, msg, timeout_ms) != AC_OK) {
        ac_breaker_cancel(b, p);
        return AC_EINVAL;
    }
    call *c = call_new(b, p, target, timeout_ms, false);
    if (!c) {
        ac_msg_release(msg);
        ac_breaker_cancel(b, p);
        return AC_ENOMEM;
    }
    c->caller = ac_ref_retain(sender);
    call_start(c, msg);
    return AC_OK;
}

/* Ask (as the call `fn`) the call's entry; abandon the call if that
 * failed before the request went out. The status says why not. */
static ac_status ask_entry(const char *fn, call *c, ac_msg *msg, int64_t timeout_ms,
                           ac_future **out)
{
    ac_status st = ac__ask_future(fn, &c->entry, msg, timeout_ms, out);
    bool started = c->started; /* entry_deliver ran on this thread, inside the ask */
    if (!started)
        call_abandon(c);
    ac_ref_release(&c->entry); /* ours; the future holds its own */
    return st;
}

ac_future *ac_breaker_ask(ac_breaker *b, ac_ref *target, ac_msg *msg, int64_t timeout_ms)
{
    ac__clear_status();
    if (check_call("ac_breaker_ask", b, target, msg, timeout_ms) != AC_OK)
        return NULL;
    ac_breaker_permit p;
    if (!ac_breaker_acquire(b, &p, NULL))
        return ac_ask(ac__breaker_ref(b), msg, timeout_ms); /* answered at once */
    call *c = call_new(b, &p, target, timeout_ms, true);
    if (!c) {
        ac_msg_release(msg);
        ac_breaker_cancel(b, &p);
        return NULL;
    }
    ac_future *f;
    ask_entry("ac_breaker_ask", c, msg, timeout_ms, &f);
    return f;
}

/* A timeout of the breaker's own call_timeout_ms, told apart from the
 * caller's. */
static ac_status breaker_timed_out(ac_breaker *b, ac_ref *target, uint32_t ms, ac_answer *answer)
{
    ac_error_release(answer->error);
    answer->error = ac_error_new(AC_CIRCUIT_BREAKER_TIMEOUT_ERROR,
                                 "Call through circuit breaker \"%s\" to %s timed out after %u ms",
                                 ac_breaker_name(b), ac_ref_path(target), ms);
    if (AC__UNLIKELY(!answer->error)) /* a call must be answered */
        ac__oom_abort("a circuit breaker call's timeout error");
    return AC_EFAILED; /* as an error reply of that name is */
}

/* The caller blocks here, so the call needs no machinery of its own: a
 * plain ask with the shorter of the two timeouts, whose outcome is
 * recorded before the answer is returned (so, as for the other calls, an
 * answer seen implies its outcome counted). */
static ac_status wait_through(ac_breaker *b, const ac_breaker_permit *p, ac_ref *target,
                              ac_msg *msg, int64_t timeout_ms, ac_answer *answer)
{
    uint32_t t = (uint32_t)(timeout_ms ? timeout_ms : AC_ASK_DEFAULT_TIMEOUT_MS);
    uint32_t ct = ac__breaker_call_timeout_ms(b);
    bool breaker_timeout = ct != 0 && ct <= t;
    ac_future *f;
    ac_status st = ac__ask_future("ac_breaker_ask_wait", target, msg, breaker_timeout ? ct : t, &f);
    if (st != AC_OK) {
        ac_breaker_cancel(b, p); /* the request never went out */
        return st;
    }
    st = ac_future_wait(f, -1, answer);
    ac_future_release(f);
    if (st == AC_ETIMEOUT && breaker_timeout)
        st = breaker_timed_out(b, target, ct, answer);
    ac_breaker_record(b, p, answer->error);
    return st;
}

ac_status ac_breaker_ask_wait(ac_breaker *b, ac_ref *target, ac_msg *msg, int64_t timeout_ms,
                              ac_answer *answer)
{
    if (answer)
        memset(answer, 0, sizeof *answer);
    if (!answer) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_breaker_ask_wait: answer is NULL");
    }
    if (ac_in_actor()) {
        ac_msg_release(msg);
        return ac__fail(AC_EINACTOR, "ac_breaker_ask_wait: would block a worker; inside an "
                                     "actor use ac_breaker_ask_in");
    }
    if (check_call("ac_breaker_ask_wait", b, target, msg, timeout_ms) != AC_OK)
        return AC_EINVAL;
    ac_breaker_permit p;
    if (!ac_breaker_acquire(b, &p, &answer->error)) {
        ac_msg_release(msg); /* refused: the target never sees it */
        return answer->error ? AC_EFAILED : ac__fail(AC_ENOMEM, "ac_breaker_ask_wait: out of memory");
    }
    return wait_through(b, &p, target, msg, timeout_ms, answer);
}

ac_status ac_breaker_ask_in(ac_ctx *ctx, ac_breaker *b, ac_ref *target, ac_msg *msg,
                            int64_t timeout_ms, ac_ask_fn fn, void *user, uint64_t *id_out)
{
    if (!ctx) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_breaker_ask_in: ctx is NULL");
    }
    ac_status st = check_call("ac_breaker_ask_in", b, target, msg, timeout_ms);
    if (st != AC_OK)
        return st;
    ac_breaker_permit p;
    if (!ac_breaker_acquire(b, &p, NULL))
        return ac_ask_in(ctx, ac__breaker_ref(b), msg, timeout_ms, fn, user, id_out);
    call *c = call_new(b, &p, target, timeout_ms, true);
    if (!c) {
        ac_msg_release(msg);
        ac_breaker_cancel(b, &p);
        return AC_ENOMEM;
    }
    st = ac_ask_in(ctx, &c->entry, msg, timeout_ms, fn, user, id_out);
    if (!c->started)
        call_abandon(c);
    ac_ref_release(&c->entry);
    return st;
}
