#define _GNU_SOURCE
/*
 * A cluster member for the cluster tests (cl_member.h): the node program
 * (cluster_node.c) is this in a process of its own; over the in-process
 * transport it runs on a thread of the test's process, with the same
 * lines in and out through pipes.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <actorc.h>
#include <actorc/cluster.h>

#include "cl_member.h"

volatile sig_atomic_t cl_member_quit;

/* One member: where it prints. */
#define MAX_ASKS 8

typedef struct member {
    int out_fd;
    pthread_mutex_t lock;
    ac_future *asks[MAX_ASKS]; /* the serving thread's */
    int ask_count;
    ac_ref *router; /* --router */
} member;

static void say(member *m, const char *fmt, ...) AC_PRINTF(2, 3);
static void say(member *m, const char *fmt, ...)
{
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    pthread_mutex_lock(&m->lock);
    for (int at = 0; at < n;) {
        ssize_t w = write(m->out_fd, line + at, (size_t)(n - at));
        if (w <= 0)
            break;
        at += (int)w;
    }
    pthread_mutex_unlock(&m->lock);
}

static const char *kind_name(ac_member_event_kind k)
{
    static const char *const names[] = {"up", "unreachable", "reachable", "down"};
    return (unsigned)k < 4 ? names[k] : "?";
}

static void roles_text(const ac_member *m, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < m->roles_count && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? "," : "", m->roles[i]);
    if (!m->roles_count)
        snprintf(buf, cap, "-");
}

static void printer_receive(ac_ctx *ctx, ac_msg *msg)
{
    member *me = ac_ctx_user_data(ctx);
    const ac_member_event *ev = ac_member_event_get(msg);
    if (!ev)
        return;
    char roles[1200];
    roles_text(&ev->member, roles, sizeof roles);
    say(me, "EVENT %s %s %016llx %s", kind_name(ev->kind), ev->member.address,
        (unsigned long long)ev->member.incarnation, roles);
}
static const ac_actor_def printer_def = {.name = "EventPrinter", .receive = printer_receive};

static void print_members(member *me, ac_cluster *c)
{
    ac_member_list list;
    if (ac_cluster_members(c, &list) != AC_OK) {
        say(me, "MEMBERS error %s", ac_status_name(ac_last_status()));
        return;
    }
    char line[4096];
    size_t at = 0;
    line[0] = '\0';
    for (size_t i = 0; i < list.count && at < sizeof line; i++) {
        const ac_member *m = &list.members[i];
        at += (size_t)snprintf(line + at, sizeof line - at, "%s%s=%s%s", i ? "," : "", m->address,
                               m->status == AC_MEMBER_UP ? "up" : "unreachable",
                               m->self ? "*" : "");
    }
    say(me, "MEMBERS %zu %s", list.count, list.count ? line : "-");
    ac_member_list_free(&list);
}

static void print_status(member *me, ac_cluster *c)
{
    static const char *const states[] = {"joining", "joined", "retrying", "left"};
    ac_cluster_status st;
    if (ac_cluster_status_get(c, &st) != AC_OK) {
        say(me, "STATUS error");
        return;
    }
    say(me, "STATUS %s %zu %zu %llu %s", (unsigned)st.state < 4 ? states[st.state] : "?",
        st.members_up, st.members_unreachable, (unsigned long long)st.attempts_failed,
        st.last_error[0] ? st.last_error : "-");
}

#define MAX_LIST 16

typedef struct args {
    const char *system, *bind;
    ac_node_options node;
    ac_cluster_options cluster;
    ac_cluster_static_options seeds;
    ac_cluster_etcd_options etcd;
    const char *roles[MAX_LIST], *seed_v[MAX_LIST], *etcd_v[MAX_LIST];
    bool router; /* a round-robin cluster router over every member's sink */
} args;

static int parse_downing(const char *name, ac_cluster_downing *out)
{
    static const char *const names[] = {"keep-majority", "static-quorum", "keep-oldest",
                                        "down-all", "off"};
    for (int i = 0; i < 5; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (ac_cluster_downing)i;
            return 0;
        }
    fprintf(stderr, "test-cluster-node: bad --downing %s\n", name);
    return 2;
}

static int parse(args *a, int argc, char **argv)
{
    ac_cluster_options *c = &a->cluster;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool one = i + 1 < argc, two = i + 2 < argc;
        if (strcmp(arg, "--system") == 0 && one) {
            a->system = argv[++i];
        } else if (strcmp(arg, "--bind") == 0 && one) {
            a->bind = argv[++i];
        } else if (strcmp(arg, "--router") == 0) {
            a->router = true;
        } else if (strcmp(arg, "--insecure") == 0) {
            a->node.insecure = true;
        } else if (strcmp(arg, "--hb") == 0 && two) {
            a->node.heartbeat_ivl_ms = atoi(argv[++i]);
            a->node.heartbeat_timeout_ms = atoi(argv[++i]);
        } else if (strcmp(arg, "--cluster") == 0 && one) {
            c->name = argv[++i];
        } else if (strcmp(arg, "--role") == 0 && one && c->roles_count < MAX_LIST) {
            a->roles[c->roles_count++] = argv[++i];
        } else if (strcmp(arg, "--seed") == 0 && one && a->seeds.seeds_count < MAX_LIST) {
            a->seed_v[a->seeds.seeds_count++] = argv[++i];
            c->static_options = &a->seeds;
        } else if (strcmp(arg, "--etcd") == 0 && one && a->etcd.endpoints_count < MAX_LIST) {
            a->etcd_v[a->etcd.endpoints_count++] = argv[++i];
            c->etcd_options = &a->etcd;
        } else if (strcmp(arg, "--prefix") == 0 && one) {
            a->etcd.prefix = argv[++i];
        } else if (strcmp(arg, "--ttl") == 0 && one) {
            a->etcd.lease_ttl_s = atoi(argv[++i]);
        } else if (strcmp(arg, "--downing") == 0 && one) {
            if (parse_downing(argv[++i], &c->downing) != 0)
                return 2;
        } else if (strcmp(arg, "--stable") == 0 && one) {
            c->stable_after_ms = atoi(argv[++i]);
        } else if (strcmp(arg, "--quorum") == 0 && one) {
            c->quorum_size = (size_t)atoi(argv[++i]);
        } else if (strcmp(arg, "--retry") == 0 && two) {
            c->retry_initial_ms = atoi(argv[++i]);
            c->retry_max_ms = atoi(argv[++i]);
        } else {
            fprintf(stderr, "test-cluster-node: bad argument %s\n", arg);
            return 2;
        }
    }
    c->roles = a->roles;
    a->seeds.seeds = a->seed_v;
    a->etcd.endpoints = a->etcd_v;
    return 0;
}

/* An actor that never answers: what the others' asks wait on. */
static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}
static const ac_actor_def sink_def = {.name = "Sink", .receive = sink_receive};

static void on_answer(const ac_answer *answer, void *user)
{
    member *me = user;
    if (answer->error)
        say(me, "ANSWER %s %s", ac_error_name(answer->error), ac_error_message(answer->error));
    else
        say(me, "ANSWER reply");
}

/* "ask <system> <address>": ask that node's sink (it never answers), for
 * up to two minutes; "ANSWER <error name>" when it settles. */
static void ask_sink(member *me, ac_system *sys, const char *line)
{
    char system[80], address[160], path[300];
    if (sscanf(line, "ask %79s %159s", system, address) != 2 || me->ask_count == MAX_ASKS) {
        say(me, "ASKED error");
        return;
    }
    snprintf(path, sizeof path, "actorc://%s@%s/user/sink", system, address);
    ac_ref *ref = ac_node_resolve(ac_system_node(sys), path);
    ac_future *f = ref ? ac_ask(ref, ac_msg_str_new("wait"), 120000) : NULL;
    ac_ref_release(ref);
    if (!f) {
        say(me, "ASKED error %s", ac_last_error());
        return;
    }
    me->asks[me->ask_count++] = f;
    say(me, "ASKED %s", address);
    ac_future_on_complete(f, on_answer, me);
}

/* "routees": ROUTEES <count> <path>... of the cluster router. */
static void print_routees(member *me)
{
    ac_answer a;
    if (!me->router ||
        ac_ask_wait(me->router, ac_router_get_routees_msg(), 5000, &a) != AC_OK) {
        say(me, "ROUTEES error");
        return;
    }
    char paths[1024] = "";
    size_t n = ac_routees_count(a.reply), len = 0;
    for (size_t i = 0; i < n && len < sizeof paths; i++)
        len += (size_t)snprintf(paths + len, sizeof paths - len, " %s",
                                ac_ref_path(ac_routees_at(a.reply, i)));
    ac_answer_release(&a);
    say(me, "ROUTEES %zu%s", n, paths);
}

/* Answer commands until the input closes. */
/* Commands until the input closes: false when told to crash (the node
 * stopped first, as a killed process's is lost to its peers). */
static bool serve(member *me, int in_fd, ac_system *sys, ac_cluster *c)
{
    char line[256];
    FILE *in = fdopen(in_fd, "r");
    bool crashed = false;
    while (!cl_member_quit && in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "members") == 0)
            print_members(me, c);
        else if (strcmp(line, "status") == 0)
            print_status(me, c);
        else if (strcmp(line, "leave") == 0)
            say(me, "LEFT %s", ac_status_name(ac_cluster_leave(c)));
        else if (strcmp(line, "routees") == 0)
            print_routees(me);
        else if (strncmp(line, "ask ", 4) == 0)
            ask_sink(me, sys, line);
        else if (strcmp(line, "crash") == 0) {
            ac_node_stop(ac_system_node(sys));
            crashed = true;
            break;
        }
    }
    if (in)
        fclose(in);
    return !crashed;
}

int cl_member_main(int in_fd, int out_fd, int argc, char **argv)
{
    member me = {.out_fd = out_fd, .lock = PTHREAD_MUTEX_INITIALIZER};
    args a = {.system = "members", .bind = "tcp://127.0.0.1:0",
              .cluster = {.name = "test"}};
    if (parse(&a, argc, argv) != 0)
        return 2;
    ac_system_options so = {.workers = 2};
    ac_system *sys = ac_system_create(a.system, &so);
    a.node.bind = a.bind;
    ac_node *node = sys ? ac_node_start(sys, &a.node) : NULL;
    if (!node) {
        fprintf(stderr, "test-cluster-node: %s\n", ac_last_error());
        if (sys)
            ac_system_terminate(sys);
        return 2;
    }
    say(&me, "READY %s %016llx", ac_node_address(node), (unsigned long long)ac_node_incarnation(node));
    ac_ref *printer = ac_spawn(sys, ac_props_new(&printer_def, &me), "printer");
    ac_ref_release(ac_spawn(sys, ac_props_new(&sink_def, NULL), "sink"));
    ac_cluster *c = printer ? ac_cluster_join(sys, &a.cluster) : NULL;
    if (!c || ac_cluster_subscribe(c, printer) != AC_OK) {
        fprintf(stderr, "test-cluster-node: %s\n", ac_last_error());
        ac_system_terminate(sys);
        return 2;
    }
    if (a.router) {
        ac_cluster_router_options ro = {.path = "/user/sink"};
        ac_props *props = ac_cluster_router_round_robin(c, &ro);
        me.router = props ? ac_spawn(sys, props, "router") : NULL;
    }
    serve(&me, in_fd, sys, c);
    ac_ref_release(me.router);
    ac_ref_release(printer);
    ac_system_terminate(sys);
    for (int i = 0; i < me.ask_count; i++)
        ac_future_release(me.asks[i]);
    return 0;
}
