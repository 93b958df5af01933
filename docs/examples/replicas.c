// file: docs/examples/replicas.c
#include <actorc.h>
#include <stdio.h>

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg)));
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

int main(void)
{
    ac_system *system = ac_system_create("demo", NULL);
    ac_scatter_gather_options hedge = { .timeout_ms = 250 };
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, &hedge, NULL), "replicas");

    ac_answer a;                             /* reply or error, plus who sent it */
    int rc = 0;
    if (ac_ask_wait(replicas, ac_msg_str_new("user-42"), 5000, &a) == AC_OK) {
        printf("%s won: %s\n", ac_ref_name(a.sender), ac_msg_str(a.reply));
    } else {
        ac_error_fprint(a.error, stderr);   /* AggregateError, one member per routee */
        rc = 1;
    }
    ac_answer_release(&a);
    ac_system_terminate(system);
    return rc;
}
