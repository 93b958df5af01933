/*
 * The keeper: one thread that holds one key in etcd under a lease for as
 * long as it runs.
 *
 * It goes round three steps. Without a lease, it grants one. With a
 * lease but the key not yet put under it, it puts the key. With both,
 * it sleeps a third of the TTL and keeps the lease alive once, the third
 * counted from when the request that last granted or renewed the lease
 * was sent (as fencing counts the TTL: a slow answer, or a slow put
 * after the grant, must not push the keep-alive past the lapse). A lease
 * etcd no longer knows (it expired while etcd was out of reach, or etcd
 * lost it) sends it back to the first step at once; any other failure
 * is retried after a backoff delay, which while the key is registered
 * never exceeds the keep-alive interval, so that a short outage costs
 * no lease. The state, and why, is copied under a lock for
 * ac__etcd_reg_status.
 *
 * The thread owns the lease and the schedule; unregister reads the lease
 * only after joining the thread. A lease granted just before a stop is
 * therefore still revoked, and the key put under it with it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd_internal.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/sync.h"

struct ac__etcd_reg {
    ac__etcd *e;
    char *key;
    char *value;
    size_t value_len;
    int64_t ttl_s;
    char what[96]; /* "register 'key'" */
    ac__etcd_thread t; /* its lock guards info */

    /* The thread's own (read by unregister after the join). */
    int64_t lease;
    int64_t granted_ttl_s;
    bool put_done; /* the key is under the lease */
    uint64_t renewed_at; /* when the request that last granted or renewed it was sent */
    uint64_t next_keepalive_ms;
    ac__etcd_backoff backoff;

    ac__etcd_reg_info info;
};

static uint64_t now_ms(void) { return ac__now_ns() / 1000000u; }

static uint64_t keepalive_interval_ms(const ac__etcd_reg *r)
{
    uint64_t ms = (uint64_t)r->granted_ttl_s * 1000u / 3u;
    return ms > 0 ? ms : 1;
}

/* ---- the status ------------------------------------------------------- */

static void set_registered(ac__etcd_reg *r, bool fresh)
{
    pthread_mutex_lock(&r->t.lock);
    r->info.state = AC__ETCD_REG_REGISTERED;
    r->info.status = AC_OK;
    r->info.lease_id = r->lease;
    if (fresh)
        r->info.registrations++;
    snprintf(r->info.why, sizeof r->info.why, "registered under lease %" PRId64 " (TTL %" PRId64
             " s)", r->lease, r->granted_ttl_s);
    pthread_mutex_unlock(&r->t.lock);
}

/* The lease was granted or kept alive by a request sent at `asked`. */
static void set_renewed(ac__etcd_reg *r, uint64_t asked)
{
    pthread_mutex_lock(&r->t.lock);
    r->info.renewed_ms = asked;
    r->info.ttl_s = r->granted_ttl_s;
    pthread_mutex_unlock(&r->t.lock);
}

/* Record a failure and say so to on_retry; the delay before the next
 * attempt is returned. */
static uint64_t note_failure(ac__etcd_reg *r, ac_status st, const char *msg, uint64_t delay_ms)
{
    uint64_t attempt = r->backoff.attempt;
    pthread_mutex_lock(&r->t.lock);
    r->info.state = AC__ETCD_REG_RETRYING;
    r->info.status = st;
    r->info.lease_id = r->lease;
    r->info.failures++;
    snprintf(r->info.why, sizeof r->info.why, "retrying (attempt %" PRIu64 ", next in %" PRIu64
             " ms): %s", attempt, delay_ms, msg);
    pthread_mutex_unlock(&r->t.lock);
    const ac__etcd_options *o = &r->e->o;
    if (o->on_retry)
        o->on_retry(&(ac__etcd_retry){.what = r->what, .status = st, .message = msg,
                                      .attempt = attempt, .delay_ms = delay_ms},
                    o->user);
    return delay_ms;
}

/* A failure to retry after the backoff delay, at most `cap_ms`. */
static void retry_later(ac__etcd_reg *r, ac_status st, const char *msg, uint64_t cap_ms)
{
    uint64_t delay = ac__etcd_backoff_next(&r->backoff);
    if (delay > cap_ms)
        delay = cap_ms;
    ac__etcd_stop_sleep(&r->t.stop, note_failure(r, st, msg, delay));
}

/* ---- the steps ------------------------------------------------------------ */

static void grant(ac__etcd_reg *r)
{
    ac__etcd_err err;
    uint64_t asked = now_ms();
    ac_status st = ac__etcd_grant_in(r->e, &r->t.stop, r->ttl_s, &r->lease, &r->granted_ttl_s,
                                     &err);
    if (st == AC_OK) {
        r->renewed_at = asked;
        set_renewed(r, asked);
    } else if (st != AC_ETERMINATED) {
        retry_later(r, st, err.msg, UINT64_MAX);
    }
}

static void put(ac__etcd_reg *r)
{
    ac__etcd_err err;
    ac_status st = ac__etcd_put_in(r->e, &r->t.stop, r->key, r->value, r->value_len, r->lease,
                                   &err);
    if (st == AC_OK) {
        r->put_done = true;
        r->next_keepalive_ms = r->renewed_at + keepalive_interval_ms(r);
        ac__etcd_backoff_reset(&r->backoff);
        set_registered(r, true);
    } else if (st == AC_ENOTFOUND) { /* the lease went before the key was put */
        r->lease = 0;
        ac__etcd_backoff_next(&r->backoff);
        note_failure(r, st, err.msg, 0);
    } else if (st != AC_ETERMINATED) {
        retry_later(r, st, err.msg, UINT64_MAX);
    }
}

static void keep_alive(ac__etcd_reg *r)
{
    uint64_t now = now_ms();
    if (now < r->next_keepalive_ms && !ac__etcd_stop_sleep(&r->t.stop, r->next_keepalive_ms - now))
        return;
    ac__etcd_err err;
    int64_t ttl = 0;
    uint64_t asked = now_ms();
    ac_status st = ac__etcd_keepalive_in(r->e, &r->t.stop, r->lease, &ttl, &err);
    if (st == AC_OK) {
        set_renewed(r, asked);
        pthread_mutex_lock(&r->t.lock);
        r->info.keepalives++;
        pthread_mutex_unlock(&r->t.lock);
        r->renewed_at = asked;
        r->next_keepalive_ms = asked + keepalive_interval_ms(r);
        if (r->backoff.attempt > 0) {
            ac__etcd_backoff_reset(&r->backoff);
            set_registered(r, false);
        }
    } else if (st == AC_ENOTFOUND) { /* lost: register again at once */
        char msg[sizeof err.msg + 32];
        snprintf(msg, sizeof msg, "%s; registering again", err.msg);
        r->lease = 0;
        r->put_done = false;
        ac__etcd_backoff_next(&r->backoff);
        note_failure(r, st, msg, 0);
    } else if (st != AC_ETERMINATED) {
        retry_later(r, st, err.msg, keepalive_interval_ms(r));
    }
}

static void *keeper_main(void *arg)
{
    ac__etcd_reg *r = arg;
    ac__thread_name("ac-etcd-keeper");
    while (!ac__etcd_stop_raised(&r->t.stop)) {
        if (r->lease == 0)
            grant(r);
        else if (!r->put_done)
            put(r);
        else
            keep_alive(r);
    }
    return NULL;
}

/* ---- the API ------------------------------------------------------------------ */

static void reg_free(ac__etcd_reg *r)
{
    free(r->key);
    free(r->value);
    free(r);
}

static ac_status check_register(ac__etcd *e, const char *key, const void *value,
                                size_t value_len, int64_t ttl_s, ac__etcd_reg **reg)
{
    ac__etcd_err err;
    if (!e || !reg)
        return ac__fail(AC_EINVAL, "etcd register: %s is NULL", !e ? "the client" : "reg");
    *reg = NULL;
    if (ac__etcd_check_key(key, false, "etcd register", &err) != AC_OK)
        return ac__fail(AC_EINVAL, "%s", err.msg);
    if (!value && value_len > 0)
        return ac__fail(AC_EINVAL, "etcd register: the value is NULL but %zu bytes long",
                        value_len);
    if (ttl_s < 1 || ttl_s > AC__ETCD_MAX_TTL)
        return ac__fail(AC_EINVAL, "etcd register: TTL %lld s is not 1 to %lld",
                        (long long)ttl_s, (long long)AC__ETCD_MAX_TTL);
    return AC_OK;
}

/* A keeper with copies of its key and value, its thread not started. */
static ac__etcd_reg *reg_new(ac__etcd *e, const char *key, const void *value, size_t value_len,
                             int64_t ttl_s)
{
    ac__etcd_reg *r = ac__calloc(1, sizeof *r);
    size_t key_len = strlen(key);
    if (r)
        r->key = ac__malloc(key_len + 1);
    if (r && r->key)
        r->value = ac__malloc(value_len + 1);
    if (!r || !r->key || !r->value) {
        if (r)
            reg_free(r);
        return ac__fail_null(AC_ENOMEM, "etcd register: no memory for a keeper of a %zu-byte "
                             "key and a %zu-byte value", key_len, value_len);
    }
    memcpy(r->key, key, key_len + 1);
    if (value_len)
        memcpy(r->value, value, value_len);
    r->value[value_len] = '\0';
    r->value_len = value_len;
    r->e = e;
    r->ttl_s = ttl_s;
    char q[72];
    snprintf(r->what, sizeof r->what, "register %s", ac__etcd_quote(key, key_len, q, sizeof q));
    r->info.state = AC__ETCD_REG_STARTING;
    snprintf(r->info.why, sizeof r->info.why, "registering");
    ac__etcd_backoff_init(&r->backoff, &e->o);
    return r;
}

ac_status ac__etcd_register(ac__etcd *e, const char *key, const void *value, size_t value_len,
                            int64_t ttl_s, ac__etcd_reg **reg)
{
    ac_status st = check_register(e, key, value, value_len, ttl_s, reg);
    if (st != AC_OK)
        return st;
    ac__etcd_reg *r = reg_new(e, key, value, value_len, ttl_s);
    if (!r)
        return AC_ENOMEM;
    st = ac__etcd_thread_start(&r->t, e, keeper_main, r, "etcd register", "the keeper's");
    if (st != AC_OK) {
        reg_free(r);
        return st;
    }
    *reg = r;
    return AC_OK;
}

ac_status ac__etcd_reg_status(ac__etcd_reg *reg, ac__etcd_reg_info *info)
{
    if (!reg || !info)
        return ac__fail(AC_EINVAL, "etcd registration status: %s is NULL",
                        !reg ? "the registration" : "info");
    pthread_mutex_lock(&reg->t.lock);
    *info = reg->info;
    pthread_mutex_unlock(&reg->t.lock);
    return AC_OK;
}

ac_status ac__etcd_unregister(ac__etcd_reg *reg)
{
    if (!reg)
        return AC_OK;
    if (pthread_equal(pthread_self(), reg->t.thread))
        return ac__fail(AC_EINVAL, "etcd unregister: called from the keeper's own thread "
                        "(an on_retry callback); call it from another thread");
    ac__etcd_thread_join(&reg->t);
    ac__etcd_err err;
    ac_status st = reg->lease ? ac__etcd_revoke_in(reg->e, NULL, reg->lease, &err) : AC_OK;
    if (st == AC_ENOTFOUND) /* expired already: the key is gone too */
        st = AC_OK;
    ac__etcd_thread_fini(&reg->t, reg->e);
    reg_free(reg);
    return st == AC_OK ? AC_OK : ac__fail(st, "%s", err.msg);
}
