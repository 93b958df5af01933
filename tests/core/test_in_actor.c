/*
 * Calls that are not allowed inside an actor (they would block a worker or
 * tear down the system under the caller) fail with AC_EINACTOR and leave
 * the system working; calls allowed from any thread work from a handler.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

enum { OP_TERMINATE = 1, OP_CREATE = 2, OP_SPAWN_TOP = 3, OP_PING = 4 };

typedef struct ia_data {
    ts_recorder *rec;
    ac_system *sys;
    _Atomic(ac_system *) leaked; /* a system wrongly created inside an actor */
    atomic_llong pings;
    atomic_llong in_actor_flags; /* bit per callback that saw ac_in_actor() */
} ia_data;

static void ia_pre_start(ac_ctx *ctx)
{
    ia_data *d = ac_ctx_user_data(ctx);
    if (ac_in_actor()) {
        atomic_fetch_or(&d->in_actor_flags, 1);
    }
}

static void ia_post_stop(ac_ctx *ctx)
{
    ia_data *d = ac_ctx_user_data(ctx);
    if (ac_in_actor()) {
        atomic_fetch_or(&d->in_actor_flags, 4);
    }
}

static void nop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def nop_def = {.name = "Nop", .receive = nop_receive};

static void ia_receive(ac_ctx *ctx, ac_msg *msg)
{
    ia_data *d = ac_ctx_user_data(ctx);
    if (ac_in_actor()) {
        atomic_fetch_or(&d->in_actor_flags, 2);
    }
    switch (ac_msg_int64(msg)) {
    case OP_TERMINATE: {
        ac_clear_error();
        ac_status st = ac_system_terminate(ac_ctx_system(ctx));
        ts_rec_add(d->rec, "terminate: %s", ac_status_name(st));
        ts_rec_add(d->rec, "terminate last: %s%s", ac_status_name(ac_last_status()),
                   ts_nonempty(ac_last_error()) ? "" : " (no error text)");
        break;
    }
    case OP_CREATE: {
        ac_clear_error();
        ac_system *s = ac_system_create("inner", NULL);
        if (s != NULL) {
            atomic_store(&d->leaked, s);
            ts_rec_add(d->rec, "create: succeeded");
        } else {
            ts_rec_add(d->rec, "create: %s", ac_status_name(ac_last_status()));
        }
        break;
    }
    case OP_SPAWN_TOP: {
        /* ac_spawn is allowed from any thread, including a handler */
        ac_ref *r = ac_spawn(ac_ctx_system(ctx), ac_props_new(&nop_def, NULL), "from-actor");
        ts_rec_add(d->rec, "spawn top: %s", r ? ac_ref_path(r) : ac_status_name(ac_last_status()));
        ac_ref_release(r);
        break;
    }
    case OP_PING:
        atomic_fetch_add(&d->pings, 1);
        break;
    default:
        break;
    }
}

static const ac_actor_def ia_def = {
    .name = "InActor", .pre_start = ia_pre_start, .receive = ia_receive,
    .post_stop = ia_post_stop,
};

static ia_data *setup(ts_fixture *fx)
{
    ia_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "inactor", NULL);
    assert_non_null(d->sys);
    return d;
}

static void expect_event(ts_recorder *rec, const char *label)
{
    if (!ts_rec_wait_for(rec, label, TS_WAIT_S)) {
        ts_rec_dump(rec, "events");
        fail_msg("missing event \"%s\"", label);
    }
}

static void test_terminate_from_handler(void **state)
{
    ts_fixture *fx = *state;
    ia_data *d = setup(fx);
    ac_ref *a = ts_spawn(d->sys, &ia_def, d, "a");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_TERMINATE), NULL), AC_OK);
    expect_event(d->rec, "terminate: AC_EINACTOR");
    expect_event(d->rec, "terminate last: AC_EINACTOR");

    /* the system is untouched: the same actor and a new one still work */
    assert_status(ac_tell(a, ac_msg_int64_new(OP_PING), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->pings, 1, TS_WAIT_S), "ping after the refused terminate");
    ac_ref *b = ts_spawn(d->sys, &ia_def, d, "b");
    assert_non_null(b);
    assert_status(ac_tell(b, ac_msg_int64_new(OP_PING), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->pings, 2, TS_WAIT_S), "ping to a new actor");

    ac_ref_release(a);
    ac_ref_release(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_system_create_from_handler(void **state)
{
    ts_fixture *fx = *state;
    ia_data *d = setup(fx);
    ac_ref *a = ts_spawn(d->sys, &ia_def, d, "a");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_CREATE), NULL), AC_OK);
    assert_eventually(ts_rec_wait_count(d->rec, 1, TS_WAIT_S), "create attempt");
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
    ac_system *leaked = atomic_load(&d->leaked);
    if (leaked != NULL) {
        ac_system_terminate(leaked);
        fail_msg("ac_system_create succeeded inside an actor");
    }
    expect_event(d->rec, "create: AC_EINACTOR");
}

static void test_spawn_top_level_from_handler(void **state)
{
    ts_fixture *fx = *state;
    ia_data *d = setup(fx);
    ac_ref *a = ts_spawn(d->sys, &ia_def, d, "a");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_SPAWN_TOP), NULL), AC_OK);
    expect_event(d->rec, "spawn top: actorc://inactor/user/from-actor");
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_in_actor_flag(void **state)
{
    ts_fixture *fx = *state;
    ia_data *d = setup(fx);
    assert_false(ac_in_actor());
    ac_ref *a = ts_spawn(d->sys, &ia_def, d, "a");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_PING), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->pings, 1, TS_WAIT_S), "ping");
    assert_status(ac_stop(a), AC_OK);
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_false(ac_in_actor());
    /* pre_start, receive and post_stop all ran "inside an actor" */
    assert_int_equal(atomic_load(&d->in_actor_flags), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_terminate_from_handler),
        TS_UNIT(test_system_create_from_handler),
        TS_UNIT(test_spawn_top_level_from_handler),
        TS_UNIT(test_in_actor_flag),
    };
    return cmocka_run_group_tests_name("in_actor", tests, NULL, NULL);
}
