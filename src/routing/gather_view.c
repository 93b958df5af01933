/*
 * A gathering router in the system's view (gather_view.h): what an
 * operator asks of a hedged or scatter/gather router — which routees
 * win, how often hedges fire and win, which breaker is open, where the
 * tail is.
 *
 * Every count is a relaxed atomic, kept whether metrics are on or not
 * (metrics count the same events into the registry, by routee number;
 * the view needs them by routee, for groups too, and without metrics).
 * Per-routee counts live in an open-addressing table keyed by the
 * routee's ref, claimed by CAS and never emptied, so a lookup is a hash
 * and, almost always, one load; a routee that has gone keeps its row
 * (shown as stopped). The table is sized at creation, four times the
 * pool (64 rows for a group, whose size changes); a routee beyond a full
 * table counts in one shared row. A slot's outcome is counted when its
 * gather is freed, so a routee's counts trail the router's totals by the
 * gathers still open. The winners' latency is a fixed histogram from 100
 * us to 10 s: the time from the first request to the caller's answer of
 * each message a routee won.
 */
#include <stdlib.h>
#include <string.h>

#include "actorc/observe.h"
#include "core/alloc.h"
#include "core/ref.h"
#include "routing/gather_view.h"

enum {
    R_CALLS,
    R_WINS,
    R_LOSSES,
    R_ERRORS,
    R_TIMEOUTS,
    R_CANCELLED,
    R_HEDGES_SENT,
    R_HEDGES_WON,
    R_COUNTS
};

static const char *const count_names[R_COUNTS] = {
    [R_CALLS] = "calls",         [R_WINS] = "wins",           [R_LOSSES] = "losses",
    [R_ERRORS] = "errors",       [R_TIMEOUTS] = "timeouts",   [R_CANCELLED] = "cancelled",
    [R_HEDGES_SENT] = "hedges_sent", [R_HEDGES_WON] = "hedges_won",
};

static const char *const outcome_names[AC__GATHER_OUTCOMES] = {
    [AC__GATHER_FIRST] = "first",
    [AC__GATHER_TIMEOUT] = "timeout",
    [AC__GATHER_ALL_FAILED] = "all_failed",
    [AC__GATHER_STOPPED] = "stopped",
    [AC__GATHER_NO_REPLY_TARGET] = "no_reply_target",
};

/* Upper bounds of the latency buckets, in ns; +Inf after the last. */
static const uint64_t bucket_ns[] = {
    100000,    250000,    500000,     1000000,    2500000,    5000000,
    10000000,  25000000,  50000000,   100000000,  250000000,  500000000,
    1000000000, 2500000000, 5000000000, 10000000000,
};
#define BUCKETS (sizeof bucket_ns / sizeof bucket_ns[0])

#define GROUP_ROWS 64
#define MAX_ROWS 4096

typedef struct routee_row {
    _Atomic(ac_ref *) ref;         /* retained; NULL: a free row */
    _Atomic(ac_breaker *) breaker; /* retained; the first one seen */
    atomic_uint_fast64_t n[R_COUNTS];
} routee_row;

struct ac__gather_view {
    ac_observe_source *source;
    const ac__gather_shared *sh; /* its owner, read-only parts only */
    _Atomic(ac_ref *) router;    /* borrowed from sh; set before the view sees v */
    atomic_uint_fast64_t outcomes[AC__GATHER_OUTCOMES];
    atomic_uint_fast64_t events[AC__GATHER_EVENTS];
    atomic_uint_fast64_t latency[BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_ns;
    size_t mask; /* rows - 1 */
    routee_row others; /* beyond a full table */
    routee_row rows[];
};

static void row_init(routee_row *r)
{
    atomic_init(&r->ref, NULL);
    atomic_init(&r->breaker, NULL);
    for (int i = 0; i < R_COUNTS; i++)
        atomic_init(&r->n[i], 0);
}

ac__gather_view *ac__gather_view_create(int pool_size)
{
    size_t want = pool_size > 0 ? (size_t)pool_size * 4 : GROUP_ROWS, rows = 16;
    while (rows < want && rows < MAX_ROWS)
        rows *= 2;
    ac__gather_view *v = ac__calloc(1, sizeof *v + rows * sizeof v->rows[0]);
    if (!v)
        return NULL;
    atomic_init(&v->router, NULL);
    for (int i = 0; i < AC__GATHER_OUTCOMES; i++)
        atomic_init(&v->outcomes[i], 0);
    for (int i = 0; i < AC__GATHER_EVENTS; i++)
        atomic_init(&v->events[i], 0);
    for (size_t i = 0; i <= BUCKETS; i++)
        atomic_init(&v->latency[i], 0);
    atomic_init(&v->latency_sum_ns, 0);
    v->mask = rows - 1;
    row_init(&v->others);
    for (size_t i = 0; i < rows; i++)
        row_init(&v->rows[i]);
    return v;
}

static void row_fini(routee_row *r)
{
    ac_ref_release(atomic_load_explicit(&r->ref, memory_order_relaxed));
    ac_breaker *b = atomic_load_explicit(&r->breaker, memory_order_relaxed);
    if (b)
        ac_breaker_release(b);
}

void ac__gather_view_free(ac__gather_view *v)
{
    if (!v)
        return;
    ac_observe_remove(v->source);
    for (size_t i = 0; i <= v->mask; i++)
        row_fini(&v->rows[i]);
    free(v);
}

/* ---- counting --------------------------------------------------------- */

static inline void bump(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The row of `routee`, claimed on first use; the shared row when the
 * table is full. */
static routee_row *row_of(ac__gather_view *v, ac_ref *routee)
{
    uintptr_t h = (uintptr_t)routee;
    h ^= h >> 17;
    h *= (uintptr_t)0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 7) & v->mask;
    for (size_t probes = 0; probes <= v->mask; probes++, i = (i + 1) & v->mask) {
        routee_row *r = &v->rows[i];
        /* Acquire pairs with the release CAS: the ref is retained before
         * it is seen. */
        ac_ref *key = atomic_load_explicit(&r->ref, memory_order_acquire);
        if (key == routee)
            return r;
        if (key)
            continue;
        ac_ref_retain(routee);
        if (atomic_compare_exchange_strong_explicit(&r->ref, &key, routee, memory_order_release,
                                                    memory_order_acquire))
            return r;
        ac_ref_release(routee);
        if (key == routee) /* claimed for the same routee meanwhile */
            return r;
    }
    return &v->others;
}

void ac__gather_view_outcome(ac__gather_shared *sh, ac__gather_outcome outcome,
                             uint64_t start_ns)
{
    ac__gather_view *v = sh->view;
    if (!v)
        return;
    bump(&v->outcomes[outcome], 1);
    if (outcome != AC__GATHER_FIRST || start_ns == 0)
        return;
    uint64_t now = ac__now_ns(), ns = now > start_ns ? now - start_ns : 0;
    size_t b = 0;
    while (b < BUCKETS && ns > bucket_ns[b])
        b++;
    bump(&v->latency[b], 1);
    bump(&v->latency_sum_ns, ns);
}

void ac__gather_view_event(ac__gather_shared *sh, ac__gather_event event)
{
    if (sh->view)
        bump(&sh->view->events[event], 1);
}

void ac__gather_view_slots(const ac__gather *g)
{
    ac__gather_view *v = g->shared->view;
    if (!v)
        return;
    bool hedging = g->shared->names->hedges_sent != NULL;
    for (uint32_t i = 0; i < g->n; i++) {
        const ac__gather_slot *s = &g->slots[i];
        int which;
        switch (atomic_load_explicit(&s->state, memory_order_relaxed)) {
        case AC__SLOT_WON:
            which = R_WINS;
            break;
        case AC__SLOT_OK:
            which = R_LOSSES;
            break;
        case AC__SLOT_CANCELLED:
            which = R_CANCELLED;
            break;
        case AC__SLOT_FAILED:
            which = R_ERRORS;
            break;
        case AC__SLOT_TIMEOUT:
            which = R_TIMEOUTS;
            break;
        default:
            continue; /* never sent, or let go at teardown */
        }
        routee_row *r = row_of(v, s->routee);
        bump(&r->n[R_CALLS], 1);
        bump(&r->n[which], 1);
        if (hedging && i > 0) { /* slot i is attempt i */
            bump(&r->n[R_HEDGES_SENT], 1);
            if (which == R_WINS)
                bump(&r->n[R_HEDGES_WON], 1);
        }
    }
}

void ac__gather_view_breaker(ac__gather_shared *sh, ac_ref *routee, ac_breaker *breaker)
{
    ac__gather_view *v = sh->view;
    if (!v)
        return;
    routee_row *r = row_of(v, routee);
    if (r == &v->others || atomic_load_explicit(&r->breaker, memory_order_acquire))
        return;
    ac_breaker *none = NULL;
    ac_breaker_retain(breaker);
    /* Release: pairs with the acquire loads; the breaker is retained
     * before it is seen. */
    if (!atomic_compare_exchange_strong_explicit(&r->breaker, &none, breaker,
                                                 memory_order_release, memory_order_relaxed))
        ac_breaker_release(breaker);
}

/* ---- writing ---------------------------------------------------------- */

typedef struct shown_row {
    const routee_row *row;
    const char *path;
} shown_row;

static int by_path(const void *a, const void *b)
{
    const shown_row *x = a, *y = b;
    return strcmp(x->path, y->path);
}

static void counts_write(ac_json *j, const routee_row *r)
{
    for (int c = 0; c < R_COUNTS; c++) {
        ac_json_key(j, count_names[c]);
        ac_json_uint(j, atomic_load_explicit(&r->n[c], memory_order_relaxed));
    }
}

static void breaker_write(ac_json *j, ac_breaker *b)
{
    ac_breaker_info info;
    if (!b || ac_breaker_get_info(b, &info) != AC_OK) {
        ac_json_null(j);
        return;
    }
    ac_json_object(j);
    ac_json_key(j, "name");
    ac_json_string(j, ac_breaker_name(b));
    ac_json_key(j, "state");
    ac_json_string(j, ac_breaker_state_name(info.state));
    ac_json_key(j, "failures");
    ac_json_uint(j, (uint64_t)info.failures);
    ac_json_key(j, "opened");
    ac_json_uint(j, info.opened);
    ac_json_object_end(j);
}

static void row_write(ac_json *j, const routee_row *r, const char *path, bool stopped)
{
    ac_json_object(j);
    ac_json_key(j, "path");
    ac_json_string(j, path);
    ac_json_key(j, "stopped");
    ac_json_bool(j, stopped);
    counts_write(j, r);
    ac_json_key(j, "breaker");
    breaker_write(j, atomic_load_explicit(&r->breaker, memory_order_acquire));
    ac_json_object_end(j);
}

static void routees_write(ac_json *j, ac__gather_view *v)
{
    ac_json_array(j);
    size_t n = 0;
    shown_row *rows = ac__malloc((v->mask + 1) * sizeof *rows);
    for (size_t i = 0; rows && i <= v->mask; i++) {
        /* Acquire pairs with the claim's release CAS. */
        ac_ref *ref = atomic_load_explicit(&v->rows[i].ref, memory_order_acquire);
        if (ref)
            rows[n++] = (shown_row){.row = &v->rows[i], .path = ac_ref_path(ref)};
    }
    if (rows)
        qsort(rows, n, sizeof *rows, by_path);
    for (size_t i = 0; i < n; i++) {
        ac_ref *ref = atomic_load_explicit(&rows[i].row->ref, memory_order_relaxed);
        row_write(j, rows[i].row, rows[i].path, ac__ref_is_dead(ref));
    }
    free(rows);
    if (atomic_load_explicit(&v->others.n[R_CALLS], memory_order_relaxed))
        row_write(j, &v->others, NULL, false);
    ac_json_array_end(j);
}

static void latency_write(ac_json *j, ac__gather_view *v)
{
    ac_json_object(j);
    ac_json_key(j, "buckets");
    ac_json_array(j);
    uint64_t count = 0;
    for (size_t b = 0; b <= BUCKETS; b++) {
        uint64_t n = atomic_load_explicit(&v->latency[b], memory_order_relaxed);
        count += n;
        ac_json_object(j);
        ac_json_key(j, "le");
        if (b < BUCKETS)
            ac_json_double(j, (double)bucket_ns[b] / 1e9);
        else
            ac_json_null(j);
        ac_json_key(j, "count");
        ac_json_uint(j, n);
        ac_json_object_end(j);
    }
    ac_json_array_end(j);
    ac_json_key(j, "count");
    ac_json_uint(j, count);
    ac_json_key(j, "sum");
    ac_json_double(j, (double)atomic_load_explicit(&v->latency_sum_ns, memory_order_relaxed) / 1e9);
    ac_json_object_end(j);
}

static void view_write(ac_json *j, void *arg)
{
    ac__gather_view *v = arg;
    const ac__gather_shared *sh = v->sh;
    ac_ref *router = atomic_load_explicit(&v->router, memory_order_relaxed);
    ac_json_object(j);
    ac_json_key(j, "path");
    ac_json_string(j, router ? ac_ref_path(router) : NULL);
    ac_json_key(j, "kind");
    ac_json_string(j, sh->names->label);
    ac_json_key(j, "pool_size");
    ac_json_int(j, sh->pool_size);
    ac_json_key(j, "quorum");
    ac_json_uint(j, sh->quorum);
    ac_json_key(j, "timeout_ms");
    ac_json_uint(j, sh->timeout_ms);
    ac_json_key(j, "messages");
    ac_json_object(j);
    for (int o = 0; o < AC__GATHER_OUTCOMES; o++) {
        ac_json_key(j, outcome_names[o]);
        ac_json_uint(j, atomic_load_explicit(&v->outcomes[o], memory_order_relaxed));
    }
    ac_json_object_end(j);
    ac_json_key(j, "hedges");
    if (sh->names->hedges_sent) {
        ac_json_object(j);
        ac_json_key(j, "sent");
        ac_json_uint(j, atomic_load_explicit(&v->events[AC__GATHER_HEDGE_SENT],
                                             memory_order_relaxed));
        ac_json_key(j, "won");
        ac_json_uint(j, atomic_load_explicit(&v->events[AC__GATHER_HEDGE_WON],
                                             memory_order_relaxed));
        ac_json_object_end(j);
    } else {
        ac_json_null(j);
    }
    ac_json_key(j, "hedge_delay");
    if (sh->policy->delay_write && sh->policy_state)
        sh->policy->delay_write(j, sh->policy_state);
    else
        ac_json_null(j);
    ac_json_key(j, "budget_exhausted");
    ac_json_uint(j, atomic_load_explicit(&v->events[AC__GATHER_BUDGET_EXHAUSTED],
                                         memory_order_relaxed));
    ac_json_key(j, "losers_cancelled");
    ac_json_uint(j, atomic_load_explicit(&v->events[AC__GATHER_CANCELLED], memory_order_relaxed));
    ac_json_key(j, "latency");
    latency_write(j, v);
    ac_json_key(j, "routees");
    routees_write(j, v);
    ac_json_object_end(j);
}

void ac__gather_view_publish(ac__gather_shared *sh, ac_system *system, ac_ref *router)
{
    ac__gather_view *v = sh->view;
    if (!v || v->source)
        return;
    v->sh = sh;
    atomic_store_explicit(&v->router, router, memory_order_relaxed);
    v->source = ac_observe_add(system, "routers", view_write, v); /* publishes v */
    ac_clear_error(); /* out of the view is all a failure costs */
}
