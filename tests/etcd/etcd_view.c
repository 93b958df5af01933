/*
 * A watcher's view, for the tests. See etcd_view.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "etcd_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ev_view *ev_view_new(void)
{
    ev_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    pthread_mutex_init(&v->mu, NULL);
    v->rec = ts_rec_new();
    return v;
}

void ev_view_free(ev_view *v)
{
    if (!v)
        return;
    ts_rec_free(v->rec);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

static long find(ev_view *v, const char *key, size_t len)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i].key_len == len && memcmp(v->items[i].key, key, len) == 0)
            return (long)i;
    return -1;
}

void ev_noop(const ac__etcd_event *event, void *user)
{
    (void)event;
    (void)user;
}

void ev_on_event(const ac__etcd_event *ev, void *user)
{
    ev_view *v = user;
    if (ev->key_len >= EV_MAX_BYTES || ev->value_len >= EV_MAX_BYTES) {
        atomic_fetch_add(&v->anomalies, 1);
        return;
    }
    pthread_mutex_lock(&v->mu);
    long at = find(v, ev->key, ev->key_len);
    if (ev->kind == AC__ETCD_PUT) {
        if (at < 0 && v->n < EV_MAX_KEYS)
            at = (long)v->n++;
        if (at >= 0) {
            ev_item *it = &v->items[at];
            memcpy(it->key, ev->key, ev->key_len);
            it->key[ev->key_len] = '\0';
            it->key_len = ev->key_len;
            memcpy(it->value, ev->value, ev->value_len);
            it->value[ev->value_len] = '\0';
            it->value_len = ev->value_len;
        }
        atomic_fetch_add(&v->puts, 1);
    } else {
        if (at < 0 || ev->value != NULL)
            atomic_fetch_add(&v->anomalies, 1);
        if (at >= 0)
            v->items[at] = v->items[--v->n];
        atomic_fetch_add(&v->deletes, 1);
    }
    /* Recorded before the lock goes: a test that saw the view change
     * (ev_wait_has, ev_wait_gone) finds the event in the record too. */
    if (ev->kind == AC__ETCD_PUT)
        ts_rec_add(v->rec, "PUT %.40s=%.40s", ev->key, ev->value);
    else
        ts_rec_add(v->rec, "DELETE %.40s", ev->key);
    pthread_mutex_unlock(&v->mu);
}

bool ev_has(ev_view *v, const char *key, const char *value)
{
    pthread_mutex_lock(&v->mu);
    long at = find(v, key, strlen(key));
    bool ok = at >= 0 && (!value || (v->items[at].value_len == strlen(value) &&
                                     memcmp(v->items[at].value, value, strlen(value)) == 0));
    pthread_mutex_unlock(&v->mu);
    return ok;
}

size_t ev_count(ev_view *v)
{
    pthread_mutex_lock(&v->mu);
    size_t n = v->n;
    pthread_mutex_unlock(&v->mu);
    return n;
}

bool ev_wait_has(ev_view *v, const char *key, const char *value, double timeout_s)
{
    double end = ts_now() + timeout_s;
    while (!ev_has(v, key, value)) {
        if (ts_now() > end)
            return false;
        ts_sleep_ms(10);
    }
    return true;
}

bool ev_wait_gone(ev_view *v, const char *key, double timeout_s)
{
    double end = ts_now() + timeout_s;
    while (ev_has(v, key, NULL)) {
        if (ts_now() > end)
            return false;
        ts_sleep_ms(10);
    }
    return true;
}

bool ev_matches(ev_view *v, ac__etcd *e, const char *prefix)
{
    ac__etcd_kvs kvs;
    if (ac__etcd_get_prefix(e, prefix, &kvs) != AC_OK)
        return false;
    pthread_mutex_lock(&v->mu);
    bool ok = kvs.count == v->n;
    for (size_t i = 0; ok && i < kvs.count; i++) {
        long at = find(v, kvs.kv[i].key, kvs.kv[i].key_len);
        ok = at >= 0 && v->items[at].value_len == kvs.kv[i].value_len &&
             memcmp(v->items[at].value, kvs.kv[i].value, kvs.kv[i].value_len) == 0;
    }
    pthread_mutex_unlock(&v->mu);
    ac__etcd_kvs_fini(&kvs);
    return ok;
}

bool ev_wait_matches(ev_view *v, ac__etcd *e, const char *prefix, double timeout_s)
{
    double end = ts_now() + timeout_s;
    while (!ev_matches(v, e, prefix)) {
        if (ts_now() > end)
            return false;
        ts_sleep_ms(20);
    }
    return true;
}

bool ev_etcd_has(ac__etcd *e, const char *key, char *value, size_t cap)
{
    ac__etcd_kvs kvs;
    if (ac__etcd_get_prefix(e, key, &kvs) != AC_OK)
        return false;
    bool found = false;
    for (size_t i = 0; i < kvs.count && !found; i++) {
        if (strcmp(kvs.kv[i].key, key) != 0)
            continue;
        found = true;
        if (value && cap)
            snprintf(value, cap, "%s", kvs.kv[i].value);
    }
    ac__etcd_kvs_fini(&kvs);
    return found;
}
