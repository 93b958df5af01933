/*
 * The hop stamps (hop_trace.h): a fixed array filled through one atomic
 * index (stamps beyond it are dropped), written out once at exit. Only in
 * a build with ACTORC_HOP_TRACE; empty otherwise.
 */
#ifdef ACTORC_HOP_TRACE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hop_trace.h"

enum { HOP_MAX = 1 << 21 };

typedef struct hop_stamp {
    int64_t ns;
    uint32_t hop;
    uint32_t tid;
} hop_stamp;

static hop_stamp stamps[HOP_MAX];
static atomic_size_t used;
static _Thread_local uint32_t my_tid;

void ac__hop(enum ac__hop hop)
{
    size_t i = atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
    if (i >= HOP_MAX)
        return;
    if (!my_tid)
        my_tid = (uint32_t)gettid();
    stamps[i] = (hop_stamp){.ns = (int64_t)ac__now_ns(), .hop = (uint32_t)hop, .tid = my_tid};
}

__attribute__((destructor)) static void hop_write(void)
{
    const char *base = getenv("ACTORC_HOP_TRACE");
    size_t n = atomic_load_explicit(&used, memory_order_relaxed);
    if (!base || !n)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", base, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    if (n > HOP_MAX)
        n = HOP_MAX;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%lld %u %u\n", (long long)stamps[i].ns, stamps[i].hop, stamps[i].tid);
    fclose(f);
}
#else
typedef int ac__hop_trace_unused; /* ISO C: a translation unit is not empty */
#endif
