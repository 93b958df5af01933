/*
 * Stopping: the cascade (grandchildren, children, then the parent's
 * post_stop, then Terminated to watchers, then leftovers to dead letters),
 * the poison pill in order, ac_stop skipping queued messages, self-stop and
 * stopping twice.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

enum { OP_BLOCK = -1, OP_WATCH = -2, OP_QUIT = -3, OP_PROBE = -4, OP_STOP_CHILD = -5 };

typedef struct stop_data {
    ac_system *sys;
    ts_recorder *rec;
    ts_gate gate;
    ac_ref *target;      /* written before OP_WATCH is told */
    atomic_llong handled;
    atomic_llong post_stops;
    atomic_llong terminated;
    atomic_llong dead_letters_seen;
    atomic_llong probes;
    atomic_llong blocked_ok;
} stop_data;

static stop_data *D(ac_ctx *ctx)
{
    return ac_ctx_user_data(ctx);
}

/* ---- a three-level tree ---------------------------------------------------- */

static void node_receive(ac_ctx *ctx, ac_msg *msg);
static void node_pre_start(ac_ctx *ctx);
static void node_post_stop(ac_ctx *ctx);

static const ac_actor_def node_def = {
    .name = "Node", .pre_start = node_pre_start, .receive = node_receive,
    .post_stop = node_post_stop,
};

static void node_pre_start(ac_ctx *ctx)
{
    stop_data *d = D(ctx);
    const char *name = ac_self_name(ctx);
    const char *child = NULL;
    if (strcmp(name, "parent") == 0) {
        child = "child";
    } else if (strcmp(name, "child") == 0) {
        child = "grandchild";
    }
    if (child != NULL) {
        ac_ref *c = ac_spawn_child(ctx, ac_props_new(&node_def, d), child);
        if (c == NULL) {
            ts_rec_add(d->rec, "spawn %s failed", child);
        }
        ac_ref_release(c);
    }
    ts_rec_add(d->rec, "pre_start:%s", name);
}

static void node_receive(ac_ctx *ctx, ac_msg *msg)
{
    stop_data *d = D(ctx);
    int64_t v = ac_msg_int64(msg);
    if (v == OP_BLOCK) {
        if (ts_gate_wait(&d->gate, TS_WAIT_S)) {
            atomic_fetch_add(&d->blocked_ok, 1);
        }
    } else if (v == OP_QUIT) {
        ac_stop(ac_self(ctx));
    } else if (v == OP_STOP_CHILD) {
        ac_ref *c = ac_child(ctx, "child");
        ts_rec_add(d->rec, "stop child:%s",
                   c == NULL ? "no child" : ac_status_name(ac_stop(c)));
    }
    ts_rec_add(d->rec, "receive:%s:%lld", ac_self_name(ctx), (long long)v);
    atomic_fetch_add(&d->handled, 1);
}

static void node_post_stop(ac_ctx *ctx)
{
    stop_data *d = D(ctx);
    ts_rec_add(d->rec, "post_stop:%s", ac_self_name(ctx));
    if (strcmp(ac_self_name(ctx), "parent") == 0) {
        /* leftovers go to dead letters only after post_stop and Terminated */
        ts_rec_add(d->rec, "dead letters at parent post_stop: %llu",
                   (unsigned long long)ac_dead_letter_count(ac_ctx_system(ctx)));
    }
    atomic_fetch_add(&d->post_stops, 1);
}

/* ---- a watcher that may also subscribe to dead letters --------------------- */

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    stop_data *d = D(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ac_ref *who = ac_terminated_ref(msg);
        ac_ref *snd = ac_sender(ctx);
        ts_rec_add(d->rec, "terminated:%s", ac_ref_name(who));
        if (snd == NULL || strcmp(ac_ref_path(snd), ac_ref_path(who)) != 0) {
            ts_rec_add(d->rec, "terminated: sender is not the dead actor");
        }
        atomic_fetch_add(&d->terminated, 1);
    } else if (ac_msg_is(msg, &ac_msg_type_dead_letter)) {
        ac_msg *inner = ac_dead_letter_msg(msg);
        ts_rec_add(d->rec, "dead letter:%s:%lld", ac_ref_name(ac_dead_letter_recipient(msg)),
                   (long long)ac_msg_int64(inner));
        atomic_fetch_add(&d->dead_letters_seen, 1);
    } else if (ac_msg_int64(msg) == OP_WATCH) {
        ac_status st = ac_watch(ctx, d->target);
        ts_rec_add(d->rec, "watch:%s", ac_status_name(st));
    } else if (ac_msg_int64(msg) == OP_PROBE) {
        atomic_fetch_add(&d->probes, 1);
    }
}

static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

static long idx(ts_recorder *rec, const char *label)
{
    long i = ts_rec_index_of(rec, label);
    if (i < 0) {
        ts_rec_dump(rec, "events");
        fail_msg("missing event \"%s\"", label);
    }
    return i;
}

static void expect_before(ts_recorder *rec, const char *a, const char *b)
{
    long ia = idx(rec, a);
    long ib = idx(rec, b);
    if (!(ia < ib)) {
        ts_rec_dump(rec, "events");
        fail_msg("\"%s\" (#%ld) should come before \"%s\" (#%ld)", a, ia, b, ib);
    }
}

static stop_data *setup_data(ts_fixture *fx, const ac_system_options *opts)
{
    stop_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_gate_init(&d->gate);
    d->sys = ts_fx_system(fx, "stop", opts);
    assert_non_null(d->sys);
    return d;
}

/* Spawn parent -> child -> grandchild and a watcher of the parent; wait
 * until all are started and the watch is in place. */
static void spawn_tree_and_watcher(stop_data *d, ac_ref **parent, ac_ref **watcher)
{
    *parent = ts_spawn(d->sys, &node_def, d, "parent");
    assert_non_null(*parent);
    *watcher = ts_spawn(d->sys, &watcher_def, d, "watcher");
    assert_non_null(*watcher);
    d->target = *parent;
    assert_status(ac_tell(*watcher, ac_msg_int64_new(OP_WATCH), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "pre_start:grandchild", TS_WAIT_S),
                      "grandchild started");
    assert_eventually(ts_rec_wait_for(d->rec, "watch:AC_OK", TS_WAIT_S), "watch in place");
}

static void test_cascade_order(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *parent, *watcher;
    spawn_tree_and_watcher(d, &parent, &watcher);

    assert_status(ac_stop(parent), AC_OK);
    assert_eventually(ts_wait_eq(&d->terminated, 1, TS_WAIT_S), "Terminated at the watcher");

    expect_before(d->rec, "post_stop:grandchild", "post_stop:child");
    expect_before(d->rec, "post_stop:child", "post_stop:parent");
    expect_before(d->rec, "post_stop:parent", "terminated:parent");
    assert_int_equal(atomic_load(&d->post_stops), 3);
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:parent"), 1);
    assert_int_equal(ts_rec_index_of(d->rec, "terminated: sender is not the dead actor"), -1);

    ac_ref_release(parent);
    ac_ref_release(watcher);
    assert_status(ts_fx_terminate(fx), AC_OK);
    /* nothing ran twice during terminate */
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:grandchild"), 1);
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:child"), 1);
}

/* Leftovers: while the parent is held in a handler, a poison pill and N
 * messages queue up behind it. The pill stops the parent: children first,
 * then its post_stop (no dead letters yet), then Terminated to the watcher,
 * then the N leftovers as dead letters (the watcher, subscribed to dead
 * letters, sees them after Terminated). */
#define LEFTOVERS 20

static void test_cascade_then_leftovers_to_dead_letters(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *parent, *watcher;
    spawn_tree_and_watcher(d, &parent, &watcher);
    assert_status(ac_dead_letters_subscribe(d->sys, watcher), AC_OK);

    assert_status(ac_tell(parent, ac_msg_int64_new(OP_BLOCK), NULL), AC_OK);
    assert_eventually(ts_gate_wait_for_waiter(&d->gate, TS_WAIT_S), "parent held in handler");
    assert_status(ac_tell(parent, ac_poison_pill(), NULL), AC_OK);
    for (int i = 0; i < LEFTOVERS; i++) {
        assert_status(ac_tell(parent, ac_msg_int64_new(1000 + i), NULL), AC_OK);
    }
    ts_gate_open(&d->gate);

    assert_eventually(ts_wait_eq(&d->terminated, 1, TS_WAIT_S), "Terminated at the watcher");
    assert_eventually(ts_wait_eq(&d->dead_letters_seen, LEFTOVERS, TS_WAIT_S),
                      "leftovers at the dead-letter subscriber");
    assert_eventually(ts_wait_dead_letters(d->sys, LEFTOVERS, TS_WAIT_S), "dead letter count");
    assert_int_equal(ac_dead_letter_count(d->sys), LEFTOVERS);
    assert_int_equal(atomic_load(&d->blocked_ok), 1);

    /* only the blocking message was handled by the parent */
    assert_int_equal(ts_rec_count_of(d->rec, "receive:parent:-1"), 1);
    assert_int_equal(ts_rec_index_of(d->rec, "receive:parent:1000"), -1);

    expect_before(d->rec, "post_stop:grandchild", "post_stop:child");
    expect_before(d->rec, "post_stop:child", "post_stop:parent");
    expect_before(d->rec, "post_stop:parent", "terminated:parent");
    idx(d->rec, "dead letters at parent post_stop: 0");
    for (int i = 0; i < LEFTOVERS; i++) {
        char label[64];
        snprintf(label, sizeof label, "dead letter:parent:%d", 1000 + i);
        expect_before(d->rec, "terminated:parent", label);
        assert_int_equal(ts_rec_count_of(d->rec, label), 1);
    }

    ac_ref_release(parent);
    ac_ref_release(watcher);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* The poison pill is processed in order: what was told before it is
 * handled, what comes after it is a dead letter. */
static void test_poison_pill_in_order(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *a = ts_spawn(d->sys, &node_def, d, "pill");
    assert_non_null(a);
    for (int i = 1; i <= 5; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_status(ac_tell(a, ac_poison_pill(), NULL), AC_OK);
    for (int i = 6; i <= 10; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_eventually(ts_wait_eq(&d->post_stops, 1, TS_WAIT_S), "post_stop");
    assert_eventually(ts_wait_dead_letters(d->sys, 5, TS_WAIT_S), "5 dead letters");
    assert_int_equal(ac_dead_letter_count(d->sys), 5);
    assert_int_equal(atomic_load(&d->handled), 5);
    for (int i = 1; i <= 5; i++) {
        char label[32];
        snprintf(label, sizeof label, "receive:pill:%d", i);
        assert_int_equal(ts_rec_index_of(d->rec, label), i - 1 + 1 /* after pre_start */);
    }
    expect_before(d->rec, "receive:pill:5", "post_stop:pill");
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ac_stop on an actor busy in a handler: the handler finishes, then the
 * actor stops; messages already queued and those sent after the stop are
 * not processed but counted as dead letters, once each. */
static void test_stop_skips_queued(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *a = ts_spawn(d->sys, &node_def, d, "busy");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_BLOCK), NULL), AC_OK);
    assert_eventually(ts_gate_wait_for_waiter(&d->gate, TS_WAIT_S), "actor held in handler");
    for (int i = 1; i <= 5; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    assert_status(ac_stop(a), AC_OK);
    for (int i = 6; i <= 10; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    ts_gate_open(&d->gate);
    assert_eventually(ts_wait_eq(&d->post_stops, 1, TS_WAIT_S), "post_stop");
    assert_eventually(ts_wait_dead_letters(d->sys, 10, TS_WAIT_S), "10 dead letters");
    assert_int_equal(ac_dead_letter_count(d->sys), 10);
    assert_int_equal(atomic_load(&d->handled), 1);
    assert_int_equal(atomic_load(&d->blocked_ok), 1);
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* An actor stopping itself from its handler: what is queued behind the
 * current message is not processed. */
static void test_self_stop(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *a = ts_spawn(d->sys, &node_def, d, "quitter");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_BLOCK), NULL), AC_OK);
    assert_eventually(ts_gate_wait_for_waiter(&d->gate, TS_WAIT_S), "actor held in handler");
    assert_status(ac_tell(a, ac_msg_int64_new(OP_QUIT), NULL), AC_OK);
    for (int i = 1; i <= 3; i++) {
        assert_status(ac_tell(a, ac_msg_int64_new(i), NULL), AC_OK);
    }
    ts_gate_open(&d->gate);
    assert_eventually(ts_wait_eq(&d->post_stops, 1, TS_WAIT_S), "post_stop");
    assert_eventually(ts_wait_dead_letters(d->sys, 3, TS_WAIT_S), "3 dead letters");
    assert_int_equal(ac_dead_letter_count(d->sys), 3);
    assert_int_equal(atomic_load(&d->handled), 2); /* OP_BLOCK and OP_QUIT */
    expect_before(d->rec, "receive:quitter:-3", "post_stop:quitter");
    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Stopping a stopped actor is a no-op: post_stop runs once, one Terminated. */
static void test_stop_twice(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *a = ts_spawn(d->sys, &node_def, d, "twice");
    ac_ref *w = ts_spawn(d->sys, &watcher_def, d, "watcher");
    assert_non_null(a);
    assert_non_null(w);
    d->target = a;
    assert_status(ac_tell(w, ac_msg_int64_new(OP_WATCH), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "watch:AC_OK", TS_WAIT_S), "watch in place");

    assert_status(ac_stop(a), AC_OK);
    ac_stop(a); /* while stopping */
    assert_eventually(ts_wait_eq(&d->terminated, 1, TS_WAIT_S), "Terminated");
    ac_stop(a); /* when stopped */
    assert_status(ac_tell(w, ac_msg_int64_new(OP_PROBE), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->probes, 1, TS_WAIT_S), "probe");
    assert_int_equal(atomic_load(&d->post_stops), 1);
    assert_int_equal(atomic_load(&d->terminated), 1);
    ac_ref_release(a);
    ac_ref_release(w);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->post_stops), 1);
}

/* Stopping a middle actor stops its subtree (grandchild first) and leaves
 * its parent running. */
static void test_stop_subtree(void **state)
{
    ts_fixture *fx = *state;
    stop_data *d = setup_data(fx, NULL);
    ac_ref *parent = ts_spawn(d->sys, &node_def, d, "parent");
    assert_non_null(parent);
    assert_eventually(ts_rec_wait_for(d->rec, "pre_start:grandchild", TS_WAIT_S),
                      "grandchild started");
    assert_status(ac_tell(parent, ac_msg_int64_new(OP_STOP_CHILD), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->post_stops, 2, TS_WAIT_S), "child and grandchild stopped");
    /* The parent records ac_stop's status after the call returns, maybe
     * after the subtree has stopped on other workers. */
    assert_eventually(ts_rec_wait_for(d->rec, "stop child:AC_OK", TS_WAIT_S),
                      "the parent's ac_stop to return");
    expect_before(d->rec, "post_stop:grandchild", "post_stop:child");
    assert_int_equal(ts_rec_index_of(d->rec, "post_stop:parent"), -1);

    /* the parent still handles messages */
    assert_status(ac_tell(parent, ac_msg_int64_new(77), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "receive:parent:77", TS_WAIT_S),
                      "parent still running");
    assert_int_equal(atomic_load(&d->post_stops), 2);

    ac_ref_release(parent);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->post_stops), 3);
    assert_int_equal(ts_rec_count_of(d->rec, "post_stop:child"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_cascade_order),
        TS_UNIT(test_cascade_then_leftovers_to_dead_letters),
        TS_UNIT(test_poison_pill_in_order),
        TS_UNIT(test_stop_skips_queued),
        TS_UNIT(test_self_stop),
        TS_UNIT(test_stop_twice),
        TS_UNIT(test_stop_subtree),
    };
    return cmocka_run_group_tests_name("stop", tests, NULL, NULL);
}
