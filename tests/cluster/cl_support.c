/*
 * Cluster member processes (cl_support.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cl_member.h"
#include "cl_support.h"

double cl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *cl_addr(int port, char *buf, size_t cap)
{
    snprintf(buf, cap, rt_inproc() ? "member:%d" : "127.0.0.1:%d", port);
    return buf;
}

static void forget_lines(cl_node *n)
{
    for (int i = 0; i < n->count; i++)
        free(n->lines[i]);
    n->count = 0;
    n->partial_len = 0;
}

bool cl_start(cl_node *n, int port, const char *const *args)
{
    char bind[64];
    const char *argv[40];
    int k = 0;
    if (rt_inproc())
        snprintf(bind, sizeof bind, "inproc://member:%d", port);
    else
        snprintf(bind, sizeof bind, "%s://127.0.0.1:%d", rt_scheme(), port);
    argv[k++] = "--bind";
    argv[k++] = bind;
    for (int i = 0; args && args[i] && k < 39; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    memset(n, 0, sizeof *n);
    n->port = port;
    signal(SIGPIPE, SIG_IGN); /* a command to a node that died fails, not the test */
    return rt_inproc() ? rt_local_start(&n->proc, cl_member_main, argv) : rt_start(&n->proc, argv);
}

bool cl_start_in(cl_node *n, const char *ip, const char *ns, const char *host, int port,
                 const char *const *args)
{
    char bind[64];
    const char *argv[40];
    int k = 0;
    snprintf(bind, sizeof bind, "%s://%s:%d", rt_scheme(), host, port);
    argv[k++] = "netns";
    argv[k++] = "exec";
    argv[k++] = ns;
    argv[k++] = ACTORC_TEST_NODE;
    argv[k++] = "--bind";
    argv[k++] = bind;
    argv[k++] = "--insecure";
    for (int i = 0; args && args[i] && k < 39; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    memset(n, 0, sizeof *n);
    n->port = port;
    signal(SIGPIPE, SIG_IGN);
    return rt_spawn(&n->proc, ip, argv);
}

void cl_end(cl_node *n, int sig)
{
    rt_end(&n->proc, sig); /* a member of this process: its thread */
    forget_lines(n);
}

static void add_line(cl_node *n)
{
    n->partial[n->partial_len] = '\0';
    if (n->count < CL_MAX_LINES) {
        char *copy = strdup(n->partial);
        if (copy)
            n->lines[n->count++] = copy;
    }
    n->partial_len = 0;
}

/* Read what is there, waiting up to wait_ms for the first byte. */
static void pump_for(cl_node *n, int wait_ms)
{
    if (n->proc.out_fd <= 0)
        return;
    struct pollfd pf = {.fd = n->proc.out_fd, .events = POLLIN};
    if (poll(&pf, 1, wait_ms) <= 0)
        return;
    char buf[4096];
    ssize_t r = read(n->proc.out_fd, buf, sizeof buf);
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == '\n')
            add_line(n);
        else if (n->partial_len < sizeof n->partial - 1)
            n->partial[n->partial_len++] = buf[i];
    }
}

void cl_pump(cl_node *n) { pump_for(n, 0); }

static bool matches(const char *line, const char *const *needles)
{
    for (int i = 0; needles[i]; i++)
        if (!strstr(line, needles[i]))
            return false;
    return true;
}

int cl_find(cl_node *n, int from, int timeout_ms, const char *const *needles)
{
    double end = cl_now_ms() + timeout_ms;
    int at = from;
    for (;;) {
        for (; at < n->count; at++)
            if (matches(n->lines[at], needles))
                return at;
        double left = end - cl_now_ms();
        if (left <= 0)
            return -1;
        pump_for(n, left > 50 ? 50 : (int)left + 1);
    }
}

int cl_event(cl_node *n, int from, int timeout_ms, const char *kind, const char *address,
             const char *incarnation)
{
    char head[300];
    snprintf(head, sizeof head, "EVENT %s %s ", kind, address);
    const char *needles[] = {head, incarnation, NULL};
    return cl_find(n, from, timeout_ms, needles);
}

const char *cl_ask(cl_node *n, const char *command, const char *answer, int timeout_ms)
{
    cl_pump(n);
    int from = n->count;
    char line[300];
    int len = snprintf(line, sizeof line, "%s\n", command);
    if (write(n->proc.in_fd, line, (size_t)len) != len)
        return NULL;
    const char *needles[] = {answer, NULL};
    int at = cl_find(n, from, timeout_ms, needles);
    return at < 0 ? NULL : n->lines[at];
}
