/*
 * The etcd client: its endpoints and options, checked once when it is
 * opened, and the one-shot calls of etcd.h, each one request to the
 * gateway (etcd_http.c) whose JSON answer is read here.
 *
 * Every call comes in two forms. The `_in` form is what the keeper's and
 * watcher's threads use: it takes their stop signal and writes its
 * failure to a buffer, which becomes their status. The public form
 * checks its arguments the same way, takes no stop signal, and records
 * the failure as the calling thread's last error.
 *
 * Endpoints are checked strictly: an http or https URL with a host, an
 * optional port and nothing after it but an optional '/', so that a typo
 * is refused when the client is opened rather than seen later as an
 * endpoint that never answers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd_internal.h"
#include "core/alloc.h"
#include "core/host_port.h"

#define DEFAULT_REQUEST_TIMEOUT_MS 2000
#define DEFAULT_CONNECT_TIMEOUT_MS 1000
#define DEFAULT_BACKOFF_INITIAL_MS 100
#define DEFAULT_BACKOFF_MAX_MS 5000
#define DEFAULT_BACKOFF_JITTER_PCT 20
#define MAX_TIMEOUT_MS 3600000u /* an hour: anything longer is a mistake */

/* ---- options and endpoints ------------------------------------------------ */

static uint32_t or_default(uint32_t v, uint32_t d) { return v ? v : d; }

static ac_status check_options(const ac__etcd_options *in, ac__etcd_options *o)
{
    *o = in ? *in : (ac__etcd_options){0};
    o->request_timeout_ms = or_default(o->request_timeout_ms, DEFAULT_REQUEST_TIMEOUT_MS);
    o->connect_timeout_ms = or_default(o->connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS);
    o->backoff_initial_ms = or_default(o->backoff_initial_ms, DEFAULT_BACKOFF_INITIAL_MS);
    o->backoff_max_ms = or_default(o->backoff_max_ms, DEFAULT_BACKOFF_MAX_MS);
    o->backoff_jitter_pct = or_default(o->backoff_jitter_pct, DEFAULT_BACKOFF_JITTER_PCT);
    const struct {
        const char *name;
        uint32_t value;
    } limits[] = {{"request_timeout_ms", o->request_timeout_ms},
                  {"connect_timeout_ms", o->connect_timeout_ms},
                  {"backoff_initial_ms", o->backoff_initial_ms},
                  {"backoff_max_ms", o->backoff_max_ms}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        if (limits[i].value > MAX_TIMEOUT_MS)
            return ac__fail(AC_EINVAL, "etcd options: %s is %u, more than an hour (%u)",
                            limits[i].name, limits[i].value, MAX_TIMEOUT_MS);
    if (o->backoff_max_ms < o->backoff_initial_ms)
        return ac__fail(AC_EINVAL, "etcd options: backoff_max_ms (%u) is below "
                        "backoff_initial_ms (%u)", o->backoff_max_ms, o->backoff_initial_ms);
    if (o->backoff_jitter_pct > 100)
        return ac__fail(AC_EINVAL, "etcd options: backoff_jitter_pct is %u; it is a share, "
                        "1 to 100", o->backoff_jitter_pct);
    if (o->connect_timeout_ms > o->request_timeout_ms)
        o->connect_timeout_ms = o->request_timeout_ms;
    return AC_OK;
}

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

static bool ipv6_char(char c)
{
    return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') ||
           c == ':' || c == '.';
}

/* The length of the host at s ("name", "1.2.3.4" or "[::1]"); 0 if none. */
static size_t host_len(const char *s)
{
    size_t i = 0;
    if (s[0] == '[') {
        for (i = 1; ipv6_char(s[i]); i++)
            ;
        return s[i] == ']' && i > 1 ? i + 1 : 0;
    }
    while (host_char(s[i]))
        i++;
    return i;
}

/* Check endpoint i; the length of its normalised form (no trailing '/'). */
static ac_status check_endpoint(const char *url, size_t i, size_t *len)
{
    char q[80];
    if (!url)
        return ac__fail(AC_EINVAL, "etcd endpoint %zu is NULL", i);
    size_t n = strlen(url);
    ac__etcd_quote(url, n, q, sizeof q);
    if (n == 0)
        return ac__fail(AC_EINVAL, "etcd endpoint %zu is empty; expected a URL like "
                        "http://127.0.0.1:2379", i);
    if (n > AC__ETCD_MAX_URL)
        return ac__fail(AC_EINVAL, "etcd endpoint %zu %s is longer than %d bytes", i, q,
                        AC__ETCD_MAX_URL);
    size_t at = strncmp(url, "http://", 7) == 0 ? 7 : strncmp(url, "https://", 8) == 0 ? 8 : 0;
    if (at == 0)
        return ac__fail(AC_EINVAL, "etcd endpoint %zu %s: must start with http:// or https://",
                        i, q);
    size_t h = host_len(url + at);
    if (h == 0)
        return ac__fail(AC_EINVAL, "etcd endpoint %zu %s: no host after the scheme "
                        "(a name, an IPv4 address or an IPv6 one in brackets)", i, q);
    at += h;
    if (url[at] == ':') {
        size_t p = ac__port_len(url + at + 1);
        if (p == 0)
            return ac__fail(AC_EINVAL, "etcd endpoint %zu %s: the port must be 1 to 65535",
                            i, q);
        at += 1 + p;
    }
    *len = at;
    if (url[at] == '/' && url[at + 1] == '\0')
        return AC_OK;
    if (url[at] != '\0')
        return ac__fail(AC_EINVAL, "etcd endpoint %zu %s: unexpected '%c' at offset %zu; "
                        "an endpoint is scheme://host[:port], with no user, path or query",
                        i, q, url[at], at);
    return AC_OK;
}

static void free_client(ac__etcd *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->endpoint[i]);
    free(e);
}

ac__etcd *ac__etcd_open(const char *const *endpoints, size_t n, const ac__etcd_options *o)
{
    ac_clear_error();
    if (n == 0 || n > AC__ETCD_MAX_ENDPOINTS)
        return ac__fail_null(AC_EINVAL, "etcd: %zu endpoints given; 1 to %d are accepted", n,
                             AC__ETCD_MAX_ENDPOINTS);
    if (!endpoints)
        return ac__fail_null(AC_EINVAL, "etcd: the endpoint list is NULL (n = %zu)", n);
    ac__etcd_options opts;
    if (check_options(o, &opts) != AC_OK)
        return NULL;
    size_t len[AC__ETCD_MAX_ENDPOINTS];
    for (size_t i = 0; i < n; i++)
        if (check_endpoint(endpoints[i], i, &len[i]) != AC_OK)
            return NULL;
    if (ac__etcd_http_init() != AC_OK)
        return NULL;
    ac__etcd *e = ac__calloc(1, sizeof *e);
    if (!e)
        return ac__fail_null(AC_ENOMEM, "etcd: no memory for a client");
    e->o = opts;
    atomic_init(&e->preferred, 0);
    atomic_init(&e->users, 0);
    for (; e->n < n; e->n++) {
        e->endpoint[e->n] = ac__malloc(len[e->n] + 1);
        if (!e->endpoint[e->n]) {
            size_t i = e->n;
            free_client(e);
            return ac__fail_null(AC_ENOMEM, "etcd: no memory for endpoint %zu", i);
        }
        memcpy(e->endpoint[e->n], endpoints[e->n], len[e->n]);
        e->endpoint[e->n][len[e->n]] = '\0';
    }
    return e;
}

ac_status ac__etcd_close(ac__etcd *e)
{
    if (!e)
        return AC_OK;
    int users = atomic_load_explicit(&e->users, memory_order_relaxed);
    if (users > 0)
        return ac__fail(AC_EINVAL, "etcd: close: %d keepers or watchers still run on this "
                        "client; unregister and stop them first", users);
    free_client(e);
    return AC_OK;
}

/* ---- leases ------------------------------------------------------------------ */

/* A lease id argument: etcd's are positive. */
static ac_status check_lease(int64_t id, bool zero_ok, const char *what, ac__etcd_err *err)
{
    if (id > 0 || (zero_ok && id == 0))
        return AC_OK;
    return ac__etcd_errf(err, AC_EINVAL, "%s: lease id %lld is not one etcd grants (> 0)%s",
                         what, (long long)id, zero_ok ? ", nor 0 for none" : "");
}

/* An answer's member as int64, or AC_EPROTO naming it. */
static ac_status read_i64(json_t *obj, const char *name, int64_t *out, const char *what,
                          ac__etcd_err *err)
{
    if (ac__etcd_json_i64(obj, name, out))
        return AC_OK;
    return ac__etcd_errf(err, AC_EPROTO, "%s: the answer's \"%s\" is not an integer", what,
                         name);
}

/* The error string of a lease answer (LeaseGrantResponse.error). */
static ac_status lease_error(json_t *reply, const char *what, ac__etcd_err *err)
{
    const char *e = json_string_value(json_object_get(reply, "error"));
    if (e && *e)
        return ac__etcd_errf(err, AC_EFAILED, "%s: etcd refused it: %s", what, e);
    return AC_OK;
}

ac_status ac__etcd_grant_in(ac__etcd *e, ac__etcd_stop *stop, int64_t ttl_s, int64_t *lease_id,
                            int64_t *granted_ttl_s, ac__etcd_err *err)
{
    const char *what = "etcd lease grant";
    if (!e || !lease_id)
        return ac__etcd_errf(err, AC_EINVAL, "%s: %s is NULL", what, !e ? "the client"
                                                                         : "lease_id");
    if (ttl_s < 1 || ttl_s > AC__ETCD_MAX_TTL)
        return ac__etcd_errf(err, AC_EINVAL, "%s: TTL %lld s is not 1 to %lld", what,
                             (long long)ttl_s, (long long)AC__ETCD_MAX_TTL);
    json_t *body = json_object(), *reply;
    if (body && !ac__etcd_json_set_i64(body, "TTL", ttl_s)) {
        json_decref(body);
        body = NULL;
    }
    ac_status st = ac__etcd_call(e, stop, what, "/v3/lease/grant", body, &reply, err);
    if (st != AC_OK)
        return st;
    int64_t id = 0, ttl = 0;
    st = lease_error(reply, what, err);
    if (st == AC_OK)
        st = read_i64(reply, "ID", &id, what, err);
    if (st == AC_OK)
        st = read_i64(reply, "TTL", &ttl, what, err);
    if (st == AC_OK && (id <= 0 || ttl <= 0))
        st = ac__etcd_errf(err, AC_EPROTO, "%s: the answer has no lease (ID %lld, TTL %lld)",
                           what, (long long)id, (long long)ttl);
    json_decref(reply);
    if (st != AC_OK)
        return st;
    *lease_id = id;
    if (granted_ttl_s)
        *granted_ttl_s = ttl;
    return AC_OK;
}

/* A body of one member, "ID": lease_id; NULL for want of memory. */
static json_t *lease_body(int64_t lease_id)
{
    json_t *body = json_object();
    if (body && !ac__etcd_json_set_i64(body, "ID", lease_id)) {
        json_decref(body);
        body = NULL;
    }
    return body;
}

ac_status ac__etcd_keepalive_in(ac__etcd *e, ac__etcd_stop *stop, int64_t lease_id,
                                int64_t *ttl_left_s, ac__etcd_err *err)
{
    char what[64];
    snprintf(what, sizeof what, "etcd keep-alive of lease %lld", (long long)lease_id);
    if (!e)
        return ac__etcd_errf(err, AC_EINVAL, "%s: the client is NULL", what);
    ac_status st = check_lease(lease_id, false, what, err);
    json_t *reply;
    if (st == AC_OK)
        st = ac__etcd_call(e, stop, what, "/v3/lease/keepalive", lease_body(lease_id), &reply,
                           err);
    if (st != AC_OK)
        return st;
    /* A stream's single message: {"result": {...}} or {"error": {...}}. */
    st = ac__etcd_stream_error(reply, what, err);
    json_t *result = json_object_get(reply, "result");
    int64_t ttl = 0;
    if (st == AC_OK && !json_is_object(result))
        st = ac__etcd_errf(err, AC_EPROTO, "%s: the answer has no \"result\"", what);
    if (st == AC_OK)
        st = read_i64(result, "TTL", &ttl, what, err);
    if (st == AC_OK && ttl <= 0) /* how the gateway says it does not know the lease */
        st = ac__etcd_errf(err, AC_ENOTFOUND, "%s: etcd no longer has the lease "
                           "(it expired or was revoked)", what);
    json_decref(reply);
    if (st == AC_OK && ttl_left_s)
        *ttl_left_s = ttl;
    return st;
}

ac_status ac__etcd_revoke_in(ac__etcd *e, ac__etcd_stop *stop, int64_t lease_id,
                             ac__etcd_err *err)
{
    char what[64];
    snprintf(what, sizeof what, "etcd revoke of lease %lld", (long long)lease_id);
    if (!e)
        return ac__etcd_errf(err, AC_EINVAL, "%s: the client is NULL", what);
    ac_status st = check_lease(lease_id, false, what, err);
    json_t *reply = NULL;
    if (st == AC_OK)
        st = ac__etcd_call(e, stop, what, "/v3/lease/revoke", lease_body(lease_id), &reply, err);
    json_decref(reply);
    return st;
}

/* ---- keys ------------------------------------------------------------------- */

/* "etcd <verb> '<key>'" for messages. */
static const char *name_call(char *buf, size_t cap, const char *verb, const char *key)
{
    char q[72];
    snprintf(buf, cap, "etcd %s %s", verb, key ? ac__etcd_quote(key, strlen(key), q, sizeof q)
                                               : "(NULL)");
    return buf;
}

ac_status ac__etcd_put_in(ac__etcd *e, ac__etcd_stop *stop, const char *key, const void *value,
                          size_t value_len, int64_t lease_id, ac__etcd_err *err)
{
    char what[96];
    name_call(what, sizeof what, "put", key);
    if (!e)
        return ac__etcd_errf(err, AC_EINVAL, "%s: the client is NULL", what);
    ac_status st = ac__etcd_check_key(key, false, what, err);
    if (st == AC_OK && !value && value_len > 0)
        st = ac__etcd_errf(err, AC_EINVAL, "%s: the value is NULL but %zu bytes long", what,
                           value_len);
    if (st == AC_OK)
        st = check_lease(lease_id, true, what, err);
    if (st != AC_OK)
        return st;
    json_t *body = json_object(), *reply;
    if (body && !(ac__etcd_json_set_bytes(body, "key", key, strlen(key)) &&
                  ac__etcd_json_set_bytes(body, "value", value, value_len) &&
                  (lease_id == 0 || ac__etcd_json_set_i64(body, "lease", lease_id)))) {
        json_decref(body);
        body = NULL;
    }
    st = ac__etcd_call(e, stop, what, "/v3/kv/put", body, &reply, err);
    json_decref(reply);
    return st;
}

static ac_status delete_in(ac__etcd *e, const char *key, int64_t *deleted, ac__etcd_err *err)
{
    char what[96];
    name_call(what, sizeof what, "delete", key);
    if (!e)
        return ac__etcd_errf(err, AC_EINVAL, "%s: the client is NULL", what);
    ac_status st = ac__etcd_check_key(key, false, what, err);
    if (st != AC_OK)
        return st;
    json_t *body = json_object(), *reply;
    if (body && !ac__etcd_json_set_bytes(body, "key", key, strlen(key))) {
        json_decref(body);
        body = NULL;
    }
    st = ac__etcd_call(e, NULL, what, "/v3/kv/deleterange", body, &reply, err);
    if (st != AC_OK)
        return st;
    int64_t n = 0;
    st = read_i64(reply, "deleted", &n, what, err);
    json_decref(reply);
    if (st == AC_OK && deleted)
        *deleted = n;
    return st;
}

void ac__etcd_kvs_fini(ac__etcd_kvs *kvs)
{
    if (!kvs)
        return;
    for (size_t i = 0; i < kvs->count; i++) {
        free(kvs->kv[i].key);
        free(kvs->kv[i].value);
    }
    free(kvs->kv);
    *kvs = (ac__etcd_kvs){0};
}

/* One element of a range answer's "kvs". */
static ac_status read_kv(json_t *item, ac__etcd_kv *kv, const char *what, ac__etcd_err *err)
{
    if (!json_is_object(item))
        return ac__etcd_errf(err, AC_EPROTO, "%s: an element of \"kvs\" is not an object",
                             what);
    ac_status st = ac__etcd_json_bytes(item, "key", &kv->key, &kv->key_len, what, err);
    if (st == AC_OK)
        st = ac__etcd_json_bytes(item, "value", &kv->value, &kv->value_len, what, err);
    if (st == AC_OK)
        st = read_i64(item, "mod_revision", &kv->mod_revision, what, err);
    if (st == AC_OK)
        st = read_i64(item, "lease", &kv->lease, what, err);
    return st;
}

static int kv_order(const void *a, const void *b)
{
    const ac__etcd_kv *x = a, *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static ac_status read_range(json_t *reply, ac__etcd_kvs *out, const char *what,
                            ac__etcd_err *err)
{
    ac_status st = read_i64(json_object_get(reply, "header"), "revision", &out->revision, what,
                            err);
    json_t *kvs = json_object_get(reply, "kvs");
    if (st == AC_OK && kvs && !json_is_array(kvs))
        st = ac__etcd_errf(err, AC_EPROTO, "%s: the answer's \"kvs\" is not an array", what);
    size_t n = st == AC_OK ? json_array_size(kvs) : 0;
    if (n > 0) {
        out->kv = ac__calloc(n, sizeof *out->kv);
        if (!out->kv)
            return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for %zu keys", what, n);
    }
    for (size_t i = 0; i < n && st == AC_OK; i++, out->count++)
        st = read_kv(json_array_get(kvs, i), &out->kv[i], what, err);
    if (st == AC_OK && out->count > 1)
        qsort(out->kv, out->count, sizeof *out->kv, kv_order);
    return st;
}

ac_status ac__etcd_get_prefix_in(ac__etcd *e, ac__etcd_stop *stop, const char *prefix,
                                 ac__etcd_kvs *out, ac__etcd_err *err)
{
    char what[96];
    name_call(what, sizeof what, "get of prefix", prefix);
    if (out)
        *out = (ac__etcd_kvs){0};
    if (!e || !out)
        return ac__etcd_errf(err, AC_EINVAL, "%s: %s is NULL", what, !e ? "the client" : "out");
    ac_status st = ac__etcd_check_key(prefix, true, what, err);
    if (st != AC_OK)
        return st;
    json_t *body = json_object(), *reply;
    if (body && !ac__etcd_json_set_prefix(body, prefix, strlen(prefix))) {
        json_decref(body);
        body = NULL;
    }
    st = ac__etcd_call(e, stop, what, "/v3/kv/range", body, &reply, err);
    if (st != AC_OK)
        return st;
    st = read_range(reply, out, what, err);
    json_decref(reply);
    if (st != AC_OK)
        ac__etcd_kvs_fini(out);
    return st;
}

/* ---- the public forms ------------------------------------------------------- */

/* The status of an `_in` call, its failure recorded as the last error. */
static ac_status record(ac_status st, const ac__etcd_err *err)
{
    return st == AC_OK ? AC_OK : ac__fail(st, "%s", err->msg);
}

ac_status ac__etcd_lease_grant(ac__etcd *e, int64_t ttl_s, int64_t *lease_id,
                               int64_t *granted_ttl_s)
{
    ac__etcd_err err;
    return record(ac__etcd_grant_in(e, NULL, ttl_s, lease_id, granted_ttl_s, &err), &err);
}

ac_status ac__etcd_lease_keepalive_once(ac__etcd *e, int64_t lease_id, int64_t *ttl_left_s)
{
    ac__etcd_err err;
    return record(ac__etcd_keepalive_in(e, NULL, lease_id, ttl_left_s, &err), &err);
}

ac_status ac__etcd_lease_revoke(ac__etcd *e, int64_t lease_id)
{
    ac__etcd_err err;
    return record(ac__etcd_revoke_in(e, NULL, lease_id, &err), &err);
}

ac_status ac__etcd_put(ac__etcd *e, const char *key, const void *value, size_t value_len,
                       int64_t lease_id)
{
    ac__etcd_err err;
    return record(ac__etcd_put_in(e, NULL, key, value, value_len, lease_id, &err), &err);
}

ac_status ac__etcd_delete(ac__etcd *e, const char *key, int64_t *deleted)
{
    ac__etcd_err err;
    return record(delete_in(e, key, deleted, &err), &err);
}

ac_status ac__etcd_get_prefix(ac__etcd *e, const char *prefix, ac__etcd_kvs *out)
{
    ac__etcd_err err;
    return record(ac__etcd_get_prefix_in(e, NULL, prefix, out, &err), &err);
}
