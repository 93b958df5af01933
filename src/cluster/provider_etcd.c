/*
 * The etcd provider (provider.h): this node's registration and a watch
 * of the cluster's members, over the etcd client (etcd.h).
 *
 *   key    <prefix>/<cluster>/members/<address>-<incarnation>
 *   value  {"system": "...", "address": "host:port",
 *           "incarnation": "<16 hex digits>", "roles": ["...", ...]}
 *
 * The incarnation travels as hex text: a JSON number would not hold 64
 * bits everywhere. The key lives under a lease of lease_ttl_s that the
 * keeper renews every third of it, and puts again under a new lease when
 * the old one is lost (etcd restarted without its data, or unreachable
 * past the TTL). The watcher reports each key under the members prefix,
 * and after a lost stream lists the prefix again and reports the
 * difference, so a restarted etcd costs no member that stayed.
 *
 * A key put is a listing of (address, incarnation), a key deleted its
 * unlisting: a member only while its key is there (listed_only). The
 * keeper's and the watcher's threads call the cluster (provider.h): a
 * value that is not a member (malformed, or not matching its key) is
 * ignored with a warning; a retry is counted in the cluster's status.
 * The actor's timer (tick) reads their state to say JOINED (both well),
 * and fences: a lease not renewed for its TTL (counted from when the
 * last renewal that worked was sent) is gone in etcd, so this node
 * downs itself (provider.h, ac__provider_down_self) rather than serve
 * as a member the others no longer list.
 * `lock` guards reg and watch, which stop takes away while a tick may
 * read them; nothing is called with it held but their status reads.
 *
 * Without ACTORC_WITH_ETCD this file offers only a refusal.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/provider.h"

static const void *etcd_options_of(const ac_cluster_options *o) { return o->etcd_options; }

#ifdef ACTORC_CLUSTER_HAVE_ETCD

#include <jansson.h>

#include "cluster/etcd.h"
#include "core/clock.h"

#define DEFAULT_PREFIX "/actorc"
#define DEFAULT_TTL_S 5

typedef struct etcd_state {
    ac__provider_env env;
    char **endpoints;
    size_t endpoints_count;
    int lease_ttl_s;
    char *members; /* "<prefix>/<cluster>/members/" */
    char *key;     /* this node's */
    char *value;
    ac__etcd *client;
    pthread_mutex_t lock;
    ac__etcd_reg *reg;     /* under the lock: cleared at stop */
    ac__etcd_watch *watch; /* as reg */
    bool fenced; /* the tick's: this node was told to down itself */
} etcd_state;

/* ---- options ----------------------------------------------------------------- */

/* An etcd client URL: http:// or https://, a host, an optional port, no
 * path. */
static bool endpoint_ok(const char *s)
{
    const char *rest = strncmp(s, "http://", 7) == 0    ? s + 7
                       : strncmp(s, "https://", 8) == 0 ? s + 8
                                                        : NULL;
    if (!rest || !*rest || strlen(s) > 255)
        return false;
    for (const char *p = rest; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '/' || *p == '@' || *p == '?' || *p == '#')
            return p[0] == '/' && p[1] == '\0'; /* a trailing slash only */
    return true;
}

/* "/actorc": starts with '/', no trailing '/', no "//", printable. */
static bool prefix_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || n > 128 || s[0] != '/' || s[n - 1] == '/' || strstr(s, "//"))
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

static ac_status etcd_check(const void *options)
{
    const ac_cluster_etcd_options *o = options;
    if (ac__provider_check_list(o->endpoints, o->endpoints_count, "etcd_options.endpoints", 16,
                                endpoint_ok, "an http:// or https:// URL without a path") != AC_OK)
        return ac_last_status();
    if (o->endpoints_count == 0)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.etcd_options.endpoints is empty: "
                                   "the etcd provider needs at least one");
    if (o->prefix && !prefix_ok(o->prefix))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.etcd_options.prefix \"%.80s\" is "
                                   "not a key prefix like \"/actorc\" (a leading '/', no "
                                   "trailing '/')", o->prefix);
    if (o->lease_ttl_s != 0 && (o->lease_ttl_s < 2 || o->lease_ttl_s > 3600))
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.etcd_options.lease_ttl_s %d is not "
                                   "2..3600 (0: 5)", o->lease_ttl_s);
    return AC_OK;
}

/* ---- values --------------------------------------------------------------- */

static char *value_json(const ac__card *self)
{
    char inc[17];
    snprintf(inc, sizeof inc, "%016" PRIx64, self->incarnation);
    json_t *roles = json_array();
    for (size_t i = 0; roles && i < self->roles_count; i++)
        json_array_append_new(roles, json_string(self->roles[i]));
    json_t *v = roles ? json_pack("{s:s, s:s, s:s, s:o}", "system", self->system, "address",
                                  self->address, "incarnation", inc, "roles", roles)
                      : NULL;
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return text;
}

static bool parse_hex16(const char *s, uint64_t *out)
{
    if (!s || strlen(s) != 16)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return v != 0;
}

/* "<address>-<incarnation>" after the members prefix. */
static bool parse_node_id(const etcd_state *e, const char *key, char *address,
                          size_t cap, uint64_t *incarnation)
{
    size_t n = strlen(e->members);
    if (strncmp(key, e->members, n) != 0)
        return false;
    const char *id = key + n;
    const char *dash = strrchr(id, '-');
    if (!dash || (size_t)(dash - id) >= cap || !parse_hex16(dash + 1, incarnation))
        return false;
    memcpy(address, id, (size_t)(dash - id));
    address[dash - id] = '\0';
    return ac__host_port_ok(address);
}

/* Is the value a member's, matching its key? False when it is
 * malformed or does not match. */
static bool member_value(const char *value, size_t len, const char *address,
                         uint64_t incarnation)
{
    json_t *v = json_loadb(value, len, 0, NULL);
    const char *system = NULL, *addr = NULL, *inc = NULL;
    json_t *roles = NULL;
    uint64_t inc_v = 0;
    bool ok = v && json_unpack(v, "{s:s, s:s, s:s, s:o}", "system", &system, "address", &addr,
                               "incarnation", &inc, "roles", &roles) == 0 &&
              json_is_array(roles) && json_array_size(roles) <= AC__CLUSTER_MAX_ROLES &&
              strcmp(addr, address) == 0 && parse_hex16(inc, &inc_v) && inc_v == incarnation &&
              strlen(system) >= 1 && strlen(system) <= AC__CLUSTER_MAX_TEXT;
    for (size_t i = 0; ok && i < json_array_size(roles); i++) {
        const char *r = json_string_value(json_array_get(roles, i));
        ok = r && ac__cluster_name_ok(r);
    }
    for (const char *p = system; ok && *p; p++)
        ok = (unsigned char)*p >= ' ' && *p != 0x7f;
    json_decref(v);
    return ok;
}

/* ---- the threads' callbacks ------------------------------------------------ */

static void on_event(const ac__etcd_event *ev, void *user)
{
    etcd_state *e = user;
    char address[256];
    uint64_t inc;
    if (!parse_node_id(e, ev->key, address, sizeof address, &inc)) {
        ac_system_log(e->env.system, AC_LOG_DEBUG, "cluster %s: ignored etcd key %.200s",
                      e->env.name, ev->key);
        return;
    }
    if (ev->kind == AC__ETCD_DELETE) {
        if (ac__provider_unlist(e->env.cluster, address, inc,
                                "its registration in etcd is gone") != AC_OK)
            ac_system_log(e->env.system, AC_LOG_ERROR, "cluster %s: %s", e->env.name,
                          ac_last_error());
        return;
    }
    if (!member_value(ev->value, ev->value_len, address, inc)) {
        ac_system_log(e->env.system, AC_LOG_WARN, "cluster %s: etcd key %.200s holds no member "
                                                  "(ignored)", e->env.name, ev->key);
        return;
    }
    if (ac__provider_list(e->env.cluster, address, inc) != AC_OK)
        ac_system_log(e->env.system, AC_LOG_ERROR, "cluster %s: %s", e->env.name,
                      ac_last_error());
}

static void on_retry(const ac__etcd_retry *r, void *user)
{
    etcd_state *e = user;
    ac__provider_failed(e->env.cluster, true, "etcd: %s: %s", r->what, r->message);
    ac_system_log(e->env.system,
                  r->attempt == 1 || r->attempt % 10 == 0 ? AC_LOG_WARN : AC_LOG_DEBUG,
                  "cluster %s: etcd: %s failed (%s), attempt %" PRIu64 "; again in %" PRIu64
                  " ms",
                  e->env.name, r->what, r->message, r->attempt, r->delay_ms);
}

/* ---- the ops ---------------------------------------------------------------- */

static void etcd_free(void *state)
{
    etcd_state *e = state;
    if (!e)
        return;
    ac__etcd_close(e->client);
    for (size_t i = 0; i < e->endpoints_count; i++)
        free(e->endpoints[i]);
    free(e->endpoints);
    free(e->members);
    free(e->key);
    free(e->value);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static bool copy_endpoints(etcd_state *e, const ac_cluster_etcd_options *o)
{
    if (!(e->endpoints = ac__calloc(o->endpoints_count, sizeof *e->endpoints)))
        return false;
    for (; e->endpoints_count < o->endpoints_count; e->endpoints_count++)
        if (!(e->endpoints[e->endpoints_count] = ac__strdup(o->endpoints[e->endpoints_count])))
            return false;
    return true;
}

/* The members prefix, this node's key and its value. */
static bool make_key(etcd_state *e, const char *prefix)
{
    size_t mlen = strlen(prefix) + strlen(e->env.name) + 16;
    size_t klen = mlen + strlen(e->env.self->address) + 20;
    e->members = ac__malloc(mlen);
    e->key = ac__malloc(klen);
    e->value = value_json(e->env.self);
    if (!e->members || !e->key || !e->value)
        return false;
    snprintf(e->members, mlen, "%s/%s/members/", prefix, e->env.name);
    snprintf(e->key, klen, "%s%s-%016" PRIx64, e->members, e->env.self->address,
             e->env.self->incarnation);
    return true;
}

static ac_status etcd_create(const ac__provider_env *env, const void *options, void **state)
{
    const ac_cluster_etcd_options *o = options;
    etcd_state *e = ac__calloc(1, sizeof *e);
    if (!e)
        return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
    pthread_mutex_init(&e->lock, NULL);
    e->env = *env;
    e->lease_ttl_s = o->lease_ttl_s ? o->lease_ttl_s : DEFAULT_TTL_S;
    if (!copy_endpoints(e, o) || !make_key(e, o->prefix ? o->prefix : DEFAULT_PREFIX)) {
        etcd_free(e);
        return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
    }
    *state = e;
    return AC_OK;
}

static ac_status etcd_start(void *state)
{
    etcd_state *e = state;
    ac__etcd_options o = {.request_timeout_ms = 1000,
                          .connect_timeout_ms = 500,
                          .backoff_initial_ms = (uint32_t)e->env.retry_initial_ms,
                          .backoff_max_ms = (uint32_t)e->env.retry_max_ms,
                          .on_retry = on_retry,
                          .user = e};
    ac__etcd_reg *reg = NULL;
    ac__etcd_watch *watch = NULL;
    e->client = ac__etcd_open((const char *const *)e->endpoints, e->endpoints_count, &o);
    if (!e->client ||
        ac__etcd_register(e->client, e->key, e->value, strlen(e->value), e->lease_ttl_s,
                          &reg) != AC_OK ||
        ac__etcd_watch_prefix(e->client, e->members, on_event, e, &watch) != AC_OK) {
        ac_status st = ac_last_status() != AC_OK ? ac_last_status() : AC_ENOMEM;
        char why[256];
        snprintf(why, sizeof why, "%s", ac_last_error());
        ac__etcd_unregister(reg);
        return ac_set_error(st, "ac_cluster_join: etcd: %s", why);
    }
    pthread_mutex_lock(&e->lock);
    e->reg = reg;
    e->watch = watch;
    pthread_mutex_unlock(&e->lock);
    return AC_OK;
}

/* Fencing: a lease not renewed for its TTL is gone in etcd (its key
 * with it, so the others see this node Down); this node must not go on
 * serving as a member, so it downs itself, once. Only once its key was
 * put: a lease granted to a node whose first put has not worked yet (a
 * slow etcd at join) held no key, no other node listed it, and the
 * keeper grants another when etcd says the lease went; the join is
 * late, not lost. */
static void fence_if_expired(etcd_state *e, const ac__etcd_reg_info *ri)
{
    uint64_t now = ac__now_ns() / 1000000u;
    if (e->fenced || !ri->registrations || !ri->renewed_ms || ri->ttl_s <= 0 ||
        now - ri->renewed_ms <= (uint64_t)ri->ttl_s * 1000u)
        return;
    e->fenced = true;
    char why[160];
    snprintf(why, sizeof why, "this node downed itself: its etcd lease was not renewed for its "
             "TTL (%" PRId64 " s)", ri->ttl_s);
    ac__provider_down_self(e->env.cluster, why);
}

/* Say JOINED when the keeper and the watcher are both well; fence when
 * the lease is gone. */
static void etcd_tick(void *state)
{
    etcd_state *e = state;
    ac__etcd_reg_info ri;
    ac__etcd_watch_info wi;
    bool ok = false, have_reg = false;
    pthread_mutex_lock(&e->lock);
    if (e->reg && ac__etcd_reg_status(e->reg, &ri) == AC_OK) {
        have_reg = true;
        ok = e->watch && ac__etcd_watch_status(e->watch, &wi) == AC_OK &&
             ri.state == AC__ETCD_REG_REGISTERED && wi.state == AC__ETCD_WATCH_WATCHING;
    }
    pthread_mutex_unlock(&e->lock);
    if (have_reg)
        fence_if_expired(e, &ri);
    if (ok)
        ac__provider_ok(e->env.cluster);
}

/* Until the lease would have gone unrenewed for its TTL (fence_if_expired
 * acts just after); -1, on the beat, while not registered. */
static int64_t etcd_quiet_ms(void *state)
{
    etcd_state *e = state;
    ac__etcd_reg_info ri;
    bool have = false;
    pthread_mutex_lock(&e->lock);
    have = e->reg && ac__etcd_reg_status(e->reg, &ri) == AC_OK;
    pthread_mutex_unlock(&e->lock);
    if (!have || ri.state != AC__ETCD_REG_REGISTERED || !ri.renewed_ms || ri.ttl_s <= 0)
        return -1;
    uint64_t now = ac__now_ns() / 1000000u, lapse = ri.renewed_ms + (uint64_t)ri.ttl_s * 1000u;
    return now < lapse ? (int64_t)(lapse - now) + 1 : 1;
}

static void etcd_stop(void *state)
{
    etcd_state *e = state;
    pthread_mutex_lock(&e->lock);
    ac__etcd_reg *reg = e->reg;
    ac__etcd_watch *watch = e->watch;
    e->reg = NULL;
    e->watch = NULL;
    pthread_mutex_unlock(&e->lock);
    /* Outside the lock: a tick may wait on it. */
    ac__etcd_watch_stop(watch);
    ac__etcd_unregister(reg);
}

const ac__provider_ops ac__provider_etcd = {
    .name = "etcd",
    .listed_only = true,
    .listing_noun = "registered node",
    .options_of = etcd_options_of,
    .check = etcd_check,
    .create = etcd_create,
    .start = etcd_start,
    .tick = etcd_tick,
    .quiet_ms = etcd_quiet_ms,
    .stop = etcd_stop,
    .free = etcd_free,
};

#else /* no etcd */

static ac_status etcd_refuse(const void *options)
{
    (void)options;
    return ac__fail(AC_EINVAL, "ac_cluster_join: options.etcd_options is set but this actorc "
                               "was built without etcd (ACTORC_WITH_ETCD)");
}

const ac__provider_ops ac__provider_etcd = {
    .name = "etcd",
    .listed_only = true,
    .listing_noun = "registered node",
    .options_of = etcd_options_of,
    .check = etcd_refuse,
};

#endif
