/*
 * A real etcd for the etcd tests: one process per eh_etcd, on free ports
 * of 127.0.0.1, with a data directory of its own under $TMPDIR.
 *
 * No test leaves an etcd behind: each is ended by pid when destroyed, at
 * exit (atexit), on a fatal signal (a handler that kills them and
 * re-raises), and by the kernel when the test process dies any other way
 * (PR_SET_PDEATHSIG). Data directories are removed when destroyed and at
 * exit.
 *
 * Also a stand-in for an endpoint: a listening socket that accepts
 * connections and never answers.
 */
#ifndef ACTORC_ETCD_HARNESS_H
#define ACTORC_ETCD_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What a test that needs etcd exits with when there is none and skipping
 * is asked for (test_support.h: TS_SKIP). */
#define EH_SKIP 77

typedef struct eh_etcd {
    pid_t pid; /* 0 while not running */
    int client_port;
    int peer_port;
    char dir[256];  /* the scratch directory: data/ and etcd.log */
    char data[300]; /* the data directory */
    char log[300];  /* etcd's output */
    char url[64];   /* the client URL, http://127.0.0.1:<client_port> */
} eh_etcd;

/* The etcd binary (on PATH, or /usr/bin/etcd); NULL when there is none. */
const char *eh_etcd_binary(void);
/* For main, when there is no etcd: says so on stderr, then exits with a
 * failure, or returns true (the test returns EH_SKIP) when
 * ACTORC_TEST_SKIP_MISSING=1 asks to skip (ts_missing_program). False
 * when there is one. */
bool eh_skip(const char *test);

/* A port of 127.0.0.1 free when asked. */
int eh_free_port(void);

/* Ports and a data directory, not running yet. NULL on failure (said on
 * stderr). */
eh_etcd *eh_prepare(void);
/* Run etcd on its ports and directory and wait until it is healthy.
 * False (with its log's tail on stderr) when it does not come up. */
bool eh_run(eh_etcd *etcd);
/* eh_prepare and eh_run, trying fresh ports when etcd cannot have them. */
eh_etcd *eh_start(void);
/* End the process with SIGKILL and reap it; the data stays. */
void eh_kill(eh_etcd *etcd);
/* Kill it, remove its directory, free it. NULL is a no-op. */
void eh_destroy(eh_etcd *etcd);

/* ---- waiting for a keeper's or a watcher's thread ----------------------- */

struct ac__etcd;
struct ac__etcd_options;
struct ac__etcd_reg;
struct ac__etcd_reg_info;
struct ac__etcd_watch;
struct ac__etcd_watch_info;

/* The keeper and the watcher change their state on threads of their own:
 * a test that expects a state waits for it, with a deadline. Each polls
 * the status until `state` (an ac__etcd_reg_state / ac__etcd_watch_state)
 * shows, with at least `failures` failed attempts, and leaves the last
 * status read in *out; false when timeout_s passed first. */
bool eh_wait_reg_state(struct ac__etcd_reg *reg, int state, unsigned long long failures,
                       double timeout_s, struct ac__etcd_reg_info *out);
bool eh_wait_watch_state(struct ac__etcd_watch *w, int state, unsigned long long failures,
                         double timeout_s, struct ac__etcd_watch_info *out);

/* ---- a fixture for a test group: one etcd and a client of it ---------- */

typedef struct eh_fixture {
    eh_etcd *etcd;
    struct ac__etcd *e;
} eh_fixture;

/* cmocka group setup and teardown: an etcd started (the group fails when
 * it does not start) and a client with short backoff. */
int eh_group_setup(void **state);
int eh_group_teardown(void **state);
/* A client of url; NULL options: short backoff (50 ms to 500 ms). */
struct ac__etcd *eh_client(const char *url, const struct ac__etcd_options *o);

/* A socket on 127.0.0.1 that listens and never answers: its port in
 * *port, its descriptor returned (close it when done). */
int eh_silent_listener(int *port);

#endif
