/*
 * One DNS lookup of a cluster's members (dns_resolve.c), over c-ares:
 * an SRV record, each target's A records at the record's port, or a
 * name's A records at a given port, as sorted, unique "a.b.c.d:port"
 * addresses. Only in a build with ACTORC_WITH_DNS.
 *
 * Threads. A resolver is used by one thread at a time (the DNS
 * provider's); ac__dns_cancel alone may come from any other thread.
 */
#ifndef AC_CLUSTER_DNS_RESOLVE_H
#define AC_CLUSTER_DNS_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include <actorc.h>

/* At most this many addresses in a result; more are left out. */
#define AC__DNS_MAX_ADDRESSES 1024

typedef struct ac__dns ac__dns;

typedef enum ac__dns_outcome {
    AC__DNS_FOUND,     /* one address or more */
    AC__DNS_NONE,      /* an answer without any: no such name, no such records */
    AC__DNS_FAILED,    /* no answer: timeout, refused, server failure, bad reply */
    AC__DNS_CANCELLED, /* ac__dns_cancel */
} ac__dns_outcome;

typedef struct ac__dns_result {
    ac__dns_outcome outcome;
    char **addresses; /* sorted, unique; free with ac__dns_result_free */
    size_t count;
    char why[256]; /* NONE, FAILED: what the resolver said */
} ac__dns_result;

/* A resolver asking `servers` ("a.b.c.d" or "a.b.c.d:port"; none: the
 * system's, from resolv.conf), each try waiting timeout_ms. NULL with
 * the last error (AC_ENOMEM, or AC_EINVAL with c-ares's reason). */
ac__dns *ac__dns_open(const char *const *servers, size_t n, int timeout_ms);
/* Cancel what it does and all it will do: a lookup returns CANCELLED at
 * once. Any thread. */
void ac__dns_cancel(ac__dns *d);
/* Free it (no lookup under way). NULL: nothing. */
void ac__dns_close(ac__dns *d);

/* Look up `name`: with port 0 its SRV record, else its A records at
 * `port`. Blocks until answered, failed or cancelled. AC_ENOMEM (the
 * result empty) when out of memory; else AC_OK, the outcome in *out. */
ac_status ac__dns_resolve(ac__dns *d, const char *name, int port, ac__dns_result *out);
void ac__dns_result_free(ac__dns_result *r);

/* A DNS name: labels of [A-Za-z0-9_-]{1,63} joined by '.', 253
 * characters at most, one trailing '.' allowed. */
bool ac__dns_name_ok(const char *s);
/* "a.b.c.d" or "a.b.c.d:port" (port 1..65535). */
bool ac__dns_server_ok(const char *s);

#endif
