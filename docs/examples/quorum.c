// file: docs/examples/quorum.c
#include <actorc.h>
#include <stdio.h>

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg)));
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

int main(void)
{
    ac_system *system = ac_system_create("quorum", NULL);
    ac_scatter_gather_options two_of_three = { .timeout_ms = 250, .quorum = 2 };
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, &two_of_three, NULL), "replicas");

    ac_answer a;
    int rc = 1;
    if (ac_ask_wait(replicas, ac_msg_str_new("user-42"), 5000, &a) == AC_OK &&
        ac_msg_is(a.reply, &ac_msg_type_quorum)) {
        for (size_t i = 0; i < ac_quorum_count(a.reply); i++)   /* in arrival order */
            printf("%s said %s\n", ac_ref_name(ac_quorum_sender(a.reply, i)),
                   ac_msg_str(ac_quorum_reply(a.reply, i)));
        rc = ac_quorum_count(a.reply) == 2 ? 0 : 1;
    } else {
        ac_error_fprint(a.error, stderr);   /* fewer than 2 could still succeed */
    }
    ac_answer_release(&a);
    ac_system_terminate(system);
    return rc;
}
