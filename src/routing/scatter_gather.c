/*
 * Scatter/gather-first-completed: every message is asked of every routee
 * at once, as one gather. This file is the kind's gathering policy
 * (gather.h) — whom to ask, and every request sent at once — its words,
 * and its factories; the gather core does everything after the send.
 *
 * Whom to ask: every live routee, in pool order — unless a hedge budget
 * is spent, when the routees beyond the quorum are asked only as far as
 * the budget's tokens go (never fewer than the quorum, so never none),
 * from a start that moves by one per message so that the load stays
 * even. With per-routee breakers, a scatter goes only to the routees
 * whose breakers admit it, each request through its breaker
 * (ac_breaker_tell, with the slot as the sender the answer is passed on
 * to), so that a routee's answer or timeout counts before its slot sees
 * it. When every breaker refuses, the caller gets an AggregateError of
 * their CircuitBreakerOpenErrors at once; when fewer than a quorum admit,
 * the same with the quorum's message.
 *
 * The policy learns nothing from outcomes: it has no hooks but `ask` and
 * `start`, and a gather of it is sealed from the start.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather.h"

static const ac__gather_names scatter_names = {
    .title = "Scatter/gather router",
    .noun = "scatter",
    .send_to = "scatter to",
    .sent = "scattered",
    .label = "scatter-gather",
    .resolved = "router_scatter_gather_resolved_total",
    .resolved_help = "Scatter/gather messages resolved, by outcome.",
    .latency = "router_scatter_gather_latency_seconds",
    .latency_help = "Seconds from scattering a message to answering its caller.",
};

/* ---- the policy ------------------------------------------------------- */

/* How many of the n live routees to ask: all, or what the budget allows
 * beyond the quorum. */
static uint32_t routees_to_ask(ac_ctx *ctx, ac__gather_shared *sh, uint32_t n)
{
    if (!sh->has_budget)
        return n;
    uint32_t extras = n - sh->quorum;
    uint32_t got = ac__hedge_budget_take(&sh->budget, extras);
    if (got < extras)
        ac__gather_count_event(sh, ac_ctx_system(ctx), AC__GATHER_BUDGET_EXHAUSTED);
    return sh->quorum + got;
}

/* The admission of one message through the routees' breakers. */
typedef struct admission {
    uint32_t *picks; /* places in the set of the admitted routees */
    ac_breaker **breakers;
    ac_breaker_permit *permits;
    ac_error **refusals; /* the refusals' errors (references) */
    uint32_t admitted, refused;
} admission;

/* Up to `asked` routees whose breakers admit the message, in ring order
 * from `start`. */
static void admit_routees(const ac__router_state *st, size_t start, uint32_t asked, admission *a)
{
    a->admitted = a->refused = 0;
    for (size_t k = 0; k < st->n && a->admitted < asked; k++) {
        size_t i = (start + k) % st->n;
        ac_error *err = NULL;
        if (!ac_breaker_acquire(st->breakers[i], &a->permits[a->admitted], &err)) {
            if (err)
                a->refusals[a->refused++] = err;
            continue;
        }
        a->breakers[a->admitted] = st->breakers[i];
        a->picks[a->admitted++] = (uint32_t)i;
    }
}

static void decide_admitted(ac_ctx *ctx, ac__gather_shared *sh, const ac__router_state *st,
                            ac_msg *msg, ac_ref *caller, admission *a)
{
    if (a->admitted == 0) {
        ac__gather_answer_all_open(ctx, sh, caller, a->refusals, a->refused);
    } else if (a->admitted < sh->quorum) {
        for (uint32_t i = 0; i < a->admitted; i++)
            ac_breaker_cancel(a->breakers[i], &a->permits[i]);
        ac__gather_answer_short(ctx, sh, caller, a->refusals, a->refused, (uint32_t)st->n);
    } else {
        ac__gather_permits permits = {.breakers = a->breakers, .permits = a->permits};
        ac__gather_open(ctx, sh, st, a->picks, a->admitted, caller, msg, &permits);
    }
    for (uint32_t i = 0; i < a->refused; i++)
        ac_error_release(a->refusals[i]);
}

enum { SMALL = 8 };

static void scatter_guarded(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st,
                            ac_msg *msg, ac_ref *caller, size_t start, uint32_t asked)
{
    struct {
        uint32_t picks[SMALL];
        ac_breaker *breakers[SMALL];
        ac_breaker_permit permits[SMALL];
        ac_error *refusals[SMALL];
    } small;
    bool big = st->n > SMALL;
    admission a = {
        .picks = big ? ac__malloc(st->n * sizeof *a.picks) : small.picks,
        .breakers = big ? ac__malloc(st->n * sizeof *a.breakers) : small.breakers,
        .permits = big ? ac__malloc(st->n * sizeof *a.permits) : small.permits,
        .refusals = big ? ac__malloc(st->n * sizeof *a.refusals) : small.refusals,
    };
    if (a.picks && a.breakers && a.permits && a.refusals) {
        admit_routees(st, start, asked, &a);
        decide_admitted(ctx, sh, st, msg, caller, &a);
    } else {
        ac__gather_answer_no_memory(ctx, sh, caller, st->n);
    }
    if (big) {
        free(a.picks);
        free(a.breakers);
        free(a.permits);
        free(a.refusals);
    }
}

static void scatter_ask(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st, ac_msg *msg,
                        ac_ref *caller)
{
    uint32_t asked = routees_to_ask(ctx, sh, (uint32_t)st->n);
    size_t start = asked < st->n ? (size_t)(st->index % st->n) : 0;
    if (st->breakers) {
        scatter_guarded(ctx, sh, st, msg, caller, start, asked);
        return;
    }
    if (asked == st->n) { /* all of them, in pool order */
        ac__gather_open(ctx, sh, st, NULL, asked, caller, msg, NULL);
        return;
    }
    uint32_t small[16];
    uint32_t *picks = asked <= 16 ? small : ac__malloc(asked * sizeof *picks);
    if (!picks) {
        ac__gather_answer_no_memory(ctx, sh, caller, asked);
        return;
    }
    for (uint32_t i = 0; i < asked; i++)
        picks[i] = (uint32_t)((start + i) % st->n);
    ac__gather_open(ctx, sh, st, picks, asked, caller, msg, NULL);
    if (picks != small)
        free(picks);
}

/* Every slot goes out now: sealed from the start. No other thread knows
 * the gather before its first request is told. */
static void scatter_start(ac__gather *g, ac_msg *msg, const ac__gather_permits *permits)
{
    atomic_store_explicit(&g->launched, g->n | AC__GATHER_SEALED, memory_order_relaxed);
    ac__gather_arm_deadline(g);
    for (uint32_t i = 0; i < g->n; i++)
        ac__gather_send(g, i, msg, permits ? permits->breakers[i] : NULL,
                        permits ? &permits->permits[i] : NULL);
    ac__gather_unref(g); /* the creator's: held while telling, since a claim
                          * of every slot could end the gather meanwhile */
}

static const ac__gather_policy scatter_policy = {.ask = scatter_ask, .start = scatter_start};

const ac__router_kind ac__scatter_gather_kind = {
    .name = "scatter-gather-first-completed",
    .route = ac__gather_route,
    .on_start = ac__gather_on_start,
    .on_stop = ac__gather_on_stop,
    .on_spawn = ac__gather_on_spawn,
    .answers_empty = true,
    .own_view = true,
};

/* ---- the factories ---------------------------------------------------- */

/* `size` < 0: a set whose size is not known yet (a member group's), so
 * only a quorum no set could reach is refused; a larger set than there
 * is answers as fewer routees than the quorum do. */
static ac_status check_options(const char *fn, int size, const ac_scatter_gather_options *o)
{
    if (!o)
        return AC_OK;
    if (size < 0 && (o->quorum < 0 || o->quorum > AC__ROUTER_MAX_ROUTEES))
        return ac__fail(AC_EINVAL,
                        "%s: quorum = %d is not usable; use 1..%d, or 0 for the first reply", fn,
                        o->quorum, AC__ROUTER_MAX_ROUTEES);
    if (size >= 0 && (o->quorum < 0 || o->quorum > size))
        return ac__fail(AC_EINVAL,
                        "%s: quorum = %d is not usable for a pool of %d routees; use 1..%d, or 0 "
                        "for the first reply",
                        fn, o->quorum, size, size);
    return ac__hedge_budget_check(fn, o->budget);
}

/* The one factory body of the kind, for pools, groups and member groups:
 * the shared state from `options` (NULL: defaults), checked against a
 * set of `size` routees (-1: any size), counting per-routee series for
 * routee-1 .. routee-<pool_size> (0: none); NULL with the error. */
static ac__gather_shared *scatter_shared(const char *fn, const ac_scatter_gather_options *options,
                                         int size, int pool_size)
{
    int64_t timeout = options ? options->timeout_ms : 0;
    if (ac__gather_check_timeout(fn, timeout, "timeout_ms") != AC_OK ||
        check_options(fn, size, options) != AC_OK)
        return NULL;
    ac__gather_shared *sh = ac__gather_shared_create(
        &scatter_names, &scatter_policy, pool_size,
        (uint32_t)(timeout ? timeout : AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS), fn);
    if (!sh || !options)
        return sh;
    if (options->quorum > 1)
        sh->quorum = (uint32_t)options->quorum;
    sh->cancel_losers = options->cancel_losers;
    if (options->budget) {
        sh->has_budget = true;
        ac__hedge_budget_init(&sh->budget, options->budget);
    }
    return sh;
}

ac_props *ac_router_scatter_gather_first_completed(int size, const ac_actor_def *routee_def,
                                                   const ac_scatter_gather_options *options,
                                                   const ac_routee_options *routee_opts)
{
    ac__clear_status();
    static const char fn[] = "ac_router_scatter_gather_first_completed";
    ac__router_cfg *cfg =
        ac__router_pool_cfg_new(fn, &ac__scatter_gather_kind, size, routee_def, routee_opts);
    return ac__gather_props(fn, cfg, cfg ? scatter_shared(fn, options, size, size) : NULL,
                            routee_opts);
}

ac_props *ac_router_group_scatter_gather_first_completed(ac_ref *const *routees, size_t n,
                                                         const ac_scatter_gather_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_scatter_gather_first_completed";
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, &ac__scatter_gather_kind, routees, n);
    return ac__gather_props(fn, cfg, cfg ? scatter_shared(fn, options, (int)n, 0) : NULL, NULL);
}

ac_status ac__scatter_gather_setup(ac__router_cfg *cfg, const ac_scatter_gather_options *options,
                                   const char *fn)
{
    ac__gather_shared *sh = scatter_shared(fn, options, -1, 0);
    if (!sh)
        return ac_last_status();
    ac__gather_attach(cfg, sh);
    return AC_OK;
}
