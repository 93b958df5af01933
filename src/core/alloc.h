/*
 * Small-object caches (alloc.c). Base layer: depends on nothing internal.
 */
#ifndef AC_CORE_ALLOC_H
#define AC_CORE_ALLOC_H

#include <stddef.h>

/* malloc/free with per-thread caches for blocks up to 256 bytes. The size
 * passed to free must be the size passed to alloc. Any thread. */
void *ac__alloc_small(size_t size);
void ac__free_small(void *p, size_t size);
/* Give cached blocks back to malloc: the depot's and the calling thread's.
 * Called when the last system has terminated. */
void ac__alloc_trim(void);

#endif
