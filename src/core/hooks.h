/*
 * What the core reports to an optional part above it (metrics): counts
 * of runtime events and the system's teardown. The core owns this
 * interface; the part that plugs in (ac_metrics_enable) installs its
 * hooks once, and the core never names it.
 *
 * Cost while nothing is installed: one load and one branch, predicted
 * not taken, per report — what a program without metrics pays.
 */
#ifndef AC_CORE_HOOKS_H
#define AC_CORE_HOOKS_H

#include "core/system_internal.h"

/* The runtime events the core and ask count. */
typedef enum ac__event {
    AC__EVENT_ACTORS_STARTED,
    AC__EVENT_ACTORS_STOPPED,
    AC__EVENT_MESSAGES,
    AC__EVENT_DEAD_LETTERS,
    AC__EVENT_ASK_TIMEOUTS,
    AC__EVENT_RESTARTS,
    AC__EVENTS
} ac__event;

/* Installed on a system, and left there until its teardown. `count` runs
 * on any thread, inside turns: it must be short and must not block. */
typedef struct ac__hooks {
    void (*count)(void *ctx, ac__event event, uint64_t n);
    /* Teardown, after every thread that could report has been joined.
     * Runs while the hooks are still installed (what it stops may still
     * look them up); they are uninstalled right after. */
    void (*teardown)(void *ctx);
    void *ctx;
} ac__hooks;

/* The installed hooks, or NULL. Acquire pairs with the release CAS in
 * ac__hooks_install, so what the hooks' context points at is seen
 * initialised. */
static inline const ac__hooks *ac__hooks_of(const ac_system *sys)
{
    return atomic_load_explicit(&((ac_system *)sys)->hooks, memory_order_acquire);
}

/* Install `hooks` (which must live until their teardown) on a system that
 * has none; false if some were installed first. Any thread. */
bool ac__hooks_install(ac_system *sys, const ac__hooks *hooks);
/* Run the teardown hook, then uninstall (system teardown, threads joined). */
void ac__hooks_teardown(ac_system *sys);

/* Count n events: cheap enough for every turn. */
static inline void ac__hook_count(const ac_system *sys, ac__event event, uint64_t n)
{
    const ac__hooks *h = ac__hooks_of(sys);
    if (AC__UNLIKELY(h != NULL))
        h->count(h->ctx, event, n);
}

#endif
