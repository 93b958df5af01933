/*
 * The view of a running system (actorc/observe.h): the system, a page of
 * the actor tree, and the sections its sources add.
 *
 * Sources hang off the system as an optional part (core/extension.h),
 * made by the first ac_observe_add: a list under a lock that is held only
 * to link, unlink, and count a view in or out of a source. The part is
 * counted, once for the system and once per source, so that a source
 * removed after the system has gone (a router's shared state outlives its
 * cell, and may be released last on a timer thread) still finds its list.
 * A view holds each source while it calls it, one at a time and without
 * the lock; ac_observe_remove waits until no view holds it, so that its
 * owner may free what the source reads as soon as it returns.
 *
 * The actor page is read under the registry lock, which only spawning
 * and freeing a cell take, never a turn: one walk counts the cells and
 * copies the page, in spawn order (the registry is newest first, so the
 * page is found counting from the end), a second counts each page cell's
 * children by their parent pointers. Every field read is an atomic or set
 * at spawn, and a cell in the registry has not been freed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actorc/metrics.h"
#include "core/alloc.h"
#include "core/extension.h"
#include "core/last_error.h"
#include "core/system_internal.h"
#include "metrics/json.h"

#define OBSERVER_KEY "actorc.observe"
#define SECTION_MAX 32

typedef struct observer {
    atomic_uint refs; /* the system's part, and one per source */
    pthread_mutex_t lock;
    pthread_cond_t idle; /* a source's `users` fell to 0 */
    ac_observe_source *first, *last;
    ac__ext_part part;
} observer;

struct ac_observe_source {
    observer *obs;
    ac_observe_source *prev, *next; /* under obs->lock */
    ac_observe_fn *fn;
    void *arg;
    unsigned users; /* views inside fn, under obs->lock */
    char section[SECTION_MAX + 1];
};

/* ---- sources ---------------------------------------------------------- */

static void observer_release(observer *obs)
{
    /* acq_rel: every holder's use happens before the free. */
    if (atomic_fetch_sub_explicit(&obs->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_cond_destroy(&obs->idle);
    pthread_mutex_destroy(&obs->lock);
    free(obs);
}

static void observer_part_free(void *ctx) { observer_release(ctx); }

static observer *observer_create(void)
{
    observer *obs = ac__calloc(1, sizeof *obs);
    if (!obs)
        return NULL;
    if (pthread_mutex_init(&obs->lock, NULL) != 0) {
        free(obs);
        return NULL;
    }
    if (pthread_cond_init(&obs->idle, NULL) != 0) {
        pthread_mutex_destroy(&obs->lock);
        free(obs);
        return NULL;
    }
    atomic_init(&obs->refs, 1);
    obs->part = (ac__ext_part){.key = OBSERVER_KEY, .free = observer_part_free, .ctx = obs};
    return obs;
}

/* The system's observer, made and attached on first use; NULL with the
 * error recorded. */
static observer *observer_of(ac_system *sys, const char *fn)
{
    observer *obs = ac__ext_find(sys, OBSERVER_KEY);
    if (obs)
        return obs;
    if (!(obs = observer_create()))
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    ac_status st = ac__ext_attach(sys, &obs->part);
    if (st == AC_OK)
        return obs;
    observer_release(obs);
    if (st != AC_EEXIST)
        return NULL; /* terminating: recorded */
    ac__clear_status();
    return ac__ext_find(sys, OBSERVER_KEY); /* attached by another thread meanwhile */
}

static bool section_ok(const char *s)
{
    static const char *const reserved[] = {"version", "system", "actors"};
    size_t n = strlen(s);
    if (n == 0 || n > SECTION_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyz_") != n)
        return false;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(s, reserved[i]) == 0)
            return false;
    return true;
}

ac_observe_source *ac_observe_add(ac_system *system, const char *section, ac_observe_fn *fn,
                                  void *arg)
{
    ac__clear_status();
    if (!system || !section || !fn)
        return ac__fail_null(AC_EINVAL, "ac_observe_add: %s is NULL",
                             !system ? "system" : !section ? "section" : "fn");
    if (!section_ok(section))
        return ac__fail_null(AC_EINVAL,
                             "ac_observe_add: section \"%.40s\" is not [a-z_]{1,%d}, or is one "
                             "of the view's own (version, system, actors)",
                             section, SECTION_MAX);
    ac_observe_source *src = ac__calloc(1, sizeof *src);
    if (!src)
        return ac__fail_null(AC_ENOMEM, "ac_observe_add: out of memory");
    observer *obs = observer_of(system, "ac_observe_add");
    if (!obs) {
        free(src);
        return NULL;
    }
    src->fn = fn;
    src->arg = arg;
    src->obs = obs;
    strcpy(src->section, section);
    atomic_fetch_add_explicit(&obs->refs, 1, memory_order_relaxed);
    pthread_mutex_lock(&obs->lock);
    src->prev = obs->last;
    if (obs->last)
        obs->last->next = src;
    else
        obs->first = src;
    obs->last = src;
    pthread_mutex_unlock(&obs->lock);
    return src;
}

void ac_observe_remove(ac_observe_source *source)
{
    if (!source)
        return;
    observer *obs = source->obs;
    pthread_mutex_lock(&obs->lock);
    if (source->prev)
        source->prev->next = source->next;
    else
        obs->first = source->next;
    if (source->next)
        source->next->prev = source->prev;
    else
        obs->last = source->prev;
    while (source->users > 0)
        pthread_cond_wait(&obs->idle, &obs->lock);
    pthread_mutex_unlock(&obs->lock);
    free(source);
    observer_release(obs);
}

/* ---- the actor page --------------------------------------------------- */

static const char *const state_names[] = {
    [AC__ACTOR_NEW] = "new",           [AC__ACTOR_RUNNING] = "running",
    [AC__ACTOR_SUSPENDED] = "suspended", [AC__ACTOR_RESTARTING] = "restarting",
    [AC__ACTOR_STOPPING] = "stopping", [AC__ACTOR_DEAD] = "dead",
};

typedef struct actor_row {
    const ac__actor *cell; /* identity only, never read outside the lock */
    char *path, *kind;
    int state;
    int mailbox; /* -1: not counted */
    bool scheduled;
    unsigned restarts;
    uint64_t children;
} actor_row;

typedef struct actor_page {
    uint64_t total, offset, limit;
    size_t n;
    actor_row *rows;
    bool failed; /* out of memory */
} actor_page;

static int cell_order(const void *a, const void *b)
{
    const ac__actor *x = *(const ac__actor *const *)a, *y = *(const ac__actor *const *)b;
    return x < y ? -1 : x > y;
}

static void row_copy(actor_row *r, const ac__actor *a, actor_page *page)
{
    r->cell = a;
    r->path = ac__strdup(a->path);
    r->kind = a->def && a->def->name ? ac__strdup(a->def->name) : NULL;
    if (!r->path || (a->def && a->def->name && !r->kind))
        page->failed = true;
    r->state = atomic_load_explicit(&a->state, memory_order_relaxed);
    r->mailbox =
        a->count_mailbox ? atomic_load_explicit(&a->mailbox_len, memory_order_relaxed) : -1;
    r->scheduled = atomic_load_explicit(&a->scheduled, memory_order_relaxed) != 0;
    r->restarts = atomic_load_explicit(&a->restarts, memory_order_relaxed);
}

/* Count the page's children among every cell, by parent pointer. Under
 * the registry lock. */
static void count_children(ac_system *sys, actor_page *page)
{
    const ac__actor **sorted = ac__malloc(page->n * sizeof *sorted);
    if (!sorted) {
        page->failed = true;
        return;
    }
    for (size_t i = 0; i < page->n; i++)
        sorted[i] = page->rows[i].cell;
    qsort(sorted, page->n, sizeof *sorted, cell_order);
    for (const ac__actor *a = sys->registry; a; a = a->reg_next) {
        if (!a->parent)
            continue;
        const ac__actor *key = a->parent;
        if (!bsearch(&key, sorted, page->n, sizeof *sorted, cell_order))
            continue;
        for (size_t i = 0; i < page->n; i++)
            if (page->rows[i].cell == key)
                page->rows[i].children++;
    }
    free(sorted);
}

static void page_take(ac_system *sys, actor_page *page)
{
    page->rows = page->limit ? ac__calloc(page->limit, sizeof *page->rows) : NULL;
    if (page->limit && !page->rows) {
        page->failed = true;
        return;
    }
    pthread_mutex_lock(&sys->registry_lock);
    uint64_t total = 0;
    for (const ac__actor *a = sys->registry; a; a = a->reg_next)
        total++;
    page->total = total;
    /* Spawn order: the oldest (the list's tail) is number 0. */
    uint64_t i = total;
    for (const ac__actor *a = sys->registry; a && !page->failed; a = a->reg_next) {
        i--;
        if (i >= page->offset && i - page->offset < page->limit)
            row_copy(&page->rows[i - page->offset], a, page);
    }
    if (page->offset < total) {
        uint64_t left = total - page->offset;
        page->n = (size_t)(left < page->limit ? left : page->limit);
    }
    if (page->n && !page->failed)
        count_children(sys, page);
    pthread_mutex_unlock(&sys->registry_lock);
}

static void page_free(actor_page *page)
{
    for (uint64_t i = 0; page->rows && i < page->limit; i++) {
        free(page->rows[i].path);
        free(page->rows[i].kind);
    }
    free(page->rows);
}

static void page_write(ac_json *j, const actor_page *page)
{
    ac_json_object(j);
    ac_json_key(j, "total");
    ac_json_uint(j, page->total);
    ac_json_key(j, "offset");
    ac_json_uint(j, page->offset);
    ac_json_key(j, "limit");
    ac_json_uint(j, page->limit);
    ac_json_key(j, "items");
    ac_json_array(j);
    for (size_t i = 0; i < page->n; i++) {
        const actor_row *r = &page->rows[i];
        ac_json_object(j);
        ac_json_key(j, "path");
        ac_json_string(j, r->path);
        ac_json_key(j, "kind");
        ac_json_string(j, r->kind);
        ac_json_key(j, "state");
        ac_json_string(j, r->state >= 0 && r->state <= AC__ACTOR_DEAD ? state_names[r->state]
                                                                       : "unknown");
        ac_json_key(j, "mailbox");
        if (r->mailbox >= 0)
            ac_json_int(j, r->mailbox);
        else
            ac_json_null(j);
        ac_json_key(j, "scheduled");
        ac_json_bool(j, r->scheduled);
        ac_json_key(j, "restarts");
        ac_json_uint(j, r->restarts);
        ac_json_key(j, "children");
        ac_json_uint(j, r->children);
        ac_json_object_end(j);
    }
    ac_json_array_end(j);
    ac_json_object_end(j);
}

/* ---- the system and the sections -------------------------------------- */

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void system_write(ac_json *j, ac_system *sys, uint64_t actors)
{
    ac_json_object(j);
    ac_json_key(j, "name");
    ac_json_string(j, sys->name);
    ac_json_key(j, "time_ms");
    ac_json_uint(j, wall_ms());
    ac_json_key(j, "workers");
    ac_json_int(j, sys->workers);
    ac_json_key(j, "batch");
    ac_json_int(j, sys->batch);
    ac_json_key(j, "actors");
    ac_json_uint(j, actors);
    ac_json_key(j, "dead_letters");
    ac_json_uint(j, atomic_load_explicit(&sys->dead_letters, memory_order_relaxed));
    ac_json_key(j, "timers_armed");
    ac_json_uint(j, ac_timers_armed(sys));
    ac_json_key(j, "terminating");
    ac_json_bool(j, atomic_load_explicit(&sys->terminating, memory_order_relaxed));
    ac_json_key(j, "metrics");
    bool metrics = ac_metrics_enabled(sys);
    ac_json_bool(j, metrics);
    ac_json_key(j, "messages_processed");
    ac_metric_value v;
    if (metrics && ac_metrics_read(sys, "actorc_messages_processed_total", NULL, 0, &v) == AC_OK)
        ac_json_uint(j, v.count);
    else
        ac_json_null(j);
    ac__clear_status();
    ac_json_object_end(j);
}

/* A view is done with `s`: wake a remover waiting for it. */
static void source_let_go(observer *obs, ac_observe_source *s)
{
    pthread_mutex_lock(&obs->lock);
    if (--s->users == 0)
        pthread_cond_broadcast(&obs->idle);
    pthread_mutex_unlock(&obs->lock);
}

/* Every source's value, in arrays by section. */
static void sections_write(ac_json *j, ac_system *sys)
{
    observer *obs = ac__ext_find(sys, OBSERVER_KEY);
    if (!obs)
        return;
    pthread_mutex_lock(&obs->lock);
    size_t n = 0;
    for (ac_observe_source *s = obs->first; s; s = s->next)
        n++;
    ac_observe_source **held = n ? ac__malloc(n * sizeof *held) : NULL;
    if (n && !held) {
        pthread_mutex_unlock(&obs->lock);
        j->status = AC_ENOMEM; /* the view fails */
        return;
    }
    size_t i = 0;
    for (ac_observe_source *s = obs->first; s; s = s->next, i++) {
        s->users++;
        held[i] = s;
    }
    pthread_mutex_unlock(&obs->lock);
    /* Sections in the order of their first source, grouped before any
     * source is let go (a let-go source may be freed at once). */
    size_t *order = ac__malloc(n * (sizeof *order + 2));
    bool *placed = order ? (bool *)(order + n) : NULL, *starts = placed ? placed + n : NULL;
    size_t m = 0;
    for (i = 0; order && i < n; i++)
        placed[i] = false;
    for (i = 0; order && i < n; i++) {
        if (placed[i])
            continue;
        for (size_t k = i; k < n; k++)
            if (!placed[k] && strcmp(held[k]->section, held[i]->section) == 0) {
                starts[m] = k == i;
                order[m++] = k;
                placed[k] = true;
            }
    }
    if (n && !order)
        j->status = AC_ENOMEM; /* the view fails; the sources are let go below */
    for (i = 0; i < m; i++) {
        ac_observe_source *src = held[order[i]];
        if (starts[i]) {
            if (i > 0)
                ac_json_array_end(j);
            ac_json_key(j, src->section);
            ac_json_array(j);
        }
        src->fn(j, src->arg);
        source_let_go(obs, src); /* its remover need not wait for the rest */
    }
    if (m > 0)
        ac_json_array_end(j);
    for (i = m; i < n; i++) /* out of memory: none was called */
        source_let_go(obs, held[i]);
    free(order);
    free(held);
}

static ac_status query_read(const ac_observe_query *q, const char *fn, actor_page *page)
{
    memset(page, 0, sizeof *page);
    page->limit = q && q->limit ? q->limit : AC_OBSERVE_DEFAULT_PAGE;
    page->offset = q ? q->offset : 0;
    if (page->limit > AC_OBSERVE_MAX_PAGE)
        return ac__fail(AC_EINVAL, "%s: limit = %llu; use 1..%d, or 0 for the default (%d)", fn,
                        (unsigned long long)page->limit, AC_OBSERVE_MAX_PAGE,
                        AC_OBSERVE_DEFAULT_PAGE);
    return AC_OK;
}

static char *view(ac_system *sys, const ac_observe_query *query, bool whole, const char *fn)
{
    ac__clear_status();
    if (!sys)
        return ac__fail_null(AC_EINVAL, "%s: system is NULL", fn);
    actor_page page;
    if (query_read(query, fn, &page) != AC_OK)
        return NULL;
    page_take(sys, &page);
    ac_json j;
    ac__json_init(&j);
    if (page.failed)
        j.status = AC_ENOMEM;
    if (whole) {
        ac_json_object(&j);
        ac_json_key(&j, "version");
        ac_json_int(&j, 1);
        ac_json_key(&j, "system");
        system_write(&j, sys, page.total);
        ac_json_key(&j, "actors");
    }
    page_write(&j, &page);
    page_free(&page);
    if (whole) {
        sections_write(&j, sys);
        ac_json_object_end(&j);
    }
    return ac__json_finish(&j, fn);
}

char *ac_observe_json(ac_system *system, const ac_observe_query *query)
{
    return view(system, query, true, "ac_observe_json");
}

char *ac_observe_actors_json(ac_system *system, const ac_observe_query *query)
{
    return view(system, query, false, "ac_observe_actors_json");
}
