/*
 * What a gathering router tells its caller, in its kind's words
 * (ac__gather_names): the AggregateError of a gather nobody won, the
 * Quorum message of one a quorum won, the router's stop, and the answers
 * made at once, without a gather (no routees, no memory, every breaker
 * open, too few for the quorum, no reply target).
 *
 * An answer is promised: the caller waits for it. So under the
 * out-of-memory rule (docs/architecture.md) an answer that cannot be
 * made aborts, with what it was; the one exception is the members of an
 * AggregateError, which is sent without them, saying so.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "routing/gather.h"
#include "routing/quorum.h"

ac_error *ac__gather_error_or_abort(ac_error *err, const char *what)
{
    if (AC__UNLIKELY(!err))
        ac__oom_abort(what);
    return err;
}

/* A fresh message travels in its own envelope, so the tell itself
 * allocates nothing. */
void ac__gather_tell_error(ac_ref *caller, ac_error *err, ac_ref *sender)
{
    ac_msg *m = ac_msg_error_new(err);
    if (AC__UNLIKELY(!m))
        ac__oom_abort("a gathering router's error answer");
    ac_tell(caller, m, sender);
}

static void fail_caller(ac__gather *g, ac_error *err)
{
    ac__gather_tell_error(g->caller, err, g->shared->router);
}

static bool all_are(ac_error *const *members, uint32_t m, const char *name)
{
    for (uint32_t i = 0; i < m; i++)
        if (!ac_error_is(members[i], name))
            return false;
    return m > 0;
}

/* The AggregateError of a gather nobody won (N = `asked`); when it cannot
 * hold its members, the same error without them. */
static ac_error *failed_error(ac__gather *g, ac_error **members, uint32_t m, uint32_t asked,
                              bool all_timeouts)
{
    const ac__gather_shared *sh = g->shared;
    const char *t = sh->names->title, *path = ac__gather_router_path(sh);
    ac_error *err;
    if (g->quorum > 1)
        err = ac_error_aggregate(members, m,
                                 "%s %s: %u of %u routees failed; a quorum of %u can no longer "
                                 "be reached",
                                 t, path, m, asked, g->quorum);
    else if (all_timeouts)
        err = ac_error_aggregate(members, m, "%s %s: none of %u routees replied within %ums", t,
                                 path, asked, sh->timeout_ms);
    else if (all_are(members, m, AC_CIRCUIT_BREAKER_OPEN_ERROR))
        err = ac_error_aggregate(members, m,
                                 "%s %s: the circuit breakers of all %u routees are open", t, path,
                                 asked);
    else
        err = ac_error_aggregate(members, m, "%s %s: all %u routees failed", t, path, asked);
    if (err)
        return err;
    ac_error *small = ac_error_new(AC_AGGREGATE_ERROR,
                                   "%s %s: %u of %u routees failed (their errors could not be "
                                   "gathered)",
                                   t, path, m, asked);
    return ac__gather_error_or_abort(small, "a gathering router's AggregateError");
}

void ac__gather_answer_failed(ac__gather *g, uint32_t asked)
{
    ac_error *small[8];
    ac_error **members = asked <= 8 ? small : ac__malloc(asked * sizeof *members);
    if (!members)
        ac__oom_abort("the members of a gathering router's AggregateError");
    uint32_t m = 0;
    for (uint32_t i = 0; i < asked; i++) {
        const ac__gather_slot *s = &g->slots[i];
        /* Acquire pairs with the release store of the slot's outcome: its
         * error is written. */
        int o = atomic_load_explicit(&s->state, memory_order_acquire);
        if (o == AC__SLOT_FAILED || o == AC__SLOT_TIMEOUT)
            members[m++] = s->error;
    }
    bool all_timeouts = all_are(members, m, AC_ASK_TIMEOUT_ERROR);
    ac_error *err = failed_error(g, members, m, asked, all_timeouts);
    if (members != small)
        free(members);
    ac__gather_count_outcome(g->shared, g->system,
                             all_timeouts ? AC__GATHER_TIMEOUT : AC__GATHER_ALL_FAILED,
                             g->start_ns);
    fail_caller(g, err);
}

/* The router stopped (or restarts) while the gather was open. */
void ac__gather_answer_stopped(ac__gather *g)
{
    ac__gather_shared *sh = g->shared;
    ac__gather_count_outcome(sh, g->system, AC__GATHER_STOPPED, g->start_ns);
    fail_caller(g, ac__gather_error_or_abort(
                       ac_error_aggregate(NULL, 0, "%s %s stopped while the %s was still open",
                                          sh->names->title, ac__gather_router_path(sh),
                                          sh->names->noun),
                       "a gathering router's answer"));
}

/* The quorum is complete: one Quorum message, sent by the router. */
void ac__gather_answer_quorum(ac__gather *g)
{
    ac_msg *m = ac__quorum_new(g->quorum);
    if (AC__UNLIKELY(!m))
        ac__oom_abort("a scatter/gather's Quorum answer");
    for (uint32_t i = 0; i < g->quorum; i++) {
        ac__gather_success *w = &g->successes[i];
        atomic_store_explicit(&g->slots[w->slot].state, AC__SLOT_WON, memory_order_relaxed);
        ac__quorum_put(m, i, w->reply, w->sender);
        w->reply = NULL;
        w->sender = NULL;
    }
    ac__gather_count_outcome(g->shared, g->system, AC__GATHER_FIRST, g->start_ns);
    ac_tell(g->caller, m, g->shared->router);
}

/* A routee's error, as it will sit in the AggregateError (consumes err):
 * one that already nests AC_ERROR_MAX_DEPTH deep has no room under the
 * aggregate, so a stand-in with its name and message takes its place. */
ac_error *ac__gather_member_error(ac_error *err)
{
    if (ac_error_depth(err) < AC_ERROR_MAX_DEPTH)
        return err;
    ac_error *stand_in = ac__gather_error_or_abort(
        ac_error_new(ac_error_name(err),
                     "%s (its members and causes are left out: it nests %zu deep, too deep for "
                     "an AggregateError to hold)",
                     ac_error_message(err), ac_error_depth(err)),
        "a gathering router's member error");
    ac_error_release(err);
    return stand_in;
}

/* ---- answers made without a gather ------------------------------------ */

/* The caller still gets an answer: this one, small and made now. */
void ac__gather_answer_no_memory(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller, size_t n)
{
    ac_error *err = ac_error_new("RouterError", "%s %s: out of memory for a %s to %zu routees",
                                 sh->names->title, ac__gather_router_path(sh), sh->names->noun, n);
    ac__gather_tell_error(caller, ac__gather_error_or_abort(err, "a gathering router's answer"),
                          ac_self(ctx));
}

void ac__gather_answer_empty(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller)
{
    ac_error *err = ac__gather_error_or_abort(
        ac_error_aggregate(NULL, 0, "%s %s has no routees left to %s", sh->names->title,
                           ac__gather_router_path(sh), sh->names->send_to),
        "a gathering router's answer");
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, err, ac_self(ctx));
}

void ac__gather_drop_unanswerable(ac_ctx *ctx, ac__gather_shared *sh, ac_msg *msg)
{
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_NO_REPLY_TARGET, 0);
    ac_log_warn(ctx, "%s %s: dropped a message (%s) without a sender: no reply target, nothing %s",
                sh->names->title, ac__gather_router_path(sh), ac_msg_type_name(msg),
                sh->names->sent);
}

void ac__gather_answer_all_open(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                                ac_error **refusals, uint32_t n)
{
    ac_error *err = ac__gather_error_or_abort(
        ac_error_aggregate(refusals, n, "%s %s: the circuit breakers of all %u routees are open",
                           sh->names->title, ac__gather_router_path(sh), n),
        "a gathering router's answer");
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, err, ac_self(ctx));
}

void ac__gather_answer_short(ac_ctx *ctx, ac__gather_shared *sh, ac_ref *caller,
                             ac_error **refusals, uint32_t n, uint32_t asked)
{
    const char *t = sh->names->title, *path = ac__gather_router_path(sh);
    ac_error *err =
        n == 0 ? ac_error_aggregate(NULL, 0, "%s %s has %u routees left, fewer than its quorum "
                                             "of %u",
                                    t, path, asked, sh->quorum)
               : ac_error_aggregate(refusals, n,
                                    "%s %s: %u of %u routees failed; a quorum of %u can no "
                                    "longer be reached",
                                    t, path, n, asked, sh->quorum);
    ac__gather_count_outcome(sh, ac_ctx_system(ctx), AC__GATHER_ALL_FAILED,
                             ac__now_ns()); /* answered at once */
    ac__gather_tell_error(caller, ac__gather_error_or_abort(err, "a gathering router's answer"),
                          ac_self(ctx));
}
