// file: docs/examples/reply_contract.c
#include <actorc.h>
#include <stdio.h>
#include <string.h>

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_printf("%s:%s", ac_self_name(ctx), ac_msg_str(msg)));
}

static const ac_actor_def replica = { .name = "Replica", .receive = replica_receive };

/* A caller inside the system. On "go" it scatters twice, by ac_ask_in and
 * by a tell with itself as the sender, and answers "go" once both are in. */
typedef struct client_state {
    ac_ref *go_sender; /* retained until both answers are in */
    int answers;
} client_state;

static void one_answer(ac_ctx *ctx, client_state *st)
{
    if (++st->answers < 2)
        return;
    ac_tell(st->go_sender, ac_msg_str_new("both answered"), ac_self(ctx));
    ac_ref_release(st->go_sender);
}

/* 3. ac_ask_in: the continuation runs later, in this actor's own turn. */
static void on_answer(ac_ctx *ctx, const ac_answer *a, void *user)
{
    (void)user;
    if (a->reply)
        printf("ac_ask_in:     %s won: %s\n", ac_ref_name(a->sender), ac_msg_str(a->reply));
    else
        ac_error_fprint(a->error, stderr);
    one_answer(ctx, ac_ctx_state(ctx));
}

static void client_receive(ac_ctx *ctx, ac_msg *msg)
{
    client_state *st = ac_ctx_state(ctx);
    ac_ref *replicas = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_error)) {       /* the scatter failed */
        ac_error_fprint(ac_msg_error(msg), stderr);
        one_answer(ctx, st);
    } else if (strcmp(ac_msg_str(msg), "go") == 0) {
        st->go_sender = ac_ref_retain(ac_sender(ctx));
        ac_ask_in(ctx, replicas, ac_msg_str_new("user-3"), 1000, on_answer, NULL, NULL);
        /* 4. tell with self as the sender */
        ac_tell(replicas, ac_msg_str_new("user-4"), ac_self(ctx));
    } else {
        /* the answer to the tell: an ordinary message from the winner */
        printf("tell + self:   %s won: %s\n", ac_ref_name(ac_sender(ctx)), ac_msg_str(msg));
        one_answer(ctx, st);
    }
}

static const ac_actor_def client = {
    .name = "Client", .state_size = sizeof(client_state), .receive = client_receive };

static int report(const char *how, ac_status st, ac_answer *a)
{
    if (st == AC_OK)
        printf("%-14s %s won: %s\n", how, ac_ref_name(a->sender), ac_msg_str(a->reply));
    else
        ac_error_fprint(a->error, stderr);
    ac_answer_release(a);
    return st == AC_OK ? 0 : 1;
}

int main(void)
{
    ac_system *system = ac_system_create("contract", NULL);
    ac_ref *replicas = ac_spawn(system,
        ac_router_scatter_gather_first_completed(3, &replica, NULL, NULL), "replicas");
    ac_answer a;
    int failed = 0;

    /* 1. ac_ask_wait: block this thread until the answer. */
    failed += report("ac_ask_wait:", ac_ask_wait(replicas, ac_msg_str_new("user-1"), 5000, &a), &a);

    /* 2. ac_ask: a future, to wait on, poll, or give a callback. */
    ac_future *f = ac_ask(replicas, ac_msg_str_new("user-2"), 5000);
    failed += report("ac_ask:", ac_future_wait(f, -1, &a), &a);
    ac_future_release(f);

    /* 3 and 4, from inside an actor. */
    ac_ref *c = ac_spawn(system, ac_props_new(&client, replicas), "client");
    failed += ac_ask_wait(c, ac_msg_str_new("go"), 5000, &a) != AC_OK;
    ac_answer_release(&a);

    /* A bare tell has no reply target: nothing is scattered, the message is
     * dropped, the router logs a warning, and it goes on serving. */
    ac_tell(replicas, ac_msg_str_new("user-5"), NULL);
    failed += report("after it:", ac_ask_wait(replicas, ac_msg_str_new("user-6"), 5000, &a), &a);

    ac_system_terminate(system);
    return failed ? 1 : 0;
}
