/*
 * Shared by the circuit breaker tests: a server actor whose behaviour the
 * test sets, which counts the requests that reach it, and a recorder of
 * the breaker's state changes (the on_transition callback).
 */
#ifndef ACTORC_BK_SUPPORT_H
#define ACTORC_BK_SUPPORT_H

#include "ts_test.h"

#define BK_WAIT_MS ((int64_t)(TS_WAIT_S * 1000))

/* What the server does with a request. */
typedef enum bk_beh {
    BK_ECHO = 0,     /* reply with the request's string */
    BK_OUTAGE,       /* reply an "OutageError" */
    BK_NOT_FOUND,    /* reply a "NotFoundError" */
    BK_SILENT,       /* never reply */
} bk_beh;

typedef struct bk_data {
    ac_system *sys;
    ts_recorder *rec;    /* "closed->open" ... from on_transition */
    atomic_int beh;
    atomic_llong requests; /* requests that reached the server */
    ac_ref *server;
} bk_data;

/* Test data with a system (manual clock or not) and a spawned server. */
bk_data *bk_setup(ts_fixture *fx, const char *name, bool manual, bool metrics);
void bk_set(bk_data *d, bk_beh beh);

/* Options recording transitions into d->rec; the caller sets the rest. */
ac_breaker_options bk_options(bk_data *d, const char *name);
ac_breaker *bk_breaker(bk_data *d, const ac_breaker_options *o);

/* One ac_breaker_ask_wait of "x"; returns the status, fills *a. */
ac_status bk_call(bk_data *d, ac_breaker *b, ac_answer *a);
/* The same, releasing the answer; returns the status. */
ac_status bk_call_st(bk_data *d, ac_breaker *b);
/* A call that the breaker refuses: CircuitBreakerOpenError, and the
 * server saw nothing. */
void bk_assert_refused(bk_data *d, ac_breaker *b);
/* is_failure filter: NotFoundError is an answer, not an outage. */
bool bk_not_found_is_no_failure(const ac_error *err, void *user);
/* Wait until the server saw n requests in all. */
void bk_wait_requests(bk_data *d, long long n);

#endif
