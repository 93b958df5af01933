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
/* The same into an int: a whole decimal number within [lo, hi], where
 * 0 <= lo <= hi (no sign is ever read). */
bool app_parse_int(const char *s, int lo, int hi, int *out);

/* A length of time at `s`: a number of seconds, or one followed by "s",
 * "m" or "h" ("30", "30s", "5m", "2h"), within [lo, hi] seconds once the
 * unit is applied, into *out in seconds. False for anything else. */
bool app_parse_seconds(const char *s, double lo, double hi, double *out);

/* A 64-bit seed at `s`, decimal or 0x-hex (the form a program prints
 * for a replay), into *out; a leading 0 is decimal, never octal. False
 * for anything else (a sign, an empty 0x, trailing text), *out
 * untouched. */
bool app_parse_seed(const char *s, uint64_t *out);

#endif
