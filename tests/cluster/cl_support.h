/*
 * Cluster member processes for the cluster tests and the membership
 * benchmark: the cluster node program (cluster_node.c) started and ended
 * by pid through the remote tests' process helpers (rt_proc.h), and
 * what it prints, kept line by line so that a test can look for a line
 * and check the order of what came before it.
 */
#ifndef ACTORC_TESTS_CL_SUPPORT_H
#define ACTORC_TESTS_CL_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_proc.h"

#define CL_MAX_LINES 2048

typedef struct cl_node {
    rt_proc proc;
    int port;
    char *lines[CL_MAX_LINES]; /* what it printed after READY */
    int count;
    char partial[2048];
    size_t partial_len;
} cl_node;

/* "127.0.0.1:<port>" into buf. */
const char *cl_addr(int port, char *buf, size_t cap);

/* Start the node program bound to 127.0.0.1:port with `args` after
 * --bind (NULL-terminated). False when it did not say READY. */
bool cl_start(cl_node *n, int port, const char *const *args);
/* The same in network namespace `ns` (ip netns exec, through the ip(8)
 * at `ip`), bound to tcp://host:port with --insecure (no CURVE keys on a
 * private address). */
bool cl_start_in(cl_node *n, const char *ip, const char *ns, const char *host, int port,
                 const char *const *args);
/* End it (rt_end: sig, or 0 to close its input) and forget its lines. */
void cl_end(cl_node *n, int sig);

/* The index of the first line at or after `from` that contains every
 * one of the (NULL-terminated) needles, reading what it prints for up to
 * timeout_ms; -1 when none came. */
int cl_find(cl_node *n, int from, int timeout_ms, const char *const *needles);
/* As cl_find with needles "EVENT <kind> <address>" (and the incarnation
 * when not NULL). */
int cl_event(cl_node *n, int from, int timeout_ms, const char *kind, const char *address,
             const char *incarnation);
/* Send a command line and return the line (prefix `answer`) that
 * answers it, or NULL after timeout_ms. */
const char *cl_ask(cl_node *n, const char *command, const char *answer, int timeout_ms);
/* Read what it printed so far, without waiting. */
void cl_pump(cl_node *n);

/* Milliseconds on the monotonic clock. */
double cl_now_ms(void);

#endif
