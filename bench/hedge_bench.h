/*
 * The hedging workload of actorc-bench (hedge_bench.c), listed in
 * actorc_bench.c's workload table.
 */
#ifndef ACTORC_BENCH_HEDGE_BENCH_H
#define ACTORC_BENCH_HEDGE_BENCH_H

#include <actorc.h>

/* suite */
void bench_hedge_tail(ac_system *sys, const void *param);

#endif
