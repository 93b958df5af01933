/*
 * The one-shot strategies: round robin, random, broadcast, smallest
 * mailbox and custom, each a router kind (ac__router_kind) that picks
 * the routees of one message in the router's turn and tells them, and
 * their pool and group factories.
 *
 * With breakers, st->breakers[i] guards st->routees[i]: a strategy asks
 * a routee's breaker for a permit before choosing it and sends through
 * ac_breaker_tell, so the routee's answer is counted on its way to the
 * sender; when every breaker refuses, the sender hears so at once.
 */
#include <stdlib.h>

#include "core/last_error.h"
#include "routing/member_group.h"
#include "routing/router_front.h"
#include "routing/router_internal.h"
#include "routing/router_view.h"

static void send_to(ac_ctx *ctx, ac_ref *routee, ac_msg *msg)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_view_routed(cfg->view, routee);
    ac_tell(routee, ac_msg_retain(msg), ac_sender(ctx));
}

/* ---- through the routees' breakers ---- */

static int64_t breaker_timeout(const ac__router_cfg *cfg) { return cfg->breaker->call_timeout_ms; }

/* Send to routee i if its breaker admits the message. On refusal keeps
 * the first open error in *first_refusal (the caller's reference). */
static bool send_guarded(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, size_t i,
                         ac_msg *msg, ac_error **first_refusal)
{
    ac_breaker_permit p;
    ac_error *err = NULL;
    if (!ac_breaker_acquire(st->breakers[i], &p, first_refusal && !*first_refusal ? &err : NULL)) {
        if (err)
            *first_refusal = err;
        ac__router_view_refused(cfg->view, st->routees[i]);
        return false;
    }
    ac__router_view_routed(cfg->view, st->routees[i]);
    ac_breaker_tell(st->breakers[i], &p, st->routees[i], ac_msg_retain(msg), ac_sender(ctx),
                    breaker_timeout(cfg));
    return true;
}

/* Every breaker refused: the sender hears so at once. */
static void refuse(ac_ctx *ctx, ac_msg *msg, ac_error *err)
{
    ac_ref *sender = ac_sender(ctx);
    if (sender && err) {
        ac_tell(sender, ac_msg_error_new(err), NULL);
        return;
    }
    ac_error_release(err);
    ac_log_debug(ctx, "every routee's breaker is open; %s dropped", ac_msg_type_name(msg));
}

/* The first routee from `start` on (in ring order) whose breaker admits. */
static void send_first_admitted(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st,
                                size_t start, ac_msg *msg)
{
    ac_error *err = NULL;
    for (size_t k = 0; k < st->n; k++)
        if (send_guarded(ctx, cfg, st, (start + k) % st->n, msg, &err)) {
            ac_error_release(err);
            return;
        }
    refuse(ctx, msg, err);
}

static void route_round_robin(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    if (st->breakers) {
        send_first_admitted(ctx, cfg, st, (size_t)(st->index % st->n), msg);
        return;
    }
    send_to(ctx, st->routees[st->index % st->n], msg);
}

static uint64_t next_random(ac__router_state *st)
{
    st->rng ^= st->rng >> 12; /* xorshift64* */
    st->rng ^= st->rng << 25;
    st->rng ^= st->rng >> 27;
    return st->rng * 2685821657736338717ull;
}

static void route_random(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    /* Multiply-shift maps 64 random bits onto [0, n) without modulo bias
     * worth measuring for any pool size. */
    uint64_t r = next_random(st) >> 32;
    size_t i = (size_t)((r * st->n) >> 32);
    if (st->breakers)
        send_first_admitted(ctx, cfg, st, i, msg);
    else
        send_to(ctx, st->routees[i], msg);
}

static void route_broadcast(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    if (!st->breakers) {
        for (size_t i = 0; i < st->n; i++)
            send_to(ctx, st->routees[i], msg);
        return;
    }
    ac_error *err = NULL;
    size_t sent = 0;
    for (size_t i = 0; i < st->n; i++)
        sent += send_guarded(ctx, cfg, st, i, msg, &err);
    if (sent)
        ac_error_release(err);
    else
        refuse(ctx, msg, err);
}

/* The smallest mailbox if its breaker admits; else the next that does. */
static void route_smallest_guarded(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st,
                                   ac_ref *best, ac_msg *msg)
{
    size_t i = 0;
    while (st->routees[i] != best)
        i++;
    send_first_admitted(ctx, cfg, st, i, msg);
}

/* The routee with the smallest known depth (ties rotate, from `start`);
 * failing that, the first from `start` on whose depth is unknown, so that
 * such routees take turns; NULL when every routee has stopped. */
/* A routee's depth: a local actor's as its cell tells it; another's as a
 * member group's driver knows it. */
static int depth_of(const ac__router_cfg *cfg, const ac_ref *r)
{
    if (r->ops->kind == AC__REF_ACTOR || !cfg->members || !cfg->members->depth)
        return ac__mailbox_len(r);
    return cfg->members->depth(cfg->members_user, r);
}

static ac_ref *smallest_mailbox(const ac__router_cfg *cfg, const ac__router_state *st,
                                size_t start)
{
    ac_ref *best = NULL, *unknown = NULL;
    int best_len = 0;
    for (size_t k = 0; k < st->n; k++) {
        ac_ref *r = st->routees[(start + k) % st->n];
        int len = depth_of(cfg, r);
        if (len == AC__MAILBOX_UNKNOWN && !unknown)
            unknown = r;
        if (len < 0)
            continue; /* unknown, or stopped and not yet pruned */
        if (!best || len < best_len) {
            best = r;
            best_len = len;
        }
    }
    return best ? best : unknown;
}

static void route_smallest_mailbox(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st,
                                   ac_msg *msg)
{
    ac_ref *best = smallest_mailbox(cfg, st, (size_t)(st->index % st->n));
    if (best && st->breakers)
        route_smallest_guarded(ctx, cfg, st, best, msg);
    else if (best)
        send_to(ctx, best, msg);
    else
        ac__router_dead_letter(ctx, msg);
    if (best && cfg->members && cfg->members->routed)
        cfg->members->routed(cfg->members_user, best);
}

/* The routees the strategy chose (st->scratch[0..k)) whose breakers admit. */
static void route_custom_guarded(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, size_t k,
                                 ac_msg *msg)
{
    ac_error *err = NULL;
    size_t sent = 0, chosen = 0;
    for (size_t j = 0; j < k; j++)
        for (size_t i = 0; st->scratch[j] && i < st->n; i++)
            if (st->routees[i] == st->scratch[j]) {
                chosen++;
                sent += send_guarded(ctx, cfg, st, i, msg, &err);
                break;
            }
    if (sent || !chosen)
        ac_error_release(err);
    else
        refuse(ctx, msg, err);
}

static void route_custom(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    size_t k = cfg->fn(st->routees, st->n, st->index, msg, cfg->fn_user, st->scratch);
    if (k > st->n) {
        ac_log_error(ctx, "custom routing returned %zu routees for a %s of %zu; dropped", k,
                     cfg->is_group ? "group" : "pool", st->n);
        return;
    }
    if (st->breakers) {
        route_custom_guarded(ctx, cfg, st, k, msg);
        return;
    }
    for (size_t i = 0; i < k; i++)
        if (st->scratch[i])
            send_to(ctx, st->scratch[i], msg);
}

/* ---- in the sender's thread (router_front.h) ---- */

static bool send_round_robin(ac__router_front *f, const ac__route_snap *s, ac__mailbox_node *node)
{
    ac__route_round_robin(f, s, node);
    return true;
}

/* Each sending thread draws from its own generator. */
static _Thread_local uint64_t tls_rng;

static bool send_random(ac__router_front *f, const ac__route_snap *s, ac__mailbox_node *node)
{
    uint64_t x = tls_rng;
    if (AC__UNLIKELY(!x))
        x = ((uint64_t)(uintptr_t)&tls_rng ^ ac__now_ns() ^ (uint64_t)(uintptr_t)f) | 1;
    x ^= x >> 12; /* xorshift64*, as next_random */
    x ^= x << 25;
    x ^= x >> 27;
    tls_rng = x;
    uint64_t r = (x * 2685821657736338717ull) >> 32;
    ac__route_to(s, (size_t)((r * s->n) >> 32), node);
    return true;
}

static bool send_broadcast(ac__router_front *f, const ac__route_snap *s, ac__mailbox_node *node)
{
    (void)f;
    for (size_t i = 0; i + 1 < s->n; i++) {
        ac__mailbox_node *copy = ac__mailbox_node_make(ac_msg_retain(node->msg), node->sender);
        if (copy) /* out of memory: that routee misses it, as a failed tell */
            ac__route_to(s, i, copy);
    }
    ac__route_to(s, s->n - 1, node);
    return true;
}

/* The smallest known depth from a rotating start, as smallest_mailbox();
 * when every routee has stopped, the router's turn decides. */
static bool send_smallest_mailbox(ac__router_front *f, const ac__route_snap *s,
                                  ac__mailbox_node *node)
{
    size_t start = (size_t)(atomic_fetch_add_explicit(&f->index, 1, memory_order_relaxed) % s->n);
    size_t best = SIZE_MAX, unknown = SIZE_MAX;
    int best_len = 0;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = (start + k) % s->n;
        int len = ac__mailbox_len(s->routees[i]);
        if (len == AC__MAILBOX_UNKNOWN && unknown == SIZE_MAX)
            unknown = i;
        if (len < 0)
            continue;
        if (best == SIZE_MAX || len < best_len) {
            best = i;
            best_len = len;
        }
    }
    if (best == SIZE_MAX)
        best = unknown;
    if (best == SIZE_MAX)
        return false;
    ac__route_to(s, best, node);
    return true;
}

const ac__router_kind ac__round_robin_kind = {
    .name = "round-robin", .route = route_round_robin, .send = send_round_robin};
const ac__router_kind ac__random_kind = {
    .name = "random", .route = route_random, .send = send_random};
const ac__router_kind ac__broadcast_kind = {
    .name = "broadcast", .route = route_broadcast, .send = send_broadcast};
const ac__router_kind ac__smallest_mailbox_kind = {.name = "smallest-mailbox",
                                                   .route = route_smallest_mailbox,
                                                   .count_mailbox = true,
                                                   .send = send_smallest_mailbox};
const ac__router_kind ac__custom_kind = {.name = "custom", .route = route_custom};


/* ---- factories -------------------------------------------------------- */

static ac_props *make_pool(const char *fn, const ac__router_kind *kind, int n,
                           const ac_actor_def *def, ac_routing_fn strategy, void *user,
                           const ac_routee_options *routee_opts)
{
    ac__router_cfg *cfg = ac__router_pool_cfg_new(fn, kind, n, def, routee_opts);
    if (cfg) {
        cfg->fn = strategy;
        cfg->fn_user = user;
    }
    return ac__router_props(cfg, routee_opts, fn);
}

static ac_props *make_group(const char *fn, const ac__router_kind *kind, ac_ref *const *routees,
                            size_t n, ac_routing_fn strategy, void *user)
{
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, kind, routees, n);
    if (cfg) {
        cfg->fn = strategy;
        cfg->fn_user = user;
    }
    return ac__router_props(cfg, NULL, fn);
}

ac_props *ac_router_round_robin(int n, const ac_actor_def *def, const ac_routee_options *ro)
{
    ac__clear_status();
    return make_pool("ac_router_round_robin", &ac__round_robin_kind, n, def, NULL, NULL, ro);
}

ac_props *ac_router_random(int n, const ac_actor_def *def, const ac_routee_options *ro)
{
    ac__clear_status();
    return make_pool("ac_router_random", &ac__random_kind, n, def, NULL, NULL, ro);
}

ac_props *ac_router_broadcast(int n, const ac_actor_def *def, const ac_routee_options *ro)
{
    ac__clear_status();
    return make_pool("ac_router_broadcast", &ac__broadcast_kind, n, def, NULL, NULL, ro);
}

ac_props *ac_router_smallest_mailbox(int n, const ac_actor_def *def, const ac_routee_options *ro)
{
    ac__clear_status();
    return make_pool("ac_router_smallest_mailbox", &ac__smallest_mailbox_kind, n, def, NULL, NULL,
                     ro);
}

ac_props *ac_router_custom(int n, const ac_actor_def *def, ac_routing_fn strategy, void *user,
                           const ac_routee_options *ro)
{
    ac__clear_status();
    if (!strategy)
        return ac__fail_null(AC_EINVAL, "ac_router_custom: strategy is NULL");
    return make_pool("ac_router_custom", &ac__custom_kind, n, def, strategy, user, ro);
}

ac_props *ac_router_group_round_robin(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_round_robin", &ac__round_robin_kind, routees, n, NULL,
                      NULL);
}

ac_props *ac_router_group_random(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_random", &ac__random_kind, routees, n, NULL, NULL);
}

ac_props *ac_router_group_broadcast(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_broadcast", &ac__broadcast_kind, routees, n, NULL, NULL);
}

ac_props *ac_router_group_smallest_mailbox(ac_ref *const *routees, size_t n)
{
    ac__clear_status();
    return make_group("ac_router_group_smallest_mailbox", &ac__smallest_mailbox_kind, routees, n,
                      NULL, NULL);
}

ac_props *ac_router_group_custom(ac_ref *const *routees, size_t n, ac_routing_fn strategy,
                                 void *user_data)
{
    ac__clear_status();
    if (!strategy)
        return ac__fail_null(AC_EINVAL, "ac_router_group_custom: strategy is NULL");
    return make_group("ac_router_group_custom", &ac__custom_kind, routees, n, strategy,
                      user_data);
}
