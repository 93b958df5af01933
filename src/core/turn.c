/*
 * Delivery and the turn: how a message reaches a cell, how the cell gets
 * scheduled, and how a worker runs one turn of it.
 *
 * Invariants:
 *  - Handlers of one actor run on one worker at a time: `scheduled` goes
 *    0 -> 1 exactly once per activation (exchange), and only the worker
 *    holding the activation runs the turn and clears it.
 *  - System messages are drained before the first message of a turn and
 *    re-checked between messages, so a stop or a failure decision is not
 *    stuck behind a long mailbox.
 *  - A dead cell still takes its activation: a sender that saw RUNNING
 *    enqueued and scheduled it, and that turn drains the message to dead
 *    letters.
 *
 * The hot path (ac_tell, delivery, dispatch, the turn and its end) lives
 * here in one file, so the compiler sees it whole; what a turn hands to
 * lifecycle.c (stop, failure, system messages) is off that path.
 */
#include <stdio.h>

#include "core/alloc.h"
#include "core/core_msgs.h"
#include "core/front.h"
#include "core/hooks.h"
#include "core/lifecycle.h"
#include "core/scheduler.h"
#include "core/system_internal.h"
#include "core/turn.h"

_Thread_local ac__actor *ac__tls_actor AC__TLS_FAST;

/* ---- scheduling and delivery ------------------------------------------ */

void ac__actor_schedule(ac__actor *a)
{
    /* seq_cst load: see ac__mailbox_push. The exchange makes exactly one
     * producer win the 0 -> 1 transition. */
    if (atomic_load_explicit(&a->scheduled, memory_order_seq_cst) != 0)
        return;
    /* acq_rel pairs with end_turn's clear: the winner's turn sees the
     * previous turn's writes. */
    if (atomic_exchange_explicit(&a->scheduled, 1, memory_order_acq_rel) != 0)
        return;
    ac_ref_retain(&a->ref);
    ac__scheduler_push(a->ref.system->sched, a, ac__tls_actor != NULL);
}

void ac__actor_deliver(ac_ref *self, ac__mailbox_node *node)
{
    ac__actor *a = (ac__actor *)self;
    /* Acquire pairs with set_state's release store of DEAD (lifecycle.c). */
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD) {
        ac__dead_letter(self->system, node, self);
        return;
    }
    if (AC__UNLIKELY(a->count_mailbox))
        atomic_fetch_add_explicit(&a->mailbox_len, 1, memory_order_relaxed);
    ac__mailbox_push(&a->mailbox, node);
    ac__actor_schedule(a);
}

static ac__mailbox_node *pop_message(ac__actor *a)
{
    ac__mailbox_node *node = ac__mailbox_pop(&a->mailbox);
    if (AC__UNLIKELY(a->count_mailbox) && node)
        atomic_fetch_sub_explicit(&a->mailbox_len, 1, memory_order_relaxed);
    return node;
}

int ac__mailbox_len(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    if (!a)
        return AC__MAILBOX_UNKNOWN;
    /* acquire: as in ac__actor_deliver */
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD)
        return AC__MAILBOX_STOPPED;
    /* One while a turn is pending or running: a routee busy with a slow
     * message is not idle. */
    int busy = atomic_load_explicit(&a->scheduled, memory_order_relaxed);
    if (!a->count_mailbox)
        return busy ? AC__MAILBOX_UNKNOWN : 0;
    return atomic_load_explicit(&a->mailbox_len, memory_order_relaxed) + busy;
}

void ac__actor_push_sys(ac__actor *a, ac__sys_kind kind, ac_ref *ref)
{
    ac__actor_push_sys_err(a, kind, ref, NULL);
}

ac__sysmsg *ac__sysmsg_new(ac__sys_kind kind, ac_ref *ref, ac_error *err)
{
    ac__sysmsg *m = ac__alloc_small(sizeof *m);
    if (AC__UNLIKELY(!m))
        return NULL;
    m->kind = kind;
    m->ref = ac_ref_retain(ref);
    m->err = ac_error_retain(err);
    return m;
}

void ac__sysmsg_free(ac__sysmsg *m)
{
    ac_ref_release(m->ref);
    ac_error_release(m->err);
    ac__free_small(m, sizeof *m);
}

void ac__actor_push_sys_err(ac__actor *a, ac__sys_kind kind, ac_ref *ref, ac_error *err)
{
    ac__sysmsg *m = ac__sysmsg_new(kind, ref, err);
    if (AC__UNLIKELY(!m)) /* losing a system message would hang a stop */
        ac__oom_abort("a system message");
    ac__actor_push_sysmsg(a, m);
}

void ac__actor_push_sysmsg(ac__actor *a, ac__sysmsg *m)
{
    ac__sysmsg *head = atomic_load_explicit(&a->sysq, memory_order_relaxed);
    do {
        m->next = head;
        /* Release publishes m; seq_cst pairs with the worker's check of
         * sysq after it clears `scheduled`. */
    } while (!atomic_compare_exchange_weak_explicit(&a->sysq, &head, m, memory_order_seq_cst,
                                                    memory_order_relaxed));
    ac__actor_schedule(a);
}

/* A send to a ref that may refuse it: a refused message is a dead letter
 * (its sender told, if it is an ask) and the send fails with the refusal. */
static AC__NOINLINE ac_status tell_admitted(ac_ref *target, ac_msg *msg, ac_ref *sender)
{
    ac_status st = target->ops->admit(target, msg);
    ac__mailbox_node *node = ac__mailbox_node_make(msg, sender);
    if (AC__UNLIKELY(!node))
        return AC_ENOMEM; /* msg released, error recorded by ac__mailbox_node_make */
    if (st == AC_OK) {
        target->ops->deliver(target, node);
        return AC_OK;
    }
    /* Keep the refusal's text: the dead letter may log and overwrite it. */
    char why[256];
    snprintf(why, sizeof why, "%s", ac_last_error());
    ac__dead_letter_why(target->system, node, target, why);
    return ac__fail(st, "%s", why);
}

void ac__ref_deliver_node(ac_ref *target, ac__mailbox_node *node)
{
    if (AC__UNLIKELY(target->ops->admit != NULL)) {
        ac_status st = target->ops->admit(target, node->msg);
        if (st != AC_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", ac_last_error());
            ac__dead_letter_why(target->system, node, target, why);
            return;
        }
    }
    target->ops->deliver(target, node);
}

ac_status ac_tell(ac_ref *target, ac_msg *msg, ac_ref *sender)
{
    if (AC__UNLIKELY(!msg))
        return ac__fail(AC_EINVAL, "ac_tell: message is NULL");
    if (AC__UNLIKELY(!target)) {
        ac_status st = ac__fail(AC_EINVAL, "ac_tell: target is NULL (message %s dropped)",
                                msg->type->name);
        ac_msg_release(msg);
        return st;
    }
    if (AC__UNLIKELY(target->ops->admit != NULL))
        return tell_admitted(target, msg, sender);
    ac__mailbox_node *node = ac__mailbox_node_make(msg, sender);
    if (AC__UNLIKELY(!node))
        return AC_ENOMEM; /* msg released, error recorded by ac__mailbox_node_make */
    target->ops->deliver(target, node);
    return AC_OK;
}

ac_status ac_reply(ac_ctx *ctx, ac_msg *msg)
{
    if (!ctx) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "ac_reply: ctx is NULL");
    }
    if (!ctx->sender) {
        if (!msg)
            return ac__fail(AC_EINVAL, "ac_reply: message is NULL");
        ac__mailbox_node *node = ac__mailbox_node_make(msg, &ctx->self->ref);
        if (!node)
            return AC_ENOMEM; /* msg released, error recorded by ac__mailbox_node_make */
        ac__dead_letter(ctx->self->ref.system, node, NULL);
        return AC_OK;
    }
    return ac_tell(ctx->sender, msg, &ctx->self->ref);
}

ac_status ac_forward(ac_ctx *ctx, ac_ref *target)
{
    if (!ctx || !ctx->msg)
        return ac__fail(AC_EINVAL, "ac_forward: no current message (%s)",
                        ctx ? "called outside receive" : "ctx is NULL");
    return ac_tell(target, ac_msg_retain(ctx->msg), ctx->sender);
}

/* ---- the turn --------------------------------------------------------- */

static bool drain_sys(ac__actor *a)
{
    /* Acquire pairs with the pushers' release (seq_cst) CAS. */
    ac__sysmsg *m = atomic_exchange_explicit(&a->sysq, NULL, memory_order_acquire);
    if (!m)
        return false;
    ac__sysmsg *fifo = NULL;
    while (m) { /* the stack is newest-first: reverse it */
        ac__sysmsg *next = m->next;
        m->next = fifo;
        fifo = m;
        m = next;
    }
    while (fifo) {
        ac__sysmsg *next = fifo->next;
        ac__actor_handle_sys(a, fifo);
        fifo = next;
    }
    return true;
}

/* The senders' references of one turn are dropped in runs: a stream of
 * messages from one sender costs one atomic subtraction, not one each. */
typedef struct sender_refs {
    ac_ref *ref;
    unsigned n;
} sender_refs;

static void sender_refs_flush(sender_refs *held)
{
    if (held->ref)
        ac__ref_release_n(held->ref, held->n);
    held->ref = NULL;
    held->n = 0;
}

static void sender_refs_drop(sender_refs *held, ac_ref *sender)
{
    if (!sender)
        return;
    if (sender != held->ref) {
        sender_refs_flush(held);
        held->ref = sender;
    }
    held->n++;
}

/* A request its asker no longer waits for, to an actor that skips such
 * requests: the reply ref settles as cancelled, the request is dropped. */
static AC__NOINLINE bool request_cancelled(ac_ref *sender)
{
    return sender && sender->ops->cancelled && sender->ops->cancelled(sender, true);
}

static void dispatch(ac__actor *a, ac__mailbox_node *node, sender_refs *held)
{
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    if (AC__UNLIKELY(msg->type == &ac_msg_type_poison_pill)) {
        ac__actor_begin_stop(a);
    } else if (AC__UNLIKELY(msg->type == &ac_msg_type_terminated) &&
               (!a->ext || !ac__refset_remove(&a->ext->watching,
                                              ((ac__terminated_payload *)(void *)msg->payload)->who))) {
        /* unwatched (or never watched): dropped */
    } else if (AC__UNLIKELY(a->skip_cancelled) && request_cancelled(sender)) {
        /* no longer wanted: dropped unhandled */
    } else {
        ac_ctx ctx = {.self = a, .msg = msg, .sender = sender};
        if (AC__UNLIKELY(msg->type == &ac__msg_type_run))
            ((ac__run_header *)(void *)msg->payload)->run(&ctx, msg);
        else
            a->def->receive(&ctx, msg);
        if (AC__UNLIKELY(ctx.failure != NULL))
            ac__actor_fail(a, ctx.failure, msg);
    }
    sender_refs_drop(held, sender);
    ac_msg_release(msg);
}

static void drain_to_dead_letters(ac__actor *a)
{
    ac__mailbox_node *node;
    while ((node = pop_message(a)))
        ac__dead_letter(a->ref.system, node, &a->ref);
}

static int state_of(ac__actor *a)
{
    return atomic_load_explicit(&a->state, memory_order_relaxed);
}

/* Give up the activation, unless work is left or arrived meanwhile. The
 * consumer-only view of the mailbox is read while we still own it; after
 * `scheduled` is cleared another worker may own it, so from then on only
 * the atomic `head` and `sysq` are read. A producer that pushed before
 * the clear saw scheduled == 1 and left the scheduling to us: its push
 * moved `head` away from what we read before the clear. seq_cst on both
 * sides (mailbox push, the clear and the loads) makes that visible. */
static void end_turn(ac__actor *a)
{
    int st = state_of(a);
    bool mailbox_counts = st == AC__ACTOR_RUNNING || st == AC__ACTOR_DEAD;
    /* head first: a push that lands after this read changes head; one that
     * landed before is seen by maybe_nonempty (it reads head too). */
    ac__link *head = atomic_load_explicit(&a->mailbox.head, memory_order_seq_cst);
    bool leftover = mailbox_counts && ac__mailbox_maybe_nonempty(&a->mailbox);
    atomic_store_explicit(&a->scheduled, 0, memory_order_seq_cst);
    bool more = leftover || atomic_load_explicit(&a->sysq, memory_order_seq_cst) ||
                (mailbox_counts &&
                 atomic_load_explicit(&a->mailbox.head, memory_order_seq_cst) != head);
    /* acq_rel: as in ac__actor_schedule, whose exchange this races. */
    if (more && atomic_exchange_explicit(&a->scheduled, 1, memory_order_acq_rel) == 0) {
        ac__scheduler_push(a->ref.system->sched, a, false); /* keeps our reference */
        return;
    }
    ac_ref_release(&a->ref);
}

void ac__actor_turn(ac__actor *a, int batch)
{
    ac__tls_actor = a;
    if (state_of(a) == AC__ACTOR_NEW) {
        ac__actor_start(a, NULL);
        ac__hook_count(a->ref.system, AC__EVENT_ACTORS_STARTED, 1);
    }
    drain_sys(a);
    sender_refs held = {0};
    uint64_t handled = 0;
    for (int i = 0; i < batch && state_of(a) == AC__ACTOR_RUNNING; i++) {
        if (atomic_load_explicit(&a->sysq, memory_order_relaxed) && drain_sys(a))
            continue;
        ac__mailbox_node *node = pop_message(a);
        if (!node)
            break;
        dispatch(a, node, &held);
        handled++;
    }
    sender_refs_flush(&held);
    /* Counted per turn, not per message. */
    ac__hook_count(a->ref.system, AC__EVENT_MESSAGES, handled);
    if (state_of(a) == AC__ACTOR_DEAD)
        drain_to_dead_letters(a);
    ac__tls_actor = NULL;
    end_turn(a);
}
