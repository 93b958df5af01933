/*
 * Common prelude of a cmocka test file: cmocka's required includes in the
 * required order, the shared helpers and a few assertion macros that print
 * status names instead of numbers.
 */
#ifndef ACTORC_TS_TEST_H
#define ACTORC_TS_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* Check a status, naming both sides on mismatch. */
#define assert_status(actual, expected)                                        \
    do {                                                                       \
        ac_status ts_a_ = (actual);                                            \
        ac_status ts_e_ = (expected);                                          \
        if (ts_a_ != ts_e_) {                                                  \
            fail_msg("%s: got %s, expected %s (last error: \"%s\")", #actual,  \
                     ac_status_name(ts_a_), ac_status_name(ts_e_),             \
                     ac_last_error());                                         \
        }                                                                      \
    } while (0)

/* The last call failed with `expected` and left an explanation. */
#define assert_last_error(expected)                                            \
    do {                                                                       \
        assert_status(ac_last_status(), (expected));                           \
        if (!ts_nonempty(ac_last_error())) {                                   \
            fail_msg("ac_last_error() is empty after a %s failure",            \
                     ac_status_name(expected));                                \
        }                                                                      \
    } while (0)

/* An "eventually" condition that must come true within the bound. */
#define assert_eventually(waited, what)                                        \
    do {                                                                       \
        if (!(waited)) {                                                       \
            fail_msg("timed out waiting for %s", (what));                      \
        }                                                                      \
    } while (0)

#define TS_UNIT(f) cmocka_unit_test_setup_teardown(f, ts_setup, ts_teardown)

#endif
