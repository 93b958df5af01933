// file: docs/examples/losers.c
#include <actorc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <threads.h>

static atomic_int replies;

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg)));
    atomic_fetch_add(&replies, 1); /* counted once the reply has been handed over */
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

int main(void)
{
    ac_system *system = ac_system_create("losers", NULL);
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, NULL, NULL), "replicas");

    int answered = 0;
    for (int i = 0; i < 1000; i++) {
        ac_answer a;
        answered += ac_ask_wait(replicas, ac_msg_printf("user-%d", i), 5000, &a) == AC_OK;
        ac_answer_release(&a);
    }
    while (atomic_load(&replies) < 3000)
        thrd_yield(); /* the last scatter's losers may still be replying */

    unsigned long long dead = ac_dead_letter_count(system);
    printf("%d scatters answered, %d replies, %d discarded, %llu dead letters\n", answered,
           atomic_load(&replies), atomic_load(&replies) - answered, dead);
    ac_system_terminate(system);
    return answered == 1000 && dead == 0 ? 0 : 1;
}
