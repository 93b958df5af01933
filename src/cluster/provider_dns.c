/*
 * The DNS provider (provider.h): the cluster's nodes are the addresses a
 * name resolves to, as a Kubernetes headless service or Akka
 * Discovery's DNS method give them. With port 0 the name is an SRV
 * record (each target's A records at the record's port), else it has A
 * records (each address at the port). A thread of its own looks the name
 * up at once and then every interval_ms (dns_resolve.c, over c-ares),
 * and lists what appeared and unlists what went: a node is a member
 * while a record names it (listed_only), so a record dropped is its
 * Down and a record back its Up, as etcd's keys are.
 *
 * What a lookup says moves the status: addresses found, JOINED; an
 * answer without any (no such name, no such records), every listing
 * ends and the status says why (JOINING stays JOINING, which is what a
 * mistyped name looks like); no answer (timeout, a server down), the
 * listings stay as they were (a flaky DNS costs no member) and a joined
 * cluster is RETRYING until the next answer. A change of outcome is
 * logged, then every tenth failure in a row.
 *
 * Threads: the lookup thread owns the resolver and `listed`; stop sets
 * `stopping` under `lock`, wakes the thread (its condition variable,
 * and the resolver's cancel for a lookup under way) and joins it, so no
 * call into the cluster follows stop.
 *
 * Without ACTORC_WITH_DNS this file offers only a refusal.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/provider.h"

static const void *dns_options_of(const ac_cluster_options *o) { return o->dns_options; }

#ifdef ACTORC_CLUSTER_HAVE_DNS

#include "cluster/dns_resolve.h"
#include "core/clock.h"

#define DEFAULT_INTERVAL_MS 5000
#define MAX_SERVERS 8
#define TRY_TIMEOUT_MS 1000
#define UNLISTED_WHY "its DNS record is gone"

typedef struct dns_state {
    ac__provider_env env;
    char *name;
    int port, interval_ms;
    ac__dns *resolver;
    pthread_t thread;
    bool running; /* the thread was started */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    bool stopping;       /* under the lock */
    /* The thread's. */
    char **listed; /* sorted */
    size_t listed_count;
    ac__dns_outcome last; /* of the last lookup */
    uint64_t failures;    /* in a row */
} dns_state;

/* ---- options ------------------------------------------------------------- */

static ac_status dns_check(const void *options)
{
    const ac_cluster_dns_options *o = options;
    if (!o->name || !ac__dns_name_ok(o->name))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.dns_options.name \"%.80s\" is not "
                                   "a DNS name (labels [A-Za-z0-9_-]{1,63} joined by '.', 253 "
                                   "characters at most)", o->name ? o->name : "(null)");
    if (o->port < 0 || o->port > 65535)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.dns_options.port %d is not 0..65535 "
                                   "(0: the name is an SRV record)", o->port);
    if (o->interval_ms != 0 && (o->interval_ms < 100 || o->interval_ms > 3600000))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.dns_options.interval_ms %d is not "
                                   "100..3600000 (0: %d)", o->interval_ms, DEFAULT_INTERVAL_MS);
    return ac__provider_check_list(o->servers, o->servers_count, "dns_options.servers",
                                   MAX_SERVERS, ac__dns_server_ok,
                                   "an IPv4 address with an optional port (a.b.c.d:port)");
}

/* ---- applying a lookup ------------------------------------------------------ */

static bool listed_has(const dns_state *s, const char *address)
{
    for (size_t i = 0; i < s->listed_count; i++)
        if (strcmp(s->listed[i], address) == 0)
            return true;
    return false;
}

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Make `listed` the addresses found: list the new, unlist the gone.
 * What could not be passed on (out of memory) stays as it was, to be
 * tried at the next lookup. */
static void apply(dns_state *s, const ac__dns_result *r)
{
    char **next = ac__calloc(r->count + s->listed_count + 1, sizeof *next);
    size_t n = 0;
    if (!next)
        return;
    for (size_t i = 0; i < r->count; i++)
        if (listed_has(s, r->addresses[i]) ||
            ac__provider_list(s->env.cluster, r->addresses[i], 0) == AC_OK)
            next[n++] = ac__strdup(r->addresses[i]);
    for (size_t i = 0; i < s->listed_count; i++) {
        bool kept = false;
        for (size_t j = 0; j < r->count && !kept; j++)
            kept = strcmp(r->addresses[j], s->listed[i]) == 0;
        if (!kept && ac__provider_unlist(s->env.cluster, s->listed[i], 0, UNLISTED_WHY) != AC_OK)
            next[n++] = ac__strdup(s->listed[i]);
        free(s->listed[i]);
    }
    free(s->listed);
    size_t kept = 0; /* a copy that failed is retried next time */
    for (size_t i = 0; i < n; i++)
        if (next[i])
            next[kept++] = next[i];
    if (kept)
        qsort(next, kept, sizeof *next, compare_text);
    s->listed = next;
    s->listed_count = kept;
}

static void report(dns_state *s, const ac__dns_result *r)
{
    bool changed = r->outcome != s->last;
    s->failures = r->outcome == AC__DNS_FAILED ? s->failures + 1 : 0;
    s->last = r->outcome;
    if (r->outcome == AC__DNS_FOUND) {
        ac__provider_ok(s->env.cluster);
        if (changed)
            ac_system_log(s->env.system, AC_LOG_INFO, "cluster %s: dns: %s: %zu addresses",
                          s->env.name, s->name, r->count);
        return;
    }
    bool failed = r->outcome == AC__DNS_FAILED;
    ac__provider_failed(s->env.cluster, failed, "dns: %s", r->why);
    if (failed && (changed || s->failures % 10 == 0))
        ac_system_log(s->env.system, AC_LOG_WARN, "cluster %s: dns: lookup failed (%s), %" PRIu64
                      " in a row; again in %d ms", s->env.name, r->why, s->failures,
                      s->interval_ms);
    else if (changed)
        ac_system_log(s->env.system, AC_LOG_WARN, "cluster %s: dns: %s: no nodes listed",
                      s->env.name, r->why);
}

/* ---- the thread --------------------------------------------------------------- */

/* Wait an interval, or until stopping. True when stopping. */
static bool sleep_interval(dns_state *s)
{
    struct timespec until =
        ac__timespec_of_ns(ac__now_ns() + (uint64_t)s->interval_ms * 1000000ull);
    pthread_mutex_lock(&s->lock);
    while (!s->stopping && pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
        ;
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stopping;
}

static void *lookup_thread(void *arg)
{
    dns_state *s = arg;
    do {
        ac__dns_result r;
        if (ac__dns_resolve(s->resolver, s->name, s->port, &r) != AC_OK) {
            ac_system_log(s->env.system, AC_LOG_ERROR, "cluster %s: dns: %s", s->env.name,
                          ac_last_error());
            continue;
        }
        if (r.outcome != AC__DNS_CANCELLED) {
            if (r.outcome != AC__DNS_FAILED)
                apply(s, &r);
            report(s, &r);
        }
        ac__dns_result_free(&r);
    } while (!sleep_interval(s));
    return NULL;
}

/* ---- the ops ---------------------------------------------------------------------- */

static void dns_free(void *state)
{
    dns_state *s = state;
    if (!s)
        return;
    ac__dns_close(s->resolver);
    for (size_t i = 0; i < s->listed_count; i++)
        free(s->listed[i]);
    free(s->listed);
    free(s->name);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static ac_status dns_create(const ac__provider_env *env, const void *options, void **state)
{
    const ac_cluster_dns_options *o = options;
    dns_state *s = ac__calloc(1, sizeof *s);
    if (!s || !(s->name = ac__strdup(o->name))) {
        free(s);
        return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    s->env = *env;
    s->port = o->port;
    s->interval_ms = o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
    s->last = AC__DNS_CANCELLED; /* no lookup yet: the first is a change */
    s->resolver = ac__dns_open(o->servers, o->servers_count, TRY_TIMEOUT_MS);
    if (!s->resolver) {
        ac_status st = ac_last_status();
        char why[256];
        snprintf(why, sizeof why, "%s", ac_last_error());
        dns_free(s);
        return ac_set_error(st, "ac_cluster_join: dns: %s", why);
    }
    *state = s;
    return AC_OK;
}

static ac_status dns_start(void *state)
{
    dns_state *s = state;
    if (pthread_create(&s->thread, NULL, lookup_thread, s) != 0)
        return ac__fail(AC_ENOMEM, "ac_cluster_join: dns: cannot start its thread");
    s->running = true;
    return AC_OK;
}

static void dns_stop(void *state)
{
    dns_state *s = state;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    ac__dns_cancel(s->resolver);
    if (s->running)
        pthread_join(s->thread, NULL);
    s->running = false;
}

const ac__provider_ops ac__provider_dns = {
    .name = "dns",
    .listed_only = true,
    .listing_noun = "DNS-listed node",
    .options_of = dns_options_of,
    .check = dns_check,
    .create = dns_create,
    .start = dns_start,
    .stop = dns_stop,
    .free = dns_free,
};

#else /* no DNS */

static ac_status dns_refuse(const void *options)
{
    (void)options;
    return ac__fail(AC_EINVAL, "ac_cluster_join: options.dns_options is set but this actorc "
                               "was built without DNS (ACTORC_WITH_DNS)");
}

const ac__provider_ops ac__provider_dns = {
    .name = "dns",
    .listed_only = true,
    .listing_noun = "DNS-listed node",
    .options_of = dns_options_of,
    .check = dns_refuse,
};

#endif
