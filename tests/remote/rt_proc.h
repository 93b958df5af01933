/*
 * Processes of other nodes, started and ended by pid: for the remote and
 * cluster tests, and for the benchmarks that run their replicas and
 * servers as this program again. A process is started with its standard
 * input and output on pipes; it says "READY <address> <incarnation>" on
 * its output once it serves, and serves until its input closes. It is
 * ended at the end of each test or run, and at exit or on a fatal signal
 * of the starting process, so that a failure leaves nothing running.
 */
#ifndef ACTORC_TESTS_RT_PROC_H
#define ACTORC_TESTS_RT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct rt_proc {
    pid_t pid;
    int in_fd;  /* its standard input: closing it ends the node */
    int out_fd; /* its standard output */
    char address[128];
    char incarnation[32];
    void *local;  /* a peer in this process (its ac_system), pid 0 */
    void *member; /* a member on a thread of this process (rt_local_start) */
} rt_proc;

/* A member's main as a thread of this process runs it: commands from
 * in_fd until it closes ("crash": its node stopped first), lines (READY
 * first) to out_fd. */
typedef int (*rt_member_main)(int in_fd, int out_fd, int argc, char **argv);
/* Start main_fn on a thread with `args` (NULL-terminated, after the
 * program name) and pipes in place of its standard input and output,
 * and wait for its READY line as rt_spawn does. rt_end ends it: SIGKILL
 * says "crash" first. */
bool rt_local_start(rt_proc *p, rt_member_main main_fn, const char *const *args);

/* The transport the tests run over, by ACTORC_TEST_TRANSPORT: "inproc"
 * (in-process), "tcp+direct" (the node's own TCP) or else "tcp"
 * (ZeroMQ). The node program (node_main.c) binds by the same variable. */
const char *rt_scheme(void);
/* Do the tests run over the in-process transport? */
bool rt_inproc(void);
/* A bind URL for a node of this process named `name`: inproc://<name>:0
 * over the in-process transport, else <scheme>://127.0.0.1:0. */
const char *rt_bind(const char *name, char *buf, size_t cap);

/* Start `program` with `args` (NULL-terminated, after the program name)
 * and wait (10 s at most) for its READY line; false, with a message on
 * stderr and nothing left running, when it does not come. */
bool rt_spawn(rt_proc *p, const char *program, const char *const *args);
#ifdef ACTORC_TEST_NODE
/* The same with the node program the build names. */
static inline bool rt_start(rt_proc *p, const char *const *args)
{
    return rt_spawn(p, ACTORC_TEST_NODE, args);
}
#endif
/* The READY line on p->out_fd, within 10 s, into p->address and
 * p->incarnation (for a peer of this process that prints one too). */
bool rt_read_ready(rt_proc *p);
/* Send `sig` (SIGKILL, SIGTERM) and reap it; 0: close its input and wait
 * (up to 10 s, then SIGKILL). Its wait status (waitpid's), or -1 when
 * there was no process. */
int rt_end(rt_proc *p, int sig);
/* SIGSTOP / SIGCONT. */
void rt_signal(rt_proc *p, int sig);
/* SIGKILL and reap every process still running, for a way out that
 * skips atexit (_Exit). */
void rt_end_all(void);
/* This program's own path, to start it again (its name, unlike
 * /proc/self/exe's "exe", shows in ps and perf). */
const char *rt_self(void);
/* "actorc://<system>@<address><path>" into buf. */
const char *rt_path(const rt_proc *p, const char *system, const char *path, char *buf, size_t cap);

#endif
