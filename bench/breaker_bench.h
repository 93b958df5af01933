/*
 * The circuit breaker workloads of actorc-bench (breaker_bench.c), listed
 * in actorc_bench.c's workload table.
 */
#ifndef ACTORC_BENCH_BREAKER_BENCH_H
#define ACTORC_BENCH_BREAKER_BENCH_H

#include <actorc.h>

/* suite */
void bench_breaker_ask(ac_system *sys, const void *param);

#endif
