/*
 * Refs and sets of refs. A ref is a counted object with a vtable
 * (ac__ref_ops): actor cells, one-shot reply refs and scatter slots share
 * it, so code holding a ref never asks which kind it is. The last release
 * destroys through the vtable; acq_rel makes every holder's use happen
 * before that.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cell.h"
#include "core/ref.h"

/* ---- refs ------------------------------------------------------------- */

void ac__ref_init(ac_ref *ref, const ac__ref_ops *ops, ac_system *system)
{
    ref->ops = ops;
    atomic_init(&ref->refs, 1);
    ref->system = system;
}

/* A retain must come from a live reference: one from zero would hand out
 * an object whose destroy has run (the debug builds check it). */
ac_ref *ac_ref_retain(ac_ref *ref)
{
    if (ref) {
        unsigned before = atomic_fetch_add_explicit(&ref->refs, 1, memory_order_relaxed);
        AC__DEBUG_ASSERT(before != 0);
        (void)before;
    }
    return ref;
}

void ac__ref_release_n(ac_ref *ref, unsigned n)
{
    /* acq_rel: as in ac_ref_release. */
    unsigned before = atomic_fetch_sub_explicit(&ref->refs, n, memory_order_acq_rel);
    AC__DEBUG_ASSERT(before >= n);
    if (before == n)
        ref->ops->destroy(ref);
}

void ac_ref_release(ac_ref *ref)
{
    if (!ref)
        return;
    /* acq_rel: every other holder's uses happen before destroy. */
    unsigned before = atomic_fetch_sub_explicit(&ref->refs, 1, memory_order_acq_rel);
    AC__DEBUG_ASSERT(before != 0);
    if (before != 1)
        return;
    ref->ops->destroy(ref);
}

const char *ac_ref_path(const ac_ref *ref) { return ref ? ref->ops->path(ref) : ""; }

const char *ac_ref_name(const ac_ref *ref)
{
    if (!ref)
        return "";
    const char *path = ref->ops->path(ref);
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

ac_system *ac_ref_system(const ac_ref *ref) { return ref ? ref->system : NULL; }

bool ac__ref_is_stopping(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    /* Acquire pairs with the release stores of state (lifecycle.c). */
    return a && atomic_load_explicit(&a->state, memory_order_acquire) >= AC__ACTOR_STOPPING;
}

bool ac__ref_is_dead(const ac_ref *ref)
{
    const ac__actor *a = ac__actor_of(ref);
    /* Acquire pairs with set_state's release store of DEAD. */
    return a && atomic_load_explicit(&a->state, memory_order_acquire) == AC__ACTOR_DEAD;
}

/* ---- refsets ---------------------------------------------------------- */

bool ac__refset_contains(const ac__refset *s, const ac_ref *r)
{
    for (uint32_t i = 0; i < s->count; i++)
        if (s->items[i] == r)
            return true;
    return false;
}

int ac__refset_add(ac__refset *s, ac_ref *r)
{
    if (ac__refset_contains(s, r))
        return AC_OK;
    if (s->count == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 2;
        ac_ref **items = ac__realloc(s->items, cap * sizeof *items);
        if (!items)
            return AC_ENOMEM;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->count++] = ac_ref_retain(r);
    return AC_OK;
}

bool ac__refset_remove(ac__refset *s, const ac_ref *r)
{
    for (uint32_t i = 0; i < s->count; i++) {
        if (s->items[i] == r) {
            ac_ref *victim = s->items[i];
            s->items[i] = s->items[--s->count];
            ac_ref_release(victim);
            return true;
        }
    }
    return false;
}

void ac__refset_clear(ac__refset *s)
{
    for (uint32_t i = 0; i < s->count; i++)
        ac_ref_release(s->items[i]);
    free(s->items);
    s->items = NULL;
    s->count = s->cap = 0;
}
