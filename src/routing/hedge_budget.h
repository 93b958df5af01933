/*
 * The hedge budget (hedge_budget.c): a token bucket of extra requests that
 * primary requests fill (ac_hedge_budget, scatter_gather.h).
 */
#ifndef AC_ROUTING_HEDGE_BUDGET_H
#define AC_ROUTING_HEDGE_BUDGET_H

#include <stdatomic.h>
#include <stdint.h>

#include "actorc/scatter_gather.h"
#include "actorc/status.h"

typedef struct ac__hedge_budget {
    _Atomic int64_t tokens; /* in millionths of a token */
    int64_t deposit;        /* per primary request, the same unit */
    int64_t cap;
} ac__hedge_budget;

/* Refuse a budget a factory cannot use; AC_EINVAL naming `fn`. */
ac_status ac__hedge_budget_check(const char *fn, const ac_hedge_budget *options);
/* A full bucket for checked options. */
void ac__hedge_budget_init(ac__hedge_budget *b, const ac_hedge_budget *options);
/* One primary request: add its share. Any thread. */
void ac__hedge_budget_deposit(ac__hedge_budget *b);
/* Take up to `want` whole tokens; returns how many were taken. Any thread. */
uint32_t ac__hedge_budget_take(ac__hedge_budget *b, uint32_t want);
/* Give back `n` tokens taken but not spent. Any thread. */
void ac__hedge_budget_refund(ac__hedge_budget *b, uint32_t n);

#endif
