/*
 * Ask: one-shot reply refs, futures, and asks from inside actors.
 *
 * A reply ref is a ref kind of its own. Its `state` moves 0 (pending) ->
 * 1 (claimed by whoever settles it: a reply, an error reply, the timer,
 * or the news that the target had stopped) -> 2 (answer written). The
 * claim is a CAS, so exactly one outcome wins and the answer is written
 * once; everything that arrives later is dropped without a trace. The
 * claim, delivery and the undeliverable and timeout errors are the
 * one-shot piece shared with scatter slots (oneshot.c); this file keeps
 * what settling means for an ask, its timer and its waiters.
 *
 * References to a reply ref: the asker's (the future handle, or the
 * asking call's own until it returns), the armed timer's, and the one in
 * the request's envelope as its sender. Settling cancels the timer; if the
 * cancel loses against a firing timer, the timer's own CAS fails and it
 * just drops its reference. The timer is armed lazily (core/timers.c): a
 * far deadline waits outside the wheel, and when the ask settles first the
 * timer service drops it (timer_discard, whose claim fails) soon after,
 * in a batch, with its reference. Nothing of an ask outlives its
 * settlement and its last reference for longer than that.
 *
 * Waiting outside actors spins briefly (the answer to a local ask usually
 * arrives within microseconds), then sleeps on a futex on `state`; the
 * answer's fields are published by the release store of 2, which the
 * waiter's acquire load pairs with.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ask/ask_internal.h"
#include "ask/oneshot.h"
#include "core/hop_trace.h"
#include "core/alloc.h"
#include "core/cell.h"
#include "core/clock.h"
#include "core/core_msgs.h"
#include "core/hooks.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"

enum { PENDING = 0, CLAIMED = 1, SETTLED = 2 };
enum { FOR_FUTURE = 0, FOR_ACTOR = 1 };
#define SPIN_WAIT_NS 100000ull
#define SPIN_PURE_NS 5000ull

struct ac_future {
    ac_ref ref;
    atomic_int state;
    atomic_int sleepers; /* threads in futex wait */
    ac__timer timer;
    ac_ref *target; /* retained; for the timeout message */
    uint32_t timeout_ms;
    uint8_t kind;
    atomic_flag cb_lock;
    bool cb_done;
    ac_answer answer;
    /* FOR_FUTURE: callback; FOR_ACTOR: continuation (fn may be NULL). */
    void (*fn)(void);
    void *user;
    ac_ref *asker; /* FOR_ACTOR, retained */
    uint64_t id;
};
typedef struct ac_future reply_t;

/* ---- answers ---------------------------------------------------------- */

void ac_answer_release(ac_answer *a)
{
    if (!a)
        return;
    ac_msg_release(a->reply);
    ac_error_release(a->error);
    ac_ref_release(a->sender);
    memset(a, 0, sizeof *a);
}

static void answer_copy(ac_answer *to, const ac_answer *from)
{
    to->reply = ac_msg_retain(from->reply);
    to->error = ac_error_retain(from->error);
    to->sender = ac_ref_retain(from->sender);
}

ac_status ac_answer_status(const ac_answer *a)
{
    if (!a)
        return ac__fail(AC_EINVAL, "ac_answer_status: answer is NULL");
    if (!a->error)
        return AC_OK;
    if (ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR))
        return AC_ETIMEOUT;
    if (ac_error_is(a->error, AC_ACTOR_STOPPED_ERROR) ||
        ac_error_is(a->error, AC_UNDELIVERABLE_ERROR))
        return AC_EDEAD;
    return AC_EFAILED;
}

/* ---- the answer message for actors ------------------------------------ */

typedef struct answer_payload {
    ac__run_header run; /* used when a continuation was given */
    ac_answer answer;
    uint64_t id;
    ac_ask_fn fn;
    void *user;
} answer_payload;

static void answer_payload_destroy(void *payload, size_t size)
{
    (void)size;
    ac_answer_release(&((answer_payload *)payload)->answer);
}

const ac_msg_type ac_msg_type_answer = {.name = "actorc.Answer",
                                        .destroy = answer_payload_destroy};

static void run_continuation(ac_ctx *ctx, ac_msg *msg)
{
    answer_payload *p = ac_msg_payload(msg);
    p->fn(ctx, &p->answer, p->user);
}

const ac_answer *ac_answer_of(const ac_msg *msg)
{
    ac__clear_status();
    if (!ac_msg_is(msg, &ac_msg_type_answer))
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "ac_answer_of: message is %s, not an answer",
                             ac_msg_type_name(msg));
    return &((const answer_payload *)ac_msg_data(msg))->answer;
}

uint64_t ac_answer_id(const ac_msg *msg)
{
    if (!ac_msg_is(msg, &ac_msg_type_answer))
        return 0;
    return ((const answer_payload *)ac_msg_data(msg))->id;
}

/* ---- completion ------------------------------------------------------- */

static void deliver_to_actor(reply_t *r)
{
    ac_msg *m = ac_msg_new(r->fn ? &ac__msg_type_run : &ac_msg_type_answer, sizeof(answer_payload));
    if (AC__UNLIKELY(!m)) /* an ask must be answered */
        ac__oom_abort("an ask's answer");
    answer_payload *p = ac_msg_payload(m);
    p->run.run = run_continuation;
    p->run.destroy = answer_payload_destroy;
    /* Moved, not copied: an actor's ask has no future to read it again. */
    p->answer = r->answer;
    memset(&r->answer, 0, sizeof r->answer);
    p->id = r->id;
    p->fn = (ac_ask_fn)r->fn;
    p->user = r->user;
    ac_tell(r->asker, m, p->answer.sender);
}

/* Close registration: from here on ac_future_on_complete calls its
 * callback at once. Returns the callback registered before, if any. */
static ac_future_fn close_callbacks(reply_t *r)
{
    /* A spin lock: acquire pairs with the release clears here and in
     * ac_future_on_complete, so each holder sees the last one's writes. */
    while (atomic_flag_test_and_set_explicit(&r->cb_lock, memory_order_acquire))
        ;
    r->cb_done = true;
    ac_future_fn fn = (ac_future_fn)r->fn;
    atomic_flag_clear_explicit(&r->cb_lock, memory_order_release);
    return fn;
}

/* The claimer writes the answer, then publishes and notifies. Callback
 * registration closes before the answer is published, so that once a
 * waiter sees the future settled, a callback it registers runs at once on
 * its own thread. */
static void complete(reply_t *r)
{
    if (ac__timer_cancel_lazy(r->ref.system->timers, &r->timer))
        ac_ref_release(&r->ref); /* the timer's reference; the caller holds another */
    if (r->kind == FOR_ACTOR) {
        /* Release: the answer before SETTLED (pairs with settled()). */
        atomic_store_explicit(&r->state, SETTLED, memory_order_release);
        deliver_to_actor(r);
        return;
    }
    ac_future_fn fn = close_callbacks(r);
    /* seq_cst: publishes the answer (pairs with acquire loads of state)
     * and orders against the sleepers count (see sleep_until_settled). */
    atomic_store_explicit(&r->state, SETTLED, memory_order_seq_cst);
    if (atomic_load_explicit(&r->sleepers, memory_order_seq_cst) > 0)
        ac__futex_wake_all(&r->state);
    if (fn)
        fn(&r->answer, r->user);
}

/* The one outcome (ac__oneshot_ops.settle). */
static void reply_settle(ac_ref *self, ac_msg *reply, ac_error *error, ac_ref *sender)
{
    reply_t *r = (reply_t *)self;
    r->answer.reply = reply;
    r->answer.error = error;
    r->answer.sender = sender;
    complete(r);
}

/* ---- the reply ref ---------------------------------------------------- */

static ac_ref *reply_target(const ac_ref *self) { return ((const reply_t *)self)->target; }

static void reply_destroy(ac_ref *self)
{
    reply_t *r = (reply_t *)self;
    ac_answer_release(&r->answer);
    ac_ref_release(r->target);
    ac_ref_release(r->asker);
    if (r->kind == FOR_ACTOR)
        ac__free_small(r, sizeof *r);
    else
        free(r);
}

static const char *reply_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/ask";
}

static const ac__oneshot_ops reply_ops = {
    .ref = {.kind = AC__REF_REPLY,
            .deliver = ac__oneshot_deliver,
            .destroy = reply_destroy,
            .path = reply_path,
            .settled = ac__oneshot_settled,
            .undeliverable = ac__oneshot_undeliverable},
    .claim_offset = offsetof(reply_t, state),
    .settle = reply_settle,
    .target = reply_target,
};

static void timer_fire(ac__timer *t)
{
    reply_t *r = (reply_t *)((char *)t - offsetof(reply_t, timer));
    if (ac__oneshot_claim(&r->ref)) {
        /* Counted before the answer is published, so an answer seen
         * implies its count is visible. */
        ac__hook_count(r->ref.system, AC__EVENT_ASK_TIMEOUTS, 1);
        reply_settle(&r->ref, NULL,
                     ac__oneshot_timeout_error(r->target, r->timeout_ms, "an ask's timeout error"),
                     NULL);
    }
    ac_ref_release(&r->ref); /* the timer's reference */
}

/* The system is terminating with this ask still open: its target has
 * stopped without answering. A future's callback is owed its one call, so
 * the ask settles as an ask to a stopped actor does; an actor's ask needs
 * nothing, as its asker has stopped too. */
static void timer_discard(ac__timer *t)
{
    reply_t *r = (reply_t *)((char *)t - offsetof(reply_t, timer));
    if (r->kind == FOR_FUTURE && ac__oneshot_claim(&r->ref)) {
        ac_error *err = ac__undeliverable_error(r->target, NULL);
        if (AC__UNLIKELY(!err))
            ac__oom_abort("an ask's answer at termination");
        reply_settle(&r->ref, NULL, err, NULL);
    }
    ac_ref_release(&r->ref);
}

/* Claimed: whatever settles it no longer needs the timer. seq_cst: see
 * ac__timer_ops.given_up (the claim, an RMW, comes before complete()'s
 * cancel and its fence). */
static bool timer_given_up(const ac__timer *t)
{
    const reply_t *r = (const reply_t *)(const void *)((const char *)t - offsetof(reply_t, timer));
    return atomic_load_explicit(&r->state, memory_order_seq_cst) != PENDING;
}

static const ac__timer_ops reply_timer_ops = {
    .fire = timer_fire, .discard = timer_discard, .given_up = timer_given_up};

/* ---- starting an ask -------------------------------------------------- */

static ac_status check_ask(const char *fn, ac_ref *target, ac_msg *msg, int64_t timeout_ms)
{
    const char *bad = !msg ? "message is NULL" : !target ? "target is NULL" : NULL;
    if (bad) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "%s: %s", fn, bad);
    }
    if (timeout_ms < 0 || timeout_ms > INT32_MAX) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "%s: timeout_ms = %lld; use 1..%d, or 0 for the default (%d)",
                        fn, (long long)timeout_ms, INT32_MAX, AC_ASK_DEFAULT_TIMEOUT_MS);
    }
    if (atomic_load_explicit(&target->system->terminating, memory_order_relaxed) && !ac__tls_actor) {
        ac_msg_release(msg);
        return ac__fail(AC_ETERMINATED, "%s: system \"%s\" is terminating", fn,
                        target->system->name);
    }
    return AC_OK;
}

/* Create, arm and send. Returns the reply with the caller's reference. */
static reply_t *start_ask(ac_ref *target, ac_msg *msg, int64_t timeout_ms, int kind)
{
    /* A future's exactly sized: an ask in flight from outside costs its
     * bytes. An actor's from the worker's cache: the hot path of asks
     * inside the system, where the block comes back within microseconds. */
    reply_t *r = kind == FOR_ACTOR ? ac__alloc_small(sizeof *r) : ac__malloc(sizeof *r);
    if (!r) {
        ac_msg_release(msg);
        return ac__fail_null(AC_ENOMEM, "ask: out of memory");
    }
    memset(r, 0, sizeof *r);
    ac__ref_init(&r->ref, &reply_ops.ref, target->system);
    atomic_init(&r->ref.refs, 2); /* the caller's and the timer's */
    atomic_init(&r->state, PENDING);
    atomic_flag_clear(&r->cb_lock);
    r->timer.ops = &reply_timer_ops;
    r->target = ac_ref_retain(target);
    r->timeout_ms = (uint32_t)(timeout_ms ? timeout_ms : AC_ASK_DEFAULT_TIMEOUT_MS);
    r->kind = (uint8_t)kind;
    return r;
}

static void send_ask(reply_t *r, ac_msg *msg)
{
    ac__timer_arm_lazy(r->ref.system->timers, &r->timer, r->timeout_ms);
    ac_tell(r->target, msg, &r->ref);
}

ac_status ac__ask_future(const char *fn, ac_ref *target, ac_msg *msg, int64_t timeout_ms,
                            ac_future **out)
{
    *out = NULL;
    ac_status st = check_ask(fn, target, msg, timeout_ms);
    if (st != AC_OK)
        return st;
    reply_t *r = start_ask(target, msg, timeout_ms, FOR_FUTURE);
    if (!r)
        return AC_ENOMEM; /* recorded by start_ask */
    send_ask(r, msg);
    *out = r;
    return AC_OK;
}

ac_future *ac_ask(ac_ref *target, ac_msg *msg, int64_t timeout_ms)
{
    ac__clear_status();
    ac_future *f;
    ac__ask_future("ac_ask", target, msg, timeout_ms, &f);
    return f;
}

ac_status ac_ask_in(ac_ctx *ctx, ac_ref *target, ac_msg *msg, int64_t timeout_ms, ac_ask_fn fn,
                    void *user, uint64_t *id_out)
{
    if (!ctx) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_ask_in: ctx is NULL");
    }
    ac_status st = check_ask("ac_ask_in", target, msg, timeout_ms);
    if (st != AC_OK)
        return st;
    reply_t *r = start_ask(target, msg, timeout_ms, FOR_ACTOR);
    if (!r)
        return AC_ENOMEM;
    r->asker = ac_ref_retain(&ctx->self->ref);
    r->fn = (void (*)(void))fn;
    r->user = user;
    r->id = ++ctx->self->seq;
    if (id_out)
        *id_out = r->id;
    send_ask(r, msg);
    ac_ref_release(&r->ref); /* the answer comes as a message */
    return AC_OK;
}

/* ---- futures ---------------------------------------------------------- */

static bool settled(reply_t *r)
{
    /* Acquire pairs with complete()'s store of SETTLED: the answer is
     * seen whole. */
    return atomic_load_explicit(&r->state, memory_order_acquire) == SETTLED;
}

static bool settled_arg(void *r) { return settled(r); }

/* Sleep on the futex until settled or `deadline_ns` (0: none). */
static bool sleep_until_settled(reply_t *r, uint64_t deadline_ns)
{
    /* seq_cst: pairs with complete()'s store of SETTLED and load of
     * sleepers; either it sees us and wakes us, or we see SETTLED. */
    atomic_fetch_add_explicit(&r->sleepers, 1, memory_order_seq_cst);
    while (!settled(r)) {
        int seen = atomic_load_explicit(&r->state, memory_order_seq_cst);
        if (seen == SETTLED || (deadline_ns && ac__now_ns() >= deadline_ns))
            break;
        ac__futex_wait_until_ns(&r->state, seen, deadline_ns);
    }
    atomic_fetch_sub_explicit(&r->sleepers, 1, memory_order_relaxed);
    return settled(r);
}

/* The monotonic deadline `wait_ms` from `start`; 0 (none) for a negative
 * wait and for one beyond what the clock can represent: wait forever. */
static uint64_t wait_deadline(uint64_t start, int64_t wait_ms)
{
    if (wait_ms < 0 || (uint64_t)wait_ms > (UINT64_MAX - start) / 1000000ull)
        return 0;
    return start + (uint64_t)wait_ms * 1000000ull;
}

/* Spin a little (a local answer usually comes within microseconds), then
 * sleep: the spin of an idle worker (core/sync.h), bounded by the wait. */
static bool wait_settled(reply_t *r, int64_t wait_ms)
{
    if (settled(r))
        return true;
    uint64_t start = ac__now_ns();
    uint64_t deadline = wait_deadline(start, wait_ms);
    if (deadline && deadline <= start)
        return false;
    uint64_t spin = deadline && deadline - start < SPIN_WAIT_NS ? deadline - start : SPIN_WAIT_NS;
    if (ac__spin_until(settled_arg, r, spin, SPIN_PURE_NS))
        return true;
    return sleep_until_settled(r, deadline);
}

ac_status ac_future_wait(ac_future *f, int64_t wait_ms, ac_answer *answer)
{
    if (answer)
        memset(answer, 0, sizeof *answer);
    if (!f || !answer)
        return ac__fail(AC_EINVAL, "ac_future_wait: %s is NULL", f ? "answer" : "future");
    if (ac__tls_actor)
        return ac__fail(AC_EINACTOR,
                        "ac_future_wait: would block a worker; inside an actor use ac_ask_in");
    if (f->kind != FOR_FUTURE)
        return ac__fail(AC_EINVAL, "ac_future_wait: not a future");
    if (!wait_settled(f, wait_ms))
        return ac__fail(AC_EPENDING, "ac_future_wait: not settled within %lld ms",
                        (long long)wait_ms);
    answer_copy(answer, &f->answer);
    return ac_answer_status(answer);
}

bool ac_future_poll(ac_future *f, ac_answer *answer)
{
    if (answer)
        memset(answer, 0, sizeof *answer);
    if (!f || !settled(f))
        return false;
    if (answer)
        answer_copy(answer, &f->answer);
    return true;
}

ac_status ac_future_on_complete(ac_future *f, ac_future_fn fn, void *user)
{
    if (!f || !fn)
        return ac__fail(AC_EINVAL, "ac_future_on_complete: %s is NULL", f ? "callback" : "future");
    /* The spin lock of close_callbacks (acquire pairs with its clears). */
    while (atomic_flag_test_and_set_explicit(&f->cb_lock, memory_order_acquire))
        ;
    if (f->fn) {
        atomic_flag_clear_explicit(&f->cb_lock, memory_order_release);
        return ac__fail(AC_EINVAL, "ac_future_on_complete: a callback is already set");
    }
    bool done = f->cb_done;
    f->fn = (void (*)(void))fn;
    f->user = user;
    atomic_flag_clear_explicit(&f->cb_lock, memory_order_release);
    if (done)
        fn(&f->answer, user);
    return AC_OK;
}

void ac_future_release(ac_future *f)
{
    if (f)
        ac_ref_release(&f->ref);
}

ac_status ac_ask_wait(ac_ref *target, ac_msg *msg, int64_t timeout_ms, ac_answer *answer)
{
    if (answer)
        memset(answer, 0, sizeof *answer);
    if (!answer) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_ask_wait: answer is NULL");
    }
    if (ac__tls_actor) {
        ac_msg_release(msg);
        return ac__fail(AC_EINACTOR,
                        "ac_ask_wait: would block a worker (and could deadlock); inside an actor "
                        "use ac_ask_in");
    }
    ac_future *f;
    ac__hop(AC__HOP_ASK_BEGIN);
    ac_status st = ac__ask_future("ac_ask_wait", target, msg, timeout_ms, &f);
    if (st != AC_OK)
        return st;
    wait_settled(f, -1);
    ac__hop(AC__HOP_ASK_END);
    /* We hold the only handle: take the answer's references over. */
    *answer = f->answer;
    memset(&f->answer, 0, sizeof f->answer);
    ac_future_release(f);
    return ac_answer_status(answer);
}
