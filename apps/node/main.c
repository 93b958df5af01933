/*
 * actorc-node: one replica node of a cluster. It starts a node (bind,
 * advertise), joins the cluster by name with the given seeds and roles,
 * spawns the demo's simulated replica (apps/hedge/replica.c, the latency
 * model of actorc-hedge) at /user/replica, prints one line when it is
 * ready ("actorc-node: up at <address>"), and runs until SIGTERM or
 * SIGINT, when it leaves the cluster and stops.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <actorc/cluster.h>

#include "../hedge/hedge.h"

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
            "  --bind ENDPOINT     ZeroMQ endpoint to bind (default tcp://127.0.0.1:0)\n"
            "  --advertise H:P     the address other nodes reach this one at\n"
            "                      (default: the bound one)\n"
            "  --cluster NAME      the cluster's name (default demo)\n"
            "  --system NAME       this actor system's name (default replicas)\n"
            "  --seed H:P          a seed node (repeat for more)\n"
            "  --role NAME         a role of this node (repeat for more; default replica)\n"
            "  --median-ms X      median of the log-normal latency body (default 2)\n"
            "  --sigma X          shape of the log-normal body (default 0.4)\n"
            "  --tail P%%:Dms      a share P of requests stalls for D ms (default 2%%:100ms)\n"
            "  --error-rate P%%    a share P of requests is answered with an error (default 0)\n"
            "  --rng-seed N       the replica's random seed (default 42)\n"
            "  --quiet            only the ready line and errors\n"
            "  --help             this text\n");
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < lo || v > hi)
        return false;
    *out = v;
    return *end == '\0' || strcmp(end, "%") == 0 || strcmp(end, "ms") == 0;
}

static bool parse_tail(const char *s, replica_model *m)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    if (!colon)
        return false;
    *colon = '\0';
    return parse_double(buf, 0, 100, &m->tail_pct) &&
           parse_double(colon + 1, 0, 60000, &m->tail_ms);
}

static bool add_to(const char **list, size_t *n, const char *v)
{
    if (*n == MAX_LIST)
        return false;
    list[(*n)++] = v;
    return true;
}

static int parse_args(int argc, char **argv, node_options *o, replica_model *m)
{
    static const struct option longs[] = {
        {"bind", required_argument, 0, 'b'},      {"advertise", required_argument, 0, 'a'},
        {"cluster", required_argument, 0, 'c'},   {"system", required_argument, 0, 'y'},
        {"seed", required_argument, 0, 's'},      {"role", required_argument, 0, 'r'},
        {"median-ms", required_argument, 0, 'm'}, {"sigma", required_argument, 0, 'g'},
        {"tail", required_argument, 0, 't'},      {"error-rate", required_argument, 0, 'e'},
        {"rng-seed", required_argument, 0, 'S'},  {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    int c;
    double x;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'b': o->bind = optarg; break;
        case 'a': o->advertise = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 'y': o->system = optarg; break;
        case 's': ok = add_to(o->seeds, &o->seeds_n, optarg); break;
        case 'r': ok = add_to(o->roles, &o->roles_n, optarg); break;
        case 'm': ok = parse_double(optarg, 0, 60000, &m->median_ms); break;
        case 'g': ok = parse_double(optarg, 0, 5, &m->sigma); break;
        case 't': ok = parse_tail(optarg, m); break;
        case 'e': ok = parse_double(optarg, 0, 100, &m->error_pct); break;
        case 'S': ok = parse_double(optarg, 0, 1e18, &x); m->seed = (uint64_t)x; break;
        case 'q': o->quiet = true; break;
        case 'h': usage(stdout); exit(0);
        default:
            fprintf(stderr, "actorc-node: unknown option %s\n\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "actorc-node: bad value \"%s\" (or too many of one option)\n\n",
                    optarg);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "actorc-node: unexpected argument \"%s\"\n\n", argv[optind]);
        return 2;
    }
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
    ac_cluster_options co = {.name = o->cluster,
                             .roles = o->roles,
                             .roles_count = o->roles_n,
                             .seeds = o->seeds,
                             .seeds_count = o->seeds_n};
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
    replica_model m = {.median_ms = 2, .sigma = 0.4, .tail_pct = 2, .tail_ms = 100, .seed = 42};
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
