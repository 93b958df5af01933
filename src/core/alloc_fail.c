/*
 * Allocation-failure injection, for tests of the out-of-memory paths.
 *
 * Only in builds without NDEBUG (the sanitizer builds): a countdown that
 * every allocation through core/alloc.h decrements while it is armed; the
 * allocation that takes it from 1 to 0 fails. A count of allocations,
 * kept only between ac__alloc_count_start and _stop, sizes a sweep. Relaxed atomics suffice:
 * the count orders nothing else, and a test arms it before the calls it
 * watches, on the same thread or before starting the others.
 */
#include "core/alloc.h"

#ifdef AC__ALLOC_HOOK

#include <stdatomic.h>

static atomic_long countdown; /* 0: disarmed */
static atomic_long allocations;
static atomic_bool counting;
/* Armed or counting: until a test asks, an allocation pays one load of a
 * line nobody writes, not a read-modify-write of a shared counter. */
static atomic_bool active;

static void update_active(void)
{
    atomic_store_explicit(&active,
                          atomic_load_explicit(&counting, memory_order_relaxed) ||
                              atomic_load_explicit(&countdown, memory_order_relaxed) > 0,
                          memory_order_relaxed);
}

bool ac__alloc_should_fail(void)
{
    if (!atomic_load_explicit(&active, memory_order_relaxed))
        return false;
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    long n = atomic_load_explicit(&countdown, memory_order_relaxed);
    while (n > 0 && !atomic_compare_exchange_weak_explicit(&countdown, &n, n - 1,
                                                           memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
    return n == 1;
}

void ac__alloc_fail_after(long n)
{
    atomic_store_explicit(&countdown, n > 0 ? n : 0, memory_order_relaxed);
    update_active();
}

void ac__alloc_count_start(void)
{
    atomic_store_explicit(&allocations, 0, memory_order_relaxed);
    atomic_store_explicit(&counting, true, memory_order_relaxed);
    update_active();
}

long ac__alloc_count_stop(void)
{
    atomic_store_explicit(&counting, false, memory_order_relaxed);
    update_active();
    return atomic_load_explicit(&allocations, memory_order_relaxed);
}

#else

typedef int ac__alloc_fail_unused; /* ISO C wants a translation unit to declare something */

#endif
