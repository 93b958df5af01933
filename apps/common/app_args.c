/*
 * Numbers from the command line (app_args.h). Strict on purpose: a value
 * with a unit the option does not take, or anything after the number, is
 * a usage error rather than a silent reading of its first part.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app_args.h"

bool app_parse_double(const char *s, double lo, double hi, const char *unit, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= lo && v <= hi))
        return false;
    if (*end != '\0' && !(unit && strcmp(end, unit) == 0))
        return false;
    *out = v;
    return true;
}

bool app_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!isdigit((unsigned char)s[0]))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}
