/*
 * The per-thread last error, as the library's own calls see it.
 *
 * A public call that reports failure through the channel clears it on
 * entry with ac__clear_status. Clearing is one store to a thread-local
 * (initial-exec: a fixed offset from the thread pointer, no
 * __tls_get_addr in the shared library); the message is left as it is,
 * because ac_last_error returns "" while the status is AC_OK.
 *
 * The library never reads the channel back: what a callee has to say
 * comes back as its return value, and its recorded message stands.
 */
#ifndef AC_CORE_LAST_ERROR_H
#define AC_CORE_LAST_ERROR_H

#include "actorc/status.h"
#include "core/base.h"

extern _Thread_local ac_status ac__last_status AC__TLS_FAST;

static inline void ac__clear_status(void) { ac__last_status = AC_OK; }

#endif
