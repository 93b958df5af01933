/*
 * Children of one actor, by name: an open-addressing hash table of actor
 * pointers (linear probing, tombstones).
 *
 * Touched only by the parent's own turn (the guardian's table under the
 * system's guardian lock), so it needs no synchronisation of its own.
 * Names are unique among siblings, and anonymous names ("$...") are unique
 * by construction, so a lookup by name finds at most one actor.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cell.h"
#include "core/children.h"

#define TOMBSTONE ((ac__actor *)1)

struct ac__children {
    ac__actor **slots;
    size_t cap; /* power of two */
    size_t count, used; /* used = count + tombstones */
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

ac__children *ac__children_create(void)
{
    ac__children *c = ac__calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cap = 8;
    c->slots = ac__calloc(c->cap, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return NULL;
    }
    return c;
}

void ac__children_destroy(ac__children *c)
{
    if (!c)
        return;
    free(c->slots);
    free(c);
}

static size_t probe_start(const ac__children *c, const char *name)
{
    return (size_t)hash_name(name) & (c->cap - 1);
}

ac__actor *ac__children_find(const ac__children *c, const char *name)
{
    if (!c)
        return NULL;
    for (size_t i = probe_start(c, name);; i = (i + 1) & (c->cap - 1)) {
        ac__actor *a = c->slots[i];
        if (!a)
            return NULL;
        if (a != TOMBSTONE && strcmp(a->name, name) == 0)
            return a;
    }
}

static void insert_slot(ac__children *c, ac__actor *child)
{
    size_t i = probe_start(c, child->name);
    while (c->slots[i] && c->slots[i] != TOMBSTONE)
        i = (i + 1) & (c->cap - 1);
    if (!c->slots[i])
        c->used++;
    c->slots[i] = child;
    c->count++;
}

static int rehash(ac__children *c, size_t new_cap)
{
    ac__actor **old = c->slots;
    size_t old_cap = c->cap;
    ac__actor **slots = ac__calloc(new_cap, sizeof *slots);
    if (!slots)
        return AC_ENOMEM;
    c->slots = slots;
    c->cap = new_cap;
    c->count = c->used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] && old[i] != TOMBSTONE)
            insert_slot(c, old[i]);
    free(old);
    return AC_OK;
}

int ac__children_add(ac__children *c, ac__actor *child)
{
    if ((c->used + 1) * 4 > c->cap * 3) {
        size_t new_cap = (c->count + 1) * 4 > c->cap * 2 ? c->cap * 2 : c->cap;
        if (rehash(c, new_cap) != AC_OK)
            return AC_ENOMEM;
    }
    insert_slot(c, child);
    return AC_OK;
}

bool ac__children_remove(ac__children *c, ac__actor *child)
{
    if (!c)
        return false;
    for (size_t i = probe_start(c, child->name);; i = (i + 1) & (c->cap - 1)) {
        ac__actor *a = c->slots[i];
        if (!a)
            return false;
        if (a == child) {
            c->slots[i] = TOMBSTONE;
            c->count--;
            return true;
        }
    }
}

size_t ac__children_count(const ac__children *c) { return c ? c->count : 0; }

void ac__children_each(const ac__children *c, bool (*fn)(ac__actor *, void *), void *arg)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++) {
        ac__actor *a = c->slots[i];
        if (a && a != TOMBSTONE && !fn(a, arg))
            return;
    }
}
