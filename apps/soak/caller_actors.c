/*
 * Callers inside the system: actors that ask the router slots with
 * ac_ask_in (a continuation, or the answer as a message matched by its
 * id) or tell them with themselves as the sender.
 *
 * The driver thread (callers.c) tells a caller what to send; the caller
 * keeps at most ACTOR_OPEN_ASKS asks open and one tell, and the driver
 * holds back while a caller has a few of its messages queued, so that no
 * mailbox grows without bound. A tell names no request in an error reply
 * (an AggregateError), so a caller keeps one open at a time and an
 * answer to it is the answer to that one.
 */
#include <string.h>

#include "soak.h"

#define ACTOR_OPEN_ASKS 128
#define MAX_CALLER_ACTORS 16

static const ac_msg_type go_type = {.name = "soak.Go"};

typedef struct caller_state {
    uint64_t tell_id; /* the open tell-with-self, at most one */
    int open_asks;
    struct {
        uint64_t ask_id, soak_id;
    } pending[ACTOR_OPEN_ASKS];
} caller_state;

static ac_ref *caller_refs[MAX_CALLER_ACTORS];
static atomic_int go_queued[MAX_CALLER_ACTORS];

static void on_continuation(ac_ctx *ctx, const ac_answer *a, void *user)
{
    caller_state *st = ac_ctx_state(ctx);
    st->open_asks--;
    note_sender(a->sender);
    settle_answer((uint64_t)(uintptr_t)user, ac_answer_status(a), a);
}

static void on_answer_msg(caller_state *st, const ac_msg *msg)
{
    uint64_t ask_id = ac_answer_id(msg);
    for (int i = 0; i < ACTOR_OPEN_ASKS; i++) {
        if (st->pending[i].ask_id == ask_id && ask_id) {
            const ac_answer *a = ac_answer_of(msg);
            note_sender(a->sender);
            settle_answer(st->pending[i].soak_id, ac_answer_status(a), a);
            st->pending[i].ask_id = 0;
            st->open_asks--;
            return;
        }
    }
    soak_violation("an answer message with ask id %llu, which this caller never asked",
                   (unsigned long long)ask_id);
}

static int free_pending(caller_state *st)
{
    for (int i = 0; i < ACTOR_OPEN_ASKS; i++)
        if (!st->pending[i].ask_id)
            return i;
    return -1;
}

static void ask_in(ac_ctx *ctx, caller_state *st, ac_ref *ref, const soak_scenario *sc,
                   int64_t timeout, uint64_t id)
{
    ac_msg *m = request_msg(sc, id);
    int p = sc->mode == MODE_ASK_IN_MSG ? free_pending(st) : 0;
    uint64_t ask_id = 0;
    ac_status rc =
        !m ? AC_ENOMEM
        : sc->mode == MODE_ASK_IN_FN
            ? ac_ask_in(ctx, ref, m, timeout, on_continuation, (void *)(uintptr_t)id, NULL)
            : ac_ask_in(ctx, ref, m, timeout, NULL, NULL, &ask_id);
    if (rc != AC_OK) {
        ledger_withdraw(id);
        return;
    }
    st->open_asks++;
    if (sc->mode == MODE_ASK_IN_MSG)
        st->pending[p].ask_id = ask_id, st->pending[p].soak_id = id;
}

/* A tell with self as sender promises exactly one answer only from a
 * scatter/gather router, or from a calm pool that sends each message to
 * one routee (not broadcast, not the custom strategy, which fans out every
 * fifth) whose routee will reply or refuse. */
static bool tell_can_be_answered(const soak_scenario *sc)
{
    bool to_one = sc->strategy != STRAT_BROADCAST && sc->strategy != STRAT_CUSTOM && !sc->wrapped;
    return sc->strategy == STRAT_SCATTER || (sc->calm && to_one && sc->req.beh[0] != BEH_SILENT);
}

static void on_go(ac_ctx *ctx, caller_state *st, const draw *d)
{
    soak_scenario sc;
    int64_t timeout;
    uint64_t id;
    int mode = d->mode_r < 450   ? MODE_ASK_IN_FN
               : d->mode_r < 750 ? MODE_ASK_IN_MSG
                                 : MODE_TELL_SELF;
    if (st->open_asks >= ACTOR_OPEN_ASKS - 1 ||
        (mode == MODE_TELL_SELF && ledger_outstanding(st->tell_id)))
        return;
    ac_ref *ref = pools_acquire(d->slot, &sc);
    if (!ref)
        return;
    sc.mode = (uint8_t)mode;
    timeout = apply_draw(d, &sc);
    if (mode == MODE_TELL_SELF && !tell_can_be_answered(&sc))
        sc.mode = MODE_ASK_IN_FN;
    id = ledger_register(&sc, timeout);
    if (id && sc.mode == MODE_TELL_SELF) {
        ac_msg *m = request_msg(&sc, id);
        st->tell_id = id;
        if (!m || ac_tell(ref, m, ac_self(ctx)) != AC_OK)
            ledger_withdraw(id);
    } else if (id) {
        ask_in(ctx, st, ref, &sc, timeout, id);
    }
    ac_ref_release(ref);
}

/* What answers a tell with self as sender: the reply, or an error message. */
static void on_tell_answer(ac_ctx *ctx, caller_state *st, const ac_msg *msg)
{
    soak_outcome out = {.sender = ac_sender(ctx)};
    uint64_t id = st->tell_id;
    if (ac_msg_is(msg, &soak_reply_type)) {
        out.status = AC_OK;
        out.reply = msg;
        id = ((const soak_reply *)ac_msg_data(msg))->id;
        note_sender(out.sender);
    } else {
        ac_answer a = {.error = ac_msg_error(msg)};
        out.status = ac_answer_status(&a);
        out.error = a.error;
    }
    ledger_settle(id, &out);
}

static void caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    caller_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &go_type)) {
        atomic_fetch_sub(&go_queued[*(const int *)ac_ctx_user_data(ctx)], 1);
        on_go(ctx, st, ac_msg_data(msg));
    } else if (ac_msg_is(msg, &ac_msg_type_answer)) {
        on_answer_msg(st, msg);
    } else if (ac_msg_is(msg, &soak_reply_type) || ac_msg_is(msg, &ac_msg_type_error)) {
        on_tell_answer(ctx, st, msg);
    } else {
        soak_violation("a caller received an unexpected %s from %s", ac_msg_type_name(msg),
                       ac_ref_path(ac_sender(ctx)));
    }
}

static const ac_actor_def caller_def = {
    .name = "SoakCaller", .state_size = sizeof(caller_state), .receive = caller_receive};

static int caller_index[MAX_CALLER_ACTORS];

void caller_actors_send_go(soak_rng *rng)
{
    int c = (int)soak_rng_below(rng, (uint32_t)g_cfg.actor_callers);
    draw d;
    draw_request(rng, &d);
    if (atomic_load(&go_queued[c]) > 16)
        return; /* the caller is behind: do not let its mailbox grow */
    ac_msg *m = ac_msg_new(&go_type, sizeof d);
    if (!m)
        return;
    memcpy(ac_msg_payload(m), &d, sizeof d);
    atomic_fetch_add(&go_queued[c], 1);
    if (ac_tell(caller_refs[c], m, NULL) != AC_OK)
        atomic_fetch_sub(&go_queued[c], 1);
}

int caller_actors_start(ac_system *sys)
{
    for (int i = 0; i < g_cfg.actor_callers && i < MAX_CALLER_ACTORS; i++) {
        caller_index[i] = i;
        char name[32];
        snprintf(name, sizeof name, "caller-%d", i);
        ac_props *p = ac_props_new(&caller_def, &caller_index[i]);
        caller_refs[i] = p ? ac_spawn(sys, p, name) : NULL;
        if (!caller_refs[i])
            return -1;
    }
    return 0;
}
