/*
 * The cluster routers' test fixture: see router_fx.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <string.h>
#include <time.h>

#include "rn_member.h"
#include "router_fx.h"

int hb_timeout_ms = HB_TIMEOUT_MS;

void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Ports for `members` members and the client, all seeds of everyone. */
void fx_ports(cluster_fx *c, int members)
{
    c->n_ports = members + 1;
    assert_int_equal(ac_node_free_ports(c->ports, (size_t)c->n_ports), AC_OK);
}

/* Member i (0-based) with its replica in `mode`. */
void fx_start_member(cluster_fx *c, int i, const char *mode)
{
    char bind[64], seeds[MAX_MEMBERS + 1][32], timeout[16];
    const char *args[40];
    int a = 0;
    snprintf(timeout, sizeof timeout, "%d", hb_timeout_ms);
    snprintf(bind, sizeof bind, rt_inproc() ? "inproc://member:%d" : "tcp://127.0.0.1:%d",
             c->ports[i]);
    args[a++] = "--bind", args[a++] = bind;
    for (int k = 0; k < c->n_ports; k++) {
        snprintf(seeds[k], sizeof seeds[k], rt_inproc() ? "member:%d" : "127.0.0.1:%d",
                 c->ports[k]);
        args[a++] = "--seed", args[a++] = seeds[k];
    }
    args[a++] = "--role", args[a++] = "replica";
    args[a++] = "--replica", args[a++] = mode;
    args[a++] = "--hb", args[a++] = HB_IVL, args[a++] = timeout;
    args[a] = NULL;
    assert_true(rt_inproc() ? rt_local_start(&c->members[i], rn_member_main, args)
                            : rt_start(&c->members[i], args));
    if (i >= c->n)
        c->n = i + 1;
}

void fx_join_as(cluster_fx *c, ts_fixture *fx, const char *name, const char *role)
{
    c->sys = ts_fx_system(fx, name, NULL);
    assert_non_null(c->sys);
    char bind[64], seeds[MAX_MEMBERS + 1][32];
    const char *seed_list[MAX_MEMBERS + 1];
    snprintf(bind, sizeof bind, rt_inproc() ? "inproc://member:%d" : "tcp://127.0.0.1:%d",
             c->ports[c->n_ports - 1]);
    for (int k = 0; k < c->n_ports; k++) {
        snprintf(seeds[k], sizeof seeds[k], rt_inproc() ? "member:%d" : "127.0.0.1:%d",
                 c->ports[k]);
        seed_list[k] = seeds[k];
    }
    ac_node_options no = {.bind = bind, .heartbeat_ivl_ms = 100, .heartbeat_timeout_ms = hb_timeout_ms};
    assert_non_null(ac_node_start(c->sys, &no));
    const char *roles[] = {role};
    ac_cluster_static_options seed_opts = {.seeds = seed_list, .seeds_count = (size_t)c->n_ports};
    ac_cluster_options co = {.name = "routers", .roles = roles, .roles_count = 1,
                             .static_options = &seed_opts};
    c->cluster = ac_cluster_join(c->sys, &co);
    assert_non_null(c->cluster);
}

void fx_join_client(cluster_fx *c, ts_fixture *fx, const char *name)
{
    fx_join_as(c, fx, name, "client");
}

void fx_end(cluster_fx *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->members[i].pid > 0 || c->members[i].member)
            rt_end(&c->members[i], SIGKILL);
}

/* The three-member cluster most tests use, member modes as given. */
void fx_three(cluster_fx *c, ts_fixture *fx, const char *name, const char *m0,
                     const char *m1, const char *m2)
{
    fx_ports(c, 3);
    fx_start_member(c, 0, m0);
    fx_start_member(c, 1, m1);
    fx_start_member(c, 2, m2);
    fx_join_client(c, fx, name);
}

ac_ref *spawn(cluster_fx *c, ac_props *props, const char *name)
{
    assert_non_null(props);
    ac_ref *r = ac_spawn(c->sys, props, name);
    assert_non_null(r);
    return r;
}

/* The routees' paths, in the router's order, into paths (joined by ' '). */
size_t routees(ac_ref *router, char *paths, size_t cap)
{
    ac_answer a;
    paths[0] = '\0';
    if (ac_ask_wait(router, ac_router_get_routees_msg(), ASK_MS, &a) != AC_OK)
        return 0;
    size_t n = ac_routees_count(a.reply);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(paths + len, len < cap ? cap - len : 0, "%s%s", i ? " " : "",
                                ac_ref_path(ac_routees_at(a.reply, i)));
    ac_answer_release(&a);
    return n;
}

bool wait_routees(ac_ref *router, size_t want, double timeout_s)
{
    char paths[1024];
    double end = ts_now() + timeout_s;
    do {
        if (routees(router, paths, sizeof paths) == want)
            return true;
        sleep_ms(20);
    } while (ts_now() < end);
    return false;
}

const char *member_path(cluster_fx *c, int i, char *buf, size_t cap)
{
    return rt_path(&c->members[i], "routers", "/user/replica", buf, cap);
}

/* Members i, j, k's replica paths, sorted by address. */
void sorted_paths(cluster_fx *c, int count, char *out, size_t cap)
{
    int idx[MAX_MEMBERS];
    for (int i = 0; i < count; i++)
        idx[i] = i;
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            if (strcmp(c->members[idx[j]].address, c->members[idx[i]].address) < 0) {
                int t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    size_t len = 0;
    for (int i = 0; i < count; i++) {
        char p[256];
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "",
                                member_path(c, idx[i], p, sizeof p));
    }
}

const ac_cluster_router_options replicas = {.path = "/user/replica", .role = "replica"};

/* The sender's path of an ask answered through `router`. */
void ask_sender(ac_ref *router, const char *text, char *out, size_t cap)
{
    ac_answer a;
    assert_status(ac_ask_wait(router, ac_msg_str_new(text), ASK_MS, &a), AC_OK);
    assert_non_null(a.sender);
    snprintf(out, cap, "%s", ac_ref_path(a.sender));
    ac_answer_release(&a);
}

bool wait_pending_asks(ac_system *sys, uint64_t n, double timeout_s)
{
    double end = ts_now() + timeout_s;
    do {
        ac_node_stats s;
        if (ac_node_stats_get(ac_system_node(sys), &s) == AC_OK && s.pending_asks >= n)
            return true;
        sleep_ms(5);
    } while (ts_now() < end);
    return false;
}
