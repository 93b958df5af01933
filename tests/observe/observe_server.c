/*
 * The demo system (ob_demo.h) under load, its view and observer page
 * served on an ephemeral port of 127.0.0.1, for the browser test.
 *
 *   observe_server PORT_FILE SECONDS
 *
 * Writes the port to PORT_FILE once serving, then asks each router a
 * round at a time until SECONDS have passed or SIGTERM or SIGINT comes,
 * and terminates the system.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ob_demo.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: observe_server PORT_FILE SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ac_system *sys = ac_system_create("observed", &(ac_system_options){.workers = 2,
                                                                       .metrics = true});
    ob_demo d;
    if (!sys || !ob_demo_start(&d, sys) || ac_metrics_serve(sys, NULL) != AC_OK) {
        fprintf(stderr, "observe_server: %s\n", ac_last_error());
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%d\n", ac_metrics_http_port(sys)) < 0 || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    struct timespec start, now, pause = {.tv_nsec = 20 * 1000000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    long rounds = 0;
    do {
        ob_demo_round(&d);
        rounds++;
        nanosleep(&pause, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!stop && (double)(now.tv_sec - start.tv_sec) +
                              (double)(now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    ob_demo_release(&d);
    ac_system_terminate(sys);
    printf("observe_server: %ld rounds\n", rounds);
    return 0;
}
