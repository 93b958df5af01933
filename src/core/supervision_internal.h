/*
 * Supervision policy (supervision.c): which directive a parent applies to
 * a failed child. Lifecycle carries the decision out.
 */
#ifndef AC_CORE_SUPERVISION_INTERNAL_H
#define AC_CORE_SUPERVISION_INTERNAL_H

#include "core/cell.h"

/* The parent's decision for a failed child (in the parent's turn). */
ac_directive ac__supervise_decide(ac__actor *parent, ac__actor *child, ac_error *cause);

#endif
