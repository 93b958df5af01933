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

bool app_parse_int(const char *s, int lo, int hi, int *out)
{
    uint64_t v;
    if (lo < 0 || !app_parse_count(s, (uint64_t)lo, (uint64_t)hi, &v))
        return false;
    *out = (int)v;
    return true;
}

bool app_parse_seconds(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = *end == 'h' ? 3600 : *end == 'm' ? 60 : 1;
    if (*end == 'h' || *end == 'm' || *end == 's')
        end++;
    if (errno || end == s || *end != '\0')
        return false;
    v *= unit;
    if (!(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* strtoull alone would take a sign (and wrap it), and read a leading 0
 * as octal: a seed copied from a report must mean what it printed. */
bool app_parse_seed(const char *s, uint64_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return app_parse_count(s, 0, UINT64_MAX, out);
    if (!isxdigit((unsigned char)s[2]))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s + 2, &end, 16);
    if (errno || *end != '\0')
        return false;
    *out = v;
    return true;
}
