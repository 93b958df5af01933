/*
 * A group's set changing while load flows: a writer thread spawns,
 * adds, removes and stops routees, and moves the stable ones to the end
 * (remove, then add), while asker threads ask through a round-robin group
 * and a scatter/gather group over the same routees. Every ask is
 * answered: by a live routee, or, for round-robin only, by the news that
 * a routee the writer stopped was picked before its Terminated pruned it.
 * A scatter always has a stable routee to win it. At the end the sets are
 * the stable routees again, each once. Under ThreadSanitizer the changes
 * (in the routers' turns), the scatters (on the routees' threads) and the
 * stops collide.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>

#include "rt_common.h"
#include "ts_test.h"

#if defined(__SANITIZE_THREAD__)
#define GC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GC_TSAN 1
#endif
#endif
#ifndef GC_TSAN
#define GC_TSAN 0
#endif

#define STABLE 4
#define ROUNDS (GC_TSAN ? 150 : 400)
#define ASKERS 2

/* A routee the writer makes and drops: answers a ping with its path. */
static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_str_new(ac_self_path(ctx)));
}

static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

typedef struct load {
    ac_system *sys;
    ac_ref *stable[STABLE];
    ac_ref *rr, *sg;
    atomic_int writer_done;
    /* by the askers */
    atomic_llong asks, ok, stopped_transient, bad;
    char bad_what[200]; /* the first bad answer; under bad_mu */
    pthread_mutex_t bad_mu;
} load;

static void note_bad(load *l, const char *what, ac_status st, const ac_answer *a)
{
    pthread_mutex_lock(&l->bad_mu);
    if (atomic_fetch_add(&l->bad, 1) == 0) {
        snprintf(l->bad_what, sizeof l->bad_what, "%s: %s (%s)", what, ac_status_name(st),
                 a->error ? ac_error_message(a->error) : "no error");
    }
    pthread_mutex_unlock(&l->bad_mu);
}

/* A routee the writer stopped, picked before it was pruned. */
static bool stopped_transient(ac_status st, const ac_answer *a)
{
    if (st != AC_EDEAD || !ac_error_is(a->error, AC_ACTOR_STOPPED_ERROR)) {
        return false;
    }
    return strstr(ac_error_message(a->error), "/stable-") == NULL;
}

static void ask_once(load *l, ac_ref *router, bool scatter)
{
    ac_answer a;
    ac_status st = ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a);
    atomic_fetch_add(&l->asks, 1);
    if (st == AC_OK && a.sender != NULL) {
        atomic_fetch_add(&l->ok, 1);
    } else if (!scatter && stopped_transient(st, &a)) {
        atomic_fetch_add(&l->stopped_transient, 1);
    } else {
        note_bad(l, scatter ? "scatter" : "round-robin", st, &a);
    }
    ac_answer_release(&a);
}

static void *asker(void *arg)
{
    load *l = arg;
    long n = 0;
    while (!atomic_load(&l->writer_done) || n < 50) {
        ask_once(l, l->rr, false);
        ask_once(l, l->sg, true);
        n++;
    }
    return NULL;
}

static void tell_both(load *l, ac_msg *(*make)(ac_ref *), ac_ref *r)
{
    ac_tell(l->rr, make(r), NULL);
    ac_tell(l->sg, make(r), NULL);
}

/* One round: a fresh routee joins; a stable one moves to the end; the
 * fresh one leaves by removal, by stopping, or by both (in either
 * order). */
static void writer_round(load *l, int i)
{
    ac_ref *fresh = ac_spawn(l->sys, ac_props_new(&echo_def, NULL), NULL);
    if (fresh == NULL) {
        atomic_fetch_add(&l->bad, 1);
        return;
    }
    tell_both(l, ac_router_add_routee_msg, fresh);
    ac_ref *moved = l->stable[i % STABLE];
    tell_both(l, ac_router_remove_routee_msg, moved);
    tell_both(l, ac_router_add_routee_msg, moved);
    switch (i % 3) {
    case 0:
        tell_both(l, ac_router_remove_routee_msg, fresh);
        break;
    case 1:
        ac_stop(fresh);
        break;
    default:
        ac_stop(fresh);
        tell_both(l, ac_router_remove_routee_msg, fresh);
        break;
    }
    ac_ref_release(fresh);
}

/* Paced by the askers, so that the changes and the asks overlap all
 * along, however fast either side runs: round i starts once 2i asks have
 * been answered (or a while has passed). */
static void *writer(void *arg)
{
    load *l = arg;
    for (int i = 0; i < ROUNDS; i++) {
        double end = ts_now() + 0.05;
        while (atomic_load(&l->asks) < 2LL * i && ts_now() < end) {
            sched_yield();
        }
        writer_round(l, i);
    }
    atomic_store(&l->writer_done, 1);
    return NULL;
}

static void load_free(void *p)
{
    pthread_mutex_destroy(&((load *)p)->bad_mu);
}

/* The set holds the stable routees, each once, and nothing else; a fresh
 * routee left only by stopping may take a moment to be pruned. */
static bool settled(load *l, ac_ref *router)
{
    ac_ref *got[64];
    long n = rt_routees(router, got, 64);
    if (n != STABLE) {
        return false;
    }
    for (int i = 0; i < STABLE; i++) {
        int times = 0;
        for (int j = 0; j < STABLE; j++) {
            times += got[j] == l->stable[i];
        }
        if (times != 1) {
            return false;
        }
    }
    return true;
}

static void test_changes_under_load(void **state)
{
    ts_fixture *fx = *state;
    load *l = ts_fx_data(fx, sizeof *l, load_free);
    pthread_mutex_init(&l->bad_mu, NULL);
    ac_system_options o = {.workers = 3};
    l->sys = ts_fx_system(fx, "group_load", &o);
    assert_non_null(l->sys);
    for (int i = 0; i < STABLE; i++) {
        char name[32];
        snprintf(name, sizeof name, "stable-%d", i + 1);
        l->stable[i] = ts_spawn(l->sys, &echo_def, NULL, name);
        assert_non_null(l->stable[i]);
    }
    l->rr = rt_spawn(l->sys, ac_router_group_round_robin(l->stable, STABLE), "rr");
    ac_scatter_gather_options so = {.timeout_ms = 4000};
    ac_props *sg = ac_router_group_scatter_gather_first_completed(l->stable, STABLE, &so);
    l->sg = rt_spawn(l->sys, sg, "sg");
    assert_non_null(l->rr);
    assert_non_null(l->sg);

    pthread_t w, a[ASKERS];
    for (int i = 0; i < ASKERS; i++) {
        assert_int_equal(pthread_create(&a[i], NULL, asker, l), 0);
    }
    assert_int_equal(pthread_create(&w, NULL, writer, l), 0);
    pthread_join(w, NULL);
    for (int i = 0; i < ASKERS; i++) {
        pthread_join(a[i], NULL);
    }
    if (atomic_load(&l->bad) != 0) {
        fail_msg("%lld of %lld asks answered wrongly; the first: %s",
                 (long long)atomic_load(&l->bad), (long long)atomic_load(&l->asks), l->bad_what);
    }
    assert_int_equal(atomic_load(&l->asks),
                     atomic_load(&l->ok) + atomic_load(&l->stopped_transient));
    double end = ts_now() + TS_WAIT_S;
    while (!(settled(l, l->rr) && settled(l, l->sg))) {
        if (ts_now() > end) {
            fail_msg("the sets did not settle to the stable routees");
        }
        ts_sleep_ms(1);
    }
    fprintf(stderr, "%lld asks, %lld of them picked a routee that had just stopped\n",
            (long long)atomic_load(&l->asks), (long long)atomic_load(&l->stopped_transient));
    ac_ref_release(l->rr);
    ac_ref_release(l->sg);
    for (int i = 0; i < STABLE; i++) {
        ac_ref_release(l->stable[i]);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_changes_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
