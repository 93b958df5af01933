/*
 * Bad arguments to the group factories fail before anything is made: NULL
 * with AC_EINVAL and a last error naming the argument — a NULL array, n
 * too large (refused before the array is read), a NULL routee, one ref
 * twice, a reply ref, routees of two systems, a NULL strategy, a bad
 * scatter/gather option. n = 0 is allowed. A group spawned in another
 * system than its routees' leaves them out with a warning.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

typedef enum kind { RR, RANDOM, BROADCAST, SMALLEST, CUSTOM, SCATTER, NKINDS } kind;

static const char *const kind_fn[NKINDS] = {
    "ac_router_group_round_robin",
    "ac_router_group_random",
    "ac_router_group_broadcast",
    "ac_router_group_smallest_mailbox",
    "ac_router_group_custom",
    "ac_router_group_scatter_gather_first_completed",
};

static size_t first_only(ac_ref *const *routees, size_t n, uint64_t index, const ac_msg *msg,
                         void *user, ac_ref **out)
{
    (void)index;
    (void)msg;
    (void)user;
    if (n == 0) {
        return 0;
    }
    out[0] = routees[0];
    return 1;
}

static ac_props *make(kind k, ac_ref *const *routees, size_t n)
{
    switch (k) {
    case RR:
        return ac_router_group_round_robin(routees, n);
    case RANDOM:
        return ac_router_group_random(routees, n);
    case BROADCAST:
        return ac_router_group_broadcast(routees, n);
    case SMALLEST:
        return ac_router_group_smallest_mailbox(routees, n);
    case CUSTOM:
        return ac_router_group_custom(routees, n, first_only, NULL);
    case SCATTER:
    default:
        return ac_router_group_scatter_gather_first_completed(routees, n, NULL);
    }
}

/* NULL, AC_EINVAL, and exactly `message` after the factory's name. */
static void expect_refused(ac_props *props, kind k, const char *message)
{
    char want[512];
    snprintf(want, sizeof want, "%s: %s", kind_fn[k], message);
    if (props != NULL) {
        ac_props_free(props);
        fail_msg("the factory accepted what should fail with \"%s\"", want);
    }
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), want);
}

static void test_factories_refuse(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_bad", NULL);
    assert_non_null(sys);
    ac_system *other = ac_system_create("group_bad_other", NULL);
    assert_non_null(other);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    ac_ref *stranger = ts_spawn(other, &rt_routee_def, p, "routee-8");
    assert_non_null(stranger);
    char msg[512];

    for (kind k = 0; k < NKINDS; k++) {
        ac_clear_error();
        expect_refused(make(k, NULL, 2), k, "routees is NULL, with n = 2");
        /* the count is checked before the array is read: r holds 3 */
        expect_refused(make(k, r, 100001), k, "n = 100001; at most 100000 routees");
        snprintf(msg, sizeof msg, "n = %zu; at most 100000 routees", SIZE_MAX);
        expect_refused(make(k, r, SIZE_MAX), k, msg);
        ac_ref *with_null[3] = {r[0], NULL, r[1]};
        expect_refused(make(k, with_null, 3), k, "routees[1] is NULL");
        ac_ref *twice[4] = {r[0], r[1], r[2], r[1]};
        snprintf(msg, sizeof msg, "routees[1] and routees[3] are the same ref (%s)",
                 ac_ref_path(r[1]));
        expect_refused(make(k, twice, 4), k, msg);
        ac_ref *mixed[2] = {r[0], stranger};
        snprintf(msg, sizeof msg,
                 "routees[1] (%s) is in another actor system than routees[0] (%s); a group's "
                 "routees share one",
                 ac_ref_path(stranger), ac_ref_path(r[0]));
        expect_refused(make(k, mixed, 2), k, msg);

        /* the edges that are allowed: none at all, and one */
        ac_props *none = make(k, NULL, 0);
        assert_non_null(none);
        ac_props_free(none);
        ac_props *one = make(k, r, 1);
        assert_non_null(one);
        ac_props_free(one);
    }
    ac_clear_error();
    expect_refused(ac_router_group_custom(r, 3, NULL, NULL), CUSTOM, "strategy is NULL");
    ac_scatter_gather_options bad = {.timeout_ms = -5};
    ac_props *sg = ac_router_group_scatter_gather_first_completed(r, 3, &bad);
    expect_refused(sg, SCATTER, "timeout_ms = -5 is not usable; use 1..2147483647, or 0 for "
                                "the default (4500)");
    /* nothing started but the three routees and the stranger */
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_started(p, k, 1, TS_WAIT_S), "routee started");
        assert_int_equal(rt_started(p, k), 1);
    }
    rt_release_all(r, 3);
    ac_ref_release(stranger);
    assert_status(ac_system_terminate(other), AC_OK);
}

/* An actor that, asked, offers the ask's reply ref (its sender) to a group
 * factory, and answers with what the factory said. */
static void offer_sender(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_ref *sender = ac_sender(ctx);
    ac_props *props = ac_router_group_round_robin(&sender, 1);
    if (props != NULL) {
        ac_props_free(props);
        ac_reply(ctx, ac_msg_str_new("accepted"));
        return;
    }
    ac_reply(ctx, ac_msg_printf("%s|%s", ac_status_name(ac_last_status()), ac_last_error()));
}

static const ac_actor_def offer_def = {.name = "Offer", .receive = offer_sender};

static void test_reply_ref_refused(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "group_reply_ref", NULL);
    assert_non_null(sys);
    ac_ref *offer = ts_spawn(sys, &offer_def, NULL, "offer");
    assert_non_null(offer);
    ac_answer a;
    assert_status(ac_ask_wait(offer, ac_msg_str_new("go"), RT_ASK_MS, &a), AC_OK);
    const char *text = ac_msg_str(a.reply);
    assert_non_null(text);
    const char *want = "AC_EINVAL|ac_router_group_round_robin: routees[0] (";
    if (strncmp(text, want, strlen(want)) != 0 ||
        strstr(text, ") is a reply ref, not an actor: a group watches its routees") == NULL) {
        fail_msg("the factory said \"%s\"", text);
    }
    ac_answer_release(&a);
    ac_ref_release(offer);
}

/* Props made over one system's actors, spawned in another: the routees
 * are left out, each with a warning, and the group has none. */
static void test_spawned_in_another_system(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "group_home", &o);
    assert_non_null(sys);
    ac_system *other = ac_system_create("group_away", &o);
    assert_non_null(other);
    ac_ref *r[2];
    assert_true(rt_spawn_routees(sys, p, 2, r));
    ac_ref *router = rt_spawn(other, ac_router_group_round_robin(r, 2), "group");
    assert_non_null(router);
    ac_ref *listed[2];
    assert_int_equal(rt_routees(router, listed, 2), 0);
    for (int k = 0; k < 2; k++) {
        char line[256];
        snprintf(line, sizeof line, "routee dropped: %s: it belongs to another actor system",
                 ac_ref_path(r[k]));
        if (ts_log_count_text(cap, line) != 1) {
            ts_log_dump(cap, "captured");
            fail_msg("no warning \"%s\"", line);
        }
    }
    ac_ref_release(router);
    assert_status(ac_system_terminate(other), AC_OK);
    rt_release_all(r, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_factories_refuse),
        TS_UNIT(test_reply_ref_refused),
        TS_UNIT(test_spawned_in_another_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
