/*
 * actorc-bench-scale: a cluster of real node processes on this machine
 * (64 by default), joined by static seeds and again through etcd, and
 * what each node costs as it grows.
 *
 *   actorc-bench-scale            both providers (ACTORC_SCALE_N nodes,
 *                                 8 to 64, default 64; ACTORC_SCALE_ONLY
 *                                 static or etcd: that one only)
 *   actorc-bench-scale node ...   a node process (started by the first;
 *                                 not for people)
 *
 * Each node process has one worker, a node on 127.0.0.1 and a subscriber
 * that prints every Up and Down it hears, stamped with the machine's
 * monotonic clock (the same for every process), so that this process
 * can tell when every node has seen what. Static: three seeds, the full
 * mesh, heartbeats every second with a 5 s timeout (the cluster's beats
 * then every 500 ms; the defaults, 200 ms and 1 s, do not hold 64
 * processes on two shared cores). etcd: the provider's default lease TTL,
 * 5 s (with 2 s, an etcd that stalled past a second while 64 nodes
 * joined on two shared cores left nodes fenced for good), idle connections
 * closed after 1 s (ac_node_options.idle_timeout_ms), so that members
 * the node does not talk to are judged by their leases and the watch.
 * For each provider it prints:
 *
 *   RESULT scale converge_ms_<p>      the last process started (its node
 *                                     up) to every node having all the
 *                                     others Up
 *   RESULT scale down_seen_ms_<p>     kill -9 of one node to every other
 *                                     having it Down (static: through the
 *                                     connection; etcd: through the lease,
 *                                     the connections closed as idle)
 *   RESULT scale lost_seen_ms_<p>     kill -9 to every other having it
 *                                     Unreachable or Down, whichever came
 *                                     first (static: split-brain resolution
 *                                     holds a lost member Unreachable for
 *                                     stable_after_ms before its Down)
 *   RESULT scale join_one_ms_<p>      one process started beside N - 1 to
 *                                     every node having it Up
 *   RESULT scale idle_cpu_pct_<p>_<n>     per node, the cluster idle
 *   RESULT scale idle_frames_per_s_<p>_<n> per node (in + out)
 *   RESULT scale rss_kb_<p>_<n>       per node
 *
 * at n = N, N / 2 and N / 4 (64, 32, 16): the cluster shrinks by nodes
 * leaving. Every process it starts (the nodes, etcd) is ended by pid, at
 * the end, on a failure and on SIGINT / SIGTERM (rt_proc.h); every wait
 * is bounded and the whole run is bounded by an alarm.
 */
#define _GNU_SOURCE

#include <actorc.h>
#include <actorc/cluster.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench_etcd.h"
#include "rt_proc.h"

#define MAX_NODES 64
#define SEEDS 3
#define ETCD_TTL_S 5
#define ETCD_IDLE_MS 1000
/* The static mesh's heartbeat timeout: a hung peer is lost in 5 s, and
 * the cluster's beats (five in half of it) go out every 500 ms; a peer
 * that dies is lost at once whatever it is (its connection drops). */
#define STATIC_HB_MS 5000
#define IDLE_WINDOW_MS 4000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- a node process ---------------------------------------------------------- */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    vprintf(fmt, ap);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
}

static void events_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (ev && (ev->kind == AC_MEMBER_EVENT_UP || ev->kind == AC_MEMBER_EVENT_DOWN ||
               ev->kind == AC_MEMBER_EVENT_UNREACHABLE))
        say("E %c %s %.3f\n",
            ev->kind == AC_MEMBER_EVENT_UP ? 'U' : ev->kind == AC_MEMBER_EVENT_DOWN ? 'D' : 'R',
            ev->member.address, now_ms());
}
static const ac_actor_def events_def = {.name = "Events", .receive = events_receive};

static int node_main(int argc, char **argv)
{
    const char *bind = NULL, *seeds[SEEDS], *etcd[1];
    int idle_ms = 0, hb_ms = 0;
    ac_cluster_static_options so_seeds = {.seeds = seeds};
    ac_cluster_etcd_options eo = {.endpoints = etcd, .lease_ttl_s = ETCD_TTL_S};
    ac_cluster_options o = {.name = "scale", .static_options = &so_seeds,
                            .retry_initial_ms = 50, .retry_max_ms = 1000};
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--bind") == 0)
            bind = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0 && so_seeds.seeds_count < SEEDS)
            seeds[so_seeds.seeds_count++] = argv[i + 1];
        else if (strcmp(argv[i], "--etcd") == 0) {
            etcd[0] = argv[i + 1];
            eo.endpoints_count = 1;
            o.static_options = NULL;
            o.etcd_options = &eo;
        } else if (strcmp(argv[i], "--idle") == 0)
            idle_ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hb") == 0)
            hb_ms = atoi(argv[i + 1]);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    ac_system_options so = {.workers = 1, .log_level = AC_LOG_ERROR};
    ac_system *sys = ac_system_create("scale", &so);
    ac_node_options no = {.bind = bind, .idle_timeout_ms = idle_ms,
                          .heartbeat_ivl_ms = hb_ms / 5, .heartbeat_timeout_ms = hb_ms};
    ac_node *node = sys && bind ? ac_node_start(sys, &no) : NULL;
    ac_ref *events = node ? ac_spawn(sys, ac_props_new(&events_def, NULL), "events") : NULL;
    if (!events) {
        fprintf(stderr, "scale node: %s\n", ac_last_error());
        return 1;
    }
    say("READY %s %016llx\n", ac_node_address(node), (unsigned long long)ac_node_incarnation(node));
    ac_cluster *c = ac_cluster_join(sys, &o);
    if (!c || ac_cluster_subscribe(c, events) != AC_OK) {
        fprintf(stderr, "scale node join: %s\n", ac_last_error());
        return 1;
    }
    /* Commands: S (stats), Q (leave and end); the input's end ends it. */
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'S') {
            ac_node_stats st;
            ac_node_stats_get(node, &st);
            say("S %llu %llu %llu\n", (unsigned long long)st.frames_in,
                (unsigned long long)st.frames_out, (unsigned long long)st.connections);
        } else if (line[0] == 'Q') {
            break;
        }
    }
    ac_ref_release(events);
    ac_system_terminate(sys);
    return 0;
}

/* ---- the cluster, as this process sees it ------------------------------------ */

typedef struct kid {
    rt_proc p;
    bool alive;
    char buf[4096];
    size_t len;
    bool up[MAX_NODES + 1];   /* by kid index: it has that node Up */
    double ev_ms[MAX_NODES + 1]; /* its last event about that node */
    double lost_ms[MAX_NODES + 1]; /* when it last had that node Unreachable or Down */
    bool held[MAX_NODES + 1];      /* Unreachable since */
    int up_count;
    bool stats_fresh;
    unsigned long long frames;
} kid;

static kid kids[MAX_NODES + 1];
static int nkids;
static int ports[MAX_NODES + 1];

static int kid_by_address(const char *a)
{
    for (int i = 0; i < nkids; i++)
        if (strcmp(kids[i].p.address, a) == 0)
            return i;
    return -1;
}

static void kid_line(kid *k, const char *line)
{
    char kind, addr[128];
    double t;
    unsigned long long fi, fo, conns;
    if (sscanf(line, "E %c %127s %lf", &kind, addr, &t) == 3) {
        int j = kid_by_address(addr);
        if (j < 0 || &kids[j] == k)
            return;
        if ((kind == 'R' || kind == 'D') && !k->held[j])
            k->lost_ms[j] = t;
        k->held[j] = kind == 'R';
        if (kind == 'R')
            return; /* still a member, held Unreachable */
        bool up = kind == 'U';
        if (up != k->up[j])
            k->up_count += up ? 1 : -1;
        k->up[j] = up;
        k->ev_ms[j] = t;
    } else if (sscanf(line, "S %llu %llu %llu", &fi, &fo, &conns) == 3) {
        k->frames = fi + fo;
        k->stats_fresh = true;
    }
}

static void kid_read(kid *k)
{
    ssize_t r = read(k->p.out_fd, k->buf + k->len, sizeof k->buf - 1 - k->len);
    if (r <= 0) {
        k->alive = false; /* it ended: counted as gone */
        return;
    }
    k->len += (size_t)r;
    k->buf[k->len] = '\0';
    char *start = k->buf, *nl;
    while ((nl = strchr(start, '\n'))) {
        *nl = '\0';
        kid_line(k, start);
        start = nl + 1;
    }
    k->len = strlen(start);
    memmove(k->buf, start, k->len);
    if (k->len == sizeof k->buf - 1)
        k->len = 0;
}

/* Read what the live nodes say for ms. */
static void pump(int ms)
{
    double end = now_ms() + ms;
    do {
        struct pollfd pf[MAX_NODES + 1];
        int map[MAX_NODES + 1], n = 0;
        for (int i = 0; i < nkids; i++)
            if (kids[i].alive) {
                pf[n] = (struct pollfd){.fd = kids[i].p.out_fd, .events = POLLIN};
                map[n++] = i;
            }
        int left = (int)(end - now_ms());
        if (poll(pf, (nfds_t)n, left > 0 ? left : 0) <= 0)
            continue;
        for (int i = 0; i < n; i++)
            if (pf[i].revents)
                kid_read(&kids[map[i]]);
    } while (now_ms() < end);
}

static int alive_count(void)
{
    int n = 0;
    for (int i = 0; i < nkids; i++)
        n += kids[i].alive;
    return n;
}

/* Every live node has every other live node Up, and `gone` (if >= 0)
 * no more. */
static bool agreed(int gone)
{
    int want = alive_count() - 1;
    for (int i = 0; i < nkids; i++) {
        if (!kids[i].alive)
            continue;
        int have = 0;
        for (int j = 0; j < nkids; j++)
            have += kids[j].alive && j != i && kids[i].up[j];
        if (have != want || (gone >= 0 && kids[i].up[gone]))
            return false;
    }
    return true;
}

static bool await_agreed(int gone, int ms)
{
    double end = now_ms() + ms;
    while (!agreed(gone) && now_ms() < end)
        pump(20);
    return agreed(gone);
}

/* The latest time a live node had `about` Unreachable or Down. */
static double last_lost(int about)
{
    double t = 0;
    for (int i = 0; i < nkids; i++)
        if (kids[i].alive && i != about && kids[i].lost_ms[about] > t)
            t = kids[i].lost_ms[about];
    return t;
}

/* The latest time a live node heard of `about` (its Up or Down). */
static double last_heard(int about)
{
    double t = 0;
    for (int i = 0; i < nkids; i++)
        if (kids[i].alive && i != about && kids[i].ev_ms[about] > t)
            t = kids[i].ev_ms[about];
    return t;
}

static void send_all(const char *cmd)
{
    for (int i = 0; i < nkids; i++)
        if (kids[i].alive && write(kids[i].p.in_fd, cmd, strlen(cmd)) < 0)
            kids[i].alive = false;
}

/* Frames in + out of every live node, summed, fresh from each. */
static bool frames_now(unsigned long long *sum)
{
    for (int i = 0; i < nkids; i++)
        kids[i].stats_fresh = false;
    send_all("S\n");
    double end = now_ms() + 10000;
    for (;;) {
        bool all = true;
        *sum = 0;
        for (int i = 0; i < nkids; i++)
            if (kids[i].alive) {
                all = all && kids[i].stats_fresh;
                *sum += kids[i].frames;
            }
        if (all)
            return true;
        if (now_ms() > end)
            return false;
        pump(10);
    }
}

static double cpu_all(void)
{
    double s = 0;
    for (int i = 0; i < nkids; i++)
        if (kids[i].alive)
            s += bench_proc_cpu_s(kids[i].p.pid);
    return s;
}

/* What an idle node costs at this size, the cluster settled. */
static bool measure_idle(const char *prov, int settle_ms)
{
    pump(settle_ms);
    int n = alive_count();
    unsigned long long f0, f1;
    if (!frames_now(&f0))
        return false;
    double c0 = cpu_all(), t0 = now_ms();
    pump(IDLE_WINDOW_MS);
    double c1 = cpu_all(), t1 = now_ms();
    if (!frames_now(&f1))
        return false;
    double secs = (t1 - t0) / 1e3;
    long rss = 0;
    for (int i = 0; i < nkids; i++)
        if (kids[i].alive)
            rss += bench_proc_rss_kb(kids[i].p.pid);
    printf("RESULT scale idle_cpu_pct_%s_%d %.3f %%\n", prov, n, (c1 - c0) / secs / n * 100.0);
    printf("RESULT scale idle_frames_per_s_%s_%d %.1f frames/s\n", prov, n,
           (double)(f1 - f0) / secs / n);
    printf("RESULT scale rss_kb_%s_%d %ld kB\n", prov, n, rss / n);
    fflush(stdout);
    return true;
}

static bool start_kid(int i, const char *etcd_url)
{
    char bind[64], seed[SEEDS][64];
    snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", ports[i]);
    const char *args[16];
    int a = 0;
    args[a++] = "node";
    args[a++] = "--bind";
    args[a++] = bind;
    if (etcd_url) {
        static char idle[16];
        snprintf(idle, sizeof idle, "%d", ETCD_IDLE_MS);
        args[a++] = "--etcd";
        args[a++] = etcd_url;
        args[a++] = "--idle";
        args[a++] = idle;
    } else {
        static char hb[16];
        snprintf(hb, sizeof hb, "%d", STATIC_HB_MS);
        args[a++] = "--hb";
        args[a++] = hb;
        for (int s = 0; s < SEEDS; s++) {
            snprintf(seed[s], sizeof seed[s], "127.0.0.1:%d", ports[s]);
            args[a++] = "--seed";
            args[a++] = seed[s];
        }
    }
    args[a] = NULL;
    kid *k = &kids[i];
    memset(k, 0, sizeof *k);
    /* A loaded machine may take more than rt_spawn's 10 s to start one:
     * three tries. */
    bool started = false;
    for (int t = 0; t < 3 && !started; t++)
        started = rt_spawn(&k->p, rt_self(), args);
    if (!started)
        return false;
    k->alive = true;
    if (i >= nkids)
        nkids = i + 1;
    return true;
}

/* End the live nodes from index `from` on: they leave, then are reaped. */
static void end_from(int from)
{
    for (int i = from; i < nkids; i++)
        if (kids[i].alive && write(kids[i].p.in_fd, "Q\n", 2) < 0)
            kids[i].alive = false;
    for (int i = from; i < nkids; i++) {
        if (kids[i].p.pid > 0)
            rt_end(&kids[i].p, 0);
        kids[i].alive = false;
    }
}

static int fail(const char *prov, const char *what)
{
    fprintf(stderr, "VERIFICATION FAILED: scale %s: %s\n", prov, what);
    for (int i = 0; i < nkids; i++)
        fprintf(stderr, "  node %d %s: %s, %d Up\n", i, kids[i].p.address,
                kids[i].alive ? "live" : "gone", kids[i].up_count);
    end_from(0);
    return 2;
}

static int run(const char *prov, const char *etcd_url, int n)
{
    nkids = 0;
    if (ac_node_free_ports(ports, (size_t)n) != AC_OK)
        return fail(prov, "no free ports");
    for (int i = 0; i < n; i++) {
        if (!start_kid(i, etcd_url))
            return fail(prov, "a node process did not start");
        pump(0);
    }
    double started = now_ms();
    if (!await_agreed(-1, 60000))
        return fail(prov, "the nodes did not all see each other Up within 60 s");
    double conv = 0;
    for (int j = 0; j < nkids; j++)
        if (last_heard(j) > conv)
            conv = last_heard(j);
    printf("RESULT scale converge_ms_%s %.1f ms\n", prov, conv - started);
    fflush(stdout);
    if (!measure_idle(prov, etcd_url ? 2 * ETCD_IDLE_MS + 500 : 1000))
        return fail(prov, "no stats");

    /* kill -9 of one node (not a seed). */
    int victim = n / 2;
    double t0 = now_ms();
    rt_end(&kids[victim].p, SIGKILL);
    kids[victim].alive = false;
    if (!await_agreed(victim, 30000))
        return fail(prov, "a killed node was not Down everywhere within 30 s");
    printf("RESULT scale down_seen_ms_%s %.1f ms\n", prov, last_heard(victim) - t0);
    printf("RESULT scale lost_seen_ms_%s %.1f ms\n", prov, last_lost(victim) - t0);
    fflush(stdout);

    /* One joins the N - 1: in the victim's place, on a new port. */
    int more;
    if (ac_node_free_ports(&more, 1) != AC_OK)
        return fail(prov, "no free port");
    ports[victim] = more;
    double j0 = now_ms();
    if (!start_kid(victim, etcd_url))
        return fail(prov, "the joining node did not start");
    if (!await_agreed(-1, 30000))
        return fail(prov, "the joining node was not Up everywhere within 30 s");
    printf("RESULT scale join_one_ms_%s %.1f ms\n", prov, last_heard(victim) - j0);
    fflush(stdout);

    /* Smaller: half leave, then half of the rest. */
    for (int size = n / 2; size >= n / 4 && size >= 2; size /= 2) {
        end_from(size);
        nkids = size;
        if (!await_agreed(-1, 30000))
            return fail(prov, "the nodes left were not Down everywhere within 30 s");
        if (!measure_idle(prov, etcd_url ? 2 * ETCD_IDLE_MS + 500 : 1000))
            return fail(prov, "no stats");
    }
    end_from(0);
    return 0;
}

static bench_etcd etcd;

static void etcd_end(void) { bench_etcd_stop(&etcd); }

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "node") == 0)
        return node_main(argc, argv);
    const char *env = getenv("ACTORC_SCALE_N");
    int n = env ? atoi(env) : MAX_NODES;
    if (n < 8 || n > MAX_NODES) {
        fprintf(stderr, "actorc-bench-scale: ACTORC_SCALE_N must be 8 to %d\n", MAX_NODES);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    atexit(etcd_end);
    alarm(300); /* a bound on the whole run; rt_proc ends the nodes on SIGALRM */
    const char *only = getenv("ACTORC_SCALE_ONLY");
    if (only && strcmp(only, "static") != 0 && strcmp(only, "etcd") != 0) {
        fprintf(stderr, "actorc-bench-scale: ACTORC_SCALE_ONLY must be static or etcd\n");
        return 1;
    }
    /* A static run that fails (a loaded machine) still lets the etcd run
     * go on; the exit status says it failed. */
    int rc = only && strcmp(only, "etcd") == 0 ? 0 : run("static", NULL, n);
    if (only && strcmp(only, "static") == 0)
        return rc;
    if (!bench_etcd_start(&etcd)) {
        printf("INFO scale etcd skipped: no etcd binary, or it did not start\n");
        return rc;
    }
    int etcd_rc = run("etcd", etcd.url, n);
    bench_etcd_stop(&etcd);
    return rc ? rc : etcd_rc;
}
