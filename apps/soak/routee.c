/*
 * The routees: each does with a request what the caller wrote into it for
 * its index (routee-K follows beh[K-1]), so that the caller, and through
 * it the checker, knows what answer to expect. A routee keeps no state:
 * a restart changes nothing about how it answers.
 *
 * A late reply is a message scheduled to self with the asker's reply ref
 * as its sender, so that when it arrives ac_reply answers the original
 * request — and if the routee has stopped meanwhile, the scheduled
 * message is a dead letter whose sender, the reply ref, learns that the
 * target had stopped.
 */
#include <stdlib.h>
#include <string.h>

#include "soak.h"

const ac_msg_type soak_request_type = {.name = "soak.Request"};
const ac_msg_type soak_reply_type = {.name = "soak.Reply"};
static const ac_msg_type late_type = {.name = "soak.Late"};

static const char *const beh_names[BEH_COUNT] = {"now", "late", "error", "fail", "stop", "silent"};
const char *beh_name(int b) { return b >= 0 && b < BEH_COUNT ? beh_names[b] : "?"; }

static int my_index(ac_ctx *ctx)
{
    long k = strtol(ac_self_name(ctx) + strlen("routee-"), NULL, 10);
    return k >= 1 && k <= SOAK_MAX_ROUTEES ? (int)k - 1 : 0;
}

static void reply_now(ac_ctx *ctx, uint64_t id)
{
    ac_msg *m = ac_msg_new(&soak_reply_type, sizeof(soak_reply));
    if (!m)
        return; /* only when allocations fail on purpose: the ask times out */
    ((soak_reply *)ac_msg_payload(m))->id = id;
    ac_reply(ctx, m);
}

static void reply_later(ac_ctx *ctx, const soak_request *rq)
{
    ac_msg *m = ac_msg_new(&late_type, sizeof(soak_reply));
    if (!m)
        return;
    ((soak_reply *)ac_msg_payload(m))->id = rq->id;
    ac_cancellable *c = ac_schedule_once(ac_self(ctx), rq->late_ms, m, ac_sender(ctx));
    ac_cancellable_release(c);
}

static void refuse(ac_ctx *ctx, uint64_t id)
{
    ac_error *e = ac_error_new(SOAK_ERROR, "request %llu refused by %s", (unsigned long long)id,
                               ac_self_name(ctx));
    ac_msg *m = ac_msg_error_new(e);
    if (m)
        ac_reply(ctx, m);
}

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &late_type)) {
        reply_now(ctx, ((const soak_reply *)ac_msg_data(msg))->id);
        return;
    }
    if (!ac_msg_is(msg, &soak_request_type))
        return;
    const soak_request *rq = ac_msg_data(msg);
    switch (rq->beh[my_index(ctx)]) {
    case BEH_NOW: reply_now(ctx, rq->id); break;
    case BEH_LATE: reply_later(ctx, rq); break;
    case BEH_ERROR: refuse(ctx, rq->id); break;
    case BEH_FAIL: ac_fail(ctx, ac_error_new("SoakFailure", "routee told to fail")); break;
    case BEH_STOP: ac_stop(ac_self(ctx)); break;
    default: break; /* silent */
    }
}

const ac_actor_def soak_routee = {.name = "SoakRoutee", .receive = routee_receive};
