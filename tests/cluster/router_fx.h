/*
 * The cluster routers' test fixture (router_fx.c), shared by the router
 * tests: member processes (actorc-test-router-node) on ports of
 * 127.0.0.1 probed free, started and ended by pid through the remote
 * tests' process helpers (rt_proc.c), and this process as a client
 * member, all joined by static seeds; and the helpers the tests read
 * routers with. Functions assert with cmocka: call them from a test.
 */
#ifndef ACTORC_TESTS_ROUTER_FX_H
#define ACTORC_TESTS_ROUTER_FX_H

#include <actorc/cluster.h>

#include "rt_proc.h"
#include "ts_test.h"

#define MAX_MEMBERS 5
#define HB_IVL "100"
#define ASK_MS 8000

/* The heartbeat timeout of the members and the client, ms: short, so that
 * a lost member is Down soon; a test of Unreachable sets a long one. */
/* The heartbeat timeout of the members and the client, ms. Long: a member
 * is Unreachable, and out of every routee set, once silent for half of
 * it, and on a loaded machine (sanitizers, parallel builds) beats come
 * hundreds of milliseconds late. A killed member is Down at once all the
 * same: its connection drops. */
#define HB_TIMEOUT_MS 8000
extern int hb_timeout_ms;

typedef struct cluster_fx {
    int ports[MAX_MEMBERS + 1]; /* the members', then the client's */
    int n_ports;
    rt_proc members[MAX_MEMBERS];
    int n;
    ac_system *sys;
    ac_cluster *cluster;
} cluster_fx;

/* The replicas on every member with the role "replica". */
extern const ac_cluster_router_options replicas;

void sleep_ms(long ms);
/* Ports for `members` members and the client, all seeds of everyone. */
void fx_ports(cluster_fx *c, int members);
/* Member i (0-based) with its replica in `mode`. */
void fx_start_member(cluster_fx *c, int i, const char *mode);
void fx_join_as(cluster_fx *c, ts_fixture *fx, const char *name, const char *role);
void fx_join_client(cluster_fx *c, ts_fixture *fx, const char *name);
/* End every member process by its pid. */
void fx_end(cluster_fx *c);
/* The three-member cluster most tests use, member modes as given. */
void fx_three(cluster_fx *c, ts_fixture *fx, const char *name, const char *m0, const char *m1,
              const char *m2);
ac_ref *spawn(cluster_fx *c, ac_props *props, const char *name);
/* The routees' paths, in the router's order, into paths (joined by ' '). */
size_t routees(ac_ref *router, char *paths, size_t cap);
bool wait_routees(ac_ref *router, size_t want, double timeout_s);
/* Wait until this node has `n` asks waiting on other members. */
bool wait_pending_asks(ac_system *sys, uint64_t n, double timeout_s);
const char *member_path(cluster_fx *c, int i, char *buf, size_t cap);
/* The first `count` members' replica paths, sorted by address. */
void sorted_paths(cluster_fx *c, int count, char *out, size_t cap);
/* The sender's path of an ask answered through `router`. */
void ask_sender(ac_ref *router, const char *text, char *out, size_t cap);

#endif
