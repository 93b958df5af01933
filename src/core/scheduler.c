/*
 * The scheduler: N worker threads running actor turns.
 *
 * Each worker owns a bounded FIFO ring of runnable actors (only the owner
 * pushes; the owner and thieves pop by CAS on `head`) and a one-slot
 * `runnext`. An actor woken by a send from inside a handler goes to the
 * sender's `runnext`, so a request/reply volley stays on one core and in
 * its cache; the actor it displaces, and every actor requeued after a full
 * batch, goes to the tail of the ring, which keeps turns fair. Threads that
 * are not workers push into a global injection list. An idle worker steals
 * from another's ring only when that ring is long (STEAL_MIN_LEN) or its
 * owner has been stuck in the same turn for a while (then its `runnext`
 * too): a few small turns are done sooner on the core that queued them
 * than moved, with their messages' cache lines, to another.
 *
 * Idle workers spin briefly, then park on a condition variable. Lost
 * wake-ups are excluded by a Dekker-style handshake: a pusher publishes the
 * actor, then reads `nspinning`/`nparked` with read-modify-writes; a
 * parking worker increments `nparked` and only then re-checks every queue.
 * So either the pusher sees the parked worker and signals it, or the
 * worker sees the actor.
 *
 * `runnext` pushes do not wake a napping worker: the pushing worker will
 * run that actor as soon as its current turn ends, and waking another core
 * per message would ruin a request/reply volley. Instead, a parked worker
 * naps in 1 ms slices (rather than sleeping until signalled) while another
 * worker is in a turn or has anything queued (its `runnext` or its ring);
 * at each nap's end it looks for work, and takes a `runnext` or a ring
 * entry whose owner has not finished a turn since it last looked. So a
 * handler that runs long strands what queues behind it for about 2-3 ms at
 * most, and an idle system sleeps for good. A worker sleeps for good
 * (nparked_sound) only when it saw every queue empty; the push that makes
 * a `runnext` or a ring non-empty again wakes it, and it naps instead.
 * Without that second wake-up an actor queued in a ring while its owner
 * was between turns (a requeue after a full batch, a timer fired on a
 * worker) would wait for the owner's next turn to end, however long.
 *
 * Timers. A worker that parks while a timer is armed may become the
 * system's watcher (one at a time, ac__timers_claim_watch): its sleep,
 * sound or nap, ends a margin before the earliest deadline, and it then
 * fires the due timers itself (serve_timers), the first actor they wake
 * landing in its runnext and running at once, without a wake-up of any
 * other thread. A spinning worker fires what falls due while it spins.
 * See timers.c for the why.
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
#include "core/internal.h"
#include "core/sync.h"

#define RING_SIZE 256u /* power of two */
#define SPIN_NS 100000ull /* how long an idle worker looks for work before parking */
#define SPIN_PURE_NS 5000ull /* of which without yielding the core */
#define WAKE_RING_LEN STEAL_MIN_LEN /* ring length after a turn that wakes an idle worker */
#define STUCK_NS 1000000ull /* a worker in one turn this long is stuck: steal from it */
#define STEAL_MIN_LEN 8 /* a ring this long is worth sharing whatever its owner does */

_Thread_local ac__worker *ac__tls_worker AC__TLS_FAST;

struct ac__worker {
    /* Consumers (owner and thieves) CAS head; only the owner writes tail,
     * runnext is exchanged by both. */
    _Alignas(AC__CACHELINE) _Atomic uint32_t head;
    _Atomic uint32_t tail;
    _Atomic(ac__actor *) runnext;
    atomic_uint_fast64_t turns; /* owner increments per turn */
    atomic_bool busy;           /* owner: in a turn */
    _Atomic(ac__actor *) ring[RING_SIZE];
    /* Owner only. */
    _Alignas(AC__CACHELINE) ac__scheduler *s;
    int index;
    uint32_t rng;
    uint32_t tick;
    bool wake_pending; /* pushed to the ring during this turn */
    bool serving;      /* firing timers between turns (serve_timers) */
    pthread_t thread;
    uint64_t *seen_turns; /* per victim: turns when its runnext was first seen */
    uint64_t *seen_at;
};

struct ac__scheduler {
    ac_system *system;
    int nworkers, batch;
    int nstarted; /* threads to join */
    ac__worker *workers;

    _Alignas(AC__CACHELINE) pthread_mutex_t inject_lock;
    ac__actor *inject_head, *inject_tail;
    atomic_size_t inject_len;

    _Alignas(AC__CACHELINE) pthread_mutex_t park_lock;
    pthread_cond_t park_cond;
    atomic_int nparked;
    atomic_int nparked_sound; /* parked without a time limit */
    atomic_int nspinning;
    atomic_bool stopping;
};

/* ---- the ring --------------------------------------------------------- */

/* Owner only. False when full; *was_empty tells whether the ring was
 * empty before the push. */
static bool ring_push(ac__worker *w, ac__actor *a, bool *was_empty)
{
    /* Acquire pairs with consumers' CAS on head: their read of the slot we
     * are about to reuse is done. */
    uint32_t h = atomic_load_explicit(&w->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
    *was_empty = t == h;
    if (t - h >= RING_SIZE)
        return false;
    atomic_store_explicit(&w->ring[t & (RING_SIZE - 1)], a, memory_order_relaxed);
    /* Release publishes the slot to consumers' acquire load of tail. */
    atomic_store_explicit(&w->tail, t + 1, memory_order_release);
    return true;
}

/* Owner or thief. Acquire loads of head and tail pair with the CAS of
 * other consumers and ring_push's release store of tail; the acq_rel CAS
 * with the other consumers' CAS and ring_push's acquire load of head. */
static ac__actor *ring_pop(ac__worker *w)
{
    uint32_t h = atomic_load_explicit(&w->head, memory_order_acquire);
    for (;;) {
        uint32_t t = atomic_load_explicit(&w->tail, memory_order_acquire);
        if (t == h)
            return NULL;
        ac__actor *a = atomic_load_explicit(&w->ring[h & (RING_SIZE - 1)], memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&w->head, &h, h + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return a;
    }
}

/* Actors queued in w's ring (a snapshot; seq_cst for park's handshake). */
static uint32_t ring_len(ac__worker *w)
{
    return atomic_load_explicit(&w->tail, memory_order_seq_cst) -
           atomic_load_explicit(&w->head, memory_order_seq_cst);
}

/* ---- the injection list ----------------------------------------------- */

static void inject_push(ac__scheduler *s, ac__actor *a)
{
    a->run_next = NULL;
    pthread_mutex_lock(&s->inject_lock);
    if (s->inject_tail)
        s->inject_tail->run_next = a;
    else
        s->inject_head = a;
    s->inject_tail = a;
    /* seq_cst pairs with any_work's load in park (a Dekker handshake with
     * the parker's increment of nparked). */
    atomic_fetch_add_explicit(&s->inject_len, 1, memory_order_seq_cst);
    pthread_mutex_unlock(&s->inject_lock);
}

static ac__actor *inject_pop(ac__scheduler *s)
{
    if (atomic_load_explicit(&s->inject_len, memory_order_relaxed) == 0)
        return NULL;
    pthread_mutex_lock(&s->inject_lock);
    ac__actor *a = s->inject_head;
    if (a) {
        s->inject_head = a->run_next;
        if (!s->inject_head)
            s->inject_tail = NULL;
        atomic_fetch_sub_explicit(&s->inject_len, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->inject_lock);
    return a;
}

/* ---- parking ---------------------------------------------------------- */

static void wake_one_if_idle(ac__scheduler *s)
{
    /* Read-modify-writes (adding 0), not loads: each is ordered against
     * the spinner's decrement of nspinning and the parker's increment of
     * nparked in those variables' modification order, so either we see
     * the idle worker or it synchronises with us and sees what we pushed. */
    if (atomic_fetch_add_explicit(&s->nspinning, 0, memory_order_seq_cst) > 0 ||
        atomic_fetch_add_explicit(&s->nparked, 0, memory_order_seq_cst) == 0)
        return;
    pthread_mutex_lock(&s->park_lock);
    pthread_cond_signal(&s->park_cond);
    pthread_mutex_unlock(&s->park_lock);
}

/* A worker sleeping for good must nap instead, to watch our runnext. The
 * runnext exchange and our load of nparked_sound, its increment and its
 * second look at runnext, are all seq_cst: either we see it, or it sees
 * our runnext when it looks again. */
static void wake_sound_sleeper(ac__scheduler *s)
{
    pthread_mutex_lock(&s->park_lock);
    pthread_cond_signal(&s->park_cond);
    pthread_mutex_unlock(&s->park_lock);
}

static bool any_work(ac__scheduler *s)
{
    /* What a parking worker could take: the injection list, or a ring long
     * enough to steal from. A shorter ring's owner is awake (it pushed in a
     * turn and drains its ring before parking); a stuck owner is caught by
     * napping (see park). seq_cst: pairs with inject_push's increment. */
    if (atomic_load_explicit(&s->inject_len, memory_order_seq_cst) > 0)
        return true;
    for (int i = 0; i < s->nworkers; i++)
        if (ring_len(&s->workers[i]) >= STEAL_MIN_LEN)
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
            ring_len(&s->workers[i]) > 0)
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
    /* seq_cst: pairs with wake_one_if_idle's read of nparked; acquire of
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

/* ---- pushing ---------------------------------------------------------- */

/* Worker threads only. Whether to wake an idle worker to share the ring is
 * decided when the current turn ends (see worker_main), not per push: a
 * handler that fans out to many actors would otherwise wake a sleeping
 * core per send, and the woken thread can preempt the very worker doing
 * the work. The one exception is a worker that sleeps for good: a push
 * that makes the ring non-empty wakes it, so that it naps and watches this
 * ring (the owner may be about to start a long turn). A push displaced
 * from `runnext` needs no such check: the push that filled `runnext` made
 * it (displaced_from_runnext). */
static void push_local(ac__worker *w, ac__actor *a, bool displaced_from_runnext)
{
    bool was_empty;
    if (!ring_push(w, a, &was_empty)) {
        inject_push(w->s, a);
        wake_one_if_idle(w->s);
        return;
    }
    w->wake_pending = true;
    /* A read-modify-write (adding 0) after the push, against the parker's
     * increment of nparked_sound before its look at the rings: either we
     * see the sleeper, or it sees this ring non-empty and naps. */
    if (was_empty && !displaced_from_runnext &&
        atomic_fetch_add_explicit(&w->s->nparked_sound, 0, memory_order_seq_cst) > 0)
        wake_sound_sleeper(w->s);
}

void ac__scheduler_push(ac__scheduler *s, ac__actor *a, bool fresh)
{
    ac__worker *w = ac__tls_worker;
    if (w && w->s == s) {
        if (w->serving) {
            /* Woken by a timer this worker fires between turns: the first
             * such actor runs next, the others queue behind it in firing
             * order; serve_timers looks after the sleepers. seq_cst, as
             * the exchange below. */
            ac__actor *none = NULL;
            if (!atomic_compare_exchange_strong_explicit(&w->runnext, &none, a,
                                                         memory_order_seq_cst,
                                                         memory_order_seq_cst))
                push_local(w, a, true);
            return;
        }
        if (fresh) {
            /* seq_cst, with the load of nparked_sound: see wake_sound_sleeper. */
            ac__actor *old = atomic_exchange_explicit(&w->runnext, a, memory_order_seq_cst);
            if (old)
                push_local(w, old, true);
            else if (atomic_load_explicit(&s->nparked_sound, memory_order_seq_cst) > 0)
                wake_sound_sleeper(s);
            return;
        }
        push_local(w, a, false);
        return;
    }
    inject_push(s, a);
    wake_one_if_idle(s);
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
    uint32_t len = ring_len(v);
    bool has_runnext = atomic_load_explicit(&v->runnext, memory_order_relaxed) != NULL;
    if (len == 0 && !has_runnext)
        return NULL;
    bool stuck = victim_stuck(w, v);
    ac__actor *a = NULL;
    if (len >= STEAL_MIN_LEN || (len > 0 && stuck))
        a = ring_pop(v);
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
    if ((++w->tick & 63) == 0 && (a = inject_pop(w->s)))
        return a;
    /* acq_rel pairs with the pusher's seq_cst exchange and with thieves'. */
    if ((a = atomic_exchange_explicit(&w->runnext, NULL, memory_order_acq_rel)))
        return a;
    if ((a = ring_pop(w)))
        return a;
    if ((a = inject_pop(w->s)))
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
    if (ring_len(w) > 0 &&
        atomic_fetch_add_explicit(&s->nparked_sound, 0, memory_order_seq_cst) > 0)
        wake_sound_sleeper(s);
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
    /* seq_cst: pairs with the read-modify-writes in wake_one_if_idle. */
    atomic_fetch_add_explicit(&s->nspinning, 1, memory_order_seq_cst);
    ac__spin_until(found_work, &ws, SPIN_NS, SPIN_PURE_NS);
    /* A push to the injection list that saw us spinning woke no one: we
     * were to take it. We take one actor; if more were injected, and no
     * other worker spins, wake one for them, or they would wait for the
     * end of our next turn, however long. seq_cst, the decrement and the
     * load: against inject_push's increment and wake_one_if_idle's read
     * of nspinning (either the pusher sees no spinner and wakes, or we
     * see what it pushed). */
    int others = atomic_fetch_sub_explicit(&s->nspinning, 1, memory_order_seq_cst) - 1;
    if (ws.found && others == 0 && atomic_load_explicit(&s->inject_len, memory_order_seq_cst) > 0)
        wake_one_if_idle(s);
    return ws.found;
}

static void *worker_main(void *arg)
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
            if (ring_len(w) >= WAKE_RING_LEN)
                wake_one_if_idle(s);
        }
    }
    ac__tls_worker = NULL;
    return NULL;
}

/* ---- lifecycle -------------------------------------------------------- */

static ac_status workers_init(ac__scheduler *s)
{
    int workers = s->nworkers;
    for (int i = 0; i < workers; i++) {
        ac__worker *w = &s->workers[i];
        w->s = s;
        w->index = i;
        w->rng = 0x9e3779b9u * (uint32_t)(i + 1);
        w->seen_turns = ac__calloc((size_t)workers, sizeof *w->seen_turns);
        w->seen_at = ac__calloc((size_t)workers, sizeof *w->seen_at);
        if (!w->seen_turns || !w->seen_at)
            return ac__fail(AC_ENOMEM, "ac_system_create: out of memory for %d workers",
                            workers);
        atomic_init(&w->head, 0);
        atomic_init(&w->tail, 0);
        atomic_init(&w->runnext, NULL);
        atomic_init(&w->turns, 0);
        atomic_init(&w->busy, false);
    }
    return AC_OK;
}

static void workers_free(ac__scheduler *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        free(s->workers[i].seen_turns);
        free(s->workers[i].seen_at);
    }
    free(s->workers);
}

ac__scheduler *ac__scheduler_create(ac_system *system, int workers, int batch)
{
    ac__scheduler *s = ac__calloc(1, sizeof *s);
    if (!s)
        return ac__fail_null(AC_ENOMEM, "ac_system_create: out of memory for the scheduler");
    s->system = system;
    s->nworkers = workers;
    s->batch = batch;
    s->workers = ac__aligned_alloc(AC__CACHELINE, sizeof(ac__worker) * (size_t)workers);
    if (!s->workers) {
        ac__fail(AC_ENOMEM, "ac_system_create: out of memory for %d workers", workers);
        goto fail_workers;
    }
    memset(s->workers, 0, sizeof(ac__worker) * (size_t)workers);
    if (workers_init(s) != AC_OK)
        goto fail_worker_state;
    if (ac__mutex_init_hot(&s->inject_lock, "the scheduler's lock") != AC_OK)
        goto fail_worker_state;
    if (ac__mutex_init(&s->park_lock, "the scheduler's parking lock") != AC_OK)
        goto fail_park_lock;
    if (ac__cond_init(&s->park_cond, true, "the scheduler's parking condition") != AC_OK)
        goto fail_park_cond;
    return s;
fail_park_cond:
    pthread_mutex_destroy(&s->park_lock);
fail_park_lock:
    pthread_mutex_destroy(&s->inject_lock);
fail_worker_state:
    workers_free(s);
fail_workers:
    free(s);
    return NULL;
}

int ac__scheduler_start(ac__scheduler *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        int rc = pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]);
        if (rc != 0) {
            ac__scheduler_stop(s); /* joins the ones that started */
            return ac__fail(AC_ESYS, "could not start worker thread %d: %s", i, strerror(rc));
        }
        s->nstarted++;
    }
    return AC_OK;
}

static void release_queued(ac__actor *a)
{
    if (a)
        ac_ref_release(&a->ref);
}

void ac__scheduler_stop(ac__scheduler *s)
{
    /* Release pairs with the workers' acquire loads of stopping. */
    atomic_store_explicit(&s->stopping, true, memory_order_release);
    pthread_mutex_lock(&s->park_lock);
    pthread_cond_broadcast(&s->park_cond);
    pthread_mutex_unlock(&s->park_lock);
    for (int i = 0; i < s->nstarted; i++)
        pthread_join(s->workers[i].thread, NULL);
    s->nstarted = 0;
    /* Single-threaded from here: drop what is still queued. Queued actors
     * are all stopped by now; releasing them may free them. */
    for (int i = 0; i < s->nworkers; i++) {
        ac__worker *w = &s->workers[i];
        release_queued(atomic_exchange_explicit(&w->runnext, NULL, memory_order_relaxed));
        ac__actor *a;
        while ((a = ring_pop(w)))
            release_queued(a);
    }
    ac__actor *a;
    while ((a = inject_pop(s)))
        release_queued(a);
}

void ac__scheduler_destroy(ac__scheduler *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->inject_lock);
    pthread_mutex_destroy(&s->park_lock);
    pthread_cond_destroy(&s->park_cond);
    workers_free(s);
    free(s);
}
