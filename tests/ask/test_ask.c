/*
 * Ask: replies, error replies, timeouts on the manual clock, late replies,
 * asks to stopped actors, many concurrent asks, asks from inside actors
 * (with and without a continuation), futures and their callbacks, and bad
 * arguments.
 *
 * Every timeout is checked on the manual clock. Waits for anything else are
 * bounded (TS_WAIT_S) so that a broken runtime fails the test instead of
 * hanging it.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#define WAIT_MS ((int64_t)(TS_WAIT_S * 1000))

/* ---- messages ----------------------------------------------------------- */

/* Commands are strings; requests are int64 values (or counted messages)
 * that the echo actor answers with 2v+1. */
#define CMD_PING "ping"          /* count a pong: a barrier for the sender */
#define CMD_FAIL "fail"          /* echo: reply with a UserError */
#define CMD_TWICE "twice"        /* echo: reply 1, then 2 */
#define CMD_REPLY_NOW "reply-now" /* holder: answer the request it kept */

/* A message type whose destroy hook counts: shows that a message was
 * freed (not leaked, not kept) without looking inside the runtime. */
static atomic_llong g_destroyed;

typedef struct counted {
    int64_t value;
} counted;

static void counted_destroy(void *payload, size_t size)
{
    (void)payload;
    (void)size;
    atomic_fetch_add(&g_destroyed, 1);
}

static const ac_msg_type counted_type = {.name = "test.Counted", .destroy = counted_destroy};

static ac_msg *counted_new(int64_t value)
{
    ac_msg *m = ac_msg_new(&counted_type, sizeof(counted));
    assert_non_null(m);
    ((counted *)ac_msg_payload(m))->value = value;
    return m;
}

static bool request_value(const ac_msg *msg, int64_t *v)
{
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        *v = ac_msg_int64(msg);
        return true;
    }
    if (ac_msg_is(msg, &counted_type)) {
        *v = ((const counted *)ac_msg_data(msg))->value;
        return true;
    }
    return false;
}

static bool is_cmd(const ac_msg *msg, const char *cmd)
{
    return ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), cmd) == 0;
}

/* ---- shared test data ----------------------------------------------------- */

#define MANY_THREADS 4
#define MANY_PER_THREAD 25000
#define MANY (MANY_THREADS * MANY_PER_THREAD)

typedef struct ask_data {
    ac_system *sys;
    atomic_llong requests;  /* requests seen by echo/silent/holder */
    atomic_llong pongs;
    atomic_llong replied;   /* holder: late replies sent; echo: "twice" done */
    atomic_llong bad;       /* an actor saw something wrong */
    ts_recorder *rec;
    /* many concurrent asks */
    atomic_int *seen;       /* per value: requests seen by the repliers */
    atomic_int *called;     /* per value: on_complete calls */
    ac_ref *repliers[2];
    atomic_llong thread_bad;
    /* asks from inside actors */
    ac_ref *target;         /* whom the asker asks */
    char target_path[160];
    char asker_path[160];
    int64_t timeout_ms;
    atomic_llong finished;
    atomic_llong sum;
    atomic_llong answers;
    atomic_int status;      /* a status seen inside an actor */
    atomic_int status2;
    ac_future *pending;     /* a future for an actor to try to wait on */
} ask_data;

static void ask_data_free(void *p)
{
    ask_data *d = p;
    free(d->seen);
    free(d->called);
}

static ask_data *setup(ts_fixture *fx, bool manual)
{
    ask_data *d = ts_fx_data(fx, sizeof *d, ask_data_free);
    d->rec = ts_fx_rec(fx);
    /* Every level on, so that a stray line (say, about a late reply) is
     * captured whatever ACTORC_LOG_LEVEL says. */
    ac_system_options o = {.manual_clock = manual, .log_level = AC_LOG_DEBUG};
    d->sys = ts_fx_system(fx, manual ? "ask-manual" : "ask-real", &o);
    assert_non_null(d->sys);
    atomic_store(&g_destroyed, 0);
    return d;
}

/* ---- actors --------------------------------------------------------------- */

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    int64_t v;
    if (request_value(msg, &v)) {
        atomic_fetch_add(&d->requests, 1);
        if (d->seen != NULL) {
            if (v < 0 || v >= MANY) {
                atomic_fetch_add(&d->bad, 1);
                return;
            }
            atomic_fetch_add(&d->seen[v], 1);
        }
        ac_reply(ctx, ac_msg_int64_new(2 * v + 1));
    } else if (is_cmd(msg, CMD_FAIL)) {
        atomic_fetch_add(&d->requests, 1);
        ac_reply(ctx, ac_msg_error_new(ac_error_new("UserError", "no such key %s", "k1")));
    } else if (is_cmd(msg, CMD_TWICE)) {
        atomic_fetch_add(&d->requests, 1);
        ac_reply(ctx, ac_msg_int64_new(1));
        ac_reply(ctx, counted_new(2));
        atomic_fetch_add(&d->replied, 1);
    } else if (is_cmd(msg, CMD_PING)) {
        atomic_fetch_add(&d->pongs, 1);
    } else {
        atomic_fetch_add(&d->bad, 1);
    }
}

static const ac_actor_def echo_def = {.name = "Echo", .receive = echo_receive};

/* Never answers. */
static void silent_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    if (is_cmd(msg, CMD_PING)) {
        atomic_fetch_add(&d->pongs, 1);
    } else {
        atomic_fetch_add(&d->requests, 1);
    }
}

static const ac_actor_def silent_def = {.name = "Silent", .receive = silent_receive};

/* Keeps the sender of the first request; answers it on CMD_REPLY_NOW. */
typedef struct holder_state {
    ac_ref *held;
} holder_state;

static void holder_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    holder_state *st = ac_ctx_state(ctx);
    if (is_cmd(msg, CMD_REPLY_NOW)) {
        if (st->held == NULL) {
            atomic_fetch_add(&d->bad, 1);
            return;
        }
        ac_tell(st->held, counted_new(99), ac_self(ctx));
        ac_tell(st->held, ac_msg_error_new(ac_error_new("Late", "too late")), ac_self(ctx));
        ac_ref_release(st->held);
        st->held = NULL;
        atomic_fetch_add(&d->replied, 1);
    } else if (is_cmd(msg, CMD_PING)) {
        atomic_fetch_add(&d->pongs, 1);
    } else {
        atomic_fetch_add(&d->requests, 1);
        if (st->held == NULL && ac_sender(ctx) != NULL) {
            st->held = ac_ref_retain(ac_sender(ctx));
        }
    }
}

static void holder_post_stop(ac_ctx *ctx)
{
    holder_state *st = ac_ctx_state(ctx);
    ac_ref_release(st->held);
    st->held = NULL;
}

static const ac_actor_def holder_def = {.name = "Holder",
                                        .state_size = sizeof(holder_state),
                                        .receive = holder_receive,
                                        .post_stop = holder_post_stop};

/* Watches on request and counts Terminated. */
static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        atomic_fetch_add(&d->finished, 1);
    } else if (is_cmd(msg, "watch")) {
        ac_watch(ctx, d->target);
    }
}

static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

/* A barrier: once the actor has counted this ping, everything this thread
 * sent to it before has been handled. */
static void sync_with(ask_data *d, ac_ref *ref)
{
    long long before = atomic_load(&d->pongs);
    assert_status(ac_tell(ref, ac_msg_str_new(CMD_PING), NULL), AC_OK);
    assert_eventually(ts_wait_ge(&d->pongs, before + 1, TS_WAIT_S), "the actor to handle a ping");
}

static bool contains(const char *haystack, const char *needle)
{
    return haystack != NULL && strstr(haystack, needle) != NULL;
}

/* ---- replies -------------------------------------------------------------- */

static void test_ask_wait_reply(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, false);
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(echo);

    ac_answer a;
    memset(&a, 0xab, sizeof a);
    assert_status(ac_ask_wait(echo, ac_msg_int64_new(20), WAIT_MS, &a), AC_OK);
    assert_non_null(a.reply);
    assert_null(a.error);
    assert_int_equal(ac_msg_int64(a.reply), 41);
    assert_non_null(a.sender);
    assert_string_equal(ac_ref_path(a.sender), ac_ref_path(echo));
    ac_answer_release(&a);
    assert_null(a.reply);
    assert_null(a.sender);

    /* The request message is consumed: freed once the echo is done. */
    assert_status(ac_ask_wait(echo, counted_new(3), WAIT_MS, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 7);
    ac_answer_release(&a);
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the request to be freed");

    assert_int_equal(atomic_load(&d->requests), 2);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(echo);
}

static void test_ask_error_reply(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, false);
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(echo);

    ac_answer a;
    assert_status(ac_ask_wait(echo, ac_msg_str_new(CMD_FAIL), WAIT_MS, &a), AC_EFAILED);
    assert_null(a.reply);
    assert_non_null(a.error);
    assert_string_equal(ac_error_name(a.error), "UserError");
    assert_string_equal(ac_error_message(a.error), "no such key k1");
    assert_non_null(a.sender);
    assert_string_equal(ac_ref_path(a.sender), ac_ref_path(echo));
    ac_answer_release(&a);

    /* The same through a future. */
    ac_future *f = ac_ask(echo, ac_msg_str_new(CMD_FAIL), WAIT_MS);
    assert_non_null(f);
    assert_status(ac_future_wait(f, WAIT_MS, &a), AC_EFAILED);
    assert_true(ac_error_is(a.error, "UserError"));
    assert_null(a.reply);
    ac_answer_release(&a);
    ac_answer b;
    assert_true(ac_future_poll(f, &b));
    assert_true(ac_error_is(b.error, "UserError"));
    assert_string_equal(ac_ref_path(b.sender), ac_ref_path(echo));
    ac_answer_release(&b);
    ac_future_release(f);

    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(echo);
}

/* ---- timeouts on the manual clock ----------------------------------------- */

static void test_ask_timeout(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);

    ac_future *f = ac_ask(silent, ac_msg_int64_new(1), 250);
    assert_non_null(f);
    assert_eventually(ts_wait_eq(&d->requests, 1, TS_WAIT_S), "the request to arrive");
    assert_int_equal(ac_timers_armed(d->sys), 1);
    assert_false(ac_future_poll(f, NULL));

    assert_status(ac_clock_advance(d->sys, 249), AC_OK);
    assert_int_equal(ac_clock_now_ms(d->sys), 249);
    ac_answer a;
    assert_false(ac_future_poll(f, &a));
    assert_null(a.reply);
    assert_null(a.error);
    assert_int_equal(ac_timers_armed(d->sys), 1);

    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    assert_true(ac_future_poll(f, &a));
    assert_null(a.reply);
    assert_null(a.sender);
    assert_non_null(a.error);
    assert_string_equal(ac_error_name(a.error), AC_ASK_TIMEOUT_ERROR);
    assert_string_equal(ac_error_name(a.error), "AskTimeoutError");
    const char *text = ac_error_message(a.error);
    if (!contains(text, ac_ref_path(silent)) || !contains(text, "250 ms")) {
        fail_msg("timeout message \"%s\" should name %s and \"250 ms\"", text,
                 ac_ref_path(silent));
    }
    ac_answer_release(&a);

    ac_answer w;
    assert_status(ac_future_wait(f, 0, &w), AC_ETIMEOUT);
    assert_true(ac_error_is(w.error, AC_ASK_TIMEOUT_ERROR));
    ac_answer_release(&w);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_future_release(f);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(silent);
}

static void test_default_timeout(void **state)
{
    ts_fixture *fx = *state;
    _Static_assert(AC_ASK_DEFAULT_TIMEOUT_MS == 5000, "default ask timeout");
    ask_data *d = setup(fx, true);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);

    ac_future *f = ac_ask(silent, ac_msg_int64_new(1), 0);
    assert_non_null(f);
    assert_status(ac_clock_advance(d->sys, 4000), AC_OK);
    assert_false(ac_future_poll(f, NULL));
    assert_status(ac_clock_advance(d->sys, 999), AC_OK);
    assert_false(ac_future_poll(f, NULL));
    assert_int_equal(ac_timers_armed(d->sys), 1);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
    if (!contains(ac_error_message(a.error), "5000 ms")) {
        fail_msg("timeout message \"%s\" should name \"5000 ms\"", ac_error_message(a.error));
    }
    ac_answer_release(&a);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_future_release(f);
    ac_ref_release(silent);
}

/* A callback's answer maps to the status ac_ask_wait returns for it. */
static void test_answer_status(void **state)
{
    (void)state;
    struct {
        const char *name; /* NULL: a reply */
        ac_status want;
    } cases[] = {{NULL, AC_OK},
                 {AC_ASK_TIMEOUT_ERROR, AC_ETIMEOUT},
                 {AC_ACTOR_STOPPED_ERROR, AC_EDEAD},
                 {AC_UNDELIVERABLE_ERROR, AC_EDEAD},
                 {AC_AGGREGATE_ERROR, AC_EFAILED},
                 {"test.Oops", AC_EFAILED}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ac_answer a = {0};
        if (cases[i].name)
            a.error = ac_error_new(cases[i].name, "case %zu", i);
        else
            a.reply = ac_msg_int64_new(1);
        assert_status(ac_answer_status(&a), cases[i].want);
        ac_answer_release(&a);
    }
    assert_status(ac_answer_status(NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
}

static void test_future_wait_pending(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);

    ac_future *f = ac_ask(silent, ac_msg_int64_new(1), 1000);
    assert_non_null(f);
    ac_answer a;
    memset(&a, 0xab, sizeof a);
    double t0 = ts_now();
    assert_status(ac_future_wait(f, 20, &a), AC_EPENDING);
    double waited = ts_now() - t0;
    assert_null(a.reply);
    assert_null(a.error);
    assert_null(a.sender);
    assert_true(waited < TS_WAIT_S);
    memset(&a, 0xab, sizeof a);
    assert_status(ac_future_wait(f, 0, &a), AC_EPENDING);
    assert_null(a.error);
    assert_false(ac_future_poll(f, NULL));

    /* Settles later all the same. */
    assert_status(ac_clock_advance(d->sys, 1000), AC_OK);
    assert_status(ac_future_wait(f, 0, &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_future_release(f);

    /* A future released while pending: the ask still settles and leaves
     * nothing behind. */
    ac_future *g = ac_ask(silent, counted_new(1), 100);
    assert_non_null(g);
    ac_future_release(g);
    assert_int_equal(ac_timers_armed(d->sys), 1);
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the request to be freed");

    /* And one still pending when the system terminates (checked for leaks
     * by the sanitizer build). */
    ac_future *h = ac_ask(silent, ac_msg_int64_new(2), 100);
    assert_non_null(h);
    ac_future_release(h);
    ac_ref_release(silent);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- late replies --------------------------------------------------------- */

static void test_late_reply_dropped(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ts_log_capture *log = ts_fx_log(fx);
    ac_ref *holder = ts_spawn(d->sys, &holder_def, d, "holder");
    assert_non_null(holder);

    ac_future *f = ac_ask(holder, ac_msg_int64_new(5), 100);
    assert_non_null(f);
    assert_eventually(ts_wait_eq(&d->requests, 1, TS_WAIT_S), "the request to arrive");
    assert_status(ac_clock_advance(d->sys, 100), AC_OK);
    ac_answer a;
    assert_true(ac_future_poll(f, &a));
    assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
    ac_answer_release(&a);

    uint64_t dl = ac_dead_letter_count(d->sys);
    size_t lines = ts_log_count(log);

    /* The holder now answers twice (a reply and an error reply). */
    assert_status(ac_tell(holder, ac_msg_str_new(CMD_REPLY_NOW), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->replied, 1, TS_WAIT_S), "the late replies to be sent");
    /* The late reply was freed, not kept or delivered anywhere. */
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the late reply to be freed");
    sync_with(d, holder);

    assert_int_equal(ac_dead_letter_count(d->sys), dl);
    if (ts_log_count(log) != lines) {
        ts_log_dump(log, "log after the late reply");
        fail_msg("a late reply wrote %zu log line(s)", ts_log_count(log) - lines);
    }
    /* The ask keeps its first outcome. */
    assert_true(ac_future_poll(f, &a));
    assert_true(ac_error_is(a.error, AC_ASK_TIMEOUT_ERROR));
    assert_null(a.reply);
    ac_answer_release(&a);
    assert_status(ac_future_wait(f, 0, &a), AC_ETIMEOUT);
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(atomic_load(&d->bad), 0);
    ac_ref_release(holder);
}

static void test_second_reply_dropped(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ts_log_capture *log = ts_fx_log(fx);
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(echo);
    size_t lines = ts_log_count(log);

    ac_future *f = ac_ask(echo, ac_msg_str_new(CMD_TWICE), 1000);
    assert_non_null(f);
    ac_answer a;
    assert_status(ac_future_wait(f, WAIT_MS, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 1);
    ac_answer_release(&a);
    assert_eventually(ts_wait_eq(&d->replied, 1, TS_WAIT_S), "both replies to be sent");
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the second reply to be freed");

    assert_status(ac_future_wait(f, 0, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 1);
    ac_answer_release(&a);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    assert_int_equal(ts_log_count(log), lines);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_future_release(f);
    ac_ref_release(echo);
}

/* ---- stopped targets ------------------------------------------------------ */

static void stop_and_wait(ask_data *d, ac_ref *target)
{
    d->target = target;
    ac_ref *watcher = ts_spawn(d->sys, &watcher_def, d, NULL);
    assert_non_null(watcher);
    assert_status(ac_tell(watcher, ac_msg_str_new("watch"), NULL), AC_OK);
    assert_status(ac_stop(target), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the target to stop");
    ac_ref_release(watcher);
}

static void test_ask_stopped_actor(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "gone");
    assert_non_null(echo);
    stop_and_wait(d, echo);
    uint64_t dl = ac_dead_letter_count(d->sys);

    /* With the clock standing still, only a fast failure can settle it. */
    ac_future *f = ac_ask(echo, counted_new(1), 1000);
    assert_non_null(f);
    ac_answer a;
    assert_status(ac_future_wait(f, WAIT_MS, &a), AC_EDEAD);
    assert_null(a.reply);
    assert_non_null(a.error);
    assert_string_equal(ac_error_name(a.error), AC_ACTOR_STOPPED_ERROR);
    assert_string_equal(ac_error_name(a.error), "ActorStoppedError");
    assert_true(ts_nonempty(ac_error_message(a.error)));
    ac_answer_release(&a);
    ac_future_release(f);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    assert_eventually(ts_wait_dead_letters(d->sys, dl + 1, TS_WAIT_S), "a dead letter");
    assert_int_equal(ac_dead_letter_count(d->sys), dl + 1);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the request to be freed");

    /* Blocking, too. */
    assert_status(ac_ask_wait(echo, ac_msg_int64_new(2), 1000, &a), AC_EDEAD);
    assert_true(ac_error_is(a.error, AC_ACTOR_STOPPED_ERROR));
    assert_null(a.reply);
    ac_answer_release(&a);
    assert_int_equal(ac_dead_letter_count(d->sys), dl + 2);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(atomic_load(&d->requests), 0);
    ac_ref_release(echo);
}

/* ---- many concurrent asks --------------------------------------------------- */

typedef struct many_arg {
    ask_data *d;
    int t;
    double deadline;
} many_arg;

static void many_on_complete(const ac_answer *answer, void *user)
{
    (void)answer;
    atomic_fetch_add((atomic_int *)user, 1);
}

static void *many_thread(void *p)
{
    many_arg *arg = p;
    ask_data *d = arg->d;
    ac_ref *target = d->repliers[arg->t % 2];
    ac_future **fs = calloc(MANY_PER_THREAD, sizeof *fs);
    if (fs == NULL) {
        abort();
    }
    int64_t base = (int64_t)arg->t * MANY_PER_THREAD;
    for (int i = 0; i < MANY_PER_THREAD; i++) {
        int64_t v = base + i;
        fs[i] = ac_ask(target, ac_msg_int64_new(v), 0);
        if (fs[i] == NULL ||
            ac_future_on_complete(fs[i], many_on_complete, &d->called[v]) != AC_OK) {
            atomic_fetch_add(&d->thread_bad, 1);
        }
    }
    for (int i = 0; i < MANY_PER_THREAD; i++) {
        if (fs[i] == NULL) {
            continue;
        }
        int64_t v = base + i;
        int64_t left = (int64_t)((arg->deadline - ts_now()) * 1000);
        ac_answer a;
        ac_status st = ac_future_wait(fs[i], left > 0 ? left : 0, &a);
        if (st != AC_OK || a.reply == NULL || ac_msg_int64(a.reply) != 2 * v + 1 ||
            strcmp(ac_ref_path(a.sender), ac_ref_path(target)) != 0) {
            if (atomic_fetch_add(&d->thread_bad, 1) < 5) {
                ts_rec_add(d->rec, "ask %lld: %s, reply %lld", (long long)v, ac_status_name(st),
                           (long long)ac_msg_int64(a.reply));
            }
        }
        ac_answer_release(&a);
        ac_future_release(fs[i]);
    }
    free(fs);
    return NULL;
}

static void test_many_concurrent_asks(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->seen = calloc(MANY, sizeof *d->seen);
    d->called = calloc(MANY, sizeof *d->called);
    assert_non_null(d->seen);
    assert_non_null(d->called);
    d->repliers[0] = ts_spawn(d->sys, &echo_def, d, "r0");
    d->repliers[1] = ts_spawn(d->sys, &echo_def, d, "r1");
    assert_non_null(d->repliers[0]);
    assert_non_null(d->repliers[1]);

    pthread_t th[MANY_THREADS];
    many_arg args[MANY_THREADS];
    double deadline = ts_now() + 60.0;
    for (int t = 0; t < MANY_THREADS; t++) {
        args[t] = (many_arg){.d = d, .t = t, .deadline = deadline};
        assert_int_equal(pthread_create(&th[t], NULL, many_thread, &args[t]), 0);
    }
    for (int t = 0; t < MANY_THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    if (atomic_load(&d->thread_bad) != 0) {
        ts_rec_dump(d->rec, "bad answers");
        fail_msg("%lld asks were not answered right", (long long)atomic_load(&d->thread_bad));
    }
    long long seen_bad = 0, called_bad = 0;
    for (int v = 0; v < MANY; v++) {
        seen_bad += atomic_load(&d->seen[v]) != 1;
        called_bad += atomic_load(&d->called[v]) != 1;
    }
    assert_int_equal(seen_bad, 0);
    assert_int_equal(called_bad, 0);
    assert_int_equal(atomic_load(&d->requests), MANY);
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(d->repliers[0]);
    ac_ref_release(d->repliers[1]);
}

/* ---- asks from inside actors ------------------------------------------------ */

#define IN_ASKS 1000

enum { BAD_NOT_IN_ACTOR = 1, BAD_SELF = 2, BAD_SENDER = 4, BAD_REPLY = 8, BAD_ID = 16,
       BAD_STATUS = 32, BAD_ERROR = 64 };

typedef struct asker_state {
    int asked;
    int done;         /* answers handled: plain state, no locks */
    int64_t sum;
    uint64_t ids[IN_ASKS];
    uint8_t answered[IN_ASKS];
} asker_state;

static void flag_bad(ask_data *d, int what)
{
    atomic_fetch_or(&d->bad, what);
}

static void check_turn(ac_ctx *ctx, ask_data *d)
{
    if (!ac_in_actor()) {
        flag_bad(d, BAD_NOT_IN_ACTOR);
    }
    if (strcmp(ac_self_path(ctx), d->asker_path) != 0) {
        flag_bad(d, BAD_SELF);
    }
}

static void continuation(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    ask_data *d = ac_ctx_user_data(ctx);
    asker_state *st = ac_ctx_state(ctx);
    int64_t i = (int64_t)(intptr_t)user;
    check_turn(ctx, d);
    if (ac_sender(ctx) == NULL || strcmp(ac_ref_path(ac_sender(ctx)), d->target_path) != 0) {
        flag_bad(d, BAD_SENDER);
    }
    if (answer == NULL || answer->error != NULL || answer->reply == NULL ||
        ac_msg_int64(answer->reply) != 2 * i + 1 || answer->sender == NULL ||
        strcmp(ac_ref_path(answer->sender), d->target_path) != 0) {
        flag_bad(d, BAD_REPLY);
        return;
    }
    if (i < 0 || i >= IN_ASKS || st->answered[i]) {
        flag_bad(d, BAD_ID);
        return;
    }
    st->answered[i] = 1;
    st->done++;
    st->sum += ac_msg_int64(answer->reply);
    if (st->done == IN_ASKS) {
        atomic_store(&d->sum, st->sum);
        atomic_fetch_add(&d->finished, 1);
    }
}

static void asker_cont_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    asker_state *st = ac_ctx_state(ctx);
    if (!is_cmd(msg, "go")) {
        flag_bad(d, BAD_REPLY);
        return;
    }
    for (int i = 0; i < IN_ASKS; i++) {
        uint64_t id = 0;
        ac_status s = ac_ask_in(ctx, d->target, ac_msg_int64_new(i), 0, continuation,
                                (void *)(intptr_t)i, &id);
        if (s != AC_OK) {
            flag_bad(d, BAD_STATUS);
        }
        if (id == 0) {
            flag_bad(d, BAD_ID);
        }
        for (int j = 0; j < i && j < 8; j++) {
            if (st->ids[i - 1 - j] == id) {
                flag_bad(d, BAD_ID);
            }
        }
        st->ids[i] = id;
        st->asked++;
    }
}

static const ac_actor_def asker_cont_def = {.name = "AskerCont",
                                            .state_size = sizeof(asker_state),
                                            .receive = asker_cont_receive};

static void spawn_asker(ask_data *d, const ac_actor_def *def, ac_ref **asker)
{
    snprintf(d->target_path, sizeof d->target_path, "%s", ac_ref_path(d->target));
    *asker = ts_spawn(d->sys, def, d, "asker");
    assert_non_null(*asker);
    snprintf(d->asker_path, sizeof d->asker_path, "%s", ac_ref_path(*asker));
}

static void test_ask_in_continuation(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(d->target);
    ac_ref *asker;
    spawn_asker(d, &asker_cont_def, &asker);

    assert_status(ac_tell(asker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "every continuation to run");
    assert_int_equal(atomic_load(&d->bad), 0);
    /* sum of 2i+1 for i < n is n^2 */
    assert_int_equal(atomic_load(&d->sum), (long long)IN_ASKS * IN_ASKS);
    assert_int_equal(atomic_load(&d->requests), IN_ASKS);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(asker);
    ac_ref_release(d->target);
}

/* Without a continuation: answers come to receive, matched by id. */
#define MSG_ASKS 3

typedef struct asker_msg_state {
    uint64_t ids[MSG_ASKS + 1];
    int got;
} asker_msg_state;

static void asker_msg_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    asker_msg_state *st = ac_ctx_state(ctx);
    check_turn(ctx, d);
    if (is_cmd(msg, "go")) {
        for (int i = 0; i < MSG_ASKS; i++) {
            if (ac_ask_in(ctx, d->target, ac_msg_int64_new(10 + i), d->timeout_ms, NULL, NULL,
                          &st->ids[i]) != AC_OK) {
                flag_bad(d, BAD_STATUS);
            }
        }
        /* id_out may be NULL */
        if (ac_ask_in(ctx, d->target, ac_msg_int64_new(10 + MSG_ASKS), d->timeout_ms, NULL, NULL,
                      NULL) != AC_OK) {
            flag_bad(d, BAD_STATUS);
        }
        for (int i = 0; i < MSG_ASKS; i++) {
            for (int j = 0; j < i; j++) {
                if (st->ids[i] == 0 || st->ids[i] == st->ids[j]) {
                    flag_bad(d, BAD_ID);
                }
            }
        }
        atomic_fetch_add(&d->finished, 1); /* asked */
        return;
    }
    if (is_cmd(msg, CMD_PING)) {
        atomic_fetch_add(&d->pongs, 1);
        return;
    }
    if (!ac_msg_is(msg, &ac_msg_type_answer)) {
        flag_bad(d, BAD_REPLY);
        return;
    }
    const ac_answer *a = ac_answer_of(msg);
    uint64_t id = ac_answer_id(msg);
    if (a == NULL || id == 0) {
        flag_bad(d, BAD_ID);
        return;
    }
    int which = -1;
    for (int i = 0; i < MSG_ASKS; i++) {
        if (st->ids[i] == id) {
            which = i;
        }
    }
    if (which < 0) {
        which = MSG_ASKS; /* the ask without id_out */
        if (st->ids[MSG_ASKS] != 0) {
            flag_bad(d, BAD_ID); /* two unknown ids */
        }
        st->ids[MSG_ASKS] = id;
    }
    if (a->error != NULL) {
        /* A timeout: no reply, no sender. */
        if (!ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR) || a->reply != NULL ||
            a->sender != NULL || ac_sender(ctx) != NULL) {
            flag_bad(d, BAD_ERROR);
        }
    } else {
        if (a->reply == NULL || ac_msg_int64(a->reply) != 2 * (10 + which) + 1) {
            flag_bad(d, BAD_REPLY);
        }
        if (ac_sender(ctx) == NULL || strcmp(ac_ref_path(ac_sender(ctx)), d->target_path) != 0 ||
            a->sender == NULL || strcmp(ac_ref_path(a->sender), d->target_path) != 0) {
            flag_bad(d, BAD_SENDER);
        }
    }
    st->got++;
    atomic_fetch_add(&d->answers, 1);
}

static const ac_actor_def asker_msg_def = {.name = "AskerMsg",
                                           .state_size = sizeof(asker_msg_state),
                                           .receive = asker_msg_receive};

static void test_ask_in_answer_message(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(d->target);
    ac_ref *asker;
    spawn_asker(d, &asker_msg_def, &asker);

    assert_status(ac_tell(asker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->answers, MSG_ASKS + 1, TS_WAIT_S), "every answer");
    sync_with(d, asker);
    assert_int_equal(atomic_load(&d->answers), MSG_ASKS + 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);

    /* The accessors on other messages. */
    ac_msg *s = ac_msg_str_new("x");
    assert_int_equal(ac_answer_id(s), 0);
    assert_null(ac_answer_of(s));
    assert_int_equal(ac_answer_id(NULL), 0);
    assert_null(ac_answer_of(NULL));
    ac_msg_release(s);
    ac_ref_release(asker);
    ac_ref_release(d->target);
}

/* ac_ask_in timing out: the answer message carries the AskTimeoutError. */
static void test_ask_in_timeout_message(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(d->target);
    d->timeout_ms = 300;
    ac_ref *asker;
    spawn_asker(d, &asker_msg_def, &asker);

    assert_status(ac_tell(asker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the asker to ask");
    assert_eventually(ts_wait_eq(&d->requests, MSG_ASKS + 1, TS_WAIT_S), "the asks to arrive");
    assert_int_equal(ac_timers_armed(d->sys), MSG_ASKS + 1);

    assert_status(ac_clock_advance(d->sys, 299), AC_OK);
    sync_with(d, asker);
    assert_int_equal(atomic_load(&d->answers), 0);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_eventually(ts_wait_eq(&d->answers, MSG_ASKS + 1, TS_WAIT_S), "every timeout answer");
    sync_with(d, asker);
    assert_int_equal(atomic_load(&d->answers), MSG_ASKS + 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(asker);
    ac_ref_release(d->target);
}

/* ac_ask_in timing out with a continuation. */
static void timeout_continuation(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    ask_data *d = ac_ctx_user_data(ctx);
    asker_state *st = ac_ctx_state(ctx);
    check_turn(ctx, d);
    if (user != (void *)d) {
        flag_bad(d, BAD_ID);
    }
    if (answer == NULL || answer->reply != NULL || answer->sender != NULL ||
        !ac_error_is(answer->error, AC_ASK_TIMEOUT_ERROR) || ac_sender(ctx) != NULL) {
        flag_bad(d, BAD_ERROR);
    }
    if (answer != NULL && !contains(ac_error_message(answer->error), d->target_path)) {
        flag_bad(d, BAD_ERROR);
    }
    st->done++;
    atomic_fetch_add(&d->answers, 1);
}

static void asker_timeout_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    if (is_cmd(msg, CMD_PING)) {
        atomic_fetch_add(&d->pongs, 1);
        return;
    }
    if (ac_ask_in(ctx, d->target, ac_msg_int64_new(1), d->timeout_ms, timeout_continuation, d,
                  NULL) != AC_OK) {
        flag_bad(d, BAD_STATUS);
    }
    atomic_store(&d->status, 1);
}

static const ac_actor_def asker_timeout_def = {.name = "AskerTimeout",
                                               .state_size = sizeof(asker_state),
                                               .receive = asker_timeout_receive};

static void test_ask_in_timeout_continuation(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(d->target);
    d->timeout_ms = 300;
    ac_ref *asker;
    spawn_asker(d, &asker_timeout_def, &asker);

    assert_status(ac_tell(asker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->requests, 1, TS_WAIT_S), "the ask to arrive");
    assert_int_equal(ac_timers_armed(d->sys), 1);
    assert_status(ac_clock_advance(d->sys, 299), AC_OK);
    sync_with(d, asker);
    assert_int_equal(atomic_load(&d->answers), 0);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    assert_eventually(ts_wait_eq(&d->answers, 1, TS_WAIT_S), "the continuation");
    sync_with(d, asker);
    assert_int_equal(atomic_load(&d->answers), 1);
    assert_int_equal(atomic_load(&d->bad), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    ac_ref_release(asker);
    ac_ref_release(d->target);
}

/* ---- blocking inside an actor ----------------------------------------------- */

static void blocker_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    ac_answer a;
    memset(&a, 0xab, sizeof a);
    ac_clear_error();
    ac_status st = ac_ask_wait(d->target, counted_new(1), 1000, &a);
    if (a.reply != NULL || a.error != NULL || a.sender != NULL ||
        !ts_nonempty(ac_last_error())) {
        flag_bad(d, BAD_REPLY);
    }
    atomic_store(&d->status, (int)st);
    memset(&a, 0xab, sizeof a);
    st = ac_future_wait(d->pending, 0, &a);
    if (a.reply != NULL || a.error != NULL || a.sender != NULL) {
        flag_bad(d, BAD_REPLY);
    }
    atomic_store(&d->status2, (int)st);
    atomic_fetch_add(&d->finished, 1);
}

static const ac_actor_def blocker_def = {.name = "Blocker", .receive = blocker_receive};

static void test_ask_wait_inside_actor(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(d->target);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    assert_non_null(silent);
    d->pending = ac_ask(silent, ac_msg_int64_new(1), 1000);
    assert_non_null(d->pending);
    atomic_store(&d->status, -1);
    atomic_store(&d->status2, -1);
    ac_ref *blocker = ts_spawn(d->sys, &blocker_def, d, "blocker");
    assert_non_null(blocker);

    assert_status(ac_tell(blocker, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the blocker to return");
    assert_status((ac_status)atomic_load(&d->status), AC_EINACTOR);
    assert_status((ac_status)atomic_load(&d->status2), AC_EINACTOR);
    assert_int_equal(atomic_load(&d->bad), 0);
    /* The refused ask's message was freed and never sent. */
    assert_eventually(ts_wait_eq(&g_destroyed, 1, TS_WAIT_S), "the refused message to be freed");
    sync_with(d, d->target);
    sync_with(d, silent);
    assert_int_equal(atomic_load(&d->requests), 1); /* the pending one, at silent */
    assert_int_equal(ac_timers_armed(d->sys), 1); /* only the pending future's */

    /* The system still works. */
    ac_answer a;
    assert_status(ac_ask_wait(d->target, ac_msg_int64_new(4), WAIT_MS, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 9);
    ac_answer_release(&a);
    ac_future_release(d->pending);
    ac_ref_release(silent);
    ac_ref_release(blocker);
    ac_ref_release(d->target);
}

/* ---- on_complete ------------------------------------------------------------ */

typedef struct cb_record {
    atomic_int calls;
    atomic_int status; /* 0: reply, else 1 + whether the error is a timeout */
    int64_t value;
    pthread_t thread;
    char sender_path[160];
} cb_record;

static void record_cb(const ac_answer *answer, void *user)
{
    cb_record *r = user;
    r->thread = pthread_self();
    r->value = answer->reply ? ac_msg_int64(answer->reply) : -1;
    snprintf(r->sender_path, sizeof r->sender_path, "%s",
             answer->sender ? ac_ref_path(answer->sender) : "");
    atomic_store(&r->status, answer->error == NULL ? 0
                             : ac_error_is(answer->error, AC_ASK_TIMEOUT_ERROR) ? 2 : 1);
    atomic_fetch_add(&r->calls, 1);
}

static bool cb_called(void *p)
{
    return atomic_load(&((cb_record *)p)->calls) > 0;
}

static bool future_settled(void *p)
{
    return ac_future_poll(p, NULL);
}

static void test_on_complete(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *silent = ts_spawn(d->sys, &silent_def, d, "silent");
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(silent);
    assert_non_null(echo);
    cb_record *r = calloc(4, sizeof *r);
    assert_non_null(r);

    /* Before settlement: called once, on the settling (advancing) thread. */
    ac_future *f1 = ac_ask(silent, ac_msg_int64_new(1), 100);
    assert_non_null(f1);
    assert_status(ac_future_on_complete(f1, record_cb, &r[0]), AC_OK);
    assert_int_equal(atomic_load(&r[0].calls), 0);
    assert_status(ac_clock_advance(d->sys, 99), AC_OK);
    assert_int_equal(atomic_load(&r[0].calls), 0);
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    assert_int_equal(atomic_load(&r[0].calls), 1);
    assert_int_equal(atomic_load(&r[0].status), 2);
    assert_true(pthread_equal(r[0].thread, pthread_self()));
    /* One callback per future. */
    ac_clear_error();
    assert_status(ac_future_on_complete(f1, record_cb, &r[1]), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_status(ac_clock_advance(d->sys, 1000), AC_OK);
    assert_int_equal(atomic_load(&r[0].calls), 1);
    assert_int_equal(atomic_load(&r[1].calls), 0);
    ac_future_release(f1);

    /* After settlement: called at once, on this thread. */
    ac_future *f2 = ac_ask(silent, ac_msg_int64_new(2), 50);
    assert_non_null(f2);
    assert_status(ac_clock_advance(d->sys, 50), AC_OK);
    assert_true(ac_future_poll(f2, NULL));
    assert_status(ac_future_on_complete(f2, record_cb, &r[1]), AC_OK);
    assert_int_equal(atomic_load(&r[1].calls), 1);
    assert_int_equal(atomic_load(&r[1].status), 2);
    assert_true(pthread_equal(r[1].thread, pthread_self()));
    assert_status(ac_future_on_complete(f2, record_cb, &r[2]), AC_EINVAL);
    assert_int_equal(atomic_load(&r[1].calls), 1);
    assert_int_equal(atomic_load(&r[2].calls), 0);
    ac_future_release(f2);

    /* Settled by a reply from a worker, registered right away (before or
     * after it settles): once, with the reply. */
    ac_future *f3 = ac_ask(echo, ac_msg_int64_new(7), 1000);
    assert_non_null(f3);
    assert_status(ac_future_on_complete(f3, record_cb, &r[3]), AC_OK);
    assert_eventually(ts_wait_until(future_settled, f3, TS_WAIT_S), "the reply");
    ac_answer a;
    assert_status(ac_future_wait(f3, WAIT_MS, &a), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f3);
    sync_with(d, echo);
    assert_eventually(ts_wait_until(cb_called, &r[3], TS_WAIT_S), "the callback");
    assert_int_equal(atomic_load(&r[3].calls), 1);
    assert_int_equal(atomic_load(&r[3].status), 0);
    assert_int_equal(r[3].value, 15);
    assert_string_equal(r[3].sender_path, ac_ref_path(echo));

    free(r);
    ac_ref_release(silent);
    ac_ref_release(echo);
}

/* A replier that takes a moment, so that the waiter goes to sleep and is
 * woken by the settling thread. */
static void slow_echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    int64_t v;
    if (request_value(msg, &v)) {
        ts_sleep_ms(1);
        ac_reply(ctx, ac_msg_int64_new(2 * v + 1));
    }
}

static const ac_actor_def slow_echo_def = {.name = "SlowEcho", .receive = slow_echo_receive};

#define AFTER_WAIT_ROUNDS 200

/* Once ac_future_wait has returned the answer the future has settled, so a
 * callback registered then runs at once, on this thread. */
static void test_on_complete_after_wait(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *echo = ts_spawn(d->sys, &slow_echo_def, d, "slow");
    assert_non_null(echo);
    int late = 0, other_thread = 0;
    for (int i = 0; i < AFTER_WAIT_ROUNDS; i++) {
        cb_record r;
        memset(&r, 0, sizeof r);
        ac_future *f = ac_ask(echo, ac_msg_int64_new(i), 1000);
        assert_non_null(f);
        ac_answer a;
        assert_status(ac_future_wait(f, WAIT_MS, &a), AC_OK);
        ac_answer_release(&a);
        assert_status(ac_future_on_complete(f, record_cb, &r), AC_OK);
        if (atomic_load(&r.calls) != 1) {
            late++;
            /* let it run before r goes out of scope */
            ts_wait_until(cb_called, &r, TS_WAIT_S);
        }
        if (atomic_load(&r.calls) == 1 && !pthread_equal(r.thread, pthread_self())) {
            other_thread++;
        }
        ac_future_release(f);
    }
    if (late || other_thread) {
        fail_msg("of %d callbacks registered after ac_future_wait returned, %d had not run "
                 "when ac_future_on_complete returned and %d ran on another thread",
                 AFTER_WAIT_ROUNDS, late, other_thread);
    }
    ac_ref_release(echo);
}

/* An ask still open when its system terminates: the target stops without
 * answering, so the future settles with ActorStoppedError and its callback
 * runs once, before ac_system_terminate returns. */
typedef struct stopped_record {
    atomic_int calls;
    bool stopped_error;
} stopped_record;

static void stopped_cb(const ac_answer *answer, void *user)
{
    stopped_record *r = user;
    r->stopped_error = !answer->reply && ac_error_is(answer->error, AC_ACTOR_STOPPED_ERROR);
    atomic_fetch_add(&r->calls, 1);
}

static void test_on_complete_at_terminate(void **state)
{
    (void)state;
    ask_data d;
    memset(&d, 0, sizeof d);
    ac_system *sys = ac_system_create("terminating", NULL);
    assert_non_null(sys);
    ac_ref *silent = ts_spawn(sys, &silent_def, &d, "silent");
    assert_non_null(silent);
    stopped_record r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        ac_future *f = ac_ask(silent, ac_msg_int64_new(i), 600000);
        assert_non_null(f);
        assert_status(ac_future_on_complete(f, stopped_cb, &r[i]), AC_OK);
        ac_future_release(f);
    }
    /* Both requests handled: only the termination can settle them now. */
    assert_eventually(ts_wait_ge(&d.requests, 2, TS_WAIT_S), "the requests to be handled");
    assert_int_equal(atomic_load(&r[0].calls) + atomic_load(&r[1].calls), 0);
    assert_status(ac_system_terminate(sys), AC_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(atomic_load(&r[i].calls), 1);
        assert_true(r[i].stopped_error);
    }
}

/* ---- bad arguments ------------------------------------------------------------ */

static void noop_cb(const ac_answer *answer, void *user)
{
    (void)answer;
    (void)user;
}

static void test_bad_arguments(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    ac_ref *echo = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(echo);
    long long freed = 0;
    ac_answer a;

    ac_clear_error();
    assert_null(ac_ask(NULL, counted_new(1), 0));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    ac_clear_error();
    assert_null(ac_ask(echo, NULL, 0));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_ask(echo, counted_new(1), -1));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    memset(&a, 0xab, sizeof a);
    ac_clear_error();
    assert_status(ac_ask_wait(NULL, counted_new(1), 0, &a), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_null(a.reply);
    assert_null(a.error);
    assert_null(a.sender);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    memset(&a, 0xab, sizeof a);
    ac_clear_error();
    assert_status(ac_ask_wait(echo, NULL, 0, &a), AC_EINVAL);
    assert_null(a.reply);
    assert_null(a.error);

    ac_clear_error();
    assert_status(ac_ask_wait(echo, counted_new(1), 0, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    memset(&a, 0xab, sizeof a);
    ac_clear_error();
    assert_status(ac_ask_wait(echo, counted_new(1), -5, &a), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_null(a.reply);
    assert_null(a.error);
    assert_null(a.sender);
    assert_int_equal(atomic_load(&g_destroyed), ++freed);

    /* Futures. */
    memset(&a, 0xab, sizeof a);
    ac_clear_error();
    assert_status(ac_future_wait(NULL, 0, &a), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_null(a.reply);
    assert_null(a.error);
    assert_false(ac_future_poll(NULL, &a));
    assert_null(a.error);
    ac_clear_error();
    assert_status(ac_future_on_complete(NULL, noop_cb, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    ac_future *f = ac_ask(echo, ac_msg_int64_new(1), 0);
    assert_non_null(f);
    ac_clear_error();
    assert_status(ac_future_wait(f, WAIT_MS, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_status(ac_future_on_complete(f, NULL, NULL), AC_EINVAL);
    assert_last_error(AC_EINVAL);
    assert_status(ac_future_wait(f, WAIT_MS, &a), AC_OK);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_future_release(NULL);
    ac_answer_release(NULL);

    /* Nothing was sent and nothing is armed. */
    sync_with(d, echo);
    assert_int_equal(atomic_load(&d->requests), 1);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    assert_int_equal(atomic_load(&g_destroyed), freed);
    ac_ref_release(echo);
}

/* Bad arguments to ac_ask_in, inside an actor. */
static void bad_in_receive(ac_ctx *ctx, ac_msg *msg)
{
    ask_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    int bad_status = 0;
    uint64_t id = 0;
    if (ac_ask_in(ctx, NULL, counted_new(1), 0, NULL, NULL, &id) != AC_EINVAL) {
        bad_status |= 1;
    }
    if (ac_ask_in(ctx, d->target, NULL, 0, NULL, NULL, &id) != AC_EINVAL) {
        bad_status |= 2;
    }
    if (ac_ask_in(ctx, d->target, counted_new(1), -1, NULL, NULL, &id) != AC_EINVAL) {
        bad_status |= 4;
    }
    if (!ts_nonempty(ac_last_error())) {
        bad_status |= 8;
    }
    atomic_store(&d->status, bad_status);
    atomic_fetch_add(&d->finished, 1);
}

static const ac_actor_def bad_in_def = {.name = "BadIn", .receive = bad_in_receive};

static void test_bad_arguments_in_actor(void **state)
{
    ts_fixture *fx = *state;
    ask_data *d = setup(fx, true);
    d->target = ts_spawn(d->sys, &echo_def, d, "echo");
    assert_non_null(d->target);
    ac_ref *a = ts_spawn(d->sys, &bad_in_def, d, "bad");
    assert_non_null(a);
    atomic_store(&d->status, -1);
    assert_status(ac_tell(a, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->finished, 1, TS_WAIT_S), "the actor to try");
    assert_int_equal(atomic_load(&d->status), 0);
    assert_int_equal(atomic_load(&g_destroyed), 2);
    sync_with(d, d->target);
    assert_int_equal(atomic_load(&d->requests), 0);
    assert_int_equal(ac_timers_armed(d->sys), 0);
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    ac_ref_release(a);
    ac_ref_release(d->target);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_ask_wait_reply),
        TS_UNIT(test_ask_error_reply),
        TS_UNIT(test_ask_timeout),
        TS_UNIT(test_default_timeout),
        TS_UNIT(test_future_wait_pending),
        TS_UNIT(test_late_reply_dropped),
        TS_UNIT(test_second_reply_dropped),
        TS_UNIT(test_ask_stopped_actor),
        TS_UNIT(test_many_concurrent_asks),
        TS_UNIT(test_ask_in_continuation),
        TS_UNIT(test_ask_in_answer_message),
        TS_UNIT(test_ask_in_timeout_message),
        TS_UNIT(test_ask_in_timeout_continuation),
        TS_UNIT(test_ask_wait_inside_actor),
        TS_UNIT(test_on_complete),
        TS_UNIT(test_on_complete_after_wait),
        TS_UNIT(test_on_complete_at_terminate),
        TS_UNIT(test_answer_status),
        TS_UNIT(test_bad_arguments),
        TS_UNIT(test_bad_arguments_in_actor),
    };
    return cmocka_run_group_tests_name("ask", tests, NULL, NULL);
}
