/*
 * What a watcher told: the keys it reported and their values, kept as
 * on_event saw them, and the events in order ("PUT key=value", "DELETE
 * key"; short keys only). The test thread compares it with etcd.
 */
#ifndef ACTORC_ETCD_VIEW_H
#define ACTORC_ETCD_VIEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "cluster/etcd.h"
#include "test_support.h"

#define EV_MAX_KEYS 256
#define EV_MAX_BYTES 512

typedef struct ev_item {
    char key[EV_MAX_BYTES];
    size_t key_len;
    char value[EV_MAX_BYTES];
    size_t value_len;
} ev_item;

typedef struct ev_view {
    pthread_mutex_t mu;
    size_t n;
    ev_item items[EV_MAX_KEYS];
    ts_recorder *rec;
    atomic_llong puts, deletes;
    atomic_int anomalies; /* a DELETE of a key not there, or too long a key */
} ev_view;

ev_view *ev_view_new(void);
void ev_view_free(ev_view *v);
/* An ac__etcd_event_fn that ignores the event. */
void ev_noop(const ac__etcd_event *event, void *user);
/* An ac__etcd_event_fn; user is the view. */
void ev_on_event(const ac__etcd_event *event, void *user);

/* Does the view hold key (with this value, unless value is NULL)? */
bool ev_has(ev_view *v, const char *key, const char *value);
size_t ev_count(ev_view *v);
bool ev_wait_has(ev_view *v, const char *key, const char *value, double timeout_s);
bool ev_wait_gone(ev_view *v, const char *key, double timeout_s);
/* Does the view hold exactly what etcd holds under prefix? */
bool ev_matches(ev_view *v, ac__etcd *e, const char *prefix);
bool ev_wait_matches(ev_view *v, ac__etcd *e, const char *prefix, double timeout_s);

/* Is key in etcd (its value into value/cap when so)? */
bool ev_etcd_has(ac__etcd *e, const char *key, char *value, size_t cap);

#endif
