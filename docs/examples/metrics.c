// file: docs/examples/metrics.c
#include <actorc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg)));
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

int main(void)
{
    ac_system_options options = { .metrics = true }; /* or ac_metrics_enable later */
    ac_system *system = ac_system_create("metrics", &options);
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, NULL, NULL), "replicas");

    ac_tell(replicas, ac_msg_str_new("nobody asked"), NULL); /* no-reply-target */
    for (int i = 0; i < 10; i++) {                            /* first, 10 times */
        ac_answer a;
        ac_ask_wait(replicas, ac_msg_printf("user-%d", i), 5000, &a);
        ac_answer_release(&a);
    }

    /* The two families, as a Prometheus scrape of ac_metrics_serve shows them
     * (histogram buckets left out here). */
    char *text = ac_metrics_format(system);
    int first = -1, no_target = -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "router_scatter_gather") && !strstr(line, "_bucket"))
            puts(line);
        sscanf(line, "router_scatter_gather_resolved_total{outcome=\"first\"} %d", &first);
        sscanf(line, "router_scatter_gather_resolved_total{outcome=\"no-reply-target\"} %d",
               &no_target);
    }
    free(text);
    ac_system_terminate(system);
    return first == 10 && no_target == 1 ? 0 : 1;
}
