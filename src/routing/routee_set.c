/*
 * A router's routee set: the arrays kept in step, place for place — the
 * routees, their breakers, a member group's keys, a pool's routee
 * numbers — and the two changes every kind of router makes to them:
 * room for one more, one taken out. The set is the router's state, so
 * both run in the router's own turn.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "routing/router_internal.h"

bool ac__router_make_room(ac__router_state *st)
{
    if (st->n < st->cap)
        return true;
    size_t cap = st->cap * 2;
    ac_ref **routees = ac__realloc(st->routees, cap * sizeof *routees);
    if (!routees)
        return false;
    st->routees = routees; /* a larger array kept on a later failure: harmless */
    ac_ref **scratch = ac__realloc(st->scratch, cap * sizeof *scratch);
    if (!scratch)
        return false;
    st->scratch = scratch;
    if (st->keys) {
        char **keys = ac__realloc(st->keys, cap * sizeof *keys);
        if (!keys)
            return false;
        st->keys = keys;
    }
    if (st->breakers) {
        ac_breaker **breakers = ac__realloc(st->breakers, cap * sizeof *breakers);
        if (!breakers)
            return false;
        st->breakers = breakers;
    }
    if (st->numbers) {
        uint32_t *numbers = ac__realloc(st->numbers, cap * sizeof *numbers);
        if (!numbers)
            return false;
        st->numbers = numbers;
    }
    st->cap = cap;
    return true;
}

void ac__router_drop(ac__router_state *st, size_t i)
{
    ac_ref_release(st->routees[i]);
    memmove(&st->routees[i], &st->routees[i + 1], (st->n - i - 1) * sizeof *st->routees);
    if (st->breakers) {
        ac_breaker_release(st->breakers[i]);
        memmove(&st->breakers[i], &st->breakers[i + 1], (st->n - i - 1) * sizeof *st->breakers);
    }
    if (st->keys) {
        free(st->keys[i]);
        memmove(&st->keys[i], &st->keys[i + 1], (st->n - i - 1) * sizeof *st->keys);
    }
    if (st->numbers)
        memmove(&st->numbers[i], &st->numbers[i + 1], (st->n - i - 1) * sizeof *st->numbers);
    st->n--;
}
