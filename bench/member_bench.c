/*
 * actorc-bench-members: how long a member's failure takes to become a
 * Down event on a surviving node, beside the remote layer's own
 * detection in the same trial.
 *
 *   actorc-bench-members [TRIALS]      the workloads (default 5 trials each)
 *   actorc-bench-members member ...    a member process (started by the
 *                                      first; not for people)
 *
 * This process runs two systems, each with a node on 127.0.0.1 and a
 * subscriber: one joins a static cluster (no seeds: the others list it),
 * one an etcd cluster (an etcd started here, on free ports, with its
 * data in a scratch directory). Each trial starts a fresh member process
 * (this executable again), waits for its Up, watches its /user/probe
 * actor through the remote layer, then fails it and times, from the
 * signal:
 *
 *   kill9_static_ms   kill -9, static provider: to the Down event
 *   sigstop_static_ms SIGSTOP, static provider (heartbeats 200 ms, timeout
 *                     1,000 ms): to the Down event
 *   kill9_etcd_ms     kill -9, etcd provider (lease TTL 2 s): to the Down
 *                     event
 *
 * and, as the baseline, to the Terminated (node lost) of the watch: the
 * transport's own verdict. It prints, the medians of the trials:
 *
 *   RESULT member_down <workload> <ms> ms
 *   INFO member_down <workload> baseline_watch_ms <ms> ratio <down / watch>
 *
 * Without an etcd binary the etcd workload is skipped (said on an INFO
 * line). Every member process is ended by pid, and etcd too, also when
 * this one fails; every wait is bounded.
 */
#define _GNU_SOURCE

#include <actorc.h>
#include <actorc/cluster.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_etcd.h"
#include "rt_proc.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void die(const char *what)
{
    fprintf(stderr, "ERROR: %s: %s\n", what, ac_last_error());
    exit(1);
}

/* ---- a member process ----------------------------------------------------- */

static void probe_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}
static const ac_actor_def probe_def = {.name = "Probe", .receive = probe_receive};

static int member_main(int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:0", *seeds[8], *etcd[2];
    ac_cluster_static_options seed_opts = {.seeds = seeds};
    ac_cluster_etcd_options eo = {.endpoints = etcd, .lease_ttl_s = 2};
    /* Failure detection is what is timed, not split-brain resolution
     * (a two-node cluster would down one side after stable_after). */
    ac_cluster_options o = {.name = "bench", .static_options = &seed_opts,
                            .retry_initial_ms = 50, .retry_max_ms = 500,
                            .downing = AC_CLUSTER_DOWNING_OFF};
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--bind") == 0)
            bind = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0 && seed_opts.seeds_count < 8)
            seeds[seed_opts.seeds_count++] = argv[i + 1];
        else if (strcmp(argv[i], "--etcd") == 0 && eo.endpoints_count < 2) {
            etcd[eo.endpoints_count++] = argv[i + 1];
            o.static_options = NULL;
            o.etcd_options = &eo;
            o.downing = AC_CLUSTER_DOWNING_KEEP_MAJORITY; /* etcd: its lease decides */
        }
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    ac_system_options so = {.workers = 1, .log_level = AC_LOG_WARN};
    ac_system *sys = ac_system_create("member", &so);
    ac_node_options no = {.bind = bind, .heartbeat_ivl_ms = 200, .heartbeat_timeout_ms = 1000};
    ac_node *node = sys ? ac_node_start(sys, &no) : NULL;
    if (!node || !ac_spawn(sys, ac_props_new(&probe_def, NULL), "probe"))
        die("member");
    printf("READY %s %016llx\n", ac_node_address(node), (unsigned long long)ac_node_incarnation(node));
    fflush(stdout);
    if (!ac_cluster_join(sys, &o))
        die("member join");
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
    ac_system_terminate(sys);
    return 0;
}

/* ---- the observer: events and a watch, timed where they arrive ------------ */

typedef struct observer {
    ac_system *sys;
    ac_node *node;
    ac_cluster *cluster;
    ac_ref *listener;
    pthread_mutex_t lock;
    char watch_address[128]; /* the member of this trial */
    double up_ms, down_ms, lost_ms, watching_ms; /* 0 until seen */
} observer;

static void listener_receive(ac_ctx *ctx, ac_msg *msg)
{
    observer *ob = ac_ctx_user_data(ctx);
    double t = now_ms();
    pthread_mutex_lock(&ob->lock);
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev && strcmp(ev->member.address, ob->watch_address) == 0) {
        if (ev->kind == AC_MEMBER_EVENT_UP && !ob->up_ms)
            ob->up_ms = t;
        if (ev->kind == AC_MEMBER_EVENT_DOWN && !ob->down_ms)
            ob->down_ms = t;
    }
    if (ac_msg_is(msg, &ac_msg_type_terminated) && ac_terminated_node_lost(msg) && !ob->lost_ms)
        ob->lost_ms = t;
    pthread_mutex_unlock(&ob->lock);
    const char *path = ac_msg_str(msg);
    if (path) { /* watch this remote actor */
        ac_ref *target = ac_node_resolve(ob->node, path);
        bool ok = target && ac_watch(ctx, target) == AC_OK;
        ac_ref_release(target);
        pthread_mutex_lock(&ob->lock);
        ob->watching_ms = ok ? now_ms() : -1;
        pthread_mutex_unlock(&ob->lock);
    }
}
static const ac_actor_def listener_def = {.name = "Listener", .receive = listener_receive};

static void observer_start(observer *ob, const char *name, const char *etcd_url)
{
    memset(ob, 0, sizeof *ob);
    pthread_mutex_init(&ob->lock, NULL);
    ac_system_options so = {.workers = 2, .log_level = AC_LOG_WARN};
    ob->sys = ac_system_create(name, &so);
    ac_node_options no = {.bind = "tcp://127.0.0.1:0", .heartbeat_ivl_ms = 200,
                          .heartbeat_timeout_ms = 1000};
    ob->node = ob->sys ? ac_node_start(ob->sys, &no) : NULL;
    if (!ob->node)
        die("observer node");
    const char *endpoints[] = {etcd_url};
    ac_cluster_etcd_options eo = {.endpoints = endpoints, .endpoints_count = 1,
                                  .lease_ttl_s = 2};
    ac_cluster_options o = {.name = "bench", .retry_initial_ms = 50, .retry_max_ms = 500,
                            .downing = AC_CLUSTER_DOWNING_OFF};
    if (etcd_url) {
        o.etcd_options = &eo;
        o.downing = AC_CLUSTER_DOWNING_KEEP_MAJORITY; /* etcd: its lease decides */
    }
    ob->cluster = ac_cluster_join(ob->sys, &o);
    ob->listener = ob->cluster ? ac_spawn(ob->sys, ac_props_new(&listener_def, ob), "listener")
                               : NULL;
    if (!ob->listener || ac_cluster_subscribe(ob->cluster, ob->listener) != AC_OK)
        die("observer");
}

static void observer_stop(observer *ob)
{
    ac_ref_release(ob->listener);
    ac_system_terminate(ob->sys);
    pthread_mutex_destroy(&ob->lock);
}

static double seen(observer *ob, double *field)
{
    pthread_mutex_lock(&ob->lock);
    double v = *field;
    pthread_mutex_unlock(&ob->lock);
    return v;
}

static bool wait_seen(observer *ob, double *field, int ms)
{
    double end = now_ms() + ms;
    while (!seen(ob, field) && now_ms() < end)
        sleep_ms(1);
    return seen(ob, field) != 0;
}

/* One trial: a fresh member, failed with sig; the two delays in ms. */
static bool trial(observer *ob, const char *etcd_url, int sig, double *down, double *lost)
{
    char bind[64], seed[256], path[256];
    int port;
    if (ac_node_free_ports(&port, 1) != AC_OK)
        return false;
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", port);
    snprintf(seed, sizeof seed, "%s", ac_node_address(ob->node));
    const char *args[] = {"member", "--bind", bind, etcd_url ? "--etcd" : "--seed",
                          etcd_url ? etcd_url : seed, NULL};
    rt_proc p;
    if (!rt_spawn(&p, rt_self(), args))
        return false;
    pthread_mutex_lock(&ob->lock);
    snprintf(ob->watch_address, sizeof ob->watch_address, "%s", p.address);
    ob->up_ms = ob->down_ms = ob->lost_ms = ob->watching_ms = 0;
    pthread_mutex_unlock(&ob->lock);
    bool ok = wait_seen(ob, &ob->up_ms, 10000);
    if (ok) {
        snprintf(path, sizeof path, "actorc://member@%s/user/probe", p.address);
        ac_tell(ob->listener, ac_msg_str_new(path), NULL);
        ok = wait_seen(ob, &ob->watching_ms, 10000) && seen(ob, &ob->watching_ms) > 0;
        sleep_ms(100); /* its WATCH frame reaches the member */
    }
    if (ok) {
        double t0 = now_ms();
        rt_signal(&p, sig);
        ok = wait_seen(ob, &ob->down_ms, 10000) && wait_seen(ob, &ob->lost_ms, 10000);
        *down = seen(ob, &ob->down_ms) - t0;
        *lost = seen(ob, &ob->lost_ms) - t0;
    }
    rt_end(&p, SIGKILL);
    return ok;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void workload(const char *name, observer *ob, const char *etcd_url, int sig, int trials)
{
    double down[32], lost[32];
    int n = 0;
    for (int i = 0; i < trials && i < 32; i++) {
        if (!trial(ob, etcd_url, sig, &down[n], &lost[n])) {
            fprintf(stderr, "VERIFICATION FAILED: %s trial %d: no Up, Down or Terminated\n", name, i);
            exit(2);
        }
        n++;
    }
    double d = median(down, n), l = median(lost, n);
    printf("RESULT member_down %s %.1f ms\n", name, d);
    printf("INFO member_down %s baseline_watch_ms %.1f ratio %.2f trials %d\n", name, l,
           l > 0 ? d / l : 0.0, n);
    fflush(stdout);
}

/* ---- etcd ------------------------------------------------------------------- */

static bench_etcd etcd;

static void etcd_stop(void)
{
    bench_etcd_stop(&etcd);
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "member") == 0)
        return member_main(argc, argv);
    int trials = argc > 1 ? atoi(argv[1]) : 5;
    if (trials < 1 || trials > 32)
        trials = 5;
    atexit(etcd_stop);
    signal(SIGPIPE, SIG_IGN);
    alarm(900); /* a bound on the whole run; rt_proc ends the members on SIGALRM */

    observer st;
    observer_start(&st, "observer", NULL);
    workload("kill9_static_ms", &st, NULL, SIGKILL, trials);
    workload("sigstop_static_ms", &st, NULL, SIGSTOP, trials < 3 ? trials : 3);
    observer_stop(&st);

    if (!bench_etcd_start(&etcd)) {
        printf("INFO member_down kill9_etcd_ms skipped: no etcd binary, or it did not start\n");
        return 0;
    }
    observer et;
    observer_start(&et, "observer", etcd.url);
    workload("kill9_etcd_ms", &et, etcd.url, SIGKILL, trials);
    observer_stop(&et);
    etcd_stop();
    return 0;
}
