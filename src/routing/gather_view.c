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
 * each message a routee won, from the first time the view is taken: a
 * clock read at each end of a gather costs a scatter of three a tenth of
 * its time, which a router nobody looks at should not pay (with metrics
 * on, their histogram reads the clock anyway).
 *
 * The counts are kept in stripes, one per worker of the system, which
 * only that worker writes (a load and a store, no locked instruction),
 * and one shared by every other thread (locked adds), summed when the
 * view is written: one shared atomic per count cost a scatter of three
 * a tenth of its time, in locked instructions and in lines passed from
 * worker to worker. A routee's calls are not counted but summed from
 * its outcomes.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "actorc/observe.h"
#include "core/alloc.h"
#include "core/ref.h"
#include "core/scheduler.h"
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
/* At most this many bytes of counts for a worker's stripes together;
 * past it (a large table on many workers) one shared stripe. */
#define STRIPES_BYTES (256 * 1024)

/* A routee's row: which routee, and its breaker. Written once, when
 * claimed; read by every count after. */
typedef struct routee_row {
    _Atomic(ac_ref *) ref;         /* retained; NULL: a free row */
    _Atomic(ac_breaker *) breaker; /* retained; the first one seen */
} routee_row;

/* One stripe of the counts: the router's, then R_COUNTS per row and
 * R_COUNTS for the shared row (`others`), padded to a cache line. */
typedef struct stripe {
    atomic_uint_fast64_t outcomes[AC__GATHER_OUTCOMES];
    atomic_uint_fast64_t events[AC__GATHER_EVENTS];
    atomic_uint_fast64_t latency[BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_ns;
    atomic_uint_fast64_t n[]; /* (rows + 1) * R_COUNTS */
} stripe;

struct ac__gather_view {
    ac_observe_source *source;
    const ac__gather_shared *sh; /* its owner, read-only parts only */
    _Atomic(ac_ref *) router;    /* borrowed from sh; set before the view sees v */
    size_t mask;                 /* rows - 1 */
    ac_system *system;           /* set with stripes */
    unsigned nstripes;           /* one per worker and a shared one, or one */
    size_t stripe_bytes;         /* a multiple of the cache line */
    _Atomic(char *) stripes;     /* nstripes * stripe_bytes; NULL until published */
    atomic_bool timing;          /* the view has been taken: time the winners */
    routee_row others;           /* beyond a full table: row index `rows` */
    routee_row rows[];
};

static void row_init(routee_row *r)
{
    atomic_init(&r->ref, NULL);
    atomic_init(&r->breaker, NULL);
}

static stripe *stripe_at(const ac__gather_view *v, char *base, unsigned i)
{
    return (stripe *)(void *)(base + (size_t)i * v->stripe_bytes);
}

/* Where the calling thread counts: a worker of the router's system in
 * its own stripe, which has no other writer (`own`: a plain add, no
 * locked instruction); any other thread in the last, shared one. NULL
 * stripe: not counting yet. */
typedef struct place {
    stripe *st;
    bool own;
} place;

static place my_place(const ac__gather_view *v)
{
    /* Acquire pairs with the publish's release: the zeroed counts. */
    char *base = atomic_load_explicit(&v->stripes, memory_order_acquire);
    if (!base)
        return (place){NULL, false};
    int w = v->nstripes > 1 ? ac__worker_index_in(v->system) : -1;
    unsigned i = w >= 0 ? (unsigned)w : v->nstripes - 1;
    return (place){(stripe *)(void *)(base + (size_t)i * v->stripe_bytes), w >= 0};
}

static size_t row_index(const ac__gather_view *v, const routee_row *r)
{
    return r == &v->others ? v->mask + 1 : (size_t)(r - v->rows);
}

ac__gather_view *ac__gather_view_create(int pool_size)
{
    size_t want = pool_size > 0 ? (size_t)pool_size * 4 : GROUP_ROWS, rows = 16;
    while (rows < want && rows < MAX_ROWS)
        rows *= 2;
    ac__gather_view *v = ac__calloc(1, sizeof *v + rows * sizeof v->rows[0]);
    if (!v)
        return NULL;
    size_t bytes = sizeof(stripe) + (rows + 1) * R_COUNTS * sizeof(atomic_uint_fast64_t);
    v->stripe_bytes = (bytes + AC__CACHELINE - 1) / AC__CACHELINE * AC__CACHELINE;
    atomic_init(&v->stripes, NULL);
    atomic_init(&v->timing, false);
    atomic_init(&v->router, NULL);
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
    free(atomic_load_explicit(&v->stripes, memory_order_relaxed));
    free(v);
}

/* ---- counting --------------------------------------------------------- */

/* A relaxed count: a load and a store in a stripe of the caller's own,
 * a locked add in the shared one. */
static inline void bump(atomic_uint_fast64_t *c, uint64_t n, bool own)
{
    if (own)
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The sum of one count over the stripes. */
static uint64_t sum(const ac__gather_view *v, size_t offset)
{
    char *base = atomic_load_explicit(&v->stripes, memory_order_acquire);
    uint64_t total = 0;
    for (unsigned i = 0; base && i < v->nstripes; i++)
        total += atomic_load_explicit(
            (atomic_uint_fast64_t *)(void *)((char *)stripe_at(v, base, i) + offset),
            memory_order_relaxed);
    return total;
}

#define COUNT_BYTES sizeof(atomic_uint_fast64_t)
#define SUM(v, field, i) sum((v), offsetof(stripe, field) + (size_t)(i) * COUNT_BYTES)
#define SUM_ROW(v, row, c) \
    sum((v), offsetof(stripe, n) + ((row) * R_COUNTS + (size_t)(c)) * COUNT_BYTES)

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

bool ac__gather_view_timing(const ac__gather_shared *sh)
{
    return sh->view && atomic_load_explicit(&sh->view->timing, memory_order_relaxed);
}

void ac__gather_view_outcome(ac__gather_shared *sh, ac__gather_outcome outcome,
                             uint64_t start_ns)
{
    ac__gather_view *v = sh->view;
    if (!v)
        return;
    place p = my_place(v);
    if (!p.st)
        return;
    bump(&p.st->outcomes[outcome], 1, p.own);
    if (outcome != AC__GATHER_FIRST || start_ns == 0)
        return;
    uint64_t now = ac__now_ns(), ns = now > start_ns ? now - start_ns : 0;
    size_t b = 0;
    while (b < BUCKETS && ns > bucket_ns[b])
        b++;
    bump(&p.st->latency[b], 1, p.own);
    bump(&p.st->latency_sum_ns, ns, p.own);
}

void ac__gather_view_event(ac__gather_shared *sh, ac__gather_event event)
{
    if (!sh->view)
        return;
    place p = my_place(sh->view);
    if (p.st)
        bump(&p.st->events[event], 1, p.own);
}

void ac__gather_view_slots(const ac__gather *g)
{
    ac__gather_view *v = g->shared->view;
    if (!v)
        return;
    place p = my_place(v);
    if (!p.st)
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
        /* Calls are not counted: they are the sum of the outcomes. */
        atomic_uint_fast64_t *n = &p.st->n[row_index(v, row_of(v, s->routee)) * R_COUNTS];
        bump(&n[which], 1, p.own);
        if (hedging && i > 0) { /* slot i is attempt i */
            bump(&n[R_HEDGES_SENT], 1, p.own);
            if (which == R_WINS)
                bump(&n[R_HEDGES_WON], 1, p.own);
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

/* A row's calls: every outcome (a slot is counted once it has one). */
static uint64_t row_calls(const ac__gather_view *v, size_t row)
{
    return SUM_ROW(v, row, R_WINS) + SUM_ROW(v, row, R_LOSSES) + SUM_ROW(v, row, R_ERRORS) +
           SUM_ROW(v, row, R_TIMEOUTS) + SUM_ROW(v, row, R_CANCELLED);
}

static void counts_write(ac_json *j, const ac__gather_view *v, const routee_row *r)
{
    size_t row = row_index(v, r);
    ac_json_key(j, count_names[R_CALLS]);
    ac_json_uint(j, row_calls(v, row));
    for (int c = R_CALLS + 1; c < R_COUNTS; c++) {
        ac_json_key(j, count_names[c]);
        ac_json_uint(j, SUM_ROW(v, row, c));
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

static void row_write(ac_json *j, const ac__gather_view *v, const routee_row *r, const char *path,
                      bool stopped)
{
    ac_json_object(j);
    ac_json_key(j, "path");
    ac_json_string(j, path);
    ac_json_key(j, "stopped");
    ac_json_bool(j, stopped);
    counts_write(j, v, r);
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
        row_write(j, v, rows[i].row, rows[i].path, ac__ref_is_dead(ref));
    }
    free(rows);
    if (row_calls(v, v->mask + 1))
        row_write(j, v, &v->others, NULL, false);
    ac_json_array_end(j);
}

static void latency_write(ac_json *j, ac__gather_view *v)
{
    ac_json_object(j);
    ac_json_key(j, "buckets");
    ac_json_array(j);
    uint64_t count = 0;
    for (size_t b = 0; b <= BUCKETS; b++) {
        uint64_t n = SUM(v, latency, b);
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
    ac_json_double(j, (double)SUM(v, latency_sum_ns, 0) / 1e9);
    ac_json_object_end(j);
}

static void view_write(ac_json *j, void *arg)
{
    ac__gather_view *v = arg;
    const ac__gather_shared *sh = v->sh;
    /* From now on the winners are timed (gathers opened from here). */
    atomic_store_explicit(&v->timing, true, memory_order_relaxed);
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
        ac_json_uint(j, SUM(v, outcomes, o));
    }
    ac_json_object_end(j);
    ac_json_key(j, "hedges");
    if (sh->names->hedges_sent) {
        ac_json_object(j);
        ac_json_key(j, "sent");
        ac_json_uint(j, SUM(v, events, AC__GATHER_HEDGE_SENT));
        ac_json_key(j, "won");
        ac_json_uint(j, SUM(v, events, AC__GATHER_HEDGE_WON));
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
    ac_json_uint(j, SUM(v, events, AC__GATHER_BUDGET_EXHAUSTED));
    ac_json_key(j, "losers_cancelled");
    ac_json_uint(j, SUM(v, events, AC__GATHER_CANCELLED));
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
    /* A stripe per worker and a shared one, unless that is too much. */
    int workers = ac_system_workers(system);
    unsigned n = workers > 0 && (size_t)(workers + 1) * v->stripe_bytes <= STRIPES_BYTES
                     ? (unsigned)workers + 1
                     : 1;
    char *base = ac__aligned_alloc(AC__CACHELINE, n * v->stripe_bytes);
    if (!base)
        return; /* out of the view is all a failure costs */
    /* All zero bits: zero counts (atomic_uint_fast64_t is lock-free). */
    memset(base, 0, n * v->stripe_bytes);
    v->system = system;
    v->nstripes = n;
    /* Release: the counts zeroed, system and nstripes set (pairs with
     * my_place's and sum's acquire). */
    atomic_store_explicit(&v->stripes, base, memory_order_release);
    v->sh = sh;
    atomic_store_explicit(&v->router, router, memory_order_relaxed);
    v->source = ac_observe_add(system, "routers", view_write, v); /* publishes v */
    ac_clear_error(); /* out of the view is all a failure costs */
}
