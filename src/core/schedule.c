/*
 * Scheduled messages (ac_schedule_once, ac_schedule_repeat): a handle that
 * is a timer of the system's timers (timers.c). It holds the target, the
 * sender and the message; firing tells the target, and a repeat re-arms
 * from its last deadline so that it does not drift. Cancel and fire race
 * benignly: a cancel that finds the timer out of the wheel leaves it to the
 * firing, which reads the flag before it re-arms.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/ref.h"
#include "core/system_internal.h"
#include "core/timers.h"
#include "core/turn.h"

/* us -> ns, saturating: a delay beyond ~292 years never comes. */
static uint64_t ns_of_us(int64_t us)
{
    return (uint64_t)us > UINT64_MAX / 2 / 1000ull ? UINT64_MAX / 2 : (uint64_t)us * 1000ull;
}

/* ---- scheduled messages ----------------------------------------------- */

struct ac_cancellable {
    ac__timer timer;
    atomic_uint refs;      /* the caller's + one while armed */
    atomic_bool cancelled;
    atomic_bool finished;  /* will not fire again */
    ac_system *system;
    ac_ref *target, *sender;
    ac_msg *msg;
    uint64_t interval_ns; /* 0: once */
};

static void cancellable_release(ac_cancellable *c)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    ac_ref_release(c->target);
    ac_ref_release(c->sender);
    ac_msg_release(c->msg);
    free(c);
}

static void schedule_fire(ac__timer *timer)
{
    ac_cancellable *c = (ac_cancellable *)timer;
    /* Acquire (both loads) pairs with ac_cancel's exchange. */
    if (!atomic_load_explicit(&c->cancelled, memory_order_acquire)) {
        ac_tell(c->target, ac_msg_retain(c->msg), c->sender);
        if (c->interval_ns && !ac__ref_is_dead(c->target) &&
            !atomic_load_explicit(&c->cancelled, memory_order_acquire)) {
            ac__timer_rearm(c->system->timers, &c->timer, c->interval_ns); /* keeps the ref */
            return;
        }
    }
    /* Release pairs with ac_cancel's acquire load of finished. */
    atomic_store_explicit(&c->finished, true, memory_order_release);
    cancellable_release(c);
}

static void schedule_discard(ac__timer *timer)
{
    /* The system is going away: let go of its refs now, so that a handle
     * released later touches nothing of the system. */
    ac_cancellable *c = (ac_cancellable *)timer;
    ac_ref_release(c->target);
    ac_ref_release(c->sender);
    ac_msg_release(c->msg);
    c->target = c->sender = NULL;
    c->msg = NULL;
    cancellable_release(c);
}

static const ac__timer_ops schedule_ops = {.fire = schedule_fire, .discard = schedule_discard};

/* Delays in us; negative ones were refused by the caller's check. */
static ac_cancellable *schedule(const char *fn, ac_ref *target, int64_t delay_us,
                                int64_t interval_us, ac_msg *msg, ac_ref *sender)
{
    const char *bad = !msg ? "message is NULL" : !target ? "target is NULL" : NULL;
    if (!bad && delay_us < 0)
        bad = "delay is negative";
    if (!bad && interval_us < 0)
        bad = "interval must be at least 1 ms";
    if (bad) {
        ac_msg_release(msg);
        return ac__fail_null(AC_EINVAL, "%s: %s", fn, bad);
    }
    ac_cancellable *c = ac__calloc(1, sizeof *c);
    if (!c) {
        ac_msg_release(msg);
        return ac__fail_null(AC_ENOMEM, "%s: out of memory", fn);
    }
    c->timer.ops = &schedule_ops;
    atomic_init(&c->refs, 2);
    c->system = target->system;
    c->target = ac_ref_retain(target);
    c->sender = ac_ref_retain(sender);
    c->msg = msg;
    c->interval_ns = ns_of_us(interval_us);
    ac__timer_arm_ns(c->system->timers, &c->timer, ns_of_us(delay_us));
    return c;
}

/* ms -> us, saturating (a delay of INT64_MAX us is 292,000 years). */
static int64_t us_of_ms(int64_t ms)
{
    return ms > INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : ms < 0 ? -1 : ms * 1000;
}

ac_cancellable *ac_schedule_once(ac_ref *target, int64_t delay_ms, ac_msg *msg, ac_ref *sender)
{
    ac__clear_status();
    return schedule("ac_schedule_once", target, us_of_ms(delay_ms), 0, msg, sender);
}

ac_cancellable *ac_schedule_once_us(ac_ref *target, int64_t delay_us, ac_msg *msg,
                                    ac_ref *sender)
{
    ac__clear_status();
    return schedule("ac_schedule_once_us", target, delay_us, 0, msg, sender);
}

ac_cancellable *ac_schedule_repeat(ac_ref *target, int64_t initial_ms, int64_t interval_ms,
                                   ac_msg *msg, ac_ref *sender)
{
    ac__clear_status();
    if (interval_ms < 1) {
        ac_msg_release(msg);
        return ac__fail_null(AC_EINVAL, "ac_schedule_repeat: interval_ms = %lld; use >= 1",
                             (long long)interval_ms);
    }
    return schedule("ac_schedule_repeat", target, us_of_ms(initial_ms), us_of_ms(interval_ms), msg,
                    sender);
}

bool ac_cancel(ac_cancellable *c)
{
    ac__clear_status();
    if (!c)
        return ac__fail(AC_EINVAL, "ac_cancel: handle is NULL"), false;
    /* acq_rel: pairs with the acquire loads in schedule_fire and with an
     * earlier ac_cancel. */
    if (atomic_exchange_explicit(&c->cancelled, true, memory_order_acq_rel))
        return false;
    if (ac__timer_cancel(c->system->timers, &c->timer)) {
        cancellable_release(c); /* the wheel's reference */
        return true;
    }
    /* Not in the wheel: finished (nothing to cancel), or firing right now,
     * when the flag stops a repeat from re-arming; a once-timer that is
     * mid-fire has delivered (or is delivering) its message. */
    /* Acquire pairs with schedule_fire's release store of finished. */
    return c->interval_ns != 0 && !atomic_load_explicit(&c->finished, memory_order_acquire);
}

void ac_cancellable_release(ac_cancellable *c)
{
    if (c)
        cancellable_release(c);
}
