/*
 * The benchmarks' etcd (bench_etcd.h), and what /proc says of a process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "bench_etcd.h"

#include <actorc.h>

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *etcd_binary(void)
{
    static char found[512];
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(found, sizeof found, "%.*s/etcd", (int)n, p);
        if (access(found, X_OK) == 0)
            return found;
        p = colon ? colon + 1 : NULL;
    }
    return access("/usr/bin/etcd", X_OK) == 0 ? "/usr/bin/etcd" : NULL;
}

static bool port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

bool bench_etcd_start(bench_etcd *e)
{
    memset(e, 0, sizeof *e);
    const char *bin = etcd_binary();
    if (!bin)
        return false;
    snprintf(e->dir, sizeof e->dir, "%s/actorc-bench-etcd.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(e->dir)) {
        e->dir[0] = '\0';
        return false;
    }
    int pair[2];
    if (ac_node_free_ports(pair, 2) != AC_OK)
        return false;
    char client[64], peer[64], cluster[96], data[300], log[300];
    snprintf(client, sizeof client, "http://127.0.0.1:%d", pair[0]);
    snprintf(peer, sizeof peer, "http://127.0.0.1:%d", pair[1]);
    snprintf(cluster, sizeof cluster, "default=%s", peer);
    snprintf(data, sizeof data, "%s/data", e->dir);
    snprintf(log, sizeof log, "%s/etcd.log", e->dir);
    snprintf(e->url, sizeof e->url, "%s", client);
    pid_t parent = getpid();
    e->pid = fork();
    if (e->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        if (!freopen(log, "a", stdout) || !freopen(log, "a", stderr))
            _exit(126);
        execl(bin, bin, "--name", "default", "--data-dir", data, "--listen-client-urls", client,
              "--advertise-client-urls", client, "--listen-peer-urls", peer,
              "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
              "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    double end = mono_ms() + 20000;
    while (e->pid > 0 && !port_open(pair[0]) && mono_ms() < end) {
        struct timespec t = {0, 20000000L};
        nanosleep(&t, NULL);
    }
    if (e->pid > 0 && port_open(pair[0]))
        return true;
    bench_etcd_stop(e);
    return false;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void bench_etcd_stop(bench_etcd *e)
{
    if (e->pid > 0) {
        kill(e->pid, SIGKILL);
        waitpid(e->pid, NULL, 0);
        e->pid = 0;
    }
    if (e->dir[0]) {
        nftw(e->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        e->dir[0] = '\0';
    }
}

double bench_proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long bench_proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}
