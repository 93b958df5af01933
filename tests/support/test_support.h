/*
 * Helpers shared by the actorc test suites.
 *
 * Everything here is safe to call from actor handlers (worker threads) and
 * from the test thread at once; cmocka assertions must stay on the test
 * thread, so actors report through these helpers and the test thread
 * checks afterwards.
 */
#ifndef ACTORC_TEST_SUPPORT_H
#define ACTORC_TEST_SUPPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc.h"

/* Generous default bound for "eventually" conditions. Only a broken
 * runtime makes a test wait this long. */
#define TS_WAIT_S 10.0

/* ---- time and waiting ------------------------------------------------- */

/* Monotonic seconds. */
double ts_now(void);
/* Monotonic milliseconds. */
int64_t ts_now_ms(void);
/* Sleep for `ms` milliseconds. */
void ts_sleep_ms(int ms);
/* Poll `cond(arg)` with short sleeps until it is true or `timeout_s` has
 * passed. Returns the final value of the condition. */
bool ts_wait_until(bool (*cond)(void *arg), void *arg, double timeout_s);
/* Wait until *counter >= target; true when reached. */
bool ts_wait_ge(const atomic_llong *counter, long long target, double timeout_s);
/* Wait until *counter == target; true when reached. */
bool ts_wait_eq(const atomic_llong *counter, long long target, double timeout_s);
/* Wait until ac_dead_letter_count(sys) >= target. */
bool ts_wait_dead_letters(const ac_system *sys, uint64_t target, double timeout_s);

/* ---- a gate an actor can wait on ------------------------------------- */

/* A one-shot gate: a handler blocks in ts_gate_wait until the test thread
 * opens it (or the bound passes, so that a broken test never hangs). */
typedef struct ts_gate {
    atomic_int open;
    atomic_int waiting; /* number of threads currently inside ts_gate_wait */
} ts_gate;

void ts_gate_init(ts_gate *g);
void ts_gate_open(ts_gate *g);
/* True when the gate was opened, false when the bound passed. */
bool ts_gate_wait(ts_gate *g, double timeout_s);
/* Wait until at least one thread is blocked in ts_gate_wait. */
bool ts_gate_wait_for_waiter(ts_gate *g, double timeout_s);

/* ---- event recorder --------------------------------------------------- */

#define TS_REC_MAX 4096
#define TS_REC_LABEL 96

/* An ordered, thread-safe list of short labels. */
typedef struct ts_recorder {
    pthread_mutex_t mu;
    size_t n;
    size_t dropped;
    char labels[TS_REC_MAX][TS_REC_LABEL];
} ts_recorder;

ts_recorder *ts_rec_new(void);
void ts_rec_free(ts_recorder *r);
void ts_rec_add(ts_recorder *r, const char *fmt, ...) AC_PRINTF(2, 3);
size_t ts_rec_count(ts_recorder *r);
/* Number of entries equal to `label`. */
size_t ts_rec_count_of(ts_recorder *r, const char *label);
/* Index of the first entry equal to `label`, or -1. */
long ts_rec_index_of(ts_recorder *r, const char *label);
/* Copy of entry i ("" when out of range) into buf. */
void ts_rec_get(ts_recorder *r, size_t i, char *buf, size_t cap);
/* Wait until the recorder holds at least `n` entries. */
bool ts_rec_wait_count(ts_recorder *r, size_t n, double timeout_s);
/* Wait until at least `n` entries equal `label`. */
bool ts_rec_wait_count_of(ts_recorder *r, const char *label, size_t n, double timeout_s);
/* Wait until an entry equal to `label` is present. */
bool ts_rec_wait_for(ts_recorder *r, const char *label, double timeout_s);
/* Print all entries (for diagnosing a failure). */
void ts_rec_dump(ts_recorder *r, const char *title);

/* ---- capturing log sink ---------------------------------------------- */

#define TS_LOG_MAX 2048

typedef struct ts_log_line {
    ac_log_level level;
    char *system_name; /* NULL when the sink got NULL */
    char *path;        /* NULL when the sink got NULL */
    char *text;
} ts_log_line;

typedef struct ts_log_capture {
    pthread_mutex_t mu;
    size_t n;
    size_t dropped;
    ts_log_line lines[TS_LOG_MAX];
} ts_log_capture;

ts_log_capture *ts_log_capture_new(void);
void ts_log_capture_free(ts_log_capture *c);
/* An ac_log_sink_fn; `user` must be a ts_log_capture. */
void ts_log_sink(void *user, ac_log_level level, const char *system_name,
                 const char *path, const char *text);
size_t ts_log_count(ts_log_capture *c);
/* Copy of line i (strings owned by the caller; free with ts_log_line_clear).
 * False when out of range. */
bool ts_log_get(ts_log_capture *c, size_t i, ts_log_line *out);
void ts_log_line_clear(ts_log_line *line);
/* Number of lines whose text contains `needle`. */
size_t ts_log_count_text(ts_log_capture *c, const char *needle);
/* Index of the first line whose text contains `needle`, or -1. */
long ts_log_find_text(ts_log_capture *c, const char *needle);
/* Wait until a line whose text contains `needle` was captured. */
bool ts_log_wait_text(ts_log_capture *c, const char *needle, double timeout_s);
void ts_log_dump(ts_log_capture *c, const char *title);

/* ---- per-test fixture ------------------------------------------------- */

/* Set up and torn down around each test (cmocka setup/teardown). A test that
 * fails half-way leaves its system in `sys`: the teardown terminates it
 * before freeing the test's data, so no actor outlives what it points at. */
typedef struct ts_fixture {
    ac_system *sys;
    void *data;               /* ts_fx_data */
    void (*data_free)(void *);
    ts_log_capture *log;      /* ts_fx_log */
    ts_recorder *rec;         /* ts_fx_rec */
} ts_fixture;

int ts_setup(void **state);
int ts_teardown(void **state);

/* Zeroed test data of `size` bytes, freed by the teardown after the system
 * is gone (after calling `free_fn(data)` when given, to release what the
 * data owns). */
void *ts_fx_data(ts_fixture *fx, size_t size, void (*free_fn)(void *));
/* A recorder owned by the fixture. */
ts_recorder *ts_fx_rec(ts_fixture *fx);
/* A log capture owned by the fixture. */
ts_log_capture *ts_fx_log(ts_fixture *fx);

/* Create a system with quiet defaults: the given options (may be NULL) and,
 * unless the options name a sink, a capture owned by the fixture so that
 * runtime lines do not clutter the test output. Stored in fx->sys. */
ac_system *ts_fx_system(ts_fixture *fx, const char *name, const ac_system_options *opts);
/* Terminate fx->sys (if any) and clear it; returns the status. */
ac_status ts_fx_terminate(ts_fixture *fx);

/* ---- programs a test needs (ts_tools.c) ------------------------------ */

/* The exit status of a test that needs a program this machine lacks
 * (etcd, dnsmasq): 77, counted as skipped, only when the environment says
 * ACTORC_TEST_SKIP_MISSING=1; else 1, a failure, so that a machine
 * meant to run everything (CI, `make test`, which installs them first)
 * cannot pass without running them. */
#define TS_SKIP 77

/* `name` on PATH or in one of `also` (a ':'-separated list of
 * directories, may be NULL), as a path into buf; NULL when none is
 * there. */
const char *ts_find_program(const char *name, const char *also, char *buf, size_t cap);
/* Say loudly on stderr that `test` cannot run without `program`
 * (Debian package `package`) and return its exit status: TS_SKIP when
 * skipping is asked for, else 1. */
int ts_missing_program(const char *test, const char *program, const char *package);

/* ---- misc -------------------------------------------------------------- */

/* Spawn a top-level actor; NULL on failure (the test then checks it). */
ac_ref *ts_spawn(ac_system *sys, const ac_actor_def *def, void *user_data, const char *name);
/* Integer from an environment variable, or `def` when unset or malformed. */
long ts_env_long(const char *name, long def);
/* True when a string is non-NULL and non-empty. */
bool ts_nonempty(const char *s);

#endif
