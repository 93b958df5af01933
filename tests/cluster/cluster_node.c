#define _GNU_SOURCE
/*
 * actorc-test-cluster-node: a cluster member for the cluster tests and
 * the membership benchmark, run as a separate process.
 *
 *   actorc-test-cluster-node [--system NAME] [--bind ENDPOINT] [--hb IVL TIMEOUT]
 *       [--cluster NAME] [--role ROLE]... [--seed HOST:PORT]...
 *       [--etcd URL]... [--prefix PREFIX] [--ttl S] [--retry INITIAL MAX]
 *
 * Starts a node, prints "READY <address> <incarnation>", joins the
 * cluster (static seeds, or etcd when --etcd is given) and subscribes an
 * actor that prints each member event as it comes:
 *
 *   EVENT <up|unreachable|reachable|down> <address> <incarnation> <roles>
 *
 * (roles comma-separated, "-" for none). Commands on standard input, one
 * a line, each answered with one line:
 *
 *   members  MEMBERS <count> <address>=<up|unreachable>[*],...  (* this node)
 *   status   STATUS <state> <up> <unreachable> <attempts_failed> <last_error>
 *   leave    LEFT <status name>
 *
 * Ends when its input closes or on SIGTERM.
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

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...) AC_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
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
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (!ev)
        return;
    char roles[1200];
    roles_text(&ev->member, roles, sizeof roles);
    say("EVENT %s %s %016llx %s", kind_name(ev->kind), ev->member.address,
        (unsigned long long)ev->member.incarnation, roles);
}
static const ac_actor_def printer_def = {.name = "EventPrinter", .receive = printer_receive};

static void print_members(ac_cluster *c)
{
    ac_member_list list;
    if (ac_cluster_members(c, &list) != AC_OK) {
        say("MEMBERS error %s", ac_status_name(ac_last_status()));
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
    say("MEMBERS %zu %s", list.count, list.count ? line : "-");
    ac_member_list_free(&list);
}

static void print_status(ac_cluster *c)
{
    static const char *const states[] = {"joining", "joined", "retrying", "left"};
    ac_cluster_status st;
    if (ac_cluster_status_get(c, &st) != AC_OK) {
        say("STATUS error");
        return;
    }
    say("STATUS %s %zu %zu %llu %s", (unsigned)st.state < 4 ? states[st.state] : "?",
        st.members_up, st.members_unreachable, (unsigned long long)st.attempts_failed,
        st.last_error[0] ? st.last_error : "-");
}

static volatile sig_atomic_t quit;
static void on_term(int sig)
{
    (void)sig;
    quit = 1;
}

#define MAX_LIST 16

typedef struct args {
    const char *system, *bind;
    ac_node_options node;
    ac_cluster_options cluster;
    ac_cluster_static_options seeds;
    ac_cluster_etcd_options etcd;
    const char *roles[MAX_LIST], *seed_v[MAX_LIST], *etcd_v[MAX_LIST];
} args;

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

/* Answer commands until the input closes. */
static void serve(ac_cluster *c)
{
    char line[256];
    FILE *in = fdopen(0, "r");
    while (!quit && in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "members") == 0)
            print_members(c);
        else if (strcmp(line, "status") == 0)
            print_status(c);
        else if (strcmp(line, "leave") == 0)
            say("LEFT %s", ac_status_name(ac_cluster_leave(c)));
    }
}

int main(int argc, char **argv)
{
    args a = {.system = "members", .bind = "tcp://127.0.0.1:0",
              .cluster = {.name = "test"}};
    if (parse(&a, argc, argv) != 0)
        return 2;
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    ac_system_options so = {.workers = 2};
    ac_system *sys = ac_system_create(a.system, &so);
    a.node.bind = a.bind;
    ac_node *node = sys ? ac_node_start(sys, &a.node) : NULL;
    if (!node) {
        fprintf(stderr, "test-cluster-node: %s\n", ac_last_error());
        return 2;
    }
    say("READY %s %016llx", ac_node_address(node), (unsigned long long)ac_node_incarnation(node));
    ac_ref *printer = ac_spawn(sys, ac_props_new(&printer_def, NULL), "printer");
    ac_cluster *c = printer ? ac_cluster_join(sys, &a.cluster) : NULL;
    if (!c || ac_cluster_subscribe(c, printer) != AC_OK) {
        fprintf(stderr, "test-cluster-node: %s\n", ac_last_error());
        return 2;
    }
    serve(c);
    ac_ref_release(printer);
    ac_system_terminate(sys);
    return 0;
}
