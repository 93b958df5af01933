/*
 * actorc-node: one replica node of a cluster. It starts a node (bind,
 * advertise), joins the cluster by name with the given seeds and roles,
 * spawns the demo's simulated replica (apps/hedge/replica.c, the latency
 * model of actorc-hedge) at /user/replica, prints one line when it is
 * ready ("actorc-node: up at <address>"), and runs until SIGTERM or
 * SIGINT, when it leaves the cluster and stops. Its model options are
 * actorc-hedge's (apps/hedge/model_options.h), so that actorc-hedge
 * --nodes hands each node the model it was given; --dead-replica 1 makes
 * a node whose replica never answers, though the node stays Up.
 */
#include <stdarg.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <actorc/cluster.h>

#include "app_args.h"
#include "hedge.h"
#include "model_options.h"

#define MAX_LIST 16

typedef struct node_options {
    const char *bind, *advertise, *cluster, *system;
    const char *seeds[MAX_LIST], *roles[MAX_LIST];
    size_t seeds_n, roles_n;
    bool quiet;
} node_options;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: actorc-node [options]\n"
            "\n"
            "Runs one replica node of a cluster: the demo's simulated replica at\n"
            "/user/replica, until SIGTERM or SIGINT.\n"
            "\n"
            "  --bind ENDPOINT    ZeroMQ endpoint to bind (default tcp://127.0.0.1:0)\n"
            "  --advertise H:P    the address other nodes reach this one at\n"
            "                     (default: the bound one)\n"
            "  --cluster NAME     the cluster's name (default demo)\n"
            "  --system NAME      this actor system's name (default replicas)\n"
            "  --seed H:P         a seed node (repeat for more)\n"
            "  --role NAME        a role of this node (repeat for more; default replica)\n"
            MODEL_USAGE
            "  --dead-replica 1   its replica (replica 1, the only one) never answers; the\n"
            "                     node stays a member: a dead replica node, which only a\n"
            "                     breaker in front of it routes around\n"
            "  --rng-seed N       the replica's random seed (default 42)\n"
            "  --quiet            only the ready line and errors\n"
            "  --help             this text\n");
}

static bool add_to(const char **list, size_t *n, const char *v)
{
    if (*n == MAX_LIST)
        return false;
    list[(*n)++] = v;
    return true;
}

static int usage_error(const char *fmt, ...) AC_PRINTF(1, 2);

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "actorc-node: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n\n");
    va_end(ap);
    usage(stderr);
    return 2;
}

/* One option with a value; false for a bad one (or one too many). */
static bool apply_option(int c, const char *arg, node_options *o, replica_model *m)
{
    switch (c) {
    case 'b': o->bind = arg; return true;
    case 'a': o->advertise = arg; return true;
    case 'c': o->cluster = arg; return true;
    case 'y': o->system = arg; return true;
    case 's': return add_to(o->seeds, &o->seeds_n, arg);
    case 'r': return add_to(o->roles, &o->roles_n, arg);
    case 'S': return app_parse_count(arg, 0, UINT64_MAX, &m->seed);
    case MODEL_OPT_DEAD_REPLICA: /* this node runs one replica */
        return model_apply(c, arg, m) && m->dead_replica == 1;
    default: return model_apply(c, arg, m);
    }
}

static int parse_args(int argc, char **argv, node_options *o, replica_model *m)
{
    static const struct option longs[] = {
        {"bind", required_argument, 0, 'b'},     {"advertise", required_argument, 0, 'a'},
        {"cluster", required_argument, 0, 'c'},  {"system", required_argument, 0, 'y'},
        {"seed", required_argument, 0, 's'},     {"role", required_argument, 0, 'r'},
        {"rng-seed", required_argument, 0, 'S'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},           MODEL_LONG_OPTIONS,
        {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'q') {
            o->quiet = true;
        } else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else if (c == '?' || c == ':') {
            return usage_error("unknown option %s", argv[optind - 1]);
        } else if (!apply_option(c, optarg, o, m)) {
            return usage_error("bad value \"%s\" for %s (or too many of it)", optarg,
                               argv[optind - 2 >= 0 ? optind - 2 : 0]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument \"%s\"", argv[optind]);
    if (o->roles_n == 0)
        o->roles[o->roles_n++] = "replica";
    return 0;
}

/* Node, cluster and replica on `sys`; false (said on stderr) when one
 * cannot start. */
static bool start(ac_system *sys, const node_options *o, replica_model *m)
{
    ac_node_options no = {.bind = o->bind, .advertise = o->advertise};
    ac_node *node = ac_node_start(sys, &no);
    if (!node) {
        fprintf(stderr, "actorc-node: cannot start the node: %s\n", ac_last_error());
        return false;
    }
    ac_props *props = ac_props_new(&hedge_replica, m);
    ac_ref *replica = props ? ac_spawn(sys, props, "replica") : NULL;
    if (!replica) {
        fprintf(stderr, "actorc-node: cannot spawn the replica: %s\n", ac_last_error());
        return false;
    }
    ac_ref_release(replica);
    ac_cluster_static_options seeds = {.seeds = o->seeds, .seeds_count = o->seeds_n};
    ac_cluster_options co = {.name = o->cluster,
                             .roles = o->roles,
                             .roles_count = o->roles_n,
                             .static_options = &seeds};
    if (!ac_cluster_join(sys, &co)) {
        fprintf(stderr, "actorc-node: cannot join cluster %s: %s\n", o->cluster,
                ac_last_error());
        return false;
    }
    printf("actorc-node: up at %s\n", ac_node_address(node));
    fflush(stdout);
    return true;
}

int main(int argc, char **argv)
{
    node_options o = {.bind = "tcp://127.0.0.1:0", .cluster = "demo", .system = "replicas"};
    replica_model m = MODEL_DEFAULTS;
    int rc = parse_args(argc, argv, &o, &m);
    if (rc)
        return rc;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ac_system_options so = {.log_level = o.quiet ? AC_LOG_ERROR : AC_LOG_WARN};
    ac_system *sys = ac_system_create(o.system, &so);
    if (!sys) {
        fprintf(stderr, "actorc-node: %s\n", ac_last_error());
        return 1;
    }
    bool ok = start(sys, &o, &m);
    while (ok && !stop_requested) {
        struct timespec tick = {.tv_nsec = 50 * 1000 * 1000};
        nanosleep(&tick, NULL); /* a signal cuts it short */
    }
    ac_cluster *cluster = ac_system_cluster(sys);
    if (cluster)
        ac_cluster_leave(cluster);
    ac_system_terminate(sys);
    return ok ? 0 : 1;
}
