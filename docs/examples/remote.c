// file: docs/examples/remote.c
#include <actorc.h>
#include <stdio.h>
#include <string.h>

/* A replica that answers what it is asked. */
static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

int main(void)
{
    /* Two systems, each a node; in real life two processes or hosts. */
    ac_system *replicas = ac_system_create("replicas", NULL);
    ac_system *client = ac_system_create("client", NULL);
    ac_node_options o = {.bind = "tcp://127.0.0.1:0"}; /* the OS picks the port */
    ac_node *there = ac_node_start(replicas, &o);
    ac_node *here = ac_node_start(client, &o);
    if (!there || !here) {
        fprintf(stderr, "node: %s\n", ac_last_error());
        return 1;
    }
    ac_ref_release(ac_spawn(replicas, ac_props_new(&echo_def, NULL), "echo"));

    /* A remote path names the system and its node's address. */
    char path[256];
    snprintf(path, sizeof path, "actorc://replicas@%s/user/echo", ac_node_address(there));
    ac_ref *echo = ac_node_resolve(here, path);

    ac_answer a;
    if (ac_ask_wait(echo, ac_msg_str_new("hello"), 1000, &a) != AC_OK)
        return 1;
    printf("%s from %s\n", ac_msg_str(a.reply), ac_ref_path(a.sender));
    int ok = strcmp(ac_msg_str(a.reply), "hello") == 0 && a.sender == echo;
    ac_answer_release(&a);

    /* The node goes away: what waits on it, and what comes after, fails
     * at once with a NodeDownError instead of waiting out its timeout. */
    ac_node_stop(there);
    ac_status st = ac_ask_wait(echo, ac_msg_str_new("anyone?"), 5000, &a);
    printf("%s: %s\n", ac_status_name(st), a.error ? ac_error_message(a.error) : "");
    ok = ok && st == AC_EFAILED && ac_error_is(a.error, AC_NODE_DOWN_ERROR);
    ac_answer_release(&a);

    ac_ref_release(echo);
    ac_system_terminate(client);
    ac_system_terminate(replicas);
    return ok ? 0 : 1;
}
