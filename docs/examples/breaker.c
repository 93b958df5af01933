// file: docs/examples/breaker.c
#include <actorc.h>
#include <stdio.h>

/* A dependency that is down: every request is answered with an error. */
static void db_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_error_new(ac_error_new("OutageError", "connection refused")));
}

static const ac_actor_def db = { .name = "Db", .receive = db_receive };

static void on_transition(ac_breaker *b, ac_breaker_state from, ac_breaker_state to, void *user)
{
    (void)user;
    printf("breaker %s: %s -> %s\n", ac_breaker_name(b), ac_breaker_state_name(from),
           ac_breaker_state_name(to));
}

/* One call through the breaker; prints what the caller sees. Returns 1
 * if the request reached the db, 0 if the breaker refused it. */
static int call(ac_breaker *breaker, ac_ref *target)
{
    ac_answer a;
    ac_breaker_ask_wait(breaker, target, ac_msg_str_new("SELECT 1"), 1000, &a);
    printf("  %s: %s\n", ac_error_name(a.error), ac_error_message(a.error));
    int reached = !ac_error_is(a.error, AC_CIRCUIT_BREAKER_OPEN_ERROR);
    ac_answer_release(&a);
    return reached;
}

int main(void)
{
    /* The manual clock makes the reset timeout exact; a real program
     * leaves it off. */
    ac_system_options opts = { .manual_clock = true };
    ac_system *system = ac_system_create("breaker", &opts);
    ac_ref *target = ac_spawn(system, ac_props_new(&db, NULL), "db");
    ac_breaker_options o = {
        .name = "db",
        .max_failures = 3,          /* three failures in a row open it */
        .reset_timeout_ms = 1000,   /* then a probe after 1 s ... */
        .max_reset_timeout_ms = 8000, /* ... doubled per failed probe, up to 8 s */
        .on_transition = on_transition,
    };
    ac_breaker *breaker = ac_breaker_create(system, &o);

    int ok = 1;
    for (int i = 0; i < 3; i++)
        ok &= call(breaker, target);        /* reach the db, fail */
    ok &= !call(breaker, target);           /* refused at once */
    ac_clock_advance(system, 1000);         /* half-open */
    ok &= call(breaker, target);            /* the probe fails */
    ac_breaker_info info;
    ac_breaker_get_info(breaker, &info);
    printf("open again for %lld ms\n", (long long)(info.next_probe_ms - info.opened_at_ms));
    ok &= info.next_probe_ms - info.opened_at_ms == 2000;

    ac_breaker_release(breaker);
    ac_system_terminate(system);
    return ok ? 0 : 1;
}
