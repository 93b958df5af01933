/*
 * What the layers above ask (patterns) use of it beyond the public API.
 */
#ifndef AC_ASK_ASK_INTERNAL_H
#define AC_ASK_ASK_INTERNAL_H

#include "actorc/ask.h"

/* ac_ask's work, under the name `fn` of the call that asks, returning its
 * status (and recording it, with a message) so that callers need not read
 * the last error back. *out is the future, or NULL on failure. */
ac_status ac__ask_future(const char *fn, ac_ref *target, ac_msg *msg, int64_t timeout_ms,
                         ac_future **out);

#endif
