/*
 * Helpers shared by the workloads of actorc-bench: clocks, failing loudly,
 * the RESULT line, statistics (median, nearest-rank percentile), memory
 * readings, a seeded generator, messages of int64 arguments, top-level
 * actors, and the latch an actor signals the main thread with.
 */
#ifndef ACTORC_BENCH_UTIL_H
#define ACTORC_BENCH_UTIL_H

#include <actorc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* One operation's completion, signalled by an actor and awaited by the main
 * thread. Operations never overlap, so a sequence number is enough. */
typedef struct latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t seq; /* signals so far; guarded by mu */
    int64_t val[3];
} latch;

int64_t now_ns(void);
int64_t cpu_ns(void);
void sleep_ms(long ms);
_Noreturn void fail(const char *what);
_Noreturn void die(const char *what);
void check(ac_status st, const char *what);
void result(const char *wl, const char *metric, double v, const char *unit);
int cmp_double(const void *a, const void *b);
double median(double *v, size_t n);
int cmp_i64(const void *a, const void *b);
int64_t pct(int64_t *v, size_t n, double p);

typedef struct latency {
    double p50_us, p99_us, per_s;
} latency;
/* The RESULT lines of workload wl's n sequential latencies (ns; sorted in
 * place): p50 and p99 in us and, unless `ops` is NULL, the rate
 * "<ops>_per_s" in <ops>/s that they add up to. Returns the three. */
latency report_latency(const char *wl, int64_t *lat, size_t n, const char *ops);
long rss_kib(void);
long long heap_in_use(void);
void *xcalloc(size_t n, size_t size);
/* The next of xorshift64's sequence from *s (never 0). */
uint64_t xorshift64(uint64_t *s);

/* A message of `type` carrying nvals (0 to 2) int64s, a then b. */
ac_msg *msg_new(const ac_msg_type *type, int nvals, int64_t a, int64_t b);
/* Its i-th int64. */
int64_t arg(const ac_msg *m, int i);
void tell(ac_ref *to, ac_msg *m, ac_ref *from);
/* A benchmark's actor got what it never expects: fail the run. */
_Noreturn void unexpected(ac_ctx *ctx, const ac_msg *m);
ac_ref *spawn_top(ac_system *sys, const ac_actor_def *def, void *user_data);
void stop_release(ac_ref *ref);
void latch_init(latch *l);
void latch_fini(latch *l);
void latch_signal(latch *l, int64_t a, int64_t b, int64_t c);
void latch_wait(latch *l, uint64_t *seen, int64_t out[3]);

#endif
