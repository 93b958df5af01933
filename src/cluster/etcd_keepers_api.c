/*
 * Keepers of many keys, the calls: start the thread, add keys, read
 * their state, stop it and revoke every lease. The thread and the
 * design are in etcd_keepers.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd_keepers_internal.h"
#include "core/alloc.h"
#include "core/clock.h"

/* ---- the API ------------------------------------------------------------------ */

static void entry_free(ac__etcd_kept *x)
{
    if (!x)
        return;
    free(x->key);
    free(x->value);
    free(x);
}

static void keepers_free(ac__etcd_keepers *k)
{
    for (size_t i = 0; i < k->n; i++)
        entry_free(k->all[i]);
    free(k->all);
    free(k->inbox);
    free(k->heap);
    free(k->todo);
    free(k->body);
    free(k);
}

ac_status ac__etcd_keepers_start(ac__etcd *e, ac__etcd_keepers **out)
{
    if (!e || !out)
        return ac__fail(AC_EINVAL, "etcd keepers: %s is NULL", !e ? "the client" : "out");
    *out = NULL;
    ac__etcd_keepers *k = ac__calloc(1, sizeof *k);
    if (k)
        k->body = ac__malloc(BATCH_MAX * 40 + 1);
    if (!k || !k->body) {
        if (k)
            keepers_free(k);
        return ac__fail(AC_ENOMEM, "etcd keepers: no memory");
    }
    k->e = e;
    k->rng = (uint64_t)(uintptr_t)k ^ ac__now_ns();
    k->rng = k->rng ? k->rng : 0x9E3779B97F4A7C15ull;
    k->r_rng = k->rng * 0x2545F4914F6CDD1Dull;
    k->r_rng = k->r_rng ? k->r_rng : 0x9E3779B97F4A7C15ull;
    ac_status st = ac__etcd_session_init(&k->session);
    if (st == AC_OK && (st = ac__etcd_session_init(&k->r_session)) != AC_OK)
        ac__etcd_session_fini(&k->session);
    if (st == AC_OK) {
        st = ac__etcd_thread_start(&k->t, e, ac__etcd_keepers_main, k, "etcd keepers",
                                   "the keepers'");
        if (st == AC_OK &&
            (st = ac__etcd_thread_start(&k->r, e, ac__etcd_registrar_main, k, "etcd keepers",
                                        "the registrar's")) != AC_OK) {
            ac__etcd_thread_join(&k->t);
            ac__etcd_thread_fini(&k->t, e);
        }
        if (st != AC_OK) {
            ac__etcd_session_fini(&k->session);
            ac__etcd_session_fini(&k->r_session);
        }
    }
    if (st != AC_OK) {
        keepers_free(k);
        return st;
    }
    *out = k;
    return AC_OK;
}

/* An entry with copies of key and value. */
static ac__etcd_kept *entry_new(ac__etcd_keepers *k, const char *key, const void *value,
                        size_t value_len, int64_t ttl_s)
{
    ac__etcd_kept *x = ac__calloc(1, sizeof *x);
    size_t key_len = strlen(key);
    if (x)
        x->key = ac__malloc(key_len + 1);
    if (x && x->key)
        x->value = ac__malloc(value_len + 1);
    if (!x || !x->key || !x->value) {
        entry_free(x);
        return ac__fail_null(AC_ENOMEM, "etcd keepers add: no memory for a %zu-byte key and "
                             "a %zu-byte value", key_len, value_len);
    }
    memcpy(x->key, key, key_len + 1);
    if (value_len)
        memcpy(x->value, value, value_len);
    x->value[value_len] = '\0';
    x->value_len = value_len;
    x->ttl_s = ttl_s;
    char q[72];
    snprintf(x->what, sizeof x->what, "register %s", ac__etcd_quote(key, key_len, q, sizeof q));
    x->info.state = AC__ETCD_REG_STARTING;
    snprintf(x->info.why, sizeof x->info.why, "registering");
    ac__etcd_backoff_init(&x->backoff, &k->e->o);
    return x;
}

/* Grow an array of entries to cap; false when there is no memory. */
static bool grow(ac__etcd_kept ***a, size_t cap)
{
    ac__etcd_kept **b = ac__realloc(*a, cap * sizeof *b);
    if (b)
        *a = b;
    return b != NULL;
}

/* x in the list of every entry and the registrar's; its number in *id. */
static bool append_entry(ac__etcd_keepers *k, ac__etcd_kept *x, size_t *id)
{
    pthread_mutex_lock(&k->t.lock);
    bool ok = k->n < k->cap;
    if (!ok) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        ok = grow(&k->all, cap) && grow(&k->todo, cap) && grow(&k->inbox, cap);
        if (ok)
            k->cap = cap;
    }
    if (ok) {
        *id = k->n;
        k->all[k->n++] = x;
        k->todo[k->todo_n++] = x;
    }
    pthread_mutex_unlock(&k->t.lock);
    return ok;
}

ac_status ac__etcd_keepers_add(ac__etcd_keepers *k, const char *key, const void *value,
                               size_t value_len, int64_t ttl_s, size_t *id)
{
    ac__etcd_err err;
    if (!k || !id)
        return ac__fail(AC_EINVAL, "etcd keepers add: %s is NULL", !k ? "the keepers" : "id");
    if (ac__etcd_check_key(key, false, "etcd keepers add", &err) != AC_OK)
        return ac__fail(AC_EINVAL, "%s", err.msg);
    if (!value && value_len > 0)
        return ac__fail(AC_EINVAL, "etcd keepers add: the value is NULL but %zu bytes long",
                        value_len);
    if (ttl_s < 1 || ttl_s > AC__ETCD_MAX_TTL)
        return ac__fail(AC_EINVAL, "etcd keepers add: TTL %lld s is not 1 to %lld",
                        (long long)ttl_s, (long long)AC__ETCD_MAX_TTL);
    ac__etcd_kept *x = entry_new(k, key, value, value_len, ttl_s);
    if (!x)
        return AC_ENOMEM;
    if (!append_entry(k, x, id)) {
        entry_free(x);
        return ac__fail(AC_ENOMEM, "etcd keepers add: no memory for the list of keys");
    }
    pthread_mutex_lock(&k->r.stop.lock); /* wake the registrar */
    k->r_kicked = true;
    pthread_cond_broadcast(&k->r.stop.cond);
    pthread_mutex_unlock(&k->r.stop.lock);
    return AC_OK;
}

ac_status ac__etcd_keepers_status(ac__etcd_keepers *k, size_t id, ac__etcd_reg_info *info)
{
    if (!k || !info)
        return ac__fail(AC_EINVAL, "etcd keepers status: %s is NULL", !k ? "the keepers" : "info");
    pthread_mutex_lock(&k->t.lock);
    bool known = id < k->n;
    if (known)
        *info = k->all[id]->info;
    pthread_mutex_unlock(&k->t.lock);
    return known ? AC_OK : ac__fail(AC_EINVAL, "etcd keepers status: no key %zu", id);
}

ac_status ac__etcd_keepers_counts(ac__etcd_keepers *k, ac__etcd_keepers_stats *out)
{
    if (!k || !out)
        return ac__fail(AC_EINVAL, "etcd keepers counts: %s is NULL", !k ? "the keepers" : "out");
    pthread_mutex_lock(&k->t.lock);
    *out = k->stats;
    out->keys = k->n;
    pthread_mutex_unlock(&k->t.lock);
    return AC_OK;
}

ac_status ac__etcd_keepers_stop(ac__etcd_keepers *k)
{
    if (!k)
        return AC_OK;
    if (pthread_equal(pthread_self(), k->t.thread) || pthread_equal(pthread_self(), k->r.thread))
        return ac__fail(AC_EINVAL, "etcd keepers stop: called from a thread of the keepers' "
                        "own (an on_retry callback); call it from another thread");
    ac__etcd_thread_join(&k->r);
    ac__etcd_thread_join(&k->t);
    /* The revokes over the thread's connection, with no stop signal. */
    ac__etcd_stop quiet;
    ac_status st = ac__etcd_stop_init(&quiet);
    quiet.session = &k->session;
    ac__etcd_err err, first = {{0}};
    ac_status failed_st = AC_OK;
    for (size_t i = 0; st == AC_OK && i < k->n; i++) {
        if (k->all[i]->lease == 0)
            continue;
        ac_status r = ac__etcd_revoke_in(k->e, &quiet, k->all[i]->lease, &err);
        if (r != AC_OK && r != AC_ENOTFOUND && failed_st == AC_OK) {
            failed_st = r;
            first = err;
        }
    }
    if (st == AC_OK)
        ac__etcd_stop_fini(&quiet);
    ac__etcd_session_fini(&k->session);
    ac__etcd_session_fini(&k->r_session);
    ac__etcd_thread_fini(&k->r, k->e);
    ac__etcd_thread_fini(&k->t, k->e);
    keepers_free(k);
    if (st != AC_OK)
        return st;
    return failed_st == AC_OK ? AC_OK : ac__fail(failed_st, "%s", first.msg);
}
