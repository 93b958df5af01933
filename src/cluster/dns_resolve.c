/*
 * DNS lookups of a cluster's members over c-ares (dns_resolve.h).
 *
 * A lookup is a small tree of queries on the resolver's channel: the SRV
 * query, then one A query per target that is not an address already
 * (or, with a port, one A query). Each query's callback adds what it
 * found to the lookup and counts itself done; the lookup runs the
 * channel (poll on its sockets and on a wake-up pipe, with c-ares's own
 * timeouts) until none is pending. c-ares parses the packets; nothing
 * here reads DNS wire format.
 *
 * What a lookup says: FOUND with the addresses; NONE when the servers
 * answered that the name (or every target) has no such records, which
 * is an answer (the members are gone); FAILED when any query got no
 * answer, so that a half-answered lookup never passes for the truth;
 * CANCELLED once ac__dns_cancel was called. Cancelling sets a flag and
 * writes the pipe; the lookup under way sees it at its next poll and
 * cancels its queries (c-ares calls them back with ARES_ECANCELLED).
 */
#include <arpa/inet.h>
#include <ares.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/dns_resolve.h"
#include "core/alloc.h"
#include "core/base.h"
#include "core/host_port.h"

#define CLASS_IN 1
#define TYPE_A 1
#define TYPE_SRV 33
#define TRIES 2
#define MAX_A_PER_NAME 64

struct ac__dns {
    ares_channel channel;
    int wake[2]; /* a pipe: cancel writes, a lookup polls */
    atomic_bool cancelled;
};

/* ---- names --------------------------------------------------------------- */

static bool label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

bool ac__dns_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n && s[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if (!label_char(s[i]) || ++label > 63) {
            return false;
        }
    }
    return label > 0;
}

bool ac__dns_server_ok(const char *s)
{
    char host[INET_ADDRSTRLEN];
    const char *colon = strchr(s, ':');
    size_t hlen = colon ? (size_t)(colon - s) : strlen(s);
    struct in_addr a;
    if (hlen == 0 || hlen >= sizeof host)
        return false;
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    if (inet_pton(AF_INET, host, &a) != 1)
        return false;
    if (!colon)
        return true;
    size_t p = ac__port_len(colon + 1);
    return p > 0 && colon[1 + p] == '\0';
}

/* ---- the resolver ---------------------------------------------------------- */

static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static int library_status = ARES_SUCCESS;

static void library_init(void) { library_status = ares_library_init(ARES_LIB_INIT_ALL); }

/* "a,b,c" of the servers; NULL when out of memory. */
static char *servers_csv(const char *const *servers, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(servers[i]) + 1;
    char *csv = ac__malloc(len);
    if (!csv)
        return NULL;
    csv[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(csv, ",");
        strcat(csv, servers[i]);
    }
    return csv;
}

static ac_status init_channel(ac__dns *d, const char *const *servers, size_t n, int timeout_ms)
{
    struct ares_options o = {.timeout = timeout_ms, .tries = TRIES};
    int st = ares_init_options(&d->channel, &o, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
    if (st != ARES_SUCCESS) {
        d->channel = NULL;
        return ac__fail(st == ARES_ENOMEM ? AC_ENOMEM : AC_EINVAL, "c-ares: %s",
                        ares_strerror(st));
    }
    if (!n)
        return AC_OK;
    char *csv = servers_csv(servers, n);
    if (!csv)
        return ac__fail(AC_ENOMEM, "out of memory");
    st = ares_set_servers_ports_csv(d->channel, csv);
    free(csv);
    if (st != ARES_SUCCESS)
        return ac__fail(st == ARES_ENOMEM ? AC_ENOMEM : AC_EINVAL, "c-ares: servers: %s",
                        ares_strerror(st));
    return AC_OK;
}

ac__dns *ac__dns_open(const char *const *servers, size_t n, int timeout_ms)
{
    pthread_once(&library_once, library_init);
    if (library_status != ARES_SUCCESS)
        return ac__fail_null(AC_EINVAL, "c-ares: %s", ares_strerror(library_status));
    ac__dns *d = ac__calloc(1, sizeof *d);
    if (!d)
        return ac__fail_null(AC_ENOMEM, "out of memory");
    atomic_init(&d->cancelled, false);
    d->wake[0] = d->wake[1] = -1;
    if (pipe2(d->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        ac__fail(AC_ENOMEM, "a pipe for the DNS resolver: %s", strerror(errno));
        goto fail;
    }
    if (init_channel(d, servers, n, timeout_ms) != AC_OK)
        goto fail;
    return d;
fail:
    ac__dns_close(d);
    return NULL;
}

void ac__dns_cancel(ac__dns *d)
{
    /* Release: pairs with the acquire in the lookup's loop. */
    atomic_store_explicit(&d->cancelled, true, memory_order_release);
    ssize_t ignored = write(d->wake[1], "x", 1);
    (void)ignored; /* a full pipe is woken already */
}

void ac__dns_close(ac__dns *d)
{
    if (!d)
        return;
    if (d->channel)
        ares_destroy(d->channel);
    for (int i = 0; i < 2; i++)
        if (d->wake[i] >= 0)
            close(d->wake[i]);
    free(d);
}

/* ---- a lookup --------------------------------------------------------------- */

typedef struct lookup {
    ac__dns *dns;
    int pending;      /* queries sent and not called back */
    bool failed;      /* a query got no answer: `why` says its reason */
    bool oom;
    char **found;
    size_t count, cap;
    char why[256];
} lookup;

typedef struct query {
    lookup *lk;
    int port;
    char name[256];
} query;

/* Keep the first reason, a failure's over a missing record's. */
static void note_why(lookup *lk, const char *name, const char *what, bool failure)
{
    if (!lk->why[0] || (failure && !lk->failed))
        snprintf(lk->why, sizeof lk->why, "%.200s: %s", name, what);
    lk->failed = lk->failed || failure;
}

static void add_address(lookup *lk, struct in_addr ip, int port)
{
    char text[INET_ADDRSTRLEN], address[INET_ADDRSTRLEN + 8];
    if (!inet_ntop(AF_INET, &ip, text, sizeof text) || lk->count >= AC__DNS_MAX_ADDRESSES)
        return;
    snprintf(address, sizeof address, "%s:%d", text, port);
    for (size_t i = 0; i < lk->count; i++)
        if (strcmp(lk->found[i], address) == 0)
            return;
    if (lk->count == lk->cap) {
        size_t cap = lk->cap ? lk->cap * 2 : 8;
        char **v = ac__realloc(lk->found, cap * sizeof *v);
        if (!v) {
            lk->oom = true;
            return;
        }
        lk->found = v;
        lk->cap = cap;
    }
    if (!(lk->found[lk->count] = ac__strdup(address)))
        lk->oom = true;
    else
        lk->count++;
}

/* A query's status that is not success: no such records (an answer), or
 * a failure. */
static void query_refused(lookup *lk, const char *name, int status)
{
    if (status == ARES_ENOTFOUND || status == ARES_ENODATA) {
        note_why(lk, name, status == ARES_ENOTFOUND ? "no such name" : "no such records", false);
        return;
    }
    if (status == ARES_ENOMEM)
        lk->oom = true;
    note_why(lk, name, ares_strerror(status), true);
}

static void on_a(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
    (void)timeouts;
    query *q = arg;
    lookup *lk = q->lk;
    struct ares_addrttl ttls[MAX_A_PER_NAME];
    int n = MAX_A_PER_NAME;
    if (status != ARES_SUCCESS) {
        query_refused(lk, q->name, status);
    } else if ((status = ares_parse_a_reply(abuf, alen, NULL, ttls, &n)) != ARES_SUCCESS) {
        query_refused(lk, q->name, status);
    } else {
        for (int i = 0; i < n; i++)
            add_address(lk, ttls[i].ipaddr, q->port);
    }
    lk->pending--;
    free(q);
}

/* Send a query for name (type A or SRV); its callback frees q. */
static void send_query(lookup *lk, const char *name, int type, int port,
                       ares_callback callback)
{
    query *q = ac__calloc(1, sizeof *q);
    if (!q) {
        lk->oom = lk->failed = true;
        return;
    }
    q->lk = lk;
    q->port = port;
    snprintf(q->name, sizeof q->name, "%s", name);
    lk->pending++; /* before: c-ares may call back at once */
    ares_query(lk->dns->channel, name, CLASS_IN, type, callback, q);
}

static void on_srv(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
    (void)timeouts;
    query *q = arg;
    lookup *lk = q->lk;
    struct ares_srv_reply *srv = NULL;
    if (status == ARES_SUCCESS)
        status = ares_parse_srv_reply(abuf, alen, &srv);
    if (status != ARES_SUCCESS)
        query_refused(lk, q->name, status);
    for (struct ares_srv_reply *r = srv; r; r = r->next) {
        struct in_addr ip;
        if (r->port == 0)
            continue;
        if (inet_pton(AF_INET, r->host, &ip) == 1)
            add_address(lk, ip, r->port);
        else if (ac__dns_name_ok(r->host))
            send_query(lk, r->host, TYPE_A, r->port, on_a);
    }
    if (status == ARES_SUCCESS && !srv)
        note_why(lk, q->name, "no such records", false);
    ares_free_data(srv);
    lk->pending--;
    free(q);
}

static bool cancelled(ac__dns *d)
{
    /* Acquire: pairs with ac__dns_cancel's release. */
    return atomic_load_explicit(&d->cancelled, memory_order_acquire);
}

/* Run the channel one round: wait for its sockets, the wake-up pipe or
 * its next timeout, and process what is ready. */
static void run_once(ac__dns *d)
{
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    int bits = ares_getsock(d->channel, socks, ARES_GETSOCK_MAXNUM);
    struct pollfd pfd[ARES_GETSOCK_MAXNUM + 1];
    int n = 0;
    /* The bits as ares_getsock lays them out (its own macros shift a
     * signed 1 into the sign bit). */
    unsigned mask = (unsigned)bits;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
        short ev = (short)((mask >> i & 1u ? POLLIN : 0) |
                           (mask >> (i + ARES_GETSOCK_MAXNUM) & 1u ? POLLOUT : 0));
        if (ev)
            pfd[n++] = (struct pollfd){.fd = socks[i], .events = ev};
    }
    pfd[n] = (struct pollfd){.fd = d->wake[0], .events = POLLIN};
    struct timeval tv, *tvp = ares_timeout(d->channel, NULL, &tv);
    int ms = tvp ? (int)(tvp->tv_sec * 1000 + (tvp->tv_usec + 999) / 1000) : 1000;
    int ready = poll(pfd, (nfds_t)n + 1, ms);
    if (ready <= 0) {
        ares_process_fd(d->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
        return;
    }
    for (int i = 0; i < n; i++) {
        short re = pfd[i].revents;
        if (re)
            ares_process_fd(d->channel,
                            re & (POLLIN | POLLERR | POLLHUP) ? pfd[i].fd : ARES_SOCKET_BAD,
                            re & POLLOUT ? pfd[i].fd : ARES_SOCKET_BAD);
    }
}

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ac_status ac__dns_resolve(ac__dns *d, const char *name, int port, ac__dns_result *out)
{
    *out = (ac__dns_result){.outcome = AC__DNS_CANCELLED};
    lookup lk = {.dns = d};
    if (cancelled(d))
        return AC_OK;
    if (port)
        send_query(&lk, name, TYPE_A, port, on_a);
    else
        send_query(&lk, name, TYPE_SRV, 0, on_srv);
    while (lk.pending > 0) {
        if (cancelled(d))
            ares_cancel(d->channel); /* calls every query back */
        else
            run_once(d);
    }
    if (lk.oom) {
        ac__dns_result_free(&(ac__dns_result){.addresses = lk.found, .count = lk.count});
        *out = (ac__dns_result){.outcome = AC__DNS_FAILED};
        return ac__fail(AC_ENOMEM, "out of memory looking up %.200s", name);
    }
    if (lk.count)
        qsort(lk.found, lk.count, sizeof *lk.found, compare_text);
    out->addresses = lk.found;
    out->count = lk.count;
    out->outcome = cancelled(d) ? AC__DNS_CANCELLED
                   : lk.failed  ? AC__DNS_FAILED
                   : lk.count   ? AC__DNS_FOUND
                                : AC__DNS_NONE;
    snprintf(out->why, sizeof out->why, "%s", lk.why[0] ? lk.why : "no addresses");
    return AC_OK;
}

void ac__dns_result_free(ac__dns_result *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->addresses[i]);
    free(r->addresses);
    r->addresses = NULL;
    r->count = 0;
}
