/*
 * The hedged router's latency order (hedge.h), on the manual clock: the
 * first attempt moves away from a routee that turned slow as soon as it
 * has lost one race, stays away while it is slow, and comes back once a
 * probe (a second attempt sent with the first, after the probe
 * interval) has seen it answer fast again; routees equally fast share
 * the first attempts in turn; a group's routees likewise. Then on the
 * real clock, from several threads at once: a routee that never answers
 * is passed over, and every ask is answered once, by a routee that does.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "hg_support.h"

static ac_ref *hedged(hg_data *d, int size, const ac_hedged_options *o)
{
    ac_routee_options ro = hg_routee_options(d);
    return hg_spawn(d, ac_router_hedged(size, &hg_routee_def, o, &ro), size);
}

/* Which routee answered (1..size); fails on anything but a reply. */
static int answered_by(hg_data *d, int size, const ac_answer *a, ac_status st)
{
    if (st != AC_OK || a->reply == NULL)
        fail_msg("no reply: %s", ac_status_name(st));
    for (int k = 1; k <= size; k++)
        if (a->sender == atomic_load(&d->self[k]))
            return k;
    fail_msg("the reply came from no routee");
    return 0;
}

/* One ask, the clock moved a millisecond at a time until it is answered
 * (within `most` ms); which routee answered. */
static int ask_until_answered(hg_data *d, int size, int most)
{
    ac_future *f = hg_ask(d, "k", 0);
    hg_quiesce(d);
    ac_answer a;
    for (int ms = 0; !ac_future_poll(f, &a); ms++) {
        if (ms == most)
            fail_msg("not answered within %d ms of the manual clock", most);
        hg_advance(d, 1);
    }
    int k = answered_by(d, size, &a, AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
    return k;
}

static uint64_t hedges_sent(hg_data *d)
{
    return hg_counter(d, "router_hedges_sent_total", NULL, 0);
}

static void test_primary_leaves_a_slow_routee_and_comes_back(void **state)
{
    hg_data *d = hg_setup(*state, "hg-order", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 1, false);
    ac_hedged_options o = {.timeout_ms = 1000, .delay_us = 10000, .probe_interval_ms = 100};
    ac_ref *router = hedged(d, 3, &o);
    /* Equally fast: the first attempts go round, none hedged. */
    for (int i = 0; i < 6; i++)
        assert_int_equal(ask_until_answered(d, 3, 5), i % 3 + 1);
    assert_int_equal(hedges_sent(d), 0);

    /* routee-1 turns slow: its next turn is hedged at 10 ms and lost. */
    hg_set(d, 1, 50, false);
    assert_int_equal(ask_until_answered(d, 3, 20), 2);
    assert_int_equal(hedges_sent(d), 1);
    hg_advance(d, 45); /* its own late reply */
    long long seen1 = atomic_load(&d->seen[1]);
    /* From then on it is passed over: no message starts there, none
     * waits for a hedge. */
    for (int i = 0; i < 9; i++) {
        int k = ask_until_answered(d, 3, 5);
        assert_true(k == 2 || k == 3);
    }
    assert_int_equal(atomic_load(&d->seen[1]), seen1);
    assert_int_equal(hedges_sent(d), 1);

    /* It recovers. Once it has gone unasked for the probe interval, the
     * next message asks it together with its first attempt. */
    hg_set(d, 1, 1, false);
    hg_advance(d, 100);
    ac_future *f = hg_ask(d, "probe", 0);
    hg_quiesce(d);
    assert_int_equal(atomic_load(&d->seen[1]), seen1 + 1); /* before any time passed */
    assert_int_equal(hedges_sent(d), 2);
    hg_advance(d, 1);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    (void)answered_by(d, 3, &a, AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);

    /* Fast again: it takes its turn as the first attempt. */
    int firsts[4] = {0};
    for (int i = 0; i < 6; i++)
        firsts[ask_until_answered(d, 3, 5)]++;
    assert_int_equal(firsts[1], 2);
    assert_int_equal(firsts[2], 2);
    assert_int_equal(firsts[3], 2);
    assert_int_equal(hedges_sent(d), 2);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(router);
}

/* The rotation order, for contrast: the slow routee keeps its turns. */
static void test_rotation_keeps_the_slow_routee(void **state)
{
    hg_data *d = hg_setup(*state, "hg-rotation", true, 0);
    for (int k = 1; k <= 3; k++)
        hg_set(d, k, 1, false);
    hg_set(d, 1, 50, false);
    ac_hedged_options o = {
        .timeout_ms = 1000, .delay_us = 10000, .order = AC_HEDGE_ORDER_ROTATION};
    ac_ref *router = hedged(d, 3, &o);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ask_until_answered(d, 3, 20), i % 3 == 0 ? 2 : i % 3 + 1);
        hg_advance(d, 50); /* routee-1's late replies */
    }
    assert_int_equal(hedges_sent(d), 2);
    assert_int_equal(atomic_load(&d->seen[1]), 2);
    ac_ref_release(router);
}

/* A group's routees are learnt as a pool's are. */
static void test_group_leaves_a_slow_routee(void **state)
{
    hg_data *d = hg_setup(*state, "hg-order-group", true, 0);
    ac_ref *refs[3];
    for (int k = 1; k <= 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "routee-%d", k);
        hg_set(d, k, 1, false);
        refs[k - 1] = ts_spawn(d->sys, &hg_routee_def, d, name);
        assert_non_null(refs[k - 1]);
        assert_eventually(ts_wait_ge(&d->starts[k], 1, TS_WAIT_S), "a routee to start");
    }
    ac_hedged_options o = {.timeout_ms = 1000, .delay_us = 10000};
    ac_props *props = ac_router_group_hedged(refs, 3, &o);
    assert_non_null(props);
    d->router = ac_spawn(d->sys, props, "replicas");
    assert_non_null(d->router);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ask_until_answered(d, 3, 5), i + 1);
    hg_set(d, 1, 50, false);
    assert_int_equal(ask_until_answered(d, 3, 20), 2); /* routee-1's turn, hedged */
    hg_advance(d, 45);
    long long seen1 = atomic_load(&d->seen[1]);
    for (int i = 0; i < 6; i++) {
        int k = ask_until_answered(d, 3, 5);
        assert_true(k == 2 || k == 3);
    }
    assert_int_equal(atomic_load(&d->seen[1]), seen1);
    assert_int_equal(hedges_sent(d), 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(d->router);
    for (int k = 0; k < 3; k++)
        ac_ref_release(refs[k]);
}

/* ---- concurrent senders ----------------------------------------------- */

#define THREADS 4
#define PER_THREAD (HG_TSAN ? 150 : 1000)

typedef struct senders {
    hg_data *d;
    atomic_llong ok, bad;
} senders;

static void *send_some(void *arg)
{
    senders *s = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        ac_answer a;
        ac_status st = ac_ask_wait(s->d->router, ac_msg_str_new("k"), HG_WAIT_MS, &a);
        bool good = st == AC_OK && a.reply &&
                    (a.sender == atomic_load(&s->d->self[2]) ||
                     a.sender == atomic_load(&s->d->self[3]));
        atomic_fetch_add(good ? &s->ok : &s->bad, 1);
        ac_answer_release(&a);
    }
    return NULL;
}

/* routee-1 never answers. Rotation would start a third of the messages
 * there; by latency it is asked far less often (its lost races, its
 * requests still out, and a probe now and then). */
static void test_concurrent_senders_pass_a_silent_routee_by(void **state)
{
    hg_data *d = hg_setup(*state, "hg-order-race", false, 0);
    hg_set(d, 1, HG_SILENT, false);
    hg_set(d, 2, 0, false);
    hg_set(d, 3, 0, false);
    ac_hedged_options o = {.timeout_ms = 60000, .delay_us = 2000};
    ac_ref *router = hedged(d, 3, &o);
    static senders s;
    s.d = d;
    atomic_store(&s.ok, 0);
    atomic_store(&s.bad, 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, send_some, &s), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&s.bad), 0);
    assert_int_equal(atomic_load(&s.ok), THREADS * PER_THREAD);
    long long silent = atomic_load(&d->seen[1]);
    if (silent * 6 > THREADS * PER_THREAD)
        fail_msg("the silent routee was asked %lld times for %d messages", silent,
                 THREADS * PER_THREAD);
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_status(ac_stop(router), AC_OK); /* its open requests fail now */
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_primary_leaves_a_slow_routee_and_comes_back),
        TS_UNIT(test_rotation_keeps_the_slow_routee),
        TS_UNIT(test_group_leaves_a_slow_routee),
        TS_UNIT(test_concurrent_senders_pass_a_silent_routee_by),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
