/*
 * Processes and directories a test harness starts and makes (the etcd
 * and dnsmasq harnesses), kept in small tables so that they are ended
 * and removed however the test ends: by the harness when stopped, at
 * exit (atexit: kill, reap, remove), and on a fatal signal (a handler
 * that only calls kill(), which is async-signal-safe). A fatal signal
 * that already has a handler (a sanitizer's) keeps it: those end in
 * abort(), whose SIGABRT comes here.
 */
#ifndef TS_CHILDREN_H
#define TS_CHILDREN_H

#include <stdbool.h>
#include <sys/types.h>

/* Install the exit and signal handlers (once; any later call is a no-op). */
void ts_children_install(void);
/* Track (on) or forget (off) a child process. More than the table holds:
 * the child is killed at once, with a line naming `who`. */
void ts_child_track(pid_t pid, bool on, const char *who);
/* Track (on) or forget (off) a directory to remove at exit. */
void ts_dir_track(const char *dir, bool on);
/* Remove a directory and what is in it (nothing when dir is empty). */
void ts_dir_remove(const char *dir);

#endif
