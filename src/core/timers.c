/*
 * The timer service of a system: the clock, the wheel, the timer thread;
 * the workers that watch a deadline (timer_watch.c) and the scheduled
 * messages (schedule.c, ac_schedule_once/repeat) are built on them.
 *
 * One mutex guards the wheel. Timers are collected under it and fired
 * after it is released, so a firing timer may arm or cancel timers. The
 * thread sleeps on a condition variable until the earliest deadline, at
 * most IDLE_NAP_MS (4 wake-ups a second when idle); arming an earlier
 * deadline than the one it sleeps for wakes it.
 *
 * A tick is 1 us (AC__TICK_NS): a timer fires within a tick of its deadline
 * plus the firing thread's wake-up latency, which the thread keeps
 * small by asking the kernel for no timer slack (it would otherwise add
 * 50 us to every sleep). Waking costs nothing while nothing is due: the
 * thread sleeps until the next deadline, not tick by tick nor from one
 * cascade of the wheel to the next (the advance that fires a deadline
 * cascades on its way). Deadlines round up to a tick on the real clock
 * (never early); the manual clock moves in whole ms, which are whole
 * ticks, so it stays exact.
 * With a manual clock there is no thread: ac_clock_advance moves time and
 * fires on the caller's thread.
 *
 * The kernel wakes a sleeping thread tens of microseconds after the time
 * it asked for (hundreds, now and then, on a virtual machine), and a timer
 * the timer thread fires then wakes a worker, which costs as much again.
 * So the timer thread is not the only one to fire: a worker that parks
 * while a timer is armed sleeps until a little before its deadline (the
 * watch margin, learnt from how late its own wake-ups come), spins the
 * rest of the way and fires on its own thread (ac__timers_serve), so the
 * message it delivers goes to its own queue and runs without a wake-up.
 * That worker claims the watch (watch_at: one watcher at a time), and
 * the timer thread leaves a watched deadline to it, sleeping until
 * BACKUP_NS past it rather than competing for fire_lock; it fires at
 * once what no worker is up for. due_ns, the earliest deadline, is what
 * parking workers read; it is never later than the true one (a cancel
 * leaves it early, which costs at most a wake-up that finds nothing to
 * do). Collecting and firing take fire_lock,
 * so that whichever thread fires, timers fire one batch at a time, in
 * deadline order; a worker only tries it (whoever holds it goes on until
 * nothing is due), so that its actors never wait behind another thread's
 * batch. An idle system (nothing armed) wakes no worker at all.
 *
 * Cancel and fire race benignly: cancel removes the timer under the lock
 * and returns true only if it was still in the wheel, in which case fire
 * will not run; otherwise fire has run or is about to. A timer collected
 * into a due list is DUE (timer_wheel.h): cancel leaves it alone, because
 * that list is walked without the lock, and the owner's own settle (a
 * CAS on its state) decides between the two outcomes.
 *
 * Lazy arming. An ask's deadline is far (seconds) and its answer near
 * (microseconds): taking the lock twice per ask, to put a timer in the
 * wheel and take it out again, was a fair share of a local ask. So a
 * timer whose owner can say whether it still wants it (ops->given_up),
 * due at least LAZY_MIN_MS away on the real clock, is armed without the
 * lock: its deadline is computed at once from the precise clock, as any
 * (never early), and the timer is pushed on a lock-free stack, one of
 * AC__LAZY_STRIPES (a thread keeps to one). The stacks are merged into
 * the wheel in batches: by a thread after every LAZY_BATCH of its own
 * pushes, by the timer thread whenever it wakes (at least every
 * IDLE_NAP_MS, well before any lazy deadline), and before the armed
 * count is read. A merge drops, unfired (ops->discard), every timer
 * whose owner has given it up, which for an ask is almost every one:
 * most asks never touch the lock or the wheel. Cancelling a lazy timer
 * (ac__timer_cancel_lazy) that still waits in a stack is nothing at all:
 * it reports false, as a cancel that lost to the firing does, and the
 * merge drops it. A merge marks a timer it places in the wheel (queued
 * = 0) and then asks given_up once more; a cancel, after its owner has
 * given the timer up, reads queued: both sequentially consistent (the
 * cancel through a fence), so that at least one sees the other, and a
 * timer given up while being placed is taken out by one of the two
 * under the lock, not left in the wheel to its deadline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/alloc.h"
#include "core/clock.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers_internal.h"
#include "core/turn.h"

#define IDLE_NAP_MS 250
/* How long past a deadline the timer thread leaves it to the worker that
 * watches it before it fires it itself: that worker is up a margin
 * before the deadline and fires within a few us, unless it was called
 * away to other work or lost its core meanwhile. */
#define BACKUP_NS 100000ull
#define BACKUP_TICKS (BACKUP_NS / AC__TICK_NS)
/* Lazy arming (see above): the shortest delay armed lazily, at least
 * IDLE_NAP_MS plus room for a late wake-up of the timer thread; and how
 * many pushes of one thread a merge of its stripe follows. */
#define LAZY_MIN_MS 1000
#define LAZY_BATCH 32
_Static_assert(LAZY_MIN_MS >= 2 * IDLE_NAP_MS, "a lazy timer is merged well before its deadline");

static void merge_lazy(ac__timers *t);
static bool lazy_waiting(ac__timers *t);

/* The clock in ms (ac_clock_now_ms). */
static uint64_t clock_now(ac__timers *t)
{
    if (t->manual) /* acquire pairs with ac_clock_advance's release store */
        return atomic_load_explicit(&t->manual_now, memory_order_acquire);
    return (ac__now_ns() - t->start_ns) / 1000000ull;
}

/* A delay in ticks, rounded up, saturating far beyond the clock's end. */
static uint64_t ticks_of_ns(uint64_t ns)
{
    return ns / AC__TICK_NS + (ns % AC__TICK_NS != 0);
}

static void wait_until_tick(ac__timers *t, uint64_t target)
{
    ac__cond_wait_until_ns(&t->cond, &t->lock, t->start_ns + target * AC__TICK_NS);
}

/* Is a worker to be up for the deadline `tick`, by its claim? A claim may
 * be stale (its worker called away): the timer thread then fires that
 * deadline BACKUP_NS late. */
static bool watched(ac__timers *t, uint64_t tick)
{
    /* seq_cst: see timer_main's announcement of its sleep. */
    uint64_t at = atomic_load_explicit(&t->watch_at, memory_order_seq_cst);
    return at != UINT64_MAX && at <= t->start_ns + tick * AC__TICK_NS;
}

static uint64_t backup_of(uint64_t tick)
{
    return tick > UINT64_MAX - BACKUP_TICKS ? UINT64_MAX : tick + BACKUP_TICKS;
}

/* The timer thread sleeps until the earliest deadline (exact, or a full
 * slot's start, below it; never a mere cascade: advancing the wheel
 * cascades on the way), at most IDLE_NAP_MS; until BACKUP_NS past it when
 * a worker watches it. Waking at a deadline a watcher spins for (as it
 * did at cascade points), it would take fire_lock just when the watcher
 * tries it, and the timer would go out through the injection list and a
 * wake-up instead of the watcher's own queue. Due, with a worker watching
 * or serving it, it leaves it to that worker until the backup time. */
static void *timer_main(void *arg)
{
    ac__timers *t = arg;
    ac__thread_name("ac-timers");
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* best effort */
#endif
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        /* Once a wake, not until the stacks are empty: threads asking
         * fast keep them filled, and merge their own. */
        if (lazy_waiting(t)) {
            pthread_mutex_unlock(&t->lock);
            merge_lazy(t);
            pthread_mutex_lock(&t->lock);
            if (t->stop)
                break;
        }
        uint64_t now = ac__timers_now_ticks(t);
        uint64_t next = ac__wheel_next_deadline(&t->wheel, AC__DUE_SCAN_MAX);
        uint64_t until;
        if (next <= now) {
            bool taken = atomic_load_explicit(&t->serving, memory_order_relaxed) > 0 ||
                         watched(t, next);
            if (!taken || now >= backup_of(next)) {
                pthread_mutex_unlock(&t->lock);
                ac__timers_fire_due(t, true);
                pthread_mutex_lock(&t->lock);
                continue;
            }
            until = backup_of(next); /* due, and a worker is on it */
        } else {
            /* Never sleep longer than IDLE_NAP_MS: then arming a timer due
             * later than that (every default ask) needs no wake-up call,
             * which would cost the arming thread a futex syscall per ask. */
            uint64_t nap = now + IDLE_NAP_MS * AC__TICKS_PER_MS;
            until = next < nap ? next : nap;
            if (until == next) {
                /* Announce the sleep to the deadline, then look for a
                 * claim; seq_cst, both, against a claim's CAS and its look
                 * at sleep_until (tell_timer_thread): either we see the
                 * claim, or the claimer sees this sleep and signals. */
                atomic_store_explicit(&t->sleep_until, next, memory_order_seq_cst);
                if (watched(t, next))
                    until = backup_of(next) < nap ? backup_of(next) : nap;
            }
        }
        atomic_store_explicit(&t->sleep_until, until, memory_order_relaxed);
        wait_until_tick(t, until);
        atomic_store_explicit(&t->sleep_until, UINT64_MAX, memory_order_relaxed);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

ac__timers *ac__timers_create(ac_system *sys, bool manual)
{
    /* Aligned: the lazy stripes are a cache line each. */
    ac__timers *t = ac__aligned_alloc(_Alignof(ac__timers), sizeof *t);
    if (!t)
        return ac__fail_null(AC_ENOMEM, "ac_system_create: out of memory for the timers");
    memset(t, 0, sizeof *t);
    for (int i = 0; i < AC__LAZY_STRIPES; i++)
        atomic_init(&t->lazy[i].top, NULL);
    t->system = sys;
    t->manual = manual;
    t->start_ns = ac__now_ns();
    atomic_init(&t->sleep_until, UINT64_MAX);
    atomic_init(&t->due_ns, UINT64_MAX);
    atomic_init(&t->margin_ns, AC__WATCH_MARGIN_START_NS);
    atomic_init(&t->watch_at, UINT64_MAX);
    atomic_init(&t->serving, 0);
    if (ac__mutex_init_hot(&t->lock, "the timers' lock") != AC_OK)
        goto fail_lock;
    if (ac__mutex_init(&t->fire_lock, "the timers' firing lock") != AC_OK)
        goto fail_fire_lock;
    if (ac__cond_init(&t->cond, true, "the timers' condition") != AC_OK)
        goto fail_cond;
    ac__wheel_init(&t->wheel, 0);
    if (!manual) {
        int rc = pthread_create(&t->thread, NULL, timer_main, t);
        if (rc != 0) {
            ac__fail(AC_ESYS, "could not start the timer thread: %s", strerror(rc));
            goto fail_thread;
        }
        t->thread_started = true;
    }
    return t;
fail_thread:
    pthread_cond_destroy(&t->cond);
fail_cond:
    pthread_mutex_destroy(&t->fire_lock);
fail_fire_lock:
    pthread_mutex_destroy(&t->lock);
fail_lock:
    free(t);
    return NULL;
}

void ac__timers_stop(ac__timers *t)
{
    if (!t || !t->thread_started)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    atomic_store_explicit(&t->due_ns, UINT64_MAX, memory_order_relaxed); /* no more watching */
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    t->thread_started = false;
    /* A worker may be firing what it collected before `stop`: wait for it. */
    pthread_mutex_lock(&t->fire_lock);
    pthread_mutex_unlock(&t->fire_lock);
}

void ac__timers_destroy(ac__timers *t)
{
    if (!t)
        return;
    ac__timers_stop(t);
    ac__timer left;
    ac__timer_list_init(&left);
    /* Lazy timers still waiting: discarded with the rest (acquire pairs
     * with the pushers' release). */
    for (int i = 0; i < AC__LAZY_STRIPES; i++) {
        ac__timer *x = atomic_exchange_explicit(&t->lazy[i].top, NULL, memory_order_acquire);
        while (x) {
            ac__timer *next = x->next;
            atomic_store_explicit(&x->queued, 0, memory_order_relaxed);
            ac__timer_list_append(&left, x);
            x = next;
        }
    }
    pthread_mutex_lock(&t->lock);
    ac__wheel_take_all(&t->wheel, &left);
    atomic_store_explicit(&t->armed, 0, memory_order_relaxed);
    pthread_mutex_unlock(&t->lock);
    ac__timer *x;
    while ((x = ac__timer_list_pop(&left)))
        x->ops->discard(x);
    pthread_mutex_destroy(&t->fire_lock);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    free(t);
}

/* Call with the lock held. */
static void arm_locked(ac__timers *t, ac__timer *timer, uint64_t deadline)
{
    ac__wheel_add(&t->wheel, timer, deadline);
    atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
    if (timer->deadline < atomic_load_explicit(&t->sleep_until, memory_order_relaxed))
        pthread_cond_signal(&t->cond);
    if (!t->manual && !t->stop) {
        uint64_t due = t->start_ns + timer->deadline * AC__TICK_NS;
        if (due < atomic_load_explicit(&t->due_ns, memory_order_relaxed))
            atomic_store_explicit(&t->due_ns, due, memory_order_relaxed);
    }
}

void ac__timer_arm_ns(ac__timers *t, ac__timer *timer, uint64_t delay_ns)
{
    pthread_mutex_lock(&t->lock);
    uint64_t deadline;
    if (t->manual) {
        uint64_t now = ac__timers_now_ticks(t);
        deadline = now + ticks_of_ns(delay_ns);
        if (t->wheel.armed == 0 && now > t->wheel.now)
            t->wheel.now = now; /* idle wheel: catch up without ticking */
    } else {
        /* Rounded up from the exact time: never fires early. */
        uint64_t now_ns = ac__now_ns() - t->start_ns;
        deadline = ticks_of_ns(now_ns + delay_ns);
        uint64_t now = now_ns / AC__TICK_NS;
        if (t->wheel.armed == 0 && now > t->wheel.now)
            t->wheel.now = now;
    }
    arm_locked(t, timer, deadline);
    pthread_mutex_unlock(&t->lock);
}

/* ms -> ns, saturating: a delay beyond ~292 years never comes. */
static uint64_t ns_of_ms(uint64_t ms)
{
    return ms > UINT64_MAX / 2 / 1000000ull ? UINT64_MAX / 2 : ms * 1000000ull;
}

void ac__timer_arm(ac__timers *t, ac__timer *timer, uint64_t delay_ms)
{
    ac__timer_arm_ns(t, timer, ns_of_ms(delay_ms));
}

void ac__timer_rearm(ac__timers *t, ac__timer *timer, uint64_t interval_ns)
{
    pthread_mutex_lock(&t->lock);
    /* From the previous deadline, not from now, so a repeat does not drift;
     * a deadline already past fires at the next tick. */
    uint64_t next = timer->deadline + ticks_of_ns(interval_ns);
    arm_locked(t, timer, next < timer->deadline ? UINT64_MAX : next); /* saturate */
    pthread_mutex_unlock(&t->lock);
}

bool ac__timer_cancel(ac__timers *t, ac__timer *timer)
{
    pthread_mutex_lock(&t->lock);
    bool removed = ac__wheel_remove(&t->wheel, timer);
    if (removed)
        atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
    pthread_mutex_unlock(&t->lock);
    return removed;
}

/* ---- lazy arming (see the top of the file) ----------------------------- */

static atomic_uint next_stripe;
static _Thread_local unsigned tls_stripe; /* 1 + the stripe; 0: none yet */
static _Thread_local unsigned tls_pushed; /* lazy pushes since this thread's last merge */

static ac__lazy_stripe *my_stripe(ac__timers *t)
{
    if (AC__UNLIKELY(!tls_stripe))
        tls_stripe = 1 + atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) %
                             AC__LAZY_STRIPES;
    return &t->lazy[tls_stripe - 1];
}

static bool lazy_waiting(ac__timers *t)
{
    for (int i = 0; i < AC__LAZY_STRIPES; i++)
        if (atomic_load_explicit(&t->lazy[i].top, memory_order_relaxed))
            return true;
    return false;
}

/* Call with the lock held: place a lazy timer in the wheel, or put it on
 * `drop` when its owner has given it up. */
static void place_lazy_locked(ac__timers *t, ac__timer *x, ac__timer *drop)
{
    if (x->ops->given_up(x)) {
        atomic_store_explicit(&x->queued, 0, memory_order_relaxed);
        ac__timer_list_append(drop, x);
        return;
    }
    arm_locked(t, x, x->deadline);
    /* seq_cst, both: against the given-up owner's fence and load of
     * queued in ac__timer_cancel_lazy (see the top of the file). */
    atomic_store_explicit(&x->queued, 0, memory_order_seq_cst);
    if (x->ops->given_up(x) && ac__wheel_remove(&t->wheel, x)) {
        atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
        ac__timer_list_append(drop, x);
    }
}

/* Merge a taken stack into the wheel; drop what was given up. Call
 * without the lock. */
static void merge_list(ac__timers *t, ac__timer *x)
{
    ac__timer drop;
    ac__timer_list_init(&drop);
    pthread_mutex_lock(&t->lock);
    if (t->wheel.armed == 0) { /* idle wheel: catch up, as ac__timer_arm_ns */
        uint64_t now = ac__timers_now_ticks(t);
        if (now > t->wheel.now)
            t->wheel.now = now;
    }
    while (x) {
        ac__timer *next = x->next;
        place_lazy_locked(t, x, &drop);
        x = next;
    }
    pthread_mutex_unlock(&t->lock);
    while ((x = ac__timer_list_pop(&drop)))
        x->ops->discard(x);
}

static ac__timer *take_stripe(ac__lazy_stripe *s)
{
    if (!atomic_load_explicit(&s->top, memory_order_relaxed))
        return NULL;
    /* acquire: pairs with the pushers' release; the links and deadlines. */
    return atomic_exchange_explicit(&s->top, NULL, memory_order_acquire);
}

/* Merge every stripe. Call without the lock. */
static void merge_lazy(ac__timers *t)
{
    for (int i = 0; i < AC__LAZY_STRIPES; i++) {
        ac__timer *x = take_stripe(&t->lazy[i]);
        if (x)
            merge_list(t, x);
    }
}

void ac__timer_arm_lazy(ac__timers *t, ac__timer *timer, uint64_t delay_ms)
{
    if (t->manual || delay_ms < LAZY_MIN_MS || !timer->ops->given_up) {
        ac__timer_arm(t, timer, delay_ms);
        return;
    }
    /* As ac__timer_arm_ns: rounded up from the exact time, never early. */
    timer->deadline = ticks_of_ns(ac__now_ns() - t->start_ns + ns_of_ms(delay_ms));
    atomic_store_explicit(&timer->queued, 1, memory_order_relaxed);
    ac__lazy_stripe *s = my_stripe(t);
    ac__timer *top = atomic_load_explicit(&s->top, memory_order_relaxed);
    do
        timer->next = top;
    /* release: the timer's fields, to the merge's acquire exchange. */
    while (!atomic_compare_exchange_weak_explicit(&s->top, &top, timer, memory_order_release,
                                                  memory_order_relaxed));
    if (AC__UNLIKELY(++tls_pushed >= LAZY_BATCH)) {
        tls_pushed = 0;
        ac__timer *x = take_stripe(s);
        if (x)
            merge_list(t, x);
    }
}

bool ac__timer_cancel_lazy(ac__timers *t, ac__timer *timer)
{
    /* seq_cst: the owner gave the timer up before this; pairs with
     * place_lazy_locked's store of queued and its look at given_up. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&timer->queued, memory_order_relaxed))
        return false; /* still waiting: the merge drops it */
    return ac__timer_cancel(t, timer);
}

/* ---- the clock -------------------------------------------------------- */

int64_t ac_clock_now_ms(const ac_system *system)
{
    return system ? (int64_t)clock_now(system->timers) : 0;
}

size_t ac_timers_armed(const ac_system *system)
{
    if (!system)
        return 0;
    merge_lazy(system->timers); /* what waits is armed; what was given up, not */
    return atomic_load_explicit(&system->timers->armed, memory_order_relaxed);
}

ac_status ac_clock_advance(ac_system *system, int64_t ms)
{
    if (!system)
        return ac__fail(AC_EINVAL, "ac_clock_advance: system is NULL");
    ac__timers *t = system->timers;
    if (!t->manual)
        return ac__fail(AC_EINVAL,
                        "ac_clock_advance: system \"%s\" runs on the real clock (set "
                        "ac_system_options.manual_clock)",
                        system->name);
    if (ms < 0)
        return ac__fail(AC_EINVAL, "ac_clock_advance: ms = %lld; time only moves forward",
                        (long long)ms);
    if (ac__tls_actor)
        return ac__fail(AC_EINACTOR, "ac_clock_advance: not allowed inside an actor");
    /* The clock jumps to the target; the wheel then steps from event to
     * event, firing at each, so that timers armed while firing (repeats)
     * fire within the same advance when they fall due. */
    pthread_mutex_lock(&t->lock);
    uint64_t now = atomic_load_explicit(&t->manual_now, memory_order_relaxed);
    if ((uint64_t)ms > (uint64_t)AC_CLOCK_MAX_MS - now) {
        pthread_mutex_unlock(&t->lock);
        return ac__fail(AC_EINVAL,
                        "ac_clock_advance: ms = %lld from %llu ms would pass the clock's end "
                        "(AC_CLOCK_MAX_MS = %lld)",
                        (long long)ms, (unsigned long long)now, (long long)AC_CLOCK_MAX_MS);
    }
    uint64_t target_ms = now + (uint64_t)ms;
    uint64_t target = target_ms * AC__TICKS_PER_MS;
    /* Release pairs with the acquire loads in clock_now and ac__timers_now_ticks. */
    atomic_store_explicit(&t->manual_now, target_ms, memory_order_release);
    for (;;) {
        uint64_t step = ac__wheel_next_event(&t->wheel);
        if (step > target)
            step = target;
        ac__timer due;
        ac__timer_list_init(&due);
        ac__wheel_advance(&t->wheel, step, &due);
        atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
        pthread_mutex_unlock(&t->lock);
        ac__timers_fire_all(&due);
        pthread_mutex_lock(&t->lock);
        if (step == target && ac__wheel_next_event(&t->wheel) > target)
            break;
    }
    pthread_mutex_unlock(&t->lock);
    return AC_OK;
}
