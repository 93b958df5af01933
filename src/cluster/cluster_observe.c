/*
 * The cluster in the system's view (actorc/observe.h): one element of the
 * "cluster" section — its name, provider and state, the members with
 * their status, incarnation and roles, and the latest member events.
 *
 * Everything comes from what the cluster already publishes for any
 * thread under its lock (the member list, the status), copied out by
 * the public calls; the events are a ring of the last
 * AC__CLUSTER_RECENT_EVENTS the actor emitted, written in its turn under
 * the same lock, copied out under it. The lock is held for copies only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster_internal.h"

static const char *const state_names[] = {
    [AC_CLUSTER_JOINING] = "joining", [AC_CLUSTER_JOINED] = "joined",
    [AC_CLUSTER_RETRYING] = "retrying", [AC_CLUSTER_LEFT] = "left"};
static const char *const status_names[] = {
    [AC_MEMBER_UP] = "up", [AC_MEMBER_UNREACHABLE] = "unreachable", [AC_MEMBER_DOWN] = "down"};
static const char *const event_names[] = {
    [AC_MEMBER_EVENT_UP] = "up", [AC_MEMBER_EVENT_UNREACHABLE] = "unreachable",
    [AC_MEMBER_EVENT_REACHABLE] = "reachable", [AC_MEMBER_EVENT_DOWN] = "down"};

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ac__cluster_observe_event(ac_cluster *c, ac_member_event_kind kind,
                               const ac__member_rec *r, const char *why)
{
    pthread_mutex_lock(&c->lock);
    ac__recent_event *e = &c->recent[c->recent_count % AC__CLUSTER_RECENT_EVENTS];
    e->kind = kind;
    e->time_ms = wall_ms();
    e->incarnation = r->incarnation;
    snprintf(e->system, sizeof e->system, "%s", r->system ? r->system : "");
    snprintf(e->address, sizeof e->address, "%s", r->address ? r->address : "");
    snprintf(e->why, sizeof e->why, "%s", why ? why : "");
    c->recent_count++;
    pthread_mutex_unlock(&c->lock);
}

static void members_write(ac_json *j, ac_cluster *c)
{
    ac_member_list list = {0};
    ac_json_array(j);
    if (ac_cluster_members(c, &list) == AC_OK) {
        for (size_t i = 0; i < list.count; i++) {
            const ac_member *m = &list.members[i];
            ac_json_object(j);
            ac_json_key(j, "system");
            ac_json_string(j, m->system);
            ac_json_key(j, "address");
            ac_json_string(j, m->address);
            ac_json_key(j, "status");
            ac_json_string(j, m->status <= AC_MEMBER_DOWN ? status_names[m->status] : "unknown");
            ac_json_key(j, "incarnation");
            ac_json_uint(j, m->incarnation);
            ac_json_key(j, "incarnation_hex"); /* whole, where a double would round it */
            char hex[24];
            snprintf(hex, sizeof hex, "%016" PRIx64, m->incarnation);
            ac_json_string(j, hex);
            ac_json_key(j, "self");
            ac_json_bool(j, m->self);
            ac_json_key(j, "roles");
            ac_json_array(j);
            for (size_t k = 0; k < m->roles_count; k++)
                ac_json_string(j, m->roles[k]);
            ac_json_array_end(j);
            ac_json_object_end(j);
        }
    }
    ac_member_list_free(&list);
    ac_json_array_end(j);
}

static void events_write(ac_json *j, ac_cluster *c)
{
    ac__recent_event copy[AC__CLUSTER_RECENT_EVENTS];
    pthread_mutex_lock(&c->lock);
    uint64_t total = c->recent_count;
    uint64_t n = total < AC__CLUSTER_RECENT_EVENTS ? total : AC__CLUSTER_RECENT_EVENTS;
    for (uint64_t i = 0; i < n; i++) /* newest first */
        copy[i] = c->recent[(total - 1 - i) % AC__CLUSTER_RECENT_EVENTS];
    pthread_mutex_unlock(&c->lock);
    ac_json_key(j, "events_total");
    ac_json_uint(j, total);
    ac_json_key(j, "events");
    ac_json_array(j);
    for (uint64_t i = 0; i < n; i++) {
        const ac__recent_event *e = &copy[i];
        ac_json_object(j);
        ac_json_key(j, "time_ms");
        ac_json_uint(j, e->time_ms);
        ac_json_key(j, "kind");
        ac_json_string(j, e->kind <= AC_MEMBER_EVENT_DOWN ? event_names[e->kind] : "unknown");
        ac_json_key(j, "system");
        ac_json_string(j, e->system);
        ac_json_key(j, "address");
        ac_json_string(j, e->address);
        ac_json_key(j, "incarnation");
        ac_json_uint(j, e->incarnation);
        ac_json_key(j, "why");
        ac_json_string(j, e->why[0] ? e->why : NULL);
        ac_json_object_end(j);
    }
    ac_json_array_end(j);
}

static void cluster_write(ac_json *j, void *arg)
{
    ac_cluster *c = arg;
    ac_cluster_status st = {0};
    bool have = ac_cluster_status_get(c, &st) == AC_OK;
    if (!have)
        st.state = AC_CLUSTER_LEFT;
    ac_json_object(j);
    ac_json_key(j, "name");
    ac_json_string(j, c->name);
    ac_json_key(j, "provider");
    ac_json_string(j, c->provider->name);
    ac_json_key(j, "state");
    ac_json_string(j, st.state <= AC_CLUSTER_LEFT ? state_names[st.state] : "unknown");
    ac_json_key(j, "members_up");
    ac_json_uint(j, st.members_up);
    ac_json_key(j, "members_unreachable");
    ac_json_uint(j, st.members_unreachable);
    ac_json_key(j, "attempts_failed");
    ac_json_uint(j, st.attempts_failed);
    ac_json_key(j, "last_error");
    ac_json_string(j, have && st.last_error[0] ? st.last_error : NULL);
    ac_json_key(j, "members");
    members_write(j, c);
    events_write(j, c);
    ac_json_object_end(j);
    ac_clear_error();
}

void ac__cluster_observe_start(ac_cluster *c)
{
    c->observed = ac_observe_add(c->system, "cluster", cluster_write, c);
    ac_clear_error(); /* out of the view is all a failure costs */
}
