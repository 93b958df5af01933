/*
 * Lifecycle of one actor: init -> pre_start -> receive... -> post_stop, then
 * the user data is freed. State is zeroed, private to the actor and
 * initialised before pre_start.
 */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "ts_test.h"

#define STATE_BYTES 512
#define MAGIC 0x5eedf00dU

typedef struct lc_state {
    unsigned magic;
    int received;
    unsigned char rest[STATE_BYTES - 2 * sizeof(int)];
} lc_state;

typedef struct lc_data {
    ts_recorder *rec;
    atomic_llong frees;
} lc_data;

static lc_data *data_of(ac_ctx *ctx)
{
    return ac_ctx_user_data(ctx);
}

static void lc_init(ac_ctx *ctx, void *state)
{
    lc_data *d = data_of(ctx);
    const unsigned char *bytes = state;
    bool zero = true;
    for (size_t i = 0; i < sizeof(lc_state); i++) {
        if (bytes[i] != 0) {
            zero = false;
        }
    }
    ts_rec_add(d->rec, "init");
    if (!zero) {
        ts_rec_add(d->rec, "init: state not zeroed");
    }
    if (state != ac_ctx_state(ctx)) {
        ts_rec_add(d->rec, "init: state pointer differs from ac_ctx_state");
    }
    ((lc_state *)state)->magic = MAGIC;
}

static void lc_pre_start(ac_ctx *ctx)
{
    lc_data *d = data_of(ctx);
    lc_state *s = ac_ctx_state(ctx);
    ts_rec_add(d->rec, "pre_start");
    if (s == NULL || s->magic != MAGIC) {
        ts_rec_add(d->rec, "pre_start: init did not run first");
        return;
    }
    /* all state_size bytes are the actor's (ASan flags a short block) */
    s->rest[sizeof s->rest - 1] = 1;
}

static void lc_receive(ac_ctx *ctx, ac_msg *msg)
{
    lc_data *d = data_of(ctx);
    lc_state *s = ac_ctx_state(ctx);
    s->received++;
    ts_rec_add(d->rec, "receive:%lld", (long long)ac_msg_int64(msg));
}

static void lc_post_stop(ac_ctx *ctx)
{
    lc_data *d = data_of(ctx);
    lc_state *s = ac_ctx_state(ctx);
    ts_rec_add(d->rec, "post_stop:%d", s->received);
}

static void lc_free(void *user)
{
    lc_data *d = user;
    atomic_fetch_add(&d->frees, 1);
    ts_rec_add(d->rec, "free");
}

static const ac_actor_def lc_def = {
    .name = "Lifecycle",
    .state_size = sizeof(lc_state),
    .init = lc_init,
    .pre_start = lc_pre_start,
    .receive = lc_receive,
    .post_stop = lc_post_stop,
};

static void expect_sequence(ts_recorder *rec, const char *const *want, size_t n)
{
    if (ts_rec_count(rec) != n) {
        ts_rec_dump(rec, "events");
        fail_msg("expected %zu lifecycle events, got %zu", n, ts_rec_count(rec));
    }
    for (size_t i = 0; i < n; i++) {
        char got[TS_REC_LABEL];
        ts_rec_get(rec, i, got, sizeof got);
        if (strcmp(got, want[i]) != 0) {
            ts_rec_dump(rec, "events");
            fail_msg("event %zu: got \"%s\", expected \"%s\"", i, got, want[i]);
        }
    }
}

static ac_ref *spawn_lc(ac_system *sys, lc_data *d, const char *name)
{
    ac_props *p = ac_props_new(&lc_def, d);
    assert_non_null(p);
    assert_status(ac_props_set_user_data_free(p, lc_free), AC_OK);
    return ac_spawn(sys, p, name);
}

/* Messages told right after spawn are handled after pre_start, in order, and
 * ac_stop leads to post_stop and then to the user data being freed. */
static void test_order_with_stop(void **state)
{
    ts_fixture *fx = *state;
    lc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "lifecycle", NULL);
    assert_non_null(sys);

    ac_ref *a = spawn_lc(sys, d, "a");
    assert_non_null(a);
    for (int64_t i = 1; i <= 3; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_eventually(ts_rec_wait_for(d->rec, "receive:3", TS_WAIT_S), "receive:3");
    assert_status(ac_stop(a), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "post_stop:3", TS_WAIT_S), "post_stop");
    ac_ref_release(a);

    assert_status(ts_fx_terminate(fx), AC_OK);
    static const char *const want[] = {
        "init", "pre_start", "receive:1", "receive:2", "receive:3", "post_stop:3", "free",
    };
    expect_sequence(d->rec, want, sizeof want / sizeof want[0]);
    assert_int_equal(atomic_load(&d->frees), 1);
}

/* An actor never stopped explicitly still gets post_stop (once) and its
 * user data freed (once) when the system terminates. */
static void test_post_stop_at_terminate(void **state)
{
    ts_fixture *fx = *state;
    lc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "lifecycle", NULL);
    assert_non_null(sys);

    ac_ref *a = spawn_lc(sys, d, "a");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(7), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "receive:7", TS_WAIT_S), "receive:7");
    /* the ref is deliberately not released: terminate frees it */
    assert_status(ts_fx_terminate(fx), AC_OK);

    static const char *const want[] = {"init", "pre_start", "receive:7", "post_stop:1", "free"};
    expect_sequence(d->rec, want, sizeof want / sizeof want[0]);
    assert_int_equal(atomic_load(&d->frees), 1);
}

/* An actor that is spawned and stopped without ever getting a message still
 * runs init, pre_start and post_stop, once each. */
static void test_no_messages(void **state)
{
    ts_fixture *fx = *state;
    lc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "lifecycle", NULL);
    assert_non_null(sys);

    ac_ref *a = spawn_lc(sys, d, NULL);
    assert_non_null(a);
    assert_status(ac_stop(a), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "post_stop:0", TS_WAIT_S), "post_stop");
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);

    static const char *const want[] = {"init", "pre_start", "post_stop:0", "free"};
    expect_sequence(d->rec, want, sizeof want / sizeof want[0]);
}

/* Each actor has its own zeroed state: three actors of one definition count
 * their own messages. */
static void test_state_is_per_actor(void **state)
{
    ts_fixture *fx = *state;
    lc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "lifecycle", NULL);
    assert_non_null(sys);

    ac_ref *r[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        r[i] = spawn_lc(sys, d, name);
        assert_non_null(r[i]);
        for (int k = 0; k <= i; k++) {
            assert_status(ac_tell(r[i], ac_msg_int64_new(100 * i + k), NULL), AC_OK);
        }
    }
    assert_eventually(ts_rec_wait_for(d->rec, "receive:202", TS_WAIT_S), "last message");
    assert_eventually(ts_rec_wait_for(d->rec, "receive:101", TS_WAIT_S), "message 101");
    assert_eventually(ts_rec_wait_for(d->rec, "receive:0", TS_WAIT_S), "message 0");
    assert_status(ts_fx_terminate(fx), AC_OK);

    /* state->received at post_stop: 1, 2 and 3 */
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:1"), 1);
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:2"), 1);
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:3"), 1);
    assert_int_equal(ts_rec_count_of(d->rec, "init"), 3);
    assert_int_equal(ts_rec_count_of(d->rec, "pre_start"), 3);
    assert_int_equal(atomic_load(&d->frees), 3);
    assert_int_equal(ts_rec_index_of(d->rec, "init: state not zeroed"), -1);
    assert_int_equal(ts_rec_index_of(d->rec, "pre_start: init did not run first"), -1);
}

/* Props freed without spawning call the user data free function once. */
static void test_props_free_unspawned(void **state)
{
    ts_fixture *fx = *state;
    lc_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);

    ac_props *p = ac_props_new(&lc_def, d);
    assert_non_null(p);
    assert_status(ac_props_set_user_data_free(p, lc_free), AC_OK);
    ac_props_free(p);
    assert_int_equal(atomic_load(&d->frees), 1);
    assert_int_equal(ts_rec_count_of(d->rec, "init"), 0);
}

/* A definition with only `receive` works (every other callback optional). */
static atomic_llong minimal_got;

static void minimal_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    atomic_fetch_add(&minimal_got, ac_msg_int64(msg));
}

static const ac_actor_def minimal_def = {.receive = minimal_receive};

static void test_minimal_definition(void **state)
{
    ts_fixture *fx = *state;
    atomic_store(&minimal_got, 0);
    ac_system *sys = ts_fx_system(fx, "lifecycle", NULL);
    assert_non_null(sys);
    ac_ref *a = ts_spawn(sys, &minimal_def, NULL, "minimal");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(40), NULL), AC_OK);
    assert_status(ac_tell(a, ac_msg_int64_new(2), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&minimal_got, 42, TS_WAIT_S), "both messages");
    assert_status(ac_stop(a), AC_OK);
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_order_with_stop),
        TS_UNIT(test_post_stop_at_terminate),
        TS_UNIT(test_no_messages),
        TS_UNIT(test_state_is_per_actor),
        TS_UNIT(test_props_free_unspawned),
        TS_UNIT(test_minimal_definition),
    };
    return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}
