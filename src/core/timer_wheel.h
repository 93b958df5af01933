/*
 * A hierarchical timing wheel (no locking: the caller serialises).
 *
 * The wheel counts in ticks; the timer service makes a tick 1 us, a
 * thousandth of the manual clock's ms. Six levels of 64 slots cover 2^36
 * ticks (19 hours); later deadlines wait in an overflow list. A timer
 * sits at the lowest
 * level whose span still holds its deadline; when time enters a slot's
 * range at a higher level, the slot is cascaded down. Arm and cancel are
 * O(1): an intrusive doubly linked list per slot. Advancing costs one step
 * per slot that holds work, not one per tick, so a long jump of a manual
 * clock is linear in the timers it makes due.
 *
 * Ownership: a timer is ARMED while it is in the wheel, and only then can
 * ac__wheel_remove take it out. ac__wheel_advance hands due timers to the
 * caller's list and marks them DUE: from then on the list and the links
 * belong to whoever fires them, without the wheel's lock, and a cancel
 * reports false (the timer fires, or has fired; the owner's own settle
 * decides what that means). Re-arming a DUE timer (a repeat, from its fire
 * callback) makes it ARMED again.
 */
#ifndef AC_CORE_TIMER_WHEEL_H
#define AC_CORE_TIMER_WHEEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AC__WHEEL_BITS 6
#define AC__WHEEL_SLOTS (1u << AC__WHEEL_BITS)
#define AC__WHEEL_LEVELS 6

typedef struct ac__timer ac__timer;

typedef struct ac__timer_ops {
    /* The deadline passed. Called without any lock held; the timer is no
     * longer armed and may be re-armed or freed. */
    void (*fire)(ac__timer *t);
    /* The system is going away with the timer still armed: release it.
     * Also how a lazily armed timer (timers.h) whose owner has given it
     * up leaves the service, unfired. */
    void (*discard)(ac__timer *t);
    /* Lazily armed timers only: has the owner's outcome come another way,
     * so that the timer is no longer wanted? Any thread, without the
     * service's lock; a sequentially consistent load of the owner's state
     * (timers.c, "Lazy arming", says what it pairs with). */
    bool (*given_up)(const ac__timer *t);
} ac__timer_ops;

typedef enum ac__timer_state {
    AC__TIMER_IDLE = 0, /* never armed, removed, or discarded */
    AC__TIMER_ARMED,    /* in the wheel */
    AC__TIMER_DUE       /* handed to a due list: firing or fired */
} ac__timer_state;

/* `state` is read and written only under the lock that serialises the
 * wheel; prev/next of a DUE timer belong to the thread that fires it.
 * `queued` is the timer service's (timers.c, "Lazy arming"): nonzero
 * while a lazily armed timer waits to enter the wheel, when next links it
 * in its queue and deadline is already set. */
struct ac__timer {
    ac__timer *prev, *next;
    uint64_t deadline; /* tick */
    const ac__timer_ops *ops;
    ac__timer_state state;
    atomic_uint queued;
};

typedef struct ac__wheel {
    uint64_t now; /* last tick processed */
    size_t armed;
    ac__timer slots[AC__WHEEL_LEVELS][AC__WHEEL_SLOTS]; /* list heads */
    ac__timer overflow;
} ac__wheel;

void ac__wheel_init(ac__wheel *w, uint64_t now);
/* Arm for `deadline` (clamped to now + 1). */
void ac__wheel_add(ac__wheel *w, ac__timer *t, uint64_t deadline);
/* Disarm; false if it was not ARMED (never armed, or already DUE). */
bool ac__wheel_remove(ac__wheel *w, ac__timer *t);
/* Move time to `to`, appending every timer that became due to `due` (a
 * list head), in deadline order. */
void ac__wheel_advance(ac__wheel *w, uint64_t to, ac__timer *due);
/* The next tick at which the wheel has work (a slot fires or cascades);
 * UINT64_MAX when nothing is armed. Never later than the earliest
 * deadline. */
uint64_t ac__wheel_next_event(const ac__wheel *w);
/* The earliest deadline of an armed timer (a tick), UINT64_MAX when none:
 * exact, unlike ac__wheel_next_event, which may be a cascade before it,
 * when the slot that holds it holds at most max_scan timers (it is
 * scanned); otherwise that slot's start, a bound below every deadline in
 * it, which is exact again once time nears it and the slot cascades. */
uint64_t ac__wheel_next_deadline(const ac__wheel *w, size_t max_scan);
/* Unlink every armed timer into `out`, marked IDLE (to be discarded). */
void ac__wheel_take_all(ac__wheel *w, ac__timer *out);

static inline bool ac__timer_armed(const ac__timer *t) { return t->state == AC__TIMER_ARMED; }

void ac__timer_list_init(ac__timer *head);
void ac__timer_list_append(ac__timer *head, ac__timer *t);
ac__timer *ac__timer_list_pop(ac__timer *head);

#endif
