/*
 * The router side of every gathering kind: the shared state a router and
 * its gathers hold, how a kind's factory hands it to the router's
 * configuration, and the route and hooks every gathering kind's
 * ac__router_kind uses. A kind brings its policy (whom to ask, how the
 * requests go out) and its names; nothing here asks which kind it is.
 *
 * The route runs in the router's turn and only decides what needs no
 * gather: a message without a reply target is dropped with a warning, an
 * empty set or one smaller than the quorum is answered at once; then the
 * budget takes the message's deposit and the policy asks.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/gather.h"
#include "routing/gather_view.h"

/* ---- the shared state ------------------------------------------------- */

ac__gather_shared *ac__gather_shared_create(const ac__gather_names *names,
                                            const ac__gather_policy *policy, int pool_size,
                                            uint32_t timeout_ms, const char *fn)
{
    ac__gather_shared *sh = ac__calloc(1, sizeof *sh);
    if (!sh)
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    if (ac__mutex_init_hot(&sh->lock, "a gathering router's lock") != AC_OK) {
        free(sh);
        return NULL;
    }
    atomic_init(&sh->refs, 1);
    atomic_init(&sh->metrics, NULL);
    sh->names = names;
    sh->policy = policy;
    sh->pool_size = pool_size;
    sh->timeout_ms = timeout_ms;
    sh->quorum = 1;
    sh->view = ac__gather_view_create(pool_size); /* NULL: the router is not in the view */
    return sh;
}

void ac__gather_shared_release(ac__gather_shared *sh)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) != 1)
        return;
    ac__gather_view_free(sh->view); /* out of the system's view first */
    pthread_mutex_destroy(&sh->lock);
    ac__gather_metrics_free(atomic_load_explicit(&sh->metrics, memory_order_relaxed));
    if (sh->policy_state)
        sh->policy->free_state(sh->policy_state);
    ac_ref_release(sh->router);
    free(sh);
}

static void shared_release(void *sh) { ac__gather_shared_release(sh); }

/* ---- factories -------------------------------------------------------- */

void ac__gather_attach(ac__router_cfg *cfg, ac__gather_shared *sh)
{
    cfg->extra = sh;
    cfg->extra_free = shared_release;
    cfg->skip_cancelled = sh->cancel_losers;
}

ac_props *ac__gather_props(const char *fn, ac__router_cfg *cfg, ac__gather_shared *sh,
                           const ac_routee_options *routee_opts)
{
    if (!cfg || !sh) {
        if (cfg)
            ac__router_cfg_free(cfg);
        if (sh)
            ac__gather_shared_release(sh);
        return NULL; /* whichever failed recorded why */
    }
    ac__gather_attach(cfg, sh);
    return ac__router_props(cfg, routee_opts, fn); /* frees cfg and sh on failure */
}

ac_status ac__gather_check_timeout(const char *fn, int64_t timeout_ms, const char *what)
{
    if (timeout_ms >= 0 && timeout_ms <= INT32_MAX)
        return AC_OK;
    return ac__fail(AC_EINVAL, "%s: %s = %lld is not usable; use 1..%d, or 0 for the default (%d)",
                    fn, what, (long long)timeout_ms, INT32_MAX,
                    AC_SCATTER_GATHER_DEFAULT_TIMEOUT_MS);
}

/* ---- the route and the kinds' hooks ----------------------------------- */

void ac__gather_route(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
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
    if (sh->has_budget)
        ac__hedge_budget_deposit(&sh->budget);
    sh->policy->ask(ctx, sh, st, msg, caller);
}

void ac__gather_on_start(ac_ctx *ctx, ac__router_cfg *cfg)
{
    ac__gather_shared *sh = cfg->extra;
    if (!sh->router) { /* the same cell across restarts */
        sh->router = ac_ref_retain(ac_self(ctx));
        /* Into the system's view now, not at spawn: a spawn holds the
         * guardian's lock, which finding the view takes. */
        ac__gather_view_publish(sh, ac_ctx_system(ctx), sh->router);
    }
}

/* The resolution families are exposed, at zero, as soon as the router is
 * spawned. */
void ac__gather_on_spawn(ac_system *system, ac__router_cfg *cfg)
{
    (void)ac__gather_metrics_of(cfg->extra, system);
}

/* post_stop, and so restart: every open gather fails now. */
void ac__gather_on_stop(ac_ctx *ctx, ac__router_cfg *cfg)
{
    (void)ctx;
    ac__gather_stop_all(cfg->extra);
}
