/*
 * The hedged router's reply contract is scatter/gather's: a tell with a
 * sender from inside an actor gets the winner's reply as an ordinary
 * message from the winning routee; a tell without a sender sends nothing,
 * logs a warning and counts no-reply-target; with no routees left, an ask
 * fails at once with "has no routees left to send to"; GetRoutees is
 * answered by the router itself.
 */
#define _POSIX_C_SOURCE 200809L

#include "hg_support.h"

typedef struct caller_data {
    ac_ref *router;
    atomic_llong got;
    _Atomic(ac_ref *) sender; /* of the first message it got (borrowed) */
    char text[64];
} caller_data;

static void caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    caller_data *c = ac_ctx_user_data(ctx);
    const char *s = ac_msg_str(msg);
    if (s && strcmp(s, "go") == 0) {
        ac_tell(c->router, ac_msg_str_new("k"), ac_self(ctx));
        return;
    }
    if (atomic_load(&c->got) == 0) {
        snprintf(c->text, sizeof c->text, "%s", s ? s : ac_msg_type_name(msg));
        atomic_store(&c->sender, ac_sender(ctx));
    }
    atomic_fetch_add(&c->got, 1);
}

static const ac_actor_def caller_def = {.name = "Caller", .receive = caller_receive};

static void test_tell_with_a_sender_gets_the_winners_reply(void **state)
{
    hg_data *d = hg_setup(*state, "hg-tell", false, 0);
    hg_set(d, 1, HG_SILENT, false);
    hg_set(d, 2, 0, false);
    ac_hedged_options o = {.delay_us = 1000};
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, &o, &ro), 2);
    static caller_data c_storage;
    caller_data *c = &c_storage;
    c->router = router;
    ac_ref *caller = ts_spawn(d->sys, &caller_def, c, "caller");
    assert_non_null(caller);
    assert_status(ac_tell(caller, ac_msg_str_new("go"), NULL), AC_OK);
    assert_eventually(ts_wait_ge(&c->got, 1, TS_WAIT_S), "the reply");
    assert_string_equal(c->text, "routee-2:k");
    assert_ptr_equal(atomic_load(&c->sender), atomic_load(&d->self[2]));
    ac_ref_release(caller);
    ac_ref_release(router);
}

static void test_tell_without_a_sender_sends_nothing(void **state)
{
    ts_fixture *fx = *state;
    hg_data *d = hg_setup(fx, "hg-bare", false, 0);
    hg_set(d, 1, 0, false);
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, NULL, &ro), 2);
    assert_status(ac_tell(router, ac_msg_str_new("k"), NULL), AC_OK);
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s: dropped a message (actorc.String) without a "
             "sender: no reply target, nothing sent", ac_ref_path(router));
    assert_eventually(ts_log_wait_text(ts_fx_log(fx), want, TS_WAIT_S), "the warning");
    hg_barrier(d, 2);
    assert_int_equal(hg_seen_total(d), 0);
    const char *none[] = {"no-reply-target"};
    assert_int_equal(hg_counter(d, "router_hedged_resolved_total", none, 1), 1);
    ac_ref_release(router);
}

static void test_no_routees_left(void **state)
{
    hg_data *d = hg_setup(*state, "hg-empty", false, 0);
    ac_routee_options ro = hg_routee_options(d);
    ac_ref *router = hg_spawn(d, ac_router_hedged(2, &hg_routee_def, NULL, &ro), 2);
    for (int k = 1; k <= 2; k++)
        assert_status(ac_stop(atomic_load(&d->self[k])), AC_OK);
    for (double end = ts_now() + TS_WAIT_S;;) {
        ac_answer a;
        assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), HG_WAIT_MS, &a), AC_OK);
        size_t left = ac_routees_count(a.reply);
        ac_answer_release(&a);
        if (left == 0)
            break;
        if (ts_now() > end)
            fail_msg("the router still has %zu routees", left);
        ts_sleep_ms(1);
    }
    ac_answer a;
    ac_status st = ac_ask_wait(router, ac_msg_str_new("k"), HG_WAIT_MS, &a);
    char want[256];
    snprintf(want, sizeof want, "Hedged router %s has no routees left to send to",
             ac_ref_path(router));
    hg_assert_aggregate(st, &a, want, 0);
    assert_ptr_equal(a.sender, router);
    ac_answer_release(&a);
    ac_ref_release(router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_tell_with_a_sender_gets_the_winners_reply),
        TS_UNIT(test_tell_without_a_sender_sends_nothing),
        TS_UNIT(test_no_routees_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
