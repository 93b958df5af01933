#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- time and waiting ------------------------------------------------- */

double ts_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t ts_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ts_sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void short_nap(void)
{
    struct timespec ts = {0, 1000000L}; /* 1 ms */
    nanosleep(&ts, NULL);
}

bool ts_wait_until(bool (*cond)(void *arg), void *arg, double timeout_s)
{
    double deadline = ts_now() + timeout_s;
    for (;;) {
        if (cond(arg)) {
            return true;
        }
        if (ts_now() >= deadline) {
            return cond(arg);
        }
        short_nap();
    }
}

typedef struct counter_goal {
    const atomic_llong *counter;
    long long target;
} counter_goal;

static bool counter_ge(void *arg)
{
    const counter_goal *g = arg;
    return atomic_load(g->counter) >= g->target;
}

static bool counter_eq(void *arg)
{
    const counter_goal *g = arg;
    return atomic_load(g->counter) == g->target;
}

bool ts_wait_ge(const atomic_llong *counter, long long target, double timeout_s)
{
    counter_goal g = {counter, target};
    return ts_wait_until(counter_ge, &g, timeout_s);
}

bool ts_wait_eq(const atomic_llong *counter, long long target, double timeout_s)
{
    counter_goal g = {counter, target};
    return ts_wait_until(counter_eq, &g, timeout_s);
}

typedef struct dl_goal {
    const ac_system *sys;
    uint64_t target;
} dl_goal;

static bool dead_letters_ge(void *arg)
{
    const dl_goal *g = arg;
    return ac_dead_letter_count(g->sys) >= g->target;
}

bool ts_wait_dead_letters(const ac_system *sys, uint64_t target, double timeout_s)
{
    dl_goal g = {sys, target};
    return ts_wait_until(dead_letters_ge, &g, timeout_s);
}

/* ---- gate ---------------------------------------------------------------- */

void ts_gate_init(ts_gate *g)
{
    atomic_init(&g->open, 0);
    atomic_init(&g->waiting, 0);
}

void ts_gate_open(ts_gate *g)
{
    atomic_store(&g->open, 1);
}

static bool gate_is_open(void *arg)
{
    ts_gate *g = arg;
    return atomic_load(&g->open) != 0;
}

bool ts_gate_wait(ts_gate *g, double timeout_s)
{
    atomic_fetch_add(&g->waiting, 1);
    bool ok = ts_wait_until(gate_is_open, g, timeout_s);
    atomic_fetch_sub(&g->waiting, 1);
    return ok;
}

static bool gate_has_waiter(void *arg)
{
    ts_gate *g = arg;
    return atomic_load(&g->waiting) > 0;
}

bool ts_gate_wait_for_waiter(ts_gate *g, double timeout_s)
{
    return ts_wait_until(gate_has_waiter, g, timeout_s);
}

/* ---- recorder ---------------------------------------------------------- */

ts_recorder *ts_rec_new(void)
{
    ts_recorder *r = calloc(1, sizeof *r);
    if (r == NULL) {
        abort();
    }
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void ts_rec_free(ts_recorder *r)
{
    if (r == NULL) {
        return;
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void ts_rec_add(ts_recorder *r, const char *fmt, ...)
{
    char buf[TS_REC_LABEL];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (r->n < TS_REC_MAX) {
        memcpy(r->labels[r->n], buf, sizeof buf);
        r->n++;
    } else {
        r->dropped++;
    }
    pthread_mutex_unlock(&r->mu);
}

size_t ts_rec_count(ts_recorder *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->n + r->dropped;
    pthread_mutex_unlock(&r->mu);
    return n;
}

size_t ts_rec_count_of(ts_recorder *r, const char *label)
{
    size_t c = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->labels[i], label) == 0) {
            c++;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return c;
}

long ts_rec_index_of(ts_recorder *r, const char *label)
{
    long at = -1;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->labels[i], label) == 0) {
            at = (long)i;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return at;
}

void ts_rec_get(ts_recorder *r, size_t i, char *buf, size_t cap)
{
    if (cap == 0) {
        return;
    }
    buf[0] = '\0';
    pthread_mutex_lock(&r->mu);
    if (i < r->n) {
        snprintf(buf, cap, "%s", r->labels[i]);
    }
    pthread_mutex_unlock(&r->mu);
}

typedef struct rec_goal {
    ts_recorder *r;
    size_t n;
    const char *label;
} rec_goal;

static bool rec_has_count(void *arg)
{
    rec_goal *g = arg;
    return ts_rec_count(g->r) >= g->n;
}

static bool rec_has_label(void *arg)
{
    rec_goal *g = arg;
    return ts_rec_index_of(g->r, g->label) >= 0;
}

static bool rec_has_count_of(void *arg)
{
    rec_goal *g = arg;
    return ts_rec_count_of(g->r, g->label) >= g->n;
}

bool ts_rec_wait_count_of(ts_recorder *r, const char *label, size_t n, double timeout_s)
{
    rec_goal g = {r, n, label};
    return ts_wait_until(rec_has_count_of, &g, timeout_s);
}

bool ts_rec_wait_count(ts_recorder *r, size_t n, double timeout_s)
{
    rec_goal g = {r, n, NULL};
    return ts_wait_until(rec_has_count, &g, timeout_s);
}

bool ts_rec_wait_for(ts_recorder *r, const char *label, double timeout_s)
{
    rec_goal g = {r, 0, label};
    return ts_wait_until(rec_has_label, &g, timeout_s);
}

void ts_rec_dump(ts_recorder *r, const char *title)
{
    pthread_mutex_lock(&r->mu);
    fprintf(stderr, "-- %s: %zu events (%zu dropped)\n", title, r->n, r->dropped);
    for (size_t i = 0; i < r->n; i++) {
        fprintf(stderr, "   %3zu %s\n", i, r->labels[i]);
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- log capture ------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    if (s == NULL) {
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d == NULL) {
        abort();
    }
    memcpy(d, s, n);
    return d;
}

ts_log_capture *ts_log_capture_new(void)
{
    ts_log_capture *c = calloc(1, sizeof *c);
    if (c == NULL) {
        abort();
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void ts_log_line_clear(ts_log_line *line)
{
    free(line->system_name);
    free(line->path);
    free(line->text);
    line->system_name = line->path = line->text = NULL;
}

void ts_log_capture_free(ts_log_capture *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        ts_log_line_clear(&c->lines[i]);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void ts_log_sink(void *user, ac_log_level level, const char *system_name,
                 const char *path, const char *text)
{
    ts_log_capture *c = user;
    if (c == NULL) {
        return;
    }
    ts_log_line line = {
        .level = level,
        .system_name = dup_or_null(system_name),
        .path = dup_or_null(path),
        .text = dup_or_null(text),
    };
    pthread_mutex_lock(&c->mu);
    if (c->n < TS_LOG_MAX) {
        c->lines[c->n++] = line;
        line.system_name = line.path = line.text = NULL;
    } else {
        c->dropped++;
    }
    pthread_mutex_unlock(&c->mu);
    ts_log_line_clear(&line);
}

size_t ts_log_count(ts_log_capture *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n + c->dropped;
    pthread_mutex_unlock(&c->mu);
    return n;
}

bool ts_log_get(ts_log_capture *c, size_t i, ts_log_line *out)
{
    bool ok = false;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->mu);
    if (i < c->n) {
        out->level = c->lines[i].level;
        out->system_name = dup_or_null(c->lines[i].system_name);
        out->path = dup_or_null(c->lines[i].path);
        out->text = dup_or_null(c->lines[i].text);
        ok = true;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

size_t ts_log_count_text(ts_log_capture *c, const char *needle)
{
    size_t k = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        if (c->lines[i].text != NULL && strstr(c->lines[i].text, needle) != NULL) {
            k++;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return k;
}

long ts_log_find_text(ts_log_capture *c, const char *needle)
{
    long at = -1;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        if (c->lines[i].text != NULL && strstr(c->lines[i].text, needle) != NULL) {
            at = (long)i;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return at;
}

typedef struct log_goal {
    ts_log_capture *c;
    const char *needle;
} log_goal;

static bool log_has_text(void *arg)
{
    log_goal *g = arg;
    return ts_log_find_text(g->c, g->needle) >= 0;
}

bool ts_log_wait_text(ts_log_capture *c, const char *needle, double timeout_s)
{
    log_goal g = {c, needle};
    return ts_wait_until(log_has_text, &g, timeout_s);
}

void ts_log_dump(ts_log_capture *c, const char *title)
{
    pthread_mutex_lock(&c->mu);
    fprintf(stderr, "-- %s: %zu lines (%zu dropped)\n", title, c->n, c->dropped);
    for (size_t i = 0; i < c->n; i++) {
        const ts_log_line *l = &c->lines[i];
        fprintf(stderr, "   [%s] %s %s: %s\n", ac_log_level_name(l->level),
                l->system_name ? l->system_name : "(null)",
                l->path ? l->path : "(null)", l->text ? l->text : "(null)");
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- fixture ------------------------------------------------------------ */

int ts_setup(void **state)
{
    ts_fixture *fx = calloc(1, sizeof *fx);
    if (fx == NULL) {
        return -1;
    }
    ac_clear_error();
    *state = fx;
    return 0;
}

int ts_teardown(void **state)
{
    ts_fixture *fx = *state;
    if (fx == NULL) {
        return 0;
    }
    if (fx->sys != NULL) {
        ac_system_terminate(fx->sys);
        fx->sys = NULL;
    }
    if (fx->data != NULL) {
        if (fx->data_free != NULL) {
            fx->data_free(fx->data);
        }
        free(fx->data);
    }
    ts_log_capture_free(fx->log);
    ts_rec_free(fx->rec);
    free(fx);
    *state = NULL;
    return 0;
}

void *ts_fx_data(ts_fixture *fx, size_t size, void (*free_fn)(void *))
{
    if (fx->data != NULL) {
        abort(); /* one data block per test */
    }
    fx->data = calloc(1, size);
    if (fx->data == NULL) {
        abort();
    }
    fx->data_free = free_fn;
    return fx->data;
}

ts_recorder *ts_fx_rec(ts_fixture *fx)
{
    if (fx->rec == NULL) {
        fx->rec = ts_rec_new();
    }
    return fx->rec;
}

ts_log_capture *ts_fx_log(ts_fixture *fx)
{
    if (fx->log == NULL) {
        fx->log = ts_log_capture_new();
    }
    return fx->log;
}

ac_system *ts_fx_system(ts_fixture *fx, const char *name, const ac_system_options *opts)
{
    ac_system_options o = {0};
    if (opts != NULL) {
        o = *opts;
    }
    if (o.log_sink == NULL) {
        o.log_sink = ts_log_sink;
        o.log_sink_user = ts_fx_log(fx);
    }
    fx->sys = ac_system_create(name, &o);
    if (fx->sys == NULL) {
        fprintf(stderr, "ac_system_create(%s): %s (%s)\n", name,
                ac_status_name(ac_last_status()), ac_last_error());
    }
    return fx->sys;
}

ac_status ts_fx_terminate(ts_fixture *fx)
{
    ac_system *sys = fx->sys;
    fx->sys = NULL;
    return ac_system_terminate(sys);
}

/* ---- misc --------------------------------------------------------------- */

ac_ref *ts_spawn(ac_system *sys, const ac_actor_def *def, void *user_data, const char *name)
{
    ac_props *p = ac_props_new(def, user_data);
    if (p == NULL) {
        return NULL;
    }
    ac_ref *r = ac_spawn(sys, p, name);
    if (r == NULL) {
        fprintf(stderr, "ac_spawn(%s): %s (%s)\n", name ? name : "(anon)",
                ac_status_name(ac_last_status()), ac_last_error());
    }
    return r;
}

long ts_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        return def;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0') {
        return def;
    }
    return x;
}

bool ts_nonempty(const char *s)
{
    return s != NULL && s[0] != '\0';
}
