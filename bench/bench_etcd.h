/*
 * An etcd of the benchmark's own: Debian's etcd-server (or an `etcd` on
 * PATH) started on free loopback ports, its data in a scratch directory,
 * ended by pid (also when the benchmark dies: PR_SET_PDEATHSIG) and its
 * directory removed.
 */
#ifndef ACTORC_BENCH_ETCD_H
#define ACTORC_BENCH_ETCD_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct bench_etcd {
    pid_t pid;
    char dir[256];
    char url[64]; /* "http://127.0.0.1:<port>" */
} bench_etcd;

/* Start one (20 s at most until it listens); false when there is no
 * binary or it did not start (nothing left running). */
bool bench_etcd_start(bench_etcd *e);
/* End it by pid and remove its directory (idempotent). */
void bench_etcd_stop(bench_etcd *e);
/* Its CPU time so far, seconds, and its resident set, kB (0 when gone). */
double bench_proc_cpu_s(pid_t pid);
long bench_proc_rss_kb(pid_t pid);

#endif
