/*
 * A worker's loop (see scheduler.c for the design): take the next actor
 * (runnext, the own ring, now and then the injection list first, then a
 * steal from a long ring or a stuck worker), spin for work a while when
 * there is none, fire timers that fall due meanwhile, then park: nap while
 * another worker may leave something waiting behind a long turn, sleep
 * for good when every queue is empty, or wake a margin before the timer
 * this worker watches.
 */
#include <sched.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/internal.h"
#include "core/scheduler_internal.h"
#include "core/sync.h"

#define SPIN_NS 100000ull /* how long an idle worker looks for work before parking */
#define SPIN_PURE_NS 5000ull /* of which without yielding the core */
#define WAKE_RING_LEN STEAL_MIN_LEN /* ring length after a turn that wakes an idle worker */
#define STUCK_NS 1000000ull /* a worker in one turn this long is stuck: steal from it */
#define STEAL_MIN_LEN 8 /* a ring this long is worth sharing whatever its owner does */

/* ---- parking ---------------------------------------------------------- */

static bool any_work(ac__scheduler *s)
{
    /* What a parking worker could take: the injection list, or a ring long
     * enough to steal from. A shorter ring's owner is awake (it pushed in a
     * turn and drains its ring before parking); a stuck owner is caught by
     * napping (see park). seq_cst: pairs with ac__inject_push's increment. */
    if (atomic_load_explicit(&s->inject_len, memory_order_seq_cst) > 0)
        return true;
    for (int i = 0; i < s->nworkers; i++)
        if (ac__ring_len(&s->workers[i]) >= STEAL_MIN_LEN)
            return true;
    return false;
}

/* Is anything queued with a worker (its runnext or its ring), which that
 * worker may leave waiting behind a long turn? seq_cst: the ring's half of
 * the handshake with push_local, as runnext's with the pusher's exchange. */
static bool any_queued(ac__scheduler *s)
{
    for (int i = 0; i < s->nworkers; i++)
        if (atomic_load_explicit(&s->workers[i].runnext, memory_order_seq_cst) ||
            ac__ring_len(&s->workers[i]) > 0)
            return true;
    return false;
}

static bool any_busy(ac__scheduler *s, const ac__worker *self)
{
    for (int i = 0; i < s->nworkers; i++)
        if (&s->workers[i] != self && atomic_load_explicit(&s->workers[i].busy, memory_order_relaxed))
            return true;
    return false;
}

/* The system's timers, once the workers run (NULL for a bare scheduler). */
static ac__timers *timers_of(ac__scheduler *s)
{
    return s->system ? s->system->timers : NULL;
}

/* Become the worker that fires the next timer (see timers.c): returns the
 * time to wake for it, or UINT64_MAX when no timer is armed or another
 * parked worker already wakes as early. */
static uint64_t claim_watch(ac__scheduler *s, uint64_t now)
{
    ac__timers *t = timers_of(s);
    return t ? ac__timers_claim_watch(t, now) : UINT64_MAX;
}

static void release_watch(ac__scheduler *s, uint64_t wake)
{
    ac__timers *t = timers_of(s);
    if (t)
        ac__timers_release_watch(t, wake);
}

/* 1 ms on the monotonic clock (a wall-clock step must not stretch a nap
 * into a sleep that misses a stuck worker), or less for a watched timer. */
static void nap(ac__scheduler *s, uint64_t watch)
{
    uint64_t until = ac__now_ns() + 1000000;
    ac__cond_wait_until_ns(&s->park_cond, &s->park_lock, watch < until ? watch : until);
}

typedef enum park_outcome {
    PARK_WOKEN,  /* signalled, or found work or the stop before sleeping */
    PARK_NAPPED, /* napped and woke by the clock */
    PARK_TIMER   /* woke (or did not sleep) to fire a timer: *woke_for */
} park_outcome;

/* PARK_TIMER leaves the watch claimed (*claim) until the worker has
 * served the timers: the timer thread keeps out of a watcher's way. */
static park_outcome park(ac__worker *w, uint64_t *woke_for, uint64_t *claim)
{
    ac__scheduler *s = w->s;
    park_outcome out = PARK_WOKEN;
    uint64_t watch = UINT64_MAX;
    *woke_for = 0;
    *claim = UINT64_MAX;
    pthread_mutex_lock(&s->park_lock);
    /* seq_cst: pairs with ac__wake_one_if_idle's read of nparked; acquire of
     * stopping with ac__scheduler_stop's release store. */
    atomic_fetch_add_explicit(&s->nparked, 1, memory_order_seq_cst);
    if (!any_work(s) && !atomic_load_explicit(&s->stopping, memory_order_acquire)) {
        uint64_t now = ac__now_ns();
        watch = claim_watch(s, now);
        if (watch != UINT64_MAX && watch <= now) {
            out = PARK_TIMER; /* due within the margin already: no sleep */
        } else if (any_queued(s) || any_busy(s, w)) {
            nap(s, watch);
            out = PARK_NAPPED;
        } else {
            /* Announce the sound sleep, then look once more: a push that
             * makes a runnext or a ring non-empty after our look sees the
             * announcement and wakes us. A watcher's sleep ends at its
             * timer. */
            atomic_fetch_add_explicit(&s->nparked_sound, 1, memory_order_seq_cst);
            if (any_queued(s) || any_busy(s, w))
                nap(s, watch), out = PARK_NAPPED;
            else if (watch != UINT64_MAX)
                ac__cond_wait_until_ns(&s->park_cond, &s->park_lock, watch);
            else
                pthread_cond_wait(&s->park_cond, &s->park_lock);
            atomic_fetch_sub_explicit(&s->nparked_sound, 1, memory_order_seq_cst);
        }
        if (out != PARK_TIMER && watch != UINT64_MAX && ac__now_ns() >= watch) {
            out = PARK_TIMER;
            *woke_for = watch;
        }
        if (out == PARK_TIMER)
            *claim = watch;
        else
            release_watch(s, watch);
    }
    atomic_fetch_sub_explicit(&s->nparked, 1, memory_order_seq_cst); /* as its increment */
    pthread_mutex_unlock(&s->park_lock);
    return out;
}

/* ---- finding work ----------------------------------------------------- */

static uint32_t next_rand(ac__worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 17;
    w->rng ^= w->rng << 5;
    return w->rng;
}

/* Has `v` been in the same turn for STUCK_NS or more, as far as `w` has
 * watched it? */
static bool victim_stuck(ac__worker *w, ac__worker *v)
{
    uint64_t turns = atomic_load_explicit(&v->turns, memory_order_relaxed);
    uint64_t now = ac__now_ns();
    if (w->seen_turns[v->index] != turns) {
        w->seen_turns[v->index] = turns;
        w->seen_at[v->index] = now;
        return false;
    }
    return now - w->seen_at[v->index] >= STUCK_NS;
}

/* Take work from `v` only when it has more than it will soon get to: a
 * long ring, or any queued actor while it is stuck in one turn. Moving a
 * short queue of small turns to another core costs more in cache traffic
 * than it gains (a scatter over 3 routees ran at half the speed on 2 cores
 * as on 1 when thieves took every routee they saw). */
static ac__actor *steal_from(ac__worker *w, ac__worker *v)
{
    uint32_t len = ac__ring_len(v);
    bool has_runnext = atomic_load_explicit(&v->runnext, memory_order_relaxed) != NULL;
    if (len == 0 && !has_runnext)
        return NULL;
    bool stuck = victim_stuck(w, v);
    ac__actor *a = NULL;
    if (len >= STEAL_MIN_LEN || (len > 0 && stuck))
        a = ac__ring_pop(v);
    if (!a && stuck && has_runnext)
        /* acq_rel pairs with the owner's exchanges of runnext. */
        a = atomic_exchange_explicit(&v->runnext, NULL, memory_order_acq_rel);
    return a;
}

static ac__actor *steal(ac__worker *w)
{
    ac__scheduler *s = w->s;
    int n = s->nworkers;
    int start = (int)(next_rand(w) % (uint32_t)n);
    for (int k = 0; k < n; k++) {
        ac__worker *v = &s->workers[(start + k) % n];
        ac__actor *a = v == w ? NULL : steal_from(w, v);
        if (a)
            return a;
    }
    return NULL;
}

static ac__actor *find_work(ac__worker *w)
{
    ac__actor *a;
    /* Now and then look at the global list first, so it cannot starve. */
    if ((++w->tick & 63) == 0 && (a = ac__inject_pop(w->s)))
        return a;
    /* acq_rel pairs with the pusher's seq_cst exchange and with thieves'. */
    if ((a = atomic_exchange_explicit(&w->runnext, NULL, memory_order_acq_rel)))
        return a;
    if ((a = ac__ring_pop(w)))
        return a;
    if ((a = ac__inject_pop(w->s)))
        return a;
    return steal(w);
}

/* Fire the due timers on this worker, between turns (woke_for as for
 * ac__timers_serve), and take the first actor they woke: it runs now, on
 * this core, without waking anyone (the push that fills a runnext from
 * inside a turn wakes a sound sleeper, to watch that runnext behind a long
 * turn; this one is taken at once). Any further actor they woke waits in
 * the ring behind that actor's turn: then a sound sleeper is woken, to nap
 * and take it if the turn runs long. */
static ac__actor *serve_timers(ac__worker *w, uint64_t woke_for)
{
    ac__scheduler *s = w->s;
    w->serving = true;
    ac__timers_serve(timers_of(s), woke_for);
    w->serving = false;
    /* acq_rel, as in find_work. */
    ac__actor *a = atomic_exchange_explicit(&w->runnext, NULL, memory_order_acq_rel);
    /* seq_cst: the ring's half of the handshake with a sound sleeper, as in
     * push_local. */
    if (ac__ring_len(w) > 0 &&
        atomic_fetch_add_explicit(&s->nparked_sound, 0, memory_order_seq_cst) > 0)
        ac__wake_sound_sleeper(s);
    return a;
}

typedef struct work_search {
    ac__worker *w;
    ac__actor *found;
} work_search;

/* While spinning, a timer that falls due is fired here, on this thread
 * (its message then comes to this worker's own runnext). */
static bool found_work(void *arg)
{
    work_search *ws = arg;
    ac__timers *t = timers_of(ws->w->s);
    if (t && ac__timers_due_now(t, ac__now_ns()) && (ws->found = serve_timers(ws->w, 0)))
        return true;
    return (ws->found = find_work(ws->w)) != NULL;
}

/* Spin for up to SPIN_NS looking for work before parking: work that
 * arrives within that time (the next request of a caller waiting on an
 * answer, the actors a handler just woke) is taken without a wake-up.
 * The spin is the one an ask's waiter uses (core/sync.h); the parking
 * after it is the scheduler's own, bound to nspinning and nparked. */
static ac__actor *spin_for_work(ac__worker *w)
{
    ac__scheduler *s = w->s;
    work_search ws = {.w = w};
    /* seq_cst: pairs with the read-modify-writes in ac__wake_one_if_idle. */
    atomic_fetch_add_explicit(&s->nspinning, 1, memory_order_seq_cst);
    ac__spin_until(found_work, &ws, SPIN_NS, SPIN_PURE_NS);
    /* A push to the injection list that saw us spinning woke no one: we
     * were to take it. We take one actor; if more were injected, and no
     * other worker spins, wake one for them, or they would wait for the
     * end of our next turn, however long. seq_cst, the decrement and the
     * load: against ac__inject_push's increment and ac__wake_one_if_idle's read
     * of nspinning (either the pusher sees no spinner and wakes, or we
     * see what it pushed). */
    int others = atomic_fetch_sub_explicit(&s->nspinning, 1, memory_order_seq_cst) - 1;
    if (ws.found && others == 0 && atomic_load_explicit(&s->inject_len, memory_order_seq_cst) > 0)
        ac__wake_one_if_idle(s);
    return ws.found;
}

void *ac__worker_main(void *arg)
{
    ac__worker *w = arg;
    ac__scheduler *s = w->s;
    ac__tls_worker = w;
    ac__thread_name("ac-worker-%d", w->index);
#ifdef __linux__
    /* A watcher's sleep ends a margin before a timer's deadline: without
     * slack (the kernel's default adds 50 us to every timed sleep). Best
     * effort. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    bool napped = false;
    /* Acquire pairs with ac__scheduler_stop's release store. */
    while (!atomic_load_explicit(&s->stopping, memory_order_acquire)) {
        ac__actor *a = find_work(w);
        if (!a && !napped) /* after a fruitless nap, nap again without spinning */
            a = spin_for_work(w);
        if (!a) {
            ac__alloc_flush_if_asked(); /* idle now: a moment to give back */
            uint64_t woke_for, claim;
            park_outcome p = park(w, &woke_for, &claim);
            if (p == PARK_TIMER) {
                a = serve_timers(w, woke_for);
                release_watch(s, claim);
            }
            napped = p == PARK_NAPPED;
            if (!a)
                continue;
        }
        napped = false;
        atomic_fetch_add_explicit(&w->turns, 1, memory_order_relaxed);
        /* `busy` is a hint for parking workers (nap or sleep); the wake-up
         * guarantee rests on runnext and nparked_sound, so relaxed. */
        atomic_store_explicit(&w->busy, true, memory_order_relaxed);
        ac__actor_turn(a, s->batch);
        /* After the turn, not in it: the credit is held references, so the
         * actor is alive even when the turn has let go of it. */
        ac__self_credit_flush();
        atomic_store_explicit(&w->busy, false, memory_order_relaxed);
        /* More runnable actors than the one we will take next: share. */
        if (w->wake_pending) {
            w->wake_pending = false;
            if (ac__ring_len(w) >= WAKE_RING_LEN)
                ac__wake_one_if_idle(s);
        }
    }
    ac__tls_worker = NULL;
    return NULL;
}
