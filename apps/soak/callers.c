/*
 * The callers: threads outside the system and actors inside it, asking
 * the router slots every way the API offers.
 *
 * Outside: each caller thread draws its next request and how to send it:
 * ac_ask_wait, ac_ask with a completion callback, or a batch of ac_ask
 * futures collected with ac_future_poll and ac_future_wait. Inside: a
 * driver thread tells caller actors what to send, and they do it with
 * ac_ask_in (a continuation, or the answer as a message matched by its
 * id) or with a tell that names themselves as the sender.
 *
 * A request is registered in the ledger before it is sent; every answer,
 * from whichever thread delivers it, goes to ledger_settle. A send that
 * fails with an error promised nothing and is withdrawn. The ledger's
 * size bounds what is in flight: callers wait for room rather than grow
 * a queue, so the run's memory stays flat.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soak.h"

#define MAX_IN_FLIGHT 2000
#define ACTOR_OPEN_ASKS 128
#define MAX_CALLER_THREADS 16
#define MAX_CALLER_ACTORS 16
#define FUTURE_BATCH 6

static const char *const mode_names[MODE_COUNT] = {"ask_wait",  "future_callback", "future_wait",
                                                   "ask_in_fn", "ask_in_msg",      "tell_self"};
const char *mode_name(int m) { return m >= 0 && m < MODE_COUNT ? mode_names[m] : "?"; }

/* One drawn request, before it meets the slot it is for. Every field is
 * drawn whatever the slot turns out to hold. */
typedef struct draw {
    int slot;
    uint32_t beh_r[SOAK_MAX_ROUTEES];
    uint32_t fault_r, fault_at, mode_r, wrap_r;
    uint16_t late_ms;
    int64_t quiet_timeout_ms;
} draw;

static void draw_request(soak_rng *rng, draw *d)
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
        if (sc->req.beh[k] != BEH_SILENT && sc->req.beh[k] != BEH_FAIL && sc->req.beh[k] != BEH_STOP)
            return false;
    return true;
}

/* Fill sc->req from the draw; returns how long the answer may take. One
 * request in 200 to a chaotic pool tells one routee to fail or stop. */
static int64_t apply_draw(const draw *d, soak_scenario *sc)
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

static ac_msg *request_msg(const soak_scenario *sc, uint64_t id)
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

/* The status an ask would report for this answer (ask.h). */
static ac_status status_of(const ac_answer *a)
{
    if (!a->error)
        return AC_OK;
    if (ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR))
        return AC_ETIMEOUT;
    if (ac_error_is(a->error, AC_ACTOR_STOPPED_ERROR) || ac_error_is(a->error, AC_UNDELIVERABLE_ERROR))
        return AC_EDEAD;
    return AC_EFAILED;
}

static void settle_answer(uint64_t id, ac_status st, const ac_answer *a)
{
    soak_outcome out = {.status = st, .reply = a->reply, .error = a->error, .sender = a->sender};
    ledger_settle(id, &out);
}

/* Record a routee that answered, so that chaos can kill it. The slot and
 * generation come from the sender's path. */
static void note_sender(const ac_ref *sender)
{
    int slot;
    uint32_t gen;
    bool is_router;
    if (sender && pools_parse_path(ac_ref_path(sender), &slot, &gen, &is_router) && !is_router)
        pools_note_routee(slot, gen, sender);
}

/* Pick the slot's router and register the request; NULL when there is
 * nothing to send to or no room. */
static ac_ref *prepare(const draw *d, int mode, soak_scenario *sc, int64_t *timeout, uint64_t *id)
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

/* ---- outside the system ------------------------------------------------- */

static void ask_wait_once(const draw *d)
{
    soak_scenario sc;
    int64_t timeout;
    uint64_t id;
    ac_ref *ref = prepare(d, MODE_ASK_WAIT, &sc, &timeout, &id);
    if (!ref)
        return;
    ac_msg *m = request_msg(&sc, id);
    ac_answer a;
    ac_status st = m ? ac_ask_wait(ref, m, timeout, &a) : AC_ENOMEM;
    if (!m || (!a.reply && !a.error)) {
        ledger_withdraw(id); /* refused: nothing was promised */
    } else {
        note_sender(a.sender);
        settle_answer(id, st, &a);
        ac_answer_release(&a);
    }
    ac_ref_release(ref);
}

static void on_future(const ac_answer *a, void *user)
{
    uint64_t id = (uint64_t)(uintptr_t)user;
    note_sender(a->sender);
    settle_answer(id, status_of(a), a);
}

static ac_future *ask_future(const draw *d, int mode, uint64_t *id)
{
    soak_scenario sc;
    int64_t timeout;
    ac_ref *ref = prepare(d, mode, &sc, &timeout, id);
    if (!ref)
        return NULL;
    ac_msg *m = request_msg(&sc, *id);
    ac_future *f = m ? ac_ask(ref, m, timeout) : NULL;
    if (!f)
        ledger_withdraw(*id);
    ac_ref_release(ref);
    return f;
}

static void wait_future(ac_future *f, uint64_t id)
{
    ac_answer a;
    ac_status st = ac_future_wait(f, -1, &a);
    note_sender(a.sender);
    settle_answer(id, st, &a);
    ac_answer_release(&a);
    ac_future_release(f);
}

static void future_callback_once(const draw *d)
{
    uint64_t id;
    ac_future *f = ask_future(d, MODE_FUTURE_CB, &id);
    if (!f)
        return;
    if (ac_future_on_complete(f, on_future, (void *)(uintptr_t)id) != AC_OK)
        wait_future(f, id); /* no callback was registered: collect it here */
    else
        ac_future_release(f);
}

/* Collect whichever future of the batch settles first: polls, then a short
 * ac_future_wait on the oldest, which may come back AC_EPENDING. Each
 * answer is seen within a few ms of its settling, so the reaper's clock
 * is fair to every future of the batch. */
static int collect_one(ac_future **f, const uint64_t *ids, int n)
{
    ac_answer a;
    for (int i = 0; i < n; i++) {
        if (f[i] && ac_future_poll(f[i], &a)) {
            settle_answer(ids[i], status_of(&a), &a);
            ac_answer_release(&a);
            ac_future_release(f[i]);
            f[i] = NULL;
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!f[i])
            continue;
        ac_status st = ac_future_wait(f[i], 2, &a);
        if (st == AC_EPENDING) {
            if (a.reply || a.error || a.sender)
                soak_violation("ac_future_wait returned AC_EPENDING with an answer filled in");
            return 0;
        }
        note_sender(a.sender);
        settle_answer(ids[i], st, &a);
        ac_answer_release(&a);
        ac_future_release(f[i]);
        f[i] = NULL;
        return 1;
    }
    return 0;
}

static void future_batch(soak_rng *rng)
{
    ac_future *f[FUTURE_BATCH];
    uint64_t ids[FUTURE_BATCH];
    int n = 1 + (int)soak_rng_below(rng, FUTURE_BATCH), open = 0;
    for (int i = 0; i < n; i++) {
        draw d;
        draw_request(rng, &d);
        f[i] = ask_future(&d, MODE_FUTURE_WAIT, &ids[i]);
        open += f[i] != NULL;
    }
    while (open > 0)
        open -= collect_one(f, ids, n);
}

static void wait_for_room(void)
{
    while (ledger_in_flight() > MAX_IN_FLIGHT && !atomic_load(&g_stop))
        soak_sleep_us(200);
}

static void *outside_main(void *arg)
{
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 10 + (uintptr_t)arg);
    while (!atomic_load(&g_stop)) {
        uint32_t how = soak_rng_below(&rng, 10);
        wait_for_room();
        if (how < 8) {
            draw d;
            draw_request(&rng, &d);
            future_callback_once(&d);
        } else if (how < 9) {
            future_batch(&rng);
        } else {
            draw d;
            draw_request(&rng, &d);
            ask_wait_once(&d);
        }
    }
    return NULL;
}

/* ---- inside the system --------------------------------------------------- */

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
    settle_answer((uint64_t)(uintptr_t)user, status_of(a), a);
}

static void on_answer_msg(caller_state *st, const ac_msg *msg)
{
    uint64_t ask_id = ac_answer_id(msg);
    for (int i = 0; i < ACTOR_OPEN_ASKS; i++) {
        if (st->pending[i].ask_id == ask_id && ask_id) {
            const ac_answer *a = ac_answer_of(msg);
            note_sender(a->sender);
            settle_answer(st->pending[i].soak_id, status_of(a), a);
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
    ac_status rc = !m ? AC_ENOMEM
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
    int mode = d->mode_r < 450 ? MODE_ASK_IN_FN : d->mode_r < 750 ? MODE_ASK_IN_MSG : MODE_TELL_SELF;
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
        out.status = status_of(&a);
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

static void send_go(soak_rng *rng)
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

static void *driver_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 2);
    while (!atomic_load(&g_stop)) {
        wait_for_room();
        for (int i = 0; i < 8; i++)
            send_go(&rng);
        streams_step(&rng);
        soak_sleep_us(100);
    }
    return NULL;
}

static void *chaos_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 1);
    while (!atomic_load(&g_stop)) {
        uint64_t pause_us = 2000 + soak_rng_below(&rng, 40000);
        soak_sleep_us(pause_us);
        if (!atomic_load(&g_stop))
            pools_chaos_step(&rng);
    }
    return NULL;
}

static pthread_t threads[MAX_CALLER_THREADS + 2];
static int thread_count;

int callers_start(ac_system *sys)
{
    for (int i = 0; i < g_cfg.actor_callers; i++) {
        caller_index[i] = i;
        char name[32];
        snprintf(name, sizeof name, "caller-%d", i);
        ac_props *p = ac_props_new(&caller_def, &caller_index[i]);
        caller_refs[i] = p ? ac_spawn(sys, p, name) : NULL;
        if (!caller_refs[i])
            return -1;
    }
    for (int i = 0; i < g_cfg.outside_callers; i++)
        pthread_create(&threads[thread_count++], NULL, outside_main, (void *)(uintptr_t)i);
    pthread_create(&threads[thread_count++], NULL, driver_main, NULL);
    pthread_create(&threads[thread_count++], NULL, chaos_main, NULL);
    return 0;
}

/* A caller blocked on an answer that never comes would hang a plain join;
 * once the reaper has flagged it, the run gives up on the caller instead. */
bool callers_join(void)
{
    for (int i = 0; i < thread_count; i++) {
        for (;;) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50000000;
            if (until.tv_nsec >= 1000000000)
                until.tv_sec++, until.tv_nsec -= 1000000000;
            if (pthread_timedjoin_np(threads[i], NULL, &until) == 0)
                break;
            if (atomic_load(&g_failed))
                return false;
        }
    }
    thread_count = 0;
    return true;
}

/* ---- asks still open when the system terminates --------------------------- */

/* A future's callback is owed exactly one call, and an ask that is open
 * when the system terminates is no exception: its target stops without
 * answering. These asks go to silent routees of a calm pool, with a
 * timeout far beyond the run, so only the termination can settle them. */
#define OPEN_AT_END 64

static atomic_int open_calls, open_replies;

static void on_open_future(const ac_answer *a, void *user)
{
    (void)user;
    atomic_fetch_add(&open_calls, 1);
    if (a->reply || !a->error)
        atomic_fetch_add(&open_replies, 1);
}

int callers_leave_open(void)
{
    soak_scenario sc;
    ac_ref *ref = pools_acquire(STRAT_ROUND_ROBIN, &sc);
    int n = 0;
    for (int i = 0; ref && i < OPEN_AT_END; i++) {
        memset(&sc.req, 0, sizeof sc.req);
        memset(sc.req.beh, BEH_SILENT, sizeof sc.req.beh);
        sc.wrapped = false;
        ac_msg *m = request_msg(&sc, 0);
        ac_future *f = m ? ac_ask(ref, m, 600000) : NULL;
        if (f && ac_future_on_complete(f, on_open_future, NULL) == AC_OK)
            n++;
        ac_future_release(f);
    }
    ac_ref_release(ref);
    return n;
}

void callers_check_left_open(int n)
{
    int calls = atomic_load(&open_calls);
    if (calls != n)
        soak_violation("%d asks were open when the system terminated, and %d of their callbacks ran "
                       "(each is owed exactly one call)", n, calls);
    else if (atomic_load(&open_replies))
        soak_violation("%d asks to silent routees, open at termination, were answered with a reply",
                       atomic_load(&open_replies));
}

