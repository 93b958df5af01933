/*
 * actorc-members-load: many lightweight members against one real etcd on
 * loopback, through the etcd client the cluster's provider uses (a
 * keeper per member: a lease kept alive every third of its TTL with the
 * member's key under it; a watcher per member: the whole prefix listed,
 * then streamed), as a cluster of that many nodes would load it.
 *
 *   actorc-members-load [--shared] [--thread-per-lease] [--ttl S] [N...]
 *                                  one run per N (default 1000), each
 *                                  against a fresh etcd; --shared: one
 *                                  watch per process, its events counted
 *                                  for each member of the process (what
 *                                  a shared watch would give them), and
 *                                  four keepers per process for all its
 *                                  leases (ac__etcd_keepers: two threads
 *                                  and two connections each, kept open,
 *                                  keep-alives sixteen to a request);
 *                                  --thread-per-lease: with --shared, a
 *                                  keeper thread per lease as before (a
 *                                  new connection per keep-alive), for
 *                                  comparison; --ttl: the lease TTL
 *                                  (default 5 s, the provider's)
 *   actorc-members-load worker ... a process of members (started by the
 *                                  first; not for people)
 *
 * N members are spread over processes of at most PER_PROC members each.
 * Once every watcher has listed the N, a churn process registers JOINS
 * members, one at a time, each key's value the moment its registration
 * began; every watcher reports when it sees each. Then the churn
 * process is killed with SIGKILL: its leases expire (TTL 5 s, the provider's default) and etcd
 * deletes the keys, and every watcher reports when it sees each go. It
 * prints, per N:
 *
 *   RESULT members_load join_seen_p50_ms_<N> / join_seen_p99_ms_<N>
 *       a join (registration begun) to its PUT at the last of the N
 *       watchers; p50 and p99 over the joins
 *   RESULT members_load vanish_ms_<N>   kill -9 to the last watcher seeing
 *       the last key go (lease TTL plus etcd's expiry sweep)
 *   RESULT members_load etcd_cpu_pct_<N>  etcd's CPU, % of one core, over
 *       the steady state (after the listing, keep-alives and streams only)
 *   RESULT members_load etcd_rss_kb_<N>  etcd's resident set then
 *   RESULT members_load keepalives_per_s_<N>  lease keep-alives etcd
 *       received a second over the steady state, from its own metrics
 *       (grpc_server_msg_received_total of LeaseKeepAlive; N / (TTL / 3)
 *       expected: INFO keepalives_expected); the keepers' own count of
 *       those answered, and the HTTP requests they sent, on INFO lines
 *   INFO members_load ... client threads (every worker's) and TCP
 *       connections to etcd (established, counted in /proc/net/tcp)
 *   INFO members_load ... setup time, threads, what failed
 *
 * A run that cannot start its members (threads, descriptors, etcd
 * refusing streams) says where it stopped on an INFO line and goes on to
 * the next N. Every process it starts is ended by pid (also on SIGINT,
 * SIGTERM and its own alarm), and every wait is bounded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "bench_etcd.h"
#include "cluster/etcd.h"
#include "rt_proc.h"

#define PER_PROC 500
#define DEFAULT_TTL_S 5 /* the provider's default */
#define JOINS 20
#define PREFIX "/load/"
#define MAX_PROCS 100
/* Keepers of a process with --shared: registering is a raft write (and
 * an fsync) per grant and per put, one at a time per keepers' registrar;
 * a few let etcd batch them. Keep-alives would need one. */
#define KEEPERS_PER_PROC 4

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

/* ---- a worker: members with a keeper and a watcher each ---------------------- */

/* What the watchers of this process saw of each churn key: how many saw
 * it put and gone, and when the last did. */
typedef struct churn_seen {
    atomic_int puts, dels;
    _Atomic double last_put_ms, last_del_ms;
    _Atomic double began_ms; /* from the value */
} churn_seen;

static churn_seen churn[JOINS];
/* The member keys this process's watchers hold now (by the member's
 * number), and how many: a view is complete when it holds all N. */
static atomic_uchar present[PER_PROC * MAX_PROCS];
static atomic_long present_keys;
static int ttl_s = DEFAULT_TTL_S;
static atomic_long listed_keys; /* PUTs of member keys seen, all watchers */
/* Members one event stands for: 1, or with a shared watch every member
 * of the process. */
static int fanout = 1;
static bool shared_watch; /* set before the watch starts */

static void atomic_max(_Atomic double *a, double v)
{
    double cur = atomic_load(a);
    while (cur < v && !atomic_compare_exchange_weak(a, &cur, v)) {
    }
}

static void on_event(const ac__etcd_event *ev, void *user)
{
    (void)user;
    double t = now_ms();
    int j;
    if (sscanf(ev->key, PREFIX "j/%d", &j) == 1 && j >= 0 && j < JOINS) {
        if (ev->kind == AC__ETCD_PUT) {
            double began = ev->value ? atof(ev->value) : 0;
            atomic_store(&churn[j].began_ms, began);
            atomic_max(&churn[j].last_put_ms, t);
            atomic_fetch_add(&churn[j].puts, 1);
        } else {
            atomic_max(&churn[j].last_del_ms, t);
            atomic_fetch_add(&churn[j].dels, 1);
        }
    } else if (sscanf(ev->key, PREFIX "m/%d", &j) == 1 && j >= 0 && j < PER_PROC * MAX_PROCS) {
        bool put = ev->kind == AC__ETCD_PUT;
        if (put)
            atomic_fetch_add(&listed_keys, 1);
        if (shared_watch && atomic_exchange(&present[j], put) != put)
            atomic_fetch_add(&present_keys, put ? 1 : -1);
    }
}

static int worker_main(int argc, char **argv)
{
    const char *url = NULL;
    int first = 0, count = 0, churner = 0, shared = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--etcd") == 0)
            url = argv[i + 1];
        else if (strcmp(argv[i], "--first") == 0)
            first = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--churn") == 0)
            churner = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--shared") == 0)
            shared = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ttl") == 0)
            ttl_s = atoi(argv[i + 1]);
    }
    bool pooled = shared == 1; /* 2: shared watch, a keeper thread per lease */
    shared_watch = shared != 0;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char *eps[] = {url};
    ac__etcd_options eo = {.request_timeout_ms = 10000, .connect_timeout_ms = 5000,
                           .backoff_max_ms = 2000};
    ac__etcd *e = url ? ac__etcd_open(eps, 1, &eo) : NULL;
    if (!e) {
        fprintf(stderr, "members worker: %s\n", ac_last_error());
        return 1;
    }
    printf("READY worker-%d 0\n", first);
    fflush(stdout);
    if (churner) { /* joins one at a time, then waits for its SIGKILL */
        ac__etcd_reg *reg[JOINS];
        for (int j = 0; j < JOINS; j++) {
            char key[64], val[32];
            snprintf(key, sizeof key, PREFIX "j/%d", j);
            snprintf(val, sizeof val, "%.3f", now_ms());
            if (ac__etcd_register(e, key, val, strlen(val), ttl_s, &reg[j]) != AC_OK)
                fprintf(stderr, "members churn: %s\n", ac_last_error());
            sleep_ms(200);
        }
        printf("JOINED\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    ac__etcd_reg **regs = calloc((size_t)count, sizeof *regs);
    ac__etcd_watch **ws = calloc((size_t)count, sizeof *ws);
    ac__etcd_keepers *pool[KEEPERS_PER_PROC] = {0};
    ac__etcd_keepers *keepers = NULL; /* the first: whether there are any */
    for (int i = 0; pooled && i < KEEPERS_PER_PROC; i++)
        if (ac__etcd_keepers_start(e, &pool[i]) != AC_OK) {
            printf("FAILED keepers: %s\n", ac_last_error());
            count = 0;
        }
    keepers = pool[0];
    int started = 0;
    for (int i = 0; i < count; i++) {
        char key[64];
        size_t id;
        snprintf(key, sizeof key, PREFIX "m/%d", first + i);
        if ((pooled ? ac__etcd_keepers_add(pool[i % KEEPERS_PER_PROC], key, "m", 1, ttl_s, &id)
                    : ac__etcd_register(e, key, "m", 1, ttl_s, &regs[i])) != AC_OK ||
            ((!shared || i == 0) &&
             ac__etcd_watch_prefix(e, PREFIX, on_event, NULL, &ws[i]) != AC_OK)) {
            printf("FAILED member %d: %s\n", first + i, ac_last_error());
            fflush(stdout);
            break;
        }
        started++;
    }
    if (shared)
        fanout = started; /* each event the shared watch sees, every member sees */
    printf("STARTED %d\n", started);
    fflush(stdout);
    /* Commands: L (keys listed so far), C (what was seen of the churn),
     * Q or the input's end (stop). */
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'R') { /* keys registered (in etcd, their lease kept alive) */
            int registered = 0;
            ac__etcd_reg_info ri;
            for (int i = 0; i < started; i++)
                if ((keepers ? ac__etcd_keepers_status(pool[i % KEEPERS_PER_PROC],
                                                       (size_t)(i / KEEPERS_PER_PROC), &ri)
                             : ac__etcd_reg_status(regs[i], &ri)) == AC_OK &&
                    ri.state == AC__ETCD_REG_REGISTERED)
                    registered++;
            printf("R %d\n", registered);
        } else if (line[0] == 'L') {
            /* With a shared watch: the keys its view holds, once for each
             * member; else every PUT its watchers saw (a view each). */
            printf("L %ld\n", shared ? atomic_load(&present_keys) * started
                                      : atomic_load(&listed_keys));
        } else if (line[0] == 'K') { /* keep-alives answered, requests sent */
            unsigned long long k = 0, req = 0;
            ac__etcd_reg_info ri;
            ac__etcd_keepers_stats ks;
            for (int i = 0; i < started && !keepers; i++)
                if (ac__etcd_reg_status(regs[i], &ri) == AC_OK)
                    k += ri.keepalives;
            if (!keepers)
                req = k; /* one request each */
            for (int i = 0; keepers && i < KEEPERS_PER_PROC; i++)
                if (ac__etcd_keepers_counts(pool[i], &ks) == AC_OK) {
                    k += ks.keepalives;
                    req += ks.requests;
                }
            unsigned long long fails = 0, lost = 0;
            char why[200] = "";
            for (int i = 0; keepers && i < KEEPERS_PER_PROC; i++)
                if (ac__etcd_keepers_counts(pool[i], &ks) == AC_OK) {
                    fails += ks.failures;
                    lost += ks.lost;
                    if (ks.last_failure[0])
                        snprintf(why, sizeof why, "%s", ks.last_failure);
                }
            printf("K %llu %llu %llu %llu %s\n", k, req, fails, lost, why[0] ? why : "-");
        } else if (line[0] == 'C') {
            for (int j = 0; j < JOINS; j++)
                printf("C %d %d %d %.3f %.3f %.3f\n", j, atomic_load(&churn[j].puts) * fanout,
                       atomic_load(&churn[j].dels) * fanout, atomic_load(&churn[j].began_ms),
                       atomic_load(&churn[j].last_put_ms), atomic_load(&churn[j].last_del_ms));
            int watching = 0;
            unsigned long long failures = 0;
            for (int i = 0; i < started; i++) {
                ac__etcd_watch_info wi;
                if (ws[i] && ac__etcd_watch_status(ws[i], &wi) == AC_OK) {
                    watching += wi.state == AC__ETCD_WATCH_WATCHING;
                    failures += wi.failures;
                }
            }
            printf("W %d %llu\n", watching, failures);
            printf("C end\n");
        } else if (line[0] == 'Q') {
            break;
        }
        fflush(stdout);
    }
    for (int i = 0; i < started; i++)
        ac__etcd_watch_stop(ws[i]); /* NULL with a shared watch: a no-op */
    for (int i = 0; i < started; i++)
        ac__etcd_unregister(regs[i]); /* NULL with the keepers: a no-op */
    for (int i = 0; i < KEEPERS_PER_PROC; i++)
        ac__etcd_keepers_stop(pool[i]);
    ac__etcd_close(e);
    free(ws);
    free(regs);
    return 0;
}

/* ---- the run ------------------------------------------------------------------ */

static rt_proc procs[MAX_PROCS];
static int nprocs;

/* One line from p (timeout ms), or false. */
static bool read_line(rt_proc *p, char *line, size_t cap, int ms)
{
    size_t len = 0;
    double end = now_ms() + ms;
    while (len + 1 < cap) {
        struct pollfd pf = {.fd = p->out_fd, .events = POLLIN};
        int left = (int)(end - now_ms());
        if (left <= 0 || poll(&pf, 1, left) <= 0 || read(p->out_fd, line + len, 1) != 1)
            return false;
        if (line[len] == '\n') {
            line[len] = '\0';
            return true;
        }
        len++;
    }
    line[len] = '\0';
    return true;
}

static void say_all(const char *cmd)
{
    for (int i = 0; i < nprocs; i++)
        if (write(procs[i].in_fd, cmd, strlen(cmd)) < 0)
            fprintf(stderr, "members load: a worker is gone\n");
}

/* The sum of every worker's answer to cmd ("L\n": keys listed, "R\n":
 * keys registered); answers to earlier commands a loaded worker gave
 * late are skipped. */
static long count_total(const char *cmd)
{
    say_all(cmd);
    long total = 0;
    char fmt[8];
    snprintf(fmt, sizeof fmt, "%c %%ld", cmd[0]);
    for (int i = 0; i < nprocs; i++) {
        char line[128];
        long n;
        for (int skip = 0; skip < 64 && read_line(&procs[i], line, sizeof line, 10000); skip++)
            if (sscanf(line, fmt, &n) == 1) {
                total += n;
                break;
            }
    }
    return total;
}

/* What the workers' keepers counted so far (their K answers, summed). */
typedef struct keeper_counts {
    unsigned long long keepalives, requests, failures, lost;
    int answered; /* workers that answered */
    char why[200]; /* a failure's reason, "-" when none */
} keeper_counts;

static void keepalives_total(keeper_counts *c)
{
    say_all("K\n");
    memset(c, 0, sizeof *c);
    snprintf(c->why, sizeof c->why, "-");
    for (int i = 0; i < nprocs; i++) {
        char line[512], why[200];
        unsigned long long n, r, f, l;
        /* Past answers to earlier commands a loaded worker gave late. */
        for (int skip = 0; skip < 64 && read_line(&procs[i], line, sizeof line, 10000); skip++)
            if (sscanf(line, "K %llu %llu %llu %llu %199[^\n]", &n, &r, &f, &l, why) == 5) {
                c->keepalives += n;
                c->requests += r;
                c->failures += f;
                c->lost += l;
                c->answered++;
                if (strcmp(why, "-") != 0)
                    snprintf(c->why, sizeof c->why, "%s", why);
                break;
            }
    }
}

/* etcd's own count of the keep-alive requests it received (its metrics:
 * grpc_server_msg_received_total of LeaseKeepAlive); -1 when unread. */
static double etcd_keepalives_received(const char *url)
{
    int port = 0;
    if (sscanf(url, "http://127.0.0.1:%d", &port) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static char buf[8 << 20];
    size_t len = 0;
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        ssize_t got;
        while (len + 1 < sizeof buf && (got = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
            len += (size_t)got;
    }
    if (fd >= 0)
        close(fd);
    buf[len] = '\0';
    const char *line = strstr(buf, "grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\"");
    const char *value = line ? strchr(line, '}') : NULL;
    return value ? strtod(value + 1, NULL) : -1;
}

/* Threads of every worker, from /proc. */
static long worker_threads(void)
{
    long total = 0;
    for (int i = 0; i < nprocs; i++) {
        char path[64], line[128];
        snprintf(path, sizeof path, "/proc/%d/status", (int)procs[i].pid);
        FILE *f = fopen(path, "r");
        long n;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "Threads: %ld", &n) == 1)
                total += n;
        if (f)
            fclose(f);
    }
    return total;
}

/* TCP connections established to etcd's client port (/proc/net/tcp:
 * each appears once with the port as its local end). */
static int etcd_connections(const char *url)
{
    int port = 0, count = 0;
    if (sscanf(url, "http://127.0.0.1:%d", &port) != 1)
        return -1;
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned local_port, state;
        if (sscanf(line, " %*d: %*8[0-9A-Fa-f]:%x %*8[0-9A-Fa-f]:%*x %x", &local_port,
                   &state) == 2 &&
            (int)local_port == port && state == 1 /* ESTABLISHED */)
            count++;
    }
    if (f)
        fclose(f);
    return count;
}

typedef struct churn_total {
    int watching;
    unsigned long long watch_failures;
    int puts[JOINS], dels[JOINS];
    double began[JOINS], last_put[JOINS], last_del[JOINS];
} churn_total;

static void churn_read(churn_total *t)
{
    memset(t, 0, sizeof *t);
    say_all("C\n");
    for (int i = 0; i < nprocs; i++) {
        char line[256];
        while (read_line(&procs[i], line, sizeof line, 10000) && strcmp(line, "C end") != 0) {
            int j, pu, de, w;
            double b, lp, ld;
            unsigned long long wf;
            if (sscanf(line, "W %d %llu", &w, &wf) == 2) {
                t->watching += w;
                t->watch_failures += wf;
                continue;
            }
            if (sscanf(line, "C %d %d %d %lf %lf %lf", &j, &pu, &de, &b, &lp, &ld) != 6 || j < 0 ||
                j >= JOINS)
                continue;
            t->puts[j] += pu;
            t->dels[j] += de;
            if (b > 0)
                t->began[j] = b;
            if (lp > t->last_put[j])
                t->last_put[j] = lp;
            if (ld > t->last_del[j])
                t->last_del[j] = ld;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void end_all(void)
{
    for (int i = 0; i < nprocs; i++)
        if (write(procs[i].in_fd, "Q\n", 2) < 0) {
        }
    for (int i = 0; i < nprocs; i++)
        rt_end(&procs[i], 0);
    nprocs = 0;
}

/* shared: 0 a watch per member, 1 one per process with the process's
 * keepers, 2 one per process with a keeper thread per lease. */
static bool run(int n, int shared)
{
    const char *tag = shared == 1 ? "_shared" : shared == 2 ? "_shared_threads" : "";
    bench_etcd etcd;
    if (!bench_etcd_start(&etcd)) {
        printf("INFO members_load skipped: no etcd binary, or it did not start\n");
        return false;
    }
    bool ok = false;
    double t0 = now_ms();
    int started = 0;
    for (int first = 0; first < n && nprocs < MAX_PROCS; first += PER_PROC) {
        char f[16], c[16];
        snprintf(f, sizeof f, "%d", first);
        snprintf(c, sizeof c, "%d", n - first < PER_PROC ? n - first : PER_PROC);
        char sh[8], ttl[16];
        snprintf(sh, sizeof sh, "%d", shared);
        snprintf(ttl, sizeof ttl, "%d", ttl_s);
        const char *args[] = {"worker", "--etcd", etcd.url, "--first", f, "--count", c,
                              "--shared", sh, "--ttl", ttl, NULL};
        rt_proc *p = &procs[nprocs];
        if (!rt_spawn(p, rt_self(), args))
            break;
        nprocs++;
        char line[512];
        int got = 0;
        while (read_line(p, line, sizeof line, 120000)) {
            if (sscanf(line, "STARTED %d", &got) == 1)
                break;
            printf("INFO members_load n=%d %s\n", n, line);
        }
        started += got;
    }
    printf("INFO members_load n=%d members started %d in %.0f ms, %d processes\n", n, started,
           now_ms() - t0, nprocs);
    fflush(stdout);
    double end = now_ms() + 120000;
    long registered = 0;
    while ((registered = count_total("R\n")) < started && now_ms() < end)
        sleep_ms(250);
    printf("INFO members_load n=%d registered %ld of %d in %.0f ms\n", n, registered, started,
           now_ms() - t0);
    fflush(stdout);
    long want = (long)started * started;
    end = now_ms() + 120000;
    long have = 0;
    while ((have = count_total("L\n")) < want && now_ms() < end)
        sleep_ms(500);
    printf("INFO members_load n=%d listed %ld of %ld member keys across the watchers in %.0f ms\n",
           n, have, want, now_ms() - t0);
    fflush(stdout);
    if (started == 0)
        goto out; /* said above; the churn still measures the streams that are open */
    /* The steady state: keep-alives and open streams only, over two
     * keep-alive intervals at least. */
    keeper_counts kc0, kc1;
    keepalives_total(&kc0);
    double e0 = etcd_keepalives_received(etcd.url);
    double c0 = bench_proc_cpu_s(etcd.pid), w0 = now_ms();
    int window_ms = ttl_s * 2000 / 3 > 5000 ? ttl_s * 2000 / 3 : 5000;
    sleep_ms(window_ms);
    double secs = (now_ms() - w0) / 1e3;
    double cpu = (bench_proc_cpu_s(etcd.pid) - c0) / secs * 100.0;
    double e1 = etcd_keepalives_received(etcd.url);
    double esecs = (now_ms() - w0) / 1e3;
    keepalives_total(&kc1);
    double ksecs = (now_ms() - w0) / 1e3;
    long rss = bench_proc_rss_kb(etcd.pid);
    long threads = worker_threads();
    int conns = etcd_connections(etcd.url);
    double keepalives = e0 >= 0 && e1 >= e0 ? (e1 - e0) / esecs : -1;
    printf("INFO members_load n=%d%s steady state over %.1f s: the keepers counted %.0f "
           "keep-alives answered a second and sent %.0f HTTP requests a second (workers "
           "answering: %d and %d of %d); %ld client threads, %d TCP connections to etcd's "
           "port (its gateway's own included)\n",
           n, tag, secs, (double)(kc1.keepalives - kc0.keepalives) / ksecs,
           (double)(kc1.requests - kc0.requests) / ksecs, kc0.answered, kc1.answered, nprocs,
           threads, conns);
    printf("INFO members_load n=%d%s keepers so far: %llu failed attempts, %llu leases lost "
           "and granted again; last failure: %s\n", n, tag, kc1.failures, kc1.lost, kc1.why);
    fflush(stdout);

    rt_proc churner;
    const char *cargs[] = {"worker", "--etcd", etcd.url, "--churn", "1", NULL};
    if (!rt_spawn(&churner, rt_self(), cargs))
        goto out;
    char line[128];
    bool joined = read_line(&churner, line, sizeof line, 60000);
    churn_total ct;
    end = now_ms() + 60000;
    bool all_put;
    do {
        sleep_ms(200);
        churn_read(&ct);
        all_put = true;
        for (int j = 0; j < JOINS; j++)
            all_put = all_put && ct.puts[j] >= started;
    } while (!all_put && now_ms() < end);
    double kill_ms = now_ms();
    rt_end(&churner, SIGKILL);
    bool all_gone;
    end = now_ms() + 30000;
    do {
        sleep_ms(100);
        churn_read(&ct);
        all_gone = true;
        for (int j = 0; j < JOINS; j++)
            all_gone = all_gone && ct.dels[j] >= started;
    } while (!all_gone && now_ms() < end);
    int least = started;
    for (int j = 0; j < JOINS; j++)
        least = ct.puts[j] < least ? ct.puts[j] : least;
    printf("INFO members_load n=%d%s churn: joined %d, every join seen by %d of %d watchers at "
           "least, %d of %d streams open, %llu stream failures\n",
           n, tag, joined, least, started, ct.watching, started, ct.watch_failures);
    if (!joined || least == 0)
        goto out;
    double lat[JOINS], vanish = 0;
    for (int j = 0; j < JOINS; j++) {
        lat[j] = ct.last_put[j] - ct.began[j];
        if (ct.last_del[j] - kill_ms > vanish)
            vanish = ct.last_del[j] - kill_ms;
    }
    qsort(lat, JOINS, sizeof *lat, cmp_double);
    /* RESULT when every watcher saw every join and every key go; else the
     * same figures over the watchers that did, on INFO lines. */
    const char *kind = all_put && all_gone ? "RESULT" : "INFO partial";
    printf("%s members_load join_seen_p50_ms_%d%s %.1f ms\n", kind, n, tag, lat[JOINS / 2]);
    printf("%s members_load join_seen_p99_ms_%d%s %.1f ms\n", kind, n, tag, lat[JOINS - 1]);
    printf("%s members_load vanish_ms_%d%s %.1f ms\n", kind, n, tag, vanish);
    printf("RESULT members_load etcd_cpu_pct_%d%s %.1f %%\n", n, tag, cpu);
    printf("RESULT members_load etcd_rss_kb_%d%s %ld kB\n", n, tag, rss);
    printf("RESULT members_load keepalives_per_s_%d%s %.0f /s\n", n, tag, keepalives);
    printf("INFO members_load keepalives_expected_%d%s %.0f /s (N / (TTL / 3), TTL %d s)\n", n,
           tag, n / (ttl_s / 3.0), ttl_s);
    fflush(stdout);
    ok = true;
out:
    end_all();
    bench_etcd_stop(&etcd);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "worker") == 0)
        return worker_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    alarm(1500); /* a bound on the whole run; rt_proc ends the workers on SIGALRM */
    int shared = 0, from = 1;
    for (; from < argc && strncmp(argv[from], "--", 2) == 0; from++) {
        if (strcmp(argv[from], "--shared") == 0)
            shared = shared ? shared : 1;
        else if (strcmp(argv[from], "--thread-per-lease") == 0)
            shared = 2;
        else if (strcmp(argv[from], "--ttl") == 0 && from + 1 < argc)
            ttl_s = atoi(argv[++from]);
        else
            break;
    }
    if (ttl_s < 2 || ttl_s > 3600 || (from < argc && strncmp(argv[from], "--", 2) == 0)) {
        fprintf(stderr, "usage: actorc-members-load [--shared] [--thread-per-lease] "
                "[--ttl 2..3600] [N...]\n");
        return 1;
    }
    for (int i = from; i < argc || i == from; i++) {
        int n = argc > from ? atoi(argv[i]) : 1000;
        if (n < 1 || n > PER_PROC * MAX_PROCS) {
            fprintf(stderr, "actorc-members-load: N must be 1 to %d\n", PER_PROC * MAX_PROCS);
            return 1;
        }
        run(n, shared); /* a run that stops says so on an INFO line: the next N still runs */
        if (argc <= from)
            break;
    }
    return 0;
}
