/*
 * Hazard pointers with an asymmetric barrier (hazard.c): lets any thread
 * read an object published through an atomic pointer without a lock and
 * without a locked instruction, while the one thread that replaces it
 * learns when the old one may be freed.
 *
 * A reader announces the pointer it is about to use in a slot of its own
 * thread's record, then checks that it is still the published one; it
 * clears the slot when done. The writer swaps the pointer, then runs a
 * heavy barrier (membarrier(2): every running thread of the process
 * passes a full memory barrier) and scans every record: an old object
 * that no slot names can be freed. So the reader pays a plain store and a
 * compiler barrier, the writer (rare: a router's set changes) a system
 * call. Where membarrier is not available, and under ThreadSanitizer
 * (which does not model it), readers announce with a sequentially
 * consistent exchange instead: correct, slower.
 *
 * Records are per thread, made on a thread's first use, and reused once
 * the thread has exited; a thread has AC__HAZARD_DEPTH slots, for reads
 * nested that deep (a router whose routee is a router).
 */
#ifndef AC_CORE_HAZARD_H
#define AC_CORE_HAZARD_H

#include "core/base.h"

#define AC__HAZARD_DEPTH 4

#if defined(__SANITIZE_THREAD__)
#define AC__HAZARD_FENCED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AC__HAZARD_FENCED 1
#endif
#endif
#ifndef AC__HAZARD_FENCED
#define AC__HAZARD_FENCED 0
#endif

typedef struct ac__hazard_rec {
    _Atomic(const void *) slot[AC__HAZARD_DEPTH];
    unsigned depth;          /* its thread's only */
    atomic_bool in_use;      /* by a live thread */
    struct ac__hazard_rec *next; /* the global list: records are never freed */
} ac__hazard_rec;

extern _Thread_local ac__hazard_rec *ac__hazard_tls AC__TLS_FAST;
/* Readers announce with an exchange (no usable membarrier, or TSan). */
extern bool ac__hazard_fenced;

/* This thread's record, made or reused on first use; NULL when out of
 * memory. */
ac__hazard_rec *ac__hazard_rec_get(void);

/* The object published at *src in *out (NULL: none published),
 * protected until ac__hazard_leave, which takes the record returned. NULL
 * when it cannot be protected (out of memory, or nested deeper than
 * AC__HAZARD_DEPTH): the caller must not read *src's object then. */
static inline ac__hazard_rec *ac__hazard_enter(_Atomic(void *) *src, void **out)
{
    ac__hazard_rec *r = ac__hazard_tls;
    if (AC__UNLIKELY(!r) && !(r = ac__hazard_rec_get()))
        return NULL;
    unsigned d = r->depth;
    if (AC__UNLIKELY(d >= AC__HAZARD_DEPTH))
        return NULL;
    void *p = atomic_load_explicit(src, memory_order_relaxed);
    for (;;) {
        if (AC__HAZARD_FENCED || ac__hazard_fenced) {
            atomic_exchange_explicit(&r->slot[d], p, memory_order_seq_cst);
        } else {
            atomic_store_explicit(&r->slot[d], p, memory_order_relaxed);
            /* The writer's membarrier orders this store before the load. */
            atomic_signal_fence(memory_order_seq_cst);
        }
        /* acquire: the object's contents, published by the writer's swap. */
        void *q = atomic_load_explicit(src, memory_order_acquire);
        if (q == p)
            break;
        p = q;
    }
    r->depth = d + 1;
    *out = p;
    return r;
}

/* Done with what the last ac__hazard_enter, which returned r, gave. */
static inline void ac__hazard_leave(ac__hazard_rec *r)
{
    unsigned d = --r->depth;
    /* release: our reads of the object before the writer sees it free. */
    atomic_store_explicit(&r->slot[d], NULL, memory_order_release);
}

/* The writer, after swapping a pointer out: make every reader's
 * announcement visible (the heavy barrier). Then ac__hazard_held. */
void ac__hazard_barrier(void);
/* Does any thread's slot name p? After ac__hazard_barrier. */
bool ac__hazard_held(const void *p);
/* The last system has terminated: give the records of exited threads
 * and the caller's back to malloc (as ac__alloc_trim). */
void ac__hazard_trim(void);

#endif
