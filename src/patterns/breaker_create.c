/*
 * A breaker made and let go: its options checked, its configuration and
 * metrics, the handles that keep its probe timer armed, and the breaker
 * as a ref, which answers a refused ask at once with its open error.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/last_error.h"
#include "core/sync.h"
#include "core/turn.h"
#include "patterns/breaker_state.h"

static const char *const outcome_names[AC__BREAKER_OUTCOMES] = {"success", "failure", "timeout",
                                                                "ignored", "rejected"};

/* ---- the breaker as a ref: it answers refused asks -------------------- */

static void breaker_deliver(ac_ref *self, ac__mailbox_node *node)
{
    ac_breaker *b = (ac_breaker *)self;
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    ac_msg_release(msg); /* never reaches the target */
    if (sender) {
        ac_msg *m = ac_msg_error_new(ac__breaker_open_error(b));
        if (m)
            ac_tell(sender, m, NULL);
        ac_ref_release(sender);
    }
}

static void breaker_destroy(ac_ref *self)
{
    ac_breaker *b = (ac_breaker *)self;
    ac__breaker_view_remove(b); /* first: a view may be reading it */
    ac__refset_clear(&b->subscribers);
    ac_error_release(b->cached);
    pthread_mutex_destroy(&b->lock);
    free(b->name);
    free(b);
}

static const char *breaker_path(const ac_ref *self)
{
    (void)self;
    return "actorc://temp/breaker";
}

static const ac__ref_ops breaker_ops = {
    .kind = AC__REF_REPLY,
    .deliver = breaker_deliver,
    .destroy = breaker_destroy,
    .path = breaker_path,
};

/* ---- options ---------------------------------------------------------- */

static ac_status check_ms(const char *fn, const char *what, int64_t v, int64_t lo)
{
    if (v == 0 || (v >= lo && v <= INT32_MAX))
        return AC_OK;
    return ac__fail(AC_EINVAL, "%s: %s = %lld; use %lld..%d, or 0 for the default%s", fn, what,
                    (long long)v, (long long)lo, INT32_MAX,
                    lo > 1 ? " (the ceiling is at least reset_timeout_ms)" : "");
}

static ac_status check_factors(const char *fn, const ac_breaker_options *o)
{
    if (o->backoff != 0 && !(o->backoff >= 1.0 && o->backoff <= 1000.0))
        return ac__fail(AC_EINVAL, "%s: backoff = %g; use 1..1000, or 0 for the default (%g)",
                        fn, o->backoff, AC_BREAKER_DEFAULT_BACKOFF);
    if (!(o->random_factor >= 0.0 && o->random_factor <= 1.0))
        return ac__fail(AC_EINVAL, "%s: random_factor = %g; use 0..1", fn, o->random_factor);
    return AC_OK;
}

static ac_status check_name(const char *fn, const char *name, bool need_name)
{
    if (!need_name)
        return AC_OK;
    if (!name || !*name)
        return ac__fail(AC_EINVAL, "%s: name is %s; a breaker needs a name (1..255 bytes)", fn,
                        name ? "empty" : "NULL");
    if (strlen(name) > 255)
        return ac__fail(AC_EINVAL, "%s: name is %zu bytes long; at most 255", fn, strlen(name));
    return AC_OK;
}

ac_status ac_breaker_options_check(const char *fn, const ac_breaker_options *o, bool need_name)
{
    if (!fn)
        fn = "ac_breaker_options_check";
    if (!o)
        return ac__fail(AC_EINVAL, "%s: breaker options are NULL", fn);
    if (check_name(fn, o->name, need_name) != AC_OK)
        return AC_EINVAL;
    if (o->max_failures < 0 || o->max_failures > AC_BREAKER_MAX_FAILURES_LIMIT)
        return ac__fail(AC_EINVAL, "%s: max_failures = %d; use 1..%d, or 0 for the default (%d)",
                        fn, o->max_failures, AC_BREAKER_MAX_FAILURES_LIMIT,
                        AC_BREAKER_DEFAULT_MAX_FAILURES);
    if (check_ms(fn, "call_timeout_ms", o->call_timeout_ms, 1) != AC_OK ||
        check_ms(fn, "reset_timeout_ms", o->reset_timeout_ms, 1) != AC_OK)
        return AC_EINVAL;
    int64_t reset = o->reset_timeout_ms ? o->reset_timeout_ms : AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS;
    if (o->max_reset_timeout_ms != 0 &&
        check_ms(fn, "max_reset_timeout_ms", o->max_reset_timeout_ms, reset) != AC_OK)
        return AC_EINVAL;
    return check_factors(fn, o);
}

/* ---- creation --------------------------------------------------------- */

static void metrics_init(ac_breaker *b, ac_system *sys)
{
    if (!ac_metrics_enabled(sys))
        return;
    static const char *const by_breaker[] = {"breaker"};
    static const char *const by_outcome[] = {"breaker", "outcome"};
    static const char *const by_to[] = {"breaker", "to"};
    ac_metric_options so = {.help = "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
                            .label_names = by_breaker, .label_count = 1};
    ac_metric_options co = {.help = "Calls through a circuit breaker, by outcome.",
                            .label_names = by_outcome, .label_count = 2};
    ac_metric_options to = {.help = "Circuit breaker state changes, by the state entered.",
                            .label_names = by_to, .label_count = 2};
    ac_metric_family *state = ac_metrics_gauge(sys, "circuit_breaker_state", &so);
    ac_metric_family *calls = ac_metrics_counter(sys, "circuit_breaker_calls_total", &co);
    ac_metric_family *trans = ac_metrics_counter(sys, "circuit_breaker_transitions_total", &to);
    const char *one[] = {b->name};
    b->state_gauge = ac_gauge_series(state, one);
    ac_gauge_set(b->state_gauge, AC_BREAKER_CLOSED);
    for (int i = 0; i < AC__BREAKER_OUTCOMES; i++) {
        const char *v[] = {b->name, outcome_names[i]};
        b->calls[i] = ac_counter_series(calls, v);
    }
    for (int s = 0; s < 3; s++) {
        const char *v[] = {b->name, ac_breaker_state_name((ac_breaker_state)s)};
        b->transitions[s] = ac_counter_series(trans, v);
    }
    ac_clear_error(); /* a family at its cap is no failure of ours */
}

static void configure(ac_breaker *b, const ac_breaker_options *o)
{
    b->max_failures = o->max_failures ? o->max_failures : AC_BREAKER_DEFAULT_MAX_FAILURES;
    b->call_timeout_ms = (uint32_t)o->call_timeout_ms;
    b->reset_timeout_ms =
        (uint32_t)(o->reset_timeout_ms ? o->reset_timeout_ms : AC_BREAKER_DEFAULT_RESET_TIMEOUT_MS);
    b->max_reset_timeout_ms =
        (uint32_t)(o->max_reset_timeout_ms ? o->max_reset_timeout_ms : b->reset_timeout_ms);
    b->backoff = o->backoff ? o->backoff : AC_BREAKER_DEFAULT_BACKOFF;
    b->random_factor = o->random_factor;
    b->is_failure = o->is_failure;
    b->is_failure_user = o->is_failure_user;
    b->on_transition = o->on_transition;
    b->on_transition_user = o->on_transition_user;
    atomic_init(&b->backoff_ms, b->reset_timeout_ms);
    atomic_init(&b->opened, 0);
    b->rng = o->seed ? o->seed : ((uint64_t)(uintptr_t)b ^ ac__now_ns() ^ 0x9e3779b97f4a7c15ull);
    if (!b->rng)
        b->rng = 1;
}

ac_breaker *ac__breaker_create_named(ac_system *sys, const ac_breaker_options *o,
                                     const char *name)
{
    ac_breaker *b = ac__calloc(1, sizeof *b);
    char *copy = ac__strdup(name);
    if (!b || !copy) {
        free(b);
        free(copy);
        return ac__fail_null(AC_ENOMEM, "ac_breaker_create: out of memory");
    }
    if (ac__mutex_init_hot(&b->lock, "a circuit breaker's lock") != AC_OK) {
        free(b);
        free(copy);
        return NULL;
    }
    ac__ref_init(&b->ref, &breaker_ops, sys);
    atomic_init(&b->handles, 1);
    atomic_init(&b->word, (uint64_t)AC_BREAKER_CLOSED);
    atomic_init(&b->open_until_ms, 0);
    atomic_init(&b->opened_at_ms, 0);
    atomic_init(&b->refused, 0);
    atomic_flag_clear(&b->cache_lock);
    b->name = copy;
    configure(b, o);
    metrics_init(b, sys);
    ac__breaker_view_add(b, sys);
    return b;
}

ac_breaker *ac_breaker_create(ac_system *sys, const ac_breaker_options *o)
{
    ac__clear_status();
    static const char fn[] = "ac_breaker_create";
    if (!sys)
        return ac__fail_null(AC_EINVAL, "%s: system is NULL", fn);
    if (ac_breaker_options_check(fn, o, true) != AC_OK)
        return NULL;
    if (atomic_load_explicit(&sys->terminating, memory_order_relaxed))
        return ac__fail_null(AC_ETERMINATED, "%s: system \"%s\" is terminating", fn, sys->name);
    return ac__breaker_create_named(sys, o, o->name);
}

ac_breaker *ac_breaker_retain(ac_breaker *b)
{
    if (b) {
        atomic_fetch_add_explicit(&b->handles, 1, memory_order_relaxed);
        ac_ref_retain(&b->ref);
    }
    return b;
}

void ac_breaker_release(ac_breaker *b)
{
    if (!b)
        return;
    /* acq_rel: the last handle's holder sees every other's calls done. */
    if (atomic_fetch_sub_explicit(&b->handles, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&b->lock);
        b->abandoned = true;
        ac__breaker_cancel_probe_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
    ac_ref_release(&b->ref);
}

const char *ac_breaker_name(const ac_breaker *b) { return b ? b->name : ""; }

ac_ref *ac__breaker_ref(ac_breaker *b) { return &b->ref; }

uint32_t ac__breaker_call_timeout_ms(const ac_breaker *b) { return b->call_timeout_ms; }
