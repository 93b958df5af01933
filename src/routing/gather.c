/*
 * Gathers: one message asked of several routees, answered once `quorum`
 * of them have succeeded (1 for the first reply), or failed as soon as
 * that can no longer happen. How the requests go out is the gathering
 * policy's (gather.h); everything that follows is here, the same for
 * every policy, which it tells what happens through its hooks.
 *
 * One gather per message: a header and one slot per routee that may be
 * asked, in one allocation (with room for a quorum's successes after the
 * slots). Each slot is a one-shot reply ref (ask/oneshot.h) used as the
 * sender of the request to its routee. The first thing to reach a slot
 * claims it (CAS on its state word): a reply, an error reply, the news that
 * the routee had stopped, a breaker's refusal, the gather's single
 * deadline timer, or (cancel_losers) the routee's turn dropping the
 * request. So every slot that was sent ends with exactly one outcome.
 *
 *   - `launched` counts the requests sent; SEALED says no more will be
 *     (a policy that sends everything at once seals from the start; one
 *     that sends one by one when its last request goes out, when it
 *     stops for its own reasons, at the deadline, or when the gather is
 *     settled). Slots never sent are let go at the seal, and the policy
 *     is told (its `sealed` hook).
 *   - With a quorum of 1, the first success CAS-settles the gather and is
 *     told to the caller with the winning routee as sender. With a quorum
 *     of K, a success takes the next place in `succeeded`, which is
 *     arrival order; the first K store their reply, and the one that
 *     completes the K-th store (`stored`, acq_rel, so it sees the others)
 *     settles and tells the caller one Quorum message, sent by the
 *     router. Later successes vanish silently (a loser of a settled
 *     gather learns it from one load, without the lock).
 *   - A failure publishes its slot's error (release on its state) and
 *     counts in `failed`; whoever sees failed + quorum above what can
 *     still be sent (seq_cst on `failed` and `launched`, so that a failure
 *     and a seal racing each other cannot both miss it) settles the gather
 *     and builds the AggregateError from the published errors, in slot
 *     order: "none of N … within Tms" when all timed out, "all N routees
 *     failed" otherwise, or for a quorum "F of N routees failed; a quorum
 *     of K can no longer be reached". An error reply too deep to nest
 *     under the aggregate is kept as its name and message.
 *   - When every sent slot has its outcome and the gather is sealed
 *     (`claimed` against `launched`, seq_cst), the deadline timer is
 *     cancelled: nothing of a gather outlives its last answer.
 *   - Open gathers sit in a list shared with the router (under its lock),
 *     so that post_stop — and a restart, through the default pre_restart —
 *     can settle them all at once with "stopped". Settling takes the lock
 *     and unlinks in the same critical section, so the list only ever holds
 *     unsettled gathers. A stopping router stops its routees first, which
 *     fails the requests still queued at them; such a gather stays open for
 *     post_stop, as the router's stop is the cause.
 *
 * References to a gather: one per slot ref still alive (a slot ref lives
 * until it is claimed and the routee's envelope has let go of it, or
 * until the seal for a slot never sent), one for the armed deadline timer,
 * one for each timer of the policy's that is armed, one while listed as
 * open, and the creator's until the first requests are out. A slot ref starts with two
 * references: its own hold until claimed, and the router's until the
 * request carrying it has been told — the timer is armed before the
 * requests go out, and may claim a slot while they are still being told,
 * so without the router's hold a slot could be destroyed and then handed
 * to its routee as the sender.
 *
 * Each slot's outcome is counted per routee (win, loss, error, timeout)
 * when the gather is freed, when no thread touches it any more.
 *
 * The router's handler only creates the gather, arms the timer and sends
 * the first requests; every answer is sent from the thread that completes
 * it, outside the router's turn, so gathers overlap freely. The policy's
 * hooks are called outside every lock of the core's (gather.h has their
 * thread rules).
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "routing/gather.h"
#include "routing/gather_view.h"

uint64_t ac__gather_now_ns(const ac_system *sys)
{
    if (sys->manual_clock)
        return (uint64_t)ac_clock_now_ms(sys) * 1000000ull;
    return ac__now_ns();
}

/* ---- gather lifetime -------------------------------------------------- */

/* The gather, its slots, a quorum's successes, the policy's part. */
static size_t gather_size(const ac__gather_shared *sh, uint32_t n)
{
    size_t size = sizeof(ac__gather) + n * sizeof(ac__gather_slot);
    if (sh->quorum > 1)
        size += sh->quorum * sizeof(ac__gather_success);
    if (sh->policy->part_size)
        size += sh->policy->part_size(n);
    return size;
}

static void gather_free(ac__gather *g)
{
    ac__gather_count_slots(g);
    for (uint32_t i = 0; i < g->n; i++) {
        ac__gather_slot *s = &g->slots[i];
        ac_ref_release(s->routee);
        if (s->error)
            ac_error_release(s->error);
    }
    uint32_t kept = atomic_load_explicit(&g->succeeded, memory_order_relaxed);
    for (uint32_t i = 0; g->successes && i < kept && i < g->quorum; i++) {
        ac_msg_release(g->successes[i].reply);
        ac_ref_release(g->successes[i].sender);
    }
    if (g->part)
        g->shared->policy->part_fini(g);
    ac_ref_release(g->caller);
    ac__gather_shared_release(g->shared);
    free(g);
}

void ac__gather_unref(ac__gather *g)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
        gather_free(g);
}

/* Every sent slot has its outcome: the deadline has nothing left to do. */
static void finish(ac__gather *g)
{
    if (ac__timer_cancel(g->system->timers, &g->deadline))
        ac__gather_unref(g); /* the timer's reference */
}

uint32_t ac__gather_seal(ac__gather *g)
{
    /* Sealed from the start (a scatter): no write for it. seq_cst: pairs
     * with slot_done's increment and check_failure's loads (see the top of
     * the file). */
    uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
    if (w & AC__GATHER_SEALED)
        return ac__gather_count(w);
    uint32_t old = atomic_fetch_or_explicit(&g->launched, AC__GATHER_SEALED, memory_order_seq_cst);
    uint32_t count = ac__gather_count(old);
    if (old & AC__GATHER_SEALED)
        return count;
    for (uint32_t i = count; i < g->n; i++)
        ac__ref_release_n(&g->slots[i].ref, 2); /* never sent: both holds */
    if (g->shared->policy->sealed)
        g->shared->policy->sealed(g);
    if (atomic_load_explicit(&g->claimed, memory_order_seq_cst) == count)
        finish(g);
    return count;
}

/* Win the gather's one outcome; unlinks it from the open list and seals. */
static bool settle(ac__gather *g)
{
    ac__gather_shared *sh = g->shared;
    if (ac__gather_settled(g))
        return false; /* a loser need not take the lock to learn it */
    pthread_mutex_lock(&sh->lock);
    int expected = 0;
    /* acq_rel: pairs with the other settlers' CAS; one wins. */
    bool won = atomic_compare_exchange_strong_explicit(&g->settled, &expected, 1,
                                                       memory_order_acq_rel,
                                                       memory_order_relaxed);
    if (won) {
        if (g->prev)
            g->prev->next = g->next;
        else
            sh->open = g->next;
        if (g->next)
            g->next->prev = g->prev;
        g->prev = g->next = NULL;
    }
    pthread_mutex_unlock(&sh->lock);
    if (!won)
        return false;
    ac__gather_unref(g); /* the open list's reference; the caller holds one */
    ac__gather_seal(g);
    return true;
}

/* ---- the verdict ------------------------------------------------------ */

/* Can the quorum still be reached? If not, the gather fails now. */
static void check_failure(ac__gather *g)
{
    if (ac__gather_settled(g))
        return;
    /* seq_cst: see the top of the file. */
    uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
    uint32_t possible = (w & AC__GATHER_SEALED) ? ac__gather_count(w) : g->n;
    uint32_t failed = atomic_load_explicit(&g->failed, memory_order_seq_cst);
    if (failed + g->quorum <= possible)
        return;
    if (ac__ref_is_stopping(g->shared->router))
        return; /* post_stop answers "stopped" */
    if (settle(g))
        ac__gather_answer_failed(g, possible);
}

void ac__gather_check_failure(ac__gather *g) { check_failure(g); }

/* ---- slots ------------------------------------------------------------ */

/* A slot has its outcome; the last one of a sealed gather ends it. */
static void slot_done(ac__gather_slot *s)
{
    ac__gather *g = s->g;
    /* seq_cst: pairs with the seal (see the top of the file). */
    uint32_t c = atomic_fetch_add_explicit(&g->claimed, 1, memory_order_seq_cst) + 1;
    uint32_t w = atomic_load_explicit(&g->launched, memory_order_seq_cst);
    if ((w & AC__GATHER_SEALED) && c == ac__gather_count(w))
        finish(g);
    ac_ref_release(&s->ref); /* the slot's own hold, kept until claimed */
}

static void record_failure(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome)
{
    s->error = err;
    /* Release: the error before the outcome (answer_failed reads both). */
    atomic_store_explicit(&s->state, (int)outcome, memory_order_release);
    if (outcome == AC__SLOT_CANCELLED)
        return;
    if (s->g->shared->policy->failed)
        s->g->shared->policy->failed(s);
    /* seq_cst: see check_failure. */
    atomic_fetch_add_explicit(&s->g->failed, 1, memory_order_seq_cst);
}

void ac__gather_slot_failed(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome,
                            bool retry)
{
    ac__gather *g = s->g;
    const ac__gather_policy *policy = g->shared->policy;
    record_failure(s, err, outcome);
    if (outcome != AC__SLOT_CANCELLED) {
        check_failure(g);
        if (retry && policy->retry && !ac__gather_settled(g))
            policy->retry(g);
    }
    slot_done(s);
}

/* The first success, with a quorum of 1: the winner, if it settles. */
static void win_first(ac__gather_slot *s, ac_msg *reply, ac_ref *sender)
{
    ac__gather *g = s->g;
    if (settle(g)) {
        atomic_store_explicit(&s->state, AC__SLOT_WON, memory_order_relaxed);
        ac__gather_count_outcome(g->shared, g->system, AC__GATHER_FIRST, g->start_ns);
        if (g->shared->policy->won)
            g->shared->policy->won(s);
        ac_tell(g->caller, reply, sender); /* the winner, as the sender */
    } else {
        ac_msg_release(reply); /* a loser: silently */
    }
    ac_ref_release(sender);
}

/* One of the first K successes of a quorum: kept; the K-th kept answers. */
static void keep_success(ac__gather_slot *s, uint32_t pos, ac_msg *reply, ac_ref *sender)
{
    ac__gather *g = s->g;
    g->successes[pos] = (ac__gather_success){
        .reply = reply, .sender = sender, .slot = (uint32_t)(s - g->slots)};
    /* acq_rel: the one that completes the quorum sees every kept success. */
    if (atomic_fetch_add_explicit(&g->stored, 1, memory_order_acq_rel) + 1 == g->quorum &&
        settle(g))
        ac__gather_answer_quorum(g);
}

static void slot_succeeded(ac__gather_slot *s, ac_msg *reply, ac_ref *sender)
{
    ac__gather *g = s->g;
    if (g->shared->policy->succeeded)
        g->shared->policy->succeeded(s);
    atomic_store_explicit(&s->state, AC__SLOT_OK, memory_order_release);
    if (g->quorum == 1) {
        win_first(s, reply, sender); /* the settle's CAS picks the winner */
        slot_done(s);
        return;
    }
    /* acq_rel: this counter's order is the order of arrival. */
    uint32_t pos = atomic_fetch_add_explicit(&g->succeeded, 1, memory_order_acq_rel);
    if (pos >= g->quorum) {
        ac_msg_release(reply); /* a loser: silently */
        ac_ref_release(sender);
    } else {
        keep_success(s, pos, reply, sender);
    }
    slot_done(s);
}

/* A slot's one outcome (ac__oneshot_ops.settle). */
static void slot_settle(ac_ref *self, ac_msg *reply, ac_error *error, ac_ref *sender)
{
    ac__gather_slot *s = (ac__gather_slot *)self;
    if (error) {
        ac_ref_release(sender);
        ac__gather_slot_failed(s, ac__gather_member_error(error), AC__SLOT_FAILED, true);
        return;
    }
    slot_succeeded(s, reply, sender);
}

/* ac__ref_ops.cancelled: with cancel_losers, nobody waits for a slot of
 * a gather that has been decided; a skipped request settles it. */
static bool slot_cancelled(ac_ref *self, bool skip)
{
    ac__gather_slot *s = (ac__gather_slot *)self;
    ac__gather *g = s->g;
    if (!g->shared->cancel_losers || !ac__gather_settled(g))
        return false;
    if (!skip)
        return true;
    ac__gather_count_event(g->shared, g->system, AC__GATHER_CANCELLED);
    if (ac__oneshot_claim(self)) /* else the deadline came first: a timeout */
        ac__gather_slot_failed(s, NULL, AC__SLOT_CANCELLED, false);
    return true;
}

static ac_ref *slot_target(const ac_ref *self) { return ((const ac__gather_slot *)self)->routee; }

static void slot_destroy(ac_ref *self) { ac__gather_unref(((ac__gather_slot *)self)->g); }

static const char *slot_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/scatter";
}

static const ac__oneshot_ops slot_ops = {
    .ref = {.kind = AC__REF_REPLY,
            .deliver = ac__oneshot_deliver,
            .destroy = slot_destroy,
            .path = slot_path,
            .cancelled = slot_cancelled,
            .settled = ac__oneshot_settled,
            .undeliverable = ac__oneshot_undeliverable},
    .claim_offset = offsetof(ac__gather_slot, state),
    .settle = slot_settle,
    .target = slot_target,
};

/* ---- the deadline ----------------------------------------------------- */

static ac__gather *gather_of_deadline(ac__timer *t)
{
    return (ac__gather *)(void *)((char *)t - offsetof(ac__gather, deadline));
}

/* Every slot still open times out; the verdict is taken once, after all
 * of them, so that a quorum's AggregateError names every timeout. */
static void deadline_fire(ac__timer *t)
{
    ac__gather *g = gather_of_deadline(t);
    uint32_t sent = ac__gather_seal(g);
    for (uint32_t i = 0; i < sent; i++) {
        ac__gather_slot *s = &g->slots[i];
        if (!ac__oneshot_claim(&s->ref))
            continue;
        record_failure(s,
                       ac__oneshot_timeout_error(s->routee, g->shared->timeout_ms,
                                                 "a gathering router's timeout error"),
                       AC__SLOT_TIMEOUT);
        slot_done(s);
    }
    check_failure(g);
    ac__gather_unref(g);
}

static void deadline_discard(ac__timer *t)
{
    /* System teardown: no one is listening any more; just let go. */
    ac__gather *g = gather_of_deadline(t);
    uint32_t sent = ac__gather_seal(g);
    for (uint32_t i = 0; i < sent; i++)
        if (ac__oneshot_claim(&g->slots[i].ref))
            ac_ref_release(&g->slots[i].ref);
    settle(g);
    ac__gather_unref(g);
}

static const ac__timer_ops deadline_ops = {.fire = deadline_fire, .discard = deadline_discard};

/* ---- opening a gather ------------------------------------------------- */

static void slot_init(ac__gather *g, uint32_t i, const ac__router_state *st, size_t at)
{
    ac__gather_slot *s = &g->slots[i];
    ac__ref_init(&s->ref, &slot_ops.ref, g->system);
    atomic_init(&s->ref.refs, 2); /* its own hold and the router's (see the top) */
    s->g = g;
    s->routee = ac_ref_retain(st->routees[at]);
    s->error = NULL;
    atomic_init(&s->state, AC__SLOT_OPEN);
    s->number = st->numbers ? st->numbers[at] : 0;
}

static void gather_counters_init(ac__gather *g, uint32_t n)
{
    atomic_init(&g->refs, n + 3); /* slots, the deadline, the open list, the creator */
    atomic_init(&g->settled, 0);
    atomic_init(&g->launched, 0);
    atomic_init(&g->claimed, 0);
    atomic_init(&g->succeeded, 0);
    atomic_init(&g->stored, 0);
    atomic_init(&g->failed, 0);
}

/* After the slots: a quorum's successes, then the policy's part. */
static void gather_parts_init(ac__gather *g, const ac__router_state *st, const uint32_t *picks,
                              ac_msg *msg)
{
    const ac__gather_policy *policy = g->shared->policy;
    char *after = (char *)&g->slots[g->n];
    g->successes = NULL;
    if (g->quorum > 1) {
        g->successes = (ac__gather_success *)(void *)after;
        memset(g->successes, 0, g->quorum * sizeof *g->successes);
        after += g->quorum * sizeof *g->successes;
    }
    g->part = NULL;
    if (policy->part_size) {
        g->part = after;
        policy->part_init(g, st, picks, msg);
    }
}

static void open_list_add(ac__gather_shared *sh, ac__gather *g)
{
    pthread_mutex_lock(&sh->lock);
    g->next = sh->open;
    if (sh->open)
        sh->open->prev = g;
    sh->open = g;
    pthread_mutex_unlock(&sh->lock);
}

/* A gather with one reference for the creator, which the policy's start
 * consumes; NULL when out of memory. */
static ac__gather *gather_new(ac__gather_shared *sh, const ac__router_state *st,
                              const uint32_t *picks, uint32_t n, ac_ref *caller, ac_msg *msg,
                              ac_system *sys)
{
    ac__gather *g = ac__malloc(gather_size(sh, n));
    if (!g)
        return NULL;
    gather_counters_init(g, n);
    memset(&g->deadline, 0, sizeof g->deadline);
    g->deadline.ops = &deadline_ops;
    atomic_fetch_add_explicit(&sh->refs, 1, memory_order_relaxed);
    g->shared = sh;
    g->prev = NULL;
    g->caller = ac_ref_retain(caller);
    g->system = sys;
    /* The clock is read for the latency histograms: the metrics', when
     * on, and the view's, once it has been taken. */
    g->start_ns =
        ac__gather_metrics_of(sh, sys) || ac__gather_view_timing(sh) ? ac__now_ns() : 0;
    g->n = n;
    g->quorum = sh->quorum;
    gather_parts_init(g, st, picks, msg);
    for (uint32_t i = 0; i < n; i++)
        slot_init(g, i, st, picks ? picks[i] : i);
    open_list_add(sh, g);
    return g;
}

void ac__gather_open(ac_ctx *ctx, ac__gather_shared *sh, const ac__router_state *st,
                     const uint32_t *picks, uint32_t n, ac_ref *caller, ac_msg *msg,
                     const ac__gather_permits *permits)
{
    ac__gather *g = gather_new(sh, st, picks, n, caller, msg, ac_ctx_system(ctx));
    if (g) {
        sh->policy->start(g, msg, permits);
        return;
    }
    for (uint32_t i = 0; permits && i < n; i++)
        ac_breaker_cancel(permits->breakers[i], &permits->permits[i]);
    ac__gather_answer_no_memory(ctx, sh, caller, n);
}

void ac__gather_arm_deadline(ac__gather *g)
{
    ac__timer_arm(g->system->timers, &g->deadline, g->shared->timeout_ms);
}

void ac__gather_send(ac__gather *g, uint32_t i, ac_msg *msg, ac_breaker *breaker,
                     const ac_breaker_permit *permit)
{
    ac__gather_slot *s = &g->slots[i];
    if (breaker) {
        ac__gather_view_breaker(g->shared, s->routee, breaker);
        ac_breaker_tell(breaker, permit, s->routee, ac_msg_retain(msg), &s->ref,
                        g->shared->timeout_ms);
    } else {
        ac_tell(s->routee, ac_msg_retain(msg), &s->ref);
    }
    ac_ref_release(&s->ref); /* the router's hold: the envelope has its own */
}

/* ---- stopping --------------------------------------------------------- */

void ac__gather_stop_all(ac__gather_shared *sh)
{
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        ac__gather *g = sh->open;
        if (g)
            atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
        pthread_mutex_unlock(&sh->lock);
        if (!g)
            return;
        if (settle(g))
            ac__gather_answer_stopped(g);
        ac__gather_unref(g);
    }
}
