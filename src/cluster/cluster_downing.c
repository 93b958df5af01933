/*
 * Split-brain resolution for the static provider, and a node downing
 * itself (the resolver's answer, or the etcd provider's fencing).
 *
 * While resolution is on, a member the remote layer loses without a
 * leave (its connection dropped, its heartbeats stopped) is not Down at
 * once: it stays a member, Unreachable and marked lost, so that both
 * sides of a partition still count it and decide over the same cluster.
 * The cluster actor keeps beating it, which reconnects when the network
 * heals; a beat from it makes it Reachable again. Every tick, once there
 * is an Unreachable member and no member event has come for
 * stable_after_ms, the decision (sbr.c) is taken over the members this
 * node sees (a timer set at each member event fires stable_after_ms
 * later, so the decision is not late by a tick): keep (every Unreachable member is Down, its incarnation
 * tombstoned, its pending asks failed) or down this node.
 *
 * A node that downs itself fails every ask waiting on another node with
 * a NodeDownError at once, leaves the cluster as ac_cluster_leave does
 * (without telling the others: they down it on their own), with the
 * reason in its status, and tells its subscribers Down of every member,
 * itself last; cluster routers lose their routees with those events.
 * Only a new incarnation of its process is a member again. A keeper
 * that hears from an incarnation it downed (a partition healed, or a
 * stop that ended, before that node decided) tells it so with a card
 * flagged DOWNED, and that node downs itself at once
 * (cluster_actor.c).
 *
 * All of it runs in the cluster actor's turns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "cluster/sbr.h"

bool ac__downing_on(const ac_cluster *c) { return c->downing != AC_CLUSTER_DOWNING_OFF; }

ac_status ac__downing_check_stable(const ac_cluster_options *o, int heartbeat_timeout_ms)
{
    if (!o->stable_after_ms || o->stable_after_ms >= heartbeat_timeout_ms ||
        o->downing == AC_CLUSTER_DOWNING_OFF)
        return AC_OK;
    return ac__fail(AC_EINVAL, "ac_cluster_join: options.stable_after_ms %d is below the node's "
                               "heartbeat_timeout_ms %d: a side could decide before the failure "
                               "detector has settled, and both sides keep serving (use %d or "
                               "more, or 0 for the heartbeat timeout)",
                    o->stable_after_ms, heartbeat_timeout_ms, heartbeat_timeout_ms);
}

static bool graceful(const char *why)
{
    return why && (strcmp(why, "it left") == 0 || strcmp(why, "this node stopped") == 0);
}

bool ac__downing_hold(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why)
{
    if (!ac__downing_on(c) || !r->member || r->self || graceful(why))
        return false;
    r->lost = true;
    if (r->status == AC_MEMBER_UNREACHABLE)
        return true;
    r->status = AC_MEMBER_UNREACHABLE;
    ac__cluster_publish(c);
    ac__cluster_member_unreachable(ctx, c, r, why ? why : "lost");
    return true;
}

/* Any member Unreachable (not this node)? */
static bool any_unreachable(const ac_cluster *c)
{
    for (size_t i = 0; i < c->member_count; i++)
        if (c->members[i]->member && !c->members[i]->self &&
            c->members[i]->status == AC_MEMBER_UNREACHABLE)
            return true;
    return false;
}

/* The members as the resolver reads them; NULL when out of memory. */
static ac__sbr_member *view(const ac_cluster *c, size_t *n)
{
    ac__sbr_member *m = ac__calloc(c->member_count ? c->member_count : 1, sizeof *m);
    *n = 0;
    for (size_t i = 0; m && i < c->member_count; i++) {
        const ac__member_rec *r = c->members[i];
        if (!r->member && !r->self)
            continue;
        m[(*n)++] = (ac__sbr_member){.address = r->address,
                                     .up_since = r->up_since,
                                     .reachable = r->self || r->status == AC_MEMBER_UP,
                                     .self = r->self};
    }
    return m;
}

/* This side keeps: every Unreachable member is Down, for good. */
static void down_unreachable(ac_ctx *ctx, ac_cluster *c, const char *why)
{
    for (size_t i = c->member_count; i-- > 0;) {
        ac__member_rec *r = c->members[i];
        if (!r->member || r->self || r->status != AC_MEMBER_UNREACHABLE)
            continue;
        (void)ac__node_fail_asks(c->node, r->incarnation, why);
        ac__cluster_lose(ctx, c, r, why, true);
    }
}

void ac__downing_arm(ac_ctx *ctx, ac_cluster *c)
{
    if (!ac__downing_on(c) || c->ended)
        return;
    ac_msg *decide = ac__note_new(AC__NOTE_DECIDE, NULL, NULL, 0, NULL, NULL, 0);
    ac_cancellable *timer =
        decide ? ac_schedule_once(ac_self(ctx), c->stable_after_ms, decide, NULL) : NULL;
    ac_cancellable_release(timer); /* a missed one: the tick decides */
}

void ac__downing_tick(ac_ctx *ctx, ac_cluster *c, int64_t now_ms)
{
    if (!ac__downing_on(c) || c->ended || now_ms - c->reach_changed_ms < c->stable_after_ms ||
        !any_unreachable(c))
        return;
    size_t n;
    ac__sbr_member *m = view(c, &n);
    if (!m) {
        ac_log(ctx, AC_LOG_ERROR, "cluster %s: out of memory deciding a partition; trying "
                                  "again next tick", c->name);
        return;
    }
    ac__sbr_decision d = ac__sbr_decide(c->downing, c->quorum_size, m, n);
    size_t reachable = 0;
    for (size_t i = 0; i < n; i++)
        reachable += m[i].reachable;
    free(m);
    char why[160];
    snprintf(why, sizeof why, "%s: %zu of %zu members reachable for %d ms",
             ac__sbr_strategy_name(c->downing), reachable, n, c->stable_after_ms);
    if (d == AC__SBR_KEEP) {
        char downed[200];
        snprintf(downed, sizeof downed, "downed by the split-brain resolver (%s)", why);
        down_unreachable(ctx, c, downed);
        return;
    }
    char self[200];
    snprintf(self, sizeof self, "this node downed itself (%s)", why);
    ac__downing_self(ctx, c, self);
}

void ac__downing_self(ac_ctx *ctx, ac_cluster *c, const char *why)
{
    if (c->ended)
        return;
    ac_log(ctx, AC_LOG_WARN, "cluster %s: %s", c->name, why);
    for (size_t i = 0; i < c->member_count; i++)
        if (!c->members[i]->self)
            (void)ac__node_fail_asks(c->node, c->members[i]->incarnation, why);
    (void)ac__cluster_leave_begin(c, why);
    ac__cluster_end(ctx, c, why, false);
}
