/*
 * Processes of other nodes (rt_proc.h). The started pids are kept in one
 * table, which atexit and the fatal-signal handlers read to kill what is
 * left; posix_spawn, not fork, so that a process with threads running
 * starts another without copying them (or their locks).
 */
#ifndef _GNU_SOURCE /* some targets define it for every file */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_proc.h"

extern char **environ;

#define MAX_PROCS 128 /* a 64-node cluster and one joining */
static pid_t live[MAX_PROCS];
static bool hooked;

static void kill_all(void)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (live[i] > 0) {
            kill(live[i], SIGCONT);
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
}

static void on_fatal(int sig)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (live[i] > 0)
            kill(live[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void remember(pid_t pid)
{
    if (!hooked) {
        hooked = true;
        atexit(kill_all);
        signal(SIGABRT, on_fatal);
        signal(SIGSEGV, on_fatal);
        signal(SIGINT, on_fatal);
        signal(SIGTERM, on_fatal);
        signal(SIGALRM, on_fatal);
    }
    for (int i = 0; i < MAX_PROCS; i++)
        if (live[i] == 0) {
            live[i] = pid;
            return;
        }
}

static void forget(pid_t pid)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (live[i] == pid)
            live[i] = 0;
}

/* The READY line on p->out_fd, within 10 s (sanitizer builds start
 * slowly), into p->address and p->incarnation. */
bool rt_read_ready(rt_proc *p)
{
    char line[256];
    size_t len = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = 10000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd pf = {.fd = p->out_fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            return false;
        ssize_t r = read(p->out_fd, line + len, 1);
        if (r <= 0)
            return false;
        if (line[len] == '\n') {
            line[len] = '\0';
            if (sscanf(line, "READY %127s %31s", p->address, p->incarnation) == 2)
                return true;
            len = 0;
            continue;
        }
        if (++len == sizeof line - 1)
            len = 0;
    }
}

bool rt_spawn(rt_proc *p, const char *program, const char *const *args)
{
    int in[2], out[2];
    memset(p, 0, sizeof *p);
    if (pipe2(in, O_CLOEXEC) != 0)
        return false;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return false;
    }
    const char *argv[32];
    int n = 0;
    argv[n++] = program;
    for (int i = 0; args && args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    int rc = posix_spawn(&p->pid, program, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        fprintf(stderr, "rt_spawn: cannot start %s: %s\n", program, strerror(rc));
        return false;
    }
    remember(p->pid);
    p->in_fd = in[1];
    p->out_fd = out[0];
    if (rt_read_ready(p))
        return true;
    fprintf(stderr, "rt_spawn: %s did not say READY\n", program);
    rt_end(p, SIGKILL);
    return false;
}

/* ---- members on threads of this process ---------------------------------- */

typedef struct local_member {
    pthread_t thread;
    rt_member_main main_fn;
    int in_fd, out_fd; /* its ends of the pipes */
    int argc;
    char *argv[44];
} local_member;

static void *local_main(void *arg)
{
    local_member *m = arg;
    m->main_fn(m->in_fd, m->out_fd, m->argc, m->argv);
    close(m->out_fd); /* its input was closed when it ended */
    return NULL;
}

bool rt_local_start(rt_proc *p, rt_member_main main_fn, const char *const *args)
{
    memset(p, 0, sizeof *p);
    local_member *m = calloc(1, sizeof *m);
    int in[2], out[2];
    if (!m || pipe2(in, O_CLOEXEC) != 0) {
        free(m);
        return false;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        free(m);
        return false;
    }
    m->main_fn = main_fn;
    m->argv[m->argc++] = strdup("member");
    for (int i = 0; args && args[i] && m->argc < 43; i++)
        m->argv[m->argc++] = strdup(args[i]);
    m->in_fd = in[0];
    m->out_fd = out[1];
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->member = m;
    if (pthread_create(&m->thread, NULL, local_main, m) != 0) {
        close(in[0]);
        close(out[1]);
        m->argc = 0;
        rt_end(p, 0);
        return false;
    }
    if (rt_read_ready(p))
        return true;
    fprintf(stderr, "rt_local_start: the member did not say READY\n");
    rt_end(p, SIGKILL);
    return false;
}

static void local_end(rt_proc *p, int sig)
{
    local_member *m = p->member;
    if (sig == SIGKILL && write(p->in_fd, "crash\n", 6) != 6)
        fprintf(stderr, "rt_end: cannot tell the member to crash\n");
    close(p->in_fd);
    if (m->argc)
        pthread_join(m->thread, NULL);
    close(p->out_fd);
    for (int i = 0; i < m->argc; i++)
        free(m->argv[i]);
    free(m);
    p->member = NULL;
    p->in_fd = p->out_fd = -1;
}

int rt_end(rt_proc *p, int sig)
{
    if (p->member) {
        local_end(p, sig);
        return 0;
    }
    if (p->pid <= 0)
        return -1;
    if (sig) {
        kill(p->pid, SIGCONT);
        kill(p->pid, sig);
    }
    if (p->in_fd > 0)
        close(p->in_fd);
    p->in_fd = -1;
    int status = -1;
    for (int i = 0; i < 1000; i++) { /* 10 s */
        if (waitpid(p->pid, &status, WNOHANG) == p->pid)
            goto reaped;
        struct timespec ms = {0, 10000000};
        nanosleep(&ms, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
reaped:
    forget(p->pid);
    if (p->out_fd > 0)
        close(p->out_fd);
    p->out_fd = -1;
    p->pid = 0;
    return status;
}

void rt_end_all(void) { kill_all(); }

const char *rt_self(void)
{
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return "/proc/self/exe";
    path[n] = '\0';
    return path;
}

void rt_signal(rt_proc *p, int sig)
{
    if (p->pid > 0)
        kill(p->pid, sig);
}

const char *rt_path(const rt_proc *p, const char *system, const char *path, char *buf, size_t cap)
{
    snprintf(buf, cap, "actorc://%s@%s%s", system, p->address, path);
    return buf;
}

const char *rt_scheme(void)
{
    const char *t = getenv("ACTORC_TEST_TRANSPORT");
    if (t && strcmp(t, "inproc") == 0)
        return "inproc";
    return t && strcmp(t, "tcp+direct") == 0 ? "tcp+direct" : "tcp";
}

bool rt_inproc(void) { return strcmp(rt_scheme(), "inproc") == 0; }

const char *rt_bind(const char *name, char *buf, size_t cap)
{
    if (rt_inproc())
        snprintf(buf, cap, "inproc://%s:0", name);
    else
        snprintf(buf, cap, "%s://127.0.0.1:0", rt_scheme());
    return buf;
}
