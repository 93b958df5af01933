/*
 * The network of the cluster chaos soak (chaos_soak.h). With root, ip(8)
 * and nft(8) each node and the driver live in a network namespace of
 * their own on one bridge (tests/support/ts_netns.c, which the partition
 * tests and benchmark use too), and a partition is nftables drop rules in
 * those namespaces; otherwise every process is on 127.0.0.1 and a
 * partition is the fault layer's blackhole on each link that crosses it,
 * set in the driver's node directly and in each node process through its
 * command pipe. Slow and lossy links are the fault layer's in both.
 *
 * Index g_nodes.count stands for the driver. The driver is always on the
 * majority side, so its own rules (fault mode) are on the links to the
 * minority.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chaos_soak.h"
#include "soak.h"
#include "ts_netns.h"

#define CH_NETNS_PORT 7400

static struct {
    bool netns;
    ts_netns net;
    bool net_made;
    char driver_ns[48];
} N;

_Static_assert(sizeof g_nodes.node[0].addr == sizeof g_nodes.seeds[0],
               "a node's address is a copy of its seed");

bool ch_net_is_netns(void) { return N.netns; }

static int fault_setup(int nodes, char *why, size_t cap)
{
    int ports[CH_MAX_NODES + 1];
    if (ac_node_free_ports(ports, (size_t)nodes + 1) != AC_OK) {
        snprintf(why, cap, "no free ports: %s", ac_last_error());
        return 3;
    }
    for (int i = 0; i <= nodes; i++)
        snprintf(g_nodes.seeds[i], sizeof g_nodes.seeds[i], "127.0.0.1:%d", ports[i]);
    return 0;
}

int ch_net_setup(int nodes, bool want_netns, const char **mode, char *why, size_t cap)
{
    g_nodes.count = nodes;
    for (int i = 0; i < nodes; i++) {
        g_nodes.node[i].ctl = -1;
        g_nodes.node[i].ns[0] = '\0';
    }
    int made = want_netns ? ts_netns_create(&N.net, nodes + 1, why, cap) : 0;
    if (made < 0)
        return 3;
    N.netns = made == 1;
    N.net_made = N.netns;
    *mode = N.netns ? "netns" : "fault";
    if (!N.netns) {
        int rc = fault_setup(nodes, why, cap);
        for (int i = 0; rc == 0 && i < nodes; i++)
            memcpy(g_nodes.node[i].addr, g_nodes.seeds[i], sizeof g_nodes.node[i].addr);
        return rc;
    }
    for (int i = 0; i <= nodes; i++)
        snprintf(g_nodes.seeds[i], sizeof g_nodes.seeds[i], "%s:%d", N.net.addr[i],
                 CH_NETNS_PORT);
    for (int i = 0; i < nodes; i++) {
        memcpy(g_nodes.node[i].addr, g_nodes.seeds[i], sizeof g_nodes.node[i].addr);
        snprintf(g_nodes.node[i].ns, sizeof g_nodes.node[i].ns, "%s", N.net.name[i]);
    }
    snprintf(N.driver_ns, sizeof N.driver_ns, "%s", N.net.name[nodes]);
    return 0;
}

bool ch_net_enter_driver(void)
{
    if (!N.netns)
        return true;
    char path[128];
    snprintf(path, sizeof path, "/run/netns/%s", N.driver_ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Rules "peer=<b>,<items>" at a (a node's pipe, or the driver's node). */
static bool rule_at(ac_node *driver, int a, int b, const char *items)
{
    const char *peer = g_nodes.seeds[b];
    if (a == g_nodes.count) {
        char spec[128];
        snprintf(spec, sizeof spec, "peer=%s,%s", peer, items);
        return ac_node_faults_apply(driver, spec) == AC_OK || ac_last_status() == AC_ENOTFOUND;
    }
    if (g_nodes.node[a].ctl < 0)
        return true; /* not running: a new incarnation starts with every link passing */
    return ch_node_command(a, "fault peer=%s,%s", peer, items);
}

bool ch_net_link(ac_node *driver, int a, int b, const char *items)
{
    const char *it = items ? items : "pass";
    bool ok = rule_at(driver, a, b, it);
    return rule_at(driver, b, a, it) && ok;
}

bool ch_net_partition(ac_node *driver, const int *side)
{
    int all[CH_MAX_NODES + 1] = {0};
    for (int i = 0; i < g_nodes.count; i++)
        all[i] = side[i];
    if (N.netns)
        return ts_netns_partition(&N.net, all);
    bool ok = true;
    for (int a = 0; a <= g_nodes.count; a++)
        for (int b = a + 1; b <= g_nodes.count; b++)
            if (all[a] != all[b])
                ok = ch_net_link(driver, a, b, "blackhole") && ok;
    return ok;
}

bool ch_net_heal(ac_node *driver)
{
    if (N.netns)
        return ts_netns_heal(&N.net);
    bool ok = true;
    for (int a = 0; a <= g_nodes.count; a++)
        for (int b = a + 1; b <= g_nodes.count; b++)
            ok = ch_net_link(driver, a, b, NULL) && ok;
    return ok;
}

bool ch_net_teardown(void)
{
    if (!N.net_made)
        return true;
    bool gone = ts_netns_destroy(&N.net);
    if (gone)
        N.net_made = false;
    return gone;
}
