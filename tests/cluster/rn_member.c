/*
 * A member for the cluster router tests (rn_member.h): the router node
 * program (router_node.c) is this in a process of its own; over the
 * in-process transport it runs on a thread of the test's process.
 *
 *   actorc-test-router-node --bind ENDPOINT [--seed H:P]... [--role R]...
 *                            [--hb IVL TIMEOUT] [--replica echo|fail|slow|none]
 *
 * Joins the cluster "routers" (static seeds), prints "READY <address>
 * <incarnation>", and serves until its standard input closes or it gets
 * SIGTERM. Its actors:
 *   /user/replica  (absent with --replica none) counts its queue, and
 *                  echo: replies with what it got, after "delay <ms>"
 *                        made it wait that long first (a timer, not a
 *                        sleep); "hold <ms>" keeps its turn busy that
 *                        long, so that its mailbox fills;
 *                  fail: replies with a ReplicaError naming this node;
 *                  slow: never replies.
 *   /user/pool/replica  the same replica again, as the child of a parent
 *                  that does nothing else (also absent with none): a
 *                  nested routee path.
 *   /user/asker    a String "<path>": asks "ping" of that path (a cluster
 *                  router on another node) and replies with the answer,
 *                  or with the printed form of the error it got.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "core/props.h"
#include "rn_member.h"

/* One member: what its replicas do, and how long they wait to answer. */
typedef struct rn_member {
    ac_node *node;
    const char *mode;
    _Atomic int64_t delay_ms;
} rn_member;

/* ---- the replica ------------------------------------------------------ */

typedef struct later {
    ac_ref *caller;
    ac_msg *reply;
} later;

static void later_destroy(void *payload, size_t size)
{
    (void)size;
    later *l = payload;
    ac_ref_release(l->caller);
    ac_msg_release(l->reply);
}

static const ac_msg_type later_type = {.name = "test.Later", .destroy = later_destroy};

static void hold(int64_t ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void reply_later(ac_ctx *ctx, ac_msg *msg, int64_t delay_ms)
{
    ac_msg *m = ac_msg_new(&later_type, sizeof(later));
    later *l = ac_msg_payload(m);
    l->caller = ac_ref_retain(ac_sender(ctx));
    l->reply = ac_msg_retain(msg);
    ac_cancellable_release(ac_schedule_once(ac_self(ctx), delay_ms, m, NULL));
}

static void replica_receive(ac_ctx *ctx, ac_msg *msg)
{
    rn_member *me = ac_ctx_user_data(ctx);
    const char *s = ac_msg_is(msg, &ac_msg_type_str) ? ac_msg_str(msg) : NULL;
    if (ac_msg_is(msg, &later_type)) {
        const later *l = ac_msg_data(msg);
        ac_tell(l->caller, ac_msg_retain(l->reply), ac_self(ctx));
        return;
    }
    if (s && strncmp(s, "delay ", 6) == 0) {
        me->delay_ms = atoll(s + 6);
        ac_reply(ctx, ac_msg_str_new("ok"));
        return;
    }
    if (s && strncmp(s, "hold ", 5) == 0) {
        hold(atoll(s + 5));
        return;
    }
    if (strcmp(me->mode, "fail") == 0) {
        ac_reply(ctx, ac_msg_error_new(ac_error_new("ReplicaError", "the replica on %s failed",
                                                    ac_node_address(me->node))));
    } else if (strcmp(me->mode, "echo") == 0 && ac_sender(ctx)) {
        int64_t delay_ms = me->delay_ms;
        if (delay_ms > 0)
            reply_later(ctx, msg, delay_ms);
        else
            ac_reply(ctx, ac_msg_retain(msg));
    }
}

static const ac_actor_def replica_def = {.name = "Replica", .receive = replica_receive};

/* The parent of the nested replica. */
static void pool_pre_start(ac_ctx *ctx)
{
    ac_props *props = ac_props_new(&replica_def, ac_ctx_user_data(ctx));
    ac__props_count_mailbox(props);
    ac_ref *r = ac_spawn_child(ctx, props, "replica");
    if (!r) {
        fprintf(stderr, "cluster node: cannot spawn /user/pool/replica: %s\n", ac_last_error());
        exit(1);
    }
    ac_ref_release(r);
}

static void pool_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def pool_def = {
    .name = "Pool", .pre_start = pool_pre_start, .receive = pool_receive};

/* ---- the asker -------------------------------------------------------- */

typedef struct asked {
    ac_ref *caller;
} asked;

static void on_answer(const ac_answer *a, void *user)
{
    asked *q = user;
    char *text = a->error ? ac_error_to_string(a->error) : NULL;
    ac_tell(q->caller,
            text ? ac_msg_str_new(text) : ac_msg_retain(a->reply ? a->reply : NULL), NULL);
    free(text);
    ac_ref_release(q->caller);
    free(q);
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    rn_member *me = ac_ctx_user_data(ctx);
    const char *path = ac_msg_str(msg);
    ac_ref *target = path ? ac_node_resolve(me->node, path) : NULL;
    if (!target || !ac_sender(ctx)) {
        ac_reply(ctx, ac_msg_str_new("error: cannot resolve"));
        ac_ref_release(target);
        return;
    }
    asked *q = malloc(sizeof *q);
    q->caller = ac_ref_retain(ac_sender(ctx));
    ac_future *f = ac_ask(target, ac_msg_str_new("ping"), 8000);
    ac_future_on_complete(f, on_answer, q);
    ac_future_release(f);
    ac_ref_release(target);
}

static const ac_actor_def asker_def = {.name = "Asker", .receive = asker_receive};

/* ---- serving -------------------------------------------------------- */

static void spawn_top(ac_system *sys, const ac_actor_def *def, rn_member *me, const char *name,
                      bool count)
{
    ac_props *props = ac_props_new(def, me);
    if (count)
        ac__props_count_mailbox(props); /* exact depths, for smallest-mailbox */
    ac_ref *r = ac_spawn(sys, props, name);
    if (!r) {
        fprintf(stderr, "cluster node: cannot spawn %s: %s\n", name, ac_last_error());
        exit(1);
    }
    ac_ref_release(r);
}

int rn_member_main(int in_fd, int out_fd, int argc, char **argv)
{
    rn_member me = {.mode = "echo"};
    const char *bind = "tcp://127.0.0.1:0";
    const char *seeds[16], *roles[16];
    size_t ns = 0, nr = 0;
    int hb_ivl = 0, hb_timeout = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc)
            bind = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc && ns < 16)
            seeds[ns++] = argv[++i];
        else if (strcmp(argv[i], "--role") == 0 && i + 1 < argc && nr < 16)
            roles[nr++] = argv[++i];
        else if (strcmp(argv[i], "--replica") == 0 && i + 1 < argc)
            me.mode = argv[++i];
        else if (strcmp(argv[i], "--hb") == 0 && i + 2 < argc) {
            hb_ivl = atoi(argv[++i]);
            hb_timeout = atoi(argv[++i]);
        }
    }
    ac_system_options so = {.log_level = AC_LOG_ERROR}; /* the tests read answers, not logs */
    ac_system *sys = ac_system_create("routers", &so);
    ac_node_options no = {.bind = bind, .heartbeat_ivl_ms = hb_ivl,
                          .heartbeat_timeout_ms = hb_timeout};
    me.node = sys ? ac_node_start(sys, &no) : NULL;
    if (!me.node) {
        fprintf(stderr, "cluster node: %s\n", ac_last_error());
        return 1;
    }
    if (strcmp(me.mode, "none") != 0) {
        spawn_top(sys, &replica_def, &me, "replica", true);
        spawn_top(sys, &pool_def, &me, "pool", false);
    }
    spawn_top(sys, &asker_def, &me, "asker", false);
    ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = ns};
    ac_cluster_options co = {.name = "routers", .roles = roles, .roles_count = nr,
                             .static_options = &seed_opts};
    if (!ac_cluster_join(sys, &co)) {
        fprintf(stderr, "cluster node: cannot join: %s\n", ac_last_error());
        return 1;
    }
    dprintf(out_fd, "READY %s %llx\n", ac_node_address(me.node),
            (unsigned long long)ac_node_incarnation(me.node));
    /* Until the input closes; "crash": the node stopped first, as a
     * killed process's is lost to its peers, without a leave. */
    char line[64];
    FILE *in = fdopen(in_fd, "r");
    bool crashed = false;
    while (in && fgets(line, sizeof line, in))
        if (strncmp(line, "crash", 5) == 0) {
            ac_node_stop(me.node);
            crashed = true;
            break;
        }
    if (in)
        fclose(in);
    if (!crashed)
        ac_cluster_leave(ac_system_cluster(sys));
    ac_system_terminate(sys);
    return 0;
}
