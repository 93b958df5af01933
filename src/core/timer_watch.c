/*
 * Workers that watch the earliest deadline (see timers.c): a worker about
 * to park claims it, sleeps until a margin before it, spins the rest of
 * the way and fires what is due on its own thread. One watcher at a time,
 * by a claim the timer thread reads; the margin follows how late the
 * watchers' own wake-ups come.
 */
#include <sched.h>

#include "core/clock.h"
#include "core/sync.h"
#include "core/timers_internal.h"

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
    uint64_t tick = (due_ns - t->start_ns) / AC__TICK_NS;
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
    uint64_t want = late_ns + AC__WATCH_SLACK_NS;
    m = want >= m ? want : m - (m - want) / 16;
    if (m < AC__WATCH_MARGIN_MIN_NS)
        m = AC__WATCH_MARGIN_MIN_NS;
    if (m > AC__WATCH_MARGIN_MAX_NS)
        m = AC__WATCH_MARGIN_MAX_NS;
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
        return ac__timers_fire_due(t, false); /* due already: nothing to spin for */
    /* due_ns may be early (a cancel leaves it): make it exact before
     * spinning for it. */
    pthread_mutex_lock(&t->lock);
    if (!t->stop)
        ac__timers_publish_due(t);
    pthread_mutex_unlock(&t->lock);
    /* Spin to the deadline, if it is near: at most the largest margin
     * (and the deadline read fresh each time: an earlier one may be
     * armed meanwhile). */
    uint64_t limit = now + AC__WATCH_MARGIN_MAX_NS + AC__WATCH_SLACK_NS;
    for (;;) {
        uint64_t due = atomic_load_explicit(&t->due_ns, memory_order_relaxed);
        if (due <= now)
            break;
        if (due > limit)
            return false;
        /* Yield the core while the deadline is more than AC__WATCH_PURE_NS
         * away: on a shared core another thread (ours, or not) runs, and
         * on an idle one the yield returns at once. */
        if (due - now > AC__WATCH_PURE_NS)
            sched_yield();
        else
            for (int i = 0; i < 16; i++)
                ac__cpu_relax();
        now = ac__now_ns();
    }
    return ac__timers_fire_due(t, false);
}
