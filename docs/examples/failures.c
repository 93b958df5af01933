// file: docs/examples/failures.c
#include <actorc.h>
#include <stdio.h>

/* Never answers, so its ask times out. */
static void silent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

/* Answers with an error, which fails its ask at once. */
static void broken_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_error_new(ac_error_new("ReplicaError", "%s cannot read %s",
                                                ac_self_name(ctx), ac_msg_str(msg))));
}

static const ac_actor_def silent = { .name = "Silent", .receive = silent_receive };
static const ac_actor_def broken = { .name = "Broken", .receive = broken_receive };

/* Ask, print the AggregateError, and say which kind of failure it is.
 * Returns whether it was "too slow". */
static int ask_and_explain(ac_ref *router)
{
    ac_answer a;
    ac_status st = ac_ask_wait(router, ac_msg_str_new("user-42"), 1000, &a);
    int too_slow = -1;
    if (st == AC_EFAILED && ac_error_is(a.error, AC_AGGREGATE_ERROR)) {
        ac_error_fprint(a.error, stdout);
        too_slow = ac_error_all_timeouts(a.error);
        printf("=> %zu members; %s\n\n", ac_error_member_count(a.error),
               too_slow ? "too slow for the budget" : "broken");
    }
    ac_answer_release(&a);
    return too_slow;
}

int main(void)
{
    ac_system *system = ac_system_create("failures", NULL);
    ac_scatter_gather_options hedge = { .timeout_ms = 100 }; /* the caller waits 1,000 */
    ac_ref *slow = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &silent, &hedge, NULL), "slow");
    ac_ref *bad = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &broken, &hedge, NULL), "bad");

    int ok = ask_and_explain(slow) == 1 && ask_and_explain(bad) == 0;
    ac_system_terminate(system);
    return ok ? 0 : 1;
}
