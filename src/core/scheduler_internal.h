/*
 * What the scheduler's two files share: scheduler.c (pushing, the
 * lifecycle) and worker.c (a worker's loop: finding work, stealing,
 * spinning, parking). The worker and scheduler structs and the run queues
 * (a worker's ring and runnext, the injection list) with the wake-ups of
 * idle workers. The push and the worker's loop are the hot path, so these
 * are static in each file that uses them (AC__MODULE_STATIC), compiled as
 * when they were static functions of one file: no call across files.
 * Which thread may call what is said at each function; the design is at
 * the top of scheduler.c.
 */
#ifndef AC_CORE_SCHEDULER_INTERNAL_H
#define AC_CORE_SCHEDULER_INTERNAL_H

#include "core/cell.h"
#include "core/scheduler.h"
#include "core/sync.h"

#define AC__RING_SIZE 256u /* power of two */

struct ac__worker {
    /* Consumers (owner and thieves) CAS head; only the owner writes tail,
     * runnext is exchanged by both. */
    _Alignas(AC__CACHELINE) _Atomic uint32_t head;
    _Atomic uint32_t tail;
    _Atomic(ac__actor *) runnext;
    atomic_uint_fast64_t turns; /* owner increments per turn */
    atomic_bool busy;           /* owner: in a turn */
    _Atomic(ac__actor *) ring[AC__RING_SIZE];
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
AC__MODULE_STATIC bool ac__ring_push(ac__worker *w, ac__actor *a, bool *was_empty)
{
    /* Acquire pairs with consumers' CAS on head: their read of the slot we
     * are about to reuse is done. */
    uint32_t h = atomic_load_explicit(&w->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
    *was_empty = t == h;
    if (t - h >= AC__RING_SIZE)
        return false;
    atomic_store_explicit(&w->ring[t & (AC__RING_SIZE - 1)], a, memory_order_relaxed);
    /* Release publishes the slot to consumers' acquire load of tail. */
    atomic_store_explicit(&w->tail, t + 1, memory_order_release);
    return true;
}

/* Owner or thief. Acquire loads of head and tail pair with the CAS of
 * other consumers and ac__ring_push's release store of tail; the acq_rel CAS
 * with the other consumers' CAS and ac__ring_push's acquire load of head. */
AC__MODULE_STATIC ac__actor *ac__ring_pop(ac__worker *w)
{
    uint32_t h = atomic_load_explicit(&w->head, memory_order_acquire);
    for (;;) {
        uint32_t t = atomic_load_explicit(&w->tail, memory_order_acquire);
        if (t == h)
            return NULL;
        ac__actor *a =
            atomic_load_explicit(&w->ring[h & (AC__RING_SIZE - 1)], memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&w->head, &h, h + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return a;
    }
}

/* Actors queued in w's ring (a snapshot; seq_cst for park's handshake). */
AC__MODULE_STATIC uint32_t ac__ring_len(ac__worker *w)
{
    return atomic_load_explicit(&w->tail, memory_order_seq_cst) -
           atomic_load_explicit(&w->head, memory_order_seq_cst);
}

/* ---- the injection list ----------------------------------------------- */

AC__MODULE_STATIC void ac__inject_push(ac__scheduler *s, ac__actor *a)
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

AC__MODULE_STATIC ac__actor *ac__inject_pop(ac__scheduler *s)
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

/* ---- waking idle workers ---------------------------------------------- */

AC__MODULE_STATIC void ac__wake_one_if_idle(ac__scheduler *s)
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
AC__MODULE_STATIC void ac__wake_sound_sleeper(ac__scheduler *s)
{
    pthread_mutex_lock(&s->park_lock);
    pthread_cond_signal(&s->park_cond);
    pthread_mutex_unlock(&s->park_lock);
}

/* The worker thread's body (worker.c). */
void *ac__worker_main(void *arg);

#endif
