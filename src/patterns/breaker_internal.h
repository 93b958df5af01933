/*
 * What breaker_call.c (calls through a breaker) and the routers' breakers
 * need of breaker.c beyond the public API. Any thread.
 */
#ifndef AC_PATTERNS_BREAKER_INTERNAL_H
#define AC_PATTERNS_BREAKER_INTERNAL_H

#include "actorc/ask.h"
#include "actorc/breaker.h"
#include "actorc/metrics.h"
#include "core/alloc.h"
#include "core/base.h"

/* The breaker as a ref (borrowed): whatever is told to it is dropped and
 * its sender answered at once with the breaker's open error. */
ac_ref *ac__breaker_ref(ac_breaker *b);
/* call_timeout_ms of its options; 0: none. */
uint32_t ac__breaker_call_timeout_ms(const ac_breaker *b);
/* A breaker named `name` (copied) with options already checked
 * (ac_breaker_options_check); its name is not taken from the options. */
ac_breaker *ac__breaker_create_named(ac_system *sys, const ac_breaker_options *o,
                                     const char *name);

#endif
