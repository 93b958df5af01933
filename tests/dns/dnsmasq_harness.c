/*
 * Running dnsmasq for the DNS tests. See dnsmasq_harness.h.
 *
 * The processes and directories alive are tracked by ts_children.h, so
 * that they end however the test does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "dnsmasq_harness.h"

#include "cluster/dns_resolve.h"
#include "test_support.h"
#include "ts_children.h"

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

#define READY_WAIT_S 20.0


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
    ts_children_install();
    pid_t pid = spawn(d);
    if (pid < 0) {
        fprintf(stderr, "dnsmasq harness: fork: %s\n", strerror(errno));
        return false;
    }
    d->pid = pid;
    ts_child_track(pid, true, "dnsmasq harness");
    char buf[64];
    double end = ts_now() + READY_WAIT_S;
    while (ts_now() < end) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            ts_child_track(pid, false, "dnsmasq harness");
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
    ts_children_install();
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
    ts_dir_track(d->dir, true);
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
    ts_child_track(d->pid, false, "dnsmasq harness");
    d->pid = 0;
}

void dh_destroy(dh_dnsmasq *d)
{
    if (!d)
        return;
    dh_stop(d);
    ts_dir_remove(d->dir);
    ts_dir_track(d->dir, false);
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
