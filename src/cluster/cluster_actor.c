/*
 * The cluster actor: owns the membership of one joined system, in its
 * turns.
 *
 * What it hears. The remote layer's hooks (peer up: an incarnation said
 * hello, with its card when it is in a cluster; peer down: lost for
 * good), beats from the other members (their cards, every
 * AC__CLUSTER_BEAT_MS), the provider's listings (provider.h), its own
 * timer, and the API (subscribers changed, leave). It knows the provider
 * only through its ops: two properties (listed_only, listing_noun) and
 * two calls (tick, member_up).
 *
 * The rules. A node at an address is a member once it is connected, has
 * shown a card naming this cluster and, with a listed_only provider
 * (etcd, DNS), while the provider lists it; it is Up then. A member
 * silent for unreachable_ms (half the remote layer's heartbeat timeout)
 * is Unreachable, and Reachable (Up) again on its next beat: a soft
 * state, nothing is torn down. It is Down when the remote layer loses
 * its incarnation (connection dropped, heartbeats stopped, a new
 * incarnation at its address), when it says it leaves, or when the
 * provider no longer lists it (listed_only). With split-brain resolution
 * on (the static provider's default, cluster_downing.c) a loss without a
 * leave is held as Unreachable instead, until the resolver decides. An incarnation lost by the
 * remote layer while it lives (its heartbeats timed out under load, a
 * hang) is a member again when the remote layer is connected to it
 * again: the listings are tried as ever, the node that was lost says
 * hello afresh when it hears from us (node.c), and its new Up follows
 * its Down. One that left is remembered (tombstones) and never a member
 * again; one unlisted while its connection stands is a member again when
 * it is listed again.
 *
 * Listed addresses (static seeds, etcd keys, DNS records) are tried
 * until a node there is connected, with capped exponential backoff from
 * retry_initial_ms to retry_max_ms; one whose node goes down is tried
 * again the same way. Trying is sending a beat: the remote layer
 * connects for it and the HELLOs follow.
 *
 * Beats go to every member five times in unreachable_ms, except with a
 * provider that gates membership and a node that closes idle
 * connections (etcd with idle_timeout_ms): there the listings and the
 * connections in use judge the members, and none is sent. Static seeds
 * introduce the members they have to a newcomer (cluster_intro.c).
 *
 * Subscribers. The set callers asked for is published under the lock;
 * the actor keeps its own, `active`, and reconciles the two in its turn,
 * so that a new subscriber gets the current members as Up events (an
 * Unreachable one's Up followed by its Unreachable) before any change.
 * Subscribers are watched: one that stops is dropped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

static int64_t now_ms(const ac_cluster *c) { return ac_clock_now_ms(c->system); }

/* ---- events ------------------------------------------------------------- */

static const char *kind_name(ac_member_event_kind k)
{
    switch (k) {
    case AC_MEMBER_EVENT_UP:
        return "up";
    case AC_MEMBER_EVENT_UNREACHABLE:
        return "unreachable";
    case AC_MEMBER_EVENT_REACHABLE:
        return "reachable";
    default:
        return "down";
    }
}

/* Tell every active subscriber (one message, shared). Called after the
 * change is published: a subscriber that reads the members or the status
 * when its event comes finds the change there already. */
static void emit(ac_ctx *ctx, ac_cluster *c, ac_member_event_kind kind, const ac__member_rec *r,
                 const char *why)
{
    ac_log(ctx, kind == AC_MEMBER_EVENT_UP || kind == AC_MEMBER_EVENT_REACHABLE ? AC_LOG_INFO
                                                                                : AC_LOG_WARN,
           "cluster %s: member actorc://%s@%s (incarnation %016" PRIx64 ") %s%s%s", c->name,
           r->system, r->address, r->incarnation, kind_name(kind), why ? ": " : "",
           why ? why : "");
    c->reach_changed_ms = now_ms(c);
    ac__downing_arm(ctx, c);
    ac__cluster_observe_event(c, kind, r, why);
    if (c->active_count == 0)
        return;
    ac_msg *ev = ac__member_event_new(kind, r);
    if (!ev) {
        ac_log(ctx, AC_LOG_ERROR, "cluster %s: out of memory for a member event: subscribers "
                                  "miss it", c->name);
        return;
    }
    for (size_t i = 0; i < c->active_count; i++)
        ac_tell(c->active[i], ac_msg_retain(ev), ac_self(ctx));
    ac_msg_release(ev);
}

/* A member now, if it has all it takes. */
static void evaluate(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r)
{
    if (r->member || r->self || !r->carded)
        return;
    if (c->provider->listed_only && !ac__listed(c, r))
        return;
    r->member = true;
    r->status = AC_MEMBER_UP;
    r->last_heard_ms = now_ms(c);
    if (c->provider->member_up)
        c->provider->member_up(c->provider_state);
    ac__cluster_publish(c);
    emit(ctx, c, AC_MEMBER_EVENT_UP, r, NULL);
    ac__cluster_introduce(c, r);
}

void ac__cluster_member_unreachable(ac_ctx *ctx, ac_cluster *c, const ac__member_rec *r,
                                    const char *why)
{
    emit(ctx, c, AC_MEMBER_EVENT_UNREACHABLE, r, why);
}

/* No longer a member (Down told when it was one). */
void ac__cluster_member_down(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why)
{
    if (!r->member)
        return;
    r->member = false;
    r->status = AC_MEMBER_DOWN;
    ac__cluster_publish(c);
    emit(ctx, c, AC_MEMBER_EVENT_DOWN, r, why);
}

/* Forget the record: Down when a member; its incarnation tombstoned when
 * it left (`tomb`), so that it is never taken back. */
void ac__cluster_lose(ac_ctx *ctx, ac_cluster *c, ac__member_rec *r, const char *why, bool tomb)
{
    ac__cluster_member_down(ctx, c, r, why);
    if (tomb)
        ac__tombstone(c, r);
    ac__rec_remove(c, r);
}

/* ---- reaching others ---------------------------------------------------- */

static void beat(ac_cluster *c, const char *address, uint64_t incarnation, bool leaving)
{
    const char *card = leaving ? c->card_leaving : c->card_text;
    size_t len = leaving ? c->card_leaving_len : c->card_len;
    (void)ac__node_tell_system(c->node, address, incarnation, AC__CLUSTER_PATH,
                               AC__CLUSTER_CARD_TYPE, (const uint8_t *)card, len);
}

/* Tell a node this side downed that it is out (its beats reach us
 * still: a healed partition, a stop shorter than the heartbeats). */
static void tell_downed(ac_cluster *c, const char *address, uint64_t incarnation)
{
    const char *card = c->card_downed;
    size_t len = c->card_downed_len;
    (void)ac__node_tell_system(c->node, address, incarnation, AC__CLUSTER_PATH,
                               AC__CLUSTER_CARD_TYPE, (const uint8_t *)card, len);
}

static int64_t next_backoff(const ac_cluster *c, int64_t b)
{
    return b * 2 > c->retry_max_ms ? c->retry_max_ms : b * 2;
}

/* Every listed address no node is connected at, when its time comes. */
static void try_listings(ac_cluster *c, int64_t t)
{
    for (size_t i = 0; i < c->listing_count; i++) {
        ac__listing *l = &c->listings[i];
        const ac__member_rec *r = ac__rec_find(c, l->address);
        if (t < l->next_ms || (r && !r->lost) ||
            (l->incarnation && ac__tombstoned(c, l->address, l->incarnation)))
            continue;
        beat(c, l->address, l->incarnation, false);
        l->tries++;
        l->next_ms = t + l->backoff_ms;
        l->backoff_ms = next_backoff(c, l->backoff_ms);
    }
}

/* A node at `address` is connected: its listings back off from the
 * start next time. */
static void listings_reached(ac_cluster *c, const char *address)
{
    for (size_t i = 0; i < c->listing_count; i++)
        if (strcmp(c->listings[i].address, address) == 0)
            c->listings[i].backoff_ms = c->retry_initial_ms;
}

/* The node at `address` is lost: its listings wait their backoff. */
static void listings_lost(ac_cluster *c, const char *address, int64_t t)
{
    for (size_t i = 0; i < c->listing_count; i++) {
        ac__listing *l = &c->listings[i];
        if (strcmp(l->address, address) == 0 && l->next_ms < t + l->backoff_ms)
            l->next_ms = t + l->backoff_ms;
    }
}

/* ---- what it hears ------------------------------------------------------ */

/* A card from `address`/`incarnation` naming this cluster, or false. */
static bool card_for(const ac_cluster *c, const ac__note *n, ac__card *card)
{
    return n->data && ac__card_decode(n->data, n->len, card) &&
           strcmp(card->cluster, c->name) == 0 && strcmp(card->address, n->address) == 0 &&
           card->incarnation == n->incarnation;
}

/* The record for a connected incarnation: the one there, or a new one
 * (the old incarnation at the address lost first). NULL for a
 * tombstoned incarnation, or when out of memory. */
static ac__member_rec *connected_rec(ac_ctx *ctx, ac_cluster *c, const char *address,
                                     uint64_t incarnation)
{
    if (ac__tombstoned(c, address, incarnation) || strcmp(address, c->card.address) == 0)
        return NULL;
    ac__member_rec *r = ac__rec_find(c, address);
    if (r && r->incarnation != incarnation) {
        ac__cluster_lose(ctx, c, r, "a new incarnation of it is here", true);
        r = NULL;
    }
    if (!r)
        r = ac__rec_add(c, address, incarnation);
    if (r) {
        r->last_heard_ms = now_ms(c);
        r->lost = false;
        listings_reached(c, address);
    }
    return r;
}

static void on_peer_up(ac_ctx *ctx, ac_cluster *c, const ac__note *n)
{
    ac__card card;
    bool carded = card_for(c, n, &card);
    ac__member_rec *r = ac__rec_find(c, n->address);
    if (!carded && (!r || r->incarnation != n->incarnation))
        return; /* not of this cluster, as far as its hello says; its beats may tell */
    r = connected_rec(ctx, c, n->address, n->incarnation);
    if (!r)
        return;
    if (carded && !r->carded)
        ac__rec_set_card(r, &card);
    evaluate(ctx, c, r);
}

/* A listing at `address` that names no incarnation (a seed, a DNS
 * record): its failed attempts are the provider's to count. */
static bool listed_blind(const ac_cluster *c, const char *address)
{
    const ac__listing *l = ac__listing_find(c, address, 0);
    return l && !l->introduced; /* an introduced one is not the provider's */
}

static void on_peer_down(ac_ctx *ctx, ac_cluster *c, const ac__note *n)
{
    ac__member_rec *r = ac__rec_find(c, n->address);
    if (n->incarnation == 0) { /* never said hello: an attempt failed */
        if (!r && listed_blind(c, n->address))
            ac__provider_failed(c, false, "%s %s: %s", c->provider->listing_noun, n->address,
                                n->why ? n->why : "lost");
        return;
    }
    if (r && r->incarnation == n->incarnation) {
        if (!ac__downing_hold(ctx, c, r, n->why))
            ac__cluster_lose(ctx, c, r, n->why, false);
        if (!c->provider->listed_only)
            ac__cluster_introduced(c, n->address); /* it may live: tried again */
    }
    listings_lost(c, n->address, now_ms(c));
}

static void on_beat(ac_ctx *ctx, ac_cluster *c, const ac__note *n)
{
    ac__card card;
    if (!card_for(c, n, &card))
        return;
    ac__member_rec *r = ac__rec_find(c, n->address);
    if (card.flags & AC__CARD_LEAVING) {
        if (r && r->incarnation == n->incarnation)
            ac__cluster_lose(ctx, c, r, "it left the cluster", true);
        return;
    }
    if (card.flags & AC__CARD_DOWNED) {
        if (r && r->incarnation == n->incarnation && r->member)
            ac__downing_self(ctx, c, "this node downed itself: the other side of a partition "
                                     "downed it");
        return;
    }
    if (ac__downing_on(c) && ac__tombstoned(c, n->address, n->incarnation)) {
        tell_downed(c, n->address, n->incarnation);
        return;
    }
    if (!r || r->incarnation != n->incarnation)
        r = connected_rec(ctx, c, n->address, n->incarnation);
    if (!r)
        return;
    r->last_heard_ms = now_ms(c);
    r->lost = false;
    if (!r->carded)
        ac__rec_set_card(r, &card);
    if (r->member && r->status == AC_MEMBER_UNREACHABLE) {
        r->status = AC_MEMBER_UP;
        ac__cluster_publish(c);
        emit(ctx, c, AC_MEMBER_EVENT_REACHABLE, r, NULL);
    }
    evaluate(ctx, c, r);
}

static void check_silence(ac_ctx *ctx, ac_cluster *c, int64_t t)
{
    for (size_t i = 0; i < c->member_count; i++) {
        ac__member_rec *r = c->members[i];
        if (r->self || !r->member || r->status != AC_MEMBER_UP ||
            t - r->last_heard_ms <= c->unreachable_ms)
            continue;
        r->status = AC_MEMBER_UNREACHABLE;
        char why[96];
        snprintf(why, sizeof why, "silent for %" PRId64 " ms", t - r->last_heard_ms);
        ac__cluster_publish(c);
        emit(ctx, c, AC_MEMBER_EVENT_UNREACHABLE, r, why);
    }
}

/* A provider that gates membership (etcd's leases and watch) and a node
 * that closes idle connections: members are judged by their listings and
 * by the connections in use, so no beat goes to every member (a frame per
 * pair of nodes each beat) and no silence is judged (docs/scaling.md). */
static bool beats_off(const ac_cluster *c) { return ac__cluster_beats_off(c); }

static void on_tick(ac_ctx *ctx, ac_cluster *c)
{
    if (c->ended)
        return;
    int64_t t = now_ms(c);
    if (!beats_off(c) && ac__cluster_beat_due(c, t)) {
        for (size_t i = 0; i < c->member_count; i++) {
            ac__member_rec *r = c->members[i];
            if (!r->self && r->carded)
                beat(c, r->address, r->incarnation, false);
        }
        check_silence(ctx, c, t);
    }
    ac__downing_tick(ctx, c, t);
    if (c->ended)
        return; /* this node downed itself */
    if (c->provider->tick)
        c->provider->tick(c->provider_state);
    ac__cluster_intros_prune(c);
    try_listings(c, t);
    ac__cluster_tick_next(c, t);
}

static void on_listed(ac_ctx *ctx, ac_cluster *c, const ac__note *n)
{
    if (strcmp(n->address, c->card.address) == 0 ||
        ac__listing_find(c, n->address, n->incarnation))
        return;
    if (!ac__listing_add(c, n->address, n->incarnation)) {
        ac_log(ctx, AC_LOG_ERROR, "cluster %s: out of memory: the listing of %s is lost",
               c->name, n->address);
        return;
    }
    ac__member_rec *r = ac__rec_find(c, n->address);
    if (r)
        evaluate(ctx, c, r);
    else
        try_listings(c, now_ms(c));
}

static void on_unlisted(ac_ctx *ctx, ac_cluster *c, const ac__note *n)
{
    ac__listing *l = ac__listing_find(c, n->address, n->incarnation);
    if (!l)
        return;
    ac__listing_remove(c, l);
    ac__member_rec *r = ac__rec_find(c, n->address);
    if (r && !r->self && c->provider->listed_only && !ac__listed(c, r))
        ac__cluster_member_down(ctx, c, r, n->why ? n->why : "it is no longer listed");
}

/* ---- subscribers -------------------------------------------------------- */

static bool ref_in(ac_ref *const *set, size_t n, const ac_ref *ref)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == ref)
            return true;
    return false;
}

static void active_drop(ac_cluster *c, size_t i)
{
    ac_ref_release(c->active[i]);
    c->active[i] = c->active[--c->active_count];
}

/* Activate `sub` (retained here): the current members as Up, then
 * watched. */
static void activate(ac_ctx *ctx, ac_cluster *c, ac_ref *sub)
{
    if (c->active_count == c->active_cap) {
        size_t cap = c->active_cap ? c->active_cap * 2 : 4;
        ac_ref **a = ac__realloc(c->active, cap * sizeof *a);
        if (!a) {
            ac_log(ctx, AC_LOG_ERROR, "cluster %s: out of memory for a subscriber", c->name);
            return;
        }
        c->active = a;
        c->active_cap = cap;
    }
    c->active[c->active_count++] = ac_ref_retain(sub);
    for (size_t i = 0; i < c->member_count; i++) {
        const ac__member_rec *r = c->members[i];
        if (!r->member && !r->self)
            continue;
        ac_msg *ev = ac__member_event_new(AC_MEMBER_EVENT_UP, r);
        if (ev)
            ac_tell(sub, ev, ac_self(ctx));
        /* One silent now is told so after its Up, as it happened. */
        ev = r->status == AC_MEMBER_UNREACHABLE
                 ? ac__member_event_new(AC_MEMBER_EVENT_UNREACHABLE, r)
                 : NULL;
        if (ev)
            ac_tell(sub, ev, ac_self(ctx));
    }
    ac_watch(ctx, sub);
}

static void on_subscribers(ac_ctx *ctx, ac_cluster *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->subs_count;
    ac_ref **want = n ? ac__calloc(n, sizeof *want) : NULL;
    for (size_t i = 0; want && i < n; i++)
        want[i] = ac_ref_retain(c->subs[i]);
    pthread_mutex_unlock(&c->lock);
    if (n && !want) {
        ac_log(ctx, AC_LOG_ERROR, "cluster %s: out of memory reading the subscribers", c->name);
        return;
    }
    for (size_t i = c->active_count; i-- > 0;)
        if (!ref_in(want, n, c->active[i])) {
            ac_unwatch(ctx, c->active[i]);
            active_drop(c, i);
        }
    for (size_t i = 0; i < n; i++) {
        if (!c->ended && !ref_in(c->active, c->active_count, want[i]))
            activate(ctx, c, want[i]);
        ac_ref_release(want[i]);
    }
    free(want);
}

static void on_terminated(ac_cluster *c, ac_ref *who)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->subs_count; i++)
        if (c->subs[i] == who) {
            ac_ref_release(c->subs[i]);
            c->subs[i] = c->subs[--c->subs_count];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < c->active_count; i++)
        if (c->active[i] == who) {
            active_drop(c, i);
            break;
        }
}

/* ---- leaving ------------------------------------------------------------ */

void ac__cluster_end(ac_ctx *ctx, ac_cluster *c, const char *why, bool farewell)
{
    if (c->ended)
        return;
    c->ended = true;
    ac__member_rec *self = NULL;
    for (size_t i = 0; i < c->member_count; i++) {
        ac__member_rec *r = c->members[i];
        if (r->self) {
            self = r;
            continue;
        }
        if (r->carded && farewell)
            beat(c, r->address, r->incarnation, true);
        ac__cluster_member_down(ctx, c, r, why);
    }
    if (self) {
        self->member = true; /* so that its Down is told */
        ac__cluster_member_down(ctx, c, self, why);
    }
    while (c->active_count) {
        ac_unwatch(ctx, c->active[c->active_count - 1]);
        active_drop(c, c->active_count - 1);
    }
    while (c->member_count)
        ac__rec_remove(c, c->members[c->member_count - 1]);
    ac__cluster_publish(c);
}

/* ---- the actor ---------------------------------------------------------- */

static void cluster_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_cluster *c = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        on_terminated(c, ac_terminated_ref(msg));
        return;
    }
    if (!ac_msg_is(msg, &ac__msg_type_cluster_note))
        return;
    const ac__note *n = ac_msg_data(msg);
    if (c->ended && n->kind != AC__NOTE_SUBSCRIBERS)
        return;
    switch (n->kind) {
    case AC__NOTE_PEER_UP:
        on_peer_up(ctx, c, n);
        break;
    case AC__NOTE_PEER_DOWN:
        on_peer_down(ctx, c, n);
        break;
    case AC__NOTE_BEAT:
        on_beat(ctx, c, n);
        break;
    case AC__NOTE_TICK:
        on_tick(ctx, c);
        break;
    case AC__NOTE_SUBSCRIBERS:
        on_subscribers(ctx, c);
        break;
    case AC__NOTE_LEAVE:
        ac__cluster_end(ctx, c, "this node left the cluster", true);
        break;
    case AC__NOTE_DECIDE:
        ac__downing_tick(ctx, c, now_ms(c));
        break;
    case AC__NOTE_DOWN_SELF:
        ac__downing_self(ctx, c, n->why ? n->why : "fenced");
        break;
    case AC__NOTE_LISTED:
        on_listed(ctx, c, n);
        break;
    case AC__NOTE_UNLISTED:
        on_unlisted(ctx, c, n);
        break;
    case AC__NOTE_INTRO:
        ac__cluster_on_intro(c, n);
        break;
    }
}

/* The subscribers it told: released when it stops (the system's refs
 * are not to be held past its actors). */
static void cluster_post_stop(ac_ctx *ctx)
{
    ac_cluster *c = ac_ctx_user_data(ctx);
    while (c->active_count)
        active_drop(c, c->active_count - 1);
}

static const ac_actor_def cluster_def = {
    .name = "Cluster",
    .receive = cluster_receive,
    .post_stop = cluster_post_stop,
};

ac_ref *ac__cluster_actor_spawn(ac_cluster *c)
{
    ac__member_rec *self = ac__rec_add(c, c->card.address, c->card.incarnation);
    if (!self || !ac__rec_set_card(self, &c->card))
        return ac__fail_null(AC_ENOMEM, "ac_cluster_join: out of memory");
    self->self = self->member = self->carded = true;
    self->status = AC_MEMBER_UP;
    ac__cluster_publish(c);
    ac_props *props = ac_props_new(&cluster_def, c);
    return props ? ac_spawn(c->system, props, NULL) : NULL;
}
