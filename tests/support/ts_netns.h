/*
 * Network namespaces for partition tests and benchmarks: n nodes, each
 * in a namespace of its own with one veth into a bridge that lives in a
 * hub namespace of its own, on a private 10.x.y.0/24 subnet chosen from
 * the pid (nothing is added to the starting namespace but the namespace
 * names). A partition is an nftables table ("inet", named after the
 * run) of drop rules in each node's namespace against the addresses of
 * the other side; healing deletes those tables.
 *
 * Names carry a prefix unique to the run ("acn<pid>x<seq>"). Everything
 * made is removed by ts_netns_destroy, at exit if a test did not get
 * there, and, for what a crashed run left, by the next run (namespaces
 * of this prefix's form whose pid no longer runs). ts_netns_destroy
 * checks that nothing of its own is left.
 *
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), ip(8) and nft(8).
 * Outside tests' processes, from one thread.
 */
#ifndef TS_NETNS_H
#define TS_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#define TS_NETNS_MAX 8

typedef struct ts_netns {
    char prefix[32];
    int count;
    char addr[TS_NETNS_MAX][24]; /* "10.x.y.z" of node i */
    char name[TS_NETNS_MAX][48]; /* its namespace */
    char hub[48];
    bool made[TS_NETNS_MAX], hub_made;
    bool cut[TS_NETNS_MAX]; /* a drop table is in node i's namespace */
} ts_netns;

/* Make `count` namespaces (at most TS_NETNS_MAX). 1: made; 0: this
 * machine cannot (not root, no ip or nft, namespaces refused), the
 * reason in why, nothing left behind; -1: failed half way (removed
 * again), the reason in why. */
int ts_netns_create(ts_netns *net, int count, char *why, size_t cap);
/* The path of ip(8), to run a program in node i's namespace:
 * ip netns exec <net->name[i]> program args... */
const char *ts_netns_ip(void);
/* Cut side 0 from side 1 (side[i] for node i): drop rules in every
 * node's namespace. False when a rule could not be added. */
bool ts_netns_partition(ts_netns *net, const int *side);
/* Remove every drop table; true when none is left. */
bool ts_netns_heal(ts_netns *net);
/* Remove everything made; true when it is verified gone (no namespace
 * of this run in `ip netns list`). */
bool ts_netns_destroy(ts_netns *net);

#endif
