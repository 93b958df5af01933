/*
 * Hierarchical timing wheel; see timer_wheel.h for the shape.
 *
 * Placement rule: a timer with deadline d goes to the lowest level l at
 * which d and `now` agree in every bit above level l's six bits, into slot
 * (d >> 6l) & 63. At level 0 that slot is fired when `now` reaches d; at a
 * higher level it is cascaded (re-placed) when `now` enters the slot's
 * range, which is always before d.
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
    place(w, t);
    w->armed++;
}

bool ac__wheel_remove(ac__wheel *w, ac__timer *t)
{
    if (!ac__timer_armed(t))
        return false;
    list_unlink(t);
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
        w->armed--;
        ac__timer_list_append(due, t);
    }
}

void ac__wheel_advance(ac__wheel *w, uint64_t to, ac__timer *due)
{
    while (w->now < to) {
        if (w->armed == 0) { /* nothing to fire or cascade: jump */
            w->now = to;
            return;
        }
        tick(w, due);
    }
}

uint64_t ac__wheel_next_event(const ac__wheel *w)
{
    if (w->armed == 0)
        return UINT64_MAX;
    uint64_t block_end = (w->now | (AC__WHEEL_SLOTS - 1)) + 1;
    for (uint64_t t = w->now + 1; t < block_end; t++) {
        const ac__timer *slot = &w->slots[0][t & (AC__WHEEL_SLOTS - 1)];
        if (slot->next != slot)
            return t;
    }
    return block_end; /* the next cascade point */
}

void ac__wheel_take_all(ac__wheel *w, ac__timer *out)
{
    for (int l = 0; l < AC__WHEEL_LEVELS; l++)
        for (unsigned s = 0; s < AC__WHEEL_SLOTS; s++)
            list_splice(out, &w->slots[l][s]);
    list_splice(out, &w->overflow);
    w->armed = 0;
}
