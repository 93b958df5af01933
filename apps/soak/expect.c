/*
 * What answer each injected fault allows.
 *
 * The caller decides, per request, what every routee will do (soak.h,
 * soak_behaviour), so the checker knows what may come back. The rules
 * come from the headers: ask.h for the shape of an answer, router.h for a
 * pool without routees, scatter_gather.h and docs/scatter-gather.md for
 * the four aggregate failures and their members.
 *
 * A calm pool (never stopped, no routee that fails or stops) must answer
 * exactly as its routees were told to:
 *   one-shot pools   NOW/LATE: the reply; ERROR: the routee's SoakError;
 *                    FAIL/STOP/SILENT: the caller's AskTimeoutError
 *   broadcast        the first of its routees' answers: a reply if one was
 *                    to reply, a SoakError if one was to refuse, a timeout
 *                    only if none would answer (also any one-shot pool
 *                    asked through the Broadcast wrapper)
 *   scatter/gather   a reply from a routee told to reply if there was one;
 *                    else "all N routees failed" whose member i is what
 *                    routee-(i+1) did (SoakError, or AskTimeoutError for a
 *                    silent one); "none of N routees replied" when all
 *                    were silent; never the caller's own timeout
 * A chaotic pool may in addition answer as a stopped target does:
 * ActorStoppedError or UndeliverableError (AC_EDEAD), a dead letter for a
 * tell, and for scatter/gather "no routees left" or "stopped while the
 * scatter was still open" with no members, and ActorStoppedError members.
 * What it may never do: reply for a routee that was not to reply, refuse
 * for one that was not to refuse, time out where someone had to answer,
 * or carry another request's answer.
 *
 * A violation that is only about time (a routee told to reply that timed
 * out; an ask that had to be answered that timed out) is excused when the
 * system was measurably stalled meanwhile (stalls.c).
 *
 * With allocation failures injected, any error is an allowed answer (the
 * library may report the lost memory in several ways); a reply must still
 * be the right one, and the answer must still come exactly once.
 */
#include <stdlib.h>
#include <string.h>

#include "soak.h"

static _Thread_local char why[1024];

static const char *wrong(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *wrong(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return why;
}

/* Whether a timing-only violation is explained by stalls (stalls.c). */
static _Thread_local bool excused_now;

static bool excused(const soak_scenario *sc, int64_t margin_ms)
{
    if (!stalls_explain(sc, margin_ms))
        return false;
    excused_now = true;
    return true;
}

static bool quiet(int b) { return b == BEH_FAIL || b == BEH_STOP || b == BEH_SILENT; }

typedef struct mix {
    bool any_answer, any_error, any_quiet, all_quiet;
} mix;

static mix mix_of(const soak_scenario *sc)
{
    mix m = {.all_quiet = true};
    for (int k = 0; k < sc->size && k < SOAK_MAX_ROUTEES; k++) {
        int b = sc->req.beh[k];
        m.any_answer |= beh_answers(b);
        m.any_error |= b == BEH_ERROR;
        m.any_quiet |= quiet(b);
        m.all_quiet &= quiet(b);
    }
    return m;
}

/* The routee index (0-based) named by "routee-K" in `text`, or -1. */
static int routee_in(const char *text)
{
    const char *p = text ? strstr(text, "routee-") : NULL;
    if (!p)
        return -1;
    long k = strtol(p + 7, NULL, 10);
    return k >= 1 && k <= SOAK_MAX_ROUTEES ? (int)k - 1 : -1;
}

static bool under_router(const soak_scenario *sc, const ac_ref *ref)
{
    char name[48];
    snprintf(name, sizeof name, "/pool-%u-g%u/", sc->slot, sc->gen);
    return ref && strstr(ac_ref_path(ref), name);
}

static bool is_router(const soak_scenario *sc, const ac_ref *ref)
{
    char name[48];
    snprintf(name, sizeof name, "pool-%u-g%u", sc->slot, sc->gen);
    return ref && strcmp(ac_ref_name(ref), name) == 0;
}

static bool is_scatter(const soak_scenario *sc) { return sc->strategy == STRAT_SCATTER; }

static const char *check_reply(const soak_scenario *sc, const soak_outcome *out, mix m)
{
    if (!m.any_answer)
        return wrong("a reply, though no routee was to reply");
    if (!ac_msg_is(out->reply, &soak_reply_type))
        return wrong("a reply of type %s", ac_msg_type_name(out->reply));
    const soak_reply *r = ac_msg_data(out->reply);
    if (r->id != sc->req.id)
        return wrong("the answer to request %llu instead", (unsigned long long)r->id);
    int k = out->sender ? routee_in(ac_ref_name(out->sender)) : -1;
    if (k < 0 || !under_router(sc, out->sender))
        return wrong("a reply whose sender %s is not a routee of this router",
                     out->sender ? ac_ref_path(out->sender) : "(none)");
    if (!beh_answers(sc->req.beh[k]))
        return wrong("a reply from routee-%d, which was to %s", k + 1, beh_name(sc->req.beh[k]));
    return NULL;
}

/* A routee's own SoakError: for this request, from a routee told to refuse. */
static const char *check_soak_error(const soak_scenario *sc, const ac_error *e)
{
    char expect[48];
    snprintf(expect, sizeof expect, "request %llu ", (unsigned long long)sc->req.id);
    if (!strstr(ac_error_message(e), expect))
        return wrong("a SoakError for another request: %s", ac_error_message(e));
    int k = routee_in(ac_error_message(e));
    if (k < 0 || sc->req.beh[k] != BEH_ERROR)
        return wrong("a SoakError from a routee that was not to refuse: %s", ac_error_message(e));
    return NULL;
}

static const char *check_stopped(const soak_scenario *sc, const soak_outcome *out)
{
    if (sc->calm)
        return wrong("%s from a calm pool, which nothing stops",
                     out->dead_lettered ? "a dead letter" : ac_error_name(out->error));
    if (out->dead_lettered)
        return NULL;
    bool stopped = ac_error_is(out->error, AC_ACTOR_STOPPED_ERROR);
    bool undeliverable = ac_error_is(out->error, AC_UNDELIVERABLE_ERROR);
    if (!stopped && !(undeliverable && !is_scatter(sc)))
        return wrong("AC_EDEAD with %s: %s", ac_error_name(out->error),
                     ac_error_message(out->error));
    if (out->sender)
        return wrong("AC_EDEAD with a sender (%s)", ac_ref_path(out->sender));
    return NULL;
}

/* ---- one-shot pools and broadcast -------------------------------------- */

static const char *check_one_shot(const soak_scenario *sc, const soak_outcome *out, mix m)
{
    switch (out->status) {
    case AC_OK:
        return check_reply(sc, out, m);
    case AC_EFAILED:
        if (!ac_error_is(out->error, SOAK_ERROR))
            return wrong("AC_EFAILED with %s: %s", ac_error_name(out->error),
                         ac_error_message(out->error));
        if (!m.any_error)
            return wrong("a SoakError, though no routee was to refuse");
        return check_soak_error(sc, out->error);
    case AC_ETIMEOUT:
        if (sc->mode == MODE_TELL_SELF)
            return wrong("a timeout for a tell");
        if (!ac_error_is(out->error, AC_ASK_TIMEOUT_ERROR) || out->sender)
            return wrong("AC_ETIMEOUT with %s", ac_error_name(out->error));
        if ((sc->calm ? !m.all_quiet : !m.any_quiet) && !excused(sc, ANSWER_WITHIN_MS))
            return wrong("the caller's ask timed out, though a routee was to answer");
        return NULL;
    case AC_EDEAD:
        return check_stopped(sc, out);
    default:
        return wrong("status %s", ac_status_name(out->status));
    }
}

/* ---- scatter/gather ------------------------------------------------------ */

/* Member i of an aggregate: what routee-(k+1) may have left behind. */
static const char *check_member(const soak_scenario *sc, const ac_error *e, size_t i,
                                bool all_failed)
{
    const char *text = ac_error_message(e);
    int k = routee_in(text);
    if (k < 0 || (sc->calm && (size_t)k != i))
        return wrong("member %zu names no routee, or the wrong one: %s: %s", i, ac_error_name(e),
                     text);
    int b = sc->req.beh[k];
    if (ac_error_is(e, AC_ASK_TIMEOUT_ERROR)) {
        /* A refusal is an answer too, at once: late only when the
         * system stalled. */
        int64_t margin = sc->scatter_timeout_ms - (b == BEH_LATE ? sc->req.late_ms : 0);
        if (quiet(b) || ((beh_answers(b) || b == BEH_ERROR) && excused(sc, margin)))
            return NULL;
        return wrong("member %zu: routee-%d timed out, though it was to %s", i, k + 1, beh_name(b));
    }
    if (!all_failed)
        return wrong("member %zu of a timeout aggregate is a %s", i, ac_error_name(e));
    if (ac_error_is(e, SOAK_ERROR))
        return check_soak_error(sc, e);
    if (ac_error_is(e, AC_ACTOR_STOPPED_ERROR) && !sc->calm)
        return NULL;
    return wrong("member %zu: %s: %s", i, ac_error_name(e), text);
}

static const char *check_members(const soak_scenario *sc, const ac_error *e, bool all_failed)
{
    size_t n = ac_error_member_count(e);
    for (size_t i = 0; i < n; i++) {
        const char *w = check_member(sc, ac_error_member(e, i), i, all_failed);
        if (w)
            return w;
    }
    return NULL;
}

/* "AskTimeoutError: Ask timed out on …; SoakError: …", for a report. */
static const char *members_of(const ac_error *e)
{
    static _Thread_local char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ac_error_member_count(e) && len < sizeof buf; i++) {
        const ac_error *m = ac_error_member(e, i);
        int n = snprintf(buf + len, sizeof buf - len, "%s%s: %s", i ? "; " : "", ac_error_name(m),
                         ac_error_message(m));
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

/* The count N in "... N routees ...", or -1. */
static long count_in(const char *text, const char *before)
{
    const char *p = strstr(text, before);
    return p ? strtol(p + strlen(before), NULL, 10) : -1;
}

static const char *check_aggregate(const soak_scenario *sc, const soak_outcome *out, mix m)
{
    const ac_error *e = out->error;
    const char *text = ac_error_message(e);
    size_t n = ac_error_member_count(e);
    if (!is_router(sc, out->sender))
        return wrong("an aggregate not sent by the router (%s)",
                     out->sender ? ac_ref_path(out->sender) : "none");
    if (strstr(text, "has no routees left to scatter to") ||
        strstr(text, "stopped while the scatter was still open")) {
        if (sc->calm)
            return wrong("from a calm pool: %s", text);
        return n ? wrong("%zu members in: %s", n, text) : NULL;
    }
    if (m.any_answer && sc->calm && !excused(sc, sc->scatter_timeout_ms - sc->req.late_ms))
        return wrong("a failure though a routee was to reply: %s [%s]", text, members_of(e));
    long stated = count_in(text, "all ");
    bool all_failed = stated >= 0 && strstr(text, " routees failed");
    if (!all_failed)
        stated = count_in(text, "none of ");
    if (stated < 1 || (size_t)stated != n || n > sc->size)
        return wrong("an aggregate with %zu members that says: %s", n, text);
    if (sc->calm && n != sc->size)
        return wrong("%zu members from a calm pool of %u: %s", n, sc->size, text);
    if (!all_failed && !strstr(text, " routees replied within"))
        return wrong("an aggregate of an unknown kind: %s", text);
    if (sc->calm && all_failed != m.any_error)
        return wrong("\"%s\" though the routees were %s", text,
                     m.any_error ? "to refuse" : "silent");
    return check_members(sc, e, all_failed);
}

static const char *check_scatter(const soak_scenario *sc, const soak_outcome *out, mix m)
{
    switch (out->status) {
    case AC_OK:
        return check_reply(sc, out, m);
    case AC_EFAILED:
        if (!ac_error_is(out->error, AC_AGGREGATE_ERROR))
            return wrong("AC_EFAILED with %s: %s", ac_error_name(out->error),
                         ac_error_message(out->error));
        return check_aggregate(sc, out, m);
    case AC_EDEAD:
        return check_stopped(sc, out);
    case AC_ETIMEOUT:
        if (excused(sc, ANSWER_WITHIN_MS))
            return NULL;
        return wrong("the caller's own timeout: the scatter did not report within its %lld ms",
                     (long long)sc->scatter_timeout_ms);
    default:
        return wrong("status %s", ac_status_name(out->status));
    }
}

const char *expect_check(const soak_scenario *sc, const soak_outcome *out)
{
    mix m = mix_of(sc);
    if (g_cfg.fail_alloc > 0 && out->status != AC_OK)
        return NULL;
    excused_now = false;
    const char *w = is_scatter(sc) ? check_scatter(sc, out, m) : check_one_shot(sc, out, m);
    if (excused_now && !w)
        atomic_fetch_add(&g_stats.excused, 1);
    if (!w)
        return NULL;
    char desc[200];
    expect_describe(sc, desc, sizeof desc);
    char copy[sizeof why], delays[160];
    snprintf(copy, sizeof copy, "%s", w);
    routee_delays(sc->req.id, delays, sizeof delays);
    return wrong("%s — for %s%s", copy, desc, delays);
}

int expect_kind(const soak_outcome *out)
{
    if (out->status == AC_OK)
        return KIND_REPLY;
    if (out->dead_lettered)
        return KIND_DEAD_LETTER;
    if (out->status == AC_ETIMEOUT)
        return KIND_TIMEOUT;
    if (out->status == AC_EDEAD)
        return KIND_STOPPED;
    if (ac_error_is(out->error, AC_AGGREGATE_ERROR))
        return KIND_AGGREGATE;
    return ac_error_is(out->error, SOAK_ERROR) ? KIND_ERROR_REPLY : KIND_OTHER_ERROR;
}

void expect_describe(const soak_scenario *sc, char *buf, size_t n)
{
    int len =
        snprintf(buf, n, "%s pool-%u-g%u (%s, %u routees), %s%s, routees",
                 strategy_name(sc->strategy), sc->slot, sc->gen, sc->calm ? "calm" : "chaotic",
                 sc->size, mode_name(sc->mode), sc->wrapped ? " in the Broadcast wrapper" : "");
    for (int k = 0; k < sc->size && k < SOAK_MAX_ROUTEES && len > 0 && (size_t)len < n; k++)
        len +=
            snprintf(buf + len, n - (size_t)len, "%s%s", k ? "/" : " ", beh_name(sc->req.beh[k]));
}
