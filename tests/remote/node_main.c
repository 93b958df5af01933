#define _GNU_SOURCE
/*
 * actorc-test-node: a node for the remote tests and benchmarks, run as a
 * separate process.
 *
 *   actorc-test-node [--system NAME] [--bind ENDPOINT] [--hb IVL TIMEOUT]
 *                    [--curve SERVER_PUB SERVER_SEC PUB SEC [ALLOWED...]]
 *
 * Prints "READY <address> <incarnation>" once its node is up, then serves
 * until its standard input closes or it gets SIGTERM. Its actors
 * (node_serve.h): echo, pool, fail, slow, stopper, asker, watcher, point.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <actorc.h>

#include "node_serve.h"

/* ---- main --------------------------------------------------------------- */

static volatile sig_atomic_t quit;
static void on_term(int sig)
{
    (void)sig;
    quit = 1;
}

int main(int argc, char **argv)
{
    const char *system_name = "replicas", *bind = "tcp://127.0.0.1:0";
    const char *transport = getenv("ACTORC_TEST_TRANSPORT"); /* as the tests' (rt_proc.h) */
    if (transport && strcmp(transport, "tcp+direct") == 0)
        bind = "tcp+direct://127.0.0.1:0";
    ac_node_options o = {0};
    ac_node_curve curve = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) {
            system_name = argv[++i];
        } else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) {
            bind = argv[++i];
        } else if (strcmp(argv[i], "--hb") == 0 && i + 2 < argc) {
            o.heartbeat_ivl_ms = atoi(argv[++i]);
            o.heartbeat_timeout_ms = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--curve") == 0 && i + 4 < argc) {
            curve.server_public_key = argv[++i];
            curve.server_secret_key = argv[++i];
            curve.public_key = argv[++i];
            curve.secret_key = argv[++i];
            curve.allowed = (const char *const *)&argv[i + 1];
            curve.allowed_count = (size_t)(argc - i - 1);
            i = argc;
            o.curve = &curve;
        } else {
            fprintf(stderr, "test-node: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    ac_system_options so = {.workers = 2};
    ac_system *sys = ac_system_create(system_name, &so);
    if (!sys) {
        fprintf(stderr, "test-node: %s\n", ac_last_error());
        return 2;
    }
    o.bind = bind;
    ac_node *node = ac_node_start(sys, &o);
    if (!node) {
        fprintf(stderr, "test-node: %s\n", ac_last_error());
        return 2;
    }
    if (!rt_serve(sys, node))
        return 2;
    printf("READY %s %016llx\n", ac_node_address(node), (unsigned long long)ac_node_incarnation(node));
    fflush(stdout);
    char buf[64];
    while (!quit && read(0, buf, sizeof buf) > 0) {
    }
    ac_system_terminate(sys);
    return 0;
}
