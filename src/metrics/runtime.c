/*
 * Turning metrics on, the runtime's own families, and tearing down.
 *
 * A system's registry is created once, complete with the runtime's
 * families and their series, and only then published into
 * ac_system.metrics by a release CAS; every instrumented path does one
 * acquire load of that pointer (a plain load on x86-64) and branches on
 * NULL, so metrics that are off cost a load and a predictable branch. The
 * registry stays until the system is torn down, after every thread that
 * could update it has been joined.
 *
 * The runtime counters are sharded (see registry.c): messages are counted
 * once per turn, into the counting worker's own cache line.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "metrics/metrics_internal.h"

typedef struct event_def {
    const char *name, *help;
} event_def;

static const event_def event_defs[AC__METRIC_EVENTS] = {
    [AC__METRIC_ACTORS_STARTED] = {"actorc_actors_started_total", "Actors started."},
    [AC__METRIC_ACTORS_STOPPED] = {"actorc_actors_stopped_total", "Actors stopped."},
    [AC__METRIC_MESSAGES] = {"actorc_messages_processed_total",
                             "Messages handled by actors."},
    [AC__METRIC_DEAD_LETTERS] = {"actorc_dead_letters_total",
                                 "Messages that could not be delivered (dead letters)."},
    [AC__METRIC_ASK_TIMEOUTS] = {"actorc_ask_timeouts_total",
                                 "Asks that timed out without an answer."},
    [AC__METRIC_RESTARTS] = {"actorc_restarts_total", "Actor restarts by supervisors."},
};

static const char *const outcome_names[AC__SG_OUTCOMES] = {
    [AC__SG_FIRST] = "first",
    [AC__SG_TIMEOUT] = "timeout",
    [AC__SG_ALL_FAILED] = "all-failed",
    [AC__SG_STOPPED] = "stopped",
    [AC__SG_NO_REPLY_TARGET] = "no-reply-target",
};

static void registry_free(ac__metrics *reg)
{
    ac_metric_family *f = reg->first;
    while (f) {
        ac_metric_family *next = f->next;
        ac__family_destroy(f);
        f = next;
    }
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

static bool create_events(ac__metrics *reg)
{
    for (int e = 0; e < AC__METRIC_EVENTS; e++) {
        ac_metric_options o = {.help = event_defs[e].help};
        ac_metric_family *f = ac__family_register(reg, AC__METRIC_COUNTER, event_defs[e].name, &o,
                                                  true);
        if (!f || !(reg->events[e] = ac_counter_series(f, NULL)))
            return false;
    }
    return true;
}

static bool create_scatter_gather(ac__metrics *reg)
{
    static const char *const outcome_label[] = {"outcome"};
    ac_metric_options resolved = {
        .help = "Scatter/gather messages resolved, by outcome.",
        .label_names = outcome_label,
        .label_count = 1,
    };
    ac_metric_family *f = ac__family_register(reg, AC__METRIC_COUNTER,
                                              "router_scatter_gather_resolved_total", &resolved,
                                              false);
    for (int o = 0; f && o < AC__SG_OUTCOMES; o++)
        if (!(reg->sg_resolved[o] = ac_counter_series(f, &outcome_names[o])))
            return false;
    ac_metric_options latency = {
        .help = "Seconds from scattering a message to answering its caller."};
    f = ac__family_register(reg, AC__METRIC_HISTOGRAM, "router_scatter_gather_latency_seconds",
                            &latency, false);
    return f && (reg->sg_latency = ac_histogram_series(f, NULL));
}

static ac__metrics *registry_create(ac_system *sys)
{
    ac__metrics *reg = ac__calloc(1, sizeof *reg);
    if (!reg)
        return NULL;
    reg->sys = sys;
    if (pthread_mutex_init(&reg->lock, NULL) != 0) {
        free(reg);
        return NULL;
    }
    if (!create_events(reg) || !create_scatter_gather(reg)) {
        registry_free(reg);
        return NULL;
    }
    return reg;
}

ac_status ac_metrics_enable(ac_system *system)
{
    if (!system)
        return ac__fail(AC_EINVAL, "ac_metrics_enable: system is NULL");
    if (ac__metrics_of(system))
        return AC_OK;
    ac__metrics *reg = registry_create(system);
    if (!reg)
        return ac__fail(AC_ENOMEM, "ac_metrics_enable: out of memory");
    ac__metrics *expected = NULL;
    /* Release: the registry's contents before the pointer (pairs with the
     * acquire load in ac__metrics_of). A loser's registry was never seen. */
    if (!atomic_compare_exchange_strong_explicit(&system->metrics, &expected, reg,
                                                 memory_order_release, memory_order_relaxed))
        registry_free(reg);
    return AC_OK;
}

bool ac_metrics_enabled(const ac_system *system)
{
    return system && ac__metrics_of(system) != NULL;
}

void ac__metrics_destroy(ac_system *sys)
{
    ac__metrics *reg = ac__metrics_of(sys);
    if (!reg)
        return;
    /* While metrics are still on: a scrape in progress renders through the
     * public call, which looks the registry up on the system. */
    ac__endpoint_shutdown(reg);
    /* Relaxed: teardown runs after every thread that used the registry
     * has been joined (the endpoint's by its stop function, just now). */
    atomic_store_explicit(&sys->metrics, NULL, memory_order_relaxed);
    registry_free(reg);
}

/* ---- the runtime's hooks ---------------------------------------------- */

void ac__metrics_count(ac__metrics *m, ac__metric_event event, uint64_t n)
{
    ac_counter_add(m->events[event], n);
}

void ac__metrics_scatter_resolved(ac__metrics *m, ac__sg_outcome outcome, uint64_t start_ns)
{
    ac_counter_inc(m->sg_resolved[outcome]);
    if (start_ns == 0)
        return;
    uint64_t now = ac__now_ns();
    ac_histogram_observe(m->sg_latency, now > start_ns ? (double)(now - start_ns) / 1e9 : 0.0);
}

char *ac_metrics_format(ac_system *system)
{
    ac__clear_status();
    if (!system)
        return ac__fail_null(AC_EINVAL, "ac_metrics_format: system is NULL");
    ac__metrics *reg = ac__metrics_of(system);
    if (!reg)
        return ac__fail_null(AC_EINVAL, "ac_metrics_format: metrics are off for system \"%s\"",
                             system->name);
    char *text = ac__metrics_render(reg);
    return text ? text : ac__fail_null(AC_ENOMEM, "ac_metrics_format: out of memory");
}
