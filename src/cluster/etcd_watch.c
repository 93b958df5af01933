/*
 * The watcher: one thread that reports every change under a prefix.
 *
 * It lists the prefix, then streams etcd's changes from the revision
 * after the list's, and starts again with a list whenever the stream
 * ends: etcd went away, the revision was compacted, etcd cancelled the
 * watch, or a line made no sense. The thread keeps the keys it has
 * reported, sorted, each with the revision of its last change, so that
 * a list after a lost stream is compared with them: a key that is gone
 * is reported deleted, a key new or changed is reported put. Whatever
 * happened while the stream was down, the events add up to what etcd
 * holds. A stream event changes the set the same way, so the set is
 * always what the caller was told.
 *
 * Failures wait out a backoff delay; a stream that etcd accepted resets
 * it, so a watcher that ran well retries soon after losing etcd. Stop
 * raises the thread's stop signal, which wakes its request or its sleep,
 * and joins it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd_internal.h"
#include "core/alloc.h"
#include "core/sync.h"

/* A key the caller was told is there. */
typedef struct known {
    char *key;
    size_t key_len;
    int64_t mod_revision;
} known;

struct ac__etcd_watch {
    ac__etcd *e;
    char *prefix;
    char what[96]; /* "watch 'prefix'" */
    ac__etcd_event_fn on_event;
    void *user;
    ac__etcd_thread t; /* its lock guards info */

    /* The thread's own. */
    known *keys; /* sorted by key */
    size_t nkeys, cap;
    int64_t revision; /* the latest seen */
    ac__etcd_backoff backoff;
    bool created;           /* etcd accepted the current stream */
    ac_status stream_st;    /* why the stream's consumer ended it */
    ac__etcd_err stream_err;

    ac__etcd_watch_info info;
};

/* ---- the status --------------------------------------------------------- */

static void set_state(ac__etcd_watch *w, ac__etcd_watch_state state, const char *fmt, ...)
    AC_PRINTF(3, 4);

static void set_state(ac__etcd_watch *w, ac__etcd_watch_state state, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&w->t.lock);
    w->info.state = state;
    w->info.status = AC_OK;
    va_start(ap, fmt);
    vsnprintf(w->info.why, sizeof w->info.why, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&w->t.lock);
}

/* The revision and key count, after a change. */
static void note_progress(ac__etcd_watch *w, bool listed)
{
    pthread_mutex_lock(&w->t.lock);
    w->info.revision = w->revision;
    w->info.keys = w->nkeys;
    if (listed)
        w->info.lists++;
    pthread_mutex_unlock(&w->t.lock);
}

static void retry_later(ac__etcd_watch *w, ac_status st, const char *msg)
{
    uint64_t delay = ac__etcd_backoff_next(&w->backoff);
    uint64_t attempt = w->backoff.attempt;
    pthread_mutex_lock(&w->t.lock);
    w->info.state = AC__ETCD_WATCH_RETRYING;
    w->info.status = st;
    w->info.failures++;
    snprintf(w->info.why, sizeof w->info.why, "retrying (attempt %" PRIu64 ", next in %" PRIu64
             " ms): %s", attempt, delay, msg);
    pthread_mutex_unlock(&w->t.lock);
    const ac__etcd_options *o = &w->e->o;
    if (o->on_retry)
        o->on_retry(&(ac__etcd_retry){.what = w->what, .status = st, .message = msg,
                                      .attempt = attempt, .delay_ms = delay},
                    o->user);
    ac__etcd_stop_sleep(&w->t.stop, delay);
}

/* ---- the keys told ------------------------------------------------------------ */

static int key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Where key is, or would go; *found says which. */
static size_t find(const ac__etcd_watch *w, const char *key, size_t len, bool *found)
{
    size_t lo = 0, hi = w->nkeys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(w->keys[mid].key, w->keys[mid].key_len, key, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void emit(ac__etcd_watch *w, ac__etcd_event_kind kind, const char *key, size_t key_len,
                 const char *value, size_t value_len, int64_t revision)
{
    w->on_event(&(ac__etcd_event){.kind = kind, .key = key, .key_len = key_len,
                                  .value = value, .value_len = value_len,
                                  .mod_revision = revision},
                w->user);
}

/* A put from the stream; false when the set cannot grow. */
static bool apply_put(ac__etcd_watch *w, const ac__etcd_kv *kv)
{
    bool found;
    size_t at = find(w, kv->key, kv->key_len, &found);
    if (!found) {
        if (w->nkeys == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 16;
            known *k = ac__realloc(w->keys, cap * sizeof *k);
            if (!k)
                return false;
            w->keys = k;
            w->cap = cap;
        }
        char *copy = ac__malloc(kv->key_len + 1);
        if (!copy)
            return false;
        memcpy(copy, kv->key, kv->key_len + 1);
        memmove(&w->keys[at + 1], &w->keys[at], (w->nkeys - at) * sizeof *w->keys);
        w->keys[at] = (known){.key = copy, .key_len = kv->key_len};
        w->nkeys++;
    }
    w->keys[at].mod_revision = kv->mod_revision;
    emit(w, AC__ETCD_PUT, kv->key, kv->key_len, kv->value, kv->value_len, kv->mod_revision);
    return true;
}

static void apply_delete(ac__etcd_watch *w, const ac__etcd_kv *kv)
{
    bool found;
    size_t at = find(w, kv->key, kv->key_len, &found);
    if (!found) /* never told: nothing to take back */
        return;
    free(w->keys[at].key);
    memmove(&w->keys[at], &w->keys[at + 1], (w->nkeys - at - 1) * sizeof *w->keys);
    w->nkeys--;
    emit(w, AC__ETCD_DELETE, kv->key, kv->key_len, NULL, 0, kv->mod_revision);
}

static void forget_all(ac__etcd_watch *w)
{
    for (size_t i = 0; i < w->nkeys; i++)
        free(w->keys[i].key);
    free(w->keys);
    w->keys = NULL;
    w->nkeys = w->cap = 0;
}

/* ---- listing ------------------------------------------------------------------ */

/* Tell the difference between the keys told and a fresh list (both in
 * key order), then make the list the keys told; its keys are taken. */
static void tell_difference(ac__etcd_watch *w, ac__etcd_kvs *kvs, known *next)
{
    size_t i = 0, j = 0;
    while (i < w->nkeys || j < kvs->count) {
        const known *old = i < w->nkeys ? &w->keys[i] : NULL;
        const ac__etcd_kv *now = j < kvs->count ? &kvs->kv[j] : NULL;
        int c = !old ? 1 : !now ? -1 : key_cmp(old->key, old->key_len, now->key, now->key_len);
        if (c < 0) {
            emit(w, AC__ETCD_DELETE, old->key, old->key_len, NULL, 0, kvs->revision);
            i++;
            continue;
        }
        if (c > 0 || old->mod_revision != now->mod_revision)
            emit(w, AC__ETCD_PUT, now->key, now->key_len, now->value, now->value_len,
                 now->mod_revision);
        i += c == 0;
        j++;
    }
    forget_all(w);
    for (j = 0; j < kvs->count; j++) {
        next[j] = (known){.key = kvs->kv[j].key, .key_len = kvs->kv[j].key_len,
                          .mod_revision = kvs->kv[j].mod_revision};
        kvs->kv[j].key = NULL;
    }
    w->keys = next;
    w->nkeys = w->cap = kvs->count;
}

static ac_status relist(ac__etcd_watch *w, ac__etcd_err *err)
{
    set_state(w, AC__ETCD_WATCH_LISTING, "listing the prefix");
    ac__etcd_kvs kvs;
    ac_status st = ac__etcd_get_prefix_in(w->e, &w->t.stop, w->prefix, &kvs, err);
    if (st != AC_OK)
        return st;
    known *next = ac__calloc(kvs.count ? kvs.count : 1, sizeof *next);
    if (!next) {
        ac__etcd_kvs_fini(&kvs);
        return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for %zu keys", w->what, kvs.count);
    }
    tell_difference(w, &kvs, next);
    w->revision = kvs.revision;
    ac__etcd_kvs_fini(&kvs);
    note_progress(w, true);
    return AC_OK;
}

/* ---- the stream ------------------------------------------------------------------ */

/* End the stream for `st`; returns false, for the line handler. */
static bool end_stream(ac__etcd_watch *w, ac_status st)
{
    w->stream_st = st;
    return false;
}

/* One event of a watch answer. */
static bool on_stream_event(ac__etcd_watch *w, json_t *ev)
{
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *kvj = json_object_get(ev, "kv");
    if (!json_is_object(kvj) || (type && strcmp(type, "PUT") != 0 && strcmp(type, "DELETE")))
        return end_stream(w, ac__etcd_errf(&w->stream_err, AC_EPROTO, "%s: an event that is "
                                           "neither a put nor a delete", w->what));
    ac__etcd_kv kv = {0};
    ac_status st = ac__etcd_json_bytes(kvj, "key", &kv.key, &kv.key_len, w->what,
                                       &w->stream_err);
    if (st == AC_OK)
        st = ac__etcd_json_bytes(kvj, "value", &kv.value, &kv.value_len, w->what,
                                 &w->stream_err);
    if (st == AC_OK && !ac__etcd_json_i64(kvj, "mod_revision", &kv.mod_revision))
        st = ac__etcd_errf(&w->stream_err, AC_EPROTO, "%s: an event's mod_revision is not an "
                           "integer", w->what);
    bool go = st == AC_OK;
    if (go && type && strcmp(type, "DELETE") == 0)
        apply_delete(w, &kv);
    else if (go && !apply_put(w, &kv))
        st = ac__etcd_errf(&w->stream_err, AC_ENOMEM, "%s: no memory for another key",
                           w->what);
    if (kv.mod_revision > w->revision)
        w->revision = kv.mod_revision;
    free(kv.key);
    free(kv.value);
    return st == AC_OK ? true : end_stream(w, st);
}

/* A cancelled watch: why, and the end of the stream. */
static bool on_cancel(ac__etcd_watch *w, json_t *result)
{
    int64_t compacted = 0;
    ac__etcd_json_i64(result, "compact_revision", &compacted);
    if (compacted > 0)
        return end_stream(w, ac__etcd_errf(&w->stream_err, AC_EFAILED, "%s: revision %" PRId64
                                           " is compacted (up to %" PRId64 "); listing again",
                                           w->what, w->revision + 1, compacted));
    const char *reason = json_string_value(json_object_get(result, "cancel_reason"));
    return end_stream(w, ac__etcd_errf(&w->stream_err, AC_EFAILED, "%s: etcd cancelled the "
                                       "watch: %s", w->what, reason ? reason : "no reason given"));
}

static bool on_result(ac__etcd_watch *w, json_t *result)
{
    if (json_is_true(json_object_get(result, "created")) && !w->created) {
        w->created = true;
        ac__etcd_backoff_reset(&w->backoff);
        set_state(w, AC__ETCD_WATCH_WATCHING, "watching from revision %" PRId64,
                  w->revision + 1);
    }
    if (json_is_true(json_object_get(result, "canceled")))
        return on_cancel(w, result);
    json_t *events = json_object_get(result, "events");
    for (size_t i = 0; i < json_array_size(events); i++)
        if (!on_stream_event(w, json_array_get(events, i)))
            return false;
    int64_t rev = 0;
    if (ac__etcd_json_i64(json_object_get(result, "header"), "revision", &rev) &&
        rev > w->revision)
        w->revision = rev;
    note_progress(w, false);
    return true;
}

static bool on_line(char *line, size_t len, void *ctx)
{
    ac__etcd_watch *w = ctx;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, 0, &jerr);
    bool go;
    if (!json_is_object(msg)) {
        char q[64];
        go = end_stream(w, ac__etcd_errf(&w->stream_err, AC_EPROTO, "%s: a line of the stream "
                                         "is not a JSON object: %s", w->what,
                                         ac__etcd_quote(line, len, q, sizeof q)));
    } else if (json_object_get(msg, "error")) {
        go = end_stream(w, ac__etcd_stream_error(msg, w->what, &w->stream_err));
    } else if (!json_is_object(json_object_get(msg, "result"))) {
        go = end_stream(w, ac__etcd_errf(&w->stream_err, AC_EPROTO, "%s: a message of the "
                                         "stream has no \"result\"", w->what));
    } else {
        go = on_result(w, json_object_get(msg, "result"));
    }
    json_decref(msg);
    return go;
}

static ac_status watch_stream(ac__etcd_watch *w, ac__etcd_err *err)
{
    json_t *body = json_object(), *create = json_object();
    if (!body || !create || json_object_set(body, "create_request", create) != 0 ||
        !ac__etcd_json_set_prefix(create, w->prefix, strlen(w->prefix)) ||
        !ac__etcd_json_set_i64(create, "start_revision", w->revision + 1)) {
        json_decref(body);
        body = NULL;
    }
    json_decref(create);
    w->created = false;
    w->stream_st = AC_OK;
    ac_status st = ac__etcd_stream(w->e, &w->t.stop, w->what, "/v3/watch", body, on_line, w, err);
    if (st == AC_OK) { /* the line handler ended it, and said why */
        *err = w->stream_err;
        st = w->stream_st;
    }
    return st;
}

static void *watch_main(void *arg)
{
    ac__etcd_watch *w = arg;
    ac__thread_name("ac-etcd-watch");
    while (!ac__etcd_stop_raised(&w->t.stop)) {
        ac__etcd_err err;
        ac_status st = relist(w, &err);
        if (st == AC_OK)
            st = watch_stream(w, &err);
        if (st == AC_ETERMINATED)
            break;
        retry_later(w, st, err.msg);
    }
    return NULL;
}

/* ---- the API ------------------------------------------------------------------ */

static void watch_free(ac__etcd_watch *w)
{
    forget_all(w);
    free(w->prefix);
    free(w);
}

static ac__etcd_watch *watch_new(ac__etcd *e, const char *prefix, ac__etcd_event_fn on_event,
                                 void *user)
{
    ac__etcd_watch *w = ac__calloc(1, sizeof *w);
    size_t len = strlen(prefix);
    if (w)
        w->prefix = ac__malloc(len + 1);
    if (!w || !w->prefix) {
        free(w);
        return ac__fail_null(AC_ENOMEM, "etcd watch: no memory for a watcher");
    }
    memcpy(w->prefix, prefix, len + 1);
    w->e = e;
    w->on_event = on_event;
    w->user = user;
    char q[72];
    snprintf(w->what, sizeof w->what, "watch %s", ac__etcd_quote(prefix, len, q, sizeof q));
    w->info.state = AC__ETCD_WATCH_LISTING;
    snprintf(w->info.why, sizeof w->info.why, "starting");
    ac__etcd_backoff_init(&w->backoff, &e->o);
    return w;
}

ac_status ac__etcd_watch_prefix(ac__etcd *e, const char *prefix, ac__etcd_event_fn on_event,
                                void *user, ac__etcd_watch **out)
{
    if (!e || !on_event || !out)
        return ac__fail(AC_EINVAL, "etcd watch: %s is NULL",
                        !e ? "the client" : !on_event ? "on_event" : "the handle's place");
    *out = NULL;
    ac__etcd_err err;
    if (ac__etcd_check_key(prefix, true, "etcd watch", &err) != AC_OK)
        return ac__fail(AC_EINVAL, "%s", err.msg);
    ac__etcd_watch *w = watch_new(e, prefix, on_event, user);
    if (!w)
        return AC_ENOMEM;
    ac_status st = ac__etcd_thread_start(&w->t, e, watch_main, w, "etcd watch", "the watcher's");
    if (st != AC_OK) {
        watch_free(w);
        return st;
    }
    *out = w;
    return AC_OK;
}

ac_status ac__etcd_watch_status(ac__etcd_watch *w, ac__etcd_watch_info *info)
{
    if (!w || !info)
        return ac__fail(AC_EINVAL, "etcd watch status: %s is NULL",
                        !w ? "the watcher" : "info");
    pthread_mutex_lock(&w->t.lock);
    *info = w->info;
    pthread_mutex_unlock(&w->t.lock);
    return AC_OK;
}

ac_status ac__etcd_watch_stop(ac__etcd_watch *w)
{
    if (!w)
        return AC_OK;
    if (pthread_equal(pthread_self(), w->t.thread))
        return ac__fail(AC_EINVAL, "etcd watch stop: called from the watcher's own thread "
                        "(an on_event or on_retry callback); call it from another thread");
    ac__etcd_thread_join(&w->t);
    ac__etcd_thread_fini(&w->t, w->e);
    watch_free(w);
    return AC_OK;
}
