// file: docs/examples/breaker_filter.c
#include <actorc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A store that knows only "alice": anything else is NotFoundError. */
static void store_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (strcmp(ac_msg_str(msg), "alice") == 0)
        ac_reply(ctx, ac_msg_str_new("alice: admin"));
    else
        ac_reply(ctx, ac_msg_error_new(ac_error_new("NotFoundError", "no user %s",
                                                    ac_msg_str(msg))));
}

static const ac_actor_def store = { .name = "Store", .receive = store_receive };

/* "Not found" is an answer, not an outage: it must not open the breaker. */
static bool is_outage(const ac_error *err, void *user)
{
    (void)user;
    return !ac_error_is(err, "NotFoundError");
}

int main(void)
{
    ac_system_options opts = { .metrics = true };
    ac_system *system = ac_system_create("filter", &opts);
    ac_ref *users = ac_spawn(system, ac_props_new(&store, NULL), "users");
    ac_breaker_options o = { .name = "users", .max_failures = 2, .is_failure = is_outage };
    ac_breaker *breaker = ac_breaker_create(system, &o);

    const char *keys[] = { "bob", "carol", "dave", "alice" };
    for (int i = 0; i < 4; i++) {
        ac_answer a;
        ac_breaker_ask_wait(breaker, users, ac_msg_str_new(keys[i]), 1000, &a);
        printf("%-6s %s\n", keys[i], a.reply ? ac_msg_str(a.reply) : ac_error_message(a.error));
        ac_answer_release(&a);
    }
    int ok = ac_breaker_state_of(breaker) == AC_BREAKER_CLOSED; /* three misses, still closed */

    char *page = ac_metrics_format(system);
    ok = ok && page && strstr(page, "circuit_breaker_calls_total{breaker=\"users\",outcome=\"ignored\"} 3");
    for (char *line = page ? strtok(page, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (strncmp(line, "circuit_breaker_", 16) == 0 && line[strlen(line) - 1] != '0')
            printf("%s\n", line);
    free(page);
    ac_breaker_release(breaker);
    ac_system_terminate(system);
    return ok ? 0 : 1;
}
