/*
 * Bad input: NULL handles, wrong message types and bad system options
 * return errors with an explanation in ac_last_error and never crash.
 * Functions that consume an argument consume it on failure too (the
 * counters below and LeakSanitizer check that).
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

static atomic_llong destroyed;
static atomic_llong frees;
static atomic_llong received;

static void counted_destroy(void *payload, size_t size)
{
    (void)payload;
    (void)size;
    atomic_fetch_add(&destroyed, 1);
}

static const ac_msg_type counted_type = {.name = "test.BadInputCounted",
                                         .destroy = counted_destroy};

static void count_free(void *user)
{
    (void)user;
    atomic_fetch_add(&frees, 1);
}

static void bi_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
    atomic_fetch_add(&received, 1);
}

static const ac_actor_def bi_def = {.name = "BadInput", .receive = bi_receive};
static const ac_actor_def no_receive_def = {.name = "NoReceive"};

static int reset(void **state)
{
    atomic_store(&destroyed, 0);
    atomic_store(&frees, 0);
    atomic_store(&received, 0);
    return ts_setup(state);
}

static ac_props *counted_props(void)
{
    ac_props *p = ac_props_new(&bi_def, NULL);
    assert_non_null(p);
    assert_status(ac_props_set_user_data_free(p, count_free), AC_OK);
    return p;
}

static void test_status_strings(void **state)
{
    (void)state;
    assert_string_equal(ac_status_name(AC_OK), "AC_OK");
    assert_string_equal(ac_status_name(AC_EINVAL), "AC_EINVAL");
    assert_string_equal(ac_status_name(AC_ESYS), "AC_ESYS");
    assert_string_equal(ac_strerror(AC_OK), "success");
    assert_string_equal(ac_strerror(AC_EINVAL), "invalid argument");
    assert_string_equal(ac_strerror(AC_EINACTOR), "call not allowed inside an actor");
    for (int s = AC_OK; s <= AC_ESYS; s++) {
        assert_true(ts_nonempty(ac_status_name((ac_status)s)));
        assert_true(ts_nonempty(ac_strerror((ac_status)s)));
    }
    /* out of range: still a string, no crash */
    assert_non_null(ac_status_name((ac_status)999));
    assert_non_null(ac_strerror((ac_status)999));
    assert_non_null(ac_status_name((ac_status)-1));
    assert_non_null(ac_strerror((ac_status)-1));

    ac_clear_error();
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    ac_clear_error();
    ac_msg_str(NULL); /* fails on this thread only */
    return (void *)(intptr_t)ac_last_status();
}

/* The last error is per thread. */
static void test_last_error_is_per_thread(void **state)
{
    (void)state;
    ac_clear_error();
    pthread_t th;
    void *ret = NULL;
    assert_int_equal(pthread_create(&th, NULL, fail_in_thread, NULL), 0);
    pthread_join(th, &ret);
    assert_status((ac_status)(intptr_t)ret, AC_EINVAL);
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");
}

static void test_system_create_bad_input(void **state)
{
    (void)state;
    char name64[65], name65[66];
    memset(name64, 'n', 64);
    name64[64] = '\0';
    memset(name65, 'n', 65);
    name65[65] = '\0';

    const char *bad_names[] = {NULL, "", "has space", "a/b", "dot.ted", "ümlaut", "x!", name65};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        ac_clear_error();
        ac_system *s = ac_system_create(bad_names[i], NULL);
        if (s != NULL) {
            ac_system_terminate(s);
            fail_msg("system name #%zu \"%s\" was accepted", i,
                     bad_names[i] ? bad_names[i] : "(NULL)");
        }
        assert_true(ac_last_status() != AC_OK);
        assert_true(ts_nonempty(ac_last_error()));
    }

    const ac_system_options bad_opts[] = {
        {.workers = -1},
        {.workers = 1025},
        {.batch = -5},
        {.batch = 1000001},
        {.log_level = (ac_log_level)42},
        {.log_level = (ac_log_level)-3},
    };
    for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++) {
        ac_clear_error();
        ac_system *s = ac_system_create("opts", &bad_opts[i]);
        if (s != NULL) {
            ac_system_terminate(s);
            fail_msg("bad options #%zu were accepted", i);
        }
        assert_last_error(AC_EINVAL);
    }

    /* the edges that are valid */
    ac_system *s = ac_system_create(name64, NULL);
    assert_non_null(s);
    assert_string_equal(ac_system_name(s), name64);
    assert_status(ac_system_terminate(s), AC_OK);
    s = ac_system_create("Az09_-", NULL);
    assert_non_null(s);
    assert_status(ac_system_terminate(s), AC_OK);
    ac_system_options edge = {.workers = 1, .batch = 1000000};
    s = ac_system_create("edge", &edge);
    assert_non_null(s);
    assert_int_equal(ac_system_workers(s), 1);
    assert_status(ac_system_terminate(s), AC_OK);

    ac_clear_error();
    assert_status(ac_system_terminate(NULL), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
}

static void test_props_bad_input(void **state)
{
    (void)state;
    ac_clear_error();
    assert_null(ac_props_new(NULL, NULL));
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_null(ac_props_new(&no_receive_def, NULL));
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_status(ac_props_set_user_data_free(NULL, count_free), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    ac_props_free(NULL);
}

static void test_spawn_bad_input(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "bad", NULL);
    assert_non_null(sys);

    ac_clear_error();
    assert_null(ac_spawn(NULL, counted_props(), "x"));
    assert_last_error(AC_EINVAL);
    assert_int_equal(atomic_load(&frees), 1); /* props consumed */

    ac_clear_error();
    assert_null(ac_spawn(sys, NULL, "x"));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_spawn(NULL, NULL, NULL));
    assert_true(ac_last_status() != AC_OK);

    /* inside-actor only: NULL context */
    ac_clear_error();
    assert_null(ac_spawn_child(NULL, counted_props(), "x"));
    assert_true(ac_last_status() != AC_OK);
    assert_true(ts_nonempty(ac_last_error()));
    assert_int_equal(atomic_load(&frees), 2);

    /* the system is unharmed */
    ac_ref *r = ac_spawn(sys, counted_props(), "x");
    assert_non_null(r);
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&frees), 3);
}

static ac_msg *counted_msg(void)
{
    ac_msg *m = ac_msg_new(&counted_type, 8);
    assert_non_null(m);
    return m;
}

static void test_tell_bad_input(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "bad", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &bi_def, NULL, "target");
    assert_non_null(r);

    ac_clear_error();
    assert_status(ac_tell(NULL, counted_msg(), NULL), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    assert_int_equal(atomic_load(&destroyed), 1); /* message consumed */

    ac_clear_error();
    assert_status(ac_tell(r, NULL, NULL), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));

    ac_clear_error();
    assert_status(ac_tell(NULL, NULL, NULL), AC_EINVAL);

    ac_clear_error();
    assert_status(ac_stop(NULL), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));

    /* the target is unharmed */
    assert_status(ac_tell(r, counted_msg(), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&received, 1, TS_WAIT_S), "message after bad tells");

    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&destroyed), 2);
}

static void test_ctx_functions_outside_actor(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "bad", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &bi_def, NULL, "target");
    assert_non_null(r);

    ac_clear_error();
    assert_true(ac_reply(NULL, counted_msg()) != AC_OK);
    assert_true(ts_nonempty(ac_last_error()));
    assert_int_equal(atomic_load(&destroyed), 1); /* consumed */
    ac_clear_error();
    assert_true(ac_forward(NULL, r) != AC_OK);
    assert_true(ts_nonempty(ac_last_error()));
    ac_clear_error();
    assert_true(ac_watch(NULL, r) != AC_OK);
    assert_true(ts_nonempty(ac_last_error()));
    ac_clear_error();
    assert_true(ac_unwatch(NULL, r) != AC_OK);
    assert_true(ts_nonempty(ac_last_error()));

    assert_null(ac_self(NULL));
    assert_null(ac_sender(NULL));
    assert_null(ac_parent(NULL));
    assert_null(ac_ctx_system(NULL));
    assert_null(ac_ctx_state(NULL));
    assert_null(ac_ctx_user_data(NULL));
    assert_null(ac_child(NULL, "x"));
    ac_ref *out[2] = {0};
    assert_int_equal(ac_children(NULL, out, 2), 0);
    assert_non_null(ac_self_path(NULL)); /* "" or similar, not a crash */
    assert_non_null(ac_self_name(NULL));
    ac_log(NULL, AC_LOG_ERROR, "no context: %d", 1); /* no crash */

    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_dead_letter_api_bad_input(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "bad", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &bi_def, NULL, "sub");
    assert_non_null(r);

    ac_clear_error();
    assert_status(ac_dead_letters_subscribe(NULL, r), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    ac_clear_error();
    assert_status(ac_dead_letters_subscribe(sys, NULL), AC_EINVAL);
    assert_true(ts_nonempty(ac_last_error()));
    ac_clear_error();
    assert_status(ac_dead_letters_unsubscribe(NULL, r), AC_EINVAL);
    ac_clear_error();
    assert_status(ac_dead_letters_unsubscribe(sys, NULL), AC_EINVAL);
    assert_int_equal(ac_dead_letter_count(NULL), 0);

    ac_msg *s = ac_msg_str_new("not a dead letter");
    assert_null(ac_dead_letter_msg(s));
    assert_null(ac_dead_letter_sender(s));
    assert_null(ac_dead_letter_recipient(s));
    assert_null(ac_dead_letter_msg(NULL));
    assert_null(ac_terminated_ref(s));
    ac_msg_release(s);

    assert_null(ac_ref_system(NULL));

    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_message_bad_input(void **state)
{
    (void)state;
    ac_clear_error();
    assert_null(ac_msg_new(NULL, 8));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_msg_str(NULL));
    assert_last_error(AC_EINVAL);

    ac_msg *i = ac_msg_int64_new(5);
    ac_msg *s = ac_msg_str_new("five");
    ac_msg *b = ac_msg_bytes_new("\x05", 1);
    assert_non_null(i);
    assert_non_null(s);
    assert_non_null(b);

    ac_clear_error();
    assert_null(ac_msg_str(i));
    assert_last_error(AC_ETYPE);

    size_t len = 77;
    ac_clear_error();
    assert_null(ac_msg_bytes(s, &len));
    assert_last_error(AC_ETYPE);
    ac_clear_error();
    assert_null(ac_msg_bytes(NULL, &len));
    assert_last_error(AC_EINVAL);

    int64_t out = 1234;
    ac_clear_error();
    assert_status(ac_msg_int64_get(s, &out), AC_ETYPE);
    assert_true(ts_nonempty(ac_last_error()));
    assert_int_equal(out, 1234); /* untouched */
    ac_clear_error();
    assert_status(ac_msg_int64_get(NULL, &out), AC_EINVAL);
    assert_int_equal(out, 1234);
    ac_clear_error();
    assert_status(ac_msg_int64_get(i, NULL), AC_EINVAL);

    ac_clear_error();
    assert_int_equal(ac_msg_int64(b), 0);
    assert_last_error(AC_ETYPE);
    ac_clear_error();
    assert_int_equal(ac_msg_int64(NULL), 0);
    assert_true(ac_last_status() != AC_OK);

    /* a success after a failure: the value is right */
    assert_int_equal(ac_msg_int64(i), 5);
    assert_status(ac_msg_int64_get(i, &out), AC_OK);
    assert_int_equal(out, 5);

    /* NULL-tolerant accessors */
    assert_null(ac_msg_data(NULL));
    assert_int_equal(ac_msg_size(NULL), 0);
    assert_null(ac_msg_type_of(NULL));
    assert_false(ac_msg_is(NULL, &ac_msg_type_str));
    assert_false(ac_msg_is(s, NULL));
    assert_string_equal(ac_msg_type_name(NULL), "(null)");
    assert_null(ac_msg_retain(NULL));
    ac_msg_release(NULL);
    assert_null(ac_msg_payload(NULL));

    ac_msg_release(i);
    ac_msg_release(s);
    ac_msg_release(b);
}

static void test_log_bad_input(void **state)
{
    (void)state;
    ac_log_level lvl = AC_LOG_ERROR;
    ac_clear_error();
    assert_int_equal(ac_log_level_parse("verbose", &lvl), AC_EINVAL);
    assert_int_equal(lvl, AC_LOG_ERROR); /* untouched */
    assert_int_equal(ac_log_level_parse(NULL, &lvl), AC_EINVAL);
    assert_int_equal(ac_log_level_parse("", &lvl), AC_EINVAL);
    assert_int_equal(ac_log_level_parse("info", NULL), AC_EINVAL);
    assert_non_null(ac_log_level_name((ac_log_level)99));
    ac_system_log(NULL, AC_LOG_ERROR, "no system: %d", 1); /* no crash */
    assert_false(ac_system_log_enabled(NULL, AC_LOG_ERROR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_strings, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_last_error_is_per_thread, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_system_create_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_props_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_spawn_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_ctx_functions_outside_actor, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_api_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_message_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_log_bad_input, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_tell_bad_input, reset, ts_teardown),
    };
    return cmocka_run_group_tests_name("bad_input", tests, NULL, NULL);
}
