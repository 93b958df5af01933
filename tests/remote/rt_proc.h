/*
 * Node processes for the remote tests: started with the node program,
 * ended by pid — at the end of each test, and at exit or on a fatal
 * signal of the test itself, so that a failing test leaves nothing
 * running.
 */
#ifndef ACTORC_TESTS_RT_PROC_H
#define ACTORC_TESTS_RT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct rt_proc {
    pid_t pid;
    int in_fd;  /* its standard input: closing it ends the node */
    int out_fd; /* its standard output */
    char address[128];
    char incarnation[32];
} rt_proc;

/* Start the node program with `args` (NULL-terminated, after the program
 * name) and wait (10 s at most) for its READY line. */
bool rt_start(rt_proc *p, const char *const *args);
/* Send `sig` (SIGKILL, SIGTERM) and reap it; 0: close its input and wait
 * (up to 10 s, then SIGKILL). */
void rt_end(rt_proc *p, int sig);
/* SIGSTOP / SIGCONT. */
void rt_signal(rt_proc *p, int sig);
/* "actorc://replicas@<address><path>" into buf. */
const char *rt_path(const rt_proc *p, const char *system, const char *path, char *buf, size_t cap);

#endif
