/*
 * Actor names (names.c): the rule a name given to ac_spawn must follow,
 * and how a message quotes a name. Depends on the base layer only.
 */
#ifndef AC_CORE_NAMES_H
#define AC_CORE_NAMES_H

#include "core/base.h"

/* AC_OK, or AC_ENAME with a message saying what is wrong, for a name given
 * to ac_spawn (the rule is in actorc/actor.h). `name` is not NULL. */
ac_status ac__check_actor_name(const char *name);

/* A name as a message shows it, quotes included: printable ASCII as is
 * ('"' and '\' after a backslash), any other byte as \xHH, long names cut
 * short with "...". So a message is plain ASCII whatever the name holds.
 * `buf` holds AC__NAME_QUOTE_SIZE bytes or more. */
#define AC__NAME_QUOTE_SIZE 208
const char *ac__name_quote(const char *name, char *buf, size_t cap);

#endif
