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
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/internal.h"
#include "core/scheduler_internal.h"
#include "core/sync.h"

_Thread_local ac__worker *ac__tls_worker AC__TLS_FAST;

/* ---- pushing ---------------------------------------------------------- */

/* Worker threads only. Whether to wake an idle worker to share the ring is
 * decided when the current turn ends (see ac__worker_main), not per push: a
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
    if (!ac__ring_push(w, a, &was_empty)) {
        ac__inject_push(w->s, a);
        ac__wake_one_if_idle(w->s);
        return;
    }
    w->wake_pending = true;
    /* A read-modify-write (adding 0) after the push, against the parker's
     * increment of nparked_sound before its look at the rings: either we
     * see the sleeper, or it sees this ring non-empty and naps. */
    if (was_empty && !displaced_from_runnext &&
        atomic_fetch_add_explicit(&w->s->nparked_sound, 0, memory_order_seq_cst) > 0)
        ac__wake_sound_sleeper(w->s);
}

int ac__worker_index_in(const ac_system *system)
{
    ac__worker *w = ac__tls_worker;
    return w && w->s->system == system ? w->index : -1;
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
            /* seq_cst, with the load of nparked_sound: see ac__wake_sound_sleeper. */
            ac__actor *old = atomic_exchange_explicit(&w->runnext, a, memory_order_seq_cst);
            if (old)
                push_local(w, old, true);
            else if (atomic_load_explicit(&s->nparked_sound, memory_order_seq_cst) > 0)
                ac__wake_sound_sleeper(s);
            return;
        }
        push_local(w, a, false);
        return;
    }
    ac__inject_push(s, a);
    ac__wake_one_if_idle(s);
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
        int rc = pthread_create(&s->workers[i].thread, NULL, ac__worker_main, &s->workers[i]);
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
        while ((a = ac__ring_pop(w)))
            release_queued(a);
    }
    ac__actor *a;
    while ((a = ac__inject_pop(s)))
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
