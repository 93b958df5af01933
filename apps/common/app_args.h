/*
 * Command-line values for actorc's programs (app_args.c): numbers within
 * a range, with the unit an option allows, read the same way by
 * actorc-hedge, actorc-node and actorc-soak.
 */
#ifndef ACTORC_APP_ARGS_H
#define ACTORC_APP_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* The number at `s` within [lo, hi], followed by nothing or by `unit`
 * ("%", "ms"; NULL: nothing), into *out. False for anything else (NaN
 * too), *out untouched. */
bool app_parse_double(const char *s, double lo, double hi, const char *unit, double *out);

/* A whole decimal number at `s` within [lo, hi] into *out; false for
 * anything else (a sign, a fraction, trailing text), *out untouched. */
bool app_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
