/*
 * The small-object caches (src/core/alloc.c), white-box: size classes;
 * a free list that reaches its cap spilling a batch to the depot, by the
 * spill_mark fast path (only frees since the mark: the newest batch) and
 * by the walk (the oldest batch); blocks freed on one thread allocated on
 * another after the first exits; trim giving everything back to malloc.
 *
 * Each case starts from ac__alloc_trim, which empties the depot and this
 * thread's lists, and uses fresh threads, whose lists start empty. Under
 * AddressSanitizer the caches are compiled out: the cases are skipped.
 */
#define _POSIX_C_SOURCE 200809L

#include <malloc.h>

#include "ts_test.h"

#include "core/internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define NO_CACHE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_CACHE 1
#endif
#endif
#ifndef NO_CACHE
#define NO_CACHE 0
#endif

/* ThreadSanitizer brings its own malloc, which mallinfo2 does not see. */
#if defined(__SANITIZE_THREAD__)
#define OWN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OWN_MALLOC 1
#endif
#endif
#ifndef OWN_MALLOC
#define OWN_MALLOC 0
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* The cache's shape, as alloc.c has it. */
#define BATCH 256
#define CAP (4 * BATCH)

static void skip_without_cache(void)
{
    if (NO_CACHE) {
        skip();
    }
}

/* Run fn(arg) on a fresh thread and wait for it (its lists go to the depot
 * when it exits). */
static void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

typedef struct blocks {
    void **p;
    size_t n;
    size_t size;
} blocks;

static void *alloc_into(void *arg)
{
    blocks *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        b->p[i] = ac__alloc_small(b->size);
    }
    return NULL;
}

static void *free_all(void *arg)
{
    blocks *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        ac__free_small(b->p[i], b->size);
    }
    return NULL;
}

static bool contains(void *const *set, size_t n, const void *p)
{
    for (size_t i = 0; i < n; i++) {
        if (set[i] == p) {
            return true;
        }
    }
    return false;
}

/* ---- size classes ------------------------------------------------------- */

static void *size_classes(void *unused)
{
    (void)unused;
    void *p = ac__alloc_small(1);
    memset(p, 0xab, 64); /* a block of the 64-byte class */
    ac__free_small(p, 1);
    void *q = ac__alloc_small(64); /* same class: the block just freed */
    void *r = ac__alloc_small(65); /* the 128-byte class: another */
    memset(r, 0xcd, 128);
    void *big = ac__alloc_small(257); /* beyond the classes: plain malloc */
    memset(big, 0xef, 257);
    ac__free_small(big, 257);
    ac__free_small(r, 65);
    void *r2 = ac__alloc_small(128);
    bool ok = q == p && r != p && r2 == r;
    ac__free_small(q, 64);
    ac__free_small(r2, 128);
    return ok ? (void *)1 : NULL;
}

static void test_size_classes(void **state)
{
    (void)state;
    skip_without_cache();
    ac__alloc_trim();
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, size_classes, NULL), 0);
    assert_int_equal(pthread_join(t, &ok), 0);
    assert_non_null(ok);
    ac__free_small(NULL, 64); /* NULL is accepted */
    ac__alloc_trim();
}

/* ---- spilling ----------------------------------------------------------- */

/* The depot's next batch, taken by a fresh thread: BATCH blocks, then one
 * more (from malloc, as the depot is empty by then). */
static void take_batch(void **out, size_t size)
{
    blocks b = {out, BATCH + 1, size};
    on_thread(alloc_into, &b);
}

static void test_spill_mark_fast_path(void **state)
{
    (void)state;
    skip_without_cache();
    ac__alloc_trim();
    void **p = calloc(CAP, sizeof *p);
    void **got = calloc(BATCH + 1, sizeof *got);
    assert_non_null(p);
    assert_non_null(got);
    for (size_t i = 0; i < CAP; i++) {
        p[i] = ac__alloc_small(64);
    }
    /* Only frees: at CAP, the newest BATCH (p[CAP-1] down to p[CAP-BATCH])
     * leave, without a walk, as one batch. */
    for (size_t i = 0; i < CAP; i++) {
        ac__free_small(p[i], 64);
    }
    take_batch(got, 64);
    for (size_t i = 0; i < BATCH; i++) {
        assert_ptr_equal(got[i], p[CAP - 1 - i]);
    }
    assert_false(contains(p, CAP, got[BATCH]));
    /* This thread kept the older ones, newest on top. */
    void *mine = ac__alloc_small(64);
    assert_ptr_equal(mine, p[CAP - BATCH - 1]);
    ac__free_small(mine, 64);
    blocks b = {got, BATCH + 1, 64};
    free_all(&b);
    ac__alloc_trim();
    free(got);
    free(p);
}

static void test_spill_by_walk(void **state)
{
    (void)state;
    skip_without_cache();
    ac__alloc_trim();
    void **p = calloc(CAP, sizeof *p);
    void **got = calloc(BATCH + 1, sizeof *got);
    assert_non_null(p);
    assert_non_null(got);
    for (size_t i = 0; i < CAP; i++) {
        p[i] = ac__alloc_small(128);
    }
    for (size_t i = 0; i < 800; i++) {
        ac__free_small(p[i], 128);
    }
    /* An allocation in between clears the mark: at CAP the list is walked
     * and the oldest BATCH leave, the warm ones stay. */
    void *again = ac__alloc_small(128);
    assert_ptr_equal(again, p[799]);
    ac__free_small(again, 128);
    for (size_t i = 800; i < CAP; i++) {
        ac__free_small(p[i], 128);
    }
    take_batch(got, 128);
    for (size_t i = 0; i < BATCH; i++) {
        assert_ptr_equal(got[i], p[BATCH - 1 - i]);
    }
    assert_false(contains(p, CAP, got[BATCH]));
    void *mine = ac__alloc_small(128);
    assert_ptr_equal(mine, p[CAP - 1]);
    ac__free_small(mine, 128);
    blocks b = {got, BATCH + 1, 128};
    free_all(&b);
    ac__alloc_trim();
    free(got);
    free(p);
}

/* ---- across threads ------------------------------------------------------ */

static void test_cross_thread_free_then_alloc(void **state)
{
    (void)state;
    skip_without_cache();
    ac__alloc_trim();
    enum { N = 300 }; /* more than a batch: leaves as two */
    void *a[N], *c[N];
    blocks ba = {a, N, 256};
    on_thread(alloc_into, &ba); /* allocated on one thread ... */
    on_thread(free_all, &ba);   /* ... freed on another, which exits */
    blocks bc = {c, N, 256};
    on_thread(alloc_into, &bc); /* a third gets them all back */
    for (size_t i = 0; i < N; i++) {
        if (!contains(a, N, c[i])) {
            fail_msg("block %zu did not come from the freeing thread", i);
        }
        for (size_t j = 0; j < i; j++) {
            assert_true(c[j] != c[i]);
        }
    }
    on_thread(free_all, &bc);
    ac__alloc_trim();
}

/* ---- trim ---------------------------------------------------------------- */

static void test_trim_gives_back(void **state)
{
    (void)state;
    skip_without_cache();
    ac__alloc_trim();
    enum { N = 2000 };
    void **p = calloc(N, sizeof *p);
    assert_non_null(p);
    blocks b = {p, N, 200};
    on_thread(alloc_into, &b);
    on_thread(free_all, &b); /* N blocks now cached in the depot */
    for (size_t i = 0; i < 100; i++) {
        ac__free_small(ac__alloc_small(64), 64); /* and some on this thread */
    }
    if (OWN_MALLOC || RUNNING_ON_VALGRIND) {
        /* mallinfo2 sees nothing there; a leak check covers it */
        ac__alloc_trim();
        free(p);
        return;
    }
    struct mallinfo2 before = mallinfo2();
    ac__alloc_trim();
    struct mallinfo2 after = mallinfo2();
    if (before.uordblks - after.uordblks < (size_t)N * 256) {
        fail_msg("trim gave back %zu bytes, expected at least %zu",
                 before.uordblks - after.uordblks, (size_t)N * 256);
    }
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_classes),
        cmocka_unit_test(test_spill_mark_fast_path),
        cmocka_unit_test(test_spill_by_walk),
        cmocka_unit_test(test_cross_thread_free_then_alloc),
        cmocka_unit_test(test_trim_gives_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
