/*
 * Messages: built-in types (string, printf, bytes, int64), user types with a
 * destroy hook, reference counting, one message sent to many actors, a
 * handler keeping a message past its turn.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

typedef struct point {
    double x, y;
    char *label; /* owned: freed by the destroy hook */
} point;

static atomic_llong point_destroys;

static void point_destroy(void *payload, size_t size)
{
    point *p = payload;
    if (size == sizeof(point)) {
        free(p->label);
    }
    atomic_fetch_add(&point_destroys, 1);
}

static const ac_msg_type point_type = {.name = "test.Point", .destroy = point_destroy};
static const ac_msg_type plain_type = {.name = "test.Plain"};

static int reset(void **state)
{
    atomic_store(&point_destroys, 0);
    return ts_setup(state);
}

static ac_msg *point_new(double x, double y, const char *label)
{
    ac_msg *m = ac_msg_new(&point_type, sizeof(point));
    assert_non_null(m);
    point *p = ac_msg_payload(m);
    assert_non_null(p);
    p->x = x;
    p->y = y;
    size_t n = strlen(label) + 1;
    p->label = malloc(n);
    memcpy(p->label, label, n);
    return m;
}

static void test_builtin_type_names(void **state)
{
    (void)state;
    assert_string_equal(ac_msg_type_str.name, "actorc.String");
    assert_string_equal(ac_msg_type_bytes.name, "actorc.Bytes");
    assert_string_equal(ac_msg_type_int64.name, "actorc.Int64");
    assert_string_equal(ac_msg_type_terminated.name, "actorc.Terminated");
    assert_string_equal(ac_msg_type_poison_pill.name, "actorc.PoisonPill");
    assert_string_equal(ac_msg_type_dead_letter.name, "actorc.DeadLetter");

    ac_msg *pill = ac_poison_pill();
    assert_non_null(pill);
    assert_true(ac_msg_is(pill, &ac_msg_type_poison_pill));
    assert_string_equal(ac_msg_type_name(pill), "actorc.PoisonPill");
    ac_msg *pill2 = ac_poison_pill();
    assert_non_null(pill2);
    ac_msg_release(pill);
    ac_msg_release(pill2);
}

static void test_strings(void **state)
{
    (void)state;
    char buf[] = "hello";
    ac_msg *m = ac_msg_str_new(buf);
    assert_non_null(m);
    buf[0] = 'j'; /* the message holds a copy */
    assert_string_equal(ac_msg_str(m), "hello");
    assert_true(ac_msg_is(m, &ac_msg_type_str));
    assert_false(ac_msg_is(m, &ac_msg_type_int64));
    assert_ptr_equal(ac_msg_type_of(m), &ac_msg_type_str);
    assert_string_equal(ac_msg_type_name(m), "actorc.String");
    ac_msg_release(m);

    m = ac_msg_str_new("");
    assert_non_null(m);
    assert_string_equal(ac_msg_str(m), "");
    ac_msg_release(m);

    m = ac_msg_printf("%s-%d-%05.1f", "x", 42, 2.5);
    assert_non_null(m);
    assert_string_equal(ac_msg_str(m), "x-42-002.5");
    assert_true(ac_msg_is(m, &ac_msg_type_str));
    ac_msg_release(m);

    /* longer than any small internal buffer */
    char big[5001];
    memset(big, 'q', 5000);
    big[5000] = '\0';
    m = ac_msg_printf("<%s>", big);
    assert_non_null(m);
    const char *s = ac_msg_str(m);
    assert_non_null(s);
    assert_int_equal(strlen(s), 5002);
    assert_int_equal(s[0], '<');
    assert_int_equal(s[5001], '>');
    assert_int_equal(s[2500], 'q');
    ac_msg_release(m);

    m = ac_msg_str_new(big);
    assert_non_null(m);
    assert_string_equal(ac_msg_str(m), big);
    ac_msg_release(m);
}

static void test_bytes(void **state)
{
    (void)state;
    uint8_t data[] = {0, 1, 2, 0, 255, 0};
    ac_msg *m = ac_msg_bytes_new(data, sizeof data);
    assert_non_null(m);
    data[1] = 9; /* copied */
    size_t len = 0;
    const uint8_t *b = ac_msg_bytes(m, &len);
    assert_non_null(b);
    assert_int_equal(len, 6);
    assert_int_equal(b[0], 0);
    assert_int_equal(b[1], 1);
    assert_int_equal(b[4], 255);
    assert_int_equal(b[5], 0);
    assert_true(ac_msg_is(m, &ac_msg_type_bytes));
    assert_string_equal(ac_msg_type_name(m), "actorc.Bytes");
    ac_msg_release(m);

    size_t n = 1 << 16;
    uint8_t *large = malloc(n);
    for (size_t i = 0; i < n; i++) {
        large[i] = (uint8_t)(i * 7);
    }
    m = ac_msg_bytes_new(large, n);
    assert_non_null(m);
    b = ac_msg_bytes(m, &len);
    assert_int_equal(len, n);
    assert_memory_equal(b, large, n);
    free(large);
    ac_msg_release(m);
}

static void test_int64(void **state)
{
    (void)state;
    const int64_t values[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ac_msg *m = ac_msg_int64_new(values[i]);
        assert_non_null(m);
        int64_t out = 7;
        assert_status(ac_msg_int64_get(m, &out), AC_OK);
        assert_true(out == values[i]);
        assert_true(ac_msg_int64(m) == values[i]);
        assert_true(ac_msg_is(m, &ac_msg_type_int64));
        assert_string_equal(ac_msg_type_name(m), "actorc.Int64");
        ac_msg_release(m);
    }
}

static void test_user_type(void **state)
{
    (void)state;
    ac_msg *m = ac_msg_new(&plain_type, 24);
    assert_non_null(m);
    assert_int_equal(ac_msg_size(m), 24);
    const unsigned char *z = ac_msg_data(m);
    for (int i = 0; i < 24; i++) {
        assert_int_equal(z[i], 0); /* zeroed */
    }
    unsigned char *w = ac_msg_payload(m);
    w[3] = 0xab;
    assert_int_equal(((const unsigned char *)ac_msg_data(m))[3], 0xab);
    assert_true(ac_msg_is(m, &plain_type));
    assert_false(ac_msg_is(m, &point_type)); /* by descriptor */
    assert_ptr_equal(ac_msg_type_of(m), &plain_type);
    assert_string_equal(ac_msg_type_name(m), "test.Plain");
    ac_msg_release(m);

    /* zero-size payloads are fine */
    m = ac_msg_new(&plain_type, 0);
    assert_non_null(m);
    assert_int_equal(ac_msg_size(m), 0);
    ac_msg_release(m);

    m = point_new(1.5, -2.0, "p");
    const point *p = ac_msg_data(m);
    assert_true(p->x == 1.5 && p->y == -2.0);
    assert_string_equal(p->label, "p");
    assert_int_equal(ac_msg_size(m), sizeof(point));
    ac_msg_release(m);
    assert_int_equal(atomic_load(&point_destroys), 1);
}

static void test_refcounts(void **state)
{
    (void)state;
    ac_msg *m = point_new(0, 0, "rc");
    assert_ptr_equal(ac_msg_retain(m), m);
    assert_ptr_equal(ac_msg_retain(m), m);
    ac_msg_release(m);
    ac_msg_release(m);
    assert_int_equal(atomic_load(&point_destroys), 0);
    assert_string_equal(((const point *)ac_msg_data(m))->label, "rc");
    ac_msg_release(m);
    assert_int_equal(atomic_load(&point_destroys), 1);
}

/* ---- through actors --------------------------------------------------------- */

#define RECEIVERS 5

typedef struct fan_data {
    ts_recorder *rec;
    atomic_llong got;
    pthread_mutex_t mu;
    ac_msg *kept[RECEIVERS]; /* retained by handlers, under mu */
    int nkept;
} fan_data;

static void fan_receive(ac_ctx *ctx, ac_msg *msg)
{
    fan_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &point_type)) {
        const point *p = ac_msg_data(msg);
        ts_rec_add(d->rec, "%s point %.1f,%.1f %s", ac_self_name(ctx), p->x, p->y, p->label);
        pthread_mutex_lock(&d->mu);
        if (d->nkept < RECEIVERS) {
            d->kept[d->nkept++] = ac_msg_retain(msg); /* keep past this turn */
        }
        pthread_mutex_unlock(&d->mu);
    } else if (ac_msg_is(msg, &ac_msg_type_str)) {
        ts_rec_add(d->rec, "%s str %s", ac_self_name(ctx), ac_msg_str(msg));
    } else if (ac_msg_is(msg, &ac_msg_type_bytes)) {
        size_t len = 0;
        const uint8_t *b = ac_msg_bytes(msg, &len);
        ts_rec_add(d->rec, "%s bytes %zu %d %d", ac_self_name(ctx), len, b[0], b[len - 1]);
    } else if (ac_msg_is(msg, &ac_msg_type_int64)) {
        ts_rec_add(d->rec, "%s int %lld", ac_self_name(ctx), (long long)ac_msg_int64(msg));
    } else {
        ts_rec_add(d->rec, "%s other %s", ac_self_name(ctx), ac_msg_type_name(msg));
    }
    atomic_fetch_add(&d->got, 1);
}

static const ac_actor_def fan_def = {.name = "Fan", .receive = fan_receive};

static void fan_free(void *p)
{
    fan_data *d = p;
    for (int i = 0; i < d->nkept; i++) {
        ac_msg_release(d->kept[i]);
    }
    pthread_mutex_destroy(&d->mu);
}

static void expect_event(ts_recorder *rec, const char *label)
{
    if (ts_rec_index_of(rec, label) < 0) {
        ts_rec_dump(rec, "events");
        fail_msg("missing event \"%s\"", label);
    }
}

/* One message told to many actors (one reference each): every receiver sees
 * the same content, and the destroy hook runs once, after the last holder
 * let go. */
static void test_one_message_many_receivers(void **state)
{
    ts_fixture *fx = *state;
    fan_data *d = ts_fx_data(fx, sizeof *d, fan_free);
    pthread_mutex_init(&d->mu, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "messages", NULL);
    assert_non_null(sys);

    ac_ref *r[RECEIVERS];
    for (int i = 0; i < RECEIVERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        r[i] = ts_spawn(sys, &fan_def, d, name);
        assert_non_null(r[i]);
    }
    ac_msg *m = point_new(3, 4, "shared");
    for (int i = 0; i < RECEIVERS; i++) {
        assert_status(ac_tell(r[i], ac_msg_retain(m), NULL), AC_OK);
    }
    ac_msg_release(m); /* our own reference */
    assert_eventually(ts_wait_eq(&d->got, RECEIVERS, TS_WAIT_S), "all receivers");
    for (int i = 0; i < RECEIVERS; i++) {
        char label[64];
        snprintf(label, sizeof label, "r%d point 3.0,4.0 shared", i);
        expect_event(d->rec, label);
    }
    /* the handlers still hold it */
    assert_int_equal(atomic_load(&point_destroys), 0);
    pthread_mutex_lock(&d->mu);
    int kept = d->nkept;
    for (int i = 0; i < d->nkept; i++) {
        assert_string_equal(((const point *)ac_msg_data(d->kept[i]))->label, "shared");
        ac_msg_release(d->kept[i]);
        d->kept[i] = NULL;
    }
    d->nkept = 0;
    pthread_mutex_unlock(&d->mu);
    assert_int_equal(kept, RECEIVERS);
    assert_eventually(ts_wait_eq(&point_destroys, 1, TS_WAIT_S), "destroy after last release");

    for (int i = 0; i < RECEIVERS; i++) {
        ac_ref_release(r[i]);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&point_destroys), 1);
}

/* Every built-in type arrives intact. */
static void test_types_through_actor(void **state)
{
    ts_fixture *fx = *state;
    fan_data *d = ts_fx_data(fx, sizeof *d, fan_free);
    pthread_mutex_init(&d->mu, NULL);
    d->rec = ts_fx_rec(fx);
    ac_system *sys = ts_fx_system(fx, "messages", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &fan_def, d, "x");
    assert_non_null(r);

    uint8_t bytes[] = {7, 0, 0, 9};
    assert_status(ac_tell(r, ac_msg_str_new("hi there"), NULL), AC_OK);
    assert_status(ac_tell(r, ac_msg_printf("n=%d", 12), NULL), AC_OK);
    assert_status(ac_tell(r, ac_msg_bytes_new(bytes, sizeof bytes), NULL), AC_OK);
    assert_status(ac_tell(r, ac_msg_int64_new(INT64_MIN), NULL), AC_OK);
    assert_status(ac_tell(r, ac_msg_new(&plain_type, 4), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->got, 5, TS_WAIT_S), "5 messages");
    expect_event(d->rec, "x str hi there");
    expect_event(d->rec, "x str n=12");
    expect_event(d->rec, "x bytes 4 7 9");
    char want[64];
    snprintf(want, sizeof want, "x int %lld", (long long)INT64_MIN);
    expect_event(d->rec, want);
    expect_event(d->rec, "x other test.Plain");

    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A user message left unhandled in a mailbox at terminate is destroyed once,
 * and one handled is destroyed once when the handler did not keep it. */
static void nop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def nop_def = {.name = "Nop", .receive = nop_receive};

static void test_destroy_once_after_handling(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "messages", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &nop_def, NULL, "nop");
    assert_non_null(r);
    for (int i = 0; i < 50; i++) {
        assert_status(ac_tell(r, point_new(i, i, "n"), NULL), AC_OK);
    }
    assert_eventually(ts_wait_eq(&point_destroys, 50, TS_WAIT_S), "destroyed after handling");
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&point_destroys), 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_builtin_type_names, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_strings, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_bytes, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_int64, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_user_type, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_refcounts, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_one_message_many_receivers, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_types_through_actor, reset, ts_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_once_after_handling, reset, ts_teardown),
    };
    return cmocka_run_group_tests_name("messages", tests, NULL, NULL);
}
