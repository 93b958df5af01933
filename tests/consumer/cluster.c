/*
 * A consumer of an installed actorc's cluster membership: a node on
 * loopback joins a cluster alone (no seeds: the first of its cluster),
 * subscribes an actor, and prints what that actor hears first: this
 * node, Up.
 *
 * Expected output (one line):
 *     cluster: consumer joined, first event: up self
 */
#define _POSIX_C_SOURCE 200809L

#include <actorc.h>
#include <actorc/cluster.h>

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static char first[64];

static void listener_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    const ac_member_event *ev = ac_member_event_get(msg);
    pthread_mutex_lock(&lock);
    if (ev && !first[0])
        snprintf(first, sizeof first, "%s%s", ev->kind == AC_MEMBER_EVENT_UP ? "up" : "other",
                 ev->member.self ? " self" : "");
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
}

static const ac_actor_def listener_def = {.name = "Listener", .receive = listener_receive};

int main(void)
{
    ac_system_options so = {.log_level = AC_LOG_WARN}; /* only this line on the output */
    ac_system *sys = ac_system_create("consumer", &so);
    ac_node_options no = {.bind = "tcp://127.0.0.1:0"};
    ac_node *node = sys ? ac_node_start(sys, &no) : NULL;
    ac_cluster_options o = {.name = "consumer"};
    ac_cluster *cluster = node ? ac_cluster_join(sys, &o) : NULL;
    ac_ref *listener = cluster ? ac_spawn(sys, ac_props_new(&listener_def, NULL), "listener") : NULL;
    if (!listener || ac_cluster_subscribe(cluster, listener) != AC_OK) {
        fprintf(stderr, "cluster: %s\n", ac_last_error());
        return 1;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&lock);
    while (!first[0] && pthread_cond_timedwait(&cond, &lock, &until) == 0) {
    }
    pthread_mutex_unlock(&lock);
    printf("cluster: consumer joined, first event: %s\n", first[0] ? first : "none");
    ac_ref_release(listener);
    ac_system_terminate(sys);
    return first[0] ? 0 : 1;
}
