/*
 * What the breaker's files share: the breaker's struct and the outcomes it
 * counts. breaker.c holds the state machine (the state word, opening and
 * the probe timer, admission, outcomes, the open error), breaker_events.c
 * announces changes (callback, subscribers, metrics), breaker_create.c
 * makes and frees a breaker (options, handles, the breaker as a ref),
 * breaker_view.c shows it in the system's view.
 * Nothing here is for breaker_call.c or the routers: they use
 * breaker_internal.h.
 */
#ifndef AC_PATTERNS_BREAKER_STATE_H
#define AC_PATTERNS_BREAKER_STATE_H

#include <pthread.h>

#include "actorc/observe.h"
#include "core/ref.h"
#include "core/system_internal.h"
#include "patterns/breaker_internal.h"

typedef enum ac__breaker_outcome {
    AC__BREAKER_SUCCEEDED,
    AC__BREAKER_FAILED,
    AC__BREAKER_TIMED_OUT,
    AC__BREAKER_IGNORED,
    AC__BREAKER_REJECTED,
    AC__BREAKER_OUTCOMES
} ac__breaker_outcome;

typedef struct probe_timer probe_timer;

struct ac_breaker {
    ac_ref ref; /* the breaker's reference count; answers refused asks */
    /* Holds taken with ac_breaker_retain (the creator's, a router's, a
     * gather's), a subset of `ref`'s count. When the last goes, nobody can
     * call through the breaker again: its probe timer is cancelled rather
     * than left armed for up to a reset timeout, keeping it alive. */
    atomic_uint handles;
    _Atomic uint64_t word;
    atomic_int_least64_t open_until_ms; /* published by `word` (see the top) */
    atomic_int_least64_t opened_at_ms;
    /* configuration, fixed at creation */
    char *name;
    int max_failures;
    uint32_t call_timeout_ms, reset_timeout_ms, max_reset_timeout_ms;
    double backoff, random_factor;
    ac_breaker_failure_fn is_failure;
    void *is_failure_user;
    ac_breaker_transition_fn on_transition;
    void *on_transition_user;
    /* under lock */
    pthread_mutex_t lock;
    /* reset timeout of the next open period, before jitter; and the opens
     * so far. Written under the lock, read without it (ac_breaker_get_info
     * may be called from a transition callback, which holds the lock). */
    atomic_int_least64_t backoff_ms;
    uint64_t rng;
    atomic_uint_least64_t opened;
    ac__refset subscribers;
    probe_timer *probe; /* the armed probe timer, if any */
    bool abandoned;     /* no handle left: arm no more probe timers */
    /* the open error, made at most once per epoch and ms (under cache_lock) */
    atomic_flag cache_lock;
    ac_error *cached;
    uint64_t cached_epoch;
    int64_t cached_ms;
    /* Calls refused (not admitted); any thread, relaxed: a count. */
    atomic_uint_least64_t refused;
    /* Its place in the system's view (breaker_view.c); NULL: not in it. */
    ac_observe_source *view;
    /* metrics; NULL when off */
    ac_gauge *state_gauge;
    ac_counter *calls[AC__BREAKER_OUTCOMES];
    ac_counter *transitions[3];
};

static inline int64_t ac__breaker_now_ms(const ac_breaker *b)
{
    return ac_clock_now_ms(b->ref.system);
}

static inline void ac__breaker_count(ac_breaker *b, ac__breaker_outcome o)
{
    ac_counter_inc(b->calls[o]);
}

/* breaker.c: cancel the armed probe timer, if any. Call with the lock
 * held. */
void ac__breaker_cancel_probe_locked(ac_breaker *b);
/* breaker.c: the open error for now (shared by the calls refused in the
 * same epoch and ms), or NULL when out of memory. Any thread. */
ac_error *ac__breaker_open_error(ac_breaker *b);
/* breaker_events.c: announce a change. Call with the lock held, after the
 * word changed. */
void ac__breaker_announce(ac_breaker *b, ac_breaker_state from, ac_breaker_state to);
/* breaker_view.c: into the system's view when made (a failure only
 * leaves it out), out of it before it is freed. */
void ac__breaker_view_add(ac_breaker *b, ac_system *sys);
void ac__breaker_view_remove(ac_breaker *b);

#endif
