/*
 * The register of hedging policies (hedge_policy.h): which policy each
 * ac_hedge_delay_kind names. A new policy is a file behind the ops table,
 * a value of the public enum and a line here.
 */
#include <stdio.h>

#include "routing/hedge_policy.h"

static const ac__hedge_policy *const policies[] = {
    [AC_HEDGE_DELAY_FIXED] = &ac__hedge_fixed_policy,
    [AC_HEDGE_DELAY_ADAPTIVE] = &ac__hedge_adaptive_policy,
};

enum { COUNT = sizeof policies / sizeof policies[0] };

const ac__hedge_policy *ac__hedge_policy_of(ac_hedge_delay_kind kind)
{
    size_t i = (size_t)kind; /* a negative kind wraps far beyond the table */
    return i < COUNT ? policies[i] : NULL;
}

void ac__hedge_policy_kinds(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT && used < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == COUNT ? " or " : ", ";
        int n = snprintf(buf + used, size - used, "%s%s", sep, policies[i]->name);
        used += n > 0 ? (size_t)n : 0;
    }
}
