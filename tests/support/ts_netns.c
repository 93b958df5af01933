/*
 * Network namespaces for partition tests (ts_netns.h). Every change goes
 * through ip(8) and nft(8), started with posix_spawn and an argument
 * vector (no shell), and waited for; a run's namespaces are listed for
 * exit in a small table so that a failed test still removes them.
 */
#ifndef _GNU_SOURCE /* programs that build it may define it on the command line */
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ts_netns.h"

extern char **environ;

static const char *find_tool(const char *name)
{
    static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
    static char found[2][64];
    int slot = strcmp(name, "ip") == 0 ? 0 : 1;
    if (found[slot][0])
        return found[slot];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(found[slot], sizeof found[slot], "%s/%s", dirs[i], name);
        if (access(found[slot], X_OK) == 0)
            return found[slot];
    }
    found[slot][0] = '\0';
    return NULL;
}

const char *ts_netns_ip(void) { return find_tool("ip"); }

/* Run argv (argv[0] a path), its output discarded; its exit status, or
 * -1 when it could not start. */
static int run(const char *const *argv)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ip with up to 15 arguments (NULL-terminated). */
static bool ip(const char *first, ...)
{
    const char *argv[20] = {ts_netns_ip(), first};
    int n = 2;
    va_list ap;
    va_start(ap, first);
    const char *a;
    while (n < 18 && (a = va_arg(ap, const char *)))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return argv[0] && run(argv) == 0;
}

/* nft in namespace ns with the given arguments (NULL-terminated). */
static bool nft_in(const char *ns, const char *first, ...)
{
    const char *argv[40] = {ts_netns_ip(), "netns", "exec", ns, find_tool("nft"), first};
    int n = 6;
    va_list ap;
    va_start(ap, first);
    const char *a;
    while (n < 38 && (a = va_arg(ap, const char *)))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return argv[0] && argv[4] && run(argv) == 0;
}

/* ---- what exit removes ------------------------------------------------------ */

static ts_netns *live[4];

static void remove_at_exit(void)
{
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        if (live[i])
            ts_netns_destroy(live[i]);
}

static void track(ts_netns *net, bool on)
{
    static bool installed;
    if (!installed) {
        atexit(remove_at_exit);
        installed = true;
    }
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        if (on ? !live[i] : live[i] == net) {
            live[i] = on ? net : NULL;
            return;
        }
}

/* A namespace of a run that crashed: "acn<pid>x..." whose pid is gone. */
static void sweep_stale(void)
{
    DIR *d = opendir("/run/netns");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0;
        char tail[64];
        if (sscanf(e->d_name, "acn%dx%63s", &pid, tail) != 2 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        ip("netns", "del", e->d_name, NULL);
    }
    closedir(d);
}

/* ---- making and removing --------------------------------------------------- */

static bool make_node(ts_netns *net, int i)
{
    char veth[16], cidr[32];
    snprintf(veth, sizeof veth, "v%d", i);
    snprintf(cidr, sizeof cidr, "%s/24", net->addr[i]);
    const char *ns = net->name[i];
    if (!ip("netns", "add", ns, NULL))
        return false;
    net->made[i] = true;
    return ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", veth, "netns",
              net->hub, NULL) &&
           ip("-n", net->hub, "link", "set", veth, "master", "br0", "up", NULL) &&
           ip("-n", ns, "addr", "add", cidr, "dev", "eth0", NULL) &&
           ip("-n", ns, "link", "set", "eth0", "up", NULL) &&
           ip("-n", ns, "link", "set", "lo", "up", NULL);
}

static void name_run(ts_netns *net, int count)
{
    static int seq;
    int pid = (int)getpid();
    memset(net, 0, sizeof *net);
    net->count = count;
    char prefix[sizeof net->prefix];
    snprintf(prefix, sizeof prefix, "acn%dx%d", pid, seq++);
    memcpy(net->prefix, prefix, sizeof prefix);
    snprintf(net->hub, sizeof net->hub, "%s-hub", prefix);
    /* 10.<100..199>.<0..249>.0/24, from the pid and the run. */
    int a = 100 + pid % 100, b = (pid / 100 + seq * 7) % 250;
    for (int i = 0; i < count; i++) {
        snprintf(net->name[i], sizeof net->name[i], "%s-n%d", prefix, i);
        snprintf(net->addr[i], sizeof net->addr[i], "10.%d.%d.%d", a, b, 10 + i);
    }
}

int ts_netns_create(ts_netns *net, int count, char *why, size_t cap)
{
    if (count < 1 || count > TS_NETNS_MAX) {
        snprintf(why, cap, "ts_netns_create: %d namespaces (1..%d)", count, TS_NETNS_MAX);
        return -1;
    }
    if (geteuid() != 0 || !ts_netns_ip() || !find_tool("nft")) {
        snprintf(why, cap, "network namespaces need root, ip(8) and nft(8)%s",
                 geteuid() != 0 ? ": not root" : ": a tool is missing");
        return 0;
    }
    sweep_stale();
    name_run(net, count);
    if (!ip("netns", "add", net->hub, NULL)) {
        snprintf(why, cap, "ip netns add is refused here (no network namespaces)");
        return 0;
    }
    net->hub_made = true;
    track(net, true);
    bool ok = ip("-n", net->hub, "link", "add", "br0", "type", "bridge", NULL) &&
              ip("-n", net->hub, "link", "set", "br0", "up", NULL);
    for (int i = 0; ok && i < count; i++)
        ok = make_node(net, i);
    if (ok)
        return 1;
    snprintf(why, cap, "could not make the namespaces of %s", net->prefix);
    ts_netns_destroy(net);
    return -1;
}

bool ts_netns_partition(ts_netns *net, const int *side)
{
    const char *table = net->prefix;
    for (int i = 0; i < net->count; i++) {
        const char *ns = net->name[i];
        if (!nft_in(ns, "add", "table", "inet", table, NULL))
            return false;
        net->cut[i] = true;
        if (!nft_in(ns, "add", "chain", "inet", table, "in", "{", "type", "filter", "hook",
                    "input", "priority", "0", ";", "}", NULL) ||
            !nft_in(ns, "add", "chain", "inet", table, "out", "{", "type", "filter", "hook",
                    "output", "priority", "0", ";", "}", NULL))
            return false;
        for (int j = 0; j < net->count; j++) {
            if (side[j] == side[i])
                continue;
            if (!nft_in(ns, "add", "rule", "inet", table, "in", "ip", "saddr", net->addr[j],
                        "drop", NULL) ||
                !nft_in(ns, "add", "rule", "inet", table, "out", "ip", "daddr", net->addr[j],
                        "drop", NULL))
                return false;
        }
    }
    return true;
}

bool ts_netns_heal(ts_netns *net)
{
    bool ok = true;
    for (int i = 0; i < net->count; i++) {
        if (!net->cut[i])
            continue;
        if (nft_in(net->name[i], "delete", "table", "inet", net->prefix, NULL) ||
            !nft_in(net->name[i], "list", "table", "inet", net->prefix, NULL))
            net->cut[i] = false;
        else
            ok = false;
    }
    return ok;
}

/* Is a namespace of this run still listed? */
static bool any_left(const ts_netns *net)
{
    DIR *d = opendir("/run/netns");
    if (!d)
        return false;
    size_t n = strlen(net->prefix);
    bool left = false;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, net->prefix, n) == 0 && e->d_name[n] == '-')
            left = true;
    closedir(d);
    return left;
}

bool ts_netns_destroy(ts_netns *net)
{
    if (!net->hub_made)
        return true;
    ts_netns_heal(net);
    /* A node's namespace takes its veth with it; the hub, the bridge. */
    for (int i = 0; i < net->count; i++)
        if (net->made[i] && ip("netns", "del", net->name[i], NULL))
            net->made[i] = false;
    if (ip("netns", "del", net->hub, NULL))
        net->hub_made = false;
    bool gone = !any_left(net);
    if (gone) {
        net->hub_made = false;
        track(net, false);
    }
    return gone;
}
