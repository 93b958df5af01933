/*
 * Circuit breaker: the state machine, its events, and calls through it.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/last_error.h"
#include "core/clock.h"
#include "core/ref.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"
#include "patterns/breaker_internal.h"

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

/* ---- the breaker ------------------------------------------------------ */

typedef enum outcome {
    OUT_SUCCESS,
    OUT_FAILURE,
    OUT_TIMEOUT,
    OUT_IGNORED,
    OUT_REJECTED,
    OUT_COUNT
} outcome;

static const char *const outcome_names[OUT_COUNT] = {"success", "failure", "timeout", "ignored",
                                                     "rejected"};

typedef struct probe_timer probe_timer;

struct ac_breaker {
    ac_ref ref; /* the breaker's reference count; answers refused asks */
    /* Holds taken with ac_breaker_retain (the creator's, a router's, a
     * gather's), a subset of `ref`'s count. When the last goes, nobody can
     * call through the breaker again: its probe timer is cancelled rather
     * than left armed for up to a reset timeout, keeping it alive. */
    atomic_uint handles;
    _Atomic uint64_t word;
    atomic_int_least64_t open_until_ms; /* published by `word` (see the top) */
    atomic_int_least64_t opened_at_ms;
    /* configuration, fixed at creation */
    char *name;
    int max_failures;
    uint32_t call_timeout_ms, reset_timeout_ms, max_reset_timeout_ms;
    double backoff, random_factor;
    ac_breaker_failure_fn is_failure;
    void *is_failure_user;
    ac_breaker_transition_fn on_transition;
    void *on_transition_user;
    /* under lock */
    pthread_mutex_t lock;
    /* reset timeout of the next open period, before jitter; and the opens
     * so far. Written under the lock, read without it (ac_breaker_get_info
     * may be called from a transition callback, which holds the lock). */
    atomic_int_least64_t backoff_ms;
    uint64_t rng;
    atomic_uint_least64_t opened;
    ac__refset subscribers;
    probe_timer *probe; /* the armed probe timer, if any */
    bool abandoned;     /* no handle left: arm no more probe timers */
    /* the open error, made at most once per epoch and ms (under cache_lock) */
    atomic_flag cache_lock;
    ac_error *cached;
    uint64_t cached_epoch;
    int64_t cached_ms;
    /* metrics; NULL when off */
    ac_gauge *state_gauge;
    ac_counter *calls[OUT_COUNT];
    ac_counter *transitions[3];
};

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

const char *ac_breaker_state_name(ac_breaker_state s)
{
    switch (s) {
    case AC_BREAKER_CLOSED:
        return "closed";
    case AC_BREAKER_HALF_OPEN:
        return "half-open";
    case AC_BREAKER_OPEN:
        return "open";
    }
    return "unknown";
}

static int64_t now_ms(const ac_breaker *b) { return ac_clock_now_ms(b->ref.system); }

static void count(ac_breaker *b, outcome o) { ac_counter_inc(b->calls[o]); }

/* ---- transition messages ---------------------------------------------- */

static void transition_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(&((ac_breaker_transition *)payload)->breaker->ref); /* not a handle */
}

const ac_msg_type ac_msg_type_breaker_transition = {.name = "actorc.BreakerTransition",
                                                    .destroy = transition_destroy};

const ac_breaker_transition *ac_breaker_transition_of(const ac_msg *msg)
{
    ac__clear_status();
    if (!ac_msg_is(msg, &ac_msg_type_breaker_transition))
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL,
                             "ac_breaker_transition_of: message is %s, not a transition",
                             ac_msg_type_name(msg));
    return ac_msg_data(msg);
}

static void tell_subscribers(ac_breaker *b, const ac_breaker_transition *t)
{
    for (uint32_t i = 0; i < b->subscribers.count; i++) {
        ac_msg *m = ac_msg_new(&ac_msg_type_breaker_transition, sizeof *t);
        if (!m)
            continue;
        ac_breaker_transition *p = ac_msg_payload(m);
        *p = *t;
        ac_ref_retain(&b->ref);
        ac_tell(b->subscribers.items[i], m, NULL);
    }
}

/* Announce a change. Call with the lock held, after the word changed. */
static void announce(ac_breaker *b, ac_breaker_state from, ac_breaker_state to)
{
    ac_gauge_set(b->state_gauge, (double)to);
    ac_counter_inc(b->transitions[to]);
    ac_breaker_transition t = {.breaker = b, .from = from, .to = to, .at_ms = now_ms(b)};
    if (to == AC_BREAKER_OPEN)
        t.next_probe_ms = atomic_load_explicit(&b->open_until_ms, memory_order_relaxed);
    if (b->on_transition)
        b->on_transition(b, from, to, b->on_transition_user);
    tell_subscribers(b, &t);
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
static void cancel_probe_locked(ac_breaker *b)
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
    cancel_probe_locked(b); /* an earlier period's, its probe taken early */
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
    int64_t now = now_ms(b);
    int64_t period = open_period(b);
    atomic_store_explicit(&b->opened_at_ms, now, memory_order_relaxed);
    atomic_store_explicit(&b->open_until_ms, now + period, memory_order_relaxed);
    uint64_t next = word_next(w, AC_BREAKER_OPEN);
    /* publishes open_until_ms and opened_at_ms (see cas_word) */
    if (!cas_word(b, &w, next))
        return false;
    atomic_fetch_add_explicit(&b->opened, 1, memory_order_relaxed);
    arm_probe_timer(b, word_epoch(next), period);
    announce(b, word_state(w), AC_BREAKER_OPEN);
    return true;
}

/* Half-open from the open word `w`: on time (no probe yet) or by a caller
 * that becomes the probe. Call with the lock held. */
static bool half_open_locked(ac_breaker *b, uint64_t w, bool as_probe)
{
    uint64_t next = word_next(w, AC_BREAKER_HALF_OPEN) | (as_probe ? PROBE_BIT : 0);
    if (!cas_word(b, &w, next))
        return false;
    announce(b, AC_BREAKER_OPEN, AC_BREAKER_HALF_OPEN);
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
    announce(b, AC_BREAKER_HALF_OPEN, AC_BREAKER_CLOSED);
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
            if (now_ms(b) < atomic_load_explicit(&b->open_until_ms, memory_order_relaxed))
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

static outcome classify(ac_breaker *b, const ac_error *err)
{
    if (!err)
        return OUT_SUCCESS;
    if (ac_error_is(err, AC_ASK_TIMEOUT_ERROR) || ac_error_is(err, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR))
        return OUT_TIMEOUT;
    if (b->is_failure && !b->is_failure(err, b->is_failure_user))
        return OUT_IGNORED;
    return OUT_FAILURE;
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

static void record_outcome(ac_breaker *b, const ac_breaker_permit *p, outcome o)
{
    count(b, o);
    bool failed = o == OUT_FAILURE || o == OUT_TIMEOUT;
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
static ac_error *open_error(ac_breaker *b)
{
    uint64_t w = load_word(b);
    int64_t now = now_ms(b);
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

/* ---- the breaker as a ref: it answers refused asks -------------------- */

static void breaker_deliver(ac_ref *self, ac__node *node)
{
    ac_breaker *b = (ac_breaker *)self;
    ac_ref *sender;
    ac_msg *msg = ac__node_take_msg(node, &sender);
    ac_msg_release(msg); /* never reaches the target */
    if (sender) {
        ac_msg *m = ac_msg_error_new(open_error(b));
        if (m)
            ac_tell(sender, m, NULL);
        ac_ref_release(sender);
    }
}

static void breaker_destroy(ac_ref *self)
{
    ac_breaker *b = (ac_breaker *)self;
    ac__refset_clear(&b->subscribers);
    ac_error_release(b->cached);
    pthread_mutex_destroy(&b->lock);
    free(b->name);
    free(b);
}

static const char *breaker_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/breaker";
}

static const ac__ref_ops breaker_ops = {
    .kind = AC__REF_REPLY,
    .deliver = breaker_deliver,
    .destroy = breaker_destroy,
    .path = breaker_path,
};

/* ---- options ---------------------------------------------------------- */

static ac_status check_ms(const char *fn, const char *what, int64_t v, int64_t lo)
{
    if (v == 0 || (v >= lo && v <= INT32_MAX))
        return AC_OK;
    return ac__fail(AC_EINVAL, "%s: %s = %lld; use %lld..%d, or 0 for the default%s", fn, what,
                    (long long)v, (long long)lo, INT32_MAX,
                    lo > 1 ? " (the ceiling is at least reset_timeout_ms)" : "");
}

static ac_status check_factors(const char *fn, const ac_breaker_options *o)
{
    if (o->backoff != 0 && !(o->backoff >= 1.0 && o->backoff <= 1000.0))
        return ac__fail(AC_EINVAL, "%s: backoff = %g; use 1..1000, or 0 for the default (%g)",
                        fn, o->backoff, AC_BREAKER_DEFAULT_BACKOFF);
    if (!(o->random_factor >= 0.0 && o->random_factor <= 1.0))
        return ac__fail(AC_EINVAL, "%s: random_factor = %g; use 0..1", fn, o->random_factor);
    return AC_OK;
}

static ac_status check_name(const char *fn, const char *name, bool need_name)
{
    if (!need_name)
        return AC_OK;
    if (!name || !*name)
        return ac__fail(AC_EINVAL, "%s: name is %s; a breaker needs a name (1..255 bytes)", fn,
                        name ? "empty" : "NULL");
    if (strlen(name) > 255)
        return ac__fail(AC_EINVAL, "%s: name is %zu bytes long; at most 255", fn, strlen(name));
    return AC_OK;
}

ac_status ac_breaker_options_check(const char *fn, const ac_breaker_options *o, bool need_name)
{
    if (!fn)
        fn = "ac_breaker_options_check";
    if (!o)
        return ac__fail(AC_EINVAL, "%s: breaker options are NULL", fn);
    if (check_name(fn, o->name, need_name) != AC_OK)
        return AC_EINVAL;
    if (o->max_failures < 0 || o->max_failures > AC_BREAKER_MAX_FAILURES_LIMIT)
        return ac__fail(AC_EINVAL, "%s: max_failures = %d; use 1..%d, or 0 for the default (%d)",
                        fn, o->max_failures, AC_BREAKER_MAX_FAILURES_LIMIT,
                        AC_BREAKER_DEFAULT_MAX_FAILURES);
    if (check_ms(fn, "call_timeout_ms", o->call_timeout_ms, 1) != AC_OK ||
        check_ms(fn, "reset_timeout_ms", o->reset_timeout_ms, 1) != AC_OK)
        return AC_EINVAL;
    int64_t reset = o->reset_timeout_ms ? o->reset_timeout_ms : AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS;
    if (o->max_reset_timeout_ms != 0 &&
        check_ms(fn, "max_reset_timeout_ms", o->max_reset_timeout_ms, reset) != AC_OK)
        return AC_EINVAL;
    return check_factors(fn, o);
}

/* ---- creation --------------------------------------------------------- */

static void metrics_init(ac_breaker *b, ac_system *sys)
{
    if (!ac_metrics_enabled(sys))
        return;
    static const char *const by_breaker[] = {"breaker"};
    static const char *const by_outcome[] = {"breaker", "outcome"};
    static const char *const by_to[] = {"breaker", "to"};
    ac_metric_options so = {.help = "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
                            .label_names = by_breaker, .label_count = 1};
    ac_metric_options co = {.help = "Calls through a circuit breaker, by outcome.",
                            .label_names = by_outcome, .label_count = 2};
    ac_metric_options to = {.help = "Circuit breaker state changes, by the state entered.",
                            .label_names = by_to, .label_count = 2};
    ac_metric_family *state = ac_metrics_gauge(sys, "circuit_breaker_state", &so);
    ac_metric_family *calls = ac_metrics_counter(sys, "circuit_breaker_calls_total", &co);
    ac_metric_family *trans = ac_metrics_counter(sys, "circuit_breaker_transitions_total", &to);
    const char *one[] = {b->name};
    b->state_gauge = ac_gauge_series(state, one);
    ac_gauge_set(b->state_gauge, AC_BREAKER_CLOSED);
    for (int i = 0; i < OUT_COUNT; i++) {
        const char *v[] = {b->name, outcome_names[i]};
        b->calls[i] = ac_counter_series(calls, v);
    }
    for (int s = 0; s < 3; s++) {
        const char *v[] = {b->name, ac_breaker_state_name((ac_breaker_state)s)};
        b->transitions[s] = ac_counter_series(trans, v);
    }
    ac_clear_error(); /* a family at its cap is no failure of ours */
}

static void configure(ac_breaker *b, const ac_breaker_options *o)
{
    b->max_failures = o->max_failures ? o->max_failures : AC_BREAKER_DEFAULT_MAX_FAILURES;
    b->call_timeout_ms = (uint32_t)o->call_timeout_ms;
    b->reset_timeout_ms =
        (uint32_t)(o->reset_timeout_ms ? o->reset_timeout_ms : AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS);
    b->max_reset_timeout_ms =
        (uint32_t)(o->max_reset_timeout_ms ? o->max_reset_timeout_ms : b->reset_timeout_ms);
    b->backoff = o->backoff ? o->backoff : AC_BREAKER_DEFAULT_BACKOFF;
    b->random_factor = o->random_factor;
    b->is_failure = o->is_failure;
    b->is_failure_user = o->is_failure_user;
    b->on_transition = o->on_transition;
    b->on_transition_user = o->on_transition_user;
    atomic_init(&b->backoff_ms, b->reset_timeout_ms);
    atomic_init(&b->opened, 0);
    b->rng = o->seed ? o->seed : ((uint64_t)(uintptr_t)b ^ ac__now_ns() ^ 0x9e3779b97f4a7c15ull);
    if (!b->rng)
        b->rng = 1;
}

ac_breaker *ac__breaker_create_named(ac_system *sys, const ac_breaker_options *o,
                                     const char *name)
{
    ac_breaker *b = ac__calloc(1, sizeof *b);
    char *copy = ac__strdup(name);
    if (!b || !copy) {
        free(b);
        free(copy);
        return ac__fail_null(AC_ENOMEM, "ac_breaker_create: out of memory");
    }
    if (ac__mutex_init_hot(&b->lock, "a circuit breaker's lock") != AC_OK) {
        free(b);
        free(copy);
        return NULL;
    }
    ac__ref_init(&b->ref, &breaker_ops, sys);
    atomic_init(&b->handles, 1);
    atomic_init(&b->word, (uint64_t)AC_BREAKER_CLOSED);
    atomic_init(&b->open_until_ms, 0);
    atomic_init(&b->opened_at_ms, 0);
    atomic_flag_clear(&b->cache_lock);
    b->name = copy;
    configure(b, o);
    metrics_init(b, sys);
    return b;
}

ac_breaker *ac_breaker_create(ac_system *sys, const ac_breaker_options *o)
{
    ac__clear_status();
    static const char fn[] = "ac_breaker_create";
    if (!sys)
        return ac__fail_null(AC_EINVAL, "%s: system is NULL", fn);
    if (ac_breaker_options_check(fn, o, true) != AC_OK)
        return NULL;
    if (atomic_load_explicit(&sys->terminating, memory_order_relaxed))
        return ac__fail_null(AC_ETERMINATED, "%s: system \"%s\" is terminating", fn, sys->name);
    return ac__breaker_create_named(sys, o, o->name);
}

ac_breaker *ac_breaker_retain(ac_breaker *b)
{
    if (b) {
        atomic_fetch_add_explicit(&b->handles, 1, memory_order_relaxed);
        ac_ref_retain(&b->ref);
    }
    return b;
}

void ac_breaker_release(ac_breaker *b)
{
    if (!b)
        return;
    /* acq_rel: the last handle's holder sees every other's calls done. */
    if (atomic_fetch_sub_explicit(&b->handles, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&b->lock);
        b->abandoned = true;
        cancel_probe_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
    ac_ref_release(&b->ref);
}

const char *ac_breaker_name(const ac_breaker *b) { return b ? b->name : ""; }

ac_ref *ac__breaker_ref(ac_breaker *b) { return &b->ref; }

uint32_t ac__breaker_call_timeout_ms(const ac_breaker *b) { return b->call_timeout_ms; }

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
    count(b, OUT_REJECTED);
    if (open_err)
        *open_err = open_error(b);
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
        now_ms(b) >= atomic_load_explicit(&b->open_until_ms, memory_order_relaxed))
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

ac_status ac_breaker_subscribe(ac_breaker *b, ac_ref *subscriber)
{
    if (!b || !subscriber)
        return ac__fail(AC_EINVAL, "ac_breaker_subscribe: %s is NULL",
                        b ? "subscriber" : "breaker");
    pthread_mutex_lock(&b->lock);
    int rc = ac__refset_add(&b->subscribers, subscriber);
    pthread_mutex_unlock(&b->lock);
    if (rc < 0)
        return ac__fail(AC_ENOMEM, "ac_breaker_subscribe: out of memory");
    return AC_OK;
}

ac_status ac_breaker_unsubscribe(ac_breaker *b, ac_ref *subscriber)
{
    if (!b || !subscriber)
        return ac__fail(AC_EINVAL, "ac_breaker_unsubscribe: %s is NULL",
                        b ? "subscriber" : "breaker");
    pthread_mutex_lock(&b->lock);
    bool removed = ac__refset_remove(&b->subscribers, subscriber);
    pthread_mutex_unlock(&b->lock);
    if (!removed)
        return ac__fail(AC_ENOTFOUND, "ac_breaker_unsubscribe: %s is not subscribed to \"%s\"",
                        ac_ref_path(subscriber), b->name);
    return AC_OK;
}
