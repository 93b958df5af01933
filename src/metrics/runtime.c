/*
 * Turning metrics on, the runtime's own families, and tearing down.
 *
 * A system's registry is created once, complete with the runtime's
 * families and their series, and only then installed as the system's
 * hooks (core/hooks.h) by a release CAS; every instrumented path in the
 * core does one acquire load of that pointer (a plain load on x86-64) and
 * branches on NULL, so metrics that are off cost a load and a predictable
 * branch. The registry stays until the core runs its teardown hook, after
 * every thread that could update it has been joined.
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

static const event_def event_defs[AC__EVENTS] = {
    [AC__EVENT_ACTORS_STARTED] = {"actorc_actors_started_total", "Actors started."},
    [AC__EVENT_ACTORS_STOPPED] = {"actorc_actors_stopped_total", "Actors stopped."},
    [AC__EVENT_MESSAGES] = {"actorc_messages_processed_total",
                             "Messages handled by actors."},
    [AC__EVENT_DEAD_LETTERS] = {"actorc_dead_letters_total",
                                 "Messages that could not be delivered (dead letters)."},
    [AC__EVENT_ASK_TIMEOUTS] = {"actorc_ask_timeouts_total",
                                 "Asks that timed out without an answer."},
    [AC__EVENT_RESTARTS] = {"actorc_restarts_total", "Actor restarts by supervisors."},
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
    for (int e = 0; e < AC__EVENTS; e++) {
        ac_metric_options o = {.help = event_defs[e].help};
        ac_metric_family *f = ac__family_register(reg, AC__METRIC_COUNTER, event_defs[e].name, &o,
                                                  true);
        if (!f || !(reg->events[e] = ac_counter_series(f, NULL)))
            return false;
    }
    return true;
}

static void count_event(void *ctx, ac__event event, uint64_t n)
{
    ac__metrics *reg = ctx;
    ac_counter_add(reg->events[event], n);
}

/* Every thread that counts has been joined. Runs while the hooks are
 * still installed: a scrape in progress renders through the public call,
 * which looks the registry up on the system; the endpoint's stop function
 * waits for it. */
static void teardown(void *ctx)
{
    ac__metrics *reg = ctx;
    ac__endpoint_shutdown(reg);
    registry_free(reg);
}

/* The registry, complete with the runtime's families, in *out; on failure
 * nothing is left behind and the status says why. */
static ac_status registry_create(ac_system *sys, ac__metrics **out)
{
    ac__metrics *reg = ac__calloc(1, sizeof *reg);
    if (!reg)
        return ac__fail(AC_ENOMEM, "ac_metrics_enable: out of memory");
    reg->sys = sys;
    reg->hooks = (ac__hooks){.count = count_event, .teardown = teardown, .ctx = reg};
    ac_status st = ac__mutex_init(&reg->lock, "the metrics registry's lock");
    if (st != AC_OK) {
        free(reg);
        return st;
    }
    if (!create_events(reg)) {
        registry_free(reg);
        return ac__fail(AC_ENOMEM, "ac_metrics_enable: out of memory");
    }
    *out = reg;
    return AC_OK;
}

ac_status ac_metrics_enable(ac_system *system)
{
    if (!system)
        return ac__fail(AC_EINVAL, "ac_metrics_enable: system is NULL");
    if (ac__metrics_of(system))
        return AC_OK;
    ac__metrics *reg = NULL;
    ac_status st = registry_create(system, &reg);
    if (st != AC_OK)
        return st;
    if (ac__hooks_install(system, &reg->hooks))
        return AC_OK;
    registry_free(reg); /* a loser's registry was never seen */
    if (ac__metrics_of(system))
        return AC_OK; /* another thread turned metrics on first */
    return ac__fail(AC_EEXIST, "ac_metrics_enable: system \"%s\" has other hooks installed",
                    system->name);
}

bool ac_metrics_enabled(const ac_system *system)
{
    return system && ac__metrics_of(system) != NULL;
}

ac__metrics *ac__metrics_of(const ac_system *sys)
{
    /* The hooks are metrics' own when they count into a registry. */
    const ac__hooks *h = ac__hooks_of(sys);
    return h && h->count == count_event ? h->ctx : NULL;
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
