/*
 * The node processes of the cluster chaos soak (chaos_soak.h): each is
 * this program again (--chaos-node), started with a pipe on its stdin for
 * commands and one on its stdout for reports, entered into its network
 * namespace (when the run has them) between fork and exec, and killed
 * with the driver (PR_SET_PDEATHSIG). A reader thread per process turns
 * its report lines into the fields of its ch_node; it ends when the
 * process does (end of file), and the process's end joins it. Every
 * process is ended by its pid: SIGTERM, then SIGKILL after a grace, or
 * SIGKILL at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos_soak.h"
#include "soak.h"

ch_nodes g_nodes = {.lock = PTHREAD_MUTEX_INITIALIZER};

typedef struct reader_arg {
    int index, fd;
} reader_arg;

static void take_line(ch_node *n, const char *line)
{
    char addr[48];
    unsigned long long inc;
    int up, unreach;
    if (sscanf(line, "ready %47s %llx", addr, &inc) == 2) {
        n->incarnation = inc;
        n->ready = true;
    } else if (sscanf(line, "view %d %d", &up, &unreach) == 2) {
        n->view_up = up;
        n->view_unreachable = unreach;
    } else if (!strcmp(line, "downed")) {
        n->downed = true;
    }
}

static void *reader(void *p)
{
    reader_arg a = *(reader_arg *)p;
    free(p);
    char buf[1024];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(a.fd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *nl;
        while ((nl = strchr(buf, '\n'))) {
            *nl = '\0';
            if (g_cfg.verbose)
                fprintf(stderr, "soak: node %d: %s\n", a.index, buf);
            pthread_mutex_lock(&g_nodes.lock);
            take_line(&g_nodes.node[a.index], buf);
            pthread_mutex_unlock(&g_nodes.lock);
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have - used + 1);
            have -= used;
        }
        if (have == sizeof buf - 1)
            have = 0;
    }
    close(a.fd);
    return NULL;
}

/* In the child: the namespace, the pipes, then exec. Never returns. */
static void child(const ch_node *n, int in_fd, int out_fd, pid_t parent, char *const argv[])
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    if (n->ns[0]) {
        char path[128];
        snprintf(path, sizeof path, "/run/netns/%s", n->ns);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
            _exit(126);
        close(fd);
    }
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    close(in_fd);
    close(out_fd);
    execv(argv[0], argv);
    _exit(127);
}

bool ch_node_start(int i)
{
    ch_node *n = &g_nodes.node[i];
    char index[16], stable[16], seeds[(CH_MAX_NODES + 1) * 48] = "";
    for (int k = 0; k <= g_nodes.count; k++) {
        strcat(seeds, g_nodes.seeds[k]);
        if (k < g_nodes.count)
            strcat(seeds, ",");
    }
    snprintf(index, sizeof index, "%d", i);
    snprintf(stable, sizeof stable, "%d", g_nodes.stable_after_ms);
    char *argv[] = {g_nodes.self_exe, "--chaos-node", index, "--bind", n->addr, "--seeds", seeds,
                    "--stable-after", stable, NULL};
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return false;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]);
        return false;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child(n, in[0], out[1], parent, argv);
    close(in[0]);
    close(out[1]);
    reader_arg *ra = malloc(sizeof *ra);
    if (pid < 0 || !ra) {
        free(ra);
        close(in[1]), close(out[0]);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return false;
    }
    pthread_mutex_lock(&g_nodes.lock);
    n->pid = pid;
    n->ctl = in[1];
    n->incarnation = 0;
    n->ready = n->downed = n->stopped = false;
    n->view_up = n->view_unreachable = 0;
    n->started_ns = soak_now_ns();
    n->rss_base_kb = -1;
    pthread_mutex_unlock(&g_nodes.lock);
    *ra = (reader_arg){.index = i, .fd = out[0]};
    n->reader_running = pthread_create(&n->reader, NULL, reader, ra) == 0;
    if (!n->reader_running) {
        free(ra);
        close(out[0]);
    }
    return true;
}

/* Reaped within `ms`: true, its wait status in *st. */
static bool reaped_within(pid_t pid, int ms, int *st)
{
    for (int t = 0; t < ms; t += 10) {
        if (waitpid(pid, st, WNOHANG) == pid)
            return true;
        soak_sleep_us(10000);
    }
    return false;
}

/* A node process ends only when the driver ends it: by SIGKILL, or by
 * SIGTERM with status 0 (under the sanitizers, their checks at exit
 * passed too). */
static void end_process(int i, pid_t pid, bool hard)
{
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
        soak_violation("cluster: node %d (pid %d) ended on its own (%s %d)", i, (int)pid,
                       WIFEXITED(st) ? "status" : "signal",
                       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        return;
    }
    if (!hard) {
        kill(pid, SIGCONT);
        kill(pid, SIGTERM);
        if (reaped_within(pid, 5000 * SOAK_SLOW, &st)) {
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                soak_violation("cluster: node %d (pid %d) ended by SIGTERM with %s %d", i,
                               (int)pid, WIFEXITED(st) ? "status" : "signal",
                               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            return;
        }
        soak_violation("cluster: node %d (pid %d) still runs %d ms after SIGTERM", i, (int)pid,
                       5000 * SOAK_SLOW);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

void ch_node_end(int i, bool hard)
{
    ch_node *n = &g_nodes.node[i];
    if (n->pid > 0)
        end_process(i, n->pid, hard);
    pthread_mutex_lock(&g_nodes.lock);
    n->pid = 0;
    int ctl = n->ctl;
    n->ctl = -1;
    pthread_mutex_unlock(&g_nodes.lock);
    if (ctl >= 0)
        close(ctl);
    /* The reader ends at the end of what the process wrote. */
    if (n->reader_running) {
        pthread_join(n->reader, NULL);
        n->reader_running = false;
    }
    pthread_mutex_lock(&g_nodes.lock);
    n->ready = false;
    n->incarnation = 0;
    pthread_mutex_unlock(&g_nodes.lock);
}

bool ch_node_command(int i, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (len < 0 || len >= (int)sizeof line - 1)
        return false;
    line[len++] = '\n';
    int fd = g_nodes.node[i].ctl;
    return fd >= 0 && write(fd, line, (size_t)len) == len;
}

void ch_nodes_end_all(void)
{
    for (int i = 0; i < g_nodes.count; i++)
        if (g_nodes.node[i].pid > 0 || g_nodes.node[i].reader_running)
            ch_node_end(i, false);
}

long ch_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}
