/*
 * The handler context: self, sender, parent, system, path and name, user
 * data, children; reply and forward.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

typedef struct ctx_data {
    ts_recorder *rec;
    ac_system *sys;     /* written before the first message */
    ac_ref *peer;       /* written before the message that uses it */
    ac_ref *other;      /* written before the message that uses it */
    atomic_llong replies;
} ctx_data;

enum { OP_REPORT = 1, OP_ASK = 2, OP_FORWARD = 3, OP_REPLY_NOBODY = 4, OP_PING = 5,
       OP_PONG = 6, OP_CHILDREN = 7, OP_STOP_C2 = 8 };

static ctx_data *D(ac_ctx *ctx)
{
    return ac_ctx_user_data(ctx);
}

static const char *sender_path(ac_ctx *ctx)
{
    ac_ref *s = ac_sender(ctx);
    return s == NULL ? "(none)" : ac_ref_path(s);
}

/* ---- accessors ---------------------------------------------------------- */

static void kid_pre_start(ac_ctx *ctx)
{
    ctx_data *d = D(ctx);
    ts_rec_add(d->rec, "kid.path=%s", ac_self_path(ctx));
    ts_rec_add(d->rec, "kid.name=%s", ac_self_name(ctx));
    ts_rec_add(d->rec, "kid.parent=%s", ac_ref_path(ac_parent(ctx)));
}

static void kid_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def kid_def = {
    .name = "Kid", .pre_start = kid_pre_start, .receive = kid_receive,
};

static void acc_pre_start(ac_ctx *ctx)
{
    ctx_data *d = D(ctx);
    ac_ref *kid = ac_spawn_child(ctx, ac_props_new(&kid_def, d), "kid");
    ts_rec_add(d->rec, "spawn_child=%s", kid != NULL ? "ok" : ac_status_name(ac_last_status()));
    ac_ref_release(kid);
}

static void acc_receive(ac_ctx *ctx, ac_msg *msg)
{
    ctx_data *d = D(ctx);
    if (ac_msg_int64(msg) != OP_REPORT) {
        return;
    }
    ts_rec_add(d->rec, "in_actor=%d", (int)ac_in_actor());
    ts_rec_add(d->rec, "self.path=%s", ac_ref_path(ac_self(ctx)));
    ts_rec_add(d->rec, "self_path=%s", ac_self_path(ctx));
    ts_rec_add(d->rec, "self_name=%s", ac_self_name(ctx));
    ts_rec_add(d->rec, "self.name=%s", ac_ref_name(ac_self(ctx)));
    ts_rec_add(d->rec, "parent=%s", ac_ref_path(ac_parent(ctx)));
    ts_rec_add(d->rec, "system=%s", ac_ctx_system(ctx) == d->sys ? "same" : "other");
    ts_rec_add(d->rec, "ref_system=%s",
               ac_ref_system(ac_self(ctx)) == d->sys ? "same" : "other");
    ts_rec_add(d->rec, "user_data=%s", ac_ctx_user_data(ctx) == d ? "same" : "other");
    ts_rec_add(d->rec, "sender=%s", sender_path(ctx));
    ts_rec_add(d->rec, "reported");
}

static const ac_actor_def acc_def = {
    .name = "Accessors", .pre_start = acc_pre_start, .receive = acc_receive,
};

/* Events come from several actors, each recording after its own call
 * (ac_reply, ac_forward) returns: what the test waited for may be seen
 * before them, so each is waited for too. */
static void expect_event(ts_recorder *rec, const char *label)
{
    if (!ts_rec_wait_for(rec, label, TS_WAIT_S)) {
        ts_rec_dump(rec, "events");
        fail_msg("missing event \"%s\"", label);
    }
}

static void test_accessors(void **state)
{
    ts_fixture *fx = *state;
    ctx_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "ctxsys", NULL);
    assert_non_null(d->sys);
    assert_false(ac_in_actor());

    ac_ref *a = ts_spawn(d->sys, &acc_def, d, "acc");
    assert_non_null(a);
    assert_string_equal(ac_ref_path(a), "actorc://ctxsys/user/acc");
    assert_string_equal(ac_ref_name(a), "acc");
    assert_ptr_equal(ac_ref_system(a), d->sys);
    assert_status(ac_tell(a, ac_msg_int64_new(OP_REPORT), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "reported", TS_WAIT_S), "report");
    assert_eventually(ts_rec_wait_for(d->rec, "kid.parent=actorc://ctxsys/user/acc", TS_WAIT_S),
                      "child's report");

    expect_event(d->rec, "in_actor=1");
    expect_event(d->rec, "self.path=actorc://ctxsys/user/acc");
    expect_event(d->rec, "self_path=actorc://ctxsys/user/acc");
    expect_event(d->rec, "self_name=acc");
    expect_event(d->rec, "self.name=acc");
    expect_event(d->rec, "parent=actorc://ctxsys/user");
    expect_event(d->rec, "system=same");
    expect_event(d->rec, "ref_system=same");
    expect_event(d->rec, "user_data=same");
    expect_event(d->rec, "sender=(none)");
    expect_event(d->rec, "spawn_child=ok");
    expect_event(d->rec, "kid.path=actorc://ctxsys/user/acc/kid");
    expect_event(d->rec, "kid.name=kid");
    assert_false(ac_in_actor());

    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- sender, reply, forward ---------------------------------------------- */

/* "asker": on OP_ASK tells the peer OP_PING with itself as sender; records
 * the reply's sender. "responder": records the sender and replies OP_PONG.
 * "forwarder": forwards whatever it gets to `other`. */
static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    ctx_data *d = D(ctx);
    int64_t op = ac_msg_int64(msg);
    if (op == OP_ASK) {
        ac_tell(d->peer, ac_msg_int64_new(OP_PING), ac_self(ctx));
    } else if (op == OP_PONG) {
        ts_rec_add(d->rec, "asker got pong from %s", sender_path(ctx));
        atomic_fetch_add(&d->replies, 1);
    }
}

static void responder_receive(ac_ctx *ctx, ac_msg *msg)
{
    ctx_data *d = D(ctx);
    int64_t op = ac_msg_int64(msg);
    if (op == OP_PING) {
        ts_rec_add(d->rec, "responder got ping from %s", sender_path(ctx));
        ac_status st = ac_reply(ctx, ac_msg_int64_new(OP_PONG));
        ts_rec_add(d->rec, "reply=%s", ac_status_name(st));
    } else if (op == OP_REPLY_NOBODY) {
        ac_status st = ac_reply(ctx, ac_msg_int64_new(OP_PONG));
        ts_rec_add(d->rec, "reply to nobody=%s", ac_status_name(st));
        ts_rec_add(d->rec, "replied to nobody");
    } else if (op == OP_FORWARD) {
        ts_rec_add(d->rec, "responder got forwarded %lld from %s",
                   (long long)op, sender_path(ctx));
    }
}

static void forwarder_receive(ac_ctx *ctx, ac_msg *msg)
{
    ctx_data *d = D(ctx);
    (void)msg;
    ac_status st = ac_forward(ctx, d->other);
    ts_rec_add(d->rec, "forward=%s", ac_status_name(st));
}

static const ac_actor_def asker_def = {.name = "Asker", .receive = asker_receive};
static const ac_actor_def responder_def = {.name = "Responder", .receive = responder_receive};
static const ac_actor_def forwarder_def = {.name = "Forwarder", .receive = forwarder_receive};

static void test_sender_and_reply(void **state)
{
    ts_fixture *fx = *state;
    ctx_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "ctxsys", NULL);
    assert_non_null(d->sys);

    ac_ref *asker = ts_spawn(d->sys, &asker_def, d, "asker");
    ac_ref *resp = ts_spawn(d->sys, &responder_def, d, "resp");
    assert_non_null(asker);
    assert_non_null(resp);
    d->peer = resp;

    assert_status(ac_tell(asker, ac_msg_int64_new(OP_ASK), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->replies, 1, TS_WAIT_S), "the reply");
    expect_event(d->rec, "responder got ping from actorc://ctxsys/user/asker");
    expect_event(d->rec, "reply=AC_OK");
    expect_event(d->rec, "asker got pong from actorc://ctxsys/user/resp");

    /* a sender given by a non-actor thread is seen as the sender too */
    assert_status(ac_tell(resp, ac_msg_int64_new(OP_PING), asker), AC_OK);
    assert_eventually(ts_wait_eq(&d->replies, 2, TS_WAIT_S), "the second reply");

    /* reply without a sender: a dead letter, nothing crashes */
    uint64_t before = ac_dead_letter_count(d->sys);
    assert_status(ac_tell(resp, ac_msg_int64_new(OP_REPLY_NOBODY), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "replied to nobody", TS_WAIT_S),
                      "reply without sender");
    assert_eventually(ts_wait_dead_letters(d->sys, before + 1, TS_WAIT_S),
                      "reply without sender to count as a dead letter");
    assert_int_equal(ac_dead_letter_count(d->sys), before + 1);
    assert_int_equal(atomic_load(&d->replies), 2);

    ac_ref_release(asker);
    ac_ref_release(resp);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_forward_keeps_sender(void **state)
{
    ts_fixture *fx = *state;
    ctx_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "ctxsys", NULL);
    assert_non_null(d->sys);

    ac_ref *orig = ts_spawn(d->sys, &asker_def, d, "orig");
    ac_ref *fwd = ts_spawn(d->sys, &forwarder_def, d, "fwd");
    ac_ref *resp = ts_spawn(d->sys, &responder_def, d, "resp");
    assert_non_null(orig);
    assert_non_null(fwd);
    assert_non_null(resp);
    d->other = resp;

    /* forwarded with the original sender: resp sees "orig" and its reply goes
     * to "orig", not to the forwarder */
    assert_status(ac_tell(fwd, ac_msg_int64_new(OP_FORWARD), orig), AC_OK);
    assert_eventually(
        ts_rec_wait_for(d->rec, "responder got forwarded 3 from actorc://ctxsys/user/orig",
                        TS_WAIT_S),
        "forwarded message with original sender");
    expect_event(d->rec, "forward=AC_OK");

    assert_status(ac_tell(fwd, ac_msg_int64_new(OP_PING), orig), AC_OK);
    assert_eventually(ts_wait_eq(&d->replies, 1, TS_WAIT_S), "reply to the original sender");
    expect_event(d->rec, "asker got pong from actorc://ctxsys/user/resp");

    ac_ref_release(orig);
    ac_ref_release(fwd);
    ac_ref_release(resp);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- children ------------------------------------------------------------ */

static void parent_pre_start(ac_ctx *ctx)
{
    ctx_data *d = D(ctx);
    static const char *const names[] = {"c1", "c2", "c3"};
    for (int i = 0; i < 3; i++) {
        ac_ref *c = ac_spawn_child(ctx, ac_props_new(&kid_def, d), names[i]);
        if (c == NULL) {
            ts_rec_add(d->rec, "spawn %s failed", names[i]);
        }
        ac_ref_release(c);
    }
}

static void report_children(ac_ctx *ctx, const char *when)
{
    ctx_data *d = D(ctx);
    ac_ref *out[8] = {0};
    size_t n = ac_children(ctx, out, 8);
    char names[64] = "";
    /* names sorted by their digit so the label does not depend on order */
    char seen[4] = {0};
    for (size_t i = 0; i < n && i < 8; i++) {
        const char *nm = ac_ref_name(out[i]);
        if (nm[0] == 'c' && nm[1] >= '1' && nm[1] <= '3' && nm[2] == '\0') {
            seen[nm[1] - '1'] = 1;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (seen[i]) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "c%d ", i + 1);
        }
    }
    ts_rec_add(d->rec, "%s: children=%zu [%s]", when, n, names);

    ac_ref *one[1] = {NULL};
    size_t n1 = ac_children(ctx, one, 1);
    ts_rec_add(d->rec, "%s: capped=%zu filled=%d", when, n1, one[0] != NULL);

    ac_ref *c2 = ac_child(ctx, "c2");
    ts_rec_add(d->rec, "%s: child c2=%s", when, c2 != NULL ? ac_ref_path(c2) : "(none)");
    ts_rec_add(d->rec, "%s: child nope=%s", when,
               ac_child(ctx, "nope") != NULL ? "found" : "(none)");
}

static void parent_receive(ac_ctx *ctx, ac_msg *msg)
{
    ctx_data *d = D(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ts_rec_add(d->rec, "terminated %s", ac_ref_name(ac_terminated_ref(msg)));
        report_children(ctx, "after");
        return;
    }
    int64_t op = ac_msg_int64(msg);
    if (op == OP_CHILDREN) {
        report_children(ctx, "before");
    } else if (op == OP_STOP_C2) {
        ac_ref *c2 = ac_child(ctx, "c2");
        ac_status w = ac_watch(ctx, c2);
        ac_status s = ac_stop(c2);
        ts_rec_add(d->rec, "watch=%s stop=%s", ac_status_name(w), ac_status_name(s));
    }
}

static const ac_actor_def parent_def = {
    .name = "Parent", .pre_start = parent_pre_start, .receive = parent_receive,
};

static void test_children(void **state)
{
    ts_fixture *fx = *state;
    ctx_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "ctxsys", NULL);
    assert_non_null(d->sys);

    ac_ref *p = ts_spawn(d->sys, &parent_def, d, "p");
    assert_non_null(p);
    assert_status(ac_tell(p, ac_msg_int64_new(OP_CHILDREN), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "before: child nope=(none)", TS_WAIT_S),
                      "children report");
    expect_event(d->rec, "before: children=3 [c1 c2 c3 ]");
    expect_event(d->rec, "before: capped=3 filled=1");
    expect_event(d->rec, "before: child c2=actorc://ctxsys/user/p/c2");

    assert_status(ac_tell(p, ac_msg_int64_new(OP_STOP_C2), NULL), AC_OK);
    assert_eventually(ts_rec_wait_for(d->rec, "after: child nope=(none)", TS_WAIT_S),
                      "Terminated of c2 at the parent");
    expect_event(d->rec, "watch=AC_OK stop=AC_OK");
    expect_event(d->rec, "terminated c2");
    expect_event(d->rec, "after: children=2 [c1 c3 ]");
    expect_event(d->rec, "after: capped=2 filled=1");
    expect_event(d->rec, "after: child c2=(none)");
    assert_int_equal(ts_rec_index_of(d->rec, "spawn c1 failed"), -1);

    ac_ref_release(p);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_accessors),
        TS_UNIT(test_sender_and_reply),
        TS_UNIT(test_forward_keeps_sender),
        TS_UNIT(test_children),
    };
    return cmocka_run_group_tests_name("context", tests, NULL, NULL);
}
