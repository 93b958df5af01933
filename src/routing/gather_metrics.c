/*
 * The metrics of the gathering routers, registered through the public
 * metrics API: each kind's two resolution families (scatter/gather's are
 * the spec's, with their names and labels), and the families both kinds
 * share, told apart by their `router` label: per-routee outcomes, budget
 * exhaustion, cancelled losers; and the hedged router's hedges sent and
 * won.
 *
 * A router's series are registered on first use once its system's
 * metrics are on, and cached (the cache goes from NULL to one value; the
 * first to publish wins). Per-routee series are made when a routee's
 * first outcome is counted and cached per routee index, so a pool of N
 * has at most 4 N of them. Registration is idempotent: every router of a
 * kind in a system gets the same series. Series live as long as the
 * system's registry, which outlives every thread that counts and every
 * gather (the registry is torn down after the last cell is freed).
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "routing/gather.h"
#include "routing/gather_view.h"

/* Per-routee outcomes (the `outcome` label of router_routee_outcomes_total). */
enum { ROUTEE_WIN, ROUTEE_LOSS, ROUTEE_ERROR, ROUTEE_TIMEOUT, ROUTEE_OUTCOMES };

static const char *const routee_outcome_names[ROUTEE_OUTCOMES] = {
    [ROUTEE_WIN] = "win", [ROUTEE_LOSS] = "loss", [ROUTEE_ERROR] = "error", [ROUTEE_TIMEOUT] = "timeout"};

static const char *const outcome_names[AC__GATHER_OUTCOMES] = {
    [AC__GATHER_FIRST] = "first",
    [AC__GATHER_TIMEOUT] = "timeout",
    [AC__GATHER_ALL_FAILED] = "all-failed",
    [AC__GATHER_STOPPED] = "stopped",
    [AC__GATHER_NO_REPLY_TARGET] = "no-reply-target",
};

/* The families every kind shares and the hedge counters of a kind that
 * names them (ac__gather_names): registered on first use (a
 * scatter/gather router's exposition starts with the spec's two families
 * alone), at spawn for a kind with hedge counters. */
typedef struct gather_extras {
    ac_counter *events[AC__GATHER_EVENTS]; /* the hedges' NULL for a kind without */
    const char *label;
    ac_metric_family *routee_family;
    int pool_size;
    _Atomic(ac_counter *) routee[]; /* (pool_size + 1) * ROUTEE_OUTCOMES, made on first use */
} gather_extras;

struct ac__gather_metrics {
    ac_counter *resolved[AC__GATHER_OUTCOMES];
    ac_histogram *latency;
    _Atomic(gather_extras *) extras; /* see extras_of */
};

static const char *const router_label[] = {"router"};

/* The series of a counter family with one label, router=<label>. */
static ac_counter *router_counter(ac_system *sys, const char *name, const char *help,
                                  const char *label)
{
    ac_metric_options o = {.help = help, .label_names = router_label, .label_count = 1};
    ac_metric_family *f = ac_metrics_counter(sys, name, &o);
    return f ? ac_counter_series(f, &label) : NULL;
}

static ac_counter *plain_counter(ac_system *sys, const char *name, const char *help)
{
    ac_metric_options o = {.help = help};
    ac_metric_family *f = ac_metrics_counter(sys, name, &o);
    return f ? ac_counter_series(f, NULL) : NULL;
}

static bool resolution_families(ac__gather_metrics *m, ac_system *sys,
                                const ac__gather_names *names)
{
    static const char *const outcome_label[] = {"outcome"};
    ac_metric_options resolved = {
        .help = names->resolved_help, .label_names = outcome_label, .label_count = 1};
    ac_metric_options latency = {.help = names->latency_help};
    ac_metric_family *f = ac_metrics_counter(sys, names->resolved, &resolved);
    for (int o = 0; f && o < AC__GATHER_OUTCOMES; o++)
        if (!(m->resolved[o] = ac_counter_series(f, &outcome_names[o])))
            f = NULL;
    if (f)
        f = ac_metrics_histogram(sys, names->latency, &latency);
    return f && (m->latency = ac_histogram_series(f, NULL));
}

static bool shared_families(gather_extras *e, ac_system *sys, const ac__gather_names *names)
{
    static const char *const routee_labels[] = {"router", "routee", "outcome"};
    ac_metric_options routee = {
        .help = "Requests of gathering routers by routee and how each ended.",
        .label_names = routee_labels,
        .label_count = 3,
        .max_series = 65536,
    };
    ac_counter **ev = e->events;
    ev[AC__GATHER_BUDGET_EXHAUSTED] = router_counter(
        sys, "router_hedge_budget_exhausted_total",
        "Messages sent to fewer routees than wanted because the hedge budget was spent.",
        names->label);
    ev[AC__GATHER_CANCELLED] = router_counter(
        sys, "router_losers_cancelled_total",
        "Requests dropped unhandled at routees after the answer.", names->label);
    e->routee_family = ac_metrics_counter(sys, "router_routee_outcomes_total", &routee);
    if (!ev[AC__GATHER_BUDGET_EXHAUSTED] || !ev[AC__GATHER_CANCELLED] || !e->routee_family)
        return false;
    if (!names->hedges_sent)
        return true;
    ev[AC__GATHER_HEDGE_SENT] = plain_counter(sys, names->hedges_sent, names->hedges_sent_help);
    ev[AC__GATHER_HEDGE_WON] = plain_counter(sys, names->hedges_won, names->hedges_won_help);
    return ev[AC__GATHER_HEDGE_SENT] && ev[AC__GATHER_HEDGE_WON];
}

static gather_extras *extras_create(ac__gather_shared *sh, ac_system *sys)
{
    size_t slots = ((size_t)sh->pool_size + 1) * ROUTEE_OUTCOMES;
    gather_extras *e = ac__calloc(1, sizeof *e + slots * sizeof e->routee[0]);
    if (!e)
        return NULL;
    e->label = sh->names->label;
    e->pool_size = sh->pool_size;
    for (size_t i = 0; i < slots; i++)
        atomic_init(&e->routee[i], NULL);
    if (shared_families(e, sys, sh->names))
        return e;
    free(e);
    return NULL;
}

static ac__gather_metrics *metrics_create(ac__gather_shared *sh, ac_system *sys)
{
    ac__gather_metrics *m = ac__calloc(1, sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->extras, NULL);
    if (resolution_families(m, sys, sh->names))
        return m;
    free(m);
    return NULL;
}

void ac__gather_metrics_free(ac__gather_metrics *m)
{
    if (m)
        free(atomic_load_explicit(&m->extras, memory_order_relaxed));
    free(m);
}

/* The extras of `m`, registered on first use; NULL if they could not be.
 * The cache goes from NULL to one value; the first to publish wins. */
static gather_extras *extras_of(ac__gather_shared *sh, ac__gather_metrics *m, ac_system *sys)
{
    /* Acquire pairs with the release CAS below: the series before the
     * pointer. */
    gather_extras *e = atomic_load_explicit(&m->extras, memory_order_acquire);
    if (AC__LIKELY(e != NULL))
        return e;
    gather_extras *fresh = extras_create(sh, sys);
    if (!fresh)
        return NULL;
    /* Release: pairs with the acquire loads above and on failure here. */
    if (atomic_compare_exchange_strong_explicit(&m->extras, &e, fresh, memory_order_release,
                                                memory_order_acquire))
        return fresh;
    free(fresh); /* the same series, published by another thread */
    return e;
}

ac__gather_metrics *ac__gather_metrics_of(ac__gather_shared *sh, ac_system *sys)
{
    /* Acquire pairs with the release CAS below: the series before the
     * pointer. */
    ac__gather_metrics *m = atomic_load_explicit(&sh->metrics, memory_order_acquire);
    if (AC__LIKELY(m != NULL) || !ac_metrics_enabled(sys))
        return m;
    ac__gather_metrics *fresh = metrics_create(sh, sys);
    if (!fresh)
        return NULL;
    /* Release: pairs with the acquire loads above and on failure here. */
    if (!atomic_compare_exchange_strong_explicit(&sh->metrics, &m, fresh, memory_order_release,
                                                 memory_order_acquire)) {
        ac__gather_metrics_free(fresh); /* the same series, published by another thread */
        return m;
    }
    if (sh->names->hedges_sent) /* a hedging kind's families are there from the start */
        (void)extras_of(sh, fresh, sys);
    return fresh;
}

void ac__gather_count_outcome(ac__gather_shared *sh, ac_system *sys, ac__gather_outcome outcome,
                              uint64_t start_ns)
{
    ac__gather_view_outcome(sh, outcome, start_ns);
    ac__gather_metrics *m = ac__gather_metrics_of(sh, sys);
    if (AC__LIKELY(m == NULL))
        return;
    ac_counter_inc(m->resolved[outcome]);
    if (start_ns == 0)
        return;
    uint64_t now = ac__now_ns();
    ac_histogram_observe(m->latency, now > start_ns ? (double)(now - start_ns) / 1e9 : 0.0);
}

/* The extras while metrics are on; NULL while they are off. */
static gather_extras *extras_now(ac__gather_shared *sh, ac_system *sys)
{
    ac__gather_metrics *m = ac__gather_metrics_of(sh, sys);
    return AC__LIKELY(m == NULL) ? NULL : extras_of(sh, m, sys);
}

void ac__gather_count_event(ac__gather_shared *sh, ac_system *sys, ac__gather_event event)
{
    ac__gather_view_event(sh, event);
    gather_extras *e = extras_now(sh, sys);
    if (e && e->events[event])
        ac_counter_inc(e->events[event]);
}

/* The series of routee-`index`'s `outcome`, made on first use; NULL when
 * it could not be (the family's cap, memory). */
static ac_counter *routee_counter(gather_extras *e, uint32_t index, int outcome)
{
    _Atomic(ac_counter *) *cache = &e->routee[(size_t)index * ROUTEE_OUTCOMES + (size_t)outcome];
    /* Acquire pairs with the release store: a series is published whole. */
    ac_counter *c = atomic_load_explicit(cache, memory_order_acquire);
    if (c)
        return c;
    char routee[32];
    snprintf(routee, sizeof routee, "routee-%u", index);
    const char *values[] = {e->label, routee, routee_outcome_names[outcome]};
    c = ac_counter_series(e->routee_family, values);
    if (c) /* release: pairs with the acquire above; every lookup returns the same series */
        atomic_store_explicit(cache, c, memory_order_release);
    return c;
}

static int routee_outcome_of(const ac__gather_slot *s)
{
    switch (atomic_load_explicit(&s->state, memory_order_relaxed)) {
    case AC__SLOT_WON:
        return ROUTEE_WIN;
    case AC__SLOT_OK:
        return ROUTEE_LOSS;
    case AC__SLOT_CANCELLED:
        return ROUTEE_LOSS;
    case AC__SLOT_FAILED:
        return ROUTEE_ERROR;
    case AC__SLOT_TIMEOUT:
        return ROUTEE_TIMEOUT;
    default:
        return -1; /* never sent, no outcome yet, or let go at teardown */
    }
}

void ac__gather_count_slots(const ac__gather *g)
{
    ac__gather_view_slots(g);
    /* Only metrics the router already uses: reading the cache creates
     * nothing while metrics are off. */
    ac__gather_shared *sh = g->shared;
    ac__gather_metrics *m = atomic_load_explicit(&sh->metrics, memory_order_acquire);
    gather_extras *e = AC__LIKELY(m == NULL) ? NULL : extras_of(sh, m, g->system);
    if (!e)
        return;
    for (uint32_t i = 0; i < g->n; i++) {
        const ac__gather_slot *s = &g->slots[i];
        int outcome = routee_outcome_of(s);
        if (outcome >= 0 && s->number && s->number <= (uint32_t)e->pool_size)
            ac_counter_inc(routee_counter(e, s->number, outcome));
    }
}
