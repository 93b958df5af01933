/*
 * Terminating a system: while actors are busy re-sending to themselves,
 * while many messages wait in a mailbox (their destroy hooks all run, once),
 * children before parents, spawning and telling during termination, and
 * repeated create/terminate.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

typedef struct tm_data {
    ts_recorder *rec;
    ts_gate gate;
    atomic_llong created;
    atomic_llong destroyed;
    atomic_llong handled;
    atomic_llong post_stops;
    atomic_llong frees;
    atomic_llong turns[8];
    atomic_uchar *destroyed_ids; /* per message id, for exactly-once */
    long long ids;
    atomic_llong bad_destroys;
} tm_data;

/* A message whose payload owns heap memory: a leak of the message shows up
 * twice, in the counters and in LeakSanitizer. */
typedef struct owned {
    tm_data *d;
    long long id;
    char *heap;
} owned;

static void owned_destroy(void *payload, size_t size)
{
    (void)size;
    owned *o = payload;
    free(o->heap);
    if (o->d->destroyed_ids != NULL) {
        if (o->id < 0 || o->id >= o->d->ids) {
            atomic_fetch_add(&o->d->bad_destroys, 1);
        } else {
            atomic_fetch_add(&o->d->destroyed_ids[o->id], 1);
        }
    }
    atomic_fetch_add(&o->d->destroyed, 1);
}

static const ac_msg_type owned_type = {.name = "test.Owned", .destroy = owned_destroy};

static ac_msg *owned_new(tm_data *d, long long id)
{
    ac_msg *m = ac_msg_new(&owned_type, sizeof(owned));
    if (m == NULL) {
        return NULL;
    }
    owned *o = ac_msg_payload(m);
    o->d = d;
    o->id = id;
    o->heap = malloc(16);
    atomic_fetch_add(&d->created, 1);
    return m;
}

static void tm_free(void *user)
{
    tm_data *d = user;
    atomic_fetch_add(&d->frees, 1);
}

static void free_tm(void *p)
{
    tm_data *d = p;
    free(d->destroyed_ids);
}

static tm_data *setup_data(ts_fixture *fx)
{
    tm_data *d = ts_fx_data(fx, sizeof *d, free_tm);
    d->rec = ts_fx_rec(fx);
    ts_gate_init(&d->gate);
    return d;
}

/* ---- busy actors ---------------------------------------------------------- */

/* Each "busy-N" re-sends a message to itself on every message. */
static void busy_receive(ac_ctx *ctx, ac_msg *msg)
{
    tm_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    int id = ac_self_name(ctx)[5] - '0';
    atomic_fetch_add(&d->turns[id], 1);
    /* during termination this may fail; the message is consumed anyway */
    ac_tell(ac_self(ctx), owned_new(d, 0), ac_self(ctx));
}

static void count_post_stop(ac_ctx *ctx)
{
    tm_data *d = ac_ctx_user_data(ctx);
    atomic_fetch_add(&d->post_stops, 1);
}

static const ac_actor_def busy_def = {
    .name = "Busy", .receive = busy_receive, .post_stop = count_post_stop,
};

static void test_terminate_while_busy(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    ac_system *sys = ts_fx_system(fx, "terminate", NULL);
    assert_non_null(sys);
    for (int i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "busy-%d", i);
        ac_ref *r = ts_spawn(sys, &busy_def, d, name);
        assert_non_null(r);
        /* two messages each, so that each actor always has one queued */
        assert_status(ac_tell(r, owned_new(d, 0), NULL), AC_OK);
        assert_status(ac_tell(r, owned_new(d, 0), NULL), AC_OK);
        ac_ref_release(r);
    }
    for (int i = 0; i < 8; i++) {
        assert_eventually(ts_wait_ge(&d->turns[i], 1000, TS_WAIT_S), "busy actor turns");
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->post_stops), 8);
    assert_int_equal(atomic_load(&d->created), atomic_load(&d->destroyed));
}

/* ---- many queued messages ------------------------------------------------- */

#define QUEUED 100000

static void blocker_receive(ac_ctx *ctx, ac_msg *msg)
{
    tm_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    if (atomic_fetch_add(&d->handled, 1) == 0) {
        ts_gate_wait(&d->gate, TS_WAIT_S);
    }
}

static const ac_actor_def blocker_def = {
    .name = "Blocker", .receive = blocker_receive, .post_stop = count_post_stop,
};

static void *open_gate_later(void *arg)
{
    tm_data *d = arg;
    ts_sleep_ms(50);
    ts_gate_open(&d->gate);
    return NULL;
}

static void test_terminate_with_queued_messages(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    d->ids = QUEUED + 1;
    d->destroyed_ids = calloc((size_t)d->ids, sizeof *d->destroyed_ids);
    assert_non_null(d->destroyed_ids);
    ac_system *sys = ts_fx_system(fx, "terminate", NULL);
    assert_non_null(sys);
    ac_ref *r = ts_spawn(sys, &blocker_def, d, "blocker");
    ac_ref *r2 = ts_spawn(sys, &blocker_def, d, "idle"); /* a second, idle actor */
    assert_non_null(r);
    assert_non_null(r2);

    assert_status(ac_tell(r, owned_new(d, QUEUED), NULL), AC_OK);
    assert_eventually(ts_gate_wait_for_waiter(&d->gate, TS_WAIT_S), "blocker in handler");
    for (long long i = 0; i < QUEUED; i++) {
        assert_status(ac_tell(r, owned_new(d, i), NULL), AC_OK);
    }
    /* the handler is released while terminate is under way */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, open_gate_later, d), 0);
    assert_status(ts_fx_terminate(fx), AC_OK);
    pthread_join(th, NULL);

    assert_int_equal(atomic_load(&d->post_stops), 2);
    assert_int_equal(atomic_load(&d->created), QUEUED + 1);
    assert_int_equal(atomic_load(&d->destroyed), QUEUED + 1);
    assert_int_equal(atomic_load(&d->bad_destroys), 0);
    for (long long i = 0; i < d->ids; i++) {
        if (atomic_load(&d->destroyed_ids[i]) != 1) {
            fail_msg("message %lld destroyed %d times", i, (int)atomic_load(&d->destroyed_ids[i]));
        }
    }
    print_message("handled %lld of %d queued messages before terminate\n",
                  (long long)atomic_load(&d->handled), QUEUED + 1);
}

/* ---- children before parents ---------------------------------------------- */

static void tree_pre_start(ac_ctx *ctx);

static void tree_post_stop(ac_ctx *ctx)
{
    tm_data *d = ac_ctx_user_data(ctx);
    ts_rec_add(d->rec, "%s", ac_self_path(ctx));
    atomic_fetch_add(&d->post_stops, 1);
}

static void nop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def tree_def = {
    .name = "Tree", .pre_start = tree_pre_start, .receive = nop_receive,
    .post_stop = tree_post_stop,
};

/* Depth from the path: top-level actors spawn two children, which spawn one
 * grandchild each. */
static void tree_pre_start(ac_ctx *ctx)
{
    tm_data *d = ac_ctx_user_data(ctx);
    const char *path = ac_self_path(ctx);
    int depth = 0;
    for (const char *p = strstr(path, "/user/"); p != NULL && *p; p++) {
        if (*p == '/') {
            depth++;
        }
    }
    depth -= 1; /* "/user/top" is depth 1 */
    int kids = depth == 1 ? 2 : depth == 2 ? 1 : 0;
    for (int i = 0; i < kids; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%d", i);
        ac_ref_release(ac_spawn_child(ctx, ac_props_new(&tree_def, d), name));
    }
    atomic_fetch_add(&d->handled, 1); /* count started actors */
}

static void test_children_stop_before_parents(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    ac_system *sys = ts_fx_system(fx, "terminate", NULL);
    assert_non_null(sys);
    ac_ref *a = ts_spawn(sys, &tree_def, d, "a");
    ac_ref *b = ts_spawn(sys, &tree_def, d, "b");
    assert_non_null(a);
    assert_non_null(b);
    /* 2 top + 4 children + 4 grandchildren */
    assert_eventually(ts_wait_eq(&d->handled, 10, TS_WAIT_S), "all 10 actors started");
    /* refs left unreleased on purpose: terminate frees them */
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->post_stops), 10);

    static const char *const order[][2] = {
        /* {child, parent}: child's post_stop first */
        {"actorc://terminate/user/a/k0/k0", "actorc://terminate/user/a/k0"},
        {"actorc://terminate/user/a/k1/k0", "actorc://terminate/user/a/k1"},
        {"actorc://terminate/user/a/k0", "actorc://terminate/user/a"},
        {"actorc://terminate/user/a/k1", "actorc://terminate/user/a"},
        {"actorc://terminate/user/b/k0/k0", "actorc://terminate/user/b/k0"},
        {"actorc://terminate/user/b/k1/k0", "actorc://terminate/user/b/k1"},
        {"actorc://terminate/user/b/k0", "actorc://terminate/user/b"},
        {"actorc://terminate/user/b/k1", "actorc://terminate/user/b"},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        long c = ts_rec_index_of(d->rec, order[i][0]);
        long p = ts_rec_index_of(d->rec, order[i][1]);
        if (c < 0 || p < 0 || !(c < p)) {
            ts_rec_dump(d->rec, "post_stop order");
            fail_msg("post_stop of %s (#%ld) should precede %s (#%ld)", order[i][0], c,
                     order[i][1], p);
        }
    }
}

/* ---- spawning and telling while the system terminates ---------------------- */

static void late_post_stop(ac_ctx *ctx)
{
    tm_data *d = ac_ctx_user_data(ctx);

    ac_props *p = ac_props_new(&blocker_def, d);
    ac_props_set_user_data_free(p, tm_free);
    ac_clear_error();
    ac_ref *c = ac_spawn_child(ctx, p, "late-child");
    ts_rec_add(d->rec, "spawn_child: %s", c ? "spawned" : ac_status_name(ac_last_status()));
    if (c == NULL && !ts_nonempty(ac_last_error())) {
        ts_rec_add(d->rec, "spawn_child: no error text");
    }

    p = ac_props_new(&blocker_def, d);
    ac_props_set_user_data_free(p, tm_free);
    ac_clear_error();
    ac_ref *t = ac_spawn(ac_ctx_system(ctx), p, "late-top");
    ts_rec_add(d->rec, "spawn: %s", t ? "spawned" : ac_status_name(ac_last_status()));

    /* telling during termination: either refused or accepted and dropped;
     * the message is consumed either way */
    ac_status st = ac_tell(ac_self(ctx), owned_new(d, 0), NULL);
    ts_rec_add(d->rec, "tell self: %s", ac_status_name(st));
    atomic_fetch_add(&d->post_stops, 1);
}

static const ac_actor_def late_def = {
    .name = "Late", .receive = nop_receive, .post_stop = late_post_stop,
};

static void test_spawn_during_terminate_fails(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    ac_system *sys = ts_fx_system(fx, "terminate", NULL);
    assert_non_null(sys);
    ac_ref *a = ts_spawn(sys, &late_def, d, "late");
    assert_non_null(a);
    assert_status(ts_fx_terminate(fx), AC_OK);

    assert_int_equal(atomic_load(&d->post_stops), 1);
    if (ts_rec_index_of(d->rec, "spawn_child: AC_ETERMINATED") < 0 ||
        ts_rec_index_of(d->rec, "spawn: AC_ETERMINATED") < 0) {
        ts_rec_dump(d->rec, "during terminate");
        fail_msg("spawning during terminate should fail with AC_ETERMINATED");
    }
    assert_int_equal(ts_rec_index_of(d->rec, "spawn_child: no error text"), -1);
    if (ts_rec_index_of(d->rec, "tell self: AC_OK") < 0 &&
        ts_rec_index_of(d->rec, "tell self: AC_ETERMINATED") < 0) {
        ts_rec_dump(d->rec, "during terminate");
        fail_msg("tell during terminate should return AC_OK or AC_ETERMINATED");
    }
    /* consumed props and messages were freed */
    assert_int_equal(atomic_load(&d->frees), 2);
    assert_int_equal(atomic_load(&d->created), 1);
    assert_int_equal(atomic_load(&d->destroyed), 1);
}

/* ---- create/terminate cycles ---------------------------------------------- */

static void test_create_terminate_cycles(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    for (int i = 0; i < 20; i++) {
        ac_system_options o = {.workers = 1 + i % 3};
        ac_system *sys = ts_fx_system(fx, "cycle", &o);
        assert_non_null(sys);
        if (i % 2 == 0) {
            ac_ref *r = ts_spawn(sys, &blocker_def, d, "x");
            assert_non_null(r);
            assert_status(ac_tell(r, owned_new(d, 0), NULL), AC_OK);
            if (i % 4 == 0) {
                ac_ref_release(r);
            }
        }
        ts_gate_open(&d->gate);
        assert_status(ts_fx_terminate(fx), AC_OK);
    }
    assert_int_equal(atomic_load(&d->post_stops), 10);
    assert_int_equal(atomic_load(&d->created), atomic_load(&d->destroyed));
}

/* Two systems at once are independent; same actor names in both. */
static void test_two_systems(void **state)
{
    ts_fixture *fx = *state;
    tm_data *d = setup_data(fx);
    ac_system *one = ac_system_create("one", NULL);
    assert_non_null(one);
    ac_system *two = ts_fx_system(fx, "two", NULL);
    assert_non_null(two);
    ac_ref *a = ts_spawn(one, &blocker_def, d, "same");
    ac_ref *b = ts_spawn(two, &blocker_def, d, "same");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(ac_ref_path(a), "actorc://one/user/same");
    assert_string_equal(ac_ref_path(b), "actorc://two/user/same");
    ts_gate_open(&d->gate);
    assert_status(ac_tell(a, owned_new(d, 0), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->handled, 1, TS_WAIT_S), "message in the first system");
    assert_status(ac_system_terminate(one), AC_OK);
    /* two still works after one is gone */
    assert_status(ac_tell(b, owned_new(d, 0), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->handled, 2, TS_WAIT_S), "message in the second system");
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->post_stops), 2);
    assert_int_equal(atomic_load(&d->created), atomic_load(&d->destroyed));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_terminate_while_busy),
        TS_UNIT(test_terminate_with_queued_messages),
        TS_UNIT(test_children_stop_before_parents),
        TS_UNIT(test_spawn_during_terminate_fails),
        TS_UNIT(test_create_terminate_cycles),
        TS_UNIT(test_two_systems),
    };
    return cmocka_run_group_tests_name("terminate", tests, NULL, NULL);
}
