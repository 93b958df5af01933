/*
 * Running dnsmasq for the DNS tests. See dnsmasq_harness.h.
 *
 * As the etcd harness: the processes and directories alive are kept in
 * two small tables, so that the exit handler and the signal handler can
 * end them. The signal handler only calls kill(), which is
 * async-signal-safe; the exit handler also reaps and removes
 * directories. A fatal signal that already has a handler (a sanitizer's)
 * keeps it: those end in abort(), whose SIGABRT comes here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "dnsmasq_harness.h"

#include "cluster/dns_resolve.h"
#include "test_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIVE 8
#define READY_WAIT_S 20.0

static atomic_int live_pids[MAX_LIVE];
static char live_dirs[MAX_LIVE][256];
static bool handlers_installed;

/* ---- cleaning up ------------------------------------------------------- */

static void kill_all(void)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        pid_t pid = atomic_load(&live_pids[i]);
        if (pid > 0)
            kill(pid, SIGKILL);
    }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(const char *dir)
{
    if (dir[0])
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void at_exit(void)
{
    kill_all();
    for (int i = 0; i < MAX_LIVE; i++) {
        pid_t pid = atomic_exchange(&live_pids[i], 0);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        remove_dir(live_dirs[i]);
        live_dirs[i][0] = '\0';
    }
}

static void on_fatal(int sig)
{
    kill_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    if (handlers_installed)
        return;
    handlers_installed = true;
    atexit(at_exit);
    const int always[] = {SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    const int unless_taken[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    struct sigaction sa = {.sa_handler = on_fatal};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        sigaction(always[i], &sa, NULL);
    for (size_t i = 0; i < sizeof unless_taken / sizeof unless_taken[0]; i++) {
        struct sigaction old;
        if (sigaction(unless_taken[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            sigaction(unless_taken[i], &sa, NULL);
    }
}

static void track_pid(pid_t pid, bool on)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        int expected = on ? 0 : pid;
        if (atomic_compare_exchange_strong(&live_pids[i], &expected, on ? pid : 0))
            return;
    }
    if (on) {
        fprintf(stderr, "dnsmasq harness: more than %d at once; killing %d\n", MAX_LIVE,
                (int)pid);
        kill(pid, SIGKILL);
    }
}

static void track_dir(const char *dir, bool on)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        if (on && !live_dirs[i][0]) {
            snprintf(live_dirs[i], sizeof live_dirs[i], "%s", dir);
            return;
        }
        if (!on && strcmp(live_dirs[i], dir) == 0) {
            live_dirs[i][0] = '\0';
            return;
        }
    }
}

/* ---- the binary, the port, the files ------------------------------------------ */

const char *dh_binary(void)
{
    static char found[512];
    return ts_find_program("dnsmasq", "/usr/sbin:/sbin", found, sizeof found);
}

bool dh_skip(const char *test)
{
    if (dh_binary())
        return false;
    int status = ts_missing_program(test, "dnsmasq", "dnsmasq-base");
    if (status != TS_SKIP)
        exit(status);
    return true;
}

/* A port of 127.0.0.1 free for both UDP and TCP when asked. */
static int free_port(void)
{
    for (int tries = 0; tries < 20; tries++) {
        int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        int port = -1;
        if (u >= 0 && bind(u, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(u, (struct sockaddr *)&a, &len) == 0) {
            int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (t >= 0 && bind(t, (struct sockaddr *)&a, sizeof a) == 0)
                port = ntohs(a.sin_port);
            if (t >= 0)
                close(t);
        }
        if (u >= 0)
            close(u);
        if (port > 0)
            return port;
    }
    return -1;
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dnsmasq harness: %s: %s\n", path, strerror(errno));
        return false;
    }
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The conf file: where it listens, what it reads, its SRV records. It
 * runs as the user and group running the test, so that it can read our
 * files, and so that it keeps the parent-death signal: a change of its
 * credentials (dnsmasq's default group is "dip") would clear it, and a
 * test killed with SIGKILL would leave its dnsmasq running. */
static bool write_conf(const dh_dnsmasq *d)
{
    const struct passwd *pw = getpwuid(geteuid());
    const struct group *gr = getgrgid(getegid());
    char text[8192];
    int at = snprintf(text, sizeof text,
                      "port=%d\nlisten-address=127.0.0.1\nbind-interfaces\nno-resolv\n"
                      "no-hosts\nno-poll\naddn-hosts=%s\nlocal=/" DH_DOMAIN "/\n"
                      "cache-size=0\nlocal-ttl=0\npid-file=\nlog-facility=%s\nuser=%s\ngroup=%s\n",
                      d->port, d->hosts, d->log, pw ? pw->pw_name : "root",
                      gr ? gr->gr_name : "root");
    for (size_t i = 0; i < d->srv_count && at > 0 && (size_t)at < sizeof text; i++)
        at += snprintf(text + at, sizeof text - (size_t)at, "srv-host=%s\n", d->srv[i]);
    return at > 0 && (size_t)at < sizeof text && write_file(d->conf, text);
}

static bool set_srv(dh_dnsmasq *d, const char *const *srv, size_t n)
{
    if (n > DH_MAX_SRV)
        return false;
    for (size_t i = 0; i < n; i++)
        snprintf(d->srv[i], sizeof d->srv[i], "%s", srv[i]);
    d->srv_count = n;
    return write_conf(d);
}

/* ---- running it ------------------------------------------------------------- */

/* Start the process; its pid, or -1. */
static pid_t spawn(const dh_dnsmasq *d)
{
    char conf[320];
    snprintf(conf, sizeof conf, "--conf-file=%s", d->conf);
    const char *bin = dh_binary();
    char *argv[] = {(char *)bin, "--keep-in-foreground", conf, NULL};
    char out_path[320];
    snprintf(out_path, sizeof out_path, "%s/stderr", d->dir);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child: only async-signal-safe calls until exec. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
    int out = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    closefrom(3);
    execv(bin, argv);
    _exit(127);
}

static void print_tail(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char lines[12][512];
    size_t n = 0;
    while (fgets(lines[n % 12], sizeof lines[0], f))
        n++;
    fclose(f);
    fprintf(stderr, "dnsmasq harness: the end of %s:\n", path);
    for (size_t i = n > 12 ? n - 12 : 0; i < n; i++)
        fprintf(stderr, "  %s", lines[i % 12]);
}

static void print_logs(const dh_dnsmasq *d)
{
    char out[320];
    snprintf(out, sizeof out, "%s/stderr", d->dir);
    print_tail(out);
    print_tail(d->log);
}

bool dh_run(dh_dnsmasq *d)
{
    install_handlers();
    pid_t pid = spawn(d);
    if (pid < 0) {
        fprintf(stderr, "dnsmasq harness: fork: %s\n", strerror(errno));
        return false;
    }
    d->pid = pid;
    track_pid(pid, true);
    char buf[64];
    double end = ts_now() + READY_WAIT_S;
    while (ts_now() < end) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            track_pid(pid, false);
            d->pid = 0;
            fprintf(stderr, "dnsmasq harness: dnsmasq on port %d exited at start\n", d->port);
            print_logs(d);
            return false;
        }
        /* Any answer (here NXDOMAIN) says it is up. */
        if (dh_lookup(d, "probe." DH_DOMAIN, 1, buf, sizeof buf))
            return true;
        ts_sleep_ms(20);
    }
    fprintf(stderr, "dnsmasq harness: dnsmasq on port %d did not answer in %.0f s\n", d->port,
            READY_WAIT_S);
    print_logs(d);
    dh_stop(d);
    return false;
}

dh_dnsmasq *dh_start(const char *const *srv, size_t n, const char *hosts)
{
    install_handlers();
    dh_dnsmasq *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/actorc-dnsmasq.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(d->dir)) {
        fprintf(stderr, "dnsmasq harness: mkdtemp %s: %s\n", d->dir, strerror(errno));
        free(d);
        return NULL;
    }
    track_dir(d->dir, true);
    snprintf(d->conf, sizeof d->conf, "%s/dnsmasq.conf", d->dir);
    snprintf(d->hosts, sizeof d->hosts, "%s/hosts", d->dir);
    snprintf(d->log, sizeof d->log, "%s/dnsmasq.log", d->dir);
    d->port = free_port();
    snprintf(d->server, sizeof d->server, "127.0.0.1:%d", d->port);
    if (d->port <= 0 || !write_file(d->hosts, hosts ? hosts : "") || !set_srv(d, srv, n) ||
        !dh_run(d)) {
        dh_destroy(d);
        return NULL;
    }
    return d;
}

bool dh_set_srv(dh_dnsmasq *d, const char *const *srv, size_t n)
{
    dh_stop(d);
    return set_srv(d, srv, n) && dh_run(d);
}

bool dh_set_hosts(dh_dnsmasq *d, const char *hosts)
{
    return write_file(d->hosts, hosts ? hosts : "") && d->pid > 0 && kill(d->pid, SIGHUP) == 0;
}

void dh_stop(dh_dnsmasq *d)
{
    if (!d || d->pid <= 0)
        return;
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
    track_pid(d->pid, false);
    d->pid = 0;
}

void dh_destroy(dh_dnsmasq *d)
{
    if (!d)
        return;
    dh_stop(d);
    remove_dir(d->dir);
    track_dir(d->dir, false);
    free(d);
}

const char *dh_lookup(const dh_dnsmasq *d, const char *name, int port, char *buf, size_t cap)
{
    const char *servers[] = {d->server};
    ac__dns *dns = ac__dns_open(servers, 1, 200);
    ac__dns_result r;
    if (!dns || ac__dns_resolve(dns, name, port, &r) != AC_OK) {
        ac__dns_close(dns);
        return NULL;
    }
    ac__dns_close(dns);
    bool answered = r.outcome == AC__DNS_FOUND || r.outcome == AC__DNS_NONE;
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r.count && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? " " : "", r.addresses[i]);
    ac__dns_result_free(&r);
    return answered ? buf : NULL;
}
