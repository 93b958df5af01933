/*
 * Death watch: Terminated on stop (type, sender, terminated ref), watching
 * an actor that is already dead, watching twice, unwatch.
 *
 * "No Terminated arrived" is checked without sleeping: the target is made to
 * stop with a poison pill while one more message waits behind the pill, so
 * that message becomes a dead letter only after every watcher has been sent
 * its Terminated. Once the dead letter is counted, a probe sent to the
 * watcher is queued behind any Terminated it was going to get.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

enum { OP_WATCH = 1, OP_UNWATCH = 2, OP_WATCH_TWICE = 3, OP_WATCH_UNWATCH = 4, OP_PROBE = 5,
       OP_BLOCK = 6 };

#define WATCHERS 3

typedef struct dw_data {
    ac_system *sys;
    ts_recorder *rec;
    ts_gate gate;
    ac_ref *target; /* written before the first OP_* that uses it */
    atomic_llong terminated[WATCHERS];
    atomic_llong probes[WATCHERS];
    atomic_llong target_post_stop;
} dw_data;

static dw_data *D(ac_ctx *ctx)
{
    return ac_ctx_user_data(ctx);
}

static int watcher_id(ac_ctx *ctx)
{
    const char *n = ac_self_name(ctx); /* "w0", "w1", ... */
    return n[1] - '0';
}

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    dw_data *d = D(ctx);
    int id = watcher_id(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ac_ref *who = ac_terminated_ref(msg);
        ac_ref *snd = ac_sender(ctx);
        ts_rec_add(d->rec, "w%d terminated:%s", id, who ? ac_ref_path(who) : "(null)");
        ts_rec_add(d->rec, "w%d terminated sender:%s", id, snd ? ac_ref_path(snd) : "(null)");
        ts_rec_add(d->rec, "w%d terminated type:%s", id, ac_msg_type_name(msg));
        atomic_fetch_add(&d->terminated[id], 1);
        return;
    }
    ac_status st;
    switch (ac_msg_int64(msg)) {
    case OP_WATCH:
        st = ac_watch(ctx, d->target);
        ts_rec_add(d->rec, "w%d watch:%s", id, ac_status_name(st));
        break;
    case OP_UNWATCH:
        st = ac_unwatch(ctx, d->target);
        ts_rec_add(d->rec, "w%d unwatch:%s", id, ac_status_name(st));
        break;
    case OP_WATCH_TWICE:
        st = ac_watch(ctx, d->target);
        ts_rec_add(d->rec, "w%d watch:%s", id, ac_status_name(st));
        st = ac_watch(ctx, d->target);
        ts_rec_add(d->rec, "w%d watch again:%s", id, ac_status_name(st));
        break;
    case OP_WATCH_UNWATCH:
        st = ac_watch(ctx, d->target);
        ts_rec_add(d->rec, "w%d watch:%s", id, ac_status_name(st));
        st = ac_unwatch(ctx, d->target);
        ts_rec_add(d->rec, "w%d unwatch:%s", id, ac_status_name(st));
        break;
    case OP_PROBE:
        atomic_fetch_add(&d->probes[id], 1);
        break;
    default:
        break;
    }
}

static const ac_actor_def watcher_def = {.name = "Watcher", .receive = watcher_receive};

static void target_receive(ac_ctx *ctx, ac_msg *msg)
{
    dw_data *d = D(ctx);
    if (ac_msg_int64(msg) == OP_BLOCK) {
        ts_gate_wait(&d->gate, TS_WAIT_S);
    }
}

static void target_post_stop(ac_ctx *ctx)
{
    atomic_fetch_add(&D(ctx)->target_post_stop, 1);
}

static const ac_actor_def target_def = {
    .name = "Target", .receive = target_receive, .post_stop = target_post_stop,
};

static dw_data *setup(ts_fixture *fx)
{
    dw_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_gate_init(&d->gate);
    d->sys = ts_fx_system(fx, "watch", NULL);
    assert_non_null(d->sys);
    return d;
}

static ac_ref *spawn_watcher(dw_data *d, int id)
{
    char name[32];
    snprintf(name, sizeof name, "w%d", id);
    ac_ref *w = ts_spawn(d->sys, &watcher_def, d, name);
    assert_non_null(w);
    return w;
}

static void tell_op(ac_ref *to, int op)
{
    assert_status(ac_tell(to, ac_msg_int64_new(op), NULL), AC_OK);
}

static void wait_event(dw_data *d, const char *label)
{
    if (!ts_rec_wait_for(d->rec, label, TS_WAIT_S)) {
        ts_rec_dump(d->rec, "events");
        fail_msg("timed out waiting for \"%s\"", label);
    }
}

/* Stop the target with a poison pill and one message queued behind it, and
 * wait until that message is a dead letter: by then every watcher has been
 * sent its Terminated. */
static void stop_target_and_settle(dw_data *d)
{
    uint64_t before = ac_dead_letter_count(d->sys);
    tell_op(d->target, OP_BLOCK);
    assert_eventually(ts_gate_wait_for_waiter(&d->gate, TS_WAIT_S), "target in handler");
    assert_status(ac_tell(d->target, ac_poison_pill(), NULL), AC_OK);
    tell_op(d->target, 99);
    ts_gate_open(&d->gate);
    assert_eventually(ts_wait_dead_letters(d->sys, before + 1, TS_WAIT_S),
                      "the message behind the pill to become a dead letter");
}

/* Round trip through watcher `id`: everything queued for it before this
 * call has been handled afterwards. */
static void probe(dw_data *d, ac_ref *w, int id)
{
    long long before = atomic_load(&d->probes[id]);
    tell_op(w, OP_PROBE);
    assert_eventually(ts_wait_eq(&d->probes[id], before + 1, TS_WAIT_S), "probe");
}

static void test_terminated_on_stop(void **state)
{
    ts_fixture *fx = *state;
    dw_data *d = setup(fx);
    d->target = ts_spawn(d->sys, &target_def, d, "target");
    assert_non_null(d->target);
    ac_ref *w = spawn_watcher(d, 0);
    tell_op(w, OP_WATCH);
    wait_event(d, "w0 watch:AC_OK");

    assert_status(ac_stop(d->target), AC_OK);
    assert_eventually(ts_wait_eq(&d->terminated[0], 1, TS_WAIT_S), "Terminated");
    wait_event(d, "w0 terminated:actorc://watch/user/target");
    wait_event(d, "w0 terminated sender:actorc://watch/user/target");
    wait_event(d, "w0 terminated type:actorc.Terminated");
    assert_int_equal(atomic_load(&d->target_post_stop), 1);

    ac_ref_release(w);
    ac_ref_release(d->target);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Watching an actor that is already dead yields Terminated at once. */
static void test_watch_dead_actor(void **state)
{
    ts_fixture *fx = *state;
    dw_data *d = setup(fx);
    d->target = ts_spawn(d->sys, &target_def, d, "target");
    assert_non_null(d->target);
    ac_ref *w0 = spawn_watcher(d, 0);
    ac_ref *w1 = spawn_watcher(d, 1);
    tell_op(w0, OP_WATCH);
    wait_event(d, "w0 watch:AC_OK");
    assert_status(ac_stop(d->target), AC_OK);
    assert_eventually(ts_wait_eq(&d->terminated[0], 1, TS_WAIT_S), "target dead");

    tell_op(w1, OP_WATCH);
    assert_eventually(ts_wait_eq(&d->terminated[1], 1, TS_WAIT_S),
                      "Terminated for a target that was already dead");
    wait_event(d, "w1 terminated:actorc://watch/user/target");
    wait_event(d, "w1 terminated sender:actorc://watch/user/target");
    probe(d, w1, 1);
    assert_int_equal(atomic_load(&d->terminated[1]), 1);

    ac_ref_release(w0);
    ac_ref_release(w1);
    ac_ref_release(d->target);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Watching twice delivers one Terminated. */
static void test_watch_twice_one_terminated(void **state)
{
    ts_fixture *fx = *state;
    dw_data *d = setup(fx);
    d->target = ts_spawn(d->sys, &target_def, d, "target");
    assert_non_null(d->target);
    ac_ref *w = spawn_watcher(d, 0);
    tell_op(w, OP_WATCH_TWICE);
    wait_event(d, "w0 watch again:AC_OK");
    tell_op(w, OP_WATCH); /* a third time, from another message */
    assert_eventually(ts_rec_wait_count_of(d->rec, "w0 watch:AC_OK", 2, TS_WAIT_S),
                      "third watch");

    stop_target_and_settle(d);
    assert_eventually(ts_wait_ge(&d->terminated[0], 1, TS_WAIT_S), "Terminated");
    probe(d, w, 0);
    assert_int_equal(atomic_load(&d->terminated[0]), 1);

    ac_ref_release(w);
    ac_ref_release(d->target);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Unwatch: no Terminated is delivered afterwards, while a watcher that kept
 * its watch gets one. Covers unwatch in the same handler as the watch and in
 * a later one. */
static void test_unwatch(void **state)
{
    ts_fixture *fx = *state;
    dw_data *d = setup(fx);
    d->target = ts_spawn(d->sys, &target_def, d, "target");
    assert_non_null(d->target);
    ac_ref *w0 = spawn_watcher(d, 0); /* keeps watching */
    ac_ref *w1 = spawn_watcher(d, 1); /* watch + unwatch in one handler */
    ac_ref *w2 = spawn_watcher(d, 2); /* watch, later unwatch */
    tell_op(w0, OP_WATCH);
    tell_op(w1, OP_WATCH_UNWATCH);
    tell_op(w2, OP_WATCH);
    wait_event(d, "w2 watch:AC_OK");
    tell_op(w2, OP_UNWATCH);
    wait_event(d, "w0 watch:AC_OK");
    wait_event(d, "w1 unwatch:AC_OK");
    wait_event(d, "w2 unwatch:AC_OK");

    stop_target_and_settle(d);
    assert_eventually(ts_wait_eq(&d->terminated[0], 1, TS_WAIT_S), "Terminated at w0");
    probe(d, w1, 1);
    probe(d, w2, 2);
    assert_int_equal(atomic_load(&d->terminated[1]), 0);
    assert_int_equal(atomic_load(&d->terminated[2]), 0);

    ac_ref_release(w0);
    ac_ref_release(w1);
    ac_ref_release(w2);
    ac_ref_release(d->target);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* A watcher that dies before its target: the target's later stop still
 * notifies the live watcher, and nothing is delivered to the dead one. */
static void test_watcher_dies_first(void **state)
{
    ts_fixture *fx = *state;
    dw_data *d = setup(fx);
    ac_ref *target = ts_spawn(d->sys, &target_def, d, "target");
    assert_non_null(target);
    ac_ref *w0 = spawn_watcher(d, 0);
    ac_ref *w1 = spawn_watcher(d, 1);
    ac_ref *w2 = spawn_watcher(d, 2);
    d->target = target;
    tell_op(w0, OP_WATCH);
    tell_op(w1, OP_WATCH);
    wait_event(d, "w0 watch:AC_OK");
    wait_event(d, "w1 watch:AC_OK");

    /* w2 watches w0 to learn when w0 is gone */
    d->target = w0;
    tell_op(w2, OP_WATCH);
    wait_event(d, "w2 watch:AC_OK");
    assert_status(ac_stop(w0), AC_OK);
    assert_eventually(ts_wait_eq(&d->terminated[2], 1, TS_WAIT_S), "w0 dead");
    wait_event(d, "w2 terminated:actorc://watch/user/w0");

    d->target = target;
    stop_target_and_settle(d);
    assert_eventually(ts_wait_eq(&d->terminated[1], 1, TS_WAIT_S), "Terminated at w1");
    assert_int_equal(atomic_load(&d->terminated[0]), 0);
    assert_int_equal(atomic_load(&d->target_post_stop), 1);

    ac_ref_release(w0);
    ac_ref_release(w1);
    ac_ref_release(w2);
    ac_ref_release(target);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Terminated and its accessors, outside any actor. */
static void test_terminated_accessors_on_other_types(void **state)
{
    (void)state;
    assert_string_equal(ac_msg_type_terminated.name, "actorc.Terminated");
    ac_msg *m = ac_msg_str_new("not a Terminated");
    assert_non_null(m);
    assert_null(ac_terminated_ref(m));
    assert_null(ac_terminated_ref(NULL));
    ac_msg_release(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_terminated_on_stop),
        TS_UNIT(test_watch_dead_actor),
        TS_UNIT(test_watch_twice_one_terminated),
        TS_UNIT(test_unwatch),
        TS_UNIT(test_watcher_dies_first),
        TS_UNIT(test_terminated_accessors_on_other_types),
    };
    return cmocka_run_group_tests_name("deathwatch", tests, NULL, NULL);
}
