/*
 * The cluster actor's timer (src/cluster/cluster_tick.c), white-box: the
 * beat falls on the first tick of each beat period of the shared phase,
 * however the ticks fall in it, and a beat-free cluster (a provider that
 * gates membership and a node that closes idle connections) sleeps until
 * the next thing due: on the beat until JOINED or while the provider says
 * so, else the next listing to retry, the provider's quiet time, or a
 * second. A cluster with beats ticks on the beat.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cluster_internal.h"
#include "cluster/provider.h"
#include "remote/node_internal.h"

/* ---- the beat on the shared phase ---------------------------------------- */

static void test_beat_on_first_tick_of_each_period(void **state)
{
    (void)state;
    ac_cluster c = {.beat_every = 5, .beat_phase_ms = 0, .beat_epoch = -1};
    /* Ticks every 100 ms: a beat at 0, 500, 1000 and on no tick between. */
    for (int64_t t = 0; t <= 1400; t += AC__CLUSTER_BEAT_MS)
        if (ac__cluster_beat_due(&c, t) != (t % 500 == 0))
            fail_msg("at %lld ms: a beat %s", (long long)t, t % 500 ? "between periods" : "missed");
    /* A late tick (530) is still the first of its period; the next one
     * in the same period (600) beats no more. */
    assert_true(ac__cluster_beat_due(&c, 1530));
    assert_false(ac__cluster_beat_due(&c, 1600));
    assert_false(ac__cluster_beat_due(&c, 1999));
    assert_true(ac__cluster_beat_due(&c, 2000));
    /* An extra tick (a note) in a period that beat already: none. */
    assert_false(ac__cluster_beat_due(&c, 2001));
}

static void test_beat_follows_the_phase(void **state)
{
    (void)state;
    /* This system's clock is 200 ms behind the shared one (mod 500): its
     * periods start at 300, 800, ... of its own clock. */
    ac_cluster c = {.beat_every = 5, .beat_phase_ms = 200, .beat_epoch = -1};
    assert_true(ac__cluster_beat_due(&c, 0)); /* the first tick beats */
    assert_false(ac__cluster_beat_due(&c, 200));
    assert_true(ac__cluster_beat_due(&c, 300));
    assert_false(ac__cluster_beat_due(&c, 700));
    assert_true(ac__cluster_beat_due(&c, 800));
    /* Every tick a period of its own (the default heartbeats). */
    ac_cluster d = {.beat_every = 1, .beat_phase_ms = 0, .beat_epoch = -1};
    for (int64_t t = 0; t <= 1000; t += AC__CLUSTER_BEAT_MS)
        assert_true(ac__cluster_beat_due(&d, t));
}

/* ---- a beat-free cluster's next tick ---------------------------------------- */

static int64_t quiet_answer;
static int64_t fake_quiet_ms(void *s)
{
    (void)s;
    return quiet_answer;
}

static const ac__provider_ops gating = {.name = "fake", .listed_only = true,
                                        .quiet_ms = fake_quiet_ms};
static const ac__provider_ops seeds = {.name = "fake-seeds", .listed_only = false};

typedef struct fixture {
    ac_node node;
    ac_cluster c;
} fixture;

static fixture *fixture_new(const ac__provider_ops *ops, int idle_timeout_ms,
                            ac_cluster_state state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->node.options.idle_timeout_ms = idle_timeout_ms;
    f->c.node = &f->node;
    f->c.provider = ops;
    f->c.retry_initial_ms = 50;
    f->c.status.state = state;
    pthread_mutex_init(&f->c.lock, NULL);
    return f;
}

static void fixture_free(fixture *f)
{
    ac__listings_free(&f->c);
    pthread_mutex_destroy(&f->c.lock);
    free(f);
}

static void test_with_beats_on_the_beat(void **state)
{
    (void)state;
    fixture *f = fixture_new(&seeds, 1000, AC_CLUSTER_JOINED); /* static: beats */
    assert_false(ac__cluster_beats_off(&f->c));
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), AC__CLUSTER_BEAT_MS);
    fixture_free(f);
    f = fixture_new(&gating, 0, AC_CLUSTER_JOINED); /* connections kept: beats */
    assert_false(ac__cluster_beats_off(&f->c));
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), AC__CLUSTER_BEAT_MS);
    fixture_free(f);
}

static void test_beat_free_sleeps_until_due(void **state)
{
    (void)state;
    fixture *f = fixture_new(&gating, 1000, AC_CLUSTER_JOINING);
    assert_true(ac__cluster_beats_off(&f->c));
    quiet_answer = 5000;
    /* Not joined yet: on the beat. */
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), AC__CLUSTER_BEAT_MS);
    f->c.status.state = AC_CLUSTER_RETRYING;
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), AC__CLUSTER_BEAT_MS);
    /* Joined, nothing due: a second at most. */
    f->c.status.state = AC_CLUSTER_JOINED;
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), 1000);
    /* The provider's quiet time, when sooner (a lease to check). */
    quiet_answer = 420;
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), 420);
    quiet_answer = 0;
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), 1); /* due now: at once */
    quiet_answer = -1; /* the provider is not settled: on the beat */
    assert_int_equal(ac__cluster_tick_delay(&f->c, 0), AC__CLUSTER_BEAT_MS);
    /* A listing with no member there, to be tried at 10,250 ms. */
    quiet_answer = 5000;
    ac__listing *l = ac__listing_add(&f->c, "127.0.0.1:7001", 7);
    assert_non_null(l);
    l->next_ms = 10250;
    assert_int_equal(ac__cluster_tick_delay(&f->c, 10000), 250);
    assert_int_equal(ac__cluster_tick_delay(&f->c, 10300), 1); /* overdue: at once */
    assert_int_equal(ac__cluster_tick_delay(&f->c, 9000), 1000); /* far off: a second */
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beat_on_first_tick_of_each_period),
        cmocka_unit_test(test_beat_follows_the_phase),
        cmocka_unit_test(test_with_beats_on_the_beat),
        cmocka_unit_test(test_beat_free_sleeps_until_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
