/*
 * actorc-hedge: runs the same simulated load through several routing
 * strategies — a round-robin pool, a random pool, a smallest-mailbox pool,
 * the scatter/gather-first-completed router, and the hedged router with a
 * fixed delay and with an adaptive one (the p95 of its own observed
 * latency) — over replicas whose latency has a heavy tail, and shows side
 * by side what each returns: the latency percentiles, the failures and
 * the work done per request.
 *
 * With --breakers, every strategy runs a second time with a circuit
 * breaker per replica (ac_routee_options.breaker): a dead replica's
 * breaker opens after a few timeouts, and from then on the pool routes
 * around it and the scatter asks only the live replicas, but for one probe
 * now and then.
 *
 * The driver keeps `concurrency` asks in flight from outside the actor
 * system: each ask's completion callback records the outcome and fires the
 * next ask, so the load is closed-loop and identical for every strategy.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_args.h"
#include "hedge.h"
#include "model_options.h"

typedef struct driver {
    ac_ref *target;
    int64_t ask_timeout_ms;
    size_t total;
    atomic_size_t issued, done, ok, timeouts, errors;
    atomic_size_t answered, failed; /* the next free place in each array */
    int64_t *latency_us, *failed_us;
    pthread_mutex_t lock;
    pthread_cond_t all_done;
} driver;

typedef struct request {
    driver *d;
    ac_future *future;
    uint64_t start_ns;
} request;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the load driver -------------------------------------------------- */

static void issue_next(driver *d);

static bool is_one_timeout(const ac_error *e)
{
    return ac_error_is(e, AC_ASK_TIMEOUT_ERROR) || ac_error_is(e, AC_CIRCUIT_BREAKER_TIMEOUT_ERROR);
}

/* A timeout, or a scatter whose every member timed out (by the scatter's
 * deadline or a breaker's call timeout). */
static bool is_timeout(const ac_error *e)
{
    size_t n = ac_error_member_count(e);
    if (!ac_error_is(e, AC_AGGREGATE_ERROR) || n == 0)
        return is_one_timeout(e);
    for (size_t i = 0; i < n; i++)
        if (!is_one_timeout(ac_error_member(e, i)))
            return false;
    return true;
}

/* Every outcome is a latency: a failure's is the time its error came,
 * which for a timeout is its deadline. */
static void record(driver *d, const ac_error *error, int64_t us)
{
    d->latency_us[atomic_fetch_add(&d->answered, 1)] = us;
    if (!error) {
        atomic_fetch_add(&d->ok, 1);
        return;
    }
    d->failed_us[atomic_fetch_add(&d->failed, 1)] = us;
    atomic_fetch_add(is_timeout(error) ? &d->timeouts : &d->errors, 1);
}

static void on_answer(const ac_answer *a, void *user)
{
    request *rq = user;
    driver *d = rq->d;
    record(d, a->error, (int64_t)((now_ns() - rq->start_ns) / 1000));
    ac_future_release(rq->future);
    free(rq);
    issue_next(d);
    if (atomic_fetch_add(&d->done, 1) + 1 == d->total) {
        pthread_mutex_lock(&d->lock);
        pthread_cond_signal(&d->all_done);
        pthread_mutex_unlock(&d->lock);
    }
}

static void issue_next(driver *d)
{
    size_t k = atomic_fetch_add(&d->issued, 1);
    if (k >= d->total)
        return;
    request *rq = malloc(sizeof *rq);
    if (!rq) {
        fprintf(stderr, "actorc-hedge: out of memory\n");
        exit(1);
    }
    rq->d = d;
    rq->start_ns = now_ns();
    char key[32];
    snprintf(key, sizeof key, "user-%zu", k);
    rq->future = ac_ask(d->target, ac_msg_str_new(key), d->ask_timeout_ms);
    if (!rq->future) {
        fprintf(stderr, "actorc-hedge: ask failed: %s\n", ac_last_error());
        exit(1);
    }
    ac_future_on_complete(rq->future, on_answer, rq);
}

static void progress(const char *name, size_t done, size_t total, bool final)
{
    int width = 30, filled = (int)(done * (size_t)width / (total ? total : 1));
    fprintf(stderr, "\r  %-20s [%.*s%*s] %3zu%%%s", name, filled,
            "##############################", width - filled, "", done * 100 / (total ? total : 1),
            final ? "\n" : "");
}

static void wait_done(driver *d, const char *name, bool show)
{
    pthread_mutex_lock(&d->lock);
    while (atomic_load(&d->done) < d->total) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&d->all_done, &d->lock, &ts);
        if (show)
            progress(name, atomic_load(&d->done), d->total, false);
    }
    pthread_mutex_unlock(&d->lock);
    if (show)
        progress(name, d->total, d->total, true);
}

static uint64_t calls_so_far(replica_model *m, const options *o)
{
    return o->count_calls ? o->count_calls(o->count_user) : atomic_load(&m->calls);
}

/* Run one strategy's load through `props` (consumed), spawned in `sys`;
 * 0, or -1 when it could not start. */
static int run_strategy(ac_system *sys, replica_model *m, const options *o, const char *name,
                        ac_props *props, int64_t ask_timeout_ms, run_result *out)
{
    ac_ref *pool = ac_spawn(sys, props, name);
    if (!pool) {
        fprintf(stderr, "actorc-hedge: cannot start %s: %s\n", name, ac_last_error());
        return -1;
    }
    if (o->await_routees && !o->await_routees(pool, o->await_user)) {
        fprintf(stderr, "actorc-hedge: %s did not reach every replica in time\n", name);
        ac_stop(pool);
        ac_ref_release(pool);
        return -1;
    }
    driver d = {.target = pool, .ask_timeout_ms = ask_timeout_ms, .total = o->requests};
    d.latency_us = calloc(o->requests, sizeof *d.latency_us);
    d.failed_us = calloc(o->requests, sizeof *d.failed_us);
    if (!d.latency_us || !d.failed_us) {
        fprintf(stderr, "actorc-hedge: out of memory\n");
        exit(1);
    }
    pthread_mutex_init(&d.lock, NULL);
    pthread_cond_init(&d.all_done, NULL);
    uint64_t calls_before = calls_so_far(m, o);
    uint64_t t0 = now_ns();
    size_t first = o->concurrency < o->requests ? o->concurrency : o->requests;
    for (size_t i = 0; i < first; i++)
        issue_next(&d);
    wait_done(&d, name, !o->quiet && isatty(STDERR_FILENO));
    double seconds = (double)(now_ns() - t0) / 1e9;
    ac_stop(pool);
    ac_ref_release(pool);
    pthread_mutex_destroy(&d.lock);
    pthread_cond_destroy(&d.all_done);
    *out = (run_result){
        .latency_us = d.latency_us,
        .failed_us = d.failed_us,
        .ok = atomic_load(&d.ok),
        .timeouts = atomic_load(&d.timeouts),
        .errors = atomic_load(&d.errors),
        .requests = o->requests,
        .seconds = seconds,
        .calls_per_request = (double)(calls_so_far(m, o) - calls_before) / (double)o->requests,
    };
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
}

size_t run_pass(ac_system *sys, replica_model *m, const options *o, bool breakers,
                router_factory make, void *user, run_result *runs, size_t *n)
{
    plan plans[STRATEGIES];
    plans_make(o, breakers, plans);
    for (size_t i = 0; i < STRATEGIES; i++) {
        ac_props *props = make(&plans[i], user);
        if (!props)
            fprintf(stderr, "actorc-hedge: cannot make %s: %s\n", plans[i].name,
                    ac_last_error());
        else if (run_strategy(sys, m, o, plans[i].name, props, plans[i].ask_timeout_ms,
                              &runs[*n]) == 0)
            (*n)++;
    }
    return STRATEGIES;
}

/* ---- flags ------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: actorc-hedge [options]\n"
            "\n"
            "Runs one simulated load through a round-robin pool, a random pool, a\n"
            "smallest-mailbox pool, the scatter/gather-first-completed router and the\n"
            "hedged router (a fixed delay, and an adaptive one), over replicas with a\n"
            "heavy latency tail, and compares what each returns.\n"
            "\n"
            "  --requests N       requests per strategy (default 20000)\n"
            "  --concurrency C    requests in flight (default 32)\n"
            "  --replicas N       replicas per pool (default 3)\n"
            MODEL_USAGE
            "  --dead-replica K   replica K (1..N) never answers (default: none); with\n"
            "                     --nodes, node K's replica (it stays a member)\n"
            "  --timeout-ms T     deadline of a request (default 1000)\n"
            "  --hedge-delay-ms X the hedged router's fixed delay (default 10)\n"
            "  --hedge-pct P      the adaptive hedged router's percentile of observed\n"
            "                     latency (default 95)\n"
            "  --svg PATH         where to write the latency CDF (default actorc-hedge.svg)\n"
            "  --metrics-port N   serve Prometheus metrics on 127.0.0.1:N while running,\n"
            "                     and the observer page (live routers, hedges,\n"
            "                     breakers, members) at http://127.0.0.1:N/\n"
            "  --breakers         run every strategy again with a circuit breaker per\n"
            "                     replica (5 failures open it; probe after 1 s, backing\n"
            "                     off to 10 s); with --nodes, one per member in front of\n"
            "                     each cluster router\n"
            "  --seed N           random seed (default 42)\n"
            "  --nodes N          run the replicas as N actorc-node processes on this\n"
            "                     machine, joined in one cluster over loopback, and\n"
            "                     route to them with the cluster routers of the same\n"
            "                     strategies from a client node\n"
            "  --slow-link K:D    with --nodes, the link to node K delays every frame\n"
            "                     by D each way, e.g. 1:20ms±5ms (or 1:20ms+-5ms): a\n"
            "                     delay with jitter, never reordered (repeatable)\n"
            "  --lossy-link K:P   with --nodes, the link to node K drops a share P of\n"
            "                     frames each way, e.g. 2:1%% (repeatable; the link's\n"
            "                     items may be combined: 2:drop=1%%,delay=5ms)\n"
            "  --node-program P   the actorc-node to run (default: the one built beside\n"
            "                     this program)\n"
            "  --quiet            no progress bar\n"
            "  --help             this text\n");
}

static bool parse_size(const char *s, uint64_t lo, uint64_t hi, size_t *out)
{
    uint64_t v;
    if (!app_parse_count(s, lo, hi, &v))
        return false;
    *out = (size_t)v;
    return true;
}

/* --slow-link / --lossy-link K:<fault>: false for a bad value (said why). */
static bool parse_link(const char *arg, options *o)
{
    char *end;
    long k = strtol(arg, &end, 10);
    if (end == arg || *end != ':' || k < 1 || k > 16 || o->link_count == 16)
        return false;
    ac_link_fault f;
    if (ac_node_link_fault_parse(end + 1, &f) != AC_OK) {
        fprintf(stderr, "actorc-hedge: %s\n", ac_last_error());
        return false;
    }
    int i = o->link_count++;
    o->link_node[i] = (int)k;
    o->link_fault[i] = f;
    snprintf(o->link_text[i], sizeof o->link_text[i], "%s", arg);
    return true;
}

/* One of the demo's own options; false for a bad value. */
static bool apply_option(int c, const char *arg, options *o, replica_model *m)
{
    uint64_t v;
    double x;
    switch (c) {
    case 'r': return parse_size(arg, 1, 100000000, &o->requests);
    case 'c': return parse_size(arg, 1, 1000000, &o->concurrency);
    case 'n': return app_parse_int(arg, 1, MODEL_MAX_REPLICAS, &o->replicas);
    case 'T': return app_parse_count(arg, 1, 3600000, &v) && ((o->timeout_ms = (int64_t)v), true);
    case 'o': o->svg = arg; return true;
    case 'p': return app_parse_int(arg, 0, 65535, &o->metrics_port);
    case 'S': return app_parse_count(arg, 0, UINT64_MAX, &m->seed);
    case 'D':
        return app_parse_double(arg, 0.001, 60000, "ms", &x) &&
               ((o->hedge_delay_us = llround(x * 1000)), true);
    case 'P': return app_parse_double(arg, 0.1, 99.9, "%", &o->hedge_percentile);
    case 'N': return app_parse_int(arg, 1, 16, &o->nodes);
    case 'X': o->node_program = arg; return true;
    case 'L': return parse_link(arg, o);
    default: return model_apply(c, arg, m);
    }
}

static int usage_error(const char *fmt, ...) AC_PRINTF(1, 2);

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "actorc-hedge: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n\n");
    va_end(ap);
    usage(stderr);
    return 2;
}

/* What the options say together: the hedge delay within the deadline,
 * the dead replica among the replicas (or nodes). */
static int check_options(const options *o, const replica_model *m)
{
    if (o->hedge_delay_us >= o->timeout_ms * 1000)
        return usage_error("--hedge-delay-ms must be below --timeout-ms");
    int replicas = o->nodes > 0 ? o->nodes : o->replicas;
    if (m->dead_replica > replicas)
        return usage_error("--dead-replica %d but only %d %s", m->dead_replica, replicas,
                           o->nodes > 0 ? "nodes" : "replicas");
    for (int i = 0; i < o->link_count; i++)
        if (o->link_node[i] > o->nodes)
            return usage_error("--%s-link %s: %s", o->link_fault[i].drop > 0 ? "lossy" : "slow",
                               o->link_text[i],
                               o->nodes ? "no such node" : "links are between nodes: give --nodes");
    return 0;
}

static int parse_args(int argc, char **argv, options *o, replica_model *m)
{
    static const struct option longs[] = {
        {"requests", required_argument, 0, 'r'},     {"concurrency", required_argument, 0, 'c'},
        {"replicas", required_argument, 0, 'n'},     {"timeout-ms", required_argument, 0, 'T'},
        {"svg", required_argument, 0, 'o'},          {"metrics-port", required_argument, 0, 'p'},
        {"seed", required_argument, 0, 'S'},         {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},               {"breakers", no_argument, 0, 'b'},
        {"hedge-delay-ms", required_argument, 0, 'D'}, {"hedge-pct", required_argument, 0, 'P'},
        {"nodes", required_argument, 0, 'N'},        {"node-program", required_argument, 0, 'X'},
        {"slow-link", required_argument, 0, 'L'},    {"lossy-link", required_argument, 0, 'L'},
        MODEL_LONG_OPTIONS,                          {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'q') {
            o->quiet = true;
        } else if (c == 'b') {
            o->breakers = true;
        } else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else if (c == '?' || c == ':') {
            return usage_error("unknown option %s", argv[optind - 1]);
        } else if (!apply_option(c, optarg, o, m)) {
            return usage_error("bad value \"%s\" for %s", optarg,
                               argv[optind - 2 >= 0 ? optind - 2 : 0]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument \"%s\"", argv[optind]);
    return check_options(o, m);
}

/* ---- main ------------------------------------------------------------- */

/* A PNG beside the SVG, when an SVG renderer (rsvg-convert) is installed. */
static void write_png(const char *svg)
{
    if (system("command -v rsvg-convert >/dev/null 2>&1") != 0)
        return;
    size_t len = strlen(svg);
    char *png = malloc(len + 5), *cmd = malloc(2 * len + 64);
    if (!png || !cmd || strchr(svg, '\'')) {
        free(png);
        free(cmd);
        return;
    }
    memcpy(png, svg, len + 1);
    if (len > 4 && strcmp(png + len - 4, ".svg") == 0)
        png[len - 4] = '\0';
    strcat(png, ".png");
    snprintf(cmd, 2 * len + 64, "rsvg-convert '%s' -o '%s'", svg, png);
    if (system(cmd) == 0)
        printf("and as a picture to %s\n", png);
    free(png);
    free(cmd);
}

/* The system, serving its metrics when asked to; NULL when it cannot run. */
bool serve_metrics(ac_system *sys, const options *o)
{
    if (o->metrics_port < 0)
        return true;
    ac_metrics_http_options mo = {.port = o->metrics_port};
    if (ac_metrics_serve(sys, &mo) != AC_OK) {
        fprintf(stderr, "actorc-hedge: cannot serve metrics: %s\n", ac_last_error());
        return false;
    }
    int port = ac_metrics_http_port(sys);
    printf("serving metrics on http://127.0.0.1:%d/metrics\n", port);
    printf("observer (live routers, hedges, breakers, members): http://127.0.0.1:%d/\n", port);
    fflush(stdout);
    return true;
}

static ac_system *start_system(const options *o)
{
    ac_system_options so = {.log_level = AC_LOG_WARN};
    ac_system *sys = ac_system_create("hedge", &so);
    if (!sys) {
        fprintf(stderr, "actorc-hedge: %s\n", ac_last_error());
        return NULL;
    }
    if (serve_metrics(sys, o))
        return sys;
    ac_system_terminate(sys);
    return NULL;
}

/* The replicas in this process: a pool of o->replicas per strategy. */
typedef struct local_pools {
    const options *o;
    replica_model *m;
} local_pools;

static ac_props *make_pool(const plan *p, void *user)
{
    const local_pools *lp = user;
    ac_breaker_options bo = demo_breaker_options(lp->o, lp->m);
    ac_routee_options r = {.user_data = lp->m, .breaker = p->breakers ? &bo : NULL};
    int n = lp->o->replicas;
    switch (p->kind) {
    case STRATEGY_ROUND_ROBIN: return ac_router_round_robin(n, &hedge_replica, &r);
    case STRATEGY_RANDOM: return ac_router_random(n, &hedge_replica, &r);
    case STRATEGY_SMALLEST_MAILBOX: return ac_router_smallest_mailbox(n, &hedge_replica, &r);
    case STRATEGY_SCATTER_GATHER:
        return ac_router_scatter_gather_first_completed(n, &hedge_replica, &p->sg, &r);
    case STRATEGY_HEDGED_FIXED:
    case STRATEGY_HEDGED_ADAPTIVE: return ac_router_hedged(n, &hedge_replica, &p->hedged, &r);
    case STRATEGIES: break;
    }
    return NULL;
}

ac_breaker_options demo_breaker_options(const options *o, const replica_model *m)
{
    /* A call slower than the request's deadline is a failure of its
     * replica; the jitter keeps the pools' probes apart. */
    return (ac_breaker_options){.max_failures = 5, .call_timeout_ms = o->timeout_ms,
                                .reset_timeout_ms = 1000, .max_reset_timeout_ms = 10000,
                                .random_factor = 0.2, .seed = m->seed};
}

void report(const options *o, const replica_model *m, run_result *runs, size_t n,
            const char *subtitle)
{
    printf("\n");
    report_table(stdout, runs, n);
    report_price(stdout, runs, n);
    report_ideal(stdout, m, o);
    printf("\n");
    report_histogram(stdout, runs, n);
    if (report_svg(o->svg, runs, n, subtitle) == 0) {
        printf("\nlatency CDF written to %s\n", o->svg);
        write_png(o->svg);
    } else {
        fprintf(stderr, "actorc-hedge: could not write %s: %s\n", o->svg, strerror(errno));
    }
}

int main(int argc, char **argv)
{
    options o = {.requests = 20000, .concurrency = 32, .replicas = 3, .timeout_ms = 1000,
                 .svg = "actorc-hedge.svg", .metrics_port = -1,
                 .hedge_delay_us = AC_HEDGE_DEFAULT_DELAY_US,
                 .hedge_percentile = AC_HEDGE_DEFAULT_PERCENTILE};
    replica_model m = MODEL_DEFAULTS;
    int rc = parse_args(argc, argv, &o, &m);
    if (rc)
        return rc;
    if (o.nodes > 0)
        return cluster_demo(&o, &m, argv[0]);
    ac_system *sys = start_system(&o);
    if (!sys)
        return 1;
    char subtitle[256];
    snprintf(subtitle, sizeof subtitle,
             "%d replicas; latency log-normal (median %.3g ms, sigma %.2g) + %.3g%% stalls of "
             "%.0f ms; %.3g%% errors%s; %zu requests, %zu in flight",
             o.replicas, m.median_ms, m.sigma, m.tail_pct, m.tail_ms, m.error_pct,
             m.dead_replica ? "; one dead replica" : "", o.requests, o.concurrency);
    printf("actorc-hedge: %s\n\n", subtitle);
    run_result runs[2 * STRATEGIES];
    local_pools pools = {.o = &o, .m = &m};
    size_t n = 0, planned = run_pass(sys, &m, &o, false, make_pool, &pools, runs, &n);
    if (o.breakers)
        planned += run_pass(sys, &m, &o, true, make_pool, &pools, runs, &n);
    report(&o, &m, runs, n, subtitle);
    for (size_t i = 0; i < n; i++) {
        free(runs[i].latency_us);
        free(runs[i].failed_us);
    }
    ac_system_terminate(sys);
    return n == planned ? 0 : 1;
}
