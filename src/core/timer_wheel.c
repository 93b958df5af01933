/*
 * Hierarchical timing wheel; see timer_wheel.h for the shape.
 *
 * Placement rule: a timer with deadline d goes to the lowest level l at
 * which d and `now` agree in every bit above level l's six bits, into slot
 * (d >> 6l) & 63. At level 0 that slot is fired when `now` reaches d; at a
 * higher level it is cascaded (re-placed) when `now` enters the slot's
 * range, which is always before d.
 *
 * So at every level the slots at or before `now`'s own index are empty
 * (their timers have fired or moved down), and the next tick with work is
 * the first occupied slot after that index at some level: advance jumps
 * straight to it. Jumping over ticks that hold no work changes nothing a
 * tick would have done.
 */
#include "core/timer_wheel.h"

void ac__timer_list_init(ac__timer *head)
{
    head->prev = head->next = head;
}

void ac__timer_list_append(ac__timer *head, ac__timer *t)
{
    t->prev = head->prev;
    t->next = head;
    head->prev->next = t;
    head->prev = t;
}

static void list_unlink(ac__timer *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->prev = t->next = NULL;
}

ac__timer *ac__timer_list_pop(ac__timer *head)
{
    ac__timer *t = head->next;
    if (t == head)
        return NULL;
    list_unlink(t);
    return t;
}

static void list_splice(ac__timer *to, ac__timer *from)
{
    while (from->next != from) {
        ac__timer *t = from->next;
        list_unlink(t);
        ac__timer_list_append(to, t);
    }
}

void ac__wheel_init(ac__wheel *w, uint64_t now)
{
    w->now = now;
    w->armed = 0;
    for (int l = 0; l < AC__WHEEL_LEVELS; l++)
        for (unsigned s = 0; s < AC__WHEEL_SLOTS; s++)
            ac__timer_list_init(&w->slots[l][s]);
    ac__timer_list_init(&w->overflow);
}

static void place(ac__wheel *w, ac__timer *t)
{
    uint64_t d = t->deadline;
    for (int l = 0; l < AC__WHEEL_LEVELS; l++) {
        unsigned above = AC__WHEEL_BITS * (unsigned)(l + 1);
        if ((d >> above) == (w->now >> above)) {
            unsigned slot = (unsigned)(d >> (AC__WHEEL_BITS * (unsigned)l)) & (AC__WHEEL_SLOTS - 1);
            ac__timer_list_append(&w->slots[l][slot], t);
            return;
        }
    }
    ac__timer_list_append(&w->overflow, t);
}

void ac__wheel_add(ac__wheel *w, ac__timer *t, uint64_t deadline)
{
    t->deadline = deadline > w->now ? deadline : w->now + 1;
    t->state = AC__TIMER_ARMED;
    place(w, t);
    w->armed++;
}

bool ac__wheel_remove(ac__wheel *w, ac__timer *t)
{
    if (!ac__timer_armed(t))
        return false; /* a DUE timer's links belong to its firing thread */
    list_unlink(t);
    t->state = AC__TIMER_IDLE;
    w->armed--;
    return true;
}

static void cascade(ac__wheel *w, ac__timer *head)
{
    ac__timer tmp;
    ac__timer_list_init(&tmp);
    list_splice(&tmp, head);
    ac__timer *t;
    while ((t = ac__timer_list_pop(&tmp)))
        place(w, t);
}

static void tick(ac__wheel *w, ac__timer *due)
{
    uint64_t now = ++w->now;
    if ((now & ((1ull << (AC__WHEEL_BITS * AC__WHEEL_LEVELS)) - 1)) == 0)
        cascade(w, &w->overflow);
    for (int l = AC__WHEEL_LEVELS - 1; l >= 1; l--) {
        unsigned shift = AC__WHEEL_BITS * (unsigned)l;
        if ((now & ((1ull << shift) - 1)) == 0)
            cascade(w, &w->slots[l][(now >> shift) & (AC__WHEEL_SLOTS - 1)]);
    }
    ac__timer *slot = &w->slots[0][now & (AC__WHEEL_SLOTS - 1)];
    while (slot->next != slot) {
        ac__timer *t = slot->next;
        list_unlink(t);
        t->state = AC__TIMER_DUE;
        w->armed--;
        ac__timer_list_append(due, t);
    }
}

void ac__wheel_advance(ac__wheel *w, uint64_t to, ac__timer *due)
{
    while (w->now < to) {
        uint64_t next = ac__wheel_next_event(w);
        if (next > to) { /* no work up to `to`: jump */
            w->now = to;
            return;
        }
        w->now = next - 1;
        tick(w, due);
    }
}

static bool slot_empty(const ac__timer *head)
{
    return head->next == head;
}

/* The tick at which level l next has work, or UINT64_MAX. */
static uint64_t level_next_event(const ac__wheel *w, int l)
{
    unsigned shift = AC__WHEEL_BITS * (unsigned)l;
    unsigned index = (unsigned)(w->now >> shift) & (AC__WHEEL_SLOTS - 1);
    uint64_t block = w->now & ~((1ull << (shift + AC__WHEEL_BITS)) - 1);
    for (unsigned s = index + 1; s < AC__WHEEL_SLOTS; s++)
        if (!slot_empty(&w->slots[l][s]))
            return block + ((uint64_t)s << shift);
    return UINT64_MAX;
}

/* The overflow list cascades when time enters the span of its earliest
 * deadline; the spans before that hold nothing of it. */
static uint64_t overflow_next_event(const ac__wheel *w)
{
    if (slot_empty(&w->overflow))
        return UINT64_MAX;
    uint64_t earliest = UINT64_MAX;
    for (const ac__timer *t = w->overflow.next; t != &w->overflow; t = t->next)
        if (t->deadline < earliest)
            earliest = t->deadline;
    unsigned bits = AC__WHEEL_BITS * AC__WHEEL_LEVELS;
    uint64_t next_span = ((w->now >> bits) + 1) << bits;
    uint64_t its_span = (earliest >> bits) << bits;
    return its_span > next_span ? its_span : next_span;
}

uint64_t ac__wheel_next_event(const ac__wheel *w)
{
    if (w->armed == 0)
        return UINT64_MAX;
    uint64_t next = UINT64_MAX;
    for (int l = 0; l < AC__WHEEL_LEVELS; l++) {
        uint64_t e = level_next_event(w, l);
        if (e < next)
            next = e;
    }
    uint64_t e = overflow_next_event(w);
    return e < next ? e : next;
}

/* The earliest deadline in a list, or `bound` if it holds more than
 * max_scan timers. */
static uint64_t earliest_in(const ac__timer *head, size_t max_scan, uint64_t bound)
{
    uint64_t earliest = UINT64_MAX;
    size_t n = 0;
    for (const ac__timer *t = head->next; t != head; t = t->next) {
        if (++n > max_scan)
            return bound;
        if (t->deadline < earliest)
            earliest = t->deadline;
    }
    return earliest;
}

/* A timer at level l is due within `now`'s block at level l + 1 but past
 * `now`'s own slot at level l, so every deadline at a level comes before
 * every deadline at the levels above (and the overflow list's after all
 * of them): the earliest is in the first occupied slot of the lowest level
 * that holds any. At level 0 that slot's tick is the deadline; above, the
 * slot spans many ticks and its list is scanned. */
uint64_t ac__wheel_next_deadline(const ac__wheel *w, size_t max_scan)
{
    if (w->armed == 0)
        return UINT64_MAX;
    for (int l = 0; l < AC__WHEEL_LEVELS; l++) {
        uint64_t e = level_next_event(w, l);
        if (e == UINT64_MAX)
            continue;
        if (l == 0)
            return e;
        unsigned shift = AC__WHEEL_BITS * (unsigned)l;
        return earliest_in(&w->slots[l][(e >> shift) & (AC__WHEEL_SLOTS - 1)], max_scan, e);
    }
    return earliest_in(&w->overflow, max_scan, overflow_next_event(w));
}

static void take_list(ac__timer *out, ac__timer *head)
{
    ac__timer *t;
    while ((t = ac__timer_list_pop(head))) {
        t->state = AC__TIMER_IDLE;
        ac__timer_list_append(out, t);
    }
}

void ac__wheel_take_all(ac__wheel *w, ac__timer *out)
{
    for (int l = 0; l < AC__WHEEL_LEVELS; l++)
        for (unsigned s = 0; s < AC__WHEEL_SLOTS; s++)
            take_list(out, &w->slots[l][s]);
    take_list(out, &w->overflow);
    w->armed = 0;
}
