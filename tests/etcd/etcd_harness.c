/*
 * Running etcd for the tests. See etcd_harness.h.
 *
 * The processes and directories alive are tracked by ts_children.h, so
 * that they end however the test does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "etcd_harness.h"
#include "test_support.h"
#include "ts_children.h"

#include "cluster/etcd.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
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

#define HEALTH_WAIT_S 30.0
#define START_TRIES 3


/* ---- the binary and ports ------------------------------------------------ */

const char *eh_etcd_binary(void)
{
    static char found[512];
    return ts_find_program("etcd", "/usr/bin", found, sizeof found);
}

bool eh_skip(const char *test)
{
    if (eh_etcd_binary())
        return false;
    int status = ts_missing_program(test, "etcd", "etcd-server");
    if (status != EH_SKIP)
        exit(status);
    return true;
}

int eh_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int eh_silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- one etcd ------------------------------------------------------------ */

static bool pick_ports(eh_etcd *x)
{
    x->client_port = eh_free_port();
    x->peer_port = eh_free_port();
    for (int i = 0; i < 10 && x->peer_port == x->client_port; i++)
        x->peer_port = eh_free_port();
    snprintf(x->url, sizeof x->url, "http://127.0.0.1:%d", x->client_port);
    return x->client_port > 0 && x->peer_port > 0 && x->peer_port != x->client_port;
}

eh_etcd *eh_prepare(void)
{
    ts_children_install();
    eh_etcd *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(x->dir, sizeof x->dir, "%s/actorc-etcd.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(x->dir)) {
        fprintf(stderr, "etcd harness: mkdtemp %s: %s\n", x->dir, strerror(errno));
        free(x);
        return NULL;
    }
    ts_dir_track(x->dir, true);
    snprintf(x->data, sizeof x->data, "%s/data", x->dir);
    snprintf(x->log, sizeof x->log, "%s/etcd.log", x->dir);
    if (!pick_ports(x)) {
        fprintf(stderr, "etcd harness: no free port on 127.0.0.1\n");
        eh_destroy(x);
        return NULL;
    }
    return x;
}

/* Start the process; its pid, or -1. */
static pid_t spawn(const eh_etcd *x)
{
    char client[64], peer[64], cluster[96];
    snprintf(client, sizeof client, "http://127.0.0.1:%d", x->client_port);
    snprintf(peer, sizeof peer, "http://127.0.0.1:%d", x->peer_port);
    snprintf(cluster, sizeof cluster, "default=%s", peer);
    const char *bin = eh_etcd_binary();
    char *argv[] = {(char *)bin, "--name", "default", "--data-dir", (char *)x->data,
                    "--listen-client-urls", client, "--advertise-client-urls", client,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", cluster, NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child: only async-signal-safe calls until exec. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
    int out = open(x->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    closefrom(3);
    execv(bin, argv);
    _exit(127);
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
    char *buf = arg;
    size_t have = strlen(buf), add = size * n;
    if (have + add < 256) {
        memcpy(buf + have, p, add);
        buf[have + add] = '\0';
    }
    return size * n;
}

static bool healthy(const eh_etcd *x)
{
    char url[96], body[256] = "";
    snprintf(url, sizeof url, "%s/health", x->url);
    CURL *h = curl_easy_init();
    if (!h)
        return false;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    return rc == CURLE_OK && strstr(body, "\"health\":\"true\"");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void print_log_tail(const eh_etcd *x)
{
    FILE *f = fopen(x->log, "r");
    if (!f)
        return;
    char lines[12][512];
    size_t n = 0;
    while (fgets(lines[n % 12], sizeof lines[0], f))
        n++;
    fclose(f);
    fprintf(stderr, "etcd harness: the end of %s:\n", x->log);
    for (size_t i = n > 12 ? n - 12 : 0; i < n; i++)
        fprintf(stderr, "  %s", lines[i % 12]);
}

bool eh_run(eh_etcd *x)
{
    ts_children_install();
    pid_t pid = spawn(x);
    if (pid < 0) {
        fprintf(stderr, "etcd harness: fork: %s\n", strerror(errno));
        return false;
    }
    x->pid = pid;
    ts_child_track(pid, true, "etcd harness");
    double deadline = now_s() + HEALTH_WAIT_S;
    while (now_s() < deadline) {
        if (healthy(x))
            return true;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            ts_child_track(pid, false, "etcd harness");
            x->pid = 0;
            fprintf(stderr, "etcd harness: etcd on port %d exited (status 0x%x)\n",
                    x->client_port, (unsigned)status);
            print_log_tail(x);
            return false;
        }
        sleep_ms(50);
    }
    fprintf(stderr, "etcd harness: etcd on port %d not healthy after %.0f s\n", x->client_port,
            HEALTH_WAIT_S);
    print_log_tail(x);
    eh_kill(x);
    return false;
}

eh_etcd *eh_start(void)
{
    eh_etcd *x = eh_prepare();
    for (int i = 0; x && i < START_TRIES; i++) {
        if (eh_run(x))
            return x;
        /* Most likely a port taken since it was probed: new ones. */
        ts_dir_remove(x->data);
        if (!pick_ports(x))
            break;
    }
    eh_destroy(x);
    return NULL;
}

void eh_kill(eh_etcd *x)
{
    if (!x || x->pid <= 0)
        return;
    kill(x->pid, SIGKILL);
    waitpid(x->pid, NULL, 0);
    ts_child_track(x->pid, false, "etcd harness");
    x->pid = 0;
}

void eh_destroy(eh_etcd *x)
{
    if (!x)
        return;
    eh_kill(x);
    ts_dir_remove(x->dir);
    ts_dir_track(x->dir, false);
    free(x);
}

/* ---- waiting for a keeper's or a watcher's thread ----------------------- */

bool eh_wait_reg_state(struct ac__etcd_reg *reg, int state, unsigned long long failures,
                       double timeout_s, struct ac__etcd_reg_info *out)
{
    double end = now_s() + timeout_s;
    for (;;) {
        bool ok = ac__etcd_reg_status(reg, out) == AC_OK;
        if (ok && (int)out->state == state && out->failures >= failures)
            return true;
        if (!ok || now_s() > end)
            return false;
        sleep_ms(10);
    }
}

bool eh_wait_watch_state(struct ac__etcd_watch *w, int state, unsigned long long failures,
                         double timeout_s, struct ac__etcd_watch_info *out)
{
    double end = now_s() + timeout_s;
    for (;;) {
        bool ok = ac__etcd_watch_status(w, out) == AC_OK;
        if (ok && (int)out->state == state && out->failures >= failures)
            return true;
        if (!ok || now_s() > end)
            return false;
        sleep_ms(10);
    }
}

/* ---- the group fixture -------------------------------------------------- */

struct ac__etcd *eh_client(const char *url, const struct ac__etcd_options *o)
{
    const char *list[] = {url};
    ac__etcd_options quick = {.backoff_initial_ms = 50, .backoff_max_ms = 500};
    ac__etcd *e = ac__etcd_open(list, 1, o ? o : &quick);
    if (!e)
        fprintf(stderr, "etcd harness: cannot open a client of %s: %s\n", url,
                ac_last_error());
    return e;
}

int eh_group_setup(void **state)
{
    eh_fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    fx->etcd = eh_start();
    fx->e = fx->etcd ? eh_client(fx->etcd->url, NULL) : NULL;
    if (!fx->e) {
        eh_destroy(fx->etcd);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

int eh_group_teardown(void **state)
{
    eh_fixture *fx = *state;
    if (!fx)
        return 0;
    ac_status st = ac__etcd_close(fx->e);
    if (st != AC_OK)
        fprintf(stderr, "etcd harness: close: %s\n", ac_last_error());
    eh_destroy(fx->etcd);
    free(fx);
    return st == AC_OK ? 0 : -1;
}
