/*
 * The scatter-tail replica (see tail_replica.h). The timer's message
 * carries the request's id and, as its sender, the asker, so that the
 * answer goes where the request came from without the replica keeping a
 * table of pending requests.
 */
#include "tail_replica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ac_msg_type fire_type = {.name = "bench.TailReplicaFire"}; /* local only */

static void answer_fired(ac_ctx *ctx, tail_replica *rep, ac_msg *msg)
{
    int64_t req;
    memcpy(&req, ac_msg_data(msg), sizeof req);
    replica_log_fire(&rep->log, req);
    ac_reply(ctx, ac_msg_int64_new(req));
}

static void schedule_answer(ac_ctx *ctx, tail_replica *rep, int64_t req)
{
    replica_log_recv(&rep->log, req);
    ac_msg *fire = ac_msg_new(&fire_type, sizeof req);
    memcpy(ac_msg_payload(fire), &req, sizeof req);
    /* The reply target travels as the scheduled message's sender. */
    ac_cancellable *c =
        ac_schedule_once(ac_self(ctx), rep->delay_ms(rep->index, req), fire, ac_sender(ctx));
    if (!c) {
        fprintf(stderr, "replica %d: ac_schedule_once: %s\n", rep->index, ac_last_error());
        exit(1);
    }
    ac_cancellable_release(c);
}

static void tail_replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    tail_replica *rep = ac_ctx_user_data(ctx);
    int64_t req;
    if (ac_msg_is(msg, &fire_type))
        answer_fired(ctx, rep, msg);
    else if (ac_msg_int64_get(msg, &req) == AC_OK)
        schedule_answer(ctx, rep, req);
    else
        replica_log_answer(ctx, &rep->log, msg);
}

const ac_actor_def tail_replica_def = {.name = "TailReplica", .receive = tail_replica_receive};

void tail_replica_init(tail_replica *r, int index, tail_delay_fn *delay_ms)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->delay_ms = delay_ms;
}

uint64_t tail_replica_draw(int replica, int64_t req)
{
    uint64_t x = (uint64_t)req * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(replica + 1) << 56);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 32;
    return x;
}

void tail_replica_drawn_ideal(int replicas, tail_delay_fn *delay_ms, int64_t first, int64_t n,
                              int64_t *ideal_ns)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t best = INT64_MAX;
        for (int k = 0; k < replicas; k++) {
            int64_t d = delay_ms(k, first + i);
            best = d < best ? d : best;
        }
        ideal_ns[i] = best * 1000000;
    }
}
