/*
 * actorc-soak: the run itself — options, setup, the timed run, the final
 * checks and the summary.
 *
 * The process exits 0 when every invariant held, 1 with the seed and the
 * first violated invariant, 2 for a usage error (or --fail-alloc in a
 * build without the hook), 3 when the system could not be set up. A
 * violation ends the run at once, with _exit: whatever is still running
 * is evidence, not something to tidy up.
 *
 * With --fail-alloc the workload runs in a child process, because an
 * allocation the library cannot report is allowed to end the process
 * with "actorc: out of memory" and abort; the parent tells that honest
 * end from a crash or a broken promise.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app_args.h"
#include "soak.h"

soak_config g_cfg;
soak_stats g_stats;
atomic_bool g_stop;
atomic_bool g_failed;

static pthread_mutex_t violation_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_violation[2048];
static atomic_uint_fast64_t violations;
static uint64_t start_ns;

void soak_violation(const char *fmt, ...)
{
    atomic_fetch_add(&violations, 1);
    pthread_mutex_lock(&violation_lock);
    if (!first_violation[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(first_violation, sizeof first_violation, fmt, ap);
        va_end(ap);
        fprintf(stderr, "soak: VIOLATION after %.1f s: %s\n",
                (double)(soak_now_ns() - start_ns) / 1e9, first_violation);
        atomic_store(&g_failed, true);
        atomic_store(&g_stop, true);
    }
    pthread_mutex_unlock(&violation_lock);
}

const char *soak_first_violation(void) { return first_violation; }

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: actorc-soak [options]\n"
                 "\n"
                 "A seeded, randomized workload with fault injection, checking while it runs\n"
                 "that every ask and scatter settles exactly once with an allowed answer,\n"
                 "that tells keep their order per sender, that dead letters come only from\n"
                 "stopped actors, that resident memory stays flat after warm-up, and that\n"
                 "the system terminates clean. Exit 0: all held; 1: the first violation and\n"
                 "the seed are printed; 2: usage; 3: setup failed.\n"
                 "\n"
                 "  --duration T      how long to run: 30, 30s, 5m, 2h (default 10s)\n"
                 "  --seed S          the seed, decimal or 0x-hex (default: random, printed)\n"
                 "  --workers N       worker threads (default: one per CPU)\n"
                 "  --callers N       caller threads outside the system (default 3)\n"
                 "  --actors N        caller actors inside the system (default 4)\n"
                 "  --warmup T        warm-up before the memory baseline (default: a\n"
                 "                    quarter of the run, at most 30s)\n"
                 "  --grace-ms N      how late past its deadline an answer may come before\n"
                 "                    it counts as lost (default 2000; 5000 sanitized)\n"
                 "  --rss-pct P       allowed resident-memory growth after warm-up, in\n"
                 "                    percent (default 10; 0: not checked, the default\n"
                 "                    under ASan/TSan, whose shadow memory and quarantine\n"
                 "                    grow on their own)\n"
                 "  --rss-slack-mb M  plus this many MB (default 8)\n"
                 "  --fail-alloc F    fail a fraction F of the library's allocations\n"
                 "                    (e.g. 0.001); only in builds with the allocation-\n"
                 "                    failure hook (builds without NDEBUG)\n"
                 "  --nodes N         the soak across processes instead: N replica processes\n"
                 "                    (2..5) on 127.0.0.1 in one cluster, asked through\n"
                 "                    cluster routers while they are killed, restarted and\n"
                 "                    stopped (builds with the cluster library)\n"
                 "  --provider P      with --nodes: static (seeds, the default) or etcd (starts\n"
                 "                    and restarts a real etcd; Debian etcd-server)\n"
                 "  --cluster N       the cluster chaos soak instead: N node processes (3..5;\n"
                 "                    5 with --chaos alone) with a replica each, in one\n"
                 "                    cluster with keep-majority downing, asked through\n"
                 "                    round-robin, scatter/gather, hedged and consistent-\n"
                 "                    hashing cluster routers (builds with the cluster library)\n"
                 "  --chaos           with --cluster: partitions and heals (network namespaces\n"
                 "                    and nftables as root, the fault layer otherwise), slow\n"
                 "                    and lossy links, kill -9 and restart, SIGSTOP/SIGCONT\n"
                 "  --partitions P    auto (namespaces where possible, the default) or fault\n"
                 "  --stable-after-ms N  the downing's stable_after_ms (default 1500; at\n"
                 "                    least the nodes' heartbeat timeout, 1000)\n"
                 "  --converge-slack-ms N  a heal's membership is one again within\n"
                 "                    stable_after_ms plus this (default 2000)\n"
                 "  --restart-after-heal-ms N  the cut side's new processes start this long\n"
                 "                    after a heal (default 0: at once)\n"
                 "  --rss-growth-kb N with --cluster: a process's resident growth allowed\n"
                 "                    from its steady state to the end (default 65536;\n"
                 "                    0: not checked, the default under ASan/TSan)\n"
                 "  --verbose         print chaos actions and progress\n"
                 "  --help            this text\n"
                 "\n"
                 "Replaying a seed: every random choice — which router, which strategy,\n"
                 "what each routee does, which chaos action comes next, how long to pause —\n"
                 "comes from one seed, through one random stream per thread. The same\n"
                 "seed replays the same sequence of choices on every thread. It does not\n"
                 "replay the thread interleavings, which the OS decides: whether a chosen\n"
                 "action finds its target (a routee to kill, room in the ledger) and which\n"
                 "answer wins a race can differ between runs. The random router draws from\n"
                 "the library's own generator.\n");
}

static uint64_t random_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s)
        s = soak_now_ns() ^ ((uint64_t)getpid() << 32);
    return s;
}

static int bad(const char *opt, const char *value)
{
    fprintf(stderr, "actorc-soak: bad value for --%s: '%s'\n", opt, value);
    usage(stderr);
    return 2;
}

/* --grace-ms, an int64_t in the config. */
static bool parse_grace_ms(const char *arg)
{
    uint64_t v;
    if (!app_parse_count(arg, 0, 3600000, &v))
        return false;
    g_cfg.grace_ms = (int64_t)v;
    return true;
}

/* A year: a longer --duration or --warmup is a typo, not a plan. */
#define MAX_SECONDS (366.0 * 24 * 3600)

/* Apply one option; false for a bad value. */
static bool apply_option(int c, const char *arg, bool *seeded)
{
    switch (c) {
    case 'd':
        return app_parse_seconds(arg, 0, MAX_SECONDS, &g_cfg.duration_s);
    case 'W':
        return app_parse_seconds(arg, 0, MAX_SECONDS, &g_cfg.warmup_s);
    case 's':
        return *seeded = app_parse_seed(arg, &g_cfg.seed);
    case 'w':
        return app_parse_int(arg, 1, 64, &g_cfg.workers);
    case 'c':
        return app_parse_int(arg, 0, 16, &g_cfg.outside_callers);
    case 'a':
        return app_parse_int(arg, 1, 16, &g_cfg.actor_callers);
    case 'g':
        return parse_grace_ms(arg);
    case 'r':
        return app_parse_double(arg, 0, 1e6, NULL, &g_cfg.rss_pct);
    case 'n':
        return app_parse_int(arg, 2, 5, &g_cfg.nodes);
    case 'p':
        if (!strcmp(arg, "static") || !strcmp(arg, "etcd"))
            return (g_cfg.etcd = !strcmp(arg, "etcd")), true;
        return false;
    case 'R':
        return app_parse_double(arg, 0, 1e6, NULL, &g_cfg.rss_slack_mb);
    case 'C':
        return app_parse_int(arg, 3, 5, &g_cfg.cluster);
    case 'A':
        return app_parse_int(arg, 1000, 600000, &g_cfg.stable_after_ms);
    case 'K':
        return app_parse_int(arg, 0, 600000, &g_cfg.converge_slack_ms);
    case 'H':
        return app_parse_int(arg, 0, 600000, &g_cfg.restart_after_heal_ms);
    case 'G': {
        uint64_t kb;
        if (!app_parse_count(arg, 0, UINT64_C(1) << 40, &kb))
            return false;
        g_cfg.rss_growth_kb = (int64_t)kb;
        return true;
    }
    case 'P':
        if (!strcmp(arg, "auto") || !strcmp(arg, "fault"))
            return (g_cfg.partitions_by = !strcmp(arg, "fault")), true;
        return false;
    default:
        return app_parse_double(arg, 1e-12, 1, NULL, &g_cfg.fail_alloc); /* 'f' */
    }
}

static const struct option long_options[] = {{"duration", required_argument, 0, 'd'},
                                             {"seed", required_argument, 0, 's'},
                                             {"workers", required_argument, 0, 'w'},
                                             {"callers", required_argument, 0, 'c'},
                                             {"actors", required_argument, 0, 'a'},
                                             {"warmup", required_argument, 0, 'W'},
                                             {"grace-ms", required_argument, 0, 'g'},
                                             {"rss-pct", required_argument, 0, 'r'},
                                             {"rss-slack-mb", required_argument, 0, 'R'},
                                             {"fail-alloc", required_argument, 0, 'f'},
                                             {"nodes", required_argument, 0, 'n'},
                                             {"provider", required_argument, 0, 'p'},
                                             {"cluster", required_argument, 0, 'C'},
                                             {"chaos", no_argument, 0, 'X'},
                                             {"stable-after-ms", required_argument, 0, 'A'},
                                             {"converge-slack-ms", required_argument, 0, 'K'},
                                             {"rss-growth-kb", required_argument, 0, 'G'},
                                             {"restart-after-heal-ms", required_argument, 0, 'H'},
                                             {"partitions", required_argument, 0, 'P'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};

static int parse_options(int argc, char **argv)
{
    g_cfg = (soak_config){.duration_s = 10,
                          .warmup_s = -1,
                          .outside_callers = 3,
                          .actor_callers = 4,
                          .grace_ms = SOAK_SANITIZED ? 5000 : 2000,
                          .rss_pct = SOAK_SANITIZED ? 0 : 10,
                          .rss_slack_mb = 8,
                          .stable_after_ms = 1500,
                          .converge_slack_ms = 2000,
                          .restart_after_heal_ms = 0,
                          .rss_growth_kb = SOAK_SANITIZED ? 0 : 65536};
    bool seeded = false;
    int c, index;
    while ((c = getopt_long(argc, argv, "", long_options, &index)) != -1) {
        if (c == 'v') {
            g_cfg.verbose = true;
        } else if (c == 'X') {
            g_cfg.chaos = true;
        } else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else if (c == '?') {
            usage(stderr);
            return 2;
        } else if (!apply_option(c, optarg, &seeded)) {
            return bad(long_options[index].name, optarg);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "actorc-soak: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (!seeded)
        g_cfg.seed = random_seed();
    if (g_cfg.warmup_s < 0)
        g_cfg.warmup_s = g_cfg.duration_s / 4 > 30 ? 30 : g_cfg.duration_s / 4;
    return 0;
}

/* ---- logging: counted, shown only with --verbose --------------------------- */

static atomic_uint_fast64_t log_lines[AC_LOG_OFF + 1];
static uint64_t restarts_seen; /* actorc_restarts_total at the end */

static void log_sink(void *user, ac_log_level level, const char *system_name, const char *path,
                     const char *text)
{
    (void)user;
    (void)system_name;
    if (level <= AC_LOG_OFF)
        atomic_fetch_add(&log_lines[level], 1);
    if (g_cfg.verbose && level >= AC_LOG_WARN)
        fprintf(stderr, "soak: log %s %s: %s\n", ac_log_level_name(level), path ? path : "-", text);
}

/* ---- the summary ---------------------------------------------------------- */

/* 12345678 -> "12,345,678" in buf. */
static const char *grouped(uint64_t n, char *buf)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

#define G(x) grouped(atomic_load(&(x)), (char[40]){0})

static void print_breakdown(ac_system *sys)
{
    soak_stats *s = &g_stats;
    printf("soak: answers: %s replies, %s SoakErrors, %s timeouts, %s ActorStopped/Undeliverable, "
           "%s aggregates, %s dead-lettered tells, %s other errors\n",
           G(s->by_kind[KIND_REPLY]), G(s->by_kind[KIND_ERROR_REPLY]), G(s->by_kind[KIND_TIMEOUT]),
           G(s->by_kind[KIND_STOPPED]), G(s->by_kind[KIND_AGGREGATE]),
           G(s->by_kind[KIND_DEAD_LETTER]), G(s->by_kind[KIND_OTHER_ERROR]));
    printf("soak: callers: %s ask_wait, %s future+callback, %s future_wait, %s ask_in+fn, "
           "%s ask_in+message, %s tell+self; %s refused at send, %s held back\n",
           G(s->by_mode[MODE_ASK_WAIT]), G(s->by_mode[MODE_FUTURE_CB]),
           G(s->by_mode[MODE_FUTURE_WAIT]), G(s->by_mode[MODE_ASK_IN_FN]),
           G(s->by_mode[MODE_ASK_IN_MSG]), G(s->by_mode[MODE_TELL_SELF]), G(s->withdrawn),
           G(s->backpressure));
    char b0[40];
    printf("soak: chaos: %s router stops (%s Terminated, one each), %s routee kills, %s routers "
           "spawned, %s stopped routers probed, %s requests told a routee to fail or stop, %s "
           "restarts by supervisors\n",
           G(s->chaos_stops), G(s->terminated_seen), G(s->chaos_kills), G(s->chaos_spawns),
           G(s->chaos_probes), G(s->stopish), grouped(restarts_seen, b0));
    char b1[40], b2[40];
    printf("soak: stalls: the longest %.0f ms; %s answers late only because of them (excused); "
           "%s messages reached a routee over 100 ms late, the latest by %.0f ms\n",
           stalls_longest_ms(), G(s->excused), G(s->slow_deliveries),
           (double)atomic_load(&s->slowest_delivery_ns) / 1e6);
    printf("soak: dead letters: %s counted, %s seen and each explained by a stop, >= %s known sent "
           "to stopped routers; %s error log lines\n",
           grouped(ac_dead_letter_count(sys), b1), G(s->dl_seen),
           grouped(atomic_load(&s->known_dead), b2), G(log_lines[AC_LOG_ERROR]));
    if (g_cfg.fail_alloc > 0)
        printf("soak: allocation failures: %s armed at a fraction of %g; %s dead-letter notices "
               "dropped for want of memory\n",
               G(s->alloc_failures_armed), g_cfg.fail_alloc, G(s->dl_notices_lost));
}

static void print_summary(double rss_growth, int left_open)
{
    char rss[96];
    double base, peak;
    memory_levels(&base, &peak);
    snprintf(rss, sizeof rss, "RSS %+.1f%% (%.1f to %.1f MB%s)", rss_growth, base, peak,
             g_cfg.rss_pct > 0 ? "" : ", not checked");
    printf(
        "soak: %s requests, all answered exactly once, 0 lost, 0 duplicated, FIFO held (%s tells), "
        "%s, terminated clean with %d asks open, seed 0x%016llx\n",
        G(g_stats.requests), G(g_stats.tells_received), rss, left_open,
        (unsigned long long)g_cfg.seed);
}

_Noreturn static void fail_now(void)
{
    fflush(stdout);
    fprintf(stderr, "soak: FAILED, seed 0x%016llx: %s\n", (unsigned long long)g_cfg.seed,
            soak_first_violation());
    fprintf(stderr, "soak: replay with: actorc-soak --seed 0x%016llx --duration %gs\n",
            (unsigned long long)g_cfg.seed, g_cfg.duration_s);
    fflush(stderr);
    _exit(1);
}

/* ---- the run -------------------------------------------------------------- */

static ac_system *setup(void)
{
    ac_system_options o = {.workers = g_cfg.workers,
                           .log_sink = log_sink,
                           .dead_letter_log_per_s = -1,
                           .metrics = true};
    ac_system *sys = ac_system_create("soak", &o);
    if (!sys) {
        fprintf(stderr, "actorc-soak: cannot create the system: %s\n", ac_last_error());
        return NULL;
    }
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 3);
    ledger_start_reaper();
    if (stalls_start(sys) || deadletters_start(sys) || watch_start(sys) || streams_start(sys) ||
        pools_start(sys, &rng) || callers_start(sys)) {
        fprintf(stderr, "actorc-soak: setup failed: %s\n", ac_last_error());
        return NULL;
    }
    return sys;
}

static uint64_t runtime_counter(ac_system *sys, const char *name);

static void run_for(ac_system *sys, double seconds)
{
    uint64_t end = start_ns + (uint64_t)(seconds * 1e9), next_report = start_ns + 10000000000ull;
    while (soak_now_ns() < end && !atomic_load(&g_failed)) {
        soak_sleep_us(20000);
        if (soak_now_ns() >= next_report && (g_cfg.verbose || seconds >= 60)) {
            char b[40];
            uint64_t live = runtime_counter(sys, "actorc_actors_started_total") -
                            runtime_counter(sys, "actorc_actors_stopped_total");
            fprintf(stderr, "soak: %.0f s: %s requests, %zu in flight, %llu actors, RSS %.1f MB\n",
                    (double)(soak_now_ns() - start_ns) / 1e9,
                    grouped(atomic_load(&g_stats.requests), b), ledger_in_flight(),
                    (unsigned long long)live, memory_rss_mb());
            next_report += seconds >= 600 ? 60000000000ull : 10000000000ull;
        }
    }
}

static uint64_t runtime_counter(ac_system *sys, const char *name)
{
    return ac_counter_value(ac_counter_series(ac_metrics_counter(sys, name, NULL), NULL));
}

/* The runtime's own counters must agree with what the soak saw: every dead
 * letter counted once, and at least as many ask timeouts as callers got. */

static void metrics_reconcile(ac_system *sys)
{
    uint64_t dead = runtime_counter(sys, "actorc_dead_letters_total");
    uint64_t timeouts = runtime_counter(sys, "actorc_ask_timeouts_total");
    restarts_seen = runtime_counter(sys, "actorc_restarts_total");
    if (dead != ac_dead_letter_count(sys))
        soak_violation("actorc_dead_letters_total is %llu, ac_dead_letter_count %llu",
                       (unsigned long long)dead, (unsigned long long)ac_dead_letter_count(sys));
    if (timeouts < atomic_load(&g_stats.by_kind[KIND_TIMEOUT]))
        soak_violation("actorc_ask_timeouts_total is %llu, below the %llu ask timeouts callers saw",
                       (unsigned long long)timeouts,
                       (unsigned long long)atomic_load(&g_stats.by_kind[KIND_TIMEOUT]));
}

/* Stop the load, let every open request settle, and check the end state. */
static void wind_down(ac_system *sys, double *rss_growth)
{
    atomic_store(&g_stop, true);
    if (!callers_join())
        fail_now();
    if (g_cfg.fail_alloc > 0)
        fail_alloc_stop();
    /* The longest a request may take: a scatter's timeout plus the caller's 3 s. */
    if (!ledger_drain(4000 + g_cfg.grace_ms + 1000) && !atomic_load(&g_failed))
        soak_violation("%zu requests still unanswered after the load stopped", ledger_in_flight());
    ledger_stop_reaper();
    if (atomic_load(&g_failed))
        fail_now();
    pools_release_graveyard();
    streams_verify();
    deadletters_verify(sys);
    watch_verify();
    metrics_reconcile(sys);
    memory_stop();
    memory_verify(rss_growth);
    if (atomic_load(&g_failed))
        fail_now();
}

static int run_workload(void)
{
    start_ns = soak_now_ns();
    printf("soak: seed 0x%016llx, %gs (warm-up %gs), %d outside callers, %d caller actors%s\n",
           (unsigned long long)g_cfg.seed, g_cfg.duration_s, g_cfg.warmup_s, g_cfg.outside_callers,
           g_cfg.actor_callers, g_cfg.fail_alloc > 0 ? ", failing allocations" : "");
    fflush(stdout);
    ac_system *sys = setup();
    if (!sys)
        return 3;
    memory_start();
    if (g_cfg.fail_alloc > 0)
        fail_alloc_start(g_cfg.fail_alloc, g_cfg.seed);
    run_for(sys, g_cfg.duration_s);
    double rss_growth = 0;
    wind_down(sys, &rss_growth);
    print_breakdown(sys);
    int left_open = callers_leave_open();
    pools_stop_all();
    ac_status st = ac_system_terminate(sys);
    if (st != AC_OK)
        soak_violation("ac_system_terminate returned %s", ac_status_name(st));
    callers_check_left_open(left_open);
    if (atomic_load(&g_failed))
        fail_now();
    print_summary(rss_growth, left_open);
    return 0;
}

/* ---- --fail-alloc: the workload in a child --------------------------------- */

#define OOM_TEXT "actorc: out of memory"

/* Copy the child's stderr through, watching for the library's own
 * out-of-memory line. */
static bool relay_stderr(int fd)
{
    char buf[4096 + sizeof OOM_TEXT];
    size_t carry = 0;
    bool seen = false;
    ssize_t n;
    while ((n = read(fd, buf + carry, sizeof buf - carry - 1)) > 0 || (n < 0 && errno == EINTR)) {
        if (n < 0)
            continue;
        fwrite(buf + carry, 1, (size_t)n, stderr);
        size_t len = carry + (size_t)n;
        buf[len] = '\0';
        seen |= strstr(buf, OOM_TEXT) != NULL;
        carry = len < sizeof OOM_TEXT ? len : sizeof OOM_TEXT - 1;
        memmove(buf, buf + len - carry, carry);
    }
    return seen;
}

static int judge_child(int status, bool oom_seen)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("soak: allocation failures: every failure was returned as an error, and every "
               "promise kept\n");
        return 0;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && oom_seen) {
        printf("soak: allocation failures: the run ended with the library's honest out-of-memory "
               "abort; "
               "until then every promise was kept (seed 0x%016llx)\n",
               (unsigned long long)g_cfg.seed);
        return 0;
    }
    if (WIFSIGNALED(status))
        fprintf(
            stderr,
            "soak: FAILED under allocation failures, seed 0x%016llx: killed by signal %d (%s)%s\n",
            (unsigned long long)g_cfg.seed, WTERMSIG(status), strsignal(WTERMSIG(status)),
            oom_seen ? "" : ", without the library's out-of-memory message");
    else
        fprintf(stderr, "soak: FAILED under allocation failures, seed 0x%016llx: exit status %d\n",
                (unsigned long long)g_cfg.seed, WEXITSTATUS(status));
    return 1;
}

static int run_failing_allocations(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 3;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        int rc = run_workload();
        fflush(NULL);
        exit(rc);
    }
    close(fds[1]);
    bool oom_seen = relay_stderr(fds[0]);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return judge_child(status, oom_seen);
}

int main(int argc, char **argv)
{
#ifdef SOAK_WITH_CLUSTER
    if (argc > 1 && !strcmp(argv[1], "--replica"))
        return cluster_replica(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "--chaos-node"))
        return chaos_node(argc, argv);
#endif
    int rc = parse_options(argc, argv);
    if (rc)
        return rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (g_cfg.cluster > 0 || g_cfg.chaos) {
#ifdef SOAK_WITH_CLUSTER
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0 || g_cfg.nodes > 0) {
            fprintf(stderr, "actorc-soak: --cluster and --nodes are two different soaks\n");
            return n <= 0 ? 3 : 2;
        }
        exe[n] = '\0';
        if (!g_cfg.cluster)
            g_cfg.cluster = 5;
        start_ns = soak_now_ns();
        return chaos_soak(exe);
#else
        fprintf(stderr, "actorc-soak: --cluster is not available in this build: it needs the "
                        "cluster library (ACTORC_WITH_CLUSTER)\n");
        return 2;
#endif
    }
    if (g_cfg.nodes > 0) {
#ifdef SOAK_WITH_CLUSTER
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 3;
        exe[n] = '\0';
        start_ns = soak_now_ns();
        return cluster_soak(exe, g_cfg.nodes, g_cfg.etcd);
#else
        fprintf(stderr, "actorc-soak: --nodes is not available in this build: it needs the "
                        "cluster library (ACTORC_WITH_CLUSTER)\n");
        return 2;
#endif
    }
    if (g_cfg.fail_alloc > 0) {
        if (!fail_alloc_available()) {
            fprintf(stderr,
                    "actorc-soak: --fail-alloc is not available in this build: it needs the "
                    "library's allocation-failure hook, compiled into builds without NDEBUG\n");
            return 2;
        }
        return run_failing_allocations();
    }
    return run_workload();
}
