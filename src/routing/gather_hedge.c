/*
 * The hedged router's gathering policy (gather.h): whom to try in which
 * order, and sending a gather's requests one by one — the first at once,
 * each next one when the hedging policy's delay (hedge_policy.h) has
 * passed without a success, or at once when an attempt fails.
 *
 * The order (hedge_order.c): by latency or round-robin, with the
 * routees known to be failing moved to the end — those whose last
 * outcome was an error or a timeout (`failing`, by routee number,
 * cleared by a success) and those whose breaker is open — so that a
 * failing routee is still tried when the healthy ones are slow, and can
 * show it has recovered. By latency, each attempt's routee record counts
 * it out until its outcome, and learns its latency from its success, or
 * a lower bound when a later attempt wins before it answers or its
 * deadline passes; a probe is sent as the second attempt at once.
 *
 * Launching. Three kinds of thread want the next attempt out: the
 * router's turn (the first), the hedge timer, and whoever delivers an
 * attempt's failure (a routee's turn, a breaker's timer, a tell to a
 * stopped routee, which fails synchronously, inside the very tell that
 * sends). They all go through one trampoline: `launch_requests` counts
 * the wishes, the one that takes it from 0 runs them, one attempt each,
 * until none is left; the others return at once. So launches never nest
 * (a pool of stopped routees cannot recurse through its tells) and never
 * race each other; they race only the seal (a CAS on `launched`).
 *
 * The hedge timer. Armed after each attempt for the one after it, with
 * the delay of that moment. Its state (armed, rearm, due_for in the
 * gather's part) is under the router's shared lock, since the launcher
 * re-arms it while it may be firing: a cancel that fails because the
 * timer is due leaves `rearm` for the firing to act on — it then re-arms
 * for the attempt now next, a full delay from now, instead of sending
 * it. A firing sends the next attempt only when none has gone out since
 * it was armed, so a hedge does not follow an error-triggered attempt at
 * once (a failure that lands in the same instant as the firing may still
 * make it send one early: a request more, never a wrong answer). The
 * armed timer holds a reference to the gather; the seal cancels it. The
 * shared lock is never held across a call into the core.
 *
 * The budget. Every attempt after the first takes a token; none left,
 * the gather is sealed with what it has sent (counted as budget
 * exhausted), and fails at once if all of that has failed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "routing/gather_hedge.h"

/* A gather's part: the hedge timer and what sending later needs. */
typedef struct attempt {
    ac_breaker *breaker; /* retained; NULL: none */
    uint64_t sent_ns;    /* when the request went out (the system's clock) */
    /* By latency: the routee's record, set before the request goes out,
     * and whether the request still counts as out in it (cleared once,
     * by whoever sees its outcome first, or when the gather is freed). */
    ac__routee_latency *lat;
    atomic_bool pending;
} attempt;

typedef struct hedge_part {
    ac__gather *g;
    ac__timer timer; /* its state is under shared->lock: */
    bool armed, rearm;
    uint32_t due_for;            /* the attempt it will send */
    atomic_uint launch_requests; /* the trampoline's wishes */
    bool probe;                  /* the second attempt goes with the first */
    ac_msg *request;             /* retained */
    attempt attempts[];          /* one per slot */
} hedge_part;

static hedge_part *part_of(const ac__gather *g) { return g->part; }

static ac__hedging *hedging_of(const ac__gather *g) { return g->shared->policy_state; }

/* ---- the order of attempts (hedge_order.c) ---------------------------- */

static bool known_failing(const ac__router_state *st, size_t i, const void *arg)
{
    const ac__hedging *h = arg;
    if (st->breakers && ac_breaker_state_of(st->breakers[i]) == AC_BREAKER_OPEN)
        return true;
    uint32_t k = st->numbers && h->failing ? st->numbers[i] : 0;
    return k && atomic_load_explicit(&h->failing[k], memory_order_relaxed);
}

static void hedge_ask(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st, ac_msg *msg,
                      ac_ref *caller)
{
    ac__hedging *h = sh->policy_state;
    uint32_t m = h->max_attempts && h->max_attempts < st->n ? h->max_attempts : (uint32_t)st->n;
    uint32_t small[16];
    uint32_t *picks = m <= 16 ? small : ac__malloc(m * sizeof *picks);
    if (!picks) {
        ac__gather_answer_no_memory(ctx, sh, caller, m);
        return;
    }
    ac__latency_table *t = h->latency.records ? &h->latency : NULL;
    uint64_t now = t ? ac__gather_now_ns(ac_ctx_system(ctx)) : 0;
    h->probe_next = ac__hedge_order(t, st, m, picks, known_failing, h, now);
    ac__gather_open(ctx, sh, st, picks, m, caller, msg, NULL);
    if (picks != small)
        free(picks);
}

/* ---- the hedge timer -------------------------------------------------- */

static ac__gather *gather_of_hedge(ac__timer *t)
{
    return ((hedge_part *)(void *)((char *)t - offsetof(hedge_part, timer)))->g;
}

/* Call with the shared lock held: arm for attempt `next`. */
static void hedge_arm_locked(ac__gather *g, uint32_t next)
{
    const ac__hedging *h = hedging_of(g);
    hedge_part *p = part_of(g);
    p->armed = true;
    p->due_for = next;
    ac__timer_arm_ns(g->system->timers, &p->timer, h->delay->delay_ns(h->delay_state));
}

/* After attempt next - 1 went out: the hedge timer for attempt `next`. */
static void hedge_arm_next(ac__gather *g, uint32_t next)
{
    ac__gather_shared *sh = g->shared;
    hedge_part *p = part_of(g);
    pthread_mutex_lock(&sh->lock);
    if (!(atomic_load_explicit(&g->launched, memory_order_seq_cst) & AC__GATHER_SEALED)) {
        if (!p->armed) {
            atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed); /* the timer's */
            hedge_arm_locked(g, next);
        } else if (ac__timer_cancel(g->system->timers, &p->timer)) {
            hedge_arm_locked(g, next); /* keeps the timer's reference */
        } else {
            p->rearm = true; /* firing now: it re-arms */
        }
    }
    pthread_mutex_unlock(&sh->lock);
}

/* The seal (the `sealed` hook): the hedge timer has nothing left to do. */
static void hedge_sealed(ac__gather *g)
{
    ac__gather_shared *sh = g->shared;
    hedge_part *p = part_of(g);
    pthread_mutex_lock(&sh->lock);
    bool dropped = p->armed && ac__timer_cancel(g->system->timers, &p->timer);
    if (dropped)
        p->armed = false;
    pthread_mutex_unlock(&sh->lock);
    if (dropped)
        ac__gather_unref(g); /* the timer's reference */
}

static void hedge_launch(ac__gather *g);

static void hedge_fire(ac__timer *t)
{
    ac__gather *g = gather_of_hedge(t);
    hedge_part *p = part_of(g);
    bool launch = false, rearmed = false;
    pthread_mutex_lock(&g->shared->lock);
    p->armed = false;
    uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
    if (!(w & AC__GATHER_SEALED)) {
        if (p->rearm && ac__gather_count(w) < g->n) {
            hedge_arm_locked(g, ac__gather_count(w));
            rearmed = true;
        } else {
            launch = !p->rearm && ac__gather_count(w) == p->due_for;
        }
    }
    p->rearm = false;
    pthread_mutex_unlock(&g->shared->lock);
    if (launch)
        hedge_launch(g);
    if (!rearmed)
        ac__gather_unref(g); /* the timer's reference */
}

static void hedge_discard(ac__timer *t)
{
    /* System teardown: just let go. */
    ac__gather_unref(gather_of_hedge(t));
}

static const ac__timer_ops hedge_timer_ops = {.fire = hedge_fire, .discard = hedge_discard};

/* ---- a gather's part -------------------------------------------------- */

static size_t hedge_part_size(uint32_t n) { return sizeof(hedge_part) + n * sizeof(attempt); }

static void hedge_part_init(ac__gather *g, const ac__router_state *st, const uint32_t *picks,
                            ac_msg *msg)
{
    hedge_part *p = part_of(g);
    p->g = g;
    memset(&p->timer, 0, sizeof p->timer);
    p->timer.ops = &hedge_timer_ops;
    p->armed = p->rearm = false;
    p->due_for = 0;
    atomic_init(&p->launch_requests, 0);
    p->probe = hedging_of(g)->probe_next;
    p->request = ac_msg_retain(msg);
    for (uint32_t i = 0; i < g->n; i++) {
        p->attempts[i] = (attempt){
            .breaker = st->breakers ? ac_breaker_retain(st->breakers[picks ? picks[i] : i])
                                    : NULL};
        atomic_init(&p->attempts[i].pending, false);
    }
}

/* Attempt i's request has its outcome: no longer out at its routee. */
static void attempt_done(ac__gather *g, uint32_t i)
{
    attempt *at = &part_of(g)->attempts[i];
    /* Acquire pairs with send_attempt's release: `lat` is set. */
    if (atomic_exchange_explicit(&at->pending, false, memory_order_acquire))
        ac__latency_done(at->lat, g->slots[i].routee, ac__gather_now_ns(g->system));
}

static void hedge_part_fini(ac__gather *g)
{
    hedge_part *p = part_of(g);
    for (uint32_t i = 0; i < g->n; i++) {
        attempt_done(g, i); /* a cancelled request, or one let go unanswered */
        ac_breaker_release(p->attempts[i].breaker);
    }
    ac_msg_release(p->request);
}

/* ---- launching -------------------------------------------------------- */

/* Attempt i (already counted in `launched`): true when it went out, false
 * when its routee's breaker refused it, which fails its slot. */
static bool send_attempt(ac__gather *g, uint32_t i)
{
    ac__gather_slot *s = &g->slots[i];
    hedge_part *p = part_of(g);
    attempt *at = &p->attempts[i];
    ac__hedging *h = hedging_of(g);
    if (h->delay->observe || h->latency.records) /* the clock only when learning */
        at->sent_ns = ac__gather_now_ns(g->system);
    ac_breaker_permit permit;
    ac_error *refusal = NULL;
    if (at->breaker && !ac_breaker_acquire(at->breaker, &permit, &refusal)) {
        ac_ref_release(&s->ref); /* the router's hold: nothing was told */
        if (!refusal)
            refusal = ac_error_new(AC_CIRCUIT_BREAKER_OPEN_ERROR, "Circuit breaker %s is open",
                                   ac_breaker_name(at->breaker));
        if (ac__oneshot_claim(&s->ref))
            ac__gather_slot_failed(s, ac__gather_error_or_abort(refusal, "a breaker's refusal"),
                                   AC__SLOT_FAILED, false);
        else
            ac_error_release(refusal); /* the deadline came first */
        return false;
    }
    if (i > 0)
        ac__gather_count_event(g->shared, g->system, AC__GATHER_HEDGE_SENT);
    if (h->latency.records && (at->lat = ac__latency_claim(&h->latency, s->routee))) {
        ac__latency_asked(at->lat, at->sent_ns);
        /* Release: `lat` and `sent_ns` before it (attempt_done, the
         * lower bounds of hedge_failed and hedge_won). */
        atomic_store_explicit(&at->pending, true, memory_order_release);
    }
    ac__gather_send(g, i, p->request, at->breaker, &permit);
    return true;
}

/* A hedge needs a token; none left, the gather goes on unhedged. */
static bool budget_allows(ac__gather *g, uint32_t i)
{
    ac__gather_shared *sh = g->shared;
    if (i == 0 || !sh->has_budget || ac__hedge_budget_take(&sh->budget, 1) == 1)
        return true;
    ac__gather_count_event(sh, g->system, AC__GATHER_BUDGET_EXHAUSTED);
    ac__gather_seal(g);
    ac__gather_check_failure(g);
    return false;
}

/* One attempt out, if any is left: the first that its breaker admits. */
static void launch_one(ac__gather *g)
{
    for (;;) {
        /* seq_cst: the launch races the seal (see gather.c). */
        uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
        uint32_t i = ac__gather_count(w);
        if ((w & AC__GATHER_SEALED) || i >= g->n)
            return;
        if (ac__ref_is_stopping(g->shared->router)) {
            ac__gather_seal(g); /* post_stop answers */
            return;
        }
        if (!budget_allows(g, i))
            return;
        if (!atomic_compare_exchange_strong_explicit(&g->launched, &w, w + 1,
                                                     memory_order_seq_cst,
                                                     memory_order_seq_cst)) {
            if (i > 0 && g->shared->has_budget)
                ac__hedge_budget_refund(&g->shared->budget, 1);
            continue; /* sealed meanwhile */
        }
        bool sent = send_attempt(g, i);
        if (i + 1 == g->n)
            ac__gather_seal(g);
        else if (sent)
            hedge_arm_next(g, i + 1);
        if (sent)
            return;
        /* refused by its breaker: the next one at once */
    }
}

/* The trampoline; also the `retry` hook. */
static void hedge_launch(ac__gather *g)
{
    /* acq_rel: a wish counted here is seen by the running launcher's
     * decrement, and the launches it runs see what the wisher wrote. */
    atomic_uint *wishes = &part_of(g)->launch_requests;
    if (atomic_fetch_add_explicit(wishes, 1, memory_order_acq_rel) != 0)
        return;
    do
        launch_one(g);
    while (atomic_fetch_sub_explicit(wishes, 1, memory_order_acq_rel) != 1);
}

static void hedge_start(ac__gather *g, ac_msg *msg, const ac__gather_permits *permits)
{
    (void)msg;     /* kept in the part */
    (void)permits; /* taken as each attempt goes out */
    ac__gather_arm_deadline(g);
    hedge_launch(g);
    if (part_of(g)->probe)
        hedge_launch(g); /* the probe, at once */
    ac__gather_unref(g); /* the creator's: held while the first request went out */
}

/* ---- what the router learns ------------------------------------------- */

static void mark_failing(ac__gather_slot *s, unsigned char failing)
{
    const ac__hedging *h = hedging_of(s->g);
    if (h->failing && s->number)
        atomic_store_explicit(&h->failing[s->number], failing, memory_order_relaxed);
}

/* Attempt i's routee took at least `latency_ns` (by latency). */
static void learn(ac__gather *g, uint32_t i, uint64_t now)
{
    const ac__hedging *h = hedging_of(g);
    const attempt *at = &part_of(g)->attempts[i];
    if (at->lat)
        ac__latency_observe(&h->latency, at->lat, g->slots[i].routee,
                            now > at->sent_ns ? now - at->sent_ns : 0, now);
}

/* A success: its routee works, and its latency (for a policy that
 * learns, and for the latency order). */
static void hedge_succeeded(ac__gather_slot *s)
{
    const ac__hedging *h = hedging_of(s->g);
    uint32_t i = (uint32_t)(s - s->g->slots);
    mark_failing(s, 0);
    attempt_done(s->g, i);
    if (!h->delay->observe && !h->latency.records)
        return;
    uint64_t sent = part_of(s->g)->attempts[i].sent_ns;
    uint64_t now = ac__gather_now_ns(s->g->system);
    if (h->delay->observe)
        h->delay->observe(h->delay_state, now > sent ? now - sent : 0);
    learn(s->g, i, now);
}

/* A failure; one by the deadline says its routee took at least that. */
static void hedge_failed(ac__gather_slot *s)
{
    uint32_t i = (uint32_t)(s - s->g->slots);
    mark_failing(s, 1);
    bool timeout = atomic_load_explicit(&s->state, memory_order_relaxed) == AC__SLOT_TIMEOUT;
    /* Acquire pairs with send_attempt's release. */
    if (timeout && atomic_load_explicit(&part_of(s->g)->attempts[i].pending, memory_order_acquire))
        learn(s->g, i, ac__gather_now_ns(s->g->system));
    attempt_done(s->g, i);
}

/* A win by any attempt but the first is a hedge's; the attempts before
 * it still out lost the race, and took at least as long as they have
 * been out. */
static void hedge_won(ac__gather_slot *s)
{
    ac__gather *g = s->g;
    uint32_t w = (uint32_t)(s - g->slots);
    if (w == 0)
        return;
    ac__gather_count_event(g->shared, g->system, AC__GATHER_HEDGE_WON);
    if (!hedging_of(g)->latency.records)
        return;
    uint64_t now = ac__gather_now_ns(g->system);
    for (uint32_t i = 0; i < w; i++)
        if (atomic_load_explicit(&part_of(g)->attempts[i].pending, memory_order_acquire))
            learn(g, i, now); /* acquire: pairs with send_attempt's release */
}

static void hedging_free(void *state)
{
    ac__hedging *h = state;
    h->delay->destroy(h->delay_state);
    ac__latency_table_fini(&h->latency);
    free(h->failing);
    free(h);
}

/* The delay a hedge would wait now, and the policy behind it. */
static void hedge_delay_write(ac_json *out, void *state)
{
    ac__hedging *h = state;
    ac_json_object(out);
    ac_json_key(out, "policy");
    ac_json_string(out, h->delay->label);
    ac_json_key(out, "delay_ms");
    ac_json_double(out, (double)h->delay->delay_ns(h->delay_state) / 1e6);
    if (h->delay->view)
        h->delay->view(h->delay_state, out);
    ac_json_object_end(out);
}

const ac__gather_policy ac__hedge_gather_policy = {
    .ask = hedge_ask,
    .start = hedge_start,
    .part_size = hedge_part_size,
    .part_init = hedge_part_init,
    .part_fini = hedge_part_fini,
    .sealed = hedge_sealed,
    .succeeded = hedge_succeeded,
    .failed = hedge_failed,
    .retry = hedge_launch,
    .won = hedge_won,
    .free_state = hedging_free,
    .delay_write = hedge_delay_write,
};
