/*
 * The order of a hedged router's attempts (hedge_order.h).
 *
 * Rotation: round-robin from a start that moves by one per message, the
 * routees known to be failing moved to the end, so that a failing
 * routee is still tried when the healthy ones are slow.
 *
 * By latency: the same rotation, then the first attempts (up to
 * ORDERED of them) taken by cost, the routee's latency estimate times
 * one more than its requests out. While it has requests out, the
 * estimate is at least the time since it last showed progress (an
 * outcome, or a request sent while none was out): a routee that turned
 * slow stops taking new first attempts within about twice the others'
 * latency, before any of its requests has lost a race. Costs within twice the best plus
 * EQUAL_SLACK_NS count as equal, and equals keep their rotation order:
 * the fast routees share the load in turn, and only a routee clearly
 * slower than the best is passed over. A routee nothing is known of yet
 * costs nothing, so a new routee is tried at once.
 *
 * The estimate is an exponentially weighted mean (weight 1/4) of the
 * times from sending a request to its successful answer, and of lower
 * bounds: a request that lost to a hedge sent after it counts as at
 * least as long as it had been out when the hedge won, and one that
 * timed out as long as its deadline. So a routee that turns slow is
 * passed over after its first lost race, before its own late answer
 * is back.
 *
 * Probing. A routee passed over is no longer asked, so nothing would
 * show it has recovered. A healthy routee passed over and not asked for
 * the probe interval is asked again: as the second attempt, sent
 * together with the first (a hedge sent early, under the same budget),
 * so that the probe costs the caller no time; with max_attempts 1, as
 * the first. Its estimate, older than the probe interval by then, is
 * replaced by what the probe measures rather than averaged with it.
 *
 * The table. Records are found by hashing the routee's ref into a
 * power-of-two table and looking at up to WINDOW places from there; a
 * routee without one takes a free place, or takes over the record of
 * the neighbourhood asked longest ago (a routee gone from the set, most
 * likely). Every field is an atomic read and written relaxed, from the
 * router's turn (choosing) and from whichever thread sends or completes
 * a request; a record taken over while a request is out may see that
 * request's outcome counted against its new routee once: a hint off by
 * one answer, never a wrong answer to a caller.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/hedge_order.h"

enum { WINDOW = 8, ORDERED = 4, MIN_RECORDS = 64, MAX_RECORDS = 4096, INFLIGHT_CAP = 1024 };
enum { SMALL = 16 };
#define EQUAL_SLACK_NS 1000000ull
#define RELAXED memory_order_relaxed

/* ---- the table -------------------------------------------------------- */

ac_status ac__latency_table_init(ac__latency_table *t, int routees, uint64_t probe_ns,
                                 const char *fn)
{
    size_t want = routees > 0 ? (size_t)routees * 2 : MIN_RECORDS, cap = MIN_RECORDS;
    while (cap < want && cap < MAX_RECORDS)
        cap <<= 1;
    t->records = ac__calloc(cap, sizeof *t->records);
    if (!t->records)
        return ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    t->mask = (uint32_t)(cap - 1);
    t->probe_ns = probe_ns;
    return AC_OK;
}

void ac__latency_table_fini(ac__latency_table *t)
{
    free(t->records);
    t->records = NULL;
}

static uint32_t hash_ref(const ac_ref *routee)
{
    uint64_t x = (uint64_t)(uintptr_t)routee;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static ac__routee_latency *record_at(const ac__latency_table *t, uint32_t h, uint32_t w)
{
    return &t->records[(h + w) & t->mask];
}

/* The record of `routee`, or NULL when it has none. */
static ac__routee_latency *find(const ac__latency_table *t, const ac_ref *routee)
{
    uintptr_t key = (uintptr_t)routee;
    uint32_t h = hash_ref(routee);
    for (uint32_t w = 0; w < WINDOW; w++) {
        ac__routee_latency *r = record_at(t, h, w);
        uintptr_t k = atomic_load_explicit(&r->key, RELAXED);
        if (k == key)
            return r;
        if (k == 0)
            return NULL; /* places are taken in order and never given back */
    }
    return NULL;
}

static void forget(ac__routee_latency *r)
{
    atomic_store_explicit(&r->est_ns, 0, RELAXED);
    atomic_store_explicit(&r->sampled_ns, 0, RELAXED);
    atomic_store_explicit(&r->asked_ns, 0, RELAXED);
    atomic_store_explicit(&r->progress_ns, 0, RELAXED);
    atomic_store_explicit(&r->inflight, 0, RELAXED);
}

/* One pass over the neighbourhood: the routee's record, a free place
 * taken, or the one asked longest ago taken over; NULL when another
 * thread took the place this pass chose. */
static ac__routee_latency *claim_once(ac__latency_table *t, const ac_ref *routee)
{
    uintptr_t key = (uintptr_t)routee;
    uint32_t h = hash_ref(routee);
    ac__routee_latency *oldest = NULL;
    uintptr_t oldest_key = 0;
    uint64_t oldest_asked = UINT64_MAX;
    for (uint32_t w = 0; w < WINDOW; w++) {
        ac__routee_latency *r = record_at(t, h, w);
        uintptr_t k = atomic_load_explicit(&r->key, RELAXED);
        if (k == key)
            return r;
        if (k == 0)
            return atomic_compare_exchange_strong_explicit(&r->key, &k, key, RELAXED, RELAXED) ||
                           k == key
                       ? r
                       : NULL;
        uint64_t asked = atomic_load_explicit(&r->asked_ns, RELAXED);
        if (asked < oldest_asked) {
            oldest = r;
            oldest_key = k;
            oldest_asked = asked;
        }
    }
    if (!atomic_compare_exchange_strong_explicit(&oldest->key, &oldest_key, key, RELAXED, RELAXED))
        return NULL;
    forget(oldest);
    return oldest;
}

ac__routee_latency *ac__latency_claim(ac__latency_table *t, const ac_ref *routee)
{
    if (!t->records)
        return NULL;
    for (int tries = 0; tries < 4; tries++) {
        ac__routee_latency *r = claim_once(t, routee);
        if (r)
            return r;
    }
    return NULL; /* contended: this request goes unrecorded */
}

void ac__latency_asked(ac__routee_latency *r, uint64_t now)
{
    if (atomic_fetch_add_explicit(&r->inflight, 1, RELAXED) <= 0)
        atomic_store_explicit(&r->progress_ns, now, RELAXED); /* busy from now */
    atomic_store_explicit(&r->asked_ns, now, RELAXED);
}

void ac__latency_done(ac__routee_latency *r, const ac_ref *routee, uint64_t now)
{
    if (atomic_load_explicit(&r->key, RELAXED) != (uintptr_t)routee)
        return;
    atomic_store_explicit(&r->progress_ns, now, RELAXED);
    atomic_fetch_sub_explicit(&r->inflight, 1, RELAXED);
}

void ac__latency_observe(const ac__latency_table *t, ac__routee_latency *r, const ac_ref *routee,
                         uint64_t sample_ns, uint64_t now)
{
    if (atomic_load_explicit(&r->key, RELAXED) != (uintptr_t)routee)
        return; /* taken over meanwhile */
    uint64_t sample = sample_ns ? sample_ns : 1; /* 0 means nothing known */
    uint64_t sampled = atomic_load_explicit(&r->sampled_ns, RELAXED);
    bool stale = now > sampled && now - sampled >= t->probe_ns;
    uint64_t est = atomic_load_explicit(&r->est_ns, RELAXED), next;
    do {
        if (est == 0 || stale)
            next = sample;
        else if (sample >= est)
            next = est + (sample - est) / 4;
        else
            next = est - (est - sample) / 4;
    } while (!atomic_compare_exchange_weak_explicit(&r->est_ns, &est, next ? next : 1, RELAXED,
                                                    RELAXED));
    atomic_store_explicit(&r->sampled_ns, now, RELAXED);
}

/* ---- the order -------------------------------------------------------- */

static uint64_t cost_of(const ac__routee_latency *r, uint64_t now)
{
    if (!r)
        return 0;
    uint64_t est = atomic_load_explicit(&r->est_ns, RELAXED);
    int out = atomic_load_explicit(&r->inflight, RELAXED);
    uint64_t progress = atomic_load_explicit(&r->progress_ns, RELAXED);
    if (out > 0 && now > progress && now - progress > est)
        est = now - progress; /* no progress for longer than it takes */
    if (est == 0)
        return 0;
    uint64_t weight = (uint64_t)(out < 0 ? 0 : out > INFLIGHT_CAP ? INFLIGHT_CAP : out) + 1;
    return est > UINT64_MAX / weight ? UINT64_MAX : est * weight;
}

/* Move entry q of both arrays to p (p <= q), shifting those between. */
static void move_to(size_t *pl, uint64_t *cost, size_t p, size_t q)
{
    size_t place = pl[q];
    uint64_t c = cost[q];
    for (size_t j = q; j > p; j--) {
        pl[j] = pl[j - 1];
        cost[j] = cost[j - 1];
    }
    pl[p] = place;
    cost[p] = c;
}

/* The healthy routees pl[0..healthy) (in rotation order) ordered by
 * cost for the first attempts. */
static void order_by_cost(const ac__latency_table *t, const ac__router_state *st, size_t *pl,
                          uint64_t *cost, size_t healthy, uint32_t m, uint64_t now)
{
    uint64_t best = UINT64_MAX;
    for (size_t j = 0; j < healthy; j++) {
        cost[j] = cost_of(find(t, st->routees[pl[j]]), now);
        best = cost[j] < best ? cost[j] : best;
    }
    uint64_t equal = best > (UINT64_MAX - EQUAL_SLACK_NS) / 2 ? UINT64_MAX
                                                              : 2 * best + EQUAL_SLACK_NS;
    for (size_t j = 0; j < healthy; j++)
        if (cost[j] <= equal)
            cost[j] = 0;
    size_t ordered = healthy < ORDERED ? healthy : ORDERED;
    ordered = ordered < m ? ordered : m;
    for (size_t p = 0; p < ordered; p++) {
        size_t q = p;
        for (size_t j = p + 1; j < healthy; j++)
            q = cost[j] < cost[q] ? j : q;
        move_to(pl, cost, p, q);
    }
}

/* A healthy routee passed over (not among the best) and not asked for
 * the probe interval goes second (first when only one is asked); true
 * when it goes second. One among the best is asked in its turn anyway,
 * however long the router has been idle. */
static bool place_probe(const ac__latency_table *t, const ac__router_state *st, size_t *pl,
                        uint64_t *cost, size_t healthy, uint32_t m, uint64_t now)
{
    size_t to = m >= 2 ? 1 : 0;
    for (size_t j = 1; j < healthy; j++) {
        ac__routee_latency *r = cost[j] ? find(t, st->routees[pl[j]]) : NULL;
        if (!r)
            continue;
        uint64_t asked = atomic_load_explicit(&r->asked_ns, RELAXED);
        if (now > asked && now - asked >= t->probe_ns) {
            atomic_store_explicit(&r->asked_ns, now, RELAXED); /* one probe per interval */
            move_to(pl, cost, to, j);
            return to == 1;
        }
    }
    return false;
}

bool ac__hedge_order(ac__latency_table *t, const ac__router_state *st, uint32_t m,
                     uint32_t *picks, ac__failing_fn failing, const void *arg, uint64_t now)
{
    size_t n = st->n, start = (size_t)(st->index % n);
    size_t pl_small[SMALL];
    uint64_t cost_small[SMALL];
    size_t *pl = n <= SMALL ? pl_small : ac__malloc(n * sizeof *pl);
    uint64_t *cost = n <= SMALL ? cost_small : ac__malloc(n * sizeof *cost);
    bool probe = false;
    if (!pl || !cost) { /* out of memory: every routee in turn */
        for (uint32_t k = 0; k < m; k++)
            picks[k] = (uint32_t)((start + k) % n);
        goto out;
    }
    /* Whether a routee is failing is read once: other threads change it,
     * and a routee read both ways would be left out, or put in twice. */
    size_t healthy = 0, back = n;
    for (size_t j = 0; j < n; j++) {
        size_t i = (start + j) % n;
        if (failing(st, i, arg))
            pl[--back] = i;
        else
            pl[healthy++] = i;
    }
    for (size_t a = back, b = n - 1; a < b; a++, b--) { /* the failing in rotation order */
        size_t x = pl[a];
        pl[a] = pl[b];
        pl[b] = x;
    }
    if (t && t->records && healthy > 1) {
        order_by_cost(t, st, pl, cost, healthy, m, now);
        probe = place_probe(t, st, pl, cost, healthy, m, now);
    }
    for (uint32_t k = 0; k < m; k++)
        picks[k] = (uint32_t)pl[k];
out:
    if (pl != pl_small)
        free(pl);
    if (cost != cost_small)
        free(cost);
    return probe;
}
