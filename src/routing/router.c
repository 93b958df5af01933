/*
 * Routers: the router actor, a pool's routees, and what every factory
 * shares (checks, the configuration, the props). The strategies are
 * kinds (ac__router_kind) beside it: the one-shot ones in strategies.c,
 * consistent hashing in hashing.c, the gathering ones in gather_*.c,
 * scatter_gather.c and hedged.c; they call into this file, never the
 * other way.
 *
 * The router is an ordinary actor whose user data is its configuration
 * and whose state holds the live routees. A pool's pre_start spawns
 * routee-1 … routee-N as children and watches them; post_stop (and so a
 * restart, whose default pre_restart calls post_stop) releases them. A
 * group's routees come from its configuration instead (group.c).
 * Terminated routees are pruned by identity: after a restart, a late
 * Terminated for an old routee matches nothing in the new pool.
 *
 * What the router handles itself, whatever its strategy: Terminated (a
 * routee stopped), GetRoutees (routees.c), AddRoutee and RemoveRoutee
 * (group.c) and the Broadcast wrapper; everything else goes to the
 * strategy.
 *
 * With breakers, st->breakers[i] guards st->routees[i] (pruned together).
 * A strategy asks a routee's breaker for a permit before choosing it and
 * sends through ac_breaker_tell, so the routee's answer is counted on its
 * way to the sender. Breakers are made in pre_start and released in
 * post_stop, so a restarted router starts with closed ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/spawn.h"
#include "routing/member_group.h"
#include "routing/router_front.h"
#include "routing/router_internal.h"
#include "routing/router_view.h"

/* ---- the Broadcast wrapper -------------------------------------------- */

static void broadcast_destroy(void *payload, size_t size)
{
    (void)size;
    ac_msg_release(*(ac_msg **)payload);
}

const ac_msg_type ac_msg_type_broadcast = {.name = "actorc.Broadcast",
                                           .destroy = broadcast_destroy};

ac_msg *ac_broadcast_new(ac_msg *inner)
{
    ac__clear_status();
    if (!inner)
        return ac__fail_null(AC_EINVAL, "ac_broadcast_new: inner message is NULL");
    /* Messages to the router itself: a routee could do nothing with them. */
    const char *own = ac_msg_is(inner, &ac_msg_type_get_routees) ? "GetRoutees is answered"
                      : ac_msg_is(inner, &ac_msg_type_add_routee) ? "AddRoutee is handled"
                      : ac_msg_is(inner, &ac_msg_type_remove_routee) ? "RemoveRoutee is handled"
                                                                       : NULL;
    if (own) {
        ac_msg_release(inner); /* consumed, as on every other path */
        return ac__fail_null(AC_EINVAL,
                             "ac_broadcast_new: %s by the router itself; send it unwrapped", own);
    }
    ac_msg *m = ac_msg_new(&ac_msg_type_broadcast, sizeof inner);
    if (!m) {
        ac_msg_release(inner);
        return NULL;
    }
    memcpy(ac_msg_payload(m), &inner, sizeof inner);
    return m;
}

static ac_msg *broadcast_inner(const ac_msg *m)
{
    ac_msg *inner;
    memcpy(&inner, ac_msg_data(m), sizeof inner);
    return inner;
}

/* ---- the router actor ------------------------------------------------- */

void ac__router_dead_letter(ac_ctx *ctx, ac_msg *msg)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_view_dead_letter(cfg->view);
    ac__mailbox_node *node = ac__mailbox_node_make(ac_msg_retain(msg), ac_sender(ctx));
    if (node)
        ac__dead_letter_why(ac_ctx_system(ctx), node, ac_self(ctx),
                            "the router has no routees left");
}

static void router_init(ac_ctx *ctx, void *state)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_state *st = state;
    st->rng = (uint64_t)(uintptr_t)state ^ ac__now_ns() ^ 0x9e3779b97f4a7c15ull;
    if (!st->rng)
        st->rng = 1;
    /* A group may grow (and start empty): room for a few more. */
    st->cap = cfg->is_group ? cfg->group_n + 4 : (size_t)cfg->n;
    st->routees = ac__calloc(st->cap, sizeof *st->routees);
    st->scratch = ac__calloc(st->cap, sizeof *st->scratch);
    if (cfg->breaker)
        st->breakers = ac__calloc(st->cap, sizeof *st->breakers);
    if (!cfg->is_group)
        st->numbers = ac__calloc(st->cap, sizeof *st->numbers);
    if (cfg->members)
        st->keys = ac__calloc(st->cap, sizeof *st->keys);
}

/* The breaker of a new routee, named after its path. */
static bool add_breaker(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_ref *r)
{
    if (!cfg->breaker)
        return true;
    ac_breaker_options o = *cfg->breaker;
    o.name = ac_ref_path(r);
    st->breakers[st->n] = ac_breaker_create(ac_ctx_system(ctx), &o);
    return st->breakers[st->n] != NULL;
}

/* The router could not start: it fails, so that its parent decides. A
 * router left running with part of its pool would hide the failure, so
 * an error that cannot be made falls under the abort half of the
 * out-of-memory rule. */
static void fail_start(ac_ctx *ctx, ac_error *err)
{
    if (AC__UNLIKELY(!err))
        ac__oom_abort("a router's start failure");
    ac_fail(ctx, err);
}

/* A routee is pruned when its Terminated arrives, so one whose watch
 * could not be set up would stay in the pool after it stopped, and take
 * messages for ever. Such a routee is stopped and dropped instead: the
 * pool is one smaller, which the log says. (Should even the stop fail, the
 * routee idles outside the pool until the router stops its children.) */
static bool keep_watched(ac_ctx *ctx, ac_ref *routee)
{
    ac_status st = ac_watch(ctx, routee);
    if (st == AC_OK)
        return true;
    ac_log_warn(ctx, "routee %s dropped: it could not be watched (%s)", ac_ref_path(routee),
                ac_strerror(st));
    ac_stop(routee);
    ac_ref_release(routee);
    return false;
}

/* Spawn and watch routee-i: *out is it, or NULL when it was dropped. False
 * when the router has failed instead. */
static bool spawn_routee(ac_ctx *ctx, const ac__router_cfg *cfg, int i, ac_ref **out)
{
    char name[32];
    snprintf(name, sizeof name, "routee-%d", i);
    *out = NULL;
    ac_props *props = ac_props_new(cfg->routee_def, cfg->routee_user);
    if (!props) {
        fail_start(ctx, ac_error_new("RouterError", "could not spawn %s: out of memory", name));
        return false;
    }
    if (cfg->kind->count_mailbox)
        ac__props_count_mailbox(props);
    if (cfg->skip_cancelled)
        ac__props_skip_cancelled(props);
    ac_ref *r;
    ac_status spawned = ac__spawn_child_status(ctx, props, name, &r);
    if (spawned != AC_OK) {
        fail_start(ctx, ac_error_new("RouterError", "could not spawn %s: %s", name,
                                     ac_strerror(spawned)));
        return false;
    }
    if (keep_watched(ctx, r))
        *out = r;
    return true;
}

/* The set changed (or was first made): the view marks it, and the
 * senders' snapshot, which points at the view's rows, follows. */
static void set_changed(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st)
{
    ac__router_view_mark(cfg->view, st);
    ac__router_front_publish(ac__router_front_of(ctx), st);
}

static void router_pre_start(ac_ctx *ctx)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_state *st = ac_ctx_state(ctx);
    if (!st->routees || !st->scratch || (cfg->breaker && !st->breakers) ||
        (cfg->members && !st->keys) || (!cfg->is_group && !st->numbers)) {
        fail_start(ctx, ac_error_new("RouterError", "out of memory for %zu routees", st->cap));
        return;
    }
    if (cfg->kind->on_start)
        cfg->kind->on_start(ctx, cfg);
    ac__router_view_publish(cfg->view, ac_ctx_system(ctx), ac_self(ctx));
    if (cfg->is_group) {
        ac__router_group_start(ctx, cfg, st);
        if (cfg->members)
            cfg->members->start(ctx, cfg->members_user);
        set_changed(ctx, cfg, st);
        return;
    }
    for (int i = 1; i <= cfg->n; i++) {
        ac_ref *r;
        if (!spawn_routee(ctx, cfg, i, &r))
            return;
        if (!r)
            continue;
        /* The options were checked by the factory: only memory can fail. */
        if (!add_breaker(ctx, cfg, st, r)) {
            fail_start(ctx, ac_error_new("RouterError",
                                         "could not make the breaker of %s: out of memory",
                                         ac_ref_path(r)));
            ac_ref_release(r);
            return;
        }
        st->numbers[st->n] = (uint32_t)i;
        st->routees[st->n++] = r; /* the spawn's reference */
    }
    set_changed(ctx, cfg, st);
}

static void router_post_stop(ac_ctx *ctx)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_state *st = ac_ctx_state(ctx);
    ac__router_front_withdraw(ac__router_front_of(ctx));
    ac__router_view_mark(cfg->view, NULL);
    if (cfg->kind->on_stop)
        cfg->kind->on_stop(ctx, cfg);
    if (cfg->members)
        cfg->members->stop(ctx, cfg->members_user); /* its set goes with it */
    else if (cfg->is_group)
        ac__router_group_stop(cfg, st); /* takes the routees; never stops them */
    for (size_t i = 0; i < st->n; i++) {
        ac_ref_release(st->routees[i]);
        if (st->breakers)
            ac_breaker_release(st->breakers[i]);
        if (st->keys)
            free(st->keys[i]);
    }
    free(st->routees);
    free(st->scratch);
    free(st->breakers);
    free(st->keys);
    free(st->numbers);
    memset(st, 0, sizeof *st);
}

static void prune(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_ref *gone)
{
    for (size_t i = 0; i < st->n; i++) {
        if (st->routees[i] != gone)
            continue;
        ac__router_drop(st, i);
        set_changed(ctx, cfg, st);
        ac_log_debug(ctx, "routee %s stopped; %zu left", ac_ref_path(gone), st->n);
        return;
    }
}

static bool pool_empty(ac_ctx *ctx, ac__router_state *st, ac_msg *msg)
{
    if (st->n > 0)
        return false;
    if (!st->warned_empty) {
        st->warned_empty = true;
        ac_log_warn(ctx, "router has no routees left; messages go to dead letters");
    }
    ac__router_dead_letter(ctx, msg);
    return true;
}

static void router_handle(ac_ctx *ctx, ac_msg *msg)
{
    ac__router_cfg *cfg = ac_ctx_user_data(ctx);
    ac__router_state *st = ac_ctx_state(ctx);
    if (cfg->members && cfg->members->receive(ctx, cfg->members_user, msg)) {
        ac__router_view_mark(cfg->view, st); /* the members may have changed */
        return;
    }
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        prune(ctx, cfg, st, ac_terminated_ref(msg));
        return;
    }
    if (ac_msg_is(msg, &ac_msg_type_get_routees)) {
        ac__router_answer_routees(ctx, st->routees, st->n);
        return;
    }
    if (ac__router_is_change(msg)) {
        ac__router_change(ctx, cfg, st, msg);
        set_changed(ctx, cfg, st);
        return;
    }
    if (ac_msg_is(msg, &ac_msg_type_broadcast)) {
        ac_msg *inner = broadcast_inner(msg);
        if (!pool_empty(ctx, st, inner))
            for (size_t i = 0; i < st->n; i++) {
                ac__router_view_routed(cfg->view, st->routees[i]);
                ac_tell(st->routees[i], ac_msg_retain(inner), ac_sender(ctx));
            }
        return;
    }
    if (!cfg->kind->answers_empty && pool_empty(ctx, st, msg))
        return;
    /* As its sender would have (router_front.h), when the router has a
     * front: one round-robin count, one snapshot. */
    if (!ac__router_front_route(ac__router_front_of(ctx), msg, ac_sender(ctx)))
        cfg->kind->route(ctx, cfg, st, msg);
    st->index++;
}

static void router_receive(ac_ctx *ctx, ac_msg *msg)
{
    router_handle(ctx, msg);
    ac__router_front *front = ac__router_front_of(ctx);
    if (front)
        ac__router_front_handled(front);
}

static const ac_actor_def router_def = {
    .name = "Router",
    .state_size = sizeof(ac__router_state),
    .init = router_init,
    .pre_start = router_pre_start,
    .receive = router_receive,
    .post_stop = router_post_stop,
};

/* ---- factories -------------------------------------------------------- */

ac_status ac__router_check(const char *fn, int n, const ac_actor_def *def,
                           const ac_routee_options *routee_opts)
{
    if (n < 1)
        return ac__fail(AC_EINVAL, "%s: size = %d; a pool needs at least 1 routee", fn, n);
    if (n > AC__ROUTER_MAX_ROUTEES)
        return ac__fail(AC_EINVAL, "%s: size = %d; at most %d routees", fn, n,
                        AC__ROUTER_MAX_ROUTEES);
    if (!def)
        return ac__fail(AC_EINVAL, "%s: routee definition is NULL", fn);
    if (!def->receive)
        return ac__fail(AC_EINVAL, "%s: routee definition \"%s\" has no receive", fn,
                        def->name ? def->name : "(unnamed)");
    const ac_supervisor_strategy *s = routee_opts ? routee_opts->supervisor : NULL;
    if (s && ((int)s->directive < AC_RESTART || s->directive > AC_ESCALATE))
        return ac__fail(AC_EINVAL, "%s: routee supervisor directive = %d is not an ac_directive",
                        fn, (int)s->directive);
    if (routee_opts && routee_opts->breaker)
        return ac_breaker_options_check(fn, routee_opts->breaker, false);
    return AC_OK;
}

ac_status ac__router_copy_breaker(ac__router_cfg *cfg, const ac_routee_options *routee_opts,
                                  const char *fn)
{
    if (!routee_opts || !routee_opts->breaker)
        return AC_OK;
    cfg->breaker = ac__malloc(sizeof *cfg->breaker);
    if (!cfg->breaker)
        return ac__fail(AC_ENOMEM, "%s: out of memory", fn);
    *cfg->breaker = *routee_opts->breaker;
    cfg->breaker->name = NULL; /* each routee's path instead */
    return AC_OK;
}

void ac__router_cfg_free(ac__router_cfg *cfg)
{
    if (cfg->extra_free)
        cfg->extra_free(cfg->extra);
    if (cfg->members && cfg->members->free)
        cfg->members->free(cfg->members_user);
    ac__router_group_free(cfg);
    ac__router_view_free(cfg->view); /* out of the system's view first */
    free(cfg->breaker);
    free(cfg);
}

static void cfg_free(void *p) { ac__router_cfg_free(p); }

static void cfg_on_spawn(ac_system *system, void *p)
{
    ac__router_cfg *cfg = p;
    cfg->kind->on_spawn(system, cfg);
}

ac_props *ac__router_props(ac__router_cfg *cfg, const ac_routee_options *routee_opts,
                           const char *fn)
{
    if (!cfg)
        return NULL; /* its constructor recorded why */
    ac_props *props = ac_props_new(&router_def, cfg);
    if (!props) {
        cfg_free(cfg);
        return NULL;
    }
    ac_props_set_user_data_free(props, cfg_free);
    cfg->view = ac__router_view_create(cfg); /* NULL: the router is not in the view */
    ac__router_front *front = ac__router_front_new(cfg);
    if (front)
        ac__props_front(props, &front->base);
    if (cfg->kind->on_spawn)
        ac__props_on_spawn(props, cfg_on_spawn);
    if (routee_opts && routee_opts->supervisor &&
        ac_props_set_supervisor(props, routee_opts->supervisor) != AC_OK) {
        ac_props_free(props);
        return ac__fail_null(AC_EINVAL, "%s: bad routee supervisor", fn);
    }
    return props;
}

ac__router_cfg *ac__router_pool_cfg_new(const char *fn, const ac__router_kind *kind, int n,
                                        const ac_actor_def *def,
                                        const ac_routee_options *routee_opts)
{
    if (ac__router_check(fn, n, def, routee_opts) != AC_OK)
        return NULL;
    ac__router_cfg *cfg = ac__calloc(1, sizeof *cfg);
    if (!cfg)
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    cfg->kind = kind;
    cfg->n = n;
    cfg->routee_def = def;
    cfg->routee_user = routee_opts ? routee_opts->user_data : NULL;
    if (ac__router_copy_breaker(cfg, routee_opts, fn) != AC_OK) {
        free(cfg);
        return NULL;
    }
    return cfg;
}
