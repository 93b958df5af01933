/*
 * Processes and directories a harness starts and makes. See
 * ts_children.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "ts_children.h"

#include <ftw.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_LIVE 8

static atomic_int live_pids[MAX_LIVE];
static char live_dirs[MAX_LIVE][256];
static bool handlers_installed;

static void kill_all(void)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        pid_t pid = atomic_load(&live_pids[i]);
        if (pid > 0)
            kill(pid, SIGKILL);
    }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void ts_dir_remove(const char *dir)
{
    if (dir[0])
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void at_exit(void)
{
    kill_all();
    for (int i = 0; i < MAX_LIVE; i++) {
        pid_t pid = atomic_exchange(&live_pids[i], 0);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        ts_dir_remove(live_dirs[i]);
        live_dirs[i][0] = '\0';
    }
}

static void on_fatal(int sig)
{
    kill_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

void ts_children_install(void)
{
    if (handlers_installed)
        return;
    handlers_installed = true;
    atexit(at_exit);
    const int always[] = {SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    const int unless_taken[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    struct sigaction sa = {.sa_handler = on_fatal};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        sigaction(always[i], &sa, NULL);
    for (size_t i = 0; i < sizeof unless_taken / sizeof unless_taken[0]; i++) {
        struct sigaction old;
        if (sigaction(unless_taken[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            sigaction(unless_taken[i], &sa, NULL);
    }
}

void ts_child_track(pid_t pid, bool on, const char *who)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        int expected = on ? 0 : pid;
        if (atomic_compare_exchange_strong(&live_pids[i], &expected, on ? pid : 0))
            return;
    }
    if (on) {
        fprintf(stderr, "%s: more than %d children at once; killing %d\n", who, MAX_LIVE,
                (int)pid);
        kill(pid, SIGKILL);
    }
}

void ts_dir_track(const char *dir, bool on)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        if (on && !live_dirs[i][0]) {
            snprintf(live_dirs[i], sizeof live_dirs[i], "%s", dir);
            return;
        }
        if (!on && strcmp(live_dirs[i], dir) == 0) {
            live_dirs[i][0] = '\0';
            return;
        }
    }
}
