/*
 * What the timer service's files share: timers.c (the timer thread,
 * arming, the clock) and timer_watch.c (workers that watch and fire a
 * deadline). The service's struct, its units, and collecting and firing
 * what is due, static in each file that uses them (AC__MODULE_STATIC): a
 * worker that serves the timers fires them without a call across files,
 * compiled as when this was one file. The design is at the top of
 * timers.c.
 */
#ifndef AC_CORE_TIMERS_INTERNAL_H
#define AC_CORE_TIMERS_INTERNAL_H

#include "core/base.h"
#include "core/clock.h"
#include "core/sync.h"
#include "core/timers.h"

/* Lazily armed timers waiting to enter the wheel (timers.c, "Lazy
 * arming"): a stack per stripe, pushed by a CAS, taken whole by an
 * exchange; a line each, so that threads on different stripes do not
 * share one. */
#define AC__LAZY_STRIPES 8
typedef struct ac__lazy_stripe {
    _Alignas(64) _Atomic(ac__timer *) top;
} ac__lazy_stripe;

struct ac__timers {
    ac__lazy_stripe lazy[AC__LAZY_STRIPES];
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

/* The watch margin starts here and follows the watchers' wake-up lateness
 * (a decaying maximum, plus AC__WATCH_SLACK_NS), within these bounds: the
 * upper one caps what a watcher spins per deadline. */
#define AC__WATCH_MARGIN_START_NS 100000ull
#define AC__WATCH_MARGIN_MIN_NS 20000ull
#define AC__WATCH_MARGIN_MAX_NS 200000ull
#define AC__WATCH_SLACK_NS 25000ull
#define AC__WATCH_PURE_NS 10000ull /* the last stretch, spun without yielding */
/* Finding the earliest deadline scans one slot of the wheel, up to this
 * many timers; a fuller slot gives its start instead (early: a watcher
 * then wakes for its cascade and looks again). */
#define AC__DUE_SCAN_MAX 64
#define AC__TICK_NS 1000ull /* 1 us */
#define AC__TICKS_PER_MS 1000ull
_Static_assert(AC__TICK_NS * AC__TICKS_PER_MS == 1000000ull, "a tick is 1 us");
_Static_assert((uint64_t)AC_CLOCK_MAX_MS <= UINT64_MAX / AC__TICKS_PER_MS / 2,
               "the clock's end, in ticks, leaves room for the longest delay");

/* The clock in ticks, rounded down. */
AC__MODULE_STATIC uint64_t ac__timers_now_ticks(ac__timers *t)
{
    if (t->manual) /* acquire: as in clock_now */
        return atomic_load_explicit(&t->manual_now, memory_order_acquire) * AC__TICKS_PER_MS;
    return (ac__now_ns() - t->start_ns) / AC__TICK_NS;
}

AC__MODULE_STATIC void ac__timers_fire_all(ac__timer *due)
{
    ac__timer *t;
    while ((t = ac__timer_list_pop(due)))
        t->ops->fire(t);
}

/* Call with the lock held: publish the earliest deadline for watching
 * workers (the real clock only; with a manual clock no worker watches). */
AC__MODULE_STATIC void ac__timers_publish_due(ac__timers *t)
{
    if (t->manual)
        return;
    uint64_t d = ac__wheel_next_deadline(&t->wheel, AC__DUE_SCAN_MAX);
    atomic_store_explicit(&t->due_ns, d == UINT64_MAX ? UINT64_MAX : t->start_ns + d * AC__TICK_NS,
                          memory_order_relaxed);
}

/* Call with the lock held: advance the wheel to the clock. */
AC__MODULE_STATIC void ac__timers_collect_due(ac__timers *t, ac__timer *due)
{
    ac__wheel_advance(&t->wheel, ac__timers_now_ticks(t), due);
    atomic_store_explicit(&t->armed, t->wheel.armed, memory_order_relaxed);
    ac__timers_publish_due(t);
}

/* Collect what is due and fire it, under fire_lock; called without the
 * lock. False if nothing was due, or the timers are stopping, or (when
 * not `wait`) another thread is firing: that one goes on until nothing is
 * due, so a worker need not queue behind it while actors wait for it. */
AC__MODULE_STATIC bool ac__timers_fire_due(ac__timers *t, bool wait)
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
        ac__timers_collect_due(t, &due);
    pthread_mutex_unlock(&t->lock);
    bool fired = due.next != &due;
    ac__timers_fire_all(&due);
    pthread_mutex_unlock(&t->fire_lock);
    return fired;
}

#endif
