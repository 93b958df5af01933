/*
 * The etcd provider: this node's registration and a watch of the
 * cluster's members, over the etcd client (etcd.h).
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
 * The keeper's and the watcher's threads call in here: a key is turned
 * into a card (the same as a beat carries) and posted to the actor, a
 * retry is counted in the cluster's status. The actor's timer reads
 * their state to say JOINED (both well) or RETRYING.
 *
 * Without ACTORC_WITH_ETCD this file offers only refusals.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

#ifdef ACTORC_CLUSTER_HAVE_ETCD

#include <jansson.h>

#include "cluster/etcd.h"

struct ac__cluster_etcd {
    ac__etcd *client;
    ac__etcd_reg *reg;     /* under the cluster's lock: cleared at stop */
    ac__etcd_watch *watch; /* as reg */
    char *members;         /* "<prefix>/<cluster>/members/" */
};

/* ---- values --------------------------------------------------------------- */

static char *value_json(const ac_cluster *c)
{
    char inc[17];
    snprintf(inc, sizeof inc, "%016" PRIx64, c->card.incarnation);
    json_t *roles = json_array();
    for (size_t i = 0; roles && i < c->roles_count; i++)
        json_array_append_new(roles, json_string(c->roles[i]));
    json_t *v = roles ? json_pack("{s:s, s:s, s:s, s:o}", "system", c->card.system, "address",
                                  c->card.address, "incarnation", inc, "roles", roles)
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
static bool parse_node_id(const ac__cluster_etcd *e, const char *key, char *address,
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
    return ac__cluster_address_ok(address);
}

/* The card a member's value stands for; false when it is malformed or
 * does not match its key. */
static bool card_of_value(const ac_cluster *c, const char *value, size_t len,
                          const char *address, uint64_t incarnation, ac__card *card)
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
    if (ok) {
        memset(card, 0, sizeof *card);
        snprintf(card->cluster, sizeof card->cluster, "%s", c->name);
        snprintf(card->system, sizeof card->system, "%s", system);
        snprintf(card->address, sizeof card->address, "%s", address);
        card->incarnation = incarnation;
        for (size_t i = 0; ok && i < json_array_size(roles); i++) {
            const char *r = json_string_value(json_array_get(roles, i));
            ok = r && ac__cluster_name_ok(r);
            if (ok)
                snprintf(card->roles[card->roles_count++], sizeof card->roles[0], "%s", r);
        }
        for (const char *p = system; ok && *p; p++)
            ok = (unsigned char)*p >= ' ' && *p != 0x7f;
    }
    json_decref(v);
    return ok;
}

/* ---- the threads' callbacks ------------------------------------------------ */

static void on_event(const ac__etcd_event *ev, void *user)
{
    ac_cluster *c = user;
    char address[256];
    uint64_t inc;
    if (!parse_node_id(c->etcd, ev->key, address, sizeof address, &inc)) {
        ac_system_log(c->system, AC_LOG_DEBUG, "cluster %s: ignored etcd key %.200s", c->name,
                      ev->key);
        return;
    }
    if (ev->kind == AC__ETCD_DELETE) {
        ac__cluster_tell_actor(
            c, ac__note_new(AC__NOTE_KEY_DELETE, NULL, address, inc, NULL, NULL, 0, ev->key));
        return;
    }
    ac__card card;
    if (!card_of_value(c, ev->value, ev->value_len, address, inc, &card)) {
        ac_system_log(c->system, AC_LOG_WARN, "cluster %s: etcd key %.200s holds no member "
                                              "(ignored)", c->name, ev->key);
        return;
    }
    size_t len;
    char *text = ac__card_encode(&card, &len);
    if (text)
        ac__cluster_tell_actor(c, ac__note_new(AC__NOTE_KEY_PUT, card.system, address, inc,
                                               NULL, text, len, ev->key));
    free(text);
}

static void on_retry(const ac__etcd_retry *r, void *user)
{
    ac_cluster *c = user;
    ac__cluster_provider_failed(c, true, "etcd: %s: %s", r->what, r->message);
    ac_system_log(c->system, r->attempt == 1 || r->attempt % 10 == 0 ? AC_LOG_WARN : AC_LOG_DEBUG,
                  "cluster %s: etcd: %s failed (%s), attempt %" PRIu64 "; again in %" PRIu64
                  " ms",
                  c->name, r->what, r->message, r->attempt, r->delay_ms);
}

/* ---- start, poll, stop ---------------------------------------------------------- */

static void etcd_free(ac__cluster_etcd *e)
{
    if (!e)
        return;
    ac__etcd_close(e->client);
    free(e->members);
    free(e);
}

ac_status ac__cluster_etcd_start(ac_cluster *c)
{
    ac__cluster_etcd *e = ac__calloc(1, sizeof *e);
    if (!e)
        return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
    ac__etcd_options o = {.request_timeout_ms = 1000,
                          .connect_timeout_ms = 500,
                          .backoff_initial_ms = (uint32_t)c->retry_initial_ms,
                          .backoff_max_ms = (uint32_t)c->retry_max_ms,
                          .on_retry = on_retry,
                          .user = c};
    size_t mlen = strlen(c->prefix) + strlen(c->name) + 16;
    char key[600];
    char *value = NULL;
    e->members = ac__malloc(mlen);
    e->client = ac__etcd_open((const char *const *)c->endpoints, c->endpoints_count, &o);
    if (!e->members || !e->client)
        goto fail;
    snprintf(e->members, mlen, "%s/%s/members/", c->prefix, c->name);
    snprintf(key, sizeof key, "%s%s-%016" PRIx64, e->members, c->card.address,
             c->card.incarnation);
    if (!(value = value_json(c))) {
        ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
        goto fail;
    }
    c->etcd = e; /* before the threads start: their callbacks read it */
    ac__etcd_reg *reg = NULL;
    ac__etcd_watch *watch = NULL;
    if (ac__etcd_register(e->client, key, value, strlen(value), c->lease_ttl_s, &reg) != AC_OK)
        goto fail_started;
    if (ac__etcd_watch_prefix(e->client, e->members, on_event, c, &watch) != AC_OK) {
        ac__etcd_unregister(reg);
        goto fail_started;
    }
    pthread_mutex_lock(&c->lock);
    e->reg = reg;
    e->watch = watch;
    pthread_mutex_unlock(&c->lock);
    free(value);
    return AC_OK;
fail_started:
    c->etcd = NULL;
fail: {
    ac_status st = ac_last_status() != AC_OK ? ac_last_status() : AC_ENOMEM;
    char why[256];
    snprintf(why, sizeof why, "%s", ac_last_error());
    free(value);
    etcd_free(e);
    return ac_set_error(st, "ac_cluster_join: etcd: %s", why);
}
}

void ac__cluster_etcd_poll(ac_cluster *c)
{
    ac__cluster_etcd *e = c->etcd;
    if (!e)
        return;
    ac__etcd_reg_info ri;
    ac__etcd_watch_info wi;
    bool ok = false;
    pthread_mutex_lock(&c->lock);
    if (e->reg && e->watch && ac__etcd_reg_status(e->reg, &ri) == AC_OK &&
        ac__etcd_watch_status(e->watch, &wi) == AC_OK)
        ok = ri.state == AC__ETCD_REG_REGISTERED && wi.state == AC__ETCD_WATCH_WATCHING;
    pthread_mutex_unlock(&c->lock);
    if (ok)
        ac__cluster_provider_ok(c);
}

void ac__cluster_etcd_stop(ac_cluster *c)
{
    ac__cluster_etcd *e = c->etcd;
    if (!e)
        return;
    pthread_mutex_lock(&c->lock);
    ac__etcd_reg *reg = e->reg;
    ac__etcd_watch *watch = e->watch;
    e->reg = NULL;
    e->watch = NULL;
    pthread_mutex_unlock(&c->lock);
    /* Outside the lock: the watcher's callback takes it. */
    ac__etcd_watch_stop(watch);
    ac__etcd_unregister(reg);
}

void ac__cluster_etcd_free(ac_cluster *c)
{
    etcd_free(c->etcd);
    c->etcd = NULL;
}

#else /* no etcd */

ac_status ac__cluster_etcd_start(ac_cluster *c)
{
    (void)c;
    return ac__fail(AC_EINVAL, "ac_cluster_join: this actorc was built without etcd "
                               "(ACTORC_WITH_ETCD)");
}

void ac__cluster_etcd_poll(ac_cluster *c) { (void)c; }
void ac__cluster_etcd_stop(ac_cluster *c) { (void)c; }
void ac__cluster_etcd_free(ac_cluster *c) { (void)c; }

#endif
