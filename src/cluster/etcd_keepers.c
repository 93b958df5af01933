/*
 * Keepers of many keys: two threads hold every key a process registers,
 * each under a lease of its own, over two HTTP connections kept open.
 *
 * The registrar grants a lease and puts the key under it, one key after
 * another (a raft write and an fsync each: slow when etcd is busy). The
 * keep-alive thread keeps every registered lease alive every third of
 * its TTL, from a heap by due time. They are two threads so that a slow
 * write never delays a keep-alive: with one, registering thousands of
 * keys on a loaded etcd let the leases already held expire. A lease etcd
 * no longer knows goes back to the registrar, which grants another and
 * puts the key again.
 *
 * The keep-alives that fall due together go in a few requests: the
 * gateway's /v3/lease/keepalive takes newline-separated requests in one
 * body and answers each on a line of its own, in order. It ends its
 * answer early, though: it reads the body 512 bytes at a time (Go's JSON
 * decoder) and no further once its first answer is written (Go's
 * HTTP/1 server), and the leases it did not read are not renewed
 * (measured with etcd 3.4: a prefix of 17 to 500 of a 500-lease body
 * answered). So a request carries PER_REQUEST leases (fewer than 512
 * bytes), a lease counts as kept alive only when its line came back,
 * and the rest go first in the next request.
 *
 * A renewal is due a third of the TTL after the request that last
 * renewed the lease was sent, less up to a tenth at random, so that
 * leases registered together drift apart; and a lease due within a
 * quarter of that interval goes with the ones being sent, so that a
 * process sends a few requests a period, not one per lease.
 *
 * Threads. An entry is in one place at a time: the registrar's list,
 * its inbox for the keep-alive thread, that thread's heap; the thread
 * that took it from a list (under t.lock) owns its lease and schedule.
 * Every entry's status (info) is under t.lock. stop joins both threads
 * before it revokes the leases. Lock order: t.lock and a stop signal's
 * lock are never held together.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd_internal.h"
#include "cluster/etcd_keepers_internal.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/sync.h"

static uint64_t now_ms(void) { return ac__now_ns() / 1000000u; }

static uint64_t interval_ms(const ac__etcd_kept *x)
{
    uint64_t ms = (uint64_t)x->granted_ttl_s * 1000u / 3u;
    return ms > 0 ? ms : 1;
}

/* ---- the heap, by due time ------------------------------------------------ */

static void heap_swap(ac__etcd_kept **h, size_t a, size_t b)
{
    ac__etcd_kept *t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void heap_push(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    size_t i = k->heap_n++;
    k->heap[i] = x;
    while (i > 0 && k->heap[(i - 1) / 2]->due_ms > k->heap[i]->due_ms) {
        heap_swap(k->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static ac__etcd_kept *heap_pop(ac__etcd_keepers *k)
{
    ac__etcd_kept *top = k->heap[0];
    k->heap[0] = k->heap[--k->heap_n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < k->heap_n && k->heap[l]->due_ms < k->heap[m]->due_ms)
            m = l;
        if (r < k->heap_n && k->heap[r]->due_ms < k->heap[m]->due_ms)
            m = r;
        if (m == i)
            break;
        heap_swap(k->heap, i, m);
        i = m;
    }
    return top;
}

/* ---- the status ------------------------------------------------------------ */

static void set_info(ac__etcd_keepers *k, ac__etcd_kept *x, ac__etcd_reg_state state,
                     ac_status st, const char *why)
{
    pthread_mutex_lock(&k->t.lock);
    x->info.state = state;
    x->info.status = st;
    x->info.lease_id = x->lease;
    if (st != AC_OK)
        x->info.failures++;
    snprintf(x->info.why, sizeof x->info.why, "%s", why);
    pthread_mutex_unlock(&k->t.lock);
}

static void set_renewed(ac__etcd_keepers *k, ac__etcd_kept *x, uint64_t asked, bool keepalive)
{
    pthread_mutex_lock(&k->t.lock);
    x->info.renewed_ms = asked;
    x->info.ttl_s = x->granted_ttl_s;
    if (keepalive) {
        x->info.keepalives++;
        k->stats.keepalives++;
    }
    pthread_mutex_unlock(&k->t.lock);
}

static void count_request(ac__etcd_keepers *k, bool batch)
{
    pthread_mutex_lock(&k->t.lock);
    k->stats.requests++;
    k->stats.batches += batch;
    pthread_mutex_unlock(&k->t.lock);
}

/* A failure: reported, and the entry due again after its backoff, at
 * most cap_ms (0: at once, the backoff still counted). */
static void failed(ac__etcd_keepers *k, ac__etcd_kept *x, ac_status st, const char *msg,
                   uint64_t cap_ms)
{
    uint64_t attempt = x->backoff.attempt + 1;
    uint64_t delay = ac__etcd_backoff_next(&x->backoff);
    pthread_mutex_lock(&k->t.lock);
    k->stats.failures++;
    k->stats.lost += st == AC_ENOTFOUND;
    snprintf(k->stats.last_failure, sizeof k->stats.last_failure, "%s", msg);
    pthread_mutex_unlock(&k->t.lock);
    if (delay > cap_ms)
        delay = cap_ms;
    char why[sizeof x->info.why];
    snprintf(why, sizeof why, "retrying (attempt %" PRIu64 ", next in %" PRIu64 " ms): %s",
             attempt, delay, msg);
    set_info(k, x, AC__ETCD_REG_RETRYING, st, why);
    const ac__etcd_options *o = &k->e->o;
    if (o->on_retry)
        o->on_retry(&(ac__etcd_retry){.what = x->what, .status = st, .message = msg,
                                      .attempt = attempt, .delay_ms = delay},
                    o->user);
    x->due_ms = now_ms() + delay;
}

/* Kept alive by a request sent at `asked`: due again a third of the TTL
 * later, less up to a tenth at random (rng: the calling thread's). */
static void schedule_renewal(uint64_t *rng, ac__etcd_kept *x, uint64_t asked)
{
    uint64_t iv = interval_ms(x);
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    x->due_ms = asked + iv - *rng % (iv / 10 + 1);
}

/* ---- grant and put ---------------------------------------------------------- */

static void grant(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    ac__etcd_err err;
    uint64_t asked = now_ms();
    count_request(k, false);
    ac_status st = ac__etcd_grant_in(k->e, &k->r.stop, x->ttl_s, &x->lease, &x->granted_ttl_s,
                                     &err);
    if (st == AC_OK)
        set_renewed(k, x, asked, false);
    else if (st != AC_ETERMINATED)
        failed(k, x, st, err.msg, UINT64_MAX);
}

static void put(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    ac__etcd_err err;
    count_request(k, false);
    ac_status st = ac__etcd_put_in(k->e, &k->r.stop, x->key, x->value, x->value_len, x->lease,
                                   &err);
    if (st == AC_OK) {
        x->put_done = true;
        schedule_renewal(&k->r_rng, x, now_ms());
        ac__etcd_backoff_reset(&x->backoff);
        char why[128];
        snprintf(why, sizeof why, "registered under lease %" PRId64 " (TTL %" PRId64 " s)",
                 x->lease, x->granted_ttl_s);
        set_info(k, x, AC__ETCD_REG_REGISTERED, AC_OK, why);
        pthread_mutex_lock(&k->t.lock);
        x->info.registrations++;
        pthread_mutex_unlock(&k->t.lock);
    } else if (st == AC_ENOTFOUND) { /* the lease went before the key was put */
        x->lease = 0;
        failed(k, x, st, err.msg, 0);
    } else if (st != AC_ETERMINATED) {
        failed(k, x, st, err.msg, UINT64_MAX);
    }
}

/* ---- a batch of keep-alives ----------------------------------------------- */

typedef struct batch {
    ac__etcd_keepers *k;
    ac__etcd_kept **x;
    size_t n;
    size_t next; /* where the next answer is expected */
    size_t answered;
    uint64_t asked;
    ac__etcd_err err;
    ac_status status; /* of a line that was an error, or not etcd's */
} batch;

static ac__etcd_kept *find_answered(batch *b, int64_t id)
{
    for (size_t i = 0; i < b->n; i++) {
        size_t j = (b->next + i) % b->n;
        if (b->x[j]->lease == id && !b->x[j]->answered) {
            b->next = j + 1;
            return b->x[j];
        }
    }
    return NULL;
}

static void lease_lost(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    char msg[160];
    snprintf(msg, sizeof msg, "etcd keep-alive of lease %" PRId64 ": etcd no longer has the "
             "lease (it expired or was revoked); registering again", x->lease);
    x->lease = 0;
    x->put_done = false;
    failed(k, x, AC_ENOTFOUND, msg, 0);
}

/* One line of the answer: {"result": {"ID": ..., "TTL": ...}}, the TTL
 * absent when etcd does not know the lease. */
static bool on_answer(char *line, size_t len, void *ctx)
{
    batch *b = ctx;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, 0, &jerr);
    json_t *result = json_object_get(msg, "result");
    int64_t id = 0, ttl = 0;
    bool ok = json_is_object(result) && ac__etcd_json_i64(result, "ID", &id) &&
              ac__etcd_json_i64(result, "TTL", &ttl);
    ac__etcd_kept *x = ok ? find_answered(b, id) : NULL;
    if (!x) {
        b->status = json_is_object(msg) ? ac__etcd_stream_error(msg, "etcd keep-alives", &b->err)
                                        : AC_OK;
        if (b->status == AC_OK)
            b->status = ac__etcd_errf(&b->err, AC_EPROTO, "etcd keep-alives: an answer that "
                                      "is not one of the leases asked for");
        json_decref(msg);
        return false;
    }
    json_decref(msg);
    x->answered = true;
    b->answered++;
    if (ttl <= 0) {
        lease_lost(b->k, x);
        return true;
    }
    set_renewed(b->k, x, b->asked, true);
    schedule_renewal(&b->k->rng, x, b->asked);
    if (x->backoff.attempt > 0) {
        ac__etcd_backoff_reset(&x->backoff);
        set_info(b->k, x, AC__ETCD_REG_REGISTERED, AC_OK, "registered; kept alive again");
    }
    return true;
}

/* Send one request for x[0..n); the status of the request. */
static ac_status send_batch(ac__etcd_keepers *k, batch *b)
{
    size_t used = 0;
    for (size_t i = 0; i < b->n; i++)
        used += (size_t)snprintf(k->body + used, 40, "{\"ID\":\"%" PRId64 "\"}\n",
                                 b->x[i]->lease);
    b->next = b->answered = 0;
    b->status = AC_OK;
    b->asked = now_ms();
    count_request(k, true);
    /* Within two intervals (the client's request timeout if shorter): a
     * lease then has a third of its TTL left for the next attempt. */
    uint64_t limit = UINT32_MAX;
    for (size_t i = 0; i < b->n; i++)
        if (2 * interval_ms(b->x[i]) < limit)
            limit = 2 * interval_ms(b->x[i]);
    ac_status st = ac__etcd_lines(k->e, &k->t.stop, "etcd keep-alives", "/v3/lease/keepalive",
                                  k->body, (uint32_t)(limit > 0 ? limit : 1), on_answer, b,
                                  &b->err);
    return st != AC_OK ? st : b->status;
}

/* Keep x[0..n) alive, PER_REQUEST leases a request; the unanswered of
 * a request go first in the next, while requests get answers. */
static void keep_alive(ac__etcd_keepers *k, ac__etcd_kept *const *x, size_t n)
{
    ac__etcd_kept *pending[BATCH_MAX]; /* x stays as it is: the caller's list */
    size_t left = n;
    for (size_t i = 0; i < n; i++) {
        pending[i] = x[i];
        x[i]->answered = false;
    }
    while (left > 0) {
        batch b = {.k = k, .x = pending, .n = left < PER_REQUEST ? left : PER_REQUEST};
        ac_status st = send_batch(k, &b);
        if (st == AC_ETERMINATED)
            return;
        if (b.answered == 0) {
            for (size_t i = 0; i < left; i++)
                failed(k, pending[i], st != AC_OK ? st : AC_EFAILED,
                       st != AC_OK ? b.err.msg : "etcd keep-alives: not answered",
                       interval_ms(pending[i]));
            return;
        }
        size_t kept = 0;
        for (size_t i = 0; i < left; i++)
            if (!pending[i]->answered)
                pending[kept++] = pending[i];
        left = kept;
    }
}

/* ---- handing entries over ------------------------------------------------ */

/* Wake the thread waiting on s (kicked is under s->lock). */
static void kick(ac__etcd_stop *s, bool *kicked)
{
    pthread_mutex_lock(&s->lock);
    *kicked = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Sleep until `due` (ms), a kick, or the stop. */
static void nap(ac__etcd_stop *s, bool *kicked, uint64_t due)
{
    struct timespec until = ac__timespec_of_ns(due * 1000000ull);
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    while (!atomic_load_explicit(&s->raised, memory_order_relaxed) && !*kicked && rc == 0)
        rc = pthread_cond_timedwait(&s->cond, &s->lock, &until);
    *kicked = false;
    pthread_mutex_unlock(&s->lock);
}

/* An entry for the registrar (a lease to grant, a key to put). */
static void to_registrar(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    pthread_mutex_lock(&k->t.lock);
    k->todo[k->todo_n++] = x;
    pthread_mutex_unlock(&k->t.lock);
    kick(&k->r.stop, &k->r_kicked);
}

static bool registered(const ac__etcd_kept *x) { return x->lease != 0 && x->put_done; }

/* ---- the registrar: grants and puts --------------------------------------- */

static ac__etcd_kept *next_todo(ac__etcd_keepers *k)
{
    pthread_mutex_lock(&k->t.lock);
    ac__etcd_kept *x = k->todo_n > 0 ? k->todo[--k->todo_n] : NULL;
    pthread_mutex_unlock(&k->t.lock);
    return x;
}

/* Grant x a lease and put its key, as far as it goes; registered, it
 * goes to the keep-alive thread, else back to the list. */
static void register_one(ac__etcd_keepers *k, ac__etcd_kept *x)
{
    uint64_t now = now_ms();
    if (x->due_ms > now && !ac__etcd_stop_sleep(&k->r.stop, x->due_ms - now))
        return; /* stopped: stop finds the lease in the entry */
    if (x->lease == 0)
        grant(k, x);
    if (x->lease != 0 && !x->put_done && !ac__etcd_stop_raised(&k->r.stop))
        put(k, x);
    pthread_mutex_lock(&k->t.lock);
    if (registered(x))
        k->inbox[k->inbox_n++] = x;
    else
        k->todo[k->todo_n++] = x;
    pthread_mutex_unlock(&k->t.lock);
    if (registered(x))
        kick(&k->t.stop, &k->kicked);
}

void *ac__etcd_registrar_main(void *arg)
{
    ac__etcd_keepers *k = arg;
    ac__thread_name("ac-etcd-register");
    k->r.stop.session = &k->r_session; /* before the thread's first request */
    while (!ac__etcd_stop_raised(&k->r.stop)) {
        ac__etcd_kept *x = next_todo(k);
        if (x)
            register_one(k, x);
        else
            nap(&k->r.stop, &k->r_kicked, now_ms() + IDLE_MS);
    }
    return NULL;
}

/* ---- the keep-alive thread ------------------------------------------------- */

/* Entries the registrar registered, onto the heap. */
static bool adopt(ac__etcd_keepers *k)
{
    bool ok = true;
    pthread_mutex_lock(&k->t.lock);
    if (k->n > k->heap_cap) {
        ac__etcd_kept **h = ac__realloc(k->heap, k->n * sizeof *h);
        if (h) {
            k->heap = h;
            k->heap_cap = k->n;
        }
        ok = h != NULL;
    }
    while (ok && k->inbox_n > 0)
        heap_push(k, k->inbox[--k->inbox_n]);
    pthread_mutex_unlock(&k->t.lock);
    return ok;
}

/* Whether x is kept alive in this turn: due, or due within a quarter of
 * its interval. */
static bool eligible(const ac__etcd_kept *x, uint64_t now)
{
    return x->due_ms <= now + interval_ms(x) / 4;
}

/* One turn: the keep-alives due (with those due soon); or a nap until
 * the next is due. */
static void turn(ac__etcd_keepers *k, ac__etcd_kept **ready)
{
    uint64_t now = now_ms();
    size_t nr = 0;
    while (k->heap_n > 0 && nr < BATCH_MAX && eligible(k->heap[0], now))
        ready[nr++] = heap_pop(k);
    if (nr == 0) {
        uint64_t due = k->heap_n > 0 ? k->heap[0]->due_ms : now + IDLE_MS;
        nap(&k->t.stop, &k->kicked, due < now + IDLE_MS ? due : now + IDLE_MS);
        return;
    }
    keep_alive(k, ready, nr);
    for (size_t i = 0; i < nr; i++) {
        if (registered(ready[i]))
            heap_push(k, ready[i]);
        else /* its lease was lost */
            to_registrar(k, ready[i]);
    }
}

void *ac__etcd_keepers_main(void *arg)
{
    ac__etcd_keepers *k = arg;
    ac__thread_name("ac-etcd-keepers");
    k->t.stop.session = &k->session; /* before the thread's first request */
    ac__etcd_kept *ready[BATCH_MAX];
    while (!ac__etcd_stop_raised(&k->t.stop)) {
        if (adopt(k))
            turn(k, ready);
        else
            ac__etcd_stop_sleep(&k->t.stop, 100); /* no memory: try again shortly */
    }
    return NULL;
}
