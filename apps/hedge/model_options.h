/*
 * The replica model's command-line options (model_options.c), one
 * parser for the two programs that run the model: actorc-hedge (its
 * replicas in process) and actorc-node (one replica in a cluster node),
 * and the arguments that hand a model from the first to the second.
 *
 * A program splices MODEL_LONG_OPTIONS into its getopt_long table, starts
 * from MODEL_DEFAULTS, and passes each option model_is_option accepts to
 * model_apply. The seed is the program's own option (actorc-hedge's
 * --seed also seeds its breakers; actorc-node's --seed names a seed node),
 * and so is the range of --dead-replica (its replicas).
 */
#ifndef HEDGE_MODEL_OPTIONS_H
#define HEDGE_MODEL_OPTIONS_H

#include <getopt.h>

#include "hedge.h"

enum model_option {
    MODEL_OPT_MEDIAN = 0x1000, /* past any character a program uses */
    MODEL_OPT_SIGMA,
    MODEL_OPT_TAIL,
    MODEL_OPT_ERROR_RATE,
    MODEL_OPT_DEAD_REPLICA,
};

#define MODEL_LONG_OPTIONS                                                                         \
    {"median-ms", required_argument, 0, MODEL_OPT_MEDIAN},                                         \
        {"sigma", required_argument, 0, MODEL_OPT_SIGMA},                                          \
        {"tail", required_argument, 0, MODEL_OPT_TAIL},                                            \
        {"error-rate", required_argument, 0, MODEL_OPT_ERROR_RATE},                                \
        {"dead-replica", required_argument, 0, MODEL_OPT_DEAD_REPLICA}

#define MODEL_DEFAULTS {.median_ms = 2, .sigma = 0.4, .tail_pct = 2, .tail_ms = 100, .seed = 42}

/* The usage lines of the latency options (not --dead-replica). */
#define MODEL_USAGE                                                                                \
    "  --median-ms X      median of the log-normal latency body (default 2)\n"                    \
    "  --sigma X          shape of the log-normal body (default 0.4)\n"                           \
    "  --tail P%%:Dms      a share P of requests stalls for D ms (default 2%%:100ms)\n"            \
    "  --error-rate P%%    a share P of requests is answered with an error (default 0)\n"

/* The most replicas --dead-replica may name. */
#define MODEL_MAX_REPLICAS 64

/* Is getopt's `opt` one of the model's? */
bool model_is_option(int opt);
/* Apply the model option `opt` with its value; false for a bad value. */
bool model_apply(int opt, const char *arg, replica_model *m);

/* The arguments that give another program the latency model of `m`
 * (MODEL_ARGC of them, strings in `buf`), into argv. */
#define MODEL_ARGC 8
void model_args(const replica_model *m, char buf[MODEL_ARGC / 2][64], const char **argv);

#endif
