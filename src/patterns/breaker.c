/*
 * Circuit breaker: the state machine. Its changes are told by
 * breaker_events.c, a breaker is made and freed by breaker_create.c, and
 * calls go through it in breaker_call.c.
 *
 * State lives in one atomic word: the state (closed, half-open, open), a
 * probe-in-flight bit, the consecutive failures counted while closed, and
 * an epoch that every state change increments. A permit remembers the
 * epoch it was granted in and whether it is the probe, so that an outcome
 * arriving after the breaker has moved on (a slow call admitted before it
 * opened) changes nothing. Admitting a call while closed is one load;
 * counting a success when no failure is pending is one load too.
 *
 * State changes (closed -> open, open -> half-open, half-open -> closed or
 * open) are made under `lock` and announced under it, so callbacks and
 * subscribers see them in the order they happened; counting failures and
 * taking the probe slot are lock-free CASes on the word. Fields written
 * under the lock before a change (open_until_ms, opened_at_ms) are
 * published by the release CAS of the word, which the acquire loads of
 * admission pair with.
 *
 * Open -> half-open happens on a timer armed when the breaker opens (one
 * small allocation per open period, keyed by epoch, so a stale timer does
 * nothing), or earlier, by the first caller that finds the reset timeout
 * passed: that caller becomes the probe.
 *
 * A call through the breaker is a `call`: two embedded refs and a timer.
 * `entry` is what ac_ask/ac_ask_in send the request to (so the future and
 * the continuation are the ask layer's own), and it passes the request on
 * to the target with `reply` as the sender. Whatever reaches `reply`
 * first (a reply, an error reply, the news that the target had stopped,
 * the timer) claims it by CAS, is recorded, and then goes on to the
 * caller, so a caller who has the answer sees it counted. The breaker
 * itself is a ref too: a refused ask is asked of it, and it answers at
 * once with its open error, without touching the target.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/ref.h"
#include "core/timers.h"
#include "patterns/breaker_state.h"

/* ---- the state word --------------------------------------------------- */

#define STATE_MASK 0x3ull
#define PROBE_BIT 0x4ull
#define FAIL_SHIFT 3
#define FAIL_MASK (((1ull << 21) - 1) << FAIL_SHIFT)
#define EPOCH_SHIFT 24

_Static_assert(AC_BREAKER_MAX_FAILURES_LIMIT < (1 << 21), "failures fit their bits");

static ac_breaker_state word_state(uint64_t w) { return (ac_breaker_state)(w & STATE_MASK); }
static uint64_t word_epoch(uint64_t w) { return w >> EPOCH_SHIFT; }
static int word_failures(uint64_t w) { return (int)((w & FAIL_MASK) >> FAIL_SHIFT); }

/* The word of a fresh state: next epoch, no failures, no probe. */
static uint64_t word_next(uint64_t w, ac_breaker_state s)
{
    return ((word_epoch(w) + 1) << EPOCH_SHIFT) | (uint64_t)s;
}

static uint64_t permit_word(uint64_t epoch, bool probe) { return epoch << 1 | (probe ? 1 : 0); }
static uint64_t permit_epoch(const ac_breaker_permit *p) { return p->word >> 1; }
static bool permit_probe(const ac_breaker_permit *p) { return p->word & 1; }


/* acquire: pairs with cas_word, so that what was written before a change
 * (open_until_ms, opened_at_ms) is seen with it. */
static uint64_t load_word(ac_breaker *b)
{
    return atomic_load_explicit(&b->word, memory_order_acquire);
}

/* acq_rel: publishes what this thread wrote before the change (pairs with
 * load_word) and sees what earlier changes published; a failed CAS
 * reloads *w with acquire, as load_word does. */
static bool cas_word(ac_breaker *b, uint64_t *w, uint64_t next)
{
    return atomic_compare_exchange_strong_explicit(&b->word, w, next, memory_order_acq_rel,
                                                   memory_order_acquire);
}

/* ---- opening ---------------------------------------------------------- */

struct probe_timer {
    ac__timer timer;
    ac_breaker *b; /* an internal hold on b->ref */
    uint64_t epoch; /* of the open period it ends */
};

static void half_open_on_time(ac__timer *t);
static void probe_timer_discard(ac__timer *t);
static const ac__timer_ops probe_timer_ops = {.fire = half_open_on_time,
                                              .discard = probe_timer_discard};

static uint64_t next_random(ac_breaker *b)
{
    b->rng ^= b->rng >> 12; /* xorshift64* */
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 2685821657736338717ull;
}

/* The length of the next open period: the backed-off timeout, jittered.
 * Call with the lock held. */
static int64_t open_period(ac_breaker *b)
{
    double u = (double)(next_random(b) >> 11) / (double)(1ull << 53); /* [0, 1) */
    double base = (double)atomic_load_explicit(&b->backoff_ms, memory_order_relaxed);
    double ms = base * (1.0 + b->random_factor * u);
    return ms > (double)INT32_MAX ? INT32_MAX : (int64_t)ms;
}

/* Cancel the armed probe timer, if any: one is armed at a time. False
 * when it is firing now (it then clears itself). Call with the lock held. */
void ac__breaker_cancel_probe_locked(ac_breaker *b)
{
    probe_timer *pt = b->probe;
    if (!pt)
        return;
    b->probe = NULL;
    if (ac__timer_cancel(b->ref.system->timers, &pt->timer)) {
        free(pt);
        ac_ref_release(&b->ref); /* the timer's hold; never the last (the caller has one) */
    }
}

static void arm_probe_timer(ac_breaker *b, uint64_t epoch, int64_t delay_ms)
{
    ac__breaker_cancel_probe_locked(b); /* an earlier period's, its probe taken early */
    if (b->abandoned)
        return; /* nobody can call through it: nothing to move on for */
    probe_timer *pt = ac__calloc(1, sizeof *pt);
    if (!pt)
        return; /* the first caller after the deadline moves it on instead */
    pt->timer.ops = &probe_timer_ops;
    pt->b = b;
    ac_ref_retain(&b->ref);
    pt->epoch = epoch;
    b->probe = pt;
    ac__timer_arm(b->ref.system->timers, &pt->timer, (uint64_t)delay_ms);
}

/* Open from `w` (closed, or half-open after a failed probe). False when
 * the word moved meanwhile. Call with the lock held. */
static bool open_locked(ac_breaker *b, uint64_t w)
{
    int64_t now = ac__breaker_now_ms(b);
    int64_t period = open_period(b);
    atomic_store_explicit(&b->opened_at_ms, now, memory_order_relaxed);
    atomic_store_explicit(&b->open_until_ms, now + period, memory_order_relaxed);
    uint64_t next = word_next(w, AC_BREAKER_OPEN);
    /* publishes open_until_ms and opened_at_ms (see cas_word) */
    if (!cas_word(b, &w, next))
        return false;
    atomic_fetch_add_explicit(&b->opened, 1, memory_order_relaxed);
    arm_probe_timer(b, word_epoch(next), period);
    ac__breaker_announce(b, word_state(w), AC_BREAKER_OPEN);
    return true;
}

/* Half-open from the open word `w`: on time (no probe yet) or by a caller
 * that becomes the probe. Call with the lock held. */
static bool half_open_locked(ac_breaker *b, uint64_t w, bool as_probe)
{
    uint64_t next = word_next(w, AC_BREAKER_HALF_OPEN) | (as_probe ? PROBE_BIT : 0);
    if (!cas_word(b, &w, next))
        return false;
    ac__breaker_announce(b, AC_BREAKER_OPEN, AC_BREAKER_HALF_OPEN);
    return true;
}

static void half_open_on_time(ac__timer *t)
{
    probe_timer *pt = (probe_timer *)t;
    ac_breaker *b = pt->b;
    pthread_mutex_lock(&b->lock);
    uint64_t w = load_word(b);
    if (b->probe == pt)
        b->probe = NULL;
    if (word_state(w) == AC_BREAKER_OPEN && word_epoch(w) == pt->epoch)
        half_open_locked(b, w, false);
    pthread_mutex_unlock(&b->lock);
    free(pt);
    ac_ref_release(&b->ref);
}

/* The system is going away with the timer armed (its breaker still held). */
static void probe_timer_discard(ac__timer *t)
{
    probe_timer *pt = (probe_timer *)t;
    ac_breaker *b = pt->b;
    pthread_mutex_lock(&b->lock);
    if (b->probe == pt)
        b->probe = NULL;
    pthread_mutex_unlock(&b->lock);
    free(pt);
    ac_ref_release(&b->ref);
}

static void close_locked(ac_breaker *b, uint64_t w)
{
    uint64_t next = word_next(w, AC_BREAKER_CLOSED);
    if (!cas_word(b, &w, next))
        return;
    atomic_store_explicit(&b->backoff_ms, b->reset_timeout_ms, memory_order_relaxed);
    ac__breaker_announce(b, AC_BREAKER_HALF_OPEN, AC_BREAKER_CLOSED);
}

/* ---- admission -------------------------------------------------------- */

/* The caller that finds an open breaker past its deadline takes the probe. */
static bool take_probe_after_deadline(ac_breaker *b, uint64_t w)
{
    pthread_mutex_lock(&b->lock);
    bool won = half_open_locked(b, w, true);
    pthread_mutex_unlock(&b->lock);
    return won;
}

static bool admit(ac_breaker *b, ac_breaker_permit *p)
{
    uint64_t w = load_word(b);
    for (;;) {
        switch (word_state(w)) {
        case AC_BREAKER_CLOSED:
            p->word = permit_word(word_epoch(w), false);
            return true;
        case AC_BREAKER_HALF_OPEN:
            if (w & PROBE_BIT)
                return false;
            if (cas_word(b, &w, w | PROBE_BIT)) {
                p->word = permit_word(word_epoch(w), true);
                return true;
            }
            break;
        case AC_BREAKER_OPEN:
            if (ac__breaker_now_ms(b) <
                atomic_load_explicit(&b->open_until_ms, memory_order_relaxed))
                return false;
            if (take_probe_after_deadline(b, w)) {
                p->word = permit_word(word_epoch(w) + 1, true);
                return true;
            }
            w = load_word(b);
            break;
        }
    }
}

/* ---- outcomes --------------------------------------------------------- */

static ac__breaker_outcome classify(ac_breaker *b, const ac_error *err)
{
    if (!err)
        return AC__BREAKER_SUCCEEDED;
    if (ac_error_is(err, AC_ASK_TIMEOUT_ERROR) || ac_error_is(err, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR))
        return AC__BREAKER_TIMED_OUT;
    if (b->is_failure && !b->is_failure(err, b->is_failure_user))
        return AC__BREAKER_IGNORED;
    return AC__BREAKER_FAILED;
}

/* A failed probe: the next open period is `backoff` times longer, up to
 * the ceiling. Call with the lock held. */
static void back_off_locked(ac_breaker *b)
{
    double next = (double)atomic_load_explicit(&b->backoff_ms, memory_order_relaxed) * b->backoff;
    int64_t ms = next > b->max_reset_timeout_ms ? b->max_reset_timeout_ms : (int64_t)next;
    atomic_store_explicit(&b->backoff_ms, ms, memory_order_relaxed);
}

static void record_probe(ac_breaker *b, uint64_t epoch, bool failed)
{
    pthread_mutex_lock(&b->lock);
    uint64_t w = load_word(b);
    if (word_state(w) == AC_BREAKER_HALF_OPEN && (w & PROBE_BIT) && word_epoch(w) == epoch) {
        if (failed) {
            back_off_locked(b);
            open_locked(b, w);
        } else {
            close_locked(b, w);
        }
    }
    pthread_mutex_unlock(&b->lock);
}

/* A failure that reaches max_failures opens the breaker, under the lock. */
static void count_failure_locked(ac_breaker *b, uint64_t epoch)
{
    pthread_mutex_lock(&b->lock);
    uint64_t w = load_word(b);
    while (word_state(w) == AC_BREAKER_CLOSED && word_epoch(w) == epoch) {
        if (word_failures(w) + 1 >= b->max_failures) {
            if (open_locked(b, w))
                break;
            w = load_word(b);
        } else if (cas_word(b, &w, w + (1ull << FAIL_SHIFT))) {
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);
}

/* While closed: a failure counts, a success resets the count. Outcomes of
 * an earlier epoch are stale and change nothing. */
static void record_closed(ac_breaker *b, uint64_t epoch, bool failed)
{
    uint64_t w = load_word(b);
    while (word_state(w) == AC_BREAKER_CLOSED && word_epoch(w) == epoch) {
        if (failed) {
            if (word_failures(w) + 1 >= b->max_failures) {
                count_failure_locked(b, epoch);
                return;
            }
            if (cas_word(b, &w, w + (1ull << FAIL_SHIFT)))
                return;
        } else {
            if (word_failures(w) == 0)
                return;
            if (cas_word(b, &w, w & ~FAIL_MASK))
                return;
        }
    }
}

static void record_outcome(ac_breaker *b, const ac_breaker_permit *p, ac__breaker_outcome o)
{
    ac__breaker_count(b, o);
    bool failed = o == AC__BREAKER_FAILED || o == AC__BREAKER_TIMED_OUT;
    if (permit_probe(p))
        record_probe(b, permit_epoch(p), failed);
    else
        record_closed(b, permit_epoch(p), failed);
}

/* ---- the open error --------------------------------------------------- */

static ac_error *make_open_error(ac_breaker *b, uint64_t w, int64_t now)
{
    if (word_state(w) == AC_BREAKER_OPEN) {
        int64_t until = atomic_load_explicit(&b->open_until_ms, memory_order_relaxed);
        return ac_error_new(AC_CIRCUIT_BREAKER_OPEN_ERROR,
                            "Circuit breaker \"%s\" is open: the next probe is allowed in "
                            "%lld ms (at %lld ms on the system clock)",
                            b->name, (long long)(until > now ? until - now : 0),
                            (long long)until);
    }
    if (word_state(w) == AC_BREAKER_HALF_OPEN)
        return ac_error_new(AC_CIRCUIT_BREAKER_OPEN_ERROR,
                            "Circuit breaker \"%s\" is half-open with its probe in flight: the "
                            "next call is allowed when the probe completes",
                            b->name);
    return ac_error_new(AC_CIRCUIT_BREAKER_OPEN_ERROR, "Circuit breaker \"%s\" was open",
                        b->name);
}

/* acquire: pairs with cache_unlock's release, so the holder sees the
 * cache as the last holder left it. */
static void cache_lock(ac_breaker *b)
{
    while (atomic_flag_test_and_set_explicit(&b->cache_lock, memory_order_acquire))
        ;
}

static void cache_unlock(ac_breaker *b)
{
    atomic_flag_clear_explicit(&b->cache_lock, memory_order_release);
}

/* The open error for now: one error per epoch and ms, shared by every
 * refused call in between, so refusing costs no allocation. */
ac_error *ac__breaker_open_error(ac_breaker *b)
{
    uint64_t w = load_word(b);
    int64_t now = ac__breaker_now_ms(b);
    cache_lock(b);
    ac_error *e = b->cached && b->cached_epoch == word_epoch(w) && b->cached_ms == now
                      ? ac_error_retain(b->cached)
                      : NULL;
    cache_unlock(b);
    if (e)
        return e;
    e = make_open_error(b, w, now);
    if (!e)
        return NULL;
    cache_lock(b);
    ac_error *old = b->cached;
    b->cached = ac_error_retain(e);
    b->cached_epoch = word_epoch(w);
    b->cached_ms = now;
    cache_unlock(b);
    ac_error_release(old);
    return e;
}

/* ---- permits ---------------------------------------------------------- */

bool ac_breaker_acquire(ac_breaker *b, ac_breaker_permit *permit, ac_error **open_err)
{
    if (open_err)
        *open_err = NULL;
    if (!b || !permit) {
        ac__fail(AC_EINVAL, "ac_breaker_acquire: %s is NULL", b ? "permit" : "breaker");
        return false;
    }
    if (admit(b, permit))
        return true;
    ac__breaker_count(b, AC__BREAKER_REJECTED);
    atomic_fetch_add_explicit(&b->refused, 1, memory_order_relaxed);
    if (open_err)
        *open_err = ac__breaker_open_error(b);
    return false;
}

void ac_breaker_record(ac_breaker *b, const ac_breaker_permit *permit, const ac_error *err)
{
    if (b && permit)
        record_outcome(b, permit, classify(b, err));
}

void ac_breaker_cancel(ac_breaker *b, const ac_breaker_permit *p)
{
    if (!b || !p || !permit_probe(p))
        return;
    /* Free the probe slot of the same half-open period, if still held. */
    uint64_t w = load_word(b);
    while (word_state(w) == AC_BREAKER_HALF_OPEN && (w & PROBE_BIT) &&
           word_epoch(w) == permit_epoch(p)) {
        if (cas_word(b, &w, w & ~PROBE_BIT))
            return;
    }
}

/* ---- state ------------------------------------------------------------ */

ac_breaker_state ac_breaker_state_of(ac_breaker *b)
{
    if (!b)
        return AC_BREAKER_CLOSED;
    uint64_t w = load_word(b);
    if (word_state(w) == AC_BREAKER_OPEN &&
        ac__breaker_now_ms(b) >= atomic_load_explicit(&b->open_until_ms, memory_order_relaxed))
        return AC_BREAKER_HALF_OPEN;
    return word_state(w);
}

ac_status ac_breaker_get_info(ac_breaker *b, ac_breaker_info *info)
{
    if (info)
        memset(info, 0, sizeof *info);
    if (!b || !info)
        return ac__fail(AC_EINVAL, "ac_breaker_get_info: %s is NULL", b ? "info" : "breaker");
    uint64_t w = load_word(b);
    info->state = ac_breaker_state_of(b);
    info->failures = word_failures(w);
    if (word_state(w) == AC_BREAKER_OPEN) {
        info->opened_at_ms = atomic_load_explicit(&b->opened_at_ms, memory_order_relaxed);
        info->next_probe_ms = atomic_load_explicit(&b->open_until_ms, memory_order_relaxed);
    }
    info->reset_timeout_ms = atomic_load_explicit(&b->backoff_ms, memory_order_relaxed);
    info->opened = atomic_load_explicit(&b->opened, memory_order_relaxed);
    return AC_OK;
}
