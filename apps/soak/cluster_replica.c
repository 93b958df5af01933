/*
 * A replica process of the soak across processes (cluster_soak.h):
 * started by the driver with --replica, it runs a node with the actor
 * /user/replica, joins the cluster (the driver's static seeds, or its
 * etcd) with the role "replica", and answers each request as the request
 * asks: at once, late, with a SoakError, only replica k, or never. It
 * ends on SIGTERM (or SIGINT), leaving the cluster first.
 */
#include <actorc/cluster.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_args.h"
#include "cluster_soak.h"
#include "soak.h"

static const ac_msg_type late_type = {.name = "soak.ClusterLate"};
static int my_replica_index;

static ac_msg *reply_for(uint64_t id) { return ac_msg_int64_new((int64_t)(id << 16 | (uint64_t)my_replica_index)); }

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &late_type)) {
        ac_msg *r = reply_for(*(const uint64_t *)ac_msg_data(msg));
        if (r)
            ac_reply(ctx, r);
        return;
    }
    int64_t v;
    if (ac_msg_int64_get(msg, &v) != AC_OK)
        return;
    uint64_t id = (uint64_t)v >> 16;
    int beh = (int)((v >> 8) & 0xff), param = (int)(v & 0xff);
    if (beh == CB_ONLY)
        beh = param == my_replica_index ? CB_NOW : CB_ERROR;
    ac_msg *r = NULL;
    switch (beh) {
    case CB_NOW:
        r = reply_for(id);
        break;
    case CB_LATE: {
        ac_msg *l = ac_msg_new(&late_type, sizeof(uint64_t));
        if (l) {
            *(uint64_t *)ac_msg_payload(l) = id;
            ac_cancellable_release(ac_schedule_once(ac_self(ctx), param, l, ac_sender(ctx)));
        }
        return;
    }
    case CB_ERROR:
        r = ac_msg_error_new(ac_error_new(SOAK_ERROR, "request %llu refused by replica %d",
                                          (unsigned long long)id, my_replica_index));
        break;
    default:
        return; /* silent */
    }
    if (r)
        ac_reply(ctx, r);
}

static const ac_actor_def replica_def = {.name = "SoakReplica", .receive = replica_receive};

static int split_seeds(char *list, const char **out, int cap)
{
    int n = 0;
    for (char *s = strtok(list, ","); s && n < cap; s = strtok(NULL, ","))
        out[n++] = s;
    return n;
}

static int replica_main(int index, int port, char *seeds, const char *etcd)
{
    my_replica_index = index;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    ac_system *sys = ac_system_create("soak", &(ac_system_options){.log_level = AC_LOG_ERROR});
    if (!sys)
        return 3;
    char bind[48];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", port);
    ac_node *node = ac_node_start(sys, &(ac_node_options){.bind = bind});
    ac_ref *r = node ? ac_spawn(sys, ac_props_new(&replica_def, NULL), "replica") : NULL;
    const char *seed_v[CL_MAX_NODES + 1];
    int n = split_seeds(seeds, seed_v, CL_MAX_NODES + 1);
    const char *roles[] = {"replica"};
    ac_cluster_options co = {.name = "soak", .roles = roles, .roles_count = 1};
    ac_cluster_etcd_options eo = {.endpoints = &etcd, .endpoints_count = 1, .lease_ttl_s = 10};
    /* The chaos stops replicas and expects them Up again as they were, and
     * restarts etcd: no split-brain resolution (static), and a lease that
     * rides out an etcd restart (etcd fences a node after its TTL). */
    ac_cluster_static_options seed_opts = {.seeds = seed_v, .seeds_count = (size_t)n};
    if (etcd && *etcd) {
        co.etcd_options = &eo;
        co.retry_initial_ms = 50;
        co.retry_max_ms = 500;
    } else {
        co.static_options = &seed_opts;
        co.downing = AC_CLUSTER_DOWNING_OFF;
    }
    ac_cluster *cl = r ? ac_cluster_join(sys, &co) : NULL;
    if (!cl) {
        fprintf(stderr, "soak replica %d: cannot start: %s\n", index, ac_last_error());
        _exit(3);
    }
    int sig;
    sigwait(&set, &sig);
    ac_ref_release(r);
    ac_cluster_leave(cl);
    ac_system_terminate(sys);
    return 0;
}

int cluster_replica(int argc, char **argv)
{
    int index = -1, port = -1;
    char *seeds = NULL;
    const char *etcd = NULL;
    bool ok = true;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--replica"))
            ok = app_parse_int(argv[i + 1], 0, CL_MAX_NODES - 1, &index);
        else if (!strcmp(argv[i], "--port"))
            ok = app_parse_int(argv[i + 1], 1, 65535, &port);
        else if (!strcmp(argv[i], "--seeds"))
            seeds = argv[i + 1];
        else if (!strcmp(argv[i], "--etcd"))
            etcd = argv[i + 1];
    }
    if (!ok || index < 0 || port <= 0 || !seeds)
        return 2;
    return replica_main(index, port, seeds, etcd);
}
