/*
 * How the keeper's and watcher's threads wait: a stop signal that ends
 * their sleeps and their requests at once, and capped exponential
 * backoff with jitter between their retries; and how such a thread starts
 * and ends.
 *
 * A request in progress sits in curl_multi_poll; the signal reaches it
 * through curl_multi_wakeup on the handle the request registered, which
 * libcurl allows from another thread. Registration and wake-up share the
 * signal's lock, so the handle is never woken after it is gone, and a
 * request that registers after the signal was raised is told so and
 * does not start.
 *
 * The jitter only shortens a delay (by up to the configured share), so
 * no wait exceeds backoff_max_ms, and threads that failed together do
 * not retry together.
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>

#include "cluster/etcd_internal.h"
#include "core/clock.h"

ac_status ac__etcd_stop_init(ac__etcd_stop *s)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return ac__fail(rc == ENOMEM ? AC_ENOMEM : AC_ESYS, "etcd: cannot make a condition "
                        "variable for the stop signal (error %d)", rc);
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&s->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return ac__fail(rc == ENOMEM ? AC_ENOMEM : AC_ESYS, "etcd: cannot make a condition "
                        "variable for the stop signal (error %d)", rc);
    rc = pthread_mutex_init(&s->lock, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&s->cond);
        return ac__fail(rc == ENOMEM ? AC_ENOMEM : AC_ESYS, "etcd: cannot make a mutex for "
                        "the stop signal (error %d)", rc);
    }
    atomic_init(&s->raised, false);
    s->active = NULL;
    s->session = NULL;
    return AC_OK;
}

void ac__etcd_stop_fini(ac__etcd_stop *s)
{
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

void ac__etcd_stop_raise(ac__etcd_stop *s)
{
    pthread_mutex_lock(&s->lock);
    /* release: pairs with the acquire load in ac__etcd_stop_raised. */
    atomic_store_explicit(&s->raised, true, memory_order_release);
    if (s->active)
        curl_multi_wakeup(s->active);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

bool ac__etcd_stop_raised(ac__etcd_stop *s)
{
    return atomic_load_explicit(&s->raised, memory_order_acquire);
}

static struct timespec deadline_after(uint64_t ms)
{
    return ac__timespec_of_ns(ac__now_ns() + ms * 1000000ull);
}

bool ac__etcd_stop_sleep(ac__etcd_stop *s, uint64_t ms)
{
    struct timespec until = deadline_after(ms);
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    while (!atomic_load_explicit(&s->raised, memory_order_relaxed) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->cond, &s->lock, &until);
    bool raised = atomic_load_explicit(&s->raised, memory_order_relaxed);
    pthread_mutex_unlock(&s->lock);
    return !raised;
}

bool ac__etcd_stop_enter(ac__etcd_stop *s, CURLM *m)
{
    pthread_mutex_lock(&s->lock);
    bool raised = atomic_load_explicit(&s->raised, memory_order_relaxed);
    if (!raised)
        s->active = m;
    pthread_mutex_unlock(&s->lock);
    return !raised;
}

void ac__etcd_stop_leave(ac__etcd_stop *s)
{
    pthread_mutex_lock(&s->lock);
    s->active = NULL;
    pthread_mutex_unlock(&s->lock);
}

/* ---- a client's thread ---------------------------------------------------- */

ac_status ac__etcd_thread_start(ac__etcd_thread *t, ac__etcd *e, void *(*main)(void *), void *arg,
                                const char *what, const char *whose)
{
    ac_status st;
    int rc = pthread_mutex_init(&t->lock, NULL);
    if (rc != 0)
        return ac__fail(AC_ESYS, "%s: cannot make a mutex (error %d)", what, rc);
    st = ac__etcd_stop_init(&t->stop);
    if (st != AC_OK)
        goto fail_stop;
    atomic_fetch_add_explicit(&e->users, 1, memory_order_relaxed);
    rc = pthread_create(&t->thread, NULL, main, arg);
    if (rc != 0) {
        st = ac__fail(AC_ESYS, "%s: cannot start %s thread (error %d)", what, whose, rc);
        goto fail_thread;
    }
    return AC_OK;

fail_thread:
    atomic_fetch_sub_explicit(&e->users, 1, memory_order_relaxed);
    ac__etcd_stop_fini(&t->stop);
fail_stop:
    pthread_mutex_destroy(&t->lock);
    return st;
}

void ac__etcd_thread_join(ac__etcd_thread *t)
{
    ac__etcd_stop_raise(&t->stop);
    pthread_join(t->thread, NULL);
}

void ac__etcd_thread_fini(ac__etcd_thread *t, ac__etcd *e)
{
    atomic_fetch_sub_explicit(&e->users, 1, memory_order_relaxed);
    ac__etcd_stop_fini(&t->stop);
    pthread_mutex_destroy(&t->lock);
}

/* ---- backoff ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *x)
{
    /* xorshift64* */
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

void ac__etcd_backoff_init(ac__etcd_backoff *b, const ac__etcd_options *o)
{
    b->o = o;
    b->attempt = 0;
    b->next_ms = o->backoff_initial_ms;
    if (getrandom(&b->rng, sizeof b->rng, GRND_NONBLOCK) != (ssize_t)sizeof b->rng) {
        b->rng = ac__now_ns() ^ (uint64_t)(uintptr_t)b;
    }
    if (b->rng == 0)
        b->rng = 0x9E3779B97F4A7C15ull;
}

uint64_t ac__etcd_backoff_next(ac__etcd_backoff *b)
{
    uint64_t delay = b->next_ms;
    b->attempt++;
    b->next_ms = delay * 2 > b->o->backoff_max_ms ? b->o->backoff_max_ms : delay * 2;
    uint64_t cut = delay * b->o->backoff_jitter_pct / 100;
    if (cut > 0)
        delay -= rng_next(&b->rng) % (cut + 1);
    return delay > 0 ? delay : 1;
}

void ac__etcd_backoff_reset(ac__etcd_backoff *b)
{
    b->attempt = 0;
    b->next_ms = b->o->backoff_initial_ms;
}
