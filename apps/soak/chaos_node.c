/*
 * A node process of the cluster chaos soak (chaos_soak.h): started by the
 * driver as `actorc-soak --chaos-node INDEX --bind HOST:PORT --seeds
 * A,B,... --stable-after MS`, it runs a node with the fault layer on (every
 * link passing until told otherwise), the actor /user/replica, and joins
 * the cluster "chaos" with the role "replica" and keep-majority downing.
 *
 * The replica answers each request (an int64 id) with a string naming
 * this node, its incarnation and the id, so that the driver can tell
 * exactly who answered what; one request in 50 it refuses with a
 * SoakError and one in 50 it answers 1 to 30 ms late.
 *
 * Commands arrive on stdin, one a line ("fault <spec>": the spec applied
 * rule by rule, so that a rule for a peer this incarnation has not met
 * yet does not hold back the others); reports leave on stdout ("ready",
 * "view", "downed"). It ends on SIGTERM or when stdin closes (the driver
 * is gone), leaving the cluster first.
 */
#include <actorc/cluster.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_args.h"
#include "chaos_soak.h"
#include "soak.h"

static const ac_msg_type late_type = {.name = "soak.ChaosLate"};
static int my_index;
static uint64_t my_incarnation;
static ac_cluster *my_cluster;
static volatile sig_atomic_t end_requested;
static atomic_bool downed_said;

/* One line to the driver, written at once so that lines never mix. */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(1, line, (size_t)n);
    (void)w;
}

static ac_msg *reply_for(uint64_t id)
{
    return ac_msg_printf("%d %016llx %llu", my_index, (unsigned long long)my_incarnation,
                         (unsigned long long)id);
}

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &late_type)) {
        ac_msg *r = reply_for(*(const uint64_t *)ac_msg_data(msg));
        if (r)
            ac_reply(ctx, r);
        return;
    }
    int64_t v;
    if (ac_msg_int64_get(msg, &v) != AC_OK || v <= 0)
        return;
    uint64_t id = (uint64_t)v;
    ac_msg *r = NULL;
    if (id % 50 == 7) {
        r = ac_msg_error_new(ac_error_new(SOAK_ERROR, "request %llu refused by node %d",
                                          (unsigned long long)id, my_index));
    } else if (id % 50 == 13) {
        ac_msg *l = ac_msg_new(&late_type, sizeof(uint64_t));
        if (l) {
            *(uint64_t *)ac_msg_payload(l) = id;
            ac_cancellable_release(
                ac_schedule_once(ac_self(ctx), 1 + (int64_t)(id % 30), l, ac_sender(ctx)));
        }
        return;
    } else {
        r = reply_for(id);
    }
    if (r)
        ac_reply(ctx, r);
}

static const ac_actor_def replica_def = {.name = "ChaosReplica", .receive = replica_receive};

/* Each member event: this node's view, or that it downed itself. */
static void watch_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    if (!ac_member_event_get(msg))
        return;
    ac_cluster_status st;
    if (ac_cluster_status_get(my_cluster, &st) != AC_OK || st.state == AC_CLUSTER_LEFT) {
        if (!atomic_exchange(&downed_said, true))
            report("downed");
        return;
    }
    report("view %zu %zu", st.members_up, st.members_unreachable);
}

static const ac_actor_def watch_def = {.name = "ChaosWatch", .receive = watch_receive};

/* "fault peer=..,x;peer=..,y": each rule on its own. */
static void apply_faults(ac_node *node, char *spec)
{
    for (char *save = NULL, *rule = strtok_r(spec, ";", &save); rule;
         rule = strtok_r(NULL, ";", &save))
        if (ac_node_faults_apply(node, rule) != AC_OK && ac_last_status() != AC_ENOTFOUND)
            fprintf(stderr, "chaos node %d: %s\n", my_index, ac_last_error());
}

static void on_signal(int sig)
{
    (void)sig;
    end_requested = 1;
}

/* Read commands until told to end or the driver is gone. */
static void serve(ac_node *node)
{
    char buf[4096];
    size_t have = 0;
    while (!end_requested) {
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t n = read(0, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            return;
        have += (size_t)n;
        buf[have] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n'))) {
            *nl = '\0';
            if (!strncmp(buf, "fault ", 6))
                apply_faults(node, buf + 6);
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have - used + 1);
            have -= used;
        }
        if (have == sizeof buf - 1)
            have = 0; /* a line too long for any command: dropped */
    }
}

static int split_seeds(char *list, const char **out, int cap)
{
    int n = 0;
    char *save = NULL;
    for (char *s = strtok_r(list, ",", &save); s && n < cap; s = strtok_r(NULL, ",", &save))
        out[n++] = s;
    return n;
}

static int node_main(const char *bind_addr, char *seeds, int stable_after_ms)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    ac_system *sys = ac_system_create("chaos", &(ac_system_options){.log_level = AC_LOG_ERROR});
    if (!sys)
        return 3;
    char bind[64];
    snprintf(bind, sizeof bind, "tcp://%s", bind_addr);
    /* In a namespace of the run the address is not loopback, and the
     * network is the run's own: no keys. */
    bool loopback = !strncmp(bind_addr, "127.", 4);
    ac_node *node =
        ac_node_start(sys, &(ac_node_options){.bind = bind, .faults = "", .insecure = !loopback});
    my_incarnation = node ? ac_node_incarnation(node) : 0; /* before the replica reads it */
    ac_ref *r = node ? ac_spawn(sys, ac_props_new(&replica_def, NULL), "replica") : NULL;
    const char *seed_v[CH_MAX_NODES + 1];
    int n = split_seeds(seeds, seed_v, CH_MAX_NODES + 1);
    const char *roles[] = {"replica"};
    ac_cluster_static_options so = {.seeds = seed_v, .seeds_count = (size_t)n};
    ac_cluster_options co = {.name = "chaos", .roles = roles, .roles_count = 1,
                             .static_options = &so, .stable_after_ms = stable_after_ms,
                             .retry_initial_ms = 50, .retry_max_ms = 500};
    my_cluster = r ? ac_cluster_join(sys, &co) : NULL;
    ac_ref *w = my_cluster ? ac_spawn(sys, ac_props_new(&watch_def, NULL), "chaos-watch") : NULL;
    if (!w || ac_cluster_subscribe(my_cluster, w) != AC_OK) {
        fprintf(stderr, "chaos node %d: cannot start: %s\n", my_index, ac_last_error());
        _exit(3);
    }
    report("ready %s %016llx", ac_node_address(node), (unsigned long long)my_incarnation);
    serve(node);
    ac_ref_release(w);
    ac_ref_release(r);
    ac_cluster_leave(my_cluster);
    ac_system_terminate(sys);
    return 0;
}

int chaos_node(int argc, char **argv)
{
    const char *bind = NULL;
    char *seeds = NULL;
    int stable_after = 0;
    bool ok = true;
    my_index = -1;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--chaos-node"))
            ok = app_parse_int(argv[i + 1], 0, CH_MAX_NODES - 1, &my_index);
        else if (!strcmp(argv[i], "--bind"))
            bind = argv[i + 1];
        else if (!strcmp(argv[i], "--seeds"))
            seeds = argv[i + 1];
        else if (!strcmp(argv[i], "--stable-after"))
            ok = app_parse_int(argv[i + 1], 1000, 600000, &stable_after);
        else
            ok = false;
    }
    if (!ok || my_index < 0 || !bind || !seeds) {
        fprintf(stderr, "usage: actorc-soak --chaos-node INDEX --bind HOST:PORT --seeds "
                        "A,B,... --stable-after MS\n");
        return 2;
    }
    return node_main(bind, seeds, stable_after);
}
