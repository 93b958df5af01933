/*
 * The strategies a pass runs and their rows' names: three pools (round-
 * robin, random, smallest-mailbox), scatter/gather-first-completed, and
 * the hedged router with a fixed delay and with an adaptive one. One
 * list for both ways the demo runs, replicas in this process and replicas
 * as cluster nodes, so that both print the same rows; each way only says
 * how a plan becomes a router (a router_factory).
 */
#include <stdio.h>

#include "hedge.h"

static const char *const base_names[STRATEGIES] = {
    [STRATEGY_ROUND_ROBIN] = "round-robin",
    [STRATEGY_RANDOM] = "random",
    [STRATEGY_SMALLEST_MAILBOX] = "smallest-mailbox",
    [STRATEGY_SCATTER_GATHER] = "scatter-gather",
};

/* The hedged routers are named after their delay: "hedged-10ms",
 * "hedged-p95". */
static void name_plan(const options *o, plan *p)
{
    const char *cb = p->breakers ? "+cb" : "";
    if (p->kind == STRATEGY_HEDGED_FIXED)
        snprintf(p->name, sizeof p->name, "hedged-%gms%s", (double)o->hedge_delay_us / 1000, cb);
    else if (p->kind == STRATEGY_HEDGED_ADAPTIVE)
        snprintf(p->name, sizeof p->name, "hedged-p%g%s", o->hedge_percentile, cb);
    else
        snprintf(p->name, sizeof p->name, "%s%s", base_names[p->kind], cb);
}

/* A gathering router answers a failed request with its AggregateError at
 * its own deadline; its caller waits longer, so that the router's answer,
 * not the caller's own timeout, is what it hears. */
static bool gathers(strategy_kind k)
{
    return k == STRATEGY_SCATTER_GATHER || k == STRATEGY_HEDGED_FIXED ||
           k == STRATEGY_HEDGED_ADAPTIVE;
}

void plans_make(const options *o, bool breakers, plan out[STRATEGIES])
{
    for (int k = 0; k < STRATEGIES; k++) {
        strategy_kind kind = (strategy_kind)k;
        plan *p = &out[k];
        *p = (plan){.kind = kind, .breakers = breakers,
                    .ask_timeout_ms = o->timeout_ms + (gathers(kind) ? 500 : 0)};
        name_plan(o, p);
        if (p->kind == STRATEGY_SCATTER_GATHER)
            p->sg = (ac_scatter_gather_options){.timeout_ms = o->timeout_ms};
        else if (p->kind == STRATEGY_HEDGED_FIXED)
            p->hedged = (ac_hedged_options){.timeout_ms = o->timeout_ms,
                                            .delay_us = o->hedge_delay_us};
        else if (p->kind == STRATEGY_HEDGED_ADAPTIVE) /* starting from the fixed delay */
            p->hedged = (ac_hedged_options){.timeout_ms = o->timeout_ms,
                                            .delay_kind = AC_HEDGE_DELAY_ADAPTIVE,
                                            .delay_us = o->hedge_delay_us,
                                            .percentile = o->hedge_percentile};
    }
}
