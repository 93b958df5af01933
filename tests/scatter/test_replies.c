/*
 * The reply contract: every message is asked of every routee; the first
 * successful reply goes to the caller with the winning routee as its
 * sender; later replies vanish without a dead letter or a log line. The
 * caller may be ac_ask_wait, an ac_ask future, ac_ask_in (continuation or
 * answer message) or an actor telling with itself as sender. A tell
 * without a sender scatters nothing, logs a warning naming the router and
 * leaves the router running.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

/* Lines at `level` whose text contains `needle`. */
static size_t log_lines_at(ts_log_capture *log, ac_log_level level, const char *needle)
{
    size_t n = 0;
    for (size_t i = 0; i < ts_log_count(log); i++) {
        ts_log_line l;
        if (ts_log_get(log, i, &l) && l.level == level &&
            (needle == NULL || (l.text != NULL && strstr(l.text, needle) != NULL))) {
            n++;
        }
        ts_log_line_clear(&l);
    }
    return n;
}

/* routee-1 answers after 10 ms, routee-2 at once, routee-3 after 400 ms
 * (past the 250 ms deadline): routee-2 wins; routee-1 loses into a settled
 * scatter, routee-3 into one whose deadline has passed. */
static ac_ref *race_pool(sg_data *d)
{
    sg_set(d, 1, SG_LATER, 10);
    sg_set(d, 2, SG_ECHO, 0);
    sg_set(d, 3, SG_LATER, 400);
    ac_scatter_gather_options o = {.timeout_ms = 250};
    return sg_spawn_pool(d, 3, &o);
}

/* Let both losers reply; nothing of it may be seen anywhere. */
static void run_losers(ts_fixture *fx, sg_data *d)
{
    uint64_t dl = ac_dead_letter_count(d->sys);
    size_t lines = ts_log_count(ts_fx_log(fx));
    assert_status(ac_clock_advance(d->sys, 10), AC_OK);
    assert_eventually(ts_wait_ge(&d->replies[1], 1, TS_WAIT_S), "routee-1's late reply");
    assert_status(ac_clock_advance(d->sys, 240), AC_OK); /* the deadline */
    assert_status(ac_clock_advance(d->sys, 150), AC_OK);
    assert_eventually(ts_wait_ge(&d->replies[3], 1, TS_WAIT_S), "routee-3's late reply");
    /* A reply is counted once ac_reply has returned, and a reply ref drops
     * a loser within that call: whatever a loser could cause (a dead
     * letter, a log line) has happened by now. */
    sg_wait_seen_all(d, 3, 1);
    assert_int_equal(ac_dead_letter_count(d->sys), dl);
    if (ts_log_count(ts_fx_log(fx)) != lines) {
        ts_log_dump(ts_fx_log(fx), "log");
        fail_msg("losing replies logged %zu line(s)", ts_log_count(ts_fx_log(fx)) - lines);
    }
    /* every routee saw the request exactly once, from a reply ref */
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(atomic_load(&d->seen[k]), 1);
        assert_int_equal(atomic_load(&d->replies[k]), 1);
    }
    sg_assert_routees_ok(d);
}

/* A future gets the first reply, with the winning routee as sender. */
static void test_first_reply_wins_future(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-first", true);
    ac_ref *router = race_pool(d);

    ac_future *f = ac_ask(router, sg_key_new("user-42", 42), 0);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 2, 0, "user-42");
    assert_string_equal(ac_ref_path(a.sender), "actorc://sg-first/user/replicas/routee-2");
    ac_answer_release(&a);
    sg_wait_seen_all(d, 3, 1);

    run_losers(fx, d);
    /* the future still holds the winner */
    assert_true(ac_future_poll(f, &a));
    sg_assert_reply_from(d, AC_OK, &a, 2, 0, "user-42");
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(router);
}

/* An actor telling with itself as sender gets exactly one message: the
 * winner's reply, from the winning routee. */
static void test_losers_never_reach_the_caller(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-losers", true);
    ac_ref *router = race_pool(d);
    ac_ref *caller = sg_spawn_caller(d, router);

    sg_caller_cmd(d, SG_CMD_TELL, "user-7");
    assert_eventually(ts_wait_ge(&d->caller_got, 1, TS_WAIT_S), "the caller's answer");
    sg_wait_seen_all(d, 3, 1);
    run_losers(fx, d);

    assert_int_equal(atomic_load(&d->caller_got), 1);
    assert_string_equal(sg_key_text(atomic_load(&d->caller_first)), "routee-2:user-7");
    assert_ptr_equal(atomic_load(&d->caller_first_sender), atomic_load(&d->refs[2][0]));
    ac_ref_release(caller);
    ac_ref_release(router);
}

/* ac_ask_wait: each of many messages is asked of every routee once; each
 * answer comes from the routee its text names. */
static void test_reply_to_ask_wait(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-askwait", false);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    const int rounds = 20;
    for (int i = 0; i < rounds; i++) {
        char key[32];
        snprintf(key, sizeof key, "key-%d", i);
        ac_answer a;
        ac_status st = ac_ask_wait(router, sg_key_new(key, i), SG_WAIT_MS, &a);
        int k = sg_routee_index(a.sender);
        if (k < 1 || k > 3) {
            fail_msg("round %d: %s, sender %s", i, ac_status_name(st),
                     a.sender ? ac_ref_path(a.sender) : "NULL");
        }
        sg_assert_reply_from(d, st, &a, k, 0, key);
        assert_int_equal(sg_key_n(a.reply), i * 16 + k);
        ac_answer_release(&a);
    }
    sg_wait_seen_all(d, 3, rounds);
    assert_eventually(ts_wait_ge(&d->replies[1], rounds, TS_WAIT_S) &&
                          ts_wait_ge(&d->replies[2], rounds, TS_WAIT_S) &&
                          ts_wait_ge(&d->replies[3], rounds, TS_WAIT_S),
                      "every routee to answer every message");
    /* The last scatter was sent out before it was answered, so no request
     * is still on its way; losers were dropped within their ac_reply,
     * before their replies were counted. */
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(atomic_load(&d->seen[k]), rounds);
    }
    assert_int_equal(ac_dead_letter_count(d->sys), 0);
    sg_assert_routees_ok(d);
    ac_ref_release(router);
}

/* An ac_ask future, with a completion callback too. */
static atomic_llong g_callbacks;
static _Atomic(ac_ref *) g_cb_sender;

static void on_complete(const ac_answer *a, void *user)
{
    (void)user;
    atomic_store(&g_cb_sender, a->sender);
    atomic_fetch_add(&g_callbacks, 1);
}

static void test_reply_to_future(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-future", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_ECHO, 0);
    sg_set(d, 3, SG_SILENT, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    atomic_store(&g_callbacks, 0);
    ac_future *f = ac_ask(router, sg_key_new("k", 1), 0);
    assert_non_null(f);
    assert_status(ac_future_on_complete(f, on_complete, NULL), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 2, 0, "k");
    ac_answer_release(&a);
    assert_eventually(ts_wait_eq(&g_callbacks, 1, TS_WAIT_S), "the completion callback");
    assert_ptr_equal(atomic_load(&g_cb_sender), atomic_load(&d->refs[2][0]));
    ac_future_release(f);
    ac_ref_release(router);
}

/* ac_ask_in inside an actor: the continuation gets the reply, and both
 * answer->sender and ac_sender(ctx) are the winning routee. */
static void test_reply_to_ask_in_continuation(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-askin", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_ECHO, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_ref *caller = sg_spawn_caller(d, router);

    sg_caller_cmd(d, SG_CMD_ASK_IN, "k-in");
    assert_eventually(ts_wait_eq(&d->asks_done, 1, TS_WAIT_S), "the continuation");
    assert_status((ac_status)atomic_load(&d->ask_status), AC_OK);
    assert_null(atomic_load(&d->ask_error));
    assert_string_equal(sg_key_text(atomic_load(&d->ask_reply)), "routee-3:k-in");
    assert_ptr_equal(atomic_load(&d->ask_sender), atomic_load(&d->refs[3][0]));
    assert_ptr_equal(atomic_load(&d->ask_ctx_sender), atomic_load(&d->refs[3][0]));
    assert_int_equal(atomic_load(&d->caller_got), 0);
    sg_assert_routees_ok(d);
    ac_ref_release(caller);
    ac_ref_release(router);
}

/* ac_ask_in without a continuation: an answer message carrying the reply
 * and the winning routee. */
static void test_reply_to_ask_in_answer_message(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-askmsg", true);
    sg_set(d, 1, SG_ECHO, 0);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_SILENT, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_ref *caller = sg_spawn_caller(d, router);

    sg_caller_cmd(d, SG_CMD_ASK_MSG, "k-msg");
    assert_eventually(ts_wait_eq(&d->asks_done, 1, TS_WAIT_S), "the answer message");
    assert_status((ac_status)atomic_load(&d->ask_status), AC_OK);
    assert_null(atomic_load(&d->ask_error));
    assert_string_equal(sg_key_text(atomic_load(&d->ask_reply)), "routee-1:k-msg");
    assert_ptr_equal(atomic_load(&d->ask_sender), atomic_load(&d->refs[1][0]));
    assert_ptr_equal(atomic_load(&d->ask_ctx_sender), atomic_load(&d->refs[1][0]));
    ac_ref_release(caller);
    ac_ref_release(router);
}

/* ac_tell(router, msg, self) inside an actor: the reply arrives as an
 * ordinary message whose sender is the winning routee. */
static void test_reply_to_tell_with_self(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-tell", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_ECHO, 0);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_ref *caller = sg_spawn_caller(d, router);

    sg_caller_cmd(d, SG_CMD_TELL, "k-tell");
    assert_eventually(ts_wait_eq(&d->caller_got, 1, TS_WAIT_S), "the reply");
    ac_msg *m = atomic_load(&d->caller_first);
    assert_true(ac_msg_is(m, &sg_key_type));
    assert_string_equal(sg_key_text(m), "routee-3:k-tell");
    assert_ptr_equal(atomic_load(&d->caller_first_sender), atomic_load(&d->refs[3][0]));
    sg_wait_seen_all(d, 3, 1);
    sg_assert_routees_ok(d);
    ac_ref_release(caller);
    ac_ref_release(router);
}

/* A tell without a sender: nothing scattered, a warning naming the
 * router's path, and the same router with the same routees still works. */
static void test_tell_without_sender_scatters_nothing(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-bare", false);
    ac_ref *router = sg_spawn_pool(d, 3, NULL);
    ac_ref *caller = sg_spawn_caller(d, router);
    ts_log_capture *log = ts_fx_log(fx);
    const char *rp = ac_ref_path(router);

    /* from outside actors */
    assert_status(ac_tell(router, sg_key_new("dropped-1", 1), NULL), AC_OK);
    if (!ts_log_wait_text(log, rp, TS_WAIT_S)) {
        ts_log_dump(log, "log");
        fail_msg("no log line names %s", rp);
    }
    assert_int_equal(log_lines_at(log, AC_LOG_WARN, rp), 1);

    /* from inside an actor */
    sg_caller_cmd(d, SG_CMD_TELL_NOSENDER, "dropped-2");
    double end = ts_now() + TS_WAIT_S;
    while (log_lines_at(log, AC_LOG_WARN, rp) < 2 && ts_now() < end) {
        ts_sleep_ms(1);
    }
    assert_int_equal(log_lines_at(log, AC_LOG_WARN, rp), 2);

    /* still running: a later ask works; the routees are the same ones and
     * the two dropped messages (queued before it) reached none of them */
    ac_answer a;
    ac_status st = ac_ask_wait(router, sg_key_new("after", 3), SG_WAIT_MS, &a);
    int k = sg_routee_index(a.sender);
    if (k < 1 || k > 3) {
        fail_msg("the ask after the bare tells: %s", ac_status_name(st));
    }
    sg_assert_reply_from(d, st, &a, k, 0, "after");
    ac_answer_release(&a);
    /* Had the router scattered a dropped message, the routees would have
     * it queued before "after" and before these barriers. */
    for (int j = 1; j <= 3; j++) {
        sg_assert_seen_exactly(d, j, 2); /* "after" and the barrier */
        assert_int_equal(atomic_load(&d->starts[j]), 1);
    }
    assert_int_equal(atomic_load(&d->starts[4]), 0);
    assert_int_equal(atomic_load(&d->caller_got), 0);
    /* no failure, hence no restart */
    if (log_lines_at(log, AC_LOG_ERROR, NULL) != 0) {
        ts_log_dump(log, "log");
        fail_msg("a bare tell logged an error");
    }
    sg_assert_routees_ok(d);
    ac_ref_release(caller);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_first_reply_wins_future),
        TS_UNIT(test_losers_never_reach_the_caller),
        TS_UNIT(test_reply_to_ask_wait),
        TS_UNIT(test_reply_to_future),
        TS_UNIT(test_reply_to_ask_in_continuation),
        TS_UNIT(test_reply_to_ask_in_answer_message),
        TS_UNIT(test_reply_to_tell_with_self),
        TS_UNIT(test_tell_without_sender_scatters_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
