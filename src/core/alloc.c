/*
 * Small-object caches for the hot path: messages and envelopes.
 *
 * A tell allocates a message on the sender's thread and the receiver frees
 * it, often thousands at a time. glibc's per-thread cache holds only a few
 * blocks per size, so bursts fall through to its slower paths. Here each
 * thread keeps a free list per size class (64, 128, 192, 256 bytes). A list
 * that grows past its cap hands a batch of blocks to a process-wide depot;
 * an empty list takes a batch back. So blocks flow from the threads that
 * free them to the threads that allocate them, one mutex acquisition per
 * batch rather than per block.
 *
 * When a thread exits, its lists go to the depot (a pthread key
 * destructor). When the last system terminates, the depot and the calling
 * thread's lists are given back to malloc (ac__alloc_trim), so a program
 * that is done with actorc holds none of its memory. Under AddressSanitizer the caches are off, so that every
 * block goes through malloc/free and use-after-free stays detectable.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/base.h"

#if defined(__SANITIZE_ADDRESS__)
#define AC__NO_CACHE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AC__NO_CACHE 1
#endif
#endif

#ifdef AC__NO_CACHE

void *ac__alloc_small(size_t size) { return ac__malloc(size); }
void ac__free_small(void *p, size_t size)
{
    (void)size;
    free(p);
}
void ac__alloc_trim(void) {}
void ac__alloc_request_flush(void) {}
void ac__alloc_flush_if_asked(void) {}

#else

#define CLASSES 4
#define BATCH 256
#define CAP (4 * BATCH)

typedef struct block {
    struct block *next;
} block;

/* A batch of BATCH blocks, linked through their first word; batches are
 * linked through their first block's second word. */
typedef struct batch {
    block *head;
    struct batch *next;
} batch;

typedef struct thread_cache {
    block *free[CLASSES];
    unsigned count[CLASSES];
    /* The block freed when the list reached CAP - BATCH + 1, while only
     * frees have happened since: the BATCH blocks from the top down to it
     * are the next batch to hand over, found without a walk. NULL once an
     * allocation has taken from the list. */
    block *spill_mark[CLASSES];
    bool registered;
} thread_cache;

static const size_t class_size[CLASSES] = {64, 128, 192, 256};

/* initial-exec: the cache is read on every allocation; the default model
 * for position-independent code reaches it through a call, which also
 * makes the fast paths save registers. */
static _Thread_local thread_cache cache AC__TLS_FAST;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
static pthread_mutex_t depot_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP; /* see sync.c */
#else
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
static batch *depot[CLASSES]; /* under depot_lock */

/* Branch-free but for the size limit: the fast paths stay short. */
static inline int class_of(size_t size)
{
    return size <= 256 ? (size > 64) + (size > 128) + (size > 192) : -1;
}

static void depot_put(int c, block *head)
{
    batch *b = (batch *)head; /* reuse the first block as the batch record */
    b->head = head->next;     /* the rest of the chain */
    pthread_mutex_lock(&depot_lock);
    b->next = depot[c];
    depot[c] = b;
    pthread_mutex_unlock(&depot_lock);
}

/* Take one batch: returns its blocks as a chain (the batch record's block
 * included), or NULL. */
static block *depot_take(int c)
{
    pthread_mutex_lock(&depot_lock);
    batch *b = depot[c];
    if (b)
        depot[c] = b->next;
    pthread_mutex_unlock(&depot_lock);
    if (!b)
        return NULL;
    block *first = (block *)b;
    first->next = b->head;
    return first;
}

static void flush_class(thread_cache *tc, int c)
{
    tc->spill_mark[c] = NULL;
    while (tc->free[c]) {
        block *head = tc->free[c];
        block *tail = head;
        unsigned n = 1;
        while (tail->next && n < BATCH) {
            tail = tail->next;
            n++;
        }
        tc->free[c] = tail->next;
        tail->next = NULL;
        tc->count[c] -= n;
        depot_put(c, head);
    }
}

/* Asked for by ac__alloc_request_flush; the epoch each thread last
 * answered. */
static atomic_uint flush_epoch;
static _Thread_local unsigned flushed_epoch;

void ac__alloc_request_flush(void)
{
    atomic_fetch_add_explicit(&flush_epoch, 1, memory_order_relaxed);
}

void ac__alloc_flush_if_asked(void)
{
    unsigned e = atomic_load_explicit(&flush_epoch, memory_order_relaxed);
    if (AC__LIKELY(e == flushed_epoch))
        return;
    flushed_epoch = e;
    for (int c = 0; c < CLASSES; c++)
        flush_class(&cache, c);
}

static void thread_exit(void *unused)
{
    (void)unused;
    for (int c = 0; c < CLASSES; c++)
        flush_class(&cache, c);
}

static bool have_key; /* written once, under cache_once */

static void make_key(void) { have_key = pthread_key_create(&cache_key, thread_exit) == 0; }

/* False when the thread's lists could not be given back at its exit (no
 * key could be had): the caller then goes straight to malloc/free rather
 * than cache blocks it would lose. */
static bool register_thread(thread_cache *tc)
{
    pthread_once(&cache_once, make_key);
    if (!have_key || pthread_setspecific(cache_key, tc) != 0)
        return false;
    tc->registered = true;
    return true;
}

/* The list of class c is empty: take a batch from the depot, or malloc.
 * Apart from the fast path, so that the fast path is a leaf that saves
 * no registers. */
static AC__NOINLINE void *alloc_refill(thread_cache *tc, int c)
{
    if (!tc->registered && !register_thread(tc))
        return malloc(class_size[c]);
    block *b = depot_take(c);
    if (!b)
        return malloc(class_size[c]);
    tc->free[c] = b->next;
    tc->count[c] = BATCH - 1;
    tc->spill_mark[c] = NULL;
    return b;
}

void *ac__alloc_small(size_t size)
{
#ifdef AC__ALLOC_HOOK
    if (ac__alloc_should_fail())
        return NULL;
#endif
    int c = class_of(size);
    if (AC__UNLIKELY(c < 0))
        return malloc(size);
    thread_cache *tc = &cache;
    block *b = tc->free[c];
    if (AC__UNLIKELY(!b))
        return alloc_refill(tc, c);
    tc->free[c] = b->next;
    tc->count[c]--;
    tc->spill_mark[c] = NULL;
    return b;
}

/* The list is at CAP: hand a batch to the depot. A receiver that only
 * frees (the common case: messages flow one way) hands over the newest
 * BATCH blocks in O(1); otherwise the oldest ones after a walk, keeping
 * the warmest. */
static void spill(thread_cache *tc, int c)
{
    block *top = tc->free[c], *mark = tc->spill_mark[c];
    tc->spill_mark[c] = NULL;
    tc->count[c] = CAP - BATCH;
    if (mark) {
        tc->free[c] = mark->next;
        mark->next = NULL;
        depot_put(c, top);
        return;
    }
    block *keep_tail = top;
    for (unsigned i = 1; i < CAP - BATCH; i++)
        keep_tail = keep_tail->next;
    block *rest = keep_tail->next;
    keep_tail->next = NULL;
    depot_put(c, rest);
}

/* The list just reached CAP - BATCH + 1 or CAP (or the thread is not
 * registered yet): mark the next batch, or hand it over. */
static AC__NOINLINE void free_slow(thread_cache *tc, int c, block *b, unsigned n)
{
    if (!tc->registered && !register_thread(tc)) {
        /* Lists this thread could not give back at its exit: no caching. */
        tc->free[c] = b->next;
        tc->count[c]--;
        free(b);
        return;
    }
    if (n == CAP - BATCH + 1)
        tc->spill_mark[c] = b;
    else if (n >= CAP)
        spill(tc, c);
}

void ac__free_small(void *p, size_t size)
{
    int c = class_of(size);
    if (AC__UNLIKELY(c < 0 || !p)) {
        free(p);
        return;
    }
    thread_cache *tc = &cache;
    block *b = p;
    b->next = tc->free[c];
    tc->free[c] = b;
    unsigned n = ++tc->count[c];
    if (AC__UNLIKELY(n == CAP - BATCH + 1 || n >= CAP || !tc->registered))
        free_slow(tc, c, b, n);
}

static void free_chain(block *b)
{
    while (b) {
        block *next = b->next;
        free(b);
        b = next;
    }
}

void ac__alloc_trim(void)
{
    for (int c = 0; c < CLASSES; c++) {
        free_chain(cache.free[c]);
        cache.free[c] = NULL;
        cache.count[c] = 0;
        cache.spill_mark[c] = NULL;
        pthread_mutex_lock(&depot_lock);
        batch *b = depot[c];
        depot[c] = NULL;
        pthread_mutex_unlock(&depot_lock);
        while (b) {
            batch *next = b->next;
            free_chain(b->head);
            free(b);
            b = next;
        }
    }
}

#endif
