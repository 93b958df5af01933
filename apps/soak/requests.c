/*
 * Requests: what a caller draws, and how it becomes a message and, once
 * answered, an outcome for the ledger.
 *
 * A draw takes every random value a request may need before it knows the
 * slot it is for, so that a seed replays the same sequence of draws
 * whatever the slots hold. Applied to a slot, the draw says what each
 * routee is to do, whether the request goes in the Broadcast wrapper, and
 * how long its answer may take.
 */
#include <string.h>

#include "soak.h"

static const char *const mode_names[MODE_COUNT] = {"ask_wait",  "future_callback", "future_wait",
                                                   "ask_in_fn", "ask_in_msg",      "tell_self"};
const char *mode_name(int m) { return m >= 0 && m < MODE_COUNT ? mode_names[m] : "?"; }

void draw_request(soak_rng *rng, draw *d)
{
    d->slot = (int)soak_rng_below(rng, SOAK_SLOTS);
    for (int k = 0; k < SOAK_MAX_ROUTEES; k++)
        d->beh_r[k] = soak_rng_below(rng, 100);
    d->fault_r = soak_rng_below(rng, 1000);
    d->fault_at = soak_rng_below(rng, SOAK_MAX_ROUTEES);
    d->mode_r = soak_rng_below(rng, 1000);
    d->wrap_r = soak_rng_below(rng, 100);
    d->late_ms = (uint16_t)(1 + soak_rng_below(rng, 30));
    d->quiet_timeout_ms = 20 + soak_rng_below(rng, 100);
}

static uint8_t behaviour_of(uint32_t r)
{
    return r < 60 ? BEH_NOW : r < 75 ? BEH_LATE : r < 90 ? BEH_ERROR : BEH_SILENT;
}

static bool all_quiet(const soak_scenario *sc)
{
    for (int k = 0; k < sc->size; k++)
        if (sc->req.beh[k] != BEH_SILENT && sc->req.beh[k] != BEH_FAIL &&
            sc->req.beh[k] != BEH_STOP)
            return false;
    return true;
}

/* Fill sc->req from the draw; returns how long the answer may take. One
 * request in 200 to a chaotic pool tells one routee to fail or stop. */
int64_t apply_draw(const draw *d, soak_scenario *sc)
{
    bool one_shot = sc->strategy != STRAT_SCATTER && sc->strategy != STRAT_BROADCAST;
    /* One request in ten to a one-shot pool goes in the Broadcast wrapper:
     * to every routee, whatever the strategy. */
    sc->wrapped = one_shot && d->wrap_r < 10;
    one_shot &= !sc->wrapped;
    memset(&sc->req, 0, sizeof sc->req);
    for (int k = 0; k < SOAK_MAX_ROUTEES; k++)
        sc->req.beh[k] = behaviour_of(d->beh_r[one_shot ? 0 : k]);
    if (!sc->calm && d->fault_r < 5) {
        uint8_t fault = d->fault_r < 3 ? BEH_FAIL : BEH_STOP;
        for (int k = 0; k < SOAK_MAX_ROUTEES; k++)
            if (one_shot || k == (int)(d->fault_at % sc->size))
                sc->req.beh[k] = fault;
        pools_mark_stopish(sc->slot, sc->gen);
        atomic_fetch_add(&g_stats.stopish, 1);
    }
    sc->req.late_ms = d->late_ms;
    if (sc->strategy == STRAT_SCATTER)
        return sc->scatter_timeout_ms + ANSWER_WITHIN_MS;
    return all_quiet(sc) ? d->quiet_timeout_ms : ANSWER_WITHIN_MS;
}

ac_msg *request_msg(const soak_scenario *sc, uint64_t id)
{
    ac_msg *m = ac_msg_new(&soak_request_type, sizeof(soak_request));
    if (m) {
        soak_request *rq = ac_msg_payload(m);
        *rq = sc->req;
        rq->id = id;
        rq->sent_ns = soak_now_ns();
    }
    return m && sc->wrapped ? ac_broadcast_new(m) : m;
}

void settle_answer(uint64_t id, ac_status st, const ac_answer *a)
{
    soak_outcome out = {.status = st, .reply = a->reply, .error = a->error, .sender = a->sender};
    ledger_settle(id, &out);
}

/* Record a routee that answered, so that chaos can kill it. The slot and
 * generation come from the sender's path. */
void note_sender(const ac_ref *sender)
{
    int slot;
    uint32_t gen;
    bool is_router;
    if (sender && pools_parse_path(ac_ref_path(sender), &slot, &gen, &is_router) && !is_router)
        pools_note_routee(slot, gen, sender);
}

/* Pick the slot's router and register the request; NULL when there is
 * nothing to send to or no room. */
ac_ref *prepare_request(const draw *d, int mode, soak_scenario *sc, int64_t *timeout, uint64_t *id)
{
    ac_ref *ref = pools_acquire(d->slot, sc);
    if (!ref)
        return NULL;
    sc->mode = (uint8_t)mode;
    *timeout = apply_draw(d, sc);
    *id = ledger_register(sc, *timeout);
    if (!*id) {
        ac_ref_release(ref);
        return NULL;
    }
    return ref;
}
