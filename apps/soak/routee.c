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
#include <pthread.h>
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

/* Deliveries that came late: a request more than DELAY_NS after it was
 * sent, a scheduled late reply more than DELAY_NS after it was due. Kept
 * in a small ring, so that a report of a timing violation can say where
 * the time went: before the routee, or after it replied. */
#define DELAY_NS 20000000ull
#define DELAYS 1024

typedef struct delay {
    uint64_t id, late_ns;
    uint8_t routee;
    bool scheduled;
} delay;

static pthread_mutex_t delays_lock = PTHREAD_MUTEX_INITIALIZER;
static delay delays[DELAYS];
static uint64_t delays_count;

static void note_delay(ac_ctx *ctx, uint64_t id, uint64_t due_ns, bool scheduled)
{
    uint64_t now = soak_now_ns(), late = now > due_ns ? now - due_ns : 0;
    if (late < DELAY_NS)
        return;
    if (late > 100 * 1000000ull)
        atomic_fetch_add(&g_stats.slow_deliveries, 1);
    uint64_t max = atomic_load(&g_stats.slowest_delivery_ns);
    while (late > max && !atomic_compare_exchange_weak(&g_stats.slowest_delivery_ns, &max, late))
        ;
    pthread_mutex_lock(&delays_lock);
    delays[delays_count++ % DELAYS] = (delay){.id = id,
                                              .late_ns = now - due_ns,
                                              .routee = (uint8_t)(my_index(ctx) + 1),
                                              .scheduled = scheduled};
    pthread_mutex_unlock(&delays_lock);
}

void routee_delays(uint64_t id, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&delays_lock);
    for (uint64_t i = 0; i < DELAYS && i < delays_count; i++) {
        const delay *d = &delays[i];
        if (d->id == id && len < n) {
            int w = snprintf(buf + len, n - len, "; routee-%u got %s %llu ms late", d->routee,
                             d->scheduled ? "its scheduled reply" : "the request",
                             (unsigned long long)(d->late_ns / 1000000));
            len += w > 0 ? (size_t)w : 0;
        }
    }
    pthread_mutex_unlock(&delays_lock);
}

static void reply_now(ac_ctx *ctx, uint64_t id)
{
    ac_msg *m = ac_msg_new(&soak_reply_type, sizeof(soak_reply));
    if (!m)
        return; /* only when allocations fail on purpose: the ask times out */
    ((soak_reply *)ac_msg_payload(m))->id = id;
    ac_reply(ctx, m);
}

typedef struct late_msg {
    uint64_t id, due_ns;
} late_msg;

static void reply_later(ac_ctx *ctx, const soak_request *rq)
{
    ac_msg *m = ac_msg_new(&late_type, sizeof(late_msg));
    if (!m)
        return;
    *(late_msg *)ac_msg_payload(m) =
        (late_msg){.id = rq->id, .due_ns = soak_now_ns() + (uint64_t)rq->late_ms * 1000000ull};
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
        const late_msg *l = ac_msg_data(msg);
        note_delay(ctx, l->id, l->due_ns, true);
        reply_now(ctx, l->id);
        return;
    }
    if (!ac_msg_is(msg, &soak_request_type))
        return;
    const soak_request *rq = ac_msg_data(msg);
    note_delay(ctx, rq->id, rq->sent_ns, false);
    switch (rq->beh[my_index(ctx)]) {
    case BEH_NOW:
        reply_now(ctx, rq->id);
        break;
    case BEH_LATE:
        reply_later(ctx, rq);
        break;
    case BEH_ERROR:
        refuse(ctx, rq->id);
        break;
    case BEH_FAIL:
        ac_fail(ctx, ac_error_new("SoakFailure", "routee told to fail"));
        break;
    case BEH_STOP:
        ac_stop(ac_self(ctx));
        break;
    default:
        break; /* silent */
    }
}

const ac_actor_def soak_routee = {.name = "SoakRoutee", .receive = routee_receive};
