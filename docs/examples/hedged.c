// file: docs/examples/hedged.c
#include <actorc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int stalled_asked; /* requests routee-1 received */

/* routee-1 stalls for 200 ms on every request; the others answer at once. */
static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_msg *answer = ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg));
    if (strcmp(ac_self_name(ctx), "routee-1") == 0) {
        atomic_fetch_add(&stalled_asked, 1);
        ac_cancellable_release(ac_schedule_once(ac_sender(ctx), 200, answer, ac_self(ctx)));
    } else {
        ac_reply(ctx, answer);
    }
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

int main(void)
{
    ac_system *system = ac_system_create("hedging", NULL);
    ac_hedge_budget budget = { .ratio = 0.1 };   /* at most 10 % extra requests (+ a burst) */
    ac_hedged_options hedge = {
        .timeout_ms = 1000,
        .delay_kind = AC_HEDGE_DELAY_ADAPTIVE,   /* the p95 of the router's own latency */
        .delay_us = 20000,                       /* 20 ms until it has seen 100 replies */
        .budget = &budget,
    };
    ac_ref *replicas = ac_spawn(system, ac_router_hedged(3, &replica, &hedge, NULL), "replicas");

    int stalled_won = 0, rc = 0;
    for (int i = 0; i < 30 && rc == 0; i++) {
        ac_answer a;
        if (ac_ask_wait(replicas, ac_msg_printf("user-%d", i), 5000, &a) != AC_OK) {
            ac_error_fprint(a.error, stderr);    /* AggregateError, as scatter/gather's */
            rc = 1;
        } else {
            stalled_won += strcmp(ac_ref_name(a.sender), "routee-1") == 0;
        }
        ac_answer_release(&a);
    }
    /* Round robin would have started 10 of the 30 at routee-1. The router
     * starts the first there (it knows nothing yet), sees it lose to its
     * hedge, and passes it by from then on (it would probe it again after
     * 500 ms without a request). */
    int asked = atomic_load(&stalled_asked);
    printf("routee-1 was asked %d times for 30 requests and won %d\n", asked, stalled_won);
    ac_system_terminate(system);
    return rc == 0 && stalled_won == 0 && asked >= 1 && asked <= 3 ? 0 : 1;
}
