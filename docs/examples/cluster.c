// file: docs/examples/cluster.c
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <actorc.h>
#include <actorc/cluster.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

/* A subscriber: prints each member event, counts the other node's. */
static atomic_int backend_up, backend_down;

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    if (!ev)
        return;
    static const char *const kinds[] = {"up", "unreachable", "reachable", "down"};
    printf("%s %s@%s%s\n", kinds[ev->kind], ev->member.system, ev->member.address,
           ev->member.self ? " (this node)" : "");
    if (ac_member_has_role(&ev->member, "backend") && ev->kind == AC_MEMBER_EVENT_UP)
        backend_up++;
    if (ac_member_has_role(&ev->member, "backend") && ev->kind == AC_MEMBER_EVENT_DOWN)
        backend_down++;
}
static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

static bool members_up_is(ac_cluster *c, size_t n) /* waits up to 5 s */
{
    ac_cluster_status st = {0};
    for (int i = 0; i < 500 && ac_cluster_status_get(c, &st) == AC_OK && st.members_up != n; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    return st.members_up == n;
}

int main(void)
{
    /* Two systems, each a node; in real life two processes or hosts. */
    ac_system *front = ac_system_create("front", NULL);
    ac_system *back = ac_system_create("back", NULL);
    ac_node_options o = {.bind = "tcp://127.0.0.1:0"};
    ac_node *front_node = ac_node_start(front, &o);
    ac_node *back_node = ac_node_start(back, &o);
    if (!front_node || !back_node)
        return 1;

    /* Both list both as seeds; roles say what each is for. */
    const char *seeds[] = {ac_node_address(front_node), ac_node_address(back_node)};
    const char *front_roles[] = {"frontend"}, *back_roles[] = {"backend"};
    ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = 2};
    ac_cluster_options fo = {.name = "shop", .roles = front_roles, .roles_count = 1,
                             .static_options = &seed_opts};
    ac_cluster_options bo = fo;
    bo.roles = back_roles;
    ac_cluster *cluster = ac_cluster_join(front, &fo);
    if (!cluster || !ac_cluster_join(back, &bo)) {
        fprintf(stderr, "join: %s\n", ac_last_error());
        return 1;
    }
    ac_ref *watcher = ac_spawn(front, ac_props_new(&watcher_def, NULL), "watcher");
    ac_cluster_subscribe(cluster, watcher);
    int ok = members_up_is(cluster, 2);

    /* The members as this node sees them, sorted by address. */
    ac_member_list list;
    if (ac_cluster_members(cluster, &list) == AC_OK) {
        for (size_t i = 0; i < list.count; i++)
            printf("member %s roles=%s\n", list.members[i].address, list.members[i].roles[0]);
        ok = ok && list.count == 2;
        ac_member_list_free(&list);
    }

    /* The back end goes away: Down on the front end. */
    ac_system_terminate(back);
    ok = ok && members_up_is(cluster, 1);
    for (int i = 0; i < 500 && !backend_down; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    ok = ok && backend_up == 1 && backend_down == 1;

    ac_ref_release(watcher);
    ac_system_terminate(front);
    return ok ? 0 : 1;
}
