/*
 * Supervision decisions: which directive a parent applies to a failed
 * child, and the restart budget (at most max_restarts within within_ms,
 * counted on the system clock, so the manual clock drives it in tests).
 *
 * Runs in the parent's turn. The budget lives in the child's failure
 * record, whose counting fields only parent turns touch.
 */
#include "core/supervision_internal.h"
#include "core/system_internal.h"
#include "log/log_internal.h"

static const ac_supervisor_strategy default_strategy = {.directive = AC_RESTART};

const char *ac_directive_name(ac_directive d)
{
    switch (d) {
    case AC_RESTART:
        return "restart";
    case AC_RESUME:
        return "resume";
    case AC_STOP:
        return "stop";
    case AC_ESCALATE:
        return "escalate";
    }
    return "?";
}

static bool restart_allowed(const ac_supervisor_strategy *s, ac__actor *child, int64_t now)
{
    int max = s->max_restarts ? s->max_restarts : AC_DEFAULT_MAX_RESTARTS;
    int64_t within = s->within_ms ? s->within_ms : AC_DEFAULT_RESTART_WINDOW_MS;
    if (max < 0)
        return true;
    ac__failure_record *f = &child->ext->failure; /* the child made it when it failed */
    if (f->restarts == 0 || now - f->window_start_ms >= within) {
        f->window_start_ms = now;
        f->restarts = 0;
    }
    if (f->restarts >= max) {
        ac__log(&child->ref.system->log, AC_LOG_ERROR, child->path,
                "stopping: restarted %d times within %lld ms, the most its supervisor allows",
                f->restarts, (long long)within);
        return false;
    }
    f->restarts++;
    return true;
}

ac_directive ac__supervise_decide(ac__actor *parent, ac__actor *child, ac_error *cause)
{
    const ac_supervisor_strategy *s =
        parent->ext && parent->ext->has_strategy ? &parent->ext->strategy : &default_strategy;
    ac_directive d = s->decider ? s->decider(cause, &child->ref, s->decider_user) : s->directive;
    if ((int)d < AC_RESTART || d > AC_ESCALATE) {
        ac__log(&parent->ref.system->log, AC_LOG_ERROR, parent->path,
                "supervisor decider returned %d, not a directive; stopping %s", (int)d,
                child->path);
        d = AC_STOP;
    }
    if (d == AC_ESCALATE && !parent->parent)
        d = AC_RESTART; /* the guardian has no one to escalate to */
    if (d == AC_RESTART && !restart_allowed(s, child, ac_clock_now_ms(parent->ref.system)))
        d = AC_STOP;
    ac__log(&parent->ref.system->log, AC_LOG_DEBUG, child->path, "supervisor decided: %s",
            ac_directive_name(d));
    return d;
}
