/*
 * The timer service of a system: the clock, the wheel, the timer thread,
 * and the scheduled messages built on them (ac_schedule_once/repeat).
 *
 * One mutex guards the wheel. Timers are collected under it and fired
 * after it is released, so a firing timer may arm or cancel timers. The
 * thread sleeps on a condition variable until the earliest deadline, at
 * most IDLE_NAP_MS (4 wake-ups a second when idle); arming an earlier
 * deadline than the one it sleeps for wakes it.
 *
 * A tick is 1 us (TICK_NS): a timer fires within a tick of its deadline
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
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/alloc.h"
#include "core/clock.h"
#include "core/last_error.h"
#include "core/ref.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"

struct ac__timers {
    ac_system *system;
    bool manual;
    uint64_t start_ns;            /* real clock origin */
    _Atomic uint64_t manual_now;  /* manual clock, ms */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop, thread_started;
    /* Tick the thread sleeps until; UINT64_MAX: none. Written under `lock`;
     * read by arming threads under it, by claiming workers without it. */
    _Atomic uint64_t sleep_until;
    pthread_t thread;
    ac__wheel wheel;
    atomic_size_t armed; /* mirror of wheel.armed, readable without the lock */
    /* Serialises collecting and firing (the timer thread's and workers'),
     * taken before `lock`. */
    pthread_mutex_t fire_lock;
    /* Real clock only; written under `lock`, read by parking workers. */
    _Atomic uint64_t due_ns;    /* ac__now_ns() of the earliest deadline; UINT64_MAX: none */
    _Atomic uint64_t margin_ns; /* how early a watching worker wakes */
    /* When the worker that watches the earliest deadline wakes for it
     * (ac__now_ns); UINT64_MAX: no worker watches. One watcher at a time. */
    _Atomic uint64_t watch_at;
    atomic_int serving; /* workers in ac__timers_serve */
};

#define IDLE_NAP_MS 250
/* The watch margin starts here and follows the watchers' wake-up lateness
 * (a decaying maximum, plus WATCH_SLACK_NS), within these bounds: the
 * upper one caps what a watcher spins per deadline. */
#define WATCH_MARGIN_START_NS 100000ull
#define WATCH_MARGIN_MIN_NS 20000ull
#define WATCH_MARGIN_MAX_NS 200000ull
#define WATCH_SLACK_NS 25000ull
#define WATCH_PURE_NS 10000ull /* the last stretch, spun without yielding */
/* How long past a deadline the timer thread leaves it to the worker that
 * watches it before it fires it itself: that worker is up a margin
 * before the deadline and fires within a few us, unless it was called
 * away to other work or lost its core meanwhile. */
#define BACKUP_NS 100000ull
/* Finding the earliest deadline scans one slot of the wheel, up to this
 * many timers; a fuller slot gives its start instead (early: a watcher
 * then wakes for its cascade and looks again). */
#define DUE_SCAN_MAX 64
#define TICK_NS 1000ull /* 1 us */
#define TICKS_PER_MS 1000ull
#define BACKUP_TICKS (BACKUP_NS / TICK_NS)
_Static_assert(TICK_NS * TICKS_PER_MS == 1000000ull, "a tick is 1 us");
_Static_assert((uint64_t)AC_CLOCK_MAX_MS <= UINT64_MAX / TICKS_PER_MS / 2,
               "the clock's end, in ticks, leaves room for the longest delay");

/* The clock in ms (ac_clock_now_ms). */
static uint64_t clock_now(ac__timers *t)
{
    if (t->manual) /* acquire pairs with ac_clock_advance's release store */
        return atomic_load_explicit(&t->manual_now, memory_order_acquire);
    return (ac__now_ns() - t->start_ns) / 1000000ull;
}

/* The clock in ticks, rounded down. */
static uint64_t clock_now_ticks(ac__timers *t)
{
    if (t->manual) /* acquire: as in clock_now */
        return atomic_load_explicit(&t->manual_now, memory_order_acquire) * TICKS_PER_MS;
    return (ac__now_ns() - t->start_ns) / TICK_NS;
}

/* A delay in ticks, rounded up, saturating far beyond the clock's end. */
static uint64_t ticks_of_ns(uint64_t ns)
{
    return ns / TICK_NS + (ns % TICK_NS != 0);
}

static void fire_all(ac__timer *due)
{
    ac__timer *t;
    while ((t = ac__timer_list_pop(due)))
        t->ops->fire(t);
}

/* Call with the lock held: publish the earliest deadline for watching
 * workers (the real clock only; with a manual clock no worker watches). */
static void publish_due(ac__timers *t)
{
    if (t->manual)
        return;
    uint64_t d = ac__wheel_next_deadline(&t->wheel, DUE_SCAN_MAX);
    atomic_store_explicit(&t->due_ns, d == UINT64_MAX ? UINT64_MAX : t->start_ns + d * TICK_NS,
                          memory_order_relaxed);
}

/* Call with the lock held: advance the wheel to the clock. */
static void collect_due(ac__timers *t, ac__timer *due)
{
    ac__wheel_advance(&t->wheel, clock_now_ticks(t), due);
    atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
    publish_due(t);
}

/* Collect what is due and fire it, under fire_lock; called without the
 * lock. False if nothing was due, or the timers are stopping, or (when
 * not `wait`) another thread is firing: that one goes on until nothing is
 * due, so a worker need not queue behind it while actors wait for it. */
static bool fire_due(ac__timers *t, bool wait)
{
    ac__timer due;
    ac__timer_list_init(&due);
    if (!wait) {
        if (pthread_mutex_trylock(&t->fire_lock) != 0)
            return false;
    } else {
        pthread_mutex_lock(&t->fire_lock);
    }
    pthread_mutex_lock(&t->lock);
    if (!t->stop)
        collect_due(t, &due);
    pthread_mutex_unlock(&t->lock);
    bool fired = due.next != &due;
    fire_all(&due);
    pthread_mutex_unlock(&t->fire_lock);
    return fired;
}

static void wait_until_tick(ac__timers *t, uint64_t target)
{
    ac__cond_wait_until_ns(&t->cond, &t->lock, t->start_ns + target * TICK_NS);
}

/* Is a worker to be up for the deadline `tick`, by its claim? A claim may
 * be stale (its worker called away): the timer thread then fires that
 * deadline BACKUP_NS late. */
static bool watched(ac__timers *t, uint64_t tick)
{
    /* seq_cst: see timer_main's announcement of its sleep. */
    uint64_t at = atomic_load_explicit(&t->watch_at, memory_order_seq_cst);
    return at != UINT64_MAX && at <= t->start_ns + tick * TICK_NS;
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
        uint64_t now = clock_now_ticks(t);
        uint64_t next = ac__wheel_next_deadline(&t->wheel, DUE_SCAN_MAX);
        uint64_t until;
        if (next <= now) {
            bool taken = atomic_load_explicit(&t->serving, memory_order_relaxed) > 0 ||
                         watched(t, next);
            if (!taken || now >= backup_of(next)) {
                pthread_mutex_unlock(&t->lock);
                fire_due(t, true);
                pthread_mutex_lock(&t->lock);
                continue;
            }
            until = backup_of(next); /* due, and a worker is on it */
        } else {
            /* Never sleep longer than IDLE_NAP_MS: then arming a timer due
             * later than that (every default ask) needs no wake-up call,
             * which would cost the arming thread a futex syscall per ask. */
            uint64_t nap = now + IDLE_NAP_MS * TICKS_PER_MS;
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
    ac__timers *t = ac__calloc(1, sizeof *t);
    if (!t)
        return ac__fail_null(AC_ENOMEM, "ac_system_create: out of memory for the timers");
    t->system = sys;
    t->manual = manual;
    t->start_ns = ac__now_ns();
    atomic_init(&t->sleep_until, UINT64_MAX);
    atomic_init(&t->due_ns, UINT64_MAX);
    atomic_init(&t->margin_ns, WATCH_MARGIN_START_NS);
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
        uint64_t due = t->start_ns + timer->deadline * TICK_NS;
        if (due < atomic_load_explicit(&t->due_ns, memory_order_relaxed))
            atomic_store_explicit(&t->due_ns, due, memory_order_relaxed);
    }
}

void ac__timer_arm_ns(ac__timers *t, ac__timer *timer, uint64_t delay_ns)
{
    pthread_mutex_lock(&t->lock);
    uint64_t deadline;
    if (t->manual) {
        uint64_t now = clock_now_ticks(t);
        deadline = now + ticks_of_ns(delay_ns);
        if (t->wheel.armed == 0 && now > t->wheel.now)
            t->wheel.now = now; /* idle wheel: catch up without ticking */
    } else {
        /* Rounded up from the exact time: never fires early. */
        uint64_t now_ns = ac__now_ns() - t->start_ns;
        deadline = ticks_of_ns(now_ns + delay_ns);
        uint64_t now = now_ns / TICK_NS;
        if (t->wheel.armed == 0 && now > t->wheel.now)
            t->wheel.now = now;
    }
    arm_locked(t, timer, deadline);
    pthread_mutex_unlock(&t->lock);
}

/* ms or us -> ns, saturating: a delay beyond ~292 years never comes. */
static uint64_t ns_of_ms(uint64_t ms)
{
    return ms > UINT64_MAX / 2 / 1000000ull ? UINT64_MAX / 2 : ms * 1000000ull;
}

static uint64_t ns_of_us(int64_t us)
{
    return (uint64_t)us > UINT64_MAX / 2 / 1000ull ? UINT64_MAX / 2 : (uint64_t)us * 1000ull;
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

/* ---- watching workers ------------------------------------------------- */

/* A timer thread asleep until the very deadline just claimed (it went to
 * sleep before the claim: the deadline was armed in a turn, the claim
 * comes when that worker parks) would wake right by it, as the watcher
 * spins for it, and often on the watcher's own core, taking it for the
 * tens of us a wake-up costs there: make it sleep again, past the
 * deadline (timer_main reads the claim). One signal per timer at most,
 * well before its deadline; a thread that sleeps to an earlier time, or
 * past this one, is left alone. */
static void tell_timer_thread(ac__timers *t, uint64_t due_ns)
{
    uint64_t tick = (due_ns - t->start_ns) / TICK_NS;
    /* seq_cst: see timer_main. Most claims find the thread sleeping to
     * another time and take no lock. */
    if (atomic_load_explicit(&t->sleep_until, memory_order_seq_cst) != tick)
        return;
    pthread_mutex_lock(&t->lock);
    if (atomic_load_explicit(&t->sleep_until, memory_order_relaxed) == tick)
        pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* A claim whose time has passed is stale (its holder is awake, or about
 * to be, and may find that timer fired and a later one armed): it is
 * taken over. */
uint64_t ac__timers_claim_watch(ac__timers *t, uint64_t now_ns)
{
    uint64_t due = atomic_load_explicit(&t->due_ns, memory_order_relaxed);
    if (due == UINT64_MAX)
        return UINT64_MAX;
    uint64_t margin = atomic_load_explicit(&t->margin_ns, memory_order_relaxed);
    uint64_t wake = due > margin ? due - margin : 0;
    uint64_t cur = atomic_load_explicit(&t->watch_at, memory_order_relaxed);
    while (wake < cur || cur <= now_ns)
        /* seq_cst: see tell_timer_thread. */
        if (atomic_compare_exchange_weak_explicit(&t->watch_at, &cur, wake, memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            tell_timer_thread(t, due);
            return wake;
        }
    return UINT64_MAX;
}

void ac__timers_release_watch(ac__timers *t, uint64_t wake_ns)
{
    if (wake_ns != UINT64_MAX)
        atomic_compare_exchange_strong_explicit(&t->watch_at, &wake_ns, UINT64_MAX,
                                                memory_order_relaxed, memory_order_relaxed);
}

bool ac__timers_due_now(ac__timers *t, uint64_t now_ns)
{
    return atomic_load_explicit(&t->due_ns, memory_order_relaxed) <= now_ns;
}

/* A watcher woke `late_ns` after the time it asked for: follow the upper
 * envelope of those delays (a spike decays by 1/16 per wake-up). Racing
 * updates from two watchers lose a sample, which is harmless. */
static void learn_margin(ac__timers *t, uint64_t late_ns)
{
    uint64_t m = atomic_load_explicit(&t->margin_ns, memory_order_relaxed);
    uint64_t want = late_ns + WATCH_SLACK_NS;
    m = want >= m ? want : m - (m - want) / 16;
    if (m < WATCH_MARGIN_MIN_NS)
        m = WATCH_MARGIN_MIN_NS;
    if (m > WATCH_MARGIN_MAX_NS)
        m = WATCH_MARGIN_MAX_NS;
    atomic_store_explicit(&t->margin_ns, m, memory_order_relaxed);
}

static bool serve(ac__timers *t, uint64_t woke_for_ns);

bool ac__timers_serve(ac__timers *t, uint64_t woke_for_ns)
{
    /* Relaxed: the count only steers when the timer thread fires; fire_lock
     * orders the firing itself. */
    atomic_fetch_add_explicit(&t->serving, 1, memory_order_relaxed);
    bool fired = serve(t, woke_for_ns);
    atomic_fetch_sub_explicit(&t->serving, 1, memory_order_relaxed);
    return fired;
}

static bool serve(ac__timers *t, uint64_t woke_for_ns)
{
    uint64_t now = ac__now_ns();
    if (woke_for_ns != 0 && woke_for_ns != UINT64_MAX && now >= woke_for_ns)
        learn_margin(t, now - woke_for_ns);
    if (woke_for_ns == 0 && atomic_load_explicit(&t->due_ns, memory_order_relaxed) <= now)
        return fire_due(t, false); /* due already: nothing to spin for */
    /* due_ns may be early (a cancel leaves it): make it exact before
     * spinning for it. */
    pthread_mutex_lock(&t->lock);
    if (!t->stop)
        publish_due(t);
    pthread_mutex_unlock(&t->lock);
    /* Spin to the deadline, if it is near: at most the largest margin
     * (and the deadline read fresh each time: an earlier one may be
     * armed meanwhile). */
    uint64_t limit = now + WATCH_MARGIN_MAX_NS + WATCH_SLACK_NS;
    for (;;) {
        uint64_t due = atomic_load_explicit(&t->due_ns, memory_order_relaxed);
        if (due <= now)
            break;
        if (due > limit)
            return false;
        /* Yield the core while the deadline is more than WATCH_PURE_NS
         * away: on a shared core another thread (ours, or not) runs, and
         * on an idle one the yield returns at once. */
        if (due - now > WATCH_PURE_NS)
            sched_yield();
        else
            for (int i = 0; i < 16; i++)
                ac__cpu_relax();
        now = ac__now_ns();
    }
    return fire_due(t, false);
}

/* ---- the clock -------------------------------------------------------- */

int64_t ac_clock_now_ms(const ac_system *system)
{
    return system ? (int64_t)clock_now(system->timers) : 0;
}

size_t ac_timers_armed(const ac_system *system)
{
    return system ? atomic_load_explicit(&system->timers->armed, memory_order_relaxed) : 0;
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
    uint64_t target = target_ms * TICKS_PER_MS;
    /* Release pairs with the acquire loads in clock_now and clock_now_ticks. */
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
        fire_all(&due);
        pthread_mutex_lock(&t->lock);
        if (step == target && ac__wheel_next_event(&t->wheel) > target)
            break;
    }
    pthread_mutex_unlock(&t->lock);
    return AC_OK;
}

/* ---- scheduled messages ----------------------------------------------- */

struct ac_cancellable {
    ac__timer timer;
    atomic_uint refs;      /* the caller's + one while armed */
    atomic_bool cancelled;
    atomic_bool finished;  /* will not fire again */
    ac_system *system;
    ac_ref *target, *sender;
    ac_msg *msg;
    uint64_t interval_ns; /* 0: once */
};

static void cancellable_release(ac_cancellable *c)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    ac_ref_release(c->target);
    ac_ref_release(c->sender);
    ac_msg_release(c->msg);
    free(c);
}

static void schedule_fire(ac__timer *timer)
{
    ac_cancellable *c = (ac_cancellable *)timer;
    /* Acquire (both loads) pairs with ac_cancel's exchange. */
    if (!atomic_load_explicit(&c->cancelled, memory_order_acquire)) {
        ac_tell(c->target, ac_msg_retain(c->msg), c->sender);
        if (c->interval_ns && !ac__ref_is_dead(c->target) &&
            !atomic_load_explicit(&c->cancelled, memory_order_acquire)) {
            ac__timer_rearm(c->system->timers, &c->timer, c->interval_ns); /* keeps the ref */
            return;
        }
    }
    /* Release pairs with ac_cancel's acquire load of finished. */
    atomic_store_explicit(&c->finished, true, memory_order_release);
    cancellable_release(c);
}

static void schedule_discard(ac__timer *timer)
{
    /* The system is going away: let go of its refs now, so that a handle
     * released later touches nothing of the system. */
    ac_cancellable *c = (ac_cancellable *)timer;
    ac_ref_release(c->target);
    ac_ref_release(c->sender);
    ac_msg_release(c->msg);
    c->target = c->sender = NULL;
    c->msg = NULL;
    cancellable_release(c);
}

static const ac__timer_ops schedule_ops = {.fire = schedule_fire, .discard = schedule_discard};

/* Delays in us; negative ones were refused by the caller's check. */
static ac_cancellable *schedule(const char *fn, ac_ref *target, int64_t delay_us,
                                int64_t interval_us, ac_msg *msg, ac_ref *sender)
{
    const char *bad = !msg ? "message is NULL" : !target ? "target is NULL" : NULL;
    if (!bad && delay_us < 0)
        bad = "delay is negative";
    if (!bad && interval_us < 0)
        bad = "interval must be at least 1 ms";
    if (bad) {
        ac_msg_release(msg);
        return ac__fail_null(AC_EINVAL, "%s: %s", fn, bad);
    }
    ac_cancellable *c = ac__calloc(1, sizeof *c);
    if (!c) {
        ac_msg_release(msg);
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    }
    c->timer.ops = &schedule_ops;
    atomic_init(&c->refs, 2);
    c->system = target->system;
    c->target = ac_ref_retain(target);
    c->sender = ac_ref_retain(sender);
    c->msg = msg;
    c->interval_ns = ns_of_us(interval_us);
    ac__timer_arm_ns(c->system->timers, &c->timer, ns_of_us(delay_us));
    return c;
}

/* ms -> us, saturating (a delay of INT64_MAX us is 292,000 years). */
static int64_t us_of_ms(int64_t ms)
{
    return ms > INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : ms < 0 ? -1 : ms * 1000;
}

ac_cancellable *ac_schedule_once(ac_ref *target, int64_t delay_ms, ac_msg *msg, ac_ref *sender)
{
    ac__clear_status();
    return schedule("ac_schedule_once", target, us_of_ms(delay_ms), 0, msg, sender);
}

ac_cancellable *ac_schedule_once_us(ac_ref *target, int64_t delay_us, ac_msg *msg,
                                    ac_ref *sender)
{
    ac__clear_status();
    return schedule("ac_schedule_once_us", target, delay_us, 0, msg, sender);
}

ac_cancellable *ac_schedule_repeat(ac_ref *target, int64_t initial_ms, int64_t interval_ms,
                                   ac_msg *msg, ac_ref *sender)
{
    ac__clear_status();
    if (interval_ms < 1) {
        ac_msg_release(msg);
        return ac__fail_null(AC_EINVAL, "ac_schedule_repeat: interval_ms = %lld; use >= 1",
                             (long long)interval_ms);
    }
    return schedule("ac_schedule_repeat", target, us_of_ms(initial_ms), us_of_ms(interval_ms), msg,
                    sender);
}

bool ac_cancel(ac_cancellable *c)
{
    ac__clear_status();
    if (!c)
        return ac__fail(AC_EINVAL, "ac_cancel: handle is NULL"), false;
    /* acq_rel: pairs with the acquire loads in schedule_fire and with an
     * earlier ac_cancel. */
    if (atomic_exchange_explicit(&c->cancelled, true, memory_order_acq_rel))
        return false;
    if (ac__timer_cancel(c->system->timers, &c->timer)) {
        cancellable_release(c); /* the wheel's reference */
        return true;
    }
    /* Not in the wheel: finished (nothing to cancel), or firing right now,
     * when the flag stops a repeat from re-arming; a once-timer that is
     * mid-fire has delivered (or is delivering) its message. */
    /* Acquire pairs with schedule_fire's release store of finished. */
    return c->interval_ns != 0 && !atomic_load_explicit(&c->finished, memory_order_acquire);
}

void ac_cancellable_release(ac_cancellable *c)
{
    if (c)
        cancellable_release(c);
}
