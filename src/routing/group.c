/*
 * Group routers: routers over refs the caller gives, and a routee set that
 * changes at run time (AddRoutee, RemoveRoutee).
 *
 * A group is the same router actor as a pool (router.c) with the same
 * strategies; only where its routees come from differs. The factory checks
 * the refs (none NULL, none twice, none a reply ref, all of one system) and
 * retains a copy in the configuration. pre_start moves them into the
 * router's state and watches each; a Terminated prunes a routee as in a
 * pool. The router never stops a routee: they are not its children.
 *
 * The set is the router's state, changed only in its own turn, so a
 * strategy sees one set per message and needs no lock. It keeps the order
 * in which routees were added; a removal closes the gap. A scatter holds
 * its own references to the routees it asked, so removing one leaves the
 * open scatters as they were.
 *
 * When the router stops, its set goes back to the configuration, and is
 * released with it. A group has no children to fail and escalate, so it
 * restarts only when its start failed (out of memory); should it restart
 * after it ran, the restart (whose default pre_restart is post_stop)
 * starts from the set as it was changed, not as it was given.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "routing/router_internal.h"

/* ---- AddRoutee and RemoveRoutee --------------------------------------- */

static void change_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(*(ac_ref **)payload);
}

const ac_msg_type ac_msg_type_add_routee = {.name = "actorc.AddRoutee",
                                            .destroy = change_destroy};
const ac_msg_type ac_msg_type_remove_routee = {.name = "actorc.RemoveRoutee",
                                               .destroy = change_destroy};

static ac_msg *change_new(const ac_msg_type *type, ac_ref *routee, const char *fn)
{
    ac__clear_status();
    if (!routee)
        return ac__fail_null(AC_EINVAL, "%s: routee is NULL", fn);
    ac_msg *m = ac_msg_new(type, sizeof routee);
    if (!m)
        return NULL;
    ac_ref *held = ac_ref_retain(routee);
    memcpy(ac_msg_payload(m), &held, sizeof held);
    return m;
}

ac_msg *ac_router_add_routee_msg(ac_ref *routee)
{
    return change_new(&ac_msg_type_add_routee, routee, "ac_router_add_routee_msg");
}

ac_msg *ac_router_remove_routee_msg(ac_ref *routee)
{
    return change_new(&ac_msg_type_remove_routee, routee, "ac_router_remove_routee_msg");
}

static ac_ref *change_routee(const ac_msg *msg)
{
    ac_ref *r;
    memcpy(&r, ac_msg_data(msg), sizeof r);
    return r;
}

bool ac__router_is_change(const ac_msg *msg)
{
    return ac_msg_is(msg, &ac_msg_type_add_routee) || ac_msg_is(msg, &ac_msg_type_remove_routee);
}

/* ---- the set at run time ---------------------------------------------- */

static size_t find(const ac__router_state *st, const ac_ref *r)
{
    size_t i = 0;
    while (i < st->n && st->routees[i] != r)
        i++;
    return i;
}

/* Why `r` cannot join the set, or NULL when it can (it is not in it). */
static const char *refusal(ac_ctx *ctx, const ac__router_state *st, const ac_ref *r)
{
    if (r == ac_self(ctx))
        return "it is the router itself";
    if (ac_ref_system(r) != ac_ctx_system(ctx))
        return "it belongs to another actor system";
    if (st->n >= AC__ROUTER_MAX_ROUTEES)
        return "the group has as many routees as a router takes";
    return NULL;
}

/* Append `r` (borrowed) to the set, watched. When it cannot be, false
 * and a line that says why, starting with `what`. */
static bool admit(ac_ctx *ctx, ac__router_state *st, ac_ref *r, const char *what)
{
    const char *why = refusal(ctx, st, r);
    if (why) {
        ac_log_warn(ctx, "%s %s: %s", what, ac_ref_path(r), why);
        return false;
    }
    if (!ac__router_make_room(st)) {
        ac_log_error(ctx, "%s %s: out of memory", what, ac_ref_path(r));
        return false;
    }
    /* Pruning needs the Terminated a watch brings: a routee whose watch
     * cannot be set up would take messages after it stopped. */
    ac_status watched = ac_watch(ctx, r);
    if (watched != AC_OK) {
        ac_log_warn(ctx, "%s %s: it could not be watched (%s)", what, ac_ref_path(r),
                    ac_strerror(watched));
        return false;
    }
    st->routees[st->n++] = ac_ref_retain(r);
    st->warned_empty = false; /* emptied again, the router says so again */
    return true;
}

void ac__router_group_start(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st)
{
    for (size_t i = 0; i < cfg->group_n; i++) {
        (void)admit(ctx, st, cfg->group[i], "routee dropped:");
        ac_ref_release(cfg->group[i]);
    }
    free(cfg->group);
    cfg->group = NULL;
    cfg->group_n = 0;
}

void ac__router_group_stop(ac__router_cfg *cfg, ac__router_state *st)
{
    if (cfg->group) /* the start failed before it took them: they stay */
        return;
    cfg->group = st->routees;
    cfg->group_n = st->n;
    st->routees = NULL;
    st->n = 0;
}

void ac__router_group_free(ac__router_cfg *cfg)
{
    for (size_t i = 0; i < cfg->group_n; i++)
        ac_ref_release(cfg->group[i]);
    free(cfg->group);
    cfg->group = NULL;
    cfg->group_n = 0;
}

static void add_routee(ac_ctx *ctx, ac__router_state *st, ac_ref *r)
{
    if (find(st, r) < st->n) {
        ac_log_debug(ctx, "AddRoutee of %s: already a routee", ac_ref_path(r));
        return;
    }
    if (admit(ctx, st, r, "AddRoutee refused for"))
        ac_log_debug(ctx, "routee %s added; %zu routees", ac_ref_path(r), st->n);
}

static void remove_routee(ac_ctx *ctx, ac__router_state *st, ac_ref *r)
{
    size_t i = find(st, r);
    if (i == st->n) {
        ac_log_debug(ctx, "RemoveRoutee of %s: not a routee", ac_ref_path(r));
        return;
    }
    /* Should the unwatch fail, a Terminated still comes, and matches no
     * routee. */
    (void)ac_unwatch(ctx, r);
    ac__router_drop(st, i);
    ac_log_debug(ctx, "routee %s removed; %zu left", ac_ref_path(r), st->n);
}

void ac__router_change(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    ac_ref *r = change_routee(msg);
    bool add = ac_msg_is(msg, &ac_msg_type_add_routee);
    if (cfg->members) {
        ac_log_warn(ctx,
                    "%s of %s ignored: this router's routees follow its members, one per "
                    "member",
                    add ? "AddRoutee" : "RemoveRoutee", ac_ref_path(r));
        return;
    }
    if (!cfg->is_group) {
        ac_log_warn(ctx,
                    "%s of %s ignored: a pool spawns and owns its routees; only a group "
                    "router's routees change at run time",
                    add ? "AddRoutee" : "RemoveRoutee", ac_ref_path(r));
        return;
    }
    if (add)
        add_routee(ctx, st, r);
    else
        remove_routee(ctx, st, r);
}

/* ---- factories -------------------------------------------------------- */

static ac_status check_routee(const char *fn, ac_ref *const *routees, size_t i)
{
    const ac_ref *r = routees[i];
    if (!r)
        return ac__fail(AC_EINVAL, "%s: routees[%zu] is NULL", fn, i);
    if (r->ops->kind == AC__REF_REPLY)
        return ac__fail(AC_EINVAL,
                        "%s: routees[%zu] (%s) is a reply ref, not an actor: a group watches "
                        "its routees",
                        fn, i, ac_ref_path(r));
    if (r->system != routees[0]->system)
        return ac__fail(AC_EINVAL,
                        "%s: routees[%zu] (%s) is in another actor system than routees[0] "
                        "(%s); a group's routees share one",
                        fn, i, ac_ref_path(r), ac_ref_path(routees[0]));
    return AC_OK;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (ac_ref *const *)a, y = (uintptr_t) * (ac_ref *const *)b;
    return (x > y) - (x < y);
}

/* The first two places where one ref appears twice. */
static ac_status fail_duplicate(const char *fn, ac_ref *const *routees, size_t n, const ac_ref *r)
{
    size_t i = 0, j;
    while (routees[i] != r)
        i++;
    for (j = i + 1; j < n && routees[j] != r; j++)
        ;
    return ac__fail(AC_EINVAL, "%s: routees[%zu] and routees[%zu] are the same ref (%s)", fn, i,
                    j, ac_ref_path(r));
}

/* `copy` holds routees[0..n) (all checked): sorted, a duplicate sits
 * beside its twin. Restores nothing: the caller re-copies. */
static ac_status check_duplicates(const char *fn, ac_ref *const *routees, size_t n, ac_ref **copy)
{
    qsort(copy, n, sizeof *copy, by_address);
    for (size_t i = 1; i < n; i++)
        if (copy[i] == copy[i - 1])
            return fail_duplicate(fn, routees, n, copy[i]);
    return AC_OK;
}

static ac_status check_group(const char *fn, ac_ref *const *routees, size_t n, ac_ref **copy)
{
    if (n == 0)
        return AC_OK; /* routees may be NULL */
    for (size_t i = 0; i < n; i++) {
        ac_status st = check_routee(fn, routees, i);
        if (st != AC_OK)
            return st;
    }
    memcpy(copy, routees, n * sizeof *copy);
    ac_status st = check_duplicates(fn, routees, n, copy);
    memcpy(copy, routees, n * sizeof *copy); /* back in the caller's order */
    return st;
}

ac__router_cfg *ac__router_group_cfg_new(const char *fn, const ac__router_kind *kind,
                                         ac_ref *const *routees, size_t n)
{
    if (n > AC__ROUTER_MAX_ROUTEES)
        return ac__fail_null(AC_EINVAL, "%s: n = %zu; at most %d routees", fn, n,
                             AC__ROUTER_MAX_ROUTEES);
    if (n > 0 && !routees)
        return ac__fail_null(AC_EINVAL, "%s: routees is NULL, with n = %zu", fn, n);
    ac__router_cfg *cfg = ac__calloc(1, sizeof *cfg);
    ac_ref **copy = ac__malloc((n ? n : 1) * sizeof *copy);
    if (!cfg || !copy) {
        ac__fail(AC_ENOMEM, "%s: out of memory for %zu routees", fn, n);
        goto fail;
    }
    if (check_group(fn, routees, n, copy) != AC_OK)
        goto fail;
    for (size_t i = 0; i < n; i++)
        ac_ref_retain(copy[i]);
    cfg->kind = kind;
    cfg->is_group = true;
    cfg->group = copy;
    cfg->group_n = n;
    return cfg;
fail:
    free(copy);
    free(cfg);
    return NULL;
}
