/*
 * Sending a hedged gather's requests one by one: the first at once, each
 * next one when the hedge delay has passed without a success, or at once
 * when an attempt fails.
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
 * the delay of that moment (fixed, or the adaptive window's). Its state
 * (armed, rearm, due_for in the gather's hedge part) is under the router's
 * shared lock, since the launcher re-arms it while it may be firing: a
 * cancel that fails because the timer is due leaves `rearm` for the firing
 * to act on — it then re-arms for the attempt now next, a full delay from
 * now, instead of sending it. A firing sends the next attempt only when
 * none has gone out since it was armed, so a hedge does not follow an
 * error-triggered attempt at once (a failure that lands in the same
 * instant as the firing may still make it send one early: a request more,
 * never a wrong answer). The armed timer holds a reference to the gather;
 * sealing cancels it.
 *
 * The budget. Every attempt after the first takes a token; none left,
 * the gather is sealed with what it has sent (counted as budget
 * exhausted), and fails at once if all of that has failed.
 */
#include "core/alloc.h"
#include "routing/gather.h"

static uint64_t hedge_delay_ns(ac__gather_shared *sh)
{
    return sh->delay.adaptive ? ac__latency_window_delay(&sh->delay.window) : sh->delay.fixed_ns;
}

static ac__gather *gather_of_hedge(ac__timer *t)
{
    return ((ac__gather_hedging *)(void *)((char *)t - offsetof(ac__gather_hedging, timer)))->g;
}

/* Call with the shared lock held: arm for attempt `next`. */
static void hedge_arm_locked(ac__gather *g, uint32_t next)
{
    g->hedge->armed = true;
    g->hedge->due_for = next;
    ac__timer_arm_ns(g->system->timers, &g->hedge->timer, hedge_delay_ns(g->shared));
}

/* After attempt next - 1 went out: the hedge timer for attempt `next`. */
static void hedge_arm_next(ac__gather *g, uint32_t next)
{
    ac__gather_shared *sh = g->shared;
    pthread_mutex_lock(&sh->lock);
    if (!(atomic_load_explicit(&g->launched, memory_order_seq_cst) & AC__GATHER_SEALED)) {
        if (!g->hedge->armed) {
            atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed); /* the timer's */
            hedge_arm_locked(g, next);
        } else if (ac__timer_cancel(g->system->timers, &g->hedge->timer)) {
            hedge_arm_locked(g, next); /* keeps the timer's reference */
        } else {
            g->hedge->rearm = true; /* firing now: it re-arms */
        }
    }
    pthread_mutex_unlock(&sh->lock);
}

void ac__gather_hedge_stop(ac__gather *g)
{
    ac__gather_shared *sh = g->shared;
    pthread_mutex_lock(&sh->lock);
    bool dropped = g->hedge->armed && ac__timer_cancel(g->system->timers, &g->hedge->timer);
    if (dropped)
        g->hedge->armed = false;
    pthread_mutex_unlock(&sh->lock);
    if (dropped)
        ac__gather_unref(g); /* the timer's reference */
}

static void hedge_fire(ac__timer *t)
{
    ac__gather *g = gather_of_hedge(t);
    ac__gather_hedging *h = g->hedge;
    bool launch = false, rearmed = false;
    pthread_mutex_lock(&g->shared->lock);
    h->armed = false;
    uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
    if (!(w & AC__GATHER_SEALED)) {
        if (h->rearm && ac__gather_count(w) < g->n) {
            hedge_arm_locked(g, ac__gather_count(w));
            rearmed = true;
        } else {
            launch = !h->rearm && ac__gather_count(w) == h->due_for;
        }
    }
    h->rearm = false;
    pthread_mutex_unlock(&g->shared->lock);
    if (launch)
        ac__gather_launch(g);
    if (!rearmed)
        ac__gather_unref(g); /* the timer's reference */
}

static void hedge_discard(ac__timer *t)
{
    /* System teardown: just let go. */
    ac__gather_unref(gather_of_hedge(t));
}

const ac__timer_ops ac__gather_hedge_timer_ops = {.fire = hedge_fire, .discard = hedge_discard};

/* Attempt i (already counted in `launched`): true when it went out, false
 * when its routee's breaker refused it, which fails its slot. */
static bool send_attempt(ac__gather *g, uint32_t i)
{
    ac__gather_slot *s = &g->slots[i];
    ac__gather_attempt *at = &g->hedge->attempts[i];
    ac__gather_shared *sh = g->shared;
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
        ac__gather_count_hedge_sent(sh, g->system);
    if (at->breaker)
        ac_breaker_tell(at->breaker, &permit, s->routee, ac_msg_retain(g->hedge->request), &s->ref,
                        sh->timeout_ms);
    else
        ac_tell(s->routee, ac_msg_retain(g->hedge->request), &s->ref);
    ac_ref_release(&s->ref); /* the router's hold: the envelope has its own */
    return true;
}

/* A hedge needs a token; none left, the gather goes on unhedged. */
static bool budget_allows(ac__gather *g, uint32_t i)
{
    ac__gather_shared *sh = g->shared;
    if (i == 0 || !sh->has_budget || ac__hedge_budget_take(&sh->budget, 1) == 1)
        return true;
    ac__gather_count_budget_exhausted(sh, g->system);
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

void ac__gather_launch(ac__gather *g)
{
    /* acq_rel: a wish counted here is seen by the running launcher's
     * decrement, and the launches it runs see what the wisher wrote. */
    atomic_uint *wishes = &g->hedge->launch_requests;
    if (atomic_fetch_add_explicit(wishes, 1, memory_order_acq_rel) != 0)
        return;
    do
        launch_one(g);
    while (atomic_fetch_sub_explicit(wishes, 1, memory_order_acq_rel) != 1);
}

void ac__gather_hedge(ac__gather *g)
{
    ac__timer_arm(g->system->timers, &g->deadline, g->shared->timeout_ms);
    ac__gather_launch(g);
    ac__gather_unref(g); /* the creator's: held while the first request went out */
}
