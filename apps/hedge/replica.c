/*
 * A simulated replica: each request takes a random time — a log-normal
 * body plus an occasional stall — and is answered with its key, or with an
 * error at the configured rate. The replica never blocks its worker: it
 * schedules a "done" message to itself and answers when it arrives, so
 * thousands of requests overlap as they would on a real service.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hedge.h"

typedef struct replica_state {
    int index; /* 1-based */
    uint64_t rng;
} replica_state;

typedef struct pending {
    ac_ref *caller;
    ac_msg *request;
    bool fail;
} pending;

static void pending_destroy(void *payload, size_t size)
{
    pending *p = payload;
    (void)size;
    ac_ref_release(p->caller);
    ac_msg_release(p->request);
}

static const ac_msg_type pending_type = {.name = "hedge.Pending", .destroy = pending_destroy};

static double next_uniform(uint64_t *rng)
{
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return (double)((*rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double next_normal(uint64_t *rng)
{
    double u1 = next_uniform(rng), u2 = next_uniform(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The body is continuous, not rounded to whole milliseconds: the timers
 * keep a delay to a few microseconds. */
int64_t replica_draw_us(uint64_t *rng, const replica_model *m)
{
    if (next_uniform(rng) * 100.0 < m->tail_pct)
        return (int64_t)llround(m->tail_ms * 1000.0);
    double ms = m->median_ms * exp(m->sigma * next_normal(rng));
    return (int64_t)llround(ms * 1000.0);
}

static void replica_init(ac_ctx *ctx, void *state)
{
    replica_model *m = ac_ctx_user_data(ctx);
    replica_state *st = state;
    const char *name = ac_self_name(ctx); /* routee-1 … routee-N */
    st->index = strncmp(name, "routee-", 7) == 0 ? atoi(name + 7) : 1;
    uint64_t salt = (uint64_t)atomic_fetch_add(&m->next_index, 1) + 1;
    st->rng = m->seed * 0x9e3779b97f4a7c15ull + salt * 0xbf58476d1ce4e5b9ull + 1;
}

static void answer(ac_ctx *ctx, pending *p)
{
    if (p->fail)
        ac_tell(p->caller,
                ac_msg_error_new(ac_error_new("ReplicaError", "%s failed", ac_self_name(ctx))),
                ac_self(ctx));
    else
        ac_tell(p->caller, ac_msg_retain(p->request), ac_self(ctx));
}

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    replica_model *m = ac_ctx_user_data(ctx);
    replica_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &pending_type)) {
        answer(ctx, (pending *)ac_msg_payload(msg));
        return;
    }
    if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), HEDGE_CALLS_QUERY) == 0) {
        ac_reply(ctx, ac_msg_int64_new((int64_t)atomic_load(&m->calls)));
        return;
    }
    atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed);
    if (m->dead_replica > 0 && st->index == m->dead_replica)
        return; /* the dead replica: never answers */
    if (!ac_sender(ctx))
        return;
    ac_msg *later = ac_msg_new(&pending_type, sizeof(pending));
    pending *p = ac_msg_payload(later);
    p->caller = ac_ref_retain(ac_sender(ctx));
    p->request = ac_msg_retain(msg);
    p->fail = next_uniform(&st->rng) * 100.0 < m->error_pct;
    int64_t delay = replica_draw_us(&st->rng, m);
    if (delay == 0) {
        answer(ctx, p);
        ac_msg_release(later);
        return;
    }
    ac_cancellable *c = ac_schedule_once_us(ac_self(ctx), delay, later, NULL);
    ac_cancellable_release(c);
}

const ac_actor_def hedge_replica = {
    .name = "Replica",
    .state_size = sizeof(replica_state),
    .init = replica_init,
    .receive = replica_receive,
};
