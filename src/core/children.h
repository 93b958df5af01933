/*
 * The children table of one actor, by name (children.c). Not
 * synchronised: the parent's own turn (the guardian's under the system's
 * guardian lock) guards it. Knows actors only as pointers.
 */
#ifndef AC_CORE_CHILDREN_H
#define AC_CORE_CHILDREN_H

#include "core/base.h"

typedef struct ac__actor ac__actor;
typedef struct ac__children ac__children;

ac__children *ac__children_create(void);
void ac__children_destroy(ac__children *c);
ac__actor *ac__children_find(const ac__children *c, const char *name);
int ac__children_add(ac__children *c, ac__actor *child);
bool ac__children_remove(ac__children *c, ac__actor *child);
size_t ac__children_count(const ac__children *c);
/* Visit every child; stop early when fn returns false. */
void ac__children_each(const ac__children *c, bool (*fn)(ac__actor *, void *), void *arg);

#endif
