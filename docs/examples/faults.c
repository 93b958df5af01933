// file: docs/examples/faults.c
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <actorc.h>
#include <stdio.h>
#include <time.h>

static void echo_receive(ac_ctx *ctx, ac_msg *msg) { ac_reply(ctx, ac_msg_retain(msg)); }
static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

static double ask_ms(ac_ref *echo, int64_t timeout_ms, ac_status *st)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ac_answer a;
    *st = ac_ask_wait(echo, ac_msg_str_new("ping"), timeout_ms, &a);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ac_answer_release(&a);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

int main(void)
{
    ac_system *replicas = ac_system_create("replicas", NULL);
    ac_system *client = ac_system_create("client", NULL);
    ac_node *there = ac_node_start(replicas, &(ac_node_options){.bind = "inproc://faults:0"});
    /* The fault layer on at the client, no rule yet. */
    ac_node *here = ac_node_start(client, &(ac_node_options){.bind = "inproc://faults:0",
                                                              .faults = ""});
    if (!there || !here) {
        fprintf(stderr, "node: %s\n", ac_last_error());
        return 1;
    }
    ac_ref_release(ac_spawn(replicas, ac_props_new(&echo_def, NULL), "echo"));
    char path[256];
    snprintf(path, sizeof path, "actorc://replicas@%s/user/echo", ac_node_address(there));
    ac_ref *echo = ac_node_resolve(here, path);
    ac_status st;
    ask_ms(echo, 5000, &st); /* connected */

    /* 20 ms ± 5 ms each way: an ask takes 30 ms at least. */
    ac_link_fault slow;
    ac_node_link_fault_parse("20ms±5ms", &slow);
    ac_node_link_fault(here, ac_node_address(there), AC_LINK_BOTH, &slow);
    double ms = ask_ms(echo, 5000, &st);
    printf("behind a slow link: %s in %.0f ms\n", st == AC_OK ? "answered" : "failed", ms);
    int ok = st == AC_OK && ms >= 30;

    /* Every frame out dropped: the ask fails by its deadline, never hangs. */
    char spec[128];
    snprintf(spec, sizeof spec, "peer=%s,dir=out,drop=100%%", ac_node_address(there));
    ac_node_faults_apply(here, spec);
    ask_ms(echo, 200, &st);
    printf("behind a link that drops everything: %s\n", ac_strerror(st));
    ok = ok && st == AC_ETIMEOUT;

    /* Healed: it passes again. */
    ac_node_link_fault(here, ac_node_address(there), AC_LINK_BOTH, NULL);
    ask_ms(echo, 5000, &st);
    printf("healed: %s\n", st == AC_OK ? "answered" : "failed");
    ok = ok && st == AC_OK;

    ac_node_stats s;
    ac_node_stats_get(here, &s);
    printf("delayed %llu, dropped %llu\n", (unsigned long long)s.fault_delayed,
           (unsigned long long)s.fault_dropped);
    ac_ref_release(echo);
    ac_system_terminate(client);
    ac_system_terminate(replicas);
    return ok ? 0 : 1;
}
