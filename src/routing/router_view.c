/*
 * A pool or group router in the system's view (router_view.h): which
 * routees it has, how many messages each was sent, which breaker guards
 * each and, for smallest-mailbox routers, how deep each mailbox is.
 *
 * The send path stays as it was: a sender that routes from the snapshot
 * (router_front.h) finds routee i's row beside it, pointed at when the
 * snapshot was made, and adds one to it with a relaxed load and store —
 * no lock, no lookup, no locked instruction (router_view.h says what
 * that costs in exactness). The router's turn (breakers, custom strategies,
 * member groups, the mailbox path) finds the row by the routee's ref.
 *
 * Rows live in an open-addressing table keyed by the routee's ref,
 * claimed by CAS and never emptied, so a row outlives every snapshot
 * that points at it. The table is sized at creation, four times the pool
 * (64 rows for a group, whose size changes), at most 4096; a routee
 * beyond a full table counts in one shared row. Which rows are the set
 * now is a generation: each change marks the set's rows with the next
 * one, then publishes it; a row marked with the published generation or
 * a later one is in the set. A view taken during a change may show a
 * routee that has just left, never miss one that stays.
 */
#include <stdlib.h>
#include <string.h>

#include "actorc/observe.h"
#include "core/alloc.h"
#include "core/ref.h"
#include "core/turn.h"
#include "routing/router_view.h"

#define GROUP_ROWS 64
#define MAX_ROWS 4096

struct ac__router_view {
    ac_observe_source *source;
    ac_ref *router; /* retained; set before the view sees v */
    const ac__router_kind *kind;
    bool is_group;
    /* The set's generation: rows marked with it or later are the set.
     * Release store in the router's turn, after the marks; acquire load
     * by the writer. */
    atomic_uint_fast64_t set;
    atomic_uint_fast64_t dead_letters;
    size_t mask; /* rows - 1 */
    ac__router_view_row others; /* beyond a full table */
    ac__router_view_row rows[];
};

static void view_write(ac_json *j, void *arg);

static void row_init(ac__router_view_row *r)
{
    atomic_init(&r->ref, NULL);
    atomic_init(&r->breaker, NULL);
    atomic_init(&r->routed, 0);
    atomic_init(&r->refused, 0);
    atomic_init(&r->set, 0);
}

ac__router_view *ac__router_view_create(const ac__router_cfg *cfg)
{
    if (cfg->kind->own_view)
        return NULL;
    size_t want = cfg->is_group ? GROUP_ROWS : (size_t)cfg->n * 4, rows = 16;
    while (rows < want && rows < MAX_ROWS)
        rows *= 2;
    ac__router_view *v = ac__calloc(1, sizeof *v + rows * sizeof v->rows[0]);
    if (!v)
        return NULL;
    v->kind = cfg->kind;
    v->is_group = cfg->is_group;
    atomic_init(&v->set, 0);
    atomic_init(&v->dead_letters, 0);
    v->mask = rows - 1;
    row_init(&v->others);
    for (size_t i = 0; i < rows; i++)
        row_init(&v->rows[i]);
    return v;
}

static void row_fini(ac__router_view_row *r)
{
    ac_ref_release(atomic_load_explicit(&r->ref, memory_order_relaxed));
    ac_breaker *b = atomic_load_explicit(&r->breaker, memory_order_relaxed);
    if (b)
        ac_breaker_release(b);
}

void ac__router_view_free(ac__router_view *v)
{
    if (!v)
        return;
    ac_observe_remove(v->source);
    for (size_t i = 0; i <= v->mask; i++)
        row_fini(&v->rows[i]);
    ac_ref_release(v->router);
    free(v);
}

void ac__router_view_publish(ac__router_view *v, ac_system *system, ac_ref *router)
{
    if (!v || v->router)
        return; /* the same cell across restarts */
    v->router = ac_ref_retain(router);
    /* Into the system's view now, not at spawn: a spawn holds the
     * guardian's lock, which finding the view takes. */
    v->source = ac_observe_add(system, "routers", view_write, v); /* publishes v */
    ac_clear_error(); /* out of the view is all a failure costs */
}

/* ---- rows ------------------------------------------------------------- */

ac__router_view_row *ac__router_view_row_of(ac__router_view *v, ac_ref *routee)
{
    if (!v)
        return NULL;
    uintptr_t h = (uintptr_t)routee;
    h ^= h >> 17;
    h *= (uintptr_t)0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 7) & v->mask;
    for (size_t probes = 0; probes <= v->mask; probes++, i = (i + 1) & v->mask) {
        ac__router_view_row *r = &v->rows[i];
        /* Acquire pairs with the release CAS: the ref is retained before
         * it is seen. Only the router's turn claims, so no CAS can lose. */
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
        if (key == routee)
            return r;
    }
    return &v->others;
}

static void note_breaker(ac__router_view_row *r, ac_breaker *breaker)
{
    if (!breaker || atomic_load_explicit(&r->breaker, memory_order_relaxed))
        return;
    /* Release: pairs with the writer's acquire load; the breaker is
     * retained before it is seen. Only the router's turn stores it. */
    atomic_store_explicit(&r->breaker, ac_breaker_retain(breaker), memory_order_release);
}

void ac__router_view_mark(ac__router_view *v, const ac__router_state *st)
{
    if (!v)
        return;
    uint64_t next = atomic_load_explicit(&v->set, memory_order_relaxed) + 1;
    for (size_t i = 0; st && i < st->n; i++) {
        ac__router_view_row *r = ac__router_view_row_of(v, st->routees[i]);
        if (r == &v->others)
            continue;
        atomic_store_explicit(&r->set, next, memory_order_relaxed);
        note_breaker(r, st->breakers ? st->breakers[i] : NULL);
    }
    /* Release: the marks before the generation that names them. */
    atomic_store_explicit(&v->set, next, memory_order_release);
}

void ac__router_view_routed(ac__router_view *v, ac_ref *routee)
{
    if (v)
        ac__router_view_count(ac__router_view_row_of(v, routee));
}

void ac__router_view_refused(ac__router_view *v, ac_ref *routee)
{
    if (v)
        atomic_fetch_add_explicit(&ac__router_view_row_of(v, routee)->refused, 1,
                                  memory_order_relaxed);
}

void ac__router_view_dead_letter(ac__router_view *v)
{
    if (v)
        atomic_fetch_add_explicit(&v->dead_letters, 1, memory_order_relaxed);
}

/* ---- writing ---------------------------------------------------------- */

typedef struct shown_row {
    const ac__router_view_row *row;
    const char *path;
} shown_row;

static int by_path(const void *a, const void *b)
{
    const shown_row *x = a, *y = b;
    return strcmp(x->path, y->path);
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

static void mailbox_write(ac_json *j, const ac__router_view *v, const ac_ref *ref)
{
    int len = v->kind->count_mailbox && ref ? ac__mailbox_len(ref) : AC__MAILBOX_UNKNOWN;
    if (len >= 0)
        ac_json_int(j, len);
    else
        ac_json_null(j);
}

static void row_write(ac_json *j, const ac__router_view *v, const ac__router_view_row *r,
                      const char *path)
{
    ac_ref *ref = atomic_load_explicit(&r->ref, memory_order_relaxed);
    ac_json_object(j);
    ac_json_key(j, "path");
    ac_json_string(j, path);
    ac_json_key(j, "stopped");
    ac_json_bool(j, ref && ac__ref_is_dead(ref));
    ac_json_key(j, "routed");
    ac_json_uint(j, atomic_load_explicit(&r->routed, memory_order_relaxed));
    ac_json_key(j, "refused");
    ac_json_uint(j, atomic_load_explicit(&r->refused, memory_order_relaxed));
    ac_json_key(j, "mailbox");
    mailbox_write(j, v, ref);
    ac_json_key(j, "breaker");
    breaker_write(j, atomic_load_explicit(&r->breaker, memory_order_acquire));
    ac_json_object_end(j);
}

/* The rows of the set, by path; *n of them; NULL when out of memory. */
static shown_row *set_rows(const ac__router_view *v, size_t *n)
{
    /* Acquire pairs with the release store of mark(). */
    uint64_t set = atomic_load_explicit(&v->set, memory_order_acquire);
    shown_row *rows = ac__malloc((v->mask + 1) * sizeof *rows);
    *n = 0;
    for (size_t i = 0; rows && i <= v->mask; i++) {
        const ac__router_view_row *r = &v->rows[i];
        /* Acquire pairs with the claim's release CAS. */
        ac_ref *ref = atomic_load_explicit(&r->ref, memory_order_acquire);
        if (ref && set > 0 && atomic_load_explicit(&r->set, memory_order_relaxed) >= set)
            rows[(*n)++] = (shown_row){.row = r, .path = ac_ref_path(ref)};
    }
    if (rows)
        qsort(rows, *n, sizeof *rows, by_path);
    return rows;
}

/* Every message routed, the set's and the departed routees' alike. */
static uint64_t routed_total(const ac__router_view *v)
{
    uint64_t total = atomic_load_explicit(&v->others.routed, memory_order_relaxed);
    for (size_t i = 0; i <= v->mask; i++)
        total += atomic_load_explicit(&v->rows[i].routed, memory_order_relaxed);
    return total;
}

static void routees_write(ac_json *j, const ac__router_view *v, size_t *size)
{
    size_t n;
    shown_row *rows = set_rows(v, &n);
    ac_json_array(j);
    for (size_t i = 0; i < n; i++)
        row_write(j, v, rows[i].row, rows[i].path);
    free(rows);
    if (atomic_load_explicit(&v->others.routed, memory_order_relaxed))
        row_write(j, v, &v->others, NULL);
    ac_json_array_end(j);
    *size = n;
}

static void view_write(ac_json *j, void *arg)
{
    ac__router_view *v = arg;
    ac_json_object(j);
    ac_json_key(j, "path");
    ac_json_string(j, ac_ref_path(v->router));
    ac_json_key(j, "kind");
    ac_json_string(j, v->kind->name);
    ac_json_key(j, "group");
    ac_json_bool(j, v->is_group);
    ac_json_key(j, "routed");
    ac_json_uint(j, routed_total(v));
    ac_json_key(j, "dead_letters");
    ac_json_uint(j, atomic_load_explicit(&v->dead_letters, memory_order_relaxed));
    ac_json_key(j, "routees");
    size_t size;
    routees_write(j, v, &size);
    ac_json_key(j, "size");
    ac_json_uint(j, size);
    ac_json_object_end(j);
}
