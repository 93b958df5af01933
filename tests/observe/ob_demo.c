/*
 * The demo system of ob_demo.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ob_demo.h"

typedef enum { ROUTEE_FAST, ROUTEE_SLOW_FIRST, ROUTEE_FLAKY_SECOND } routee_kind;

static const routee_kind kinds[] = {ROUTEE_FAST, ROUTEE_SLOW_FIRST, ROUTEE_FLAKY_SECOND};

static int routee_number(ac_ctx *ctx)
{
    const char *name = ac_self_name(ctx);
    return strncmp(name, "routee-", 7) == 0 ? atoi(name + 7) : 0;
}

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    const routee_kind *kind = ac_ctx_user_data(ctx);
    int k = routee_number(ctx);
    ac_ref *sender = ac_sender(ctx);
    if (!sender)
        return;
    if (*kind == ROUTEE_FLAKY_SECOND && k == 2) {
        ac_reply(ctx, ac_msg_error_new(ac_error_new("RouteeError", "routee-2 always fails")));
        return;
    }
    ac_msg *answer = ac_msg_printf("%s from %d", ac_msg_str(msg) ? ac_msg_str(msg) : "?", k);
    if (*kind == ROUTEE_SLOW_FIRST && k == 1) {
        ac_cancellable *c = ac_schedule_once(sender, OB_SLOW_MS, answer, ac_self(ctx));
        ac_cancellable_release(c);
        return;
    }
    ac_reply(ctx, answer);
}

static const ac_actor_def routee_def = {.name = "Replica", .receive = routee_receive};

static void worker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    if (ac_sender(ctx))
        ac_reply(ctx, ac_msg_str_new("ok"));
}

static const ac_actor_def worker_def = {.name = "Worker", .receive = worker_receive};

static void supervisor_start(ac_ctx *ctx)
{
    for (int i = 0; i < OB_TREE_WORKERS; i++) {
        char name[24];
        snprintf(name, sizeof name, "worker-%d", i + 1);
        ac_ref_release(ac_spawn_child(ctx, ac_props_new(&worker_def, NULL), name));
    }
}

static void supervisor_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    if (ac_sender(ctx))
        ac_reply(ctx, ac_msg_str_new("ok"));
}

static const ac_actor_def supervisor_def = {
    .name = "Supervisor", .pre_start = supervisor_start, .receive = supervisor_receive};

bool ob_demo_start(ob_demo *d, ac_system *sys)
{
    memset(d, 0, sizeof *d);
    d->sys = sys;
    ac_routee_options fast = {.user_data = (void *)&kinds[ROUTEE_FAST]};
    ac_routee_options slow = {.user_data = (void *)&kinds[ROUTEE_SLOW_FIRST]};
    ac_breaker_options breaker = {.max_failures = OB_BREAKER_FAILURES,
                                  .reset_timeout_ms = 3600000};
    ac_routee_options flaky = {.user_data = (void *)&kinds[ROUTEE_FLAKY_SECOND],
                               .breaker = &breaker};
    ac_hedged_options hedged = {.delay_us = OB_HEDGE_DELAY_US, .timeout_ms = 2000};
    d->workers = ac_spawn(sys, ac_props_new(&supervisor_def, NULL), "workers");
    d->scatter = ac_spawn(sys, ac_router_scatter_gather_first_completed(3, &routee_def, NULL, &fast),
                          "scatter");
    d->hedged = ac_spawn(sys, ac_router_hedged(3, &routee_def, &hedged, &slow), "hedged");
    /* Scatter/gather asks routee-2 every time, so its failures run on
     * until its breaker opens (a hedged router would try it last). */
    d->flaky = ac_spawn(sys, ac_router_scatter_gather_first_completed(2, &routee_def, NULL, &flaky),
                        "flaky");
    d->pool = ac_spawn(sys, ac_router_round_robin(3, &routee_def, &fast), "pool");
    d->shortest = ac_spawn(sys, ac_router_smallest_mailbox(2, &routee_def, &fast), "shortest");
    /* Round robin reaches routee-2 every third message; after two
     * failures its breaker opens, and its turns go to the next routee. */
    d->guarded = ac_spawn(sys, ac_router_round_robin(3, &routee_def, &flaky), "guarded");
    return d->workers && d->scatter && d->hedged && d->flaky && d->pool && d->shortest &&
           d->guarded;
}

ac_props *ob_demo_router_props(void)
{
    static const ac_hedged_options hedged = {.delay_us = OB_HEDGE_DELAY_US, .timeout_ms = 2000};
    ac_routee_options fast = {.user_data = (void *)&kinds[ROUTEE_FAST]};
    return ac_router_hedged(2, &routee_def, &hedged, &fast);
}

int ob_demo_round(ob_demo *d)
{
    ac_ref *targets[OB_ROUND_ASKS] = {d->scatter, d->hedged,   d->flaky,  d->workers,
                                      d->pool,    d->shortest, d->guarded};
    ac_future *f[OB_ROUND_ASKS];
    int answered = 0;
    for (int i = 0; i < OB_ROUND_ASKS; i++)
        f[i] = ac_ask(targets[i], ac_msg_str_new("ping"), 5000);
    for (int i = 0; i < OB_ROUND_ASKS; i++) {
        ac_answer a = {0};
        ac_status st = f[i] ? ac_future_wait(f[i], 10000, &a) : AC_ENOMEM;
        if (st == AC_OK || st == AC_EFAILED) /* the flaky router's errors are answers too */
            answered++;
        ac_answer_release(&a);
        ac_future_release(f[i]);
    }
    return answered;
}

void ob_demo_release(ob_demo *d)
{
    ac_ref_release(d->workers);
    ac_ref_release(d->scatter);
    ac_ref_release(d->hedged);
    ac_ref_release(d->flaky);
    ac_ref_release(d->pool);
    ac_ref_release(d->shortest);
    ac_ref_release(d->guarded);
    memset(d, 0, sizeof *d);
}
