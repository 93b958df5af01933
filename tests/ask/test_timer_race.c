/*
 * Replies that land in the same tick as their ask's timeout, under load,
 * on the real clock: the collision between a settle that cancels the timer
 * and the timer firing it. Echo actors answer each request after T-1 or
 * T-2 ms, or, one request in three, within half a millisecond of T, to
 * the microsecond (a scheduled message to themselves, replying to the
 * request's sender); asks and scatters time out after T ms. So replies
 * win whenever the machine keeps up, and timeouts come whatever its
 * speed (an answer due after its timeout), many within microseconds of
 * their reply. Every one must settle exactly once, with a reply or a
 * timeout, and the wheel's count of armed timers must come back to zero.
 * Run under ThreadSanitizer, this is
 * the test of the wheel's ownership rule (a timer handed to the firing
 * thread is not cancellable).
 *
 * A third run makes a scatter's deadline fall while its router is still
 * sending the requests (a manual clock driven by a thread of its own).
 *
 * ACTORC_TEST_ASKS sets the number of requests (default 300,000 asks,
 * 100,000 scatters and 10,000 wide scatters); each run also stops issuing
 * after RUN_LIMIT_S.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>

#include "ts_test.h"

#define TIMEOUT_MS 3
#define MAX_IN_FLIGHT 2000
#define ECHOES 8
#define RUN_LIMIT_S 20.0

typedef struct race_data {
    atomic_llong in_flight;
    atomic_llong completed;
    atomic_llong replies;
    atomic_llong timeouts;
    atomic_llong other;
    atomic_llong duplicates;
    atomic_uchar *settled; /* per request: how many times it settled */
    long long issued;
} race_data;

static const ac_msg_type late_type = {.name = "test.LateReply"};

/* Request i (int64) is answered after TIMEOUT_MS - 1 or - 2 ms, or, one
 * in three, within half a millisecond either side of TIMEOUT_MS, to the
 * microsecond (a multiplier prime to the span spreads consecutive
 * requests over it): the scheduled message carries the request's sender,
 * and the reply goes to whoever sent that message. */
#define NEAR_US 1001

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &late_type)) {
        ac_reply(ctx, ac_msg_int64_new(1));
        return;
    }
    int64_t i = ac_msg_int64(msg);
    int64_t delay_us = i % 3 == 0 ? TIMEOUT_MS * 1000 - NEAR_US / 2 + (i * 7919) % NEAR_US
                                  : (TIMEOUT_MS - 1 - (i & 1)) * 1000;
    ac_cancellable *c = ac_schedule_once_us(ac_self(ctx), delay_us, ac_msg_new(&late_type, 0),
                                            ac_sender(ctx));
    ac_cancellable_release(c);
}

static const ac_actor_def echo_def = {.name = "LateEcho", .receive = echo_receive};

typedef struct request {
    race_data *d;
    long long id;
} request;

static void on_answer(const ac_answer *a, void *user)
{
    request *rq = user;
    race_data *d = rq->d;
    if (atomic_fetch_add(&d->settled[rq->id], 1) != 0)
        atomic_fetch_add(&d->duplicates, 1);
    if (!a->error)
        atomic_fetch_add(&d->replies, 1);
    else if (ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR) || ac_error_all_timeouts(a->error))
        atomic_fetch_add(&d->timeouts, 1);
    else
        atomic_fetch_add(&d->other, 1);
    free(rq);
    atomic_fetch_sub(&d->in_flight, 1);
    atomic_fetch_add(&d->completed, 1);
}

static void wait_for_room(race_data *d)
{
    while (atomic_load(&d->in_flight) >= MAX_IN_FLIGHT)
        ts_sleep_ms(0);
}

/* Issue up to `n` asks at targets[i % n_targets] with `timeout_ms`. */
static void issue(race_data *d, ac_ref **targets, int n_targets, long long n, int64_t timeout_ms)
{
    double start = ts_now();
    d->settled = calloc((size_t)n, sizeof *d->settled);
    assert_non_null(d->settled);
    for (long long i = 0; i < n && ts_now() - start < RUN_LIMIT_S; i++) {
        wait_for_room(d);
        request *rq = malloc(sizeof *rq);
        assert_non_null(rq);
        rq->d = d;
        rq->id = i;
        atomic_fetch_add(&d->in_flight, 1);
        ac_future *f = ac_ask(targets[i % n_targets], ac_msg_int64_new(i), timeout_ms);
        assert_non_null(f);
        assert_status(ac_future_on_complete(f, on_answer, rq), AC_OK);
        ac_future_release(f);
        d->issued = i + 1;
    }
}

static void check_settled(ac_system *sys, race_data *d, const char *what)
{
    assert_true(ts_wait_eq(&d->completed, d->issued, 30.0));
    printf("%s: %lld issued, %lld replies, %lld timeouts, %lld other\n", what, d->issued,
           (long long)atomic_load(&d->replies), (long long)atomic_load(&d->timeouts),
           (long long)atomic_load(&d->other));
    assert_int_equal(atomic_load(&d->duplicates), 0);
    for (long long i = 0; i < d->issued; i++)
        if (atomic_load(&d->settled[i]) != 1)
            fail_msg("%s %lld settled %d times", what, i, (int)atomic_load(&d->settled[i]));
    assert_int_equal(atomic_load(&d->other), 0);
    /* Both outcomes met: the run did reach the collision. */
    assert_true(atomic_load(&d->replies) > 0);
    assert_true(atomic_load(&d->timeouts) > 0);
    /* Nothing left armed, and no count that went below zero. */
    for (int i = 0; i < 3000 && ac_timers_armed(sys) != 0; i++)
        ts_sleep_ms(1);
    assert_int_equal(ac_timers_armed(sys), 0);
    free(d->settled);
}

static void test_ask_reply_meets_timeout(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options opts = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "ask_race", &opts);
    assert_non_null(sys);
    race_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_ref *echoes[ECHOES];
    for (int i = 0; i < ECHOES; i++) {
        char name[16];
        snprintf(name, sizeof name, "echo%d", i);
        echoes[i] = ts_spawn(sys, &echo_def, NULL, name);
        assert_non_null(echoes[i]);
    }
    issue(d, echoes, ECHOES, ts_env_long("ACTORC_TEST_ASKS", 300000), TIMEOUT_MS);
    check_settled(sys, d, "asks");
    for (int i = 0; i < ECHOES; i++)
        ac_ref_release(echoes[i]);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_scatter_reply_meets_deadline(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options opts = {.workers = 2};
    ac_system *sys = ts_fx_system(fx, "scatter_race", &opts);
    assert_non_null(sys);
    race_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_scatter_gather_options sg = {.timeout_ms = TIMEOUT_MS};
    ac_ref *router = ac_spawn(sys, ac_router_scatter_gather_first_completed(3, &echo_def, &sg, NULL),
                              "replicas");
    assert_non_null(router);
    /* The ask outlives the scatter's deadline: the scatter settles it. */
    issue(d, &router, 1, ts_env_long("ACTORC_TEST_ASKS", 300000) / 3, 5000);
    check_settled(sys, d, "scatters");
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A scatter's deadline falls while its router is still telling the
 * routees: the timer is armed before the requests go out, so it may claim
 * (and let go of) a slot whose request is not yet sent. A clock thread
 * advances the manual clock 1 ms at a time, so every 1 ms deadline falls
 * due at once, on the clock's thread, while the router's turn on a worker
 * tells 64 routees; the routees answer at once. Every scatter settles
 * once, with the first reply or with "none of 64 routees replied". */
#define WIDE_ROUTEES 64

typedef struct clock_driver {
    ac_system *sys;
    atomic_bool stop;
    atomic_llong advances;
} clock_driver;

static void *drive_clock(void *arg)
{
    clock_driver *c = arg;
    double start = ts_now();
    while (!atomic_load(&c->stop) && ts_now() - start < RUN_LIMIT_S + 30.0) {
        if (ac_clock_advance(c->sys, 1) != AC_OK)
            break;
        atomic_fetch_add(&c->advances, 1);
    }
    return NULL;
}

static void quick_echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_reply(ctx, ac_msg_int64_new(ac_msg_int64(msg)));
}

static const ac_actor_def quick_echo_def = {.name = "QuickEcho", .receive = quick_echo_receive};

static void test_scatter_deadline_meets_send(void **state)
{
    ts_fixture *fx = *state;
    ac_system_options opts = {.workers = 2, .manual_clock = true};
    ac_system *sys = ts_fx_system(fx, "scatter_send_race", &opts);
    assert_non_null(sys);
    race_data *d = ts_fx_data(fx, sizeof *d, NULL);
    ac_scatter_gather_options sg = {.timeout_ms = 1};
    ac_ref *router = ac_spawn(
        sys, ac_router_scatter_gather_first_completed(WIDE_ROUTEES, &quick_echo_def, &sg, NULL),
        "wide");
    assert_non_null(router);
    clock_driver c = {.sys = sys};
    pthread_t clock_thread;
    assert_int_equal(pthread_create(&clock_thread, NULL, drive_clock, &c), 0);
    /* The asks themselves never time out: the scatter settles them. */
    issue(d, &router, 1, ts_env_long("ACTORC_TEST_ASKS", 300000) / 30, INT32_MAX);
    bool all = ts_wait_eq(&d->completed, d->issued, 30.0);
    atomic_store(&c.stop, true);
    pthread_join(clock_thread, NULL);
    assert_true(all);
    assert_true(atomic_load(&c.advances) > 0);
    check_settled(sys, d, "wide scatters");
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ask_reply_meets_timeout, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_scatter_reply_meets_deadline, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_scatter_deadline_meets_send, ts_setup, ts_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
