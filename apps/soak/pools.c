/*
 * Router slots, and the chaos that stops, kills and respawns them.
 *
 * Sixteen slots hold one router each. Slots 0-5 are calm: one pool per
 * strategy, spawned at the start and never touched, whose routees are
 * never told to fail or stop; the checker holds them to the exact answer.
 * Slots 6-11 start with chaotic pools of random strategy, size and
 * supervision (restart, restart without limit, escalate — which makes the
 * router itself restart — or stop); slots 12-15 start empty and are filled
 * mid-run. Each spawn gets a new generation and a unique name,
 * pool-<slot>-g<gen>, so that a path in a dead letter or an error names
 * exactly one router's lifetime.
 *
 * Chaos stops routers and routees by ac_stop or by a poison pill, one or
 * the other at random. Every generation that something may stop — chaos
 * stopping the router or a routee, a request telling a routee to fail or stop — is marked before
 * the stop is set in motion; dead letters are then checked against these
 * marks. A stopped router goes to a graveyard; chaos later probes it with
 * an ask, which must fail with ActorStoppedError, and a few tells, which
 * are then known dead letters.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "soak.h"

#define CALM_SLOTS 6
#define FIRST_EMPTY 12
#define MARKS 256
#define GRAVES 64

enum { SUP_DEFAULT, SUP_UNLIMITED, SUP_ESCALATE, SUP_STOP, SUP_COUNT };

typedef struct slot {
    pthread_mutex_t lock;
    ac_ref *router; /* retained; NULL while empty */
    uint8_t strategy, size, supervision;
    uint32_t gen;
    int64_t scatter_timeout_ms;
    ac_ref *seen_routee;             /* retained: a routee of `gen` that answered */
    _Atomic uint32_t stopish[MARKS]; /* gen + 1 of the marked generations */
} slot;

typedef struct grave {
    ac_ref *ref;
    uint64_t since_ns;
} grave;

static slot slots[SOAK_SLOTS];
static grave graves[GRAVES];
static size_t grave_count;
static ac_system *system_;

static const char *const strategy_names[STRAT_COUNT] = {
    "round-robin", "random", "broadcast", "smallest-mailbox", "custom", "scatter-gather"};
const char *strategy_name(int s) { return s >= 0 && s < STRAT_COUNT ? strategy_names[s] : "?"; }

/* Mostly one routee per message, every fifth message two: a custom
 * strategy may fan out, and the first answer wins as with broadcast. */
static size_t custom_pick(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                          void *user, ac_ref **out)
{
    (void)msg;
    (void)user;
    out[0] = routees[(index * 2654435761u >> 3) % n];
    if (index % 5 != 0 || n < 2)
        return 1;
    out[1] = routees[((index * 2654435761u + 1) >> 3) % n];
    return out[1] == out[0] ? 1 : 2;
}

static ac_supervisor_strategy supervision_of(int sup)
{
    ac_supervisor_strategy s = {0};
    if (sup == SUP_UNLIMITED)
        s.max_restarts = -1;
    else if (sup == SUP_ESCALATE)
        s.directive = AC_ESCALATE;
    else if (sup == SUP_STOP)
        s.directive = AC_STOP;
    return s;
}

static ac_props *props_for(const slot *s)
{
    ac_supervisor_strategy sup = supervision_of(s->supervision);
    ac_routee_options ro = {.supervisor = &sup};
    ac_scatter_gather_options sg = {.timeout_ms = s->scatter_timeout_ms};
    int n = s->size;
    switch (s->strategy) {
    case STRAT_ROUND_ROBIN:
        return ac_router_round_robin(n, &soak_routee, &ro);
    case STRAT_RANDOM:
        return ac_router_random(n, &soak_routee, &ro);
    case STRAT_BROADCAST:
        return ac_router_broadcast(n, &soak_routee, &ro);
    case STRAT_SMALLEST:
        return ac_router_smallest_mailbox(n, &soak_routee, &ro);
    case STRAT_CUSTOM:
        return ac_router_custom(n, &soak_routee, custom_pick, NULL, &ro);
    default:
        return ac_router_scatter_gather_first_completed(n, &soak_routee, &sg, &ro);
    }
}

/* Spawn the slot's next generation. Call with the slot's lock held. */
static void spawn_locked(slot *s, int index)
{
    char name[32];
    s->gen++;
    snprintf(name, sizeof name, "pool-%d-g%u", index, s->gen);
    ac_props *p = props_for(s);
    s->router = p ? ac_spawn(system_, p, name) : NULL;
    if (s->router) {
        atomic_fetch_add(&g_stats.chaos_spawns, 1);
        watch_router(s->router, s->gen % 3 == 0);
    }
    if (g_cfg.verbose)
        fprintf(stderr, "soak: spawn %s: %s of %u, %s\n", name, strategy_name(s->strategy), s->size,
                s->router ? "ok" : ac_last_error());
}

/* Long enough that a routee told to reply late (at most 30 ms) beats it
 * by far even when the OS keeps a worker off its core for a while; short
 * enough that silent routees do not hold the ledger for long. */
static int64_t draw_scatter_timeout(soak_rng *rng) { return 500 + soak_rng_below(rng, 501); }

int pools_start(ac_system *sys, soak_rng *rng)
{
    system_ = sys;
    for (int i = 0; i < SOAK_SLOTS; i++) {
        slot *s = &slots[i];
        pthread_mutex_init(&s->lock, NULL);
        bool calm = i < CALM_SLOTS;
        s->strategy = calm ? (uint8_t)i : (uint8_t)soak_rng_below(rng, STRAT_COUNT);
        s->size = calm ? (i == STRAT_SCATTER || i == STRAT_BROADCAST ? 3 : 4)
                       : (uint8_t)(1 + soak_rng_below(rng, 6));
        s->supervision = calm ? SUP_DEFAULT : (uint8_t)soak_rng_below(rng, SUP_COUNT);
        s->scatter_timeout_ms = draw_scatter_timeout(rng);
        if (i < FIRST_EMPTY) {
            spawn_locked(s, i);
            if (!s->router && g_cfg.fail_alloc <= 0)
                return -1;
        }
    }
    return 0;
}

ac_ref *pools_acquire(int index, soak_scenario *sc)
{
    slot *s = &slots[index];
    pthread_mutex_lock(&s->lock);
    ac_ref *r = s->router ? ac_ref_retain(s->router) : NULL;
    sc->strategy = s->strategy;
    sc->size = s->size;
    sc->calm = index < CALM_SLOTS;
    sc->wrapped = false;
    sc->slot = (uint8_t)index;
    sc->gen = s->gen;
    sc->scatter_timeout_ms = s->scatter_timeout_ms;
    pthread_mutex_unlock(&s->lock);
    return r;
}

void pools_mark_stopish(int index, uint32_t gen)
{
    atomic_store(&slots[index].stopish[gen % MARKS], gen + 1);
}

bool pools_gen_stopish(int index, uint32_t gen)
{
    return index >= 0 && index < SOAK_SLOTS &&
           atomic_load(&slots[index].stopish[gen % MARKS]) == gen + 1;
}

void pools_note_routee(int index, uint32_t gen, const ac_ref *routee)
{
    slot *s = &slots[index];
    if (index < CALM_SLOTS || !routee)
        return;
    pthread_mutex_lock(&s->lock);
    if (gen == s->gen && !s->seen_routee)
        s->seen_routee = ac_ref_retain((ac_ref *)routee);
    pthread_mutex_unlock(&s->lock);
}

bool pools_parse_path(const char *path, int *index, uint32_t *gen, bool *is_router)
{
    const char *p = path ? strstr(path, "/pool-") : NULL;
    int consumed = 0;
    if (!p || sscanf(p, "/pool-%d-g%u%n", index, gen, &consumed) != 2)
        return false;
    *is_router = p[consumed] == '\0';
    return *index >= 0 && *index < SOAK_SLOTS;
}

/* ---- the graveyard ------------------------------------------------------- */

/* An ask to a stopped router fails at once with ActorStoppedError, and it
 * and the tells after it are dead letters. */
static void probe(ac_ref *ref, int tells)
{
    ac_msg *m = ac_msg_new(&soak_request_type, sizeof(soak_request));
    if (!m)
        return;
    ac_answer a;
    ac_status st = ac_ask_wait(ref, m, 2000, &a);
    if (st == AC_EDEAD && ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR) && !a.sender)
        atomic_fetch_add(&g_stats.known_dead, 1);
    else if (g_cfg.fail_alloc <= 0)
        soak_violation("an ask to the stopped router %s gave %s (%s), not ActorStoppedError",
                       ac_ref_path(ref), ac_status_name(st),
                       a.error ? ac_error_message(a.error) : "a reply");
    ac_answer_release(&a);
    for (int i = 0; i < tells; i++) {
        ac_msg *t = ac_msg_new(&soak_request_type, sizeof(soak_request));
        if (t && ac_tell(ref, t, NULL) == AC_OK)
            atomic_fetch_add(&g_stats.known_dead, 1);
    }
    atomic_fetch_add(&g_stats.chaos_probes, 1);
}

static void probe_oldest(int tells)
{
    if (grave_count == 0)
        return;
    probe(graves[0].ref, tells);
    ac_ref_release(graves[0].ref);
    memmove(graves, graves + 1, --grave_count * sizeof graves[0]);
}

/* Stop the slot's router (it has one); it goes to the graveyard. Call with
 * the slot's lock held. */
static void stop_locked(slot *s, int index, bool pill)
{
    pools_mark_stopish(index, s->gen);
    if (grave_count == GRAVES)
        probe_oldest(1);
    graves[grave_count++] = (grave){.ref = s->router, .since_ns = soak_now_ns()};
    if (pill) {
        ac_msg *m = ac_poison_pill();
        if (m)
            ac_tell(s->router, m, NULL);
    } else {
        ac_stop(s->router);
    }
    s->router = NULL;
    ac_ref_release(s->seen_routee);
    s->seen_routee = NULL;
    atomic_fetch_add(&g_stats.chaos_stops, 1);
    if (g_cfg.verbose)
        fprintf(stderr, "soak: stop pool-%d-g%u by %s\n", index, s->gen,
                pill ? "poison pill" : "ac_stop");
}

static void kill_routee_locked(slot *s, int index, bool pill)
{
    if (!s->seen_routee)
        return;
    pools_mark_stopish(index, s->gen);
    ac_msg *m = pill ? ac_poison_pill() : NULL;
    if (m)
        ac_tell(s->seen_routee, m, NULL);
    else
        ac_stop(s->seen_routee);
    if (g_cfg.verbose)
        fprintf(stderr, "soak: kill %s\n", ac_ref_path(s->seen_routee));
    ac_ref_release(s->seen_routee);
    s->seen_routee = NULL;
    atomic_fetch_add(&g_stats.chaos_kills, 1);
}

/* One chaos action. Every draw is made whatever the action finds, so that
 * a seed replays the same sequence of choices. */
void pools_chaos_step(soak_rng *rng)
{
    uint32_t action = soak_rng_below(rng, 100);
    int index = CALM_SLOTS + (int)soak_rng_below(rng, SOAK_SLOTS - CALM_SLOTS);
    bool pill = soak_rng_below(rng, 2);
    uint8_t strategy = (uint8_t)soak_rng_below(rng, STRAT_COUNT);
    uint8_t size = (uint8_t)(1 + soak_rng_below(rng, 6));
    uint8_t sup = (uint8_t)soak_rng_below(rng, SUP_COUNT);
    int64_t timeout = draw_scatter_timeout(rng);
    int tells = 1 + (int)soak_rng_below(rng, 4);
    slot *s = &slots[index];

    pthread_mutex_lock(&s->lock);
    if (action < 25 && s->router) {
        stop_locked(s, index, pill);
    } else if (action < 50) {
        if (s->router)
            stop_locked(s, index, pill);
        s->strategy = strategy;
        s->size = size;
        s->supervision = sup;
        s->scatter_timeout_ms = timeout;
        spawn_locked(s, index);
    } else if (action < 75) {
        kill_routee_locked(s, index, pill);
    }
    pthread_mutex_unlock(&s->lock);
    if (action >= 75 && action < 95 && grave_count > 0 &&
        soak_now_ns() - graves[0].since_ns > 50000000ull)
        probe_oldest(tells);
}

void pools_release_graveyard(void)
{
    while (grave_count > 0)
        probe_oldest(1);
}

void pools_stop_all(void)
{
    for (int i = 0; i < SOAK_SLOTS; i++) {
        slot *s = &slots[i];
        pthread_mutex_lock(&s->lock);
        ac_ref_release(s->router);
        ac_ref_release(s->seen_routee);
        s->router = s->seen_routee = NULL;
        pthread_mutex_unlock(&s->lock);
    }
}
