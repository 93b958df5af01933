/*
 * Death watch: exactly one Terminated for every router that stops.
 *
 * A watcher actor is told to watch every router as it is spawned, some of
 * them twice (watching twice delivers one Terminated). Each Terminated
 * names a router generation, which must not have had one before and must
 * have been marked as something that may stop. At the end, once the
 * notices have had time to arrive, every router chaos stopped must have
 * produced its Terminated.
 */
#include "soak.h"

#define MARKS 256

typedef struct watch_msg {
    ac_ref *ref; /* retained */
} watch_msg;

static void watch_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(((watch_msg *)payload)->ref);
}

static const ac_msg_type watch_type = {.name = "soak.Watch", .destroy = watch_destroy};

static ac_ref *watcher;
static _Atomic uint32_t seen[SOAK_SLOTS][MARKS]; /* gen + 1 of the last Terminated */
static atomic_uint_fast64_t terminated;

static void on_terminated(ac_ref *who)
{
    int slot;
    uint32_t gen;
    bool is_router;
    if (!pools_parse_path(ac_ref_path(who), &slot, &gen, &is_router) || !is_router) {
        soak_violation("a Terminated for %s, which was not watched", ac_ref_path(who));
        return;
    }
    if (atomic_exchange(&seen[slot][gen % MARKS], gen + 1) == gen + 1)
        soak_violation("a second Terminated for %s", ac_ref_path(who));
    else if (!pools_gen_stopish(slot, gen))
        soak_violation("a Terminated for %s, which nothing stopped", ac_ref_path(who));
    atomic_fetch_add(&terminated, 1);
}

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &watch_type))
        ac_watch(ctx, ((const watch_msg *)ac_msg_data(msg))->ref);
    else if (ac_msg_is(msg, &ac_msg_type_terminated))
        on_terminated(ac_terminated_ref(msg));
}

static const ac_actor_def watcher_def = {.name = "SoakWatcher", .receive = watcher_receive};

int watch_start(ac_system *sys)
{
    ac_props *p = ac_props_new(&watcher_def, NULL);
    watcher = p ? ac_spawn(sys, p, "watcher") : NULL;
    return watcher ? 0 : -1;
}

void watch_router(ac_ref *router, bool twice)
{
    for (int i = 0; i < 1 + twice; i++) {
        ac_msg *m = ac_msg_new(&watch_type, sizeof(watch_msg));
        if (!m)
            return;
        ((watch_msg *)ac_msg_payload(m))->ref = ac_ref_retain(router);
        ac_tell(watcher, m, NULL);
    }
}

bool watch_verify(void)
{
    uint64_t until = soak_now_ns() + 3000000000ull;
    uint64_t stops = atomic_load(&g_stats.chaos_stops);
    while (atomic_load(&terminated) < stops && soak_now_ns() < until)
        soak_sleep_us(1000);
    atomic_store(&g_stats.terminated_seen, atomic_load(&terminated));
    if (atomic_load(&terminated) < stops && g_cfg.fail_alloc <= 0) {
        soak_violation("chaos stopped %llu routers, but only %llu Terminated notices arrived",
                       (unsigned long long)stops, (unsigned long long)atomic_load(&terminated));
        return false;
    }
    return true;
}
