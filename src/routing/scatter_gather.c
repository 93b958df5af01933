/*
 * Scatter/gather-first-completed: every message is asked of every routee
 * at once, as one gather (gather.c, which holds everything after the
 * send: slots, the deadline, the answers, stopping, metrics).
 *
 * What this file decides is whom to ask. Every live routee, in pool order
 * — unless a hedge budget is spent, when the routees beyond the quorum
 * are asked only as far as the budget's tokens go (never fewer than the
 * quorum, so never none), from a start that moves by one per message so
 * that the load stays even. With per-routee breakers, a scatter goes only
 * to the routees whose breakers admit it, each request through its
 * breaker (ac_breaker_tell, with the slot as the sender the answer is
 * passed on to), so that a routee's answer or timeout counts before its
 * slot sees it. When every breaker refuses, the caller gets an
 * AggregateError of their CircuitBreakerOpenErrors at once; when fewer
 * than a quorum admit, the same with the quorum's message.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather.h"

/* How many of the n live routees to ask: all, or what the budget allows
 * beyond the quorum. */
static uint32_t routees_to_ask(ac_ctx *ctx, ac__gather_shared *sh, uint32_t n)
{
    if (!sh->has_budget)
        return n;
    ac__hedge_budget_deposit(&sh->budget);
    uint32_t extras = n - sh->quorum;
    uint32_t got = ac__hedge_budget_take(&sh->budget, extras);
    if (got < extras)
        ac__gather_count_budget_exhausted(sh, ac_ctx_system(ctx));
    return sh->quorum + got;
}

typedef struct guard_scratch {
    ac_breaker_permit permits[8];
    ac_breaker *breakers[8];
    ac_error *refusals[8];
    uint32_t picks[8];
} guard_scratch;

/* Up to `asked` routees whose breakers admit the message, in ring order
 * from `start`: their places in the set into `picks`, their breakers and
 * permits; the refusals' errors (the caller's references) into
 * `refusals`, counted in *refused. Returns how many were admitted. */
static uint32_t admit_routees(const ac__router_state *st, size_t start, uint32_t asked,
                              uint32_t *picks, ac_breaker **breakers, ac_breaker_permit *permits,
                              ac_error **refusals, uint32_t *refused)
{
    uint32_t admitted = 0;
    *refused = 0;
    for (size_t k = 0; k < st->n && admitted < asked; k++) {
        size_t i = (start + k) % st->n;
        ac_error *err = NULL;
        if (!ac_breaker_acquire(st->breakers[i], &permits[admitted], &err)) {
            if (err)
                refusals[(*refused)++] = err;
            continue;
        }
        breakers[admitted] = st->breakers[i];
        picks[admitted++] = (uint32_t)i;
    }
    return admitted;
}

static void scatter_admitted(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st,
                             ac_msg *msg, ac_ref *caller, const uint32_t *picks,
                             ac_breaker **breakers, ac_breaker_permit *permits, uint32_t admitted)
{
    ac__gather *g = ac__gather_new(sh, st, picks, admitted, caller, NULL, ac_ctx_system(ctx));
    if (g) {
        ac__gather_scatter(g, msg, breakers, permits);
        return;
    }
    for (uint32_t i = 0; i < admitted; i++)
        ac_breaker_cancel(breakers[i], &permits[i]);
    ac__gather_answer_no_memory(ctx, sh, caller, admitted);
}

static void scatter_guarded(ac_ctx *ctx, ac__gather_shared *sh, ac__router_state *st,
                            ac_msg *msg, ac_ref *caller, size_t start, uint32_t asked)
{
    guard_scratch small;
    bool big = st->n > 8;
    ac_breaker_permit *permits = big ? ac__malloc(st->n * sizeof *permits) : small.permits;
    ac_breaker **breakers = big ? ac__malloc(st->n * sizeof *breakers) : small.breakers;
    ac_error **refusals = big ? ac__malloc(st->n * sizeof *refusals) : small.refusals;
    uint32_t *picks = big ? ac__malloc(st->n * sizeof *picks) : small.picks;
    uint32_t refused = 0;
    if (!permits || !breakers || !refusals || !picks) {
        ac__gather_answer_no_memory(ctx, sh, caller, st->n);
        goto out;
    }
    uint32_t admitted =
        admit_routees(st, start, asked, picks, breakers, permits, refusals, &refused);
    if (admitted == 0) {
        ac__gather_answer_all_open(ctx, sh, caller, refusals, refused);
    } else if (admitted < sh->quorum) {
        for (uint32_t i = 0; i < admitted; i++)
            ac_breaker_cancel(breakers[i], &permits[i]);
        ac__gather_answer_short(ctx, sh, caller, refusals, refused, (uint32_t)st->n);
    } else {
        scatter_admitted(ctx, sh, st, msg, caller, picks, breakers, permits, admitted);
    }
    for (uint32_t i = 0; i < refused; i++)
        ac_error_release(refusals[i]);
out:
    if (big) {
        free(permits);
        free(breakers);
        free(refusals);
        free(picks);
    }
}

static void route_scatter(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    ac__gather_shared *sh = cfg->extra;
    ac_ref *caller = ac_sender(ctx);
    if (!caller) {
        ac__gather_drop_unanswerable(ctx, sh, msg);
        return;
    }
    if (st->n == 0) {
        ac__gather_answer_empty(ctx, sh, caller);
        return;
    }
    if (st->n < sh->quorum) {
        ac__gather_answer_short(ctx, sh, caller, NULL, 0, (uint32_t)st->n);
        return;
    }
    uint32_t asked = routees_to_ask(ctx, sh, (uint32_t)st->n);
    size_t start = asked < st->n ? (size_t)(st->index % st->n) : 0;
    if (st->breakers) {
        scatter_guarded(ctx, sh, st, msg, caller, start, asked);
        return;
    }
    uint32_t small[16];
    uint32_t *picks = NULL; /* all of them, in pool order */
    if (asked < st->n) {
        picks = asked <= 16 ? small : ac__malloc(asked * sizeof *picks);
        for (uint32_t i = 0; picks && i < asked; i++)
            picks[i] = (uint32_t)((start + i) % st->n);
    }
    ac__gather *g = !picks && asked < st->n
                        ? NULL
                        : ac__gather_new(sh, st, picks, asked, caller, NULL, ac_ctx_system(ctx));
    if (picks != small)
        free(picks);
    if (!g) {
        ac__gather_answer_no_memory(ctx, sh, caller, asked);
        return;
    }
    ac__gather_scatter(g, msg, NULL, NULL);
}

const ac__router_kind ac__scatter_gather_kind = {
    .name = "scatter-gather-first-completed",
    .route = route_scatter,
    .on_start = ac__gather_on_start,
    .on_stop = ac__gather_on_stop,
    .on_spawn = ac__gather_on_spawn,
    .answers_empty = true,
};

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

/* The shared part of a scatter/gather router, pool or group, from its
 * options (checked here) into cfg. */
ac_status ac__scatter_gather_setup(ac__router_cfg *cfg, const ac_scatter_gather_options *options,
                                   const char *fn, int size, int pool_size)
{
    int64_t timeout = options ? options->timeout_ms : 0;
    if (ac__gather_check_timeout(fn, timeout, "timeout_ms") != AC_OK ||
        check_options(fn, size, options) != AC_OK)
        return ac_last_status();
    ac__gather_shared *sh = ac__gather_shared_create(&ac__scatter_gather_names, pool_size, fn);
    if (!sh)
        return ac_last_status();
    sh->timeout_ms = (uint32_t)(timeout ? timeout : AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
    if (options && options->quorum > 1)
        sh->quorum = (uint32_t)options->quorum;
    sh->cancel_losers = options && options->cancel_losers;
    if (options && options->budget) {
        sh->has_budget = true;
        ac__hedge_budget_init(&sh->budget, options->budget);
    }
    cfg->kind = &ac__scatter_gather_kind;
    cfg->extra = sh;
    cfg->extra_free = ac__gather_shared_release_void;
    cfg->skip_cancelled = sh->cancel_losers;
    return AC_OK;
}

ac_props *ac_router_scatter_gather_first_completed(int size, const ac_actor_def *routee_def,
                                                   const ac_scatter_gather_options *options,
                                                   const ac_routee_options *routee_opts)
{
    ac__clear_status();
    static const char fn[] = "ac_router_scatter_gather_first_completed";
    int64_t timeout = options ? options->timeout_ms : 0;
    if (ac__gather_check_timeout(fn, timeout, "timeout_ms") != AC_OK ||
        ac__router_check(fn, size, routee_def, routee_opts) != AC_OK ||
        check_options(fn, size, options) != AC_OK)
        return NULL;
    ac__gather_shared *sh = ac__gather_shared_create(&ac__scatter_gather_names, size, fn);
    if (!sh)
        return NULL;
    sh->timeout_ms = (uint32_t)(timeout ? timeout : AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
    if (options && options->quorum > 1)
        sh->quorum = (uint32_t)options->quorum;
    sh->cancel_losers = options && options->cancel_losers;
    if (options && options->budget) {
        sh->has_budget = true;
        ac__hedge_budget_init(&sh->budget, options->budget);
    }
    return ac__gather_props(fn, &ac__scatter_gather_kind, sh, size, routee_def, routee_opts);
}

ac_props *ac_router_group_scatter_gather_first_completed(ac_ref *const *routees, size_t n,
                                                         const ac_scatter_gather_options *options)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_scatter_gather_first_completed";
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, &ac__scatter_gather_kind, routees, n);
    if (!cfg)
        return NULL;
    if (ac__scatter_gather_setup(cfg, options, fn, (int)n, 0) != AC_OK) {
        ac__router_cfg_free(cfg);
        return NULL;
    }
    return ac__router_props(cfg, NULL, fn);
}
