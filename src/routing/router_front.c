/*
 * Routing in the sender's thread: a router's front door. See
 * router_front.h for the snapshot, its reclamation and why order holds.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/core_msgs.h"
#include "core/hazard.h"
#include "routing/router_front.h"

bool ac__router_is_own(const ac_msg *msg)
{
    const ac_msg_type *t = ac_msg_type_of(msg);
    return t == &ac_msg_type_terminated || t == &ac_msg_type_get_routees ||
           t == &ac_msg_type_add_routee || t == &ac_msg_type_remove_routee ||
           t == &ac_msg_type_broadcast || t == &ac_msg_type_poison_pill ||
           t == &ac__msg_type_run;
}

static void snap_free(ac__route_snap *s)
{
    for (size_t i = 0; i < s->n; i++)
        ac_ref_release(s->routees[i]);
    free(s);
}

/* Free the retired snapshots no sender holds. In the turn. */
static void reclaim(ac__router_front *f)
{
    if (!f->retired)
        return;
    ac__hazard_barrier();
    ac__route_snap **at = &f->retired;
    while (*at) {
        ac__route_snap *s = *at;
        if (ac__hazard_held(s)) {
            at = &s->retired_next;
        } else {
            *at = s->retired_next;
            snap_free(s);
        }
    }
}

static void swap_in(ac__router_front *f, ac__route_snap *s)
{
    /* seq_cst: pairs with the senders' count and load (front_deliver). */
    ac__route_snap *old = atomic_exchange_explicit(&f->snap, s, memory_order_seq_cst);
    if (old) {
        old->retired_next = f->retired;
        f->retired = old;
    }
    reclaim(f);
}

void ac__router_front_publish(ac__router_front *f, const ac__router_state *st)
{
    if (!f)
        return;
    if (st->n == 0) {
        swap_in(f, NULL); /* no routee: the mailbox, and the router's dead letters */
        return;
    }
    size_t size = sizeof(ac__route_snap) + st->n * sizeof(ac_ref *);
    if (f->kind->snap_ids)
        size += st->n * sizeof(uint64_t);
    if (f->view)
        size += st->n * sizeof(ac__router_view_row *);
    ac__route_snap *s = ac__malloc(size);
    if (!s) {
        swap_in(f, NULL); /* the mailbox then: slower, never wrong */
        return;
    }
    s->retired_next = NULL;
    s->n = st->n;
    s->ids = f->kind->snap_ids ? (uint64_t *)(void *)&s->routees[st->n] : NULL;
    void *after = s->ids ? (void *)&s->ids[st->n] : (void *)&s->routees[st->n];
    s->rows = f->view ? after : NULL;
    s->plain = true;
    for (size_t i = 0; i < st->n; i++) {
        s->routees[i] = ac_ref_retain(st->routees[i]);
        const ac__ref_ops *ops = st->routees[i]->ops;
        s->plain = s->plain && ops->deliver == ac__actor_deliver && !ops->admit;
        if (s->ids)
            s->ids[i] = ac__router_identity_hash(st, i);
        if (s->rows)
            s->rows[i] = ac__router_view_row_of(f->view, st->routees[i]);
    }
    swap_in(f, s);
}

void ac__router_front_withdraw(ac__router_front *f)
{
    if (!f)
        return;
    swap_in(f, NULL);
    /* Nothing of the set outlives the router's stop: a sender holds a
     * snapshot only while it delivers, so this waits a few instructions
     * (or for a preempted sender's next slice). At a system's teardown
     * the cells are freed in no order, and a snapshot freed with its cell
     * then would release routees already gone. */
    while (f->retired) {
        sched_yield();
        reclaim(f);
    }
}

void ac__router_front_handled(ac__router_front *f)
{
    /* release: what the handling did (a routee's enqueue, a new snapshot)
     * before a sender sees the count drop. */
    atomic_fetch_sub_explicit(&f->queued, 1, memory_order_release);
}

bool ac__router_front_route(ac__router_front *f, ac_msg *msg, ac_ref *sender)
{
    if (!f)
        return false;
    /* In the router's turn: only it frees snapshots. */
    ac__route_snap *s = atomic_load_explicit(&f->snap, memory_order_relaxed);
    if (!s)
        return false;
    ac__mailbox_node *node = ac__mailbox_node_make(ac_msg_retain(msg), sender);
    if (!node)
        return true; /* out of memory: lost, as a failed tell */
    if (f->kind->send(f, s, node))
        return true;
    ac__mailbox_node_free(node); /* the kind's route decides; it has the message */
    return false;
}

/* for_the_turn's answer for a type other than the last ordinary one. */
static AC__NOINLINE bool for_the_turn_new_type(ac__router_front *f, const ac_msg *msg)
{
    const ac_msg_type *type = msg->type;
    if (type == &ac__msg_type_run)
        return true; /* run in its turn, never by router_receive: not counted */
    if (ac__router_is_own(msg)) {
        atomic_fetch_add_explicit(&f->queued, 1, memory_order_relaxed);
        return true;
    }
    atomic_store_explicit(&f->ordinary, type, memory_order_relaxed);
    return false;
}

/* Is node's message one for the router's turn? Counts it in `queued`
 * when the router will handle it (Run is run by the turn, uncounted). */
static AC__ALWAYS_INLINE bool for_the_turn(ac__router_front *f, const ac_msg *msg)
{
    if (AC__LIKELY(msg->type == atomic_load_explicit(&f->ordinary, memory_order_relaxed)))
        return false;
    return for_the_turn_new_type(f, msg);
}

/* Take node from its sender if the snapshot allows: any thread. */
static AC__ALWAYS_INLINE bool front_take(ac__router_front *f, ac__mailbox_node *node)
{
    if (for_the_turn(f, node->msg))
        return false;
    /* acquire: a message the router routed for us is enqueued before,
     * and the snapshot its handling published is the one read below. The
     * count is read first: a snapshot read before it could predate our
     * own RemoveRoutee's handling, which the count's drop announces. */
    if (atomic_load_explicit(&f->queued, memory_order_acquire) != 0) {
        atomic_fetch_add_explicit(&f->queued, 1, memory_order_relaxed);
        return false;
    }
    void *held;
    ac__hazard_rec *h = ac__hazard_enter((_Atomic(void *) *)&f->snap, &held);
    if (AC__UNLIKELY(!h)) {
        atomic_fetch_add_explicit(&f->queued, 1, memory_order_relaxed);
        return false; /* too deeply nested, or out of memory: the mailbox */
    }
    ac__route_snap *s = held;
    bool taken = s != NULL; /* an empty set publishes none */
    if (taken && f->round_robin)
        ac__route_round_robin(f, s, node); /* the common kind, without the call */
    else
        taken = taken && f->kind->send(f, s, node);
    if (!taken)
        atomic_fetch_add_explicit(&f->queued, 1, memory_order_relaxed);
    ac__hazard_leave(h);
    return taken;
}

/* ac__front_ops.deliver: any thread. */
static bool front_deliver(ac__front *front, ac_ref *self, ac__mailbox_node *node)
{
    (void)self;
    return front_take((ac__router_front *)front, node);
}

/* The router cell's deliver (cell_ops): the front without the core's call
 * in between. Any thread. */
static void router_cell_deliver(ac_ref *self, ac__mailbox_node *node)
{
    if (!front_take((ac__router_front *)ac__front_of(self), node))
        ac__actor_deliver(self, node);
}

static void front_free(ac__front *front)
{
    ac__router_front *f = (ac__router_front *)front;
    ac__route_snap *s = atomic_load_explicit(&f->snap, memory_order_relaxed);
    if (s)
        snap_free(s);
    while (f->retired) {
        ac__route_snap *next = f->retired->retired_next;
        snap_free(f->retired);
        f->retired = next;
    }
    free(f);
}

static const ac__ref_ops router_cell_ops = {
    .kind = AC__REF_ACTOR,
    .deliver = router_cell_deliver,
    .destroy = ac__cell_destroy,
    .path = ac__cell_path,
};

static const ac__front_ops router_front_ops = {
    .deliver = front_deliver, .free = front_free, .cell_ops = &router_cell_ops};

ac__router_front *ac__router_front_new(const ac__router_cfg *cfg)
{
    if (!cfg->kind->send || cfg->breaker || cfg->members || cfg->fn)
        return NULL;
    ac__router_front *f = ac__aligned_alloc(64, sizeof *f);
    if (!f)
        return NULL;
    memset(f, 0, sizeof *f);
    f->base.ops = &router_front_ops;
    atomic_init(&f->index, 0);
    atomic_init(&f->snap, NULL);
    atomic_init(&f->queued, 0);
    atomic_init(&f->ordinary, NULL);
    f->kind = cfg->kind;
    f->round_robin = cfg->kind == &ac__round_robin_kind;
    f->hash_key = cfg->hash_key;
    f->hash_user = cfg->hash_user;
    f->view = cfg->view;
    return f;
}

ac__router_front *ac__router_front_of(ac_ctx *ctx)
{
    return (ac__router_front *)ctx->self->front;
}
