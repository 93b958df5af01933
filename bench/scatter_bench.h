/*
 * The scatter/gather workloads of actorc-bench (scatter_bench.c), listed in
 * actorc_bench.c's workload table. Each has the table's signature: it runs
 * on the process's system and prints RESULT lines.
 */
#ifndef ACTORC_BENCH_SCATTER_BENCH_H
#define ACTORC_BENCH_SCATTER_BENCH_H

#include <actorc.h>

/* suite */
void bench_scatter_seq(ac_system *sys, const void *param);
void bench_scatter_seq_in(ac_system *sys, const void *param);
void bench_scatter_seq_in_ask(ac_system *sys, const void *param);
void bench_scatter_par(ac_system *sys, const void *param);
void bench_scatter_tail(ac_system *sys, const void *param);
/* mem (a fresh process) */
void bench_scatter_open(ac_system *sys, const void *param);

#endif
