/* See bench_util.h. */
#define _POSIX_C_SOURCE 200809L

#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#if __GLIBC_PREREQ(2, 33)
#define HAVE_MALLINFO2 1
#endif
#endif

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

_Noreturn void fail(const char *what)
{
    fprintf(stderr, "VERIFICATION FAILED: %s\n", what);
    fflush(stderr);
    _Exit(2);
}

_Noreturn void die(const char *what)
{
    fprintf(stderr, "ERROR: %s: %s (%s)\n", what, ac_last_error(),
            ac_status_name(ac_last_status()));
    fflush(stderr);
    _Exit(1);
}

void check(ac_status st, const char *what)
{
    if (st != AC_OK)
        die(what);
}

void result(const char *wl, const char *metric, double v, const char *unit)
{
    printf("RESULT %s %s %.6g %s\n", wl, metric, v, unit);
    fflush(stdout);
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n latencies (sorted in place), as the peers'
 * pct(): the value of rank ceil(p/100 * n), at least 1. */
int64_t pct(int64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_i64);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

latency report_latency(const char *wl, int64_t *lat, size_t n, const char *ops)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lat[i];
    latency l = {.p50_us = (double)pct(lat, n, 50) / 1000.0,
                 .p99_us = (double)pct(lat, n, 99) / 1000.0,
                 .per_s = (double)n * 1e9 / (double)total};
    result(wl, "p50", l.p50_us, "us");
    result(wl, "p99", l.p99_us, "us");
    if (ops) {
        char metric[64], unit[64];
        snprintf(metric, sizeof metric, "%s_per_s", ops);
        snprintf(unit, sizeof unit, "%s/s", ops);
        result(wl, metric, l.per_s, unit);
    }
    return l;
}

long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

/* Bytes the heap has handed out and not taken back (malloc's in-use chunks,
 * their headers included, plus mmapped blocks), or -1 without mallinfo2.
 * Unlike RSS it does not depend on whether freed memory is reused. */
long long heap_in_use(void)
{
#ifdef HAVE_MALLINFO2
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
#else
    return -1;
#endif
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "ERROR: out of memory\n");
        _Exit(1);
    }
    return p;
}

uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* ------------------------------------------------------ messages, actors --- */
/* Every failure here ends the run: a benchmark that carried on past a
 * lost message would report a figure for less work than it claims. */

ac_msg *msg_new(const ac_msg_type *type, int nvals, int64_t a, int64_t b)
{
    ac_msg *m = ac_msg_new(type, (size_t)nvals * sizeof(int64_t));
    if (!m)
        die("ac_msg_new");
    if (nvals > 0) {
        int64_t *p = ac_msg_payload(m);
        p[0] = a;
        if (nvals > 1)
            p[1] = b;
    }
    return m;
}

int64_t arg(const ac_msg *m, int i)
{
    return ((const int64_t *)ac_msg_data(m))[i];
}

void tell(ac_ref *to, ac_msg *m, ac_ref *from)
{
    check(ac_tell(to, m, from), "ac_tell");
}

_Noreturn void unexpected(ac_ctx *ctx, const ac_msg *m)
{
    char what[256];
    snprintf(what, sizeof what, "%s got unexpected message %s", ac_self_path(ctx),
             ac_msg_type_name(m));
    fail(what);
}

ac_ref *spawn_top(ac_system *sys, const ac_actor_def *def, void *user_data)
{
    ac_props *props = ac_props_new(def, user_data);
    if (!props)
        die("ac_props_new");
    ac_ref *ref = ac_spawn(sys, props, NULL);
    if (!ref)
        die("ac_spawn");
    return ref;
}

void stop_release(ac_ref *ref)
{
    check(ac_stop(ref), "ac_stop");
    ac_ref_release(ref);
}

/* ---------------------------------------------------------------- latch --- */

void latch_init(latch *l)
{
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->seq = 0;
}

void latch_fini(latch *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

void latch_signal(latch *l, int64_t a, int64_t b, int64_t c)
{
    pthread_mutex_lock(&l->mu);
    l->val[0] = a;
    l->val[1] = b;
    l->val[2] = c;
    l->seq++;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Wait for the signal after the *seen-th one; copies its values to out. */
void latch_wait(latch *l, uint64_t *seen, int64_t out[3])
{
    pthread_mutex_lock(&l->mu);
    while (l->seq == *seen)
        pthread_cond_wait(&l->cv, &l->mu);
    *seen = l->seq;
    memcpy(out, l->val, sizeof l->val);
    pthread_mutex_unlock(&l->mu);
}

