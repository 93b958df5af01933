/*
 * Actor systems: creation, termination, the registry of cells, dead
 * letters.
 *
 * Termination stops the guardian (which stops its children first, and so
 * on down), waits until it is dead, joins the workers, and then, single
 * threaded, frees every cell in the registry whether or not the program
 * still holds refs to it. It does so in two passes: first every cell is
 * pinned and its queues are emptied (which releases refs held by queued
 * messages without freeing anything), then every cell is freed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actorc/metrics.h" /* the metrics option: the registry, on at creation */
#include "core/alloc.h"
#include "core/hazard.h"
#include "core/clock.h"
#include "core/core_msgs.h"
#include "core/hooks.h"
#include "core/last_error.h"
#include "core/names.h"
#include "core/spawn.h"
#include "core/sync.h"
#include "core/system_internal.h"
#include "core/turn.h"
#include "log/log_internal.h"

#define DEFAULT_BATCH 64
#define DEFAULT_DEAD_LETTER_LOG_PER_S 10
#define MAX_WORKERS 1024

static atomic_int live_systems; /* for trimming the allocator's caches */

/* ---- options ---------------------------------------------------------- */

/* ASCII letters and digits whatever the locale: isalnum would take
 * Latin-1 letters under a Latin-1 locale, which are not UTF-8. */
static bool system_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static ac_status check_system_name(const char *name)
{
    if (!name)
        return ac__fail(AC_EINVAL, "ac_system_create: name is NULL");
    char quoted[AC__NAME_QUOTE_SIZE];
    size_t len = strlen(name);
    if (len == 0 || len > 64)
        return ac__fail(AC_EINVAL, "ac_system_create: name %s must be 1 to 64 characters",
                        ac__name_quote(name, quoted, sizeof quoted));
    for (const char *c = name; *c; c++)
        if (!system_name_char(*c))
            return ac__fail(AC_EINVAL,
                            "ac_system_create: name %s may hold only ASCII letters, digits, '-' "
                            "and '_'",
                            ac__name_quote(name, quoted, sizeof quoted));
    return AC_OK;
}

static ac_status apply_options(ac_system *sys, const ac_system_options *o,
                               const char **unknown_level)
{
    ac_system_options d = {0};
    if (!o)
        o = &d;
    if (o->workers < 0 || o->workers > MAX_WORKERS)
        return ac__fail(AC_EINVAL,
                        "ac_system_create: workers = %d; use 1..%d, or 0 for one per CPU",
                        o->workers, MAX_WORKERS);
    if (o->batch < 0 || o->batch > 1000000)
        return ac__fail(AC_EINVAL,
                        "ac_system_create: batch = %d; use 1..1000000, or 0 for %d", o->batch,
                        DEFAULT_BATCH);
    if ((int)o->log_level < AC_LOG_DEFAULT || o->log_level > AC_LOG_OFF)
        return ac__fail(AC_EINVAL, "ac_system_create: log_level = %d is not an ac_log_level",
                        (int)o->log_level);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    sys->workers = o->workers ? o->workers : (int)(cpus > 0 ? (cpus > MAX_WORKERS ? MAX_WORKERS : cpus) : 1);
    sys->batch = o->batch ? o->batch : DEFAULT_BATCH;
    sys->log.level = o->log_level ? o->log_level : ac__log_level_from_env(unknown_level);
    sys->log.sink = o->log_sink;
    sys->log.sink_user = o->log_sink_user;
    sys->dead_letter_log_per_s = o->dead_letter_log_per_s == 0 ? DEFAULT_DEAD_LETTER_LOG_PER_S
                                 : o->dead_letter_log_per_s < 0 ? 0
                                                                : o->dead_letter_log_per_s;
    return AC_OK;
}

/* ---- hooks ------------------------------------------------------------ */

bool ac__hooks_install(ac_system *sys, const ac__hooks *hooks)
{
    const ac__hooks *expected = NULL;
    /* Release: the hooks and their context before the pointer (pairs with
     * the acquire load in ac__hooks_of). */
    return atomic_compare_exchange_strong_explicit(&sys->hooks, &expected, hooks,
                                                   memory_order_release, memory_order_relaxed);
}

void ac__hooks_teardown(ac_system *sys)
{
    /* Relaxed: every thread that could report has been joined; the hooks
     * may be freed by their teardown, so they are not read after it. */
    const ac__hooks *h = atomic_load_explicit(&sys->hooks, memory_order_relaxed);
    if (h && h->teardown)
        h->teardown(h->ctx);
    atomic_store_explicit(&sys->hooks, NULL, memory_order_relaxed);
}

/* ---- create / terminate ----------------------------------------------- */

static void locks_destroy(ac_system *sys)
{
    pthread_mutex_destroy(&sys->guardian_lock);
    pthread_cond_destroy(&sys->guardian_dead_cond);
    pthread_mutex_destroy(&sys->registry_lock);
    pthread_mutex_destroy(&sys->dl_sub_lock);
}

static void system_free(ac_system *sys)
{
    ac__hooks_teardown(sys);
    ac__timers_destroy(sys->timers);
    ac__scheduler_destroy(sys->sched);
    locks_destroy(sys);
    free(sys->name);
    free(sys);
}

static ac_status locks_init(ac_system *sys)
{
    ac_status st;
    if ((st = ac__mutex_init(&sys->guardian_lock, "the system's guardian lock")) != AC_OK)
        return st;
    if ((st = ac__cond_init(&sys->guardian_dead_cond, false, "the system's condition")) != AC_OK)
        goto fail_cond;
    if ((st = ac__mutex_init_hot(&sys->registry_lock, "the system's registry lock")) != AC_OK)
        goto fail_registry;
    if ((st = ac__mutex_init(&sys->dl_sub_lock, "the system's dead-letter lock")) != AC_OK)
        goto fail_dead_letters;
    return AC_OK;
fail_dead_letters:
    pthread_mutex_destroy(&sys->registry_lock);
fail_registry:
    pthread_cond_destroy(&sys->guardian_dead_cond);
fail_cond:
    pthread_mutex_destroy(&sys->guardian_lock);
    return st;
}

/* The parts of a system, each acquired after the ones it needs and
 * released in reverse order when a later one cannot be had. False when
 * one could not be had: the step that failed has recorded why, and that
 * stands as ac_system_create's error. */
static bool system_build(ac_system *sys, const char *name, const ac_system_options *options)
{
    if (locks_init(sys) != AC_OK)
        return false;
    if (!(sys->name = ac__strdup(name))) {
        ac__fail(AC_ENOMEM, "ac_system_create: out of memory");
        goto fail_name;
    }
    sys->log.system_name = sys->name;
    if (options && options->metrics && ac_metrics_enable(sys) != AC_OK)
        goto fail_metrics;
    if (!(sys->sched = ac__scheduler_create(sys, sys->workers, sys->batch)))
        goto fail_sched;
    if (!(sys->guardian = ac__guardian_create(sys))) {
        ac__fail(AC_ENOMEM, "ac_system_create: out of memory for the guardian");
        goto fail_guardian;
    }
    sys->manual_clock = options && options->manual_clock;
    if (!(sys->timers = ac__timers_create(sys, sys->manual_clock)))
        goto fail_timers;
    if (ac__scheduler_start(sys->sched) != AC_OK)
        goto fail_start;
    return true;
fail_start:
    ac__timers_destroy(sys->timers);
fail_timers:
    ac__actor_destroy_now(sys->guardian);
fail_guardian:
    ac__scheduler_destroy(sys->sched);
fail_sched:
    ac__hooks_teardown(sys); /* metrics, if they were turned on */
fail_metrics:
    free(sys->name);
fail_name:
    locks_destroy(sys);
    return false;
}

ac_system *ac_system_create(const char *name, const ac_system_options *options)
{
    ac__clear_status();
    if (ac__tls_actor)
        return ac__fail_null(AC_EINACTOR, "ac_system_create: not allowed inside an actor");
    if (check_system_name(name) != AC_OK)
        return NULL;
    ac_system *sys = ac__calloc(1, sizeof *sys);
    if (!sys)
        return ac__fail_null(AC_ENOMEM, "ac_system_create: out of memory");
    const char *unknown_level = NULL;
    if (apply_options(sys, options, &unknown_level) != AC_OK || !system_build(sys, name, options)) {
        free(sys);
        return NULL;
    }
    atomic_fetch_add_explicit(&live_systems, 1, memory_order_relaxed);
    if (unknown_level)
        ac__log_unknown_level(&sys->log, unknown_level);
    return sys;
}

void ac__system_guardian_stopped(ac_system *sys)
{
    pthread_mutex_lock(&sys->guardian_lock);
    sys->guardian_dead = true;
    pthread_cond_broadcast(&sys->guardian_dead_cond);
    pthread_mutex_unlock(&sys->guardian_lock);
}

static void free_every_cell(ac_system *sys)
{
    /* Pass 1: pin and empty. Draining may release refs, never the last. */
    for (ac__actor *a = sys->registry; a; a = a->reg_next)
        ac_ref_retain(&a->ref);
    for (ac__actor *a = sys->registry; a; a = a->reg_next)
        ac__actor_drain_for_teardown(a);
    ac__actor_drain_for_teardown(sys->guardian);
    ac__refset_clear(&sys->dl_subscribers);
    /* Pass 2: free. */
    ac__actor *a = sys->registry;
    while (a) {
        ac__actor *next = a->reg_next;
        ac__actor_destroy_now(a);
        a = next;
    }
    sys->registry = NULL;
    ac__actor_destroy_now(sys->guardian);
}

ac_status ac_system_terminate(ac_system *system)
{
    if (!system)
        return ac__fail(AC_EINVAL, "ac_system_terminate: system is NULL");
    if (ac__tls_actor || ac__tls_worker)
        return ac__fail(AC_EINACTOR,
                        "ac_system_terminate: not allowed inside an actor (it would wait for "
                        "itself); stop your actors and terminate from outside");
    /* Made first, so that running out of memory changes nothing. */
    ac__sysmsg *stop = ac__sysmsg_new(AC__SYS_STOP, NULL, NULL);
    if (!stop)
        return ac__fail(AC_ENOMEM, "ac_system_terminate: out of memory");
    pthread_mutex_lock(&system->guardian_lock);
    atomic_store_explicit(&system->terminating, true, memory_order_relaxed);
    pthread_mutex_unlock(&system->guardian_lock);

    ac__actor_push_sysmsg(system->guardian, stop);
    pthread_mutex_lock(&system->guardian_lock);
    while (!system->guardian_dead)
        pthread_cond_wait(&system->guardian_dead_cond, &system->guardian_lock);
    pthread_mutex_unlock(&system->guardian_lock);

    ac__ext_parts_run(system, false);
    ac__timers_stop(system->timers);
    ac__scheduler_stop(system->sched);
    ac__timers_destroy(system->timers);
    system->timers = NULL;
    free_every_cell(system);
    ac__ext_parts_run(system, true);
    system_free(system);
    /* acq_rel: pairs with the other systems' decrements, so the last one
     * trims after every other teardown's frees. */
    if (atomic_fetch_sub_explicit(&live_systems, 1, memory_order_acq_rel) == 1)
    {
        ac__alloc_trim();
        ac__hazard_trim();
    }
    return AC_OK;
}

const char *ac_system_name(const ac_system *system) { return system ? system->name : ""; }

bool ac_system_log_enabled(const ac_system *system, ac_log_level level)
{
    return system && ac__log_enabled(&system->log, level);
}

void ac_system_log(ac_system *system, ac_log_level level, const char *fmt, ...)
{
    va_list ap;
    if (!system || !fmt)
        return;
    va_start(ap, fmt);
    ac__logv(&system->log, level, NULL, fmt, ap);
    va_end(ap);
}
int ac_system_workers(const ac_system *system) { return system ? system->workers : 0; }

/* ---- registry --------------------------------------------------------- */

void ac__registry_add(ac_system *sys, ac__actor *a)
{
    pthread_mutex_lock(&sys->registry_lock);
    a->reg_prev = NULL;
    a->reg_next = sys->registry;
    if (sys->registry)
        sys->registry->reg_prev = a;
    sys->registry = a;
    pthread_mutex_unlock(&sys->registry_lock);
}

void ac__registry_remove(ac_system *sys, ac__actor *a)
{
    pthread_mutex_lock(&sys->registry_lock);
    if (a->reg_prev)
        a->reg_prev->reg_next = a->reg_next;
    else if (sys->registry == a)
        sys->registry = a->reg_next;
    if (a->reg_next)
        a->reg_next->reg_prev = a->reg_prev;
    pthread_mutex_unlock(&sys->registry_lock);
}

/* ---- dead letters ----------------------------------------------------- */

uint64_t ac_dead_letter_count(const ac_system *system)
{
    return system ? atomic_load_explicit(&system->dead_letters, memory_order_relaxed) : 0;
}

static bool dead_letter_log_allowed(ac_system *sys)
{
    if (sys->dead_letter_log_per_s == 0 || !ac__log_enabled(&sys->log, AC_LOG_INFO))
        return false;
    long second = (long)(ac__now_ns() / 1000000000ull);
    long window = atomic_load_explicit(&sys->dl_window, memory_order_relaxed);
    if (window != second &&
        atomic_compare_exchange_strong_explicit(&sys->dl_window, &window, second,
                                                memory_order_relaxed, memory_order_relaxed)) {
        int suppressed = atomic_exchange_explicit(&sys->dl_suppressed, 0, memory_order_relaxed);
        atomic_store_explicit(&sys->dl_logged, 0, memory_order_relaxed);
        if (suppressed > 0)
            ac__log(&sys->log, AC_LOG_INFO, NULL, "%d more dead letters were not logged",
                    suppressed);
    }
    if (atomic_fetch_add_explicit(&sys->dl_logged, 1, memory_order_relaxed) <
        sys->dead_letter_log_per_s)
        return true;
    atomic_fetch_add_explicit(&sys->dl_suppressed, 1, memory_order_relaxed);
    return false;
}

static void publish_dead_letter(ac_system *sys, ac_msg *msg, ac_ref *sender, ac_ref *recipient)
{
    ac_ref *subs[16];
    uint32_t n = 0;
    pthread_mutex_lock(&sys->dl_sub_lock);
    for (uint32_t i = 0; i < sys->dl_subscribers.count && n < 16; i++)
        subs[n++] = ac_ref_retain(sys->dl_subscribers.items[i]);
    pthread_mutex_unlock(&sys->dl_sub_lock);
    for (uint32_t i = 0; i < n; i++) {
        ac_msg *dl = ac__dead_letter_msg_new(msg, sender, recipient);
        if (dl)
            ac_tell(subs[i], dl, NULL);
        ac_ref_release(subs[i]);
    }
}

ac_error *ac__undeliverable_error(const ac_ref *recipient, const char *why)
{
    ac_error *err = why ? ac_error_new(AC_UNDELIVERABLE_ERROR, "Ask to %s failed: %s",
                                       ac_ref_path(recipient), why)
                        : ac_error_new(AC_ACTOR_STOPPED_ERROR,
                                       "Ask to %s failed: the actor is stopped",
                                       ac_ref_path(recipient));
    if (AC__UNLIKELY(!err)) /* an ask must be answered */
        ac__oom_abort("an ask's undeliverable error");
    return err;
}

void ac__dead_letter(ac_system *sys, ac__mailbox_node *node, ac_ref *recipient)
{
    ac__dead_letter_why(sys, node, recipient, NULL);
}

void ac__dead_letter_why(ac_system *sys, ac__mailbox_node *node, ac_ref *recipient, const char *why)
{
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    if (msg->type == &ac_msg_type_terminated) {
        /* A death notice for a watcher that has itself stopped (a parent
         * watching its children, typically) is of no use to anyone. */
        ac_ref_release(sender);
        ac_msg_release(msg);
        return;
    }
    atomic_fetch_add_explicit(&sys->dead_letters, 1, memory_order_relaxed);
    ac__hook_count(sys, AC__EVENT_DEAD_LETTERS, 1);
    if (sender && sender->ops->undeliverable)
        sender->ops->undeliverable(sender, recipient, why);
    if (dead_letter_log_allowed(sys))
        ac__log(&sys->log, AC_LOG_INFO, recipient ? ac_ref_path(recipient) : NULL,
                "dead letter: %s from %s was not delivered", msg->type->name,
                sender ? ac_ref_path(sender) : "no sender");
    /* A notice that itself cannot be delivered is counted, not republished:
     * that would loop. */
    if (msg->type != &ac_msg_type_dead_letter && atomic_load_explicit(&sys->dl_nsubs, memory_order_relaxed) > 0)
        publish_dead_letter(sys, msg, sender, recipient);
    ac_ref_release(sender);
    ac_msg_release(msg);
}

ac_status ac_dead_letters_subscribe(ac_system *system, ac_ref *subscriber)
{
    if (!system || !subscriber)
        return ac__fail(AC_EINVAL, "ac_dead_letters_subscribe: %s is NULL",
                        system ? "subscriber" : "system");
    pthread_mutex_lock(&system->dl_sub_lock);
    int rc = system->dl_subscribers.count >= 16 ? AC_EINVAL
                                                 : ac__refset_add(&system->dl_subscribers, subscriber);
    atomic_store_explicit(&system->dl_nsubs, (int)system->dl_subscribers.count, memory_order_relaxed);
    pthread_mutex_unlock(&system->dl_sub_lock);
    if (rc != AC_OK)
        return ac__fail(rc, "ac_dead_letters_subscribe: at most 16 subscribers");
    return AC_OK;
}

ac_status ac_dead_letters_unsubscribe(ac_system *system, ac_ref *subscriber)
{
    if (!system || !subscriber)
        return ac__fail(AC_EINVAL, "ac_dead_letters_unsubscribe: %s is NULL",
                        system ? "subscriber" : "system");
    pthread_mutex_lock(&system->dl_sub_lock);
    bool removed = ac__refset_remove(&system->dl_subscribers, subscriber);
    atomic_store_explicit(&system->dl_nsubs, (int)system->dl_subscribers.count, memory_order_relaxed);
    pthread_mutex_unlock(&system->dl_sub_lock);
    return removed ? AC_OK
                   : ac__fail(AC_ENOTFOUND, "ac_dead_letters_unsubscribe: %s is not subscribed",
                              ac_ref_path(subscriber));
}
