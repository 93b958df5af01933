/*
 * Lazily armed ask timers (core/timers.c, "Lazy arming") on the real
 * clock, under load: a deadline a second or more away waits outside the
 * wheel, and a merge either places it or drops it once its ask has
 * settled. Two collisions, run under ThreadSanitizer too:
 *
 * - settle meets merge: asker actors on both workers ask quick echoes
 *   in a loop (ac_ask_in, 5 s timeouts), while the main thread keeps
 *   reading the armed count (each read merges every stripe) and the
 *   askers' own pushes merge their stripes; an ask settles while its
 *   timer is being placed. Every answer is the right one, and once the
 *   last has arrived nothing may be armed: a timer left in the wheel by
 *   the race would stay there for seconds.
 * - reply meets timeout: futures and actor asks with a 1 s timeout whose
 *   echoes answer after 999 or 998 ms, or, one in three, within half a
 *   millisecond of the deadline, to the microsecond. Every ask settles
 *   exactly once, with its reply or with AskTimeoutError, both occur,
 *   no timeout comes before its deadline, and the armed count comes back
 *   to zero.
 *
 * ACTORC_TEST_ASKS scales the counts (default 200,000 quick asks and
 * 6,000 late ones); each run also stops issuing after RUN_LIMIT_S.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>

#include "ts_test.h"

#define RUN_LIMIT_S 20.0
#define ASKERS 4
#define QUICK_TIMEOUT_MS 5000
#define LATE_TIMEOUT_MS 1000
#define LATE_IN_FLIGHT 2000
#define NEAR_US 1001

/* ---- settle meets merge ------------------------------------------------ */

typedef struct quick_data {
    ac_ref *echo;
    long long per_asker;
    double start;
    atomic_llong done;    /* askers finished */
    atomic_llong answered;
    atomic_llong wrong;
    atomic_bool stop;
} quick_data;

typedef struct asker_state {
    long long i;
} asker_state;

static void quick_echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_int64_new(ac_msg_int64(msg) + 1));
}

static const ac_actor_def quick_echo_def = {.name = "QuickEcho", .receive = quick_echo_receive};

static void ask_next(ac_ctx *ctx);

static void on_quick_answer(ac_ctx *ctx, const ac_answer *a, void *user)
{
    quick_data *d = user;
    asker_state *st = ac_ctx_state(ctx);
    int64_t v = 0;
    if (a->error || ac_msg_int64_get(a->reply, &v) != AC_OK || v != st->i + 1)
        atomic_fetch_add(&d->wrong, 1);
    atomic_fetch_add(&d->answered, 1);
    st->i++;
    ask_next(ctx);
}

static void ask_next(ac_ctx *ctx)
{
    quick_data *d = ac_ctx_user_data(ctx);
    asker_state *st = ac_ctx_state(ctx);
    if (st->i == d->per_asker || atomic_load(&d->stop)) {
        atomic_fetch_add(&d->done, 1);
        return;
    }
    ac_status s = ac_ask_in(ctx, d->echo, ac_msg_int64_new(st->i), QUICK_TIMEOUT_MS,
                            on_quick_answer, d, NULL);
    if (s != AC_OK) {
        atomic_fetch_add(&d->wrong, 1);
        atomic_fetch_add(&d->done, 1);
    }
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ask_next(ctx);
}

static const ac_actor_def asker_def = {
    .name = "Asker", .state_size = sizeof(asker_state), .receive = asker_receive};

static void test_settle_meets_merge(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options opts = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "lazy_merge", &opts);
    assert_non_null(sys);
    quick_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->per_asker = ts_env_long("ACTORC_TEST_ASKS", 200000) / ASKERS;
    d->echo = ts_spawn(sys, &quick_echo_def, NULL, "echo");
    assert_non_null(d->echo);
    ac_ref *askers[ASKERS];
    for (int i = 0; i < ASKERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "asker%d", i);
        askers[i] = ts_spawn(sys, &asker_def, d, name);
        assert_non_null(askers[i]);
    }
    d->start = ts_now();
    for (int i = 0; i < ASKERS; i++)
        assert_status(ac_tell(askers[i], ac_msg_int64_new(0), NULL), AC_OK);
    /* Merge from outside while the askers push and merge. */
    long long reads = 0;
    while (atomic_load(&d->done) < ASKERS && ts_now() - d->start < RUN_LIMIT_S + 30.0) {
        (void)ac_timers_armed(sys);
        reads++;
        if (ts_now() - d->start > RUN_LIMIT_S)
            atomic_store(&d->stop, true);
    }
    assert_int_equal(atomic_load(&d->done), ASKERS);
    printf("settle meets merge: %lld answered, %lld armed-count reads\n",
           (long long)atomic_load(&d->answered), reads);
    assert_int_equal(atomic_load(&d->wrong), 0);
    assert_true(atomic_load(&d->answered) > 0);
    /* Every ask has settled (each answer runs after its ask's cancel): no
     * timer may be left, without waiting for any deadline. */
    assert_int_equal(ac_timers_armed(sys), 0);
    for (int i = 0; i < ASKERS; i++)
        ac_ref_release(askers[i]);
    ac_ref_release(d->echo);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- reply meets timeout ---------------------------------------------- */

typedef struct late_data {
    atomic_llong in_flight;
    atomic_llong completed;
    atomic_llong replies;
    atomic_llong timeouts;
    atomic_llong other;
    atomic_llong duplicates;
    atomic_llong early; /* timeouts before the deadline */
    atomic_uchar *settled; /* per request: how many times it settled */
    long long issued;
} late_data;

static const ac_msg_type late_type = {.name = "test.LateReply"};

/* Request i is answered after LATE_TIMEOUT_MS - 1 or - 2 ms, or, one in
 * three, within half a millisecond either side of the deadline. */
static void late_echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &late_type)) {
        ac_reply(ctx, ac_msg_int64_new(1));
        return;
    }
    int64_t i = ac_msg_int64(msg);
    int64_t delay_us = i % 3 == 0
                           ? LATE_TIMEOUT_MS * 1000 - NEAR_US / 2 + (i * 7919) % NEAR_US
                           : (LATE_TIMEOUT_MS - 1 - (i & 1)) * 1000;
    ac_cancellable *c = ac_schedule_once_us(ac_self(ctx), delay_us, ac_msg_new(&late_type, 0),
                                            ac_sender(ctx));
    ac_cancellable_release(c);
}

static const ac_actor_def late_echo_def = {.name = "LateEcho", .receive = late_echo_receive};

/* asked_at: ts_now() before the ask was made, so never after its timer
 * was armed; a timeout must come at least LATE_TIMEOUT_MS after it. */
static void settle_late(late_data *d, long long id, double asked_at, const ac_answer *a)
{
    if (atomic_fetch_add(&d->settled[id], 1) != 0)
        atomic_fetch_add(&d->duplicates, 1);
    if (!a->error) {
        atomic_fetch_add(&d->replies, 1);
    } else if (ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR)) {
        atomic_fetch_add(&d->timeouts, 1);
        if (ts_now() - asked_at < LATE_TIMEOUT_MS / 1000.0)
            atomic_fetch_add(&d->early, 1);
    } else
        atomic_fetch_add(&d->other, 1);
    atomic_fetch_sub(&d->in_flight, 1);
    atomic_fetch_add(&d->completed, 1);
}

typedef struct late_request {
    late_data *d;
    long long id;
    double asked_at;
} late_request;

static void on_late_future(const ac_answer *a, void *user)
{
    late_request *rq = user;
    settle_late(rq->d, rq->id, rq->asked_at, a);
    free(rq);
}

/* Odd requests are asked from inside an actor: a relay that asks the
 * echo with ac_ask_in and counts the answer in its continuation. */
typedef struct relay_env {
    late_data *d;
    ac_ref *echo;
} relay_env;

static void on_late_answer(ac_ctx *ctx, const ac_answer *a, void *user)
{
    (void)ctx;
    late_request *rq = user;
    settle_late(rq->d, rq->id, rq->asked_at, a);
    free(rq);
}

static void relay_receive(ac_ctx *ctx, ac_msg *msg)
{
    relay_env *env = ac_ctx_user_data(ctx);
    late_request *rq = malloc(sizeof *rq);
    long long id = ac_msg_int64(msg);
    if (rq) {
        rq->d = env->d;
        rq->id = id;
        rq->asked_at = ts_now();
    }
    if (!rq || ac_ask_in(ctx, env->echo, ac_msg_int64_new(id), LATE_TIMEOUT_MS, on_late_answer,
                         rq, NULL) != AC_OK) {
        /* Counted as settled otherwise, so that the check names it. */
        free(rq);
        atomic_fetch_add(&env->d->other, 1);
        atomic_fetch_add(&env->d->settled[id], 1);
        atomic_fetch_sub(&env->d->in_flight, 1);
        atomic_fetch_add(&env->d->completed, 1);
    }
}

static const ac_actor_def relay_def = {.name = "Relay", .receive = relay_receive};

static void test_reply_meets_timeout(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options opts = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "lazy_late", &opts);
    assert_non_null(sys);
    late_data *d = ts_fx_data(fx, sizeof *d, NULL);
    relay_env env = {.d = d};
    env.echo = ts_spawn(sys, &late_echo_def, NULL, "echo");
    assert_non_null(env.echo);
    ac_ref *relay = ts_spawn(sys, &relay_def, &env, "relay");
    assert_non_null(relay);
    long long n = ts_env_long("ACTORC_TEST_ASKS", 200000) * 3 / 100;
    d->settled = calloc((size_t)n, sizeof *d->settled);
    assert_non_null(d->settled);
    double start = ts_now();
    for (long long i = 0; i < n && ts_now() - start < RUN_LIMIT_S; i++) {
        while (atomic_load(&d->in_flight) >= LATE_IN_FLIGHT)
            ts_sleep_ms(1);
        atomic_fetch_add(&d->in_flight, 1);
        d->issued = i + 1;
        if (i & 1) {
            assert_status(ac_tell(relay, ac_msg_int64_new(i), NULL), AC_OK);
            continue;
        }
        late_request *rq = malloc(sizeof *rq);
        assert_non_null(rq);
        rq->d = d;
        rq->id = i;
        rq->asked_at = ts_now();
        ac_future *f = ac_ask(env.echo, ac_msg_int64_new(i), LATE_TIMEOUT_MS);
        assert_non_null(f);
        assert_status(ac_future_on_complete(f, on_late_future, rq), AC_OK);
        ac_future_release(f);
    }
    assert_true(ts_wait_eq(&d->completed, d->issued, 30.0));
    printf("reply meets timeout: %lld issued, %lld replies, %lld timeouts, %lld other\n",
           d->issued, (long long)atomic_load(&d->replies), (long long)atomic_load(&d->timeouts),
           (long long)atomic_load(&d->other));
    assert_int_equal(atomic_load(&d->duplicates), 0);
    for (long long i = 0; i < d->issued; i++)
        if (atomic_load(&d->settled[i]) != 1)
            fail_msg("ask %lld settled %d times", i, (int)atomic_load(&d->settled[i]));
    assert_int_equal(atomic_load(&d->other), 0);
    assert_int_equal(atomic_load(&d->early), 0); /* never early */
    assert_true(atomic_load(&d->replies) > 0);
    assert_true(atomic_load(&d->timeouts) > 0);
    /* The echoes' scheduled replies may still be due: nothing of the asks
     * stays armed once they are out (generous: they fire within ms). */
    for (int i = 0; i < 3000 && ac_timers_armed(sys) != 0; i++)
        ts_sleep_ms(1);
    assert_int_equal(ac_timers_armed(sys), 0);
    free(d->settled);
    ac_ref_release(relay);
    ac_ref_release(env.echo);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_settle_meets_merge, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_reply_meets_timeout, ts_setup, ts_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
