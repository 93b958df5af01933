/*
 * Hazard pointers with an asymmetric barrier. See hazard.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/hazard.h"

_Thread_local ac__hazard_rec *ac__hazard_tls AC__TLS_FAST;
bool ac__hazard_fenced = true; /* until membarrier is known to work */

static _Atomic(ac__hazard_rec *) records;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

static long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

/* A thread exits: its record is free for the next thread. */
static void thread_exit(void *rec)
{
    ac__hazard_rec *r = rec;
    for (unsigned i = 0; i < AC__HAZARD_DEPTH; i++)
        atomic_store_explicit(&r->slot[i], NULL, memory_order_relaxed);
    r->depth = 0;
    atomic_store_explicit(&r->in_use, false, memory_order_release);
}

static void init_once(void)
{
    pthread_key_create(&exit_key, thread_exit);
#ifdef __NR_membarrier
    if (!AC__HAZARD_FENCED && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        ac__hazard_fenced = false; /* written before any thread has a record */
#endif
}

ac__hazard_rec *ac__hazard_rec_get(void)
{
    pthread_once(&once, init_once);
    ac__hazard_rec *r;
    for (r = atomic_load_explicit(&records, memory_order_acquire); r; r = r->next) {
        bool free_rec = false;
        if (atomic_compare_exchange_strong_explicit(&r->in_use, &free_rec, true,
                                                    memory_order_acquire, memory_order_relaxed))
            break;
    }
    if (!r) {
        r = ac__calloc(1, sizeof *r);
        if (!r)
            return NULL;
        atomic_init(&r->in_use, true);
        ac__hazard_rec *head = atomic_load_explicit(&records, memory_order_relaxed);
        do
            r->next = head;
        while (!atomic_compare_exchange_weak_explicit(&records, &head, r, memory_order_release,
                                                      memory_order_relaxed));
    }
    if (pthread_setspecific(exit_key, r) != 0) {
        atomic_store_explicit(&r->in_use, false, memory_order_release);
        return NULL;
    }
    ac__hazard_tls = r;
    return r;
}

void ac__hazard_barrier(void)
{
    pthread_once(&once, init_once);
    /* Fenced readers announce with a seq_cst exchange, which the writer's
     * seq_cst swap and scan are ordered with: nothing more to do. */
    if (!ac__hazard_fenced)
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

bool ac__hazard_held(const void *p)
{
    for (ac__hazard_rec *r = atomic_load_explicit(&records, memory_order_acquire); r; r = r->next)
        for (unsigned i = 0; i < AC__HAZARD_DEPTH; i++)
            if (atomic_load_explicit(&r->slot[i], memory_order_seq_cst) == p)
                return true;
    return false;
}

void ac__hazard_trim(void)
{
    /* No system is left: no thread is inside a read (nothing to read), and
     * none makes a record meanwhile. The records of exited threads and
     * this thread's go back to malloc; a live thread's other than ours
     * stays (it may hold it in its thread-local pointer). */
    ac__hazard_rec *mine = ac__hazard_tls;
    if (mine) {
        ac__hazard_tls = NULL;
        pthread_setspecific(exit_key, NULL);
        atomic_store_explicit(&mine->in_use, false, memory_order_relaxed);
    }
    ac__hazard_rec *keep = NULL;
    ac__hazard_rec *r = atomic_exchange_explicit(&records, NULL, memory_order_acquire);
    while (r) {
        ac__hazard_rec *next = r->next;
        if (atomic_load_explicit(&r->in_use, memory_order_acquire)) {
            r->next = keep;
            keep = r;
        } else {
            free(r);
        }
        r = next;
    }
    atomic_store_explicit(&records, keep, memory_order_release);
}
