/*
 * Per-hop timestamps of the remote path, for finding where a slow ask's
 * time goes (bench/hop_trace.py reads them). Compiled in only with the
 * CMake option ACTORC_HOP_TRACE (a measuring build; off by default, when
 * every stamp is nothing). A stamp is the monotonic clock, which all
 * processes of a machine share, so the files of two processes merge into
 * one timeline. The process writes its stamps at exit to the file named
 * by the environment variable ACTORC_HOP_TRACE, its pid appended.
 */
#ifndef AC_CORE_HOP_TRACE_H
#define AC_CORE_HOP_TRACE_H

enum ac__hop {
    AC__HOP_ASK_BEGIN = 1, /* ac_ask_wait entered (the caller) */
    AC__HOP_ASK_END,       /* ac_ask_wait's waiter has its answer */
    AC__HOP_OUT_PUSH,      /* a frame queued for the transport (any thread) */
    AC__HOP_WAKE,          /* the transport's wake-up written */
    AC__HOP_WOKE,          /* the transport back from its wait */
    AC__HOP_SPIN_FOUND,    /* the transport's spin found work */
    AC__HOP_SENT,          /* a message given to ZeroMQ */
    AC__HOP_RECEIVED,      /* a message taken from ZeroMQ */
    AC__HOP_HANDLED        /* that message's frames handled */
};

#ifdef ACTORC_HOP_TRACE
#include "core/base.h"
/* Any thread. */
AC__SPI void ac__hop(enum ac__hop hop);
#else
#define ac__hop(hop) ((void)0)
#endif

#endif
