/*
 * Dead letters: each one must be explained by something that was stopped.
 *
 * A subscriber actor sees every dead letter. Its recipient must lie in a
 * router generation that was marked before anything in it could stop
 * (pools.c); a dead letter to a caller, a stream actor or an unmarked
 * generation is a violation. A tell-with-self that died at its router is
 * that request's outcome, and settles it in the ledger. At the end the
 * system's count must equal what the subscriber saw, and be at least the
 * tells chaos sent to routers it knew were stopped. (With allocations
 * failing on purpose the subscriber may see fewer: a notice that cannot be
 * made is dropped, and the summary says how many.)
 */
#include "soak.h"

static atomic_bool checking = true;

static void judge(const ac_msg *dl)
{
    ac_ref *to = ac_dead_letter_recipient(dl);
    const ac_msg *msg = ac_dead_letter_msg(dl);
    int slot;
    uint32_t gen;
    bool is_router;
    /* With allocations failing on purpose, a router's stop by poison pill
     * may be lost (the pill's envelope not made), and the probe's tells
     * after it, sent with no sender, reach a routee, whose reply then has
     * no recipient. Without failures that is a violation: the router was
     * stopped, and those tells die at it. */
    if (!to && g_cfg.fail_alloc > 0 && ac_msg_is(msg, &soak_reply_type)) {
        atomic_fetch_add(&g_stats.dl_attributed, 1);
        return;
    }
    if (!pools_parse_path(ac_ref_path(to), &slot, &gen, &is_router)) {
        soak_violation("a dead letter (%s from %s) to %s, which is never stopped",
                       ac_msg_type_name(msg), ac_ref_path(ac_dead_letter_sender(dl)),
                       to ? ac_ref_path(to) : "no recipient");
        return;
    }
    if (!pools_gen_stopish(slot, gen)) {
        soak_violation("a dead letter (%s) to %s, though nothing in pool-%d-g%u was stopped",
                       ac_msg_type_name(msg), ac_ref_path(to), slot, gen);
        return;
    }
    atomic_fetch_add(&g_stats.dl_attributed, 1);
    if (is_router && ac_msg_is(msg, &soak_request_type))
        ledger_dead_letter(((const soak_request *)ac_msg_data(msg))->id, slot, gen);
}

static void subscriber_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    if (!ac_msg_is(msg, &ac_msg_type_dead_letter))
        return;
    atomic_fetch_add(&g_stats.dl_seen, 1);
    if (atomic_load(&checking))
        judge(msg);
}

static const ac_actor_def subscriber_def = {.name = "SoakDeadLetters",
                                            .receive = subscriber_receive};

int deadletters_start(ac_system *sys)
{
    ac_props *p = ac_props_new(&subscriber_def, NULL);
    ac_ref *sub = p ? ac_spawn(sys, p, "dead-letters") : NULL;
    if (!sub)
        return -1;
    ac_status st = ac_dead_letters_subscribe(sys, sub);
    ac_ref_release(sub);
    return st == AC_OK ? 0 : -1;
}

bool deadletters_verify(ac_system *sys)
{
    uint64_t until = soak_now_ns() + 3000000000ull;
    while (atomic_load(&g_stats.dl_seen) < ac_dead_letter_count(sys) && soak_now_ns() < until)
        soak_sleep_us(1000);
    atomic_store(&checking, false);
    uint64_t counted = ac_dead_letter_count(sys), seen = atomic_load(&g_stats.dl_seen);
    uint64_t known = atomic_load(&g_stats.known_dead);
    /* A notice that cannot be allocated is dropped (the count still
     * counts it): with allocations failing on purpose, fewer is allowed. */
    if (g_cfg.fail_alloc > 0 && seen < counted)
        atomic_store(&g_stats.dl_notices_lost, counted - seen);
    else if (counted != seen) {
        soak_violation("dead letters: the system counted %llu, its subscriber saw %llu",
                       (unsigned long long)counted, (unsigned long long)seen);
        return false;
    }
    if (counted < known) {
        soak_violation(
            "dead letters: %llu counted, fewer than the %llu tells sent to stopped routers",
            (unsigned long long)counted, (unsigned long long)known);
        return false;
    }
    return true;
}
