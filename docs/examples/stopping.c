// file: docs/examples/stopping.c
#include <actorc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Answers "ping" and sits on everything else. */
static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (strcmp(ac_msg_str(msg), "ping") == 0)
        ac_reply(ctx, ac_msg_str_new("pong"));
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
    ac_system *system = ac_system_create("stopping", NULL);
    ac_scatter_gather_options hedge = { .timeout_ms = 10000 };
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, &hedge, NULL), "replicas");

    /* A scatter nobody will answer, then one that is answered: once "ping"
     * is back, the router has handled "user-42" too, so that scatter is open. */
    ac_future *open = ac_ask(replicas, ac_msg_str_new("user-42"), 15000);
    ac_answer a;
    ac_ask_wait(replicas, ac_msg_str_new("ping"), 5000, &a);
    ac_answer_release(&a);

    double t0 = now_ms();
    ac_stop(replicas);                      /* post_stop fails open scatters */
    ac_status st = ac_future_wait(open, -1, &a);
    double waited = now_ms() - t0;
    ac_error_fprint(a.error, stdout);
    printf("failed after %.1f ms, not 10,000\n", waited);

    int ok = st == AC_EFAILED && ac_error_member_count(a.error) == 0 && waited < 5000;
    ac_answer_release(&a);
    ac_future_release(open);
    ac_system_terminate(system);
    return ok ? 0 : 1;
}
