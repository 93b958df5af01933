/*
 * The cluster actor's timer. With beats (the static provider, or any
 * provider while the node keeps its connections) it ticks every
 * AC__CLUSTER_BEAT_MS, as it always has: beats go out and silence is
 * judged on ticks. A beat-free cluster (etcd with idle_timeout_ms) has
 * nothing to do on most ticks once joined, and ticking ten times a second
 * for nothing is most of what an idle node costs; so there each tick sets
 * the next, a one-shot timer at the earliest time something is due:
 *
 *   - a beat from now while the cluster is not JOINED (the provider's
 *     tick says JOINED once both its halves are well), as before;
 *   - the next listing try_listings would try (its backoff's time);
 *   - what the provider's quiet_ms says (etcd: the moment its lease would
 *     have gone unrenewed for its TTL, when it fences itself);
 *   - QUIET_TICK_MS at most.
 *
 * Whatever changes that (a listing, a member lost, the provider failing)
 * comes as a note to the actor and is handled in its turn, or tells the
 * actor a tick at once (ac__cluster_tick_soon). So the node wakes about
 * once a second when idle, and nothing is seen later than on the beat.
 *
 * Beats go out on a phase of the node's own: the ticks fall on whole
 * multiples of AC__CLUSTER_BEAT_MS from the node's start, and a node beats
 * on the first tick of each beat period (beat_every ticks). A phase every
 * node shares (the wall clock's) would let a node of a mesh take a
 * period's N - 1 beats in one wake-up, but bunches every node's beats and
 * silence checks into the same instants; under load that was seen to
 * leave members silent past the unreachable threshold, so it is not used
 * (ac__cluster_beat_due takes any phase; the shared one is a one-line
 * change in ac__cluster_tick_start).
 */
#include "cluster/cluster_internal.h"
#include "cluster/provider.h"

#define QUIET_TICK_MS 1000

static int64_t beat_period_ms(const ac_cluster *c)
{
    return (int64_t)c->beat_every * AC__CLUSTER_BEAT_MS;
}

bool ac__cluster_tick_start(ac_cluster *c)
{
    int64_t t = ac_clock_now_ms(c->system), period = beat_period_ms(c);
    c->beat_phase_ms = ((-t) % period + period) % period; /* periods from now */
    c->beat_epoch = -1;
    int64_t first = AC__CLUSTER_BEAT_MS;
    ac_msg *tick = ac__note_new(AC__NOTE_TICK, NULL, NULL, 0, NULL, NULL, 0);
    ac_msg *now = ac__note_new(AC__NOTE_TICK, NULL, NULL, 0, NULL, NULL, 0);
    pthread_mutex_lock(&c->lock); /* against the first tick's ac__cluster_tick_next */
    c->tick = tick ? ac_schedule_repeat(c->actor, first, AC__CLUSTER_BEAT_MS, tick, NULL) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (!c->tick) {
        ac_msg_release(now);
        return false;
    }
    ac__cluster_tell_actor(c, now); /* the seeds tried at once, not at the first tick */
    return true;
}

bool ac__cluster_beat_due(ac_cluster *c, int64_t t)
{
    int64_t epoch = (t + c->beat_phase_ms) / beat_period_ms(c);
    if (epoch == c->beat_epoch)
        return false;
    c->beat_epoch = epoch;
    return true;
}

bool ac__cluster_beats_off(const ac_cluster *c)
{
    return c->provider->listed_only && c->node->options.idle_timeout_ms > 0;
}

static int64_t earliest(int64_t a, int64_t b) { return a < b ? a : b; }

static bool joined(ac_cluster *c)
{
    pthread_mutex_lock(&c->lock);
    bool j = c->status.state == AC_CLUSTER_JOINED;
    pthread_mutex_unlock(&c->lock);
    return j;
}

/* The time (ms on the system's clock) the next listing is due a try, as
 * try_listings judges it. */
static int64_t next_listing(const ac_cluster *c)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < c->listing_count; i++) {
        const ac__listing *l = &c->listings[i];
        const ac__member_rec *r = ac__rec_find(c, l->address);
        if ((r && !r->lost) || (l->incarnation && ac__tombstoned(c, l->address, l->incarnation)))
            continue;
        next = earliest(next, l->next_ms);
    }
    return next;
}

int64_t ac__cluster_tick_delay(ac_cluster *c, int64_t t)
{
    if (!ac__cluster_beats_off(c) || !joined(c))
        return AC__CLUSTER_BEAT_MS;
    int64_t delay = QUIET_TICK_MS;
    int64_t quiet = c->provider->quiet_ms ? c->provider->quiet_ms(c->provider_state) : delay;
    delay = earliest(delay, quiet < 0 ? AC__CLUSTER_BEAT_MS : quiet);
    int64_t listing = next_listing(c);
    if (listing != INT64_MAX)
        delay = earliest(delay, listing > t ? listing - t : 0);
    return delay > 1 ? delay : 1;
}

void ac__cluster_tick_next(ac_cluster *c, int64_t t)
{
    if (!ac__cluster_beats_off(c))
        return; /* the repeating timer goes on */
    ac_msg *tick = ac__note_new(AC__NOTE_TICK, NULL, NULL, 0, NULL, NULL, 0);
    int64_t delay = ac__cluster_tick_delay(c, t);
    pthread_mutex_lock(&c->lock);
    /* Not after a leave or the part's stop (they cancel the timer under
     * the lock): no timer outlives them. */
    ac_cancellable *next = NULL;
    if (tick && c->tick && !atomic_load_explicit(&c->left, memory_order_acquire)) {
        next = ac_schedule_once(c->actor, delay, tick, NULL);
        tick = NULL; /* consumed */
    }
    if (next) {
        ac_cancel(c->tick); /* the repeating first timer, or the one-shot that fired */
        ac_cancellable_release(c->tick);
        c->tick = next;
    }
    pthread_mutex_unlock(&c->lock);
    if (tick)
        ac_msg_release(tick);
    if (!next && !atomic_load_explicit(&c->left, memory_order_acquire))
        ac_system_log(c->system, AC_LOG_ERROR, "cluster %s: cannot set its next tick (%s); "
                      "the first timer goes on", c->name, ac_last_error());
}

void ac__cluster_tick_soon(ac_cluster *c)
{
    if (ac__cluster_beats_off(c))
        ac__cluster_tell_actor(c, ac__note_new(AC__NOTE_TICK, NULL, NULL, 0, NULL, NULL, 0));
}
