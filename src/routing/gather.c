/*
 * Gathers: one message asked of several routees, answered once `quorum`
 * of them have succeeded (1 for the first reply), or failed as soon as
 * that can no longer happen. Scatter/gather and the hedged router are two
 * ways of sending a gather's requests; everything after the send is here.
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
 *     (a scatter is sealed from the start; a hedged gather when its last
 *     attempt goes out, when its budget refuses a hedge, at the deadline,
 *     or when it is settled). Slots never sent are let go at the seal.
 *   - With a quorum of 1, the first success CAS-settles the gather and is
 *     told to the caller with the winning routee as sender. With a quorum
 *     of K, a success takes the next place in `succeeded`, which is
 *     arrival order; the first K store their reply, and the one that
 *     completes the K-th store (`stored`, acq_rel, so it sees the others)
 *     settles and tells the caller one Quorum message, sent by the
 *     router. Later successes vanish silently (a loser of a settled
 *     gather learns it from one load, without the lock).
 *   - A failure publishes its slot's error (release on `outcome`) and
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
 * one for the armed hedge timer, one while listed as open, and the
 * creator's until the first requests are out. A slot ref starts with two
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
 * it, outside the router's turn, so gathers overlap freely.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "routing/gather.h"
#include "routing/quorum.h"

const ac__gather_names ac__scatter_gather_names = {
    .title = "Scatter/gather router",
    .noun = "scatter",
    .send_to = "scatter to",
    .sent = "scattered",
    .label = "scatter-gather",
    .resolved = "router_scatter_gather_resolved_total",
    .resolved_help = "Scatter/gather messages resolved, by outcome.",
    .latency = "router_scatter_gather_latency_seconds",
    .latency_help = "Seconds from scattering a message to answering its caller.",
};

const ac__gather_names ac__hedged_names = {
    .title = "Hedged router",
    .noun = "request",
    .send_to = "send to",
    .sent = "sent",
    .label = "hedged",
    .resolved = "router_hedged_resolved_total",
    .resolved_help = "Hedged router messages resolved, by outcome.",
    .latency = "router_hedged_latency_seconds",
    .latency_help = "Seconds from a hedged router's first request to answering its caller.",
    .hedges_sent = "router_hedges_sent_total",
    .hedges_sent_help = "Requests a hedged router sent beyond the first per message.",
    .hedges_won = "router_hedges_won_total",
    .hedges_won_help = "Messages a hedged router's later request won.",
};

uint64_t ac__gather_now_ns(const ac_system *sys)
{
    if (sys->manual_clock)
        return (uint64_t)ac_clock_now_ms(sys) * 1000000ull;
    return ac__now_ns();
}

/* ---- shared ----------------------------------------------------------- */

ac__gather_shared *ac__gather_shared_create(const ac__gather_names *names, int pool_size,
                                            const char *fn)
{
    ac__gather_shared *sh = ac__calloc(1, sizeof *sh);
    if (!sh)
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    if (ac__mutex_init_hot(&sh->lock, "a gathering router's lock") != AC_OK) {
        free(sh);
        return NULL;
    }
    atomic_init(&sh->refs, 1);
    atomic_init(&sh->metrics, NULL);
    sh->names = names;
    sh->pool_size = pool_size;
    sh->quorum = 1;
    return sh;
}

void ac__gather_shared_release(ac__gather_shared *sh)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_destroy(&sh->lock);
    ac__gather_metrics_free(atomic_load_explicit(&sh->metrics, memory_order_relaxed));
    if (sh->delay.adaptive)
        ac__latency_window_fini(&sh->delay.window);
    free(sh->failing);
    ac_ref_release(sh->router);
    free(sh);
}

void ac__gather_shared_release_void(void *sh) { ac__gather_shared_release(sh); }

/* The router's path: its cell, retained by sh, holds it. */
const char *ac__gather_router_path(const ac__gather_shared *sh) { return ac_ref_path(sh->router); }

ac_error *ac__gather_error_or_abort(ac_error *err, const char *what)
{
    if (AC__UNLIKELY(!err))
        ac__oom_abort(what);
    return err;
}

/* ---- gather lifetime -------------------------------------------------- */

/* The gather, its slots, a quorum's successes, a hedged gather's part. */
static size_t gather_size(uint32_t n, uint32_t quorum, bool hedged)
{
    size_t size = sizeof(ac__gather) + n * sizeof(ac__gather_slot);
    if (quorum > 1)
        size += quorum * sizeof(ac__gather_success);
    if (hedged)
        size += sizeof(ac__gather_hedging) + n * sizeof(ac__gather_attempt);
    return size;
}

static void hedge_part_free(ac__gather_hedging *h, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        ac_breaker_release(h->attempts[i].breaker);
    ac_msg_release(h->request);
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
    if (g->hedge)
        hedge_part_free(g->hedge, g->n);
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
    /* A scatter is sealed from the start: no write for it. seq_cst: pairs
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
    if (g->shared->hedged)
        ac__gather_hedge_stop(g);
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

/* ---- answers ---------------------------------------------------------- */

/* A fresh message travels in its own envelope, so the tell itself
 * allocates nothing. */
void ac__gather_tell_error(ac_ref *caller, ac_error *err, ac_ref *sender)
{
    ac_msg *m = ac_msg_error_new(err);
    if (AC__UNLIKELY(!m))
        ac__oom_abort("a gathering router's error answer");
    ac_tell(caller, m, sender);
}

static void fail_caller(ac__gather *g, ac_error *err)
{
    ac__gather_tell_error(g->caller, err, g->shared->router);
}

static bool all_are(ac_error *const *members, uint32_t m, const char *name)
{
    for (uint32_t i = 0; i < m; i++)
        if (!ac_error_is(members[i], name))
            return false;
    return m > 0;
}

/* The AggregateError of a gather nobody won (N = `asked`); when it cannot
 * hold its members, the same error without them. */
static ac_error *failed_error(ac__gather *g, ac_error **members, uint32_t m, uint32_t asked,
                              bool all_timeouts)
{
    const ac__gather_shared *sh = g->shared;
    const char *t = sh->names->title, *path = ac__gather_router_path(sh);
    ac_error *err;
    if (g->quorum > 1)
        err = ac_error_aggregate(members, m,
                                 "%s %s: %u of %u routees failed; a quorum of %u can no longer "
                                 "be reached",
                                 t, path, m, asked, g->quorum);
    else if (all_timeouts)
        err = ac_error_aggregate(members, m, "%s %s: none of %u routees replied within %ums", t,
                                 path, asked, sh->timeout_ms);
    else if (all_are(members, m, AC_CIRCUIT_BREAKER_OPEN_ERROR))
        err = ac_error_aggregate(members, m,
                                 "%s %s: the circuit breakers of all %u routees are open", t, path,
                                 asked);
    else
        err = ac_error_aggregate(members, m, "%s %s: all %u routees failed", t, path, asked);
    if (err)
        return err;
    return ac__gather_error_or_abort(ac_error_new(AC_AGGREGATE_ERROR,
                                             "%s %s: %u of %u routees failed (their errors "
                                             "could not be gathered)",
                                             t, path, m, asked),
                                "a gathering router's AggregateError");
}

static void answer_failed(ac__gather *g, uint32_t asked)
{
    ac_error *small[8];
    ac_error **members = asked <= 8 ? small : ac__malloc(asked * sizeof *members);
    if (!members)
        ac__oom_abort("the members of a gathering router's AggregateError");
    uint32_t m = 0;
    for (uint32_t i = 0; i < asked; i++) {
        const ac__gather_slot *s = &g->slots[i];
        /* Acquire pairs with the release store of the slot's outcome: its
         * error is written. */
        int o = atomic_load_explicit(&s->state, memory_order_acquire);
        if (o == AC__SLOT_FAILED || o == AC__SLOT_TIMEOUT)
            members[m++] = s->error;
    }
    bool all_timeouts = all_are(members, m, AC_ASK_TIMEOUT_ERROR);
    ac_error *err = failed_error(g, members, m, asked, all_timeouts);
    if (members != small)
        free(members);
    ac__gather_count_outcome(g->shared, g->system,
                             all_timeouts ? AC__GATHER_TIMEOUT : AC__GATHER_ALL_FAILED,
                             g->start_ns);
    fail_caller(g, err);
}

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
        answer_failed(g, possible);
}

void ac__gather_check_failure(ac__gather *g) { check_failure(g); }

/* The quorum is complete: one Quorum message, sent by the router. */
static void answer_quorum(ac__gather *g)
{
    ac_msg *m = ac__quorum_new(g->quorum);
    if (AC__UNLIKELY(!m))
        ac__oom_abort("a scatter/gather's Quorum answer");
    for (uint32_t i = 0; i < g->quorum; i++) {
        ac__gather_success *w = &g->successes[i];
        atomic_store_explicit(&g->slots[w->slot].state, AC__SLOT_WON, memory_order_relaxed);
        ac__quorum_put(m, i, w->reply, w->sender);
        w->reply = NULL;
        w->sender = NULL;
    }
    ac__gather_count_outcome(g->shared, g->system, AC__GATHER_FIRST, g->start_ns);
    ac_tell(g->caller, m, g->shared->router);
}

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

static void mark_failing(ac__gather_slot *s, unsigned char failing)
{
    ac__gather_shared *sh = s->g->shared;
    if (sh->failing && s->number)
        atomic_store_explicit(&sh->failing[s->number], failing, memory_order_relaxed);
}

static void record_failure(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome)
{
    s->error = err;
    /* Release: the error before the outcome (answer_failed reads both). */
    atomic_store_explicit(&s->state, (int)outcome, memory_order_release);
    if (outcome == AC__SLOT_CANCELLED)
        return;
    mark_failing(s, 1);
    /* seq_cst: see check_failure. */
    atomic_fetch_add_explicit(&s->g->failed, 1, memory_order_seq_cst);
}

void ac__gather_slot_failed(ac__gather_slot *s, ac_error *err, ac__slot_outcome outcome,
                            bool trigger)
{
    ac__gather *g = s->g;
    record_failure(s, err, outcome);
    if (outcome != AC__SLOT_CANCELLED) {
        check_failure(g);
        if (trigger && g->shared->hedged && !ac__gather_settled(g))
            ac__gather_launch(g);
    }
    slot_done(s);
}

/* A routee's error, as it will sit in the AggregateError (consumes err):
 * one that already nests AC_ERROR_MAX_DEPTH deep has no room under the
 * aggregate, so a stand-in with its name and message takes its place. */
static ac_error *member_error(ac_error *err)
{
    if (ac_error_depth(err) < AC_ERROR_MAX_DEPTH)
        return err;
    ac_error *stand_in = ac__gather_error_or_abort(
        ac_error_new(ac_error_name(err),
                     "%s (its members and causes are left out: it nests %zu deep, too deep for "
                     "an AggregateError to hold)",
                     ac_error_message(err), ac_error_depth(err)),
        "a gathering router's member error");
    ac_error_release(err);
    return stand_in;
}

/* The first success, with a quorum of 1: the winner, if it settles. */
static void win_first(ac__gather_slot *s, ac_msg *reply, ac_ref *sender)
{
    ac__gather *g = s->g;
    if (settle(g)) {
        atomic_store_explicit(&s->state, AC__SLOT_WON, memory_order_relaxed);
        ac__gather_count_outcome(g->shared, g->system, AC__GATHER_FIRST, g->start_ns);
        if (s != &g->slots[0] && g->shared->hedged)
            ac__gather_count_hedge_won(g->shared, g->system);
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
        answer_quorum(g);
}

/* What a hedged router learns from a success: its latency, and that its
 * routee works. */
static void note_success(ac__gather_slot *s)
{
    ac__gather_shared *sh = s->g->shared;
    mark_failing(s, 0);
    if (sh->delay.adaptive) {
        uint64_t sent = s->g->hedge->attempts[s - s->g->slots].sent_ns;
        uint64_t now = ac__gather_now_ns(s->g->system);
        ac__latency_window_record(&sh->delay.window, now > sent ? now - sent : 0);
    }
}

static void slot_succeeded(ac__gather_slot *s, ac_msg *reply, ac_ref *sender)
{
    ac__gather *g = s->g;
    if (g->shared->hedged)
        note_success(s);
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
        ac__gather_slot_failed(s, member_error(error), AC__SLOT_FAILED, true);
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
    ac__gather_count_cancelled(g->shared, g->system);
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

/* ---- the router side -------------------------------------------------- */

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

/* A hedged gather's part, after the slots and successes. */
static void hedge_part_init(ac__gather *g, void *at, const ac__router_state *st,
                            const uint32_t *picks, ac_msg *msg)
{
    ac__gather_hedging *h = at;
    h->g = g;
    memset(&h->timer, 0, sizeof h->timer);
    h->timer.ops = &ac__gather_hedge_timer_ops;
    h->armed = h->rearm = false;
    h->due_for = 0;
    atomic_init(&h->launch_requests, 0);
    h->request = ac_msg_retain(msg);
    for (uint32_t i = 0; i < g->n; i++)
        h->attempts[i] = (ac__gather_attempt){
            .breaker = st->breakers ? ac_breaker_retain(st->breakers[picks ? picks[i] : i])
                                    : NULL};
    g->hedge = h;
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

ac__gather *ac__gather_new(ac__gather_shared *sh, const ac__router_state *st,
                           const uint32_t *picks, uint32_t n, ac_ref *caller, ac_msg *msg,
                           ac_system *sys)
{
    ac__gather *g = ac__malloc(gather_size(n, sh->quorum, sh->hedged));
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
    /* The clock is read only for the latency histogram. */
    g->start_ns = ac__gather_metrics_of(sh, sys) ? ac__now_ns() : 0;
    g->n = n;
    g->quorum = sh->quorum;
    char *after = (char *)&g->slots[n];
    g->successes = NULL;
    if (g->quorum > 1) {
        g->successes = (ac__gather_success *)(void *)after;
        memset(g->successes, 0, g->quorum * sizeof *g->successes);
        after += g->quorum * sizeof *g->successes;
    }
    g->hedge = NULL;
    if (sh->hedged)
        hedge_part_init(g, after, st, picks, msg);
    for (uint32_t i = 0; i < n; i++)
        slot_init(g, i, st, picks ? picks[i] : i);
    pthread_mutex_lock(&sh->lock);
    g->next = sh->open;
    if (sh->open)
        sh->open->prev = g;
    sh->open = g;
    pthread_mutex_unlock(&sh->lock);
    return g;
}

void ac__gather_scatter(ac__gather *g, ac_msg *msg, ac_breaker *const *breakers,
                        const ac_breaker_permit *permits)
{
    /* Every slot goes out now: sealed from the start. No other thread
     * knows the gather before the first request is told. */
    atomic_store_explicit(&g->launched, g->n | AC__GATHER_SEALED, memory_order_relaxed);
    uint32_t timeout_ms = g->shared->timeout_ms;
    ac__timer_arm(g->system->timers, &g->deadline, timeout_ms);
    for (uint32_t i = 0; i < g->n; i++) {
        ac__gather_slot *s = &g->slots[i];
        if (breakers)
            ac_breaker_tell(breakers[i], &permits[i], s->routee, ac_msg_retain(msg), &s->ref,
                            timeout_ms);
        else
            ac_tell(s->routee, ac_msg_retain(msg), &s->ref);
        ac_ref_release(&s->ref); /* the router's hold: the envelope has its own */
    }
    ac__gather_unref(g); /* the creator's: held while telling, since a claim
                          * of every slot could end the gather meanwhile */
}

/* ---- answers made without a gather ------------------------------------ */

/* The caller still gets an answer: this one, small and made now. */
void ac__gather_answer_no_memory(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller, size_t n)
{
    ac__gather_tell_error(
        caller,
        ac__gather_error_or_abort(ac_error_new("RouterError", "%s %s: out of memory for a %s to %zu "
                                                         "routees",
                                          sh->names->title, ac__gather_router_path(sh),
                                          sh->names->noun, n),
                             "a gathering router's answer"),
        ac_self(ctx));
}

void ac__gather_answer_empty(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller)
{
    ac_error *err = ac__gather_error_or_abort(
        ac_error_aggregate(NULL, 0, "%s %s has no routees left to %s", sh->names->title,
                           ac__gather_router_path(sh), sh->names->send_to),
        "a gathering router's answer");
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, err, ac_self(ctx));
}

void ac__gather_drop_unanswerable(ac_ctx *ctx, ac__gather_shared *sh, ac_msg *msg)
{
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_NO_REPLY_TARGET, 0);
    ac_log_warn(ctx, "%s %s: dropped a message (%s) without a sender: no reply target, nothing %s",
                sh->names->title, ac__gather_router_path(sh), ac_msg_type_name(msg),
                sh->names->sent);
}

void ac__gather_answer_all_open(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                                ac_error **refusals, uint32_t n)
{
    ac_error *err = ac__gather_error_or_abort(
        ac_error_aggregate(refusals, n, "%s %s: the circuit breakers of all %u routees are open",
                           sh->names->title, ac__gather_router_path(sh), n),
        "a gathering router's answer");
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, err, ac_self(ctx));
}

void ac__gather_answer_short(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                             ac_error **refusals, uint32_t n, uint32_t asked)
{
    const char *t = sh->names->title, *path = ac__gather_router_path(sh);
    ac_error *err =
        n == 0 ? ac_error_aggregate(NULL, 0, "%s %s has %u routees left, fewer than its quorum "
                                             "of %u",
                                    t, path, asked, sh->quorum)
               : ac_error_aggregate(refusals, n,
                                    "%s %s: %u of %u routees failed; a quorum of %u can no "
                                    "longer be reached",
                                    t, path, n, asked, sh->quorum);
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, ac__gather_error_or_abort(err, "a gathering router's answer"),
                          ac_self(ctx));
}

/* ---- the kinds' hooks ------------------------------------------------- */

void ac__gather_on_start(ac_ctx *ctx, ac__router_cfg *cfg)
{
    ac__gather_shared *sh = cfg->extra;
    if (!sh->router) /* the same cell across restarts */
        sh->router = ac_ref_retain(ac_self(ctx));
}

/* The resolution families are exposed, at zero, as soon as the router is
 * spawned. */
void ac__gather_on_spawn(ac_system *system, ac__router_cfg *cfg)
{
    (void)ac__gather_metrics_of(cfg->extra, system);
}

/* post_stop, and so restart: every open gather fails now. */
void ac__gather_on_stop(ac_ctx *ctx, ac__router_cfg *cfg)
{
    (void)ctx;
    ac__gather_shared *sh = cfg->extra;
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        ac__gather *g = sh->open;
        if (g)
            atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
        pthread_mutex_unlock(&sh->lock);
        if (!g)
            return;
        if (settle(g)) {
            ac__gather_count_outcome(sh, g->system, AC__GATHER_STOPPED, g->start_ns);
            fail_caller(g, ac__gather_error_or_abort(
                               ac_error_aggregate(NULL, 0, "%s %s stopped while the %s was still "
                                                           "open",
                                                  sh->names->title, ac__gather_router_path(sh),
                                                  sh->names->noun),
                               "a gathering router's answer"));
        }
        ac__gather_unref(g);
    }
}

/* ---- factories -------------------------------------------------------- */

ac_props *ac__gather_props(const char *fn, const ac__router_kind *kind, ac__gather_shared *sh,
                           int size, const ac_actor_def *routee_def,
                           const ac_routee_options *routee_opts)
{
    ac__router_cfg *cfg = ac__calloc(1, sizeof *cfg);
    if (!cfg) {
        ac__gather_shared_release(sh);
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    }
    cfg->kind = kind;
    cfg->n = size;
    cfg->routee_def = routee_def;
    cfg->routee_user = routee_opts ? routee_opts->user_data : NULL;
    cfg->extra = sh;
    cfg->extra_free = ac__gather_shared_release_void;
    cfg->skip_cancelled = sh->cancel_losers;
    if (ac__router_copy_breaker(cfg, routee_opts, fn) != AC_OK) {
        ac__gather_shared_release(sh);
        free(cfg);
        return NULL;
    }
    return ac__router_props(cfg, routee_opts, fn); /* frees cfg and sh on failure */
}

ac_status ac__gather_check_timeout(const char *fn, int64_t timeout_ms, const char *what)
{
    if (timeout_ms >= 0 && timeout_ms <= INT32_MAX)
        return AC_OK;
    return ac__fail(AC_EINVAL, "%s: %s = %lld is not usable; use 1..%d, or 0 for the default (%d)",
                    fn, what, (long long)timeout_ms, INT32_MAX,
                    AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
}
