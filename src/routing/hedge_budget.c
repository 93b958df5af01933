/*
 * The hedge budget: a token bucket counted in millionths of a token, so
 * that a ratio such as 0.05 adds an exact 50,000 per primary request and
 * the bucket never drifts by rounding. Deposits and withdrawals are CAS
 * loops on one word: routing, hedge timers and reply threads all touch
 * it. Nothing else is published through the word, so relaxed order is
 * enough.
 */
#include <math.h>

#include "core/last_error.h"
#include "routing/hedge_budget.h"

#define TOKEN 1000000ll

ac_status ac__hedge_budget_check(const char *fn, const ac_hedge_budget *o)
{
    if (!o)
        return AC_OK;
    if (!(o->ratio >= 0.0 && o->ratio <= 1.0)) /* NaN fails too */
        return ac__fail(AC_EINVAL,
                        "%s: budget ratio = %g is not usable; use 0..1 extra requests per "
                        "primary request (0.05: 5 %%)",
                        fn, o->ratio);
    if (o->max_tokens != 0.0 &&
        !(o->max_tokens >= 1.0 && o->max_tokens <= AC_HEDGE_BUDGET_MAX_TOKENS_LIMIT))
        return ac__fail(AC_EINVAL,
                        "%s: budget max_tokens = %g is not usable; use 1..%g, or 0 for the "
                        "default (%g)",
                        fn, o->max_tokens, AC_HEDGE_BUDGET_MAX_TOKENS_LIMIT,
                        AC_HEDGE_BUDGET_DEFAULT_MAX_TOKENS);
    return AC_OK;
}

void ac__hedge_budget_init(ac__hedge_budget *b, const ac_hedge_budget *o)
{
    double max = o->max_tokens != 0.0 ? o->max_tokens : AC_HEDGE_BUDGET_DEFAULT_MAX_TOKENS;
    b->deposit = llround(o->ratio * (double)TOKEN);
    b->cap = llround(max * (double)TOKEN);
    atomic_init(&b->tokens, b->cap);
}

/* Add `amount`, never beyond the cap. */
static void add_capped(ac__hedge_budget *b, int64_t amount)
{
    int64_t t = atomic_load_explicit(&b->tokens, memory_order_relaxed);
    for (;;) {
        int64_t next = t + amount < b->cap ? t + amount : b->cap;
        if (next <= t ||
            atomic_compare_exchange_weak_explicit(&b->tokens, &t, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

void ac__hedge_budget_deposit(ac__hedge_budget *b) { add_capped(b, b->deposit); }

uint32_t ac__hedge_budget_take(ac__hedge_budget *b, uint32_t want)
{
    int64_t t = atomic_load_explicit(&b->tokens, memory_order_relaxed);
    for (;;) {
        int64_t whole = t / TOKEN;
        uint32_t got = whole < (int64_t)want ? (uint32_t)whole : want;
        if (got == 0 ||
            atomic_compare_exchange_weak_explicit(&b->tokens, &t, t - (int64_t)got * TOKEN,
                                                  memory_order_relaxed, memory_order_relaxed))
            return got;
    }
}

void ac__hedge_budget_refund(ac__hedge_budget *b, uint32_t n)
{
    add_capped(b, (int64_t)n * TOKEN);
}
