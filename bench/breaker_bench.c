/*
 * The circuit breaker workload of actorc-bench: what a closed breaker
 * adds to an ask, and what a refused call costs.
 *
 *   breaker_ask   the main thread asks an echo server, alternating a
 *                 plain ac_ask_wait with an ac_breaker_ask_wait through a
 *                 closed breaker, so both see the same machine; 1,000
 *                 warm-up + 5,000 measured pairs. Prints the breaker's p50
 *                 and p99 and the plain ask's p50 (the aim: within 10%).
 *   breaker_open  the same breaker, opened for good: 1,000,000 calls
 *                 refused at once (each a fresh message, released unsent,
 *                 and a shared CircuitBreakerOpenError); ns per call, and
 *                 a check that the server saw none of them.
 */
#define _POSIX_C_SOURCE 200809L

#include "breaker_bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

enum { BK_WARM = 1000, BK_N = 5000, BK_OPEN_N = 1000000 };
#define BK_TIMEOUT_MS 60000

static atomic_llong served;

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
    ac_reply(ctx, ac_msg_int64_new(ac_msg_int64(msg)));
}

static const ac_actor_def echo_def = {.name = "BreakerEcho", .receive = echo_receive};

static int64_t timed_ask(ac_breaker *b, ac_ref *srv, int64_t x)
{
    ac_answer a;
    int64_t t0 = now_ns();
    ac_status st = b ? ac_breaker_ask_wait(b, srv, ac_msg_int64_new(x), BK_TIMEOUT_MS, &a)
                     : ac_ask_wait(srv, ac_msg_int64_new(x), BK_TIMEOUT_MS, &a);
    int64_t el = now_ns() - t0;
    check(st, b ? "ac_breaker_ask_wait" : "ac_ask_wait");
    if (ac_msg_int64(a.reply) != x)
        fail("breaker_ask: wrong reply");
    ac_answer_release(&a);
    return el;
}

static void measure_closed(ac_breaker *b, ac_ref *srv)
{
    int64_t *through = xcalloc(BK_N, sizeof *through);
    int64_t *plain = xcalloc(BK_N, sizeof *plain);
    for (int64_t i = 0; i < BK_WARM + BK_N; i++) {
        int64_t p = timed_ask(NULL, srv, 2 * i);
        int64_t t = timed_ask(b, srv, 2 * i + 1);
        if (i >= BK_WARM) {
            plain[i - BK_WARM] = p;
            through[i - BK_WARM] = t;
        }
    }
    if (ac_breaker_state_of(b) != AC_BREAKER_CLOSED)
        fail("breaker_ask: the breaker left the closed state");
    result("breaker_ask", "p50", (double)pct(through, BK_N, 50) / 1000.0, "us");
    result("breaker_ask", "p99", (double)pct(through, BK_N, 99) / 1000.0, "us");
    result("breaker_ask", "plain_p50", (double)pct(plain, BK_N, 50) / 1000.0, "us");
    free(through);
    free(plain);
}

static void open_for_good(ac_breaker *b)
{
    ac_breaker_permit p;
    if (!ac_breaker_acquire(b, &p, NULL))
        fail("breaker_open: closed breaker refused a call");
    ac_error *e = ac_error_new("BenchError", "opening the breaker");
    ac_breaker_record(b, &p, e);
    ac_error_release(e);
    if (ac_breaker_state_of(b) != AC_BREAKER_OPEN)
        fail("breaker_open: the breaker did not open");
}

static void measure_open(ac_breaker *b, ac_ref *srv)
{
    long long before = atomic_load(&served);
    int64_t t0 = now_ns();
    for (int i = 0; i < BK_OPEN_N; i++) {
        ac_answer a;
        if (ac_breaker_ask_wait(b, srv, ac_msg_int64_new(i), BK_TIMEOUT_MS, &a) != AC_EFAILED ||
            !ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR))
            fail("breaker_open: a call was not refused");
        ac_answer_release(&a);
    }
    int64_t el = now_ns() - t0;
    if (atomic_load(&served) != before)
        fail("breaker_open: a refused call reached the server");
    result("breaker_open", "ns_per_call", (double)el / BK_OPEN_N, "ns");
}

void bench_breaker_ask(ac_system *sys, const void *param)
{
    (void)param;
    ac_props *props = ac_props_new(&echo_def, NULL);
    ac_ref *srv = props ? ac_spawn(sys, props, NULL) : NULL;
    if (!srv)
        die("ac_spawn");
    ac_breaker_options o = {.name = "bench", .max_failures = 1,
                            .reset_timeout_ms = 3600000};
    ac_breaker *b = ac_breaker_create(sys, &o);
    if (!b)
        die("ac_breaker_create");
    measure_closed(b, srv);
    open_for_good(b);
    measure_open(b, srv);
    ac_breaker_release(b);
    check(ac_stop(srv), "ac_stop");
    ac_ref_release(srv);
}
