/*
 * Scatter/gather-first-completed over a group, on the manual clock: the
 * pool's contract word for word. The first success wins with the winner
 * as the sender, error replies move the scatter on, and the four
 * AggregateErrors read as the pool's do but with the group's path, members
 * in the group's order (which here is not the routees' names' order). A
 * removal leaves open scatters as they were; an addition joins the next.
 */
#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

/* routee-1 … routee-n of sg_routee_def, top-level, started. */
static void spawn_replicas(sg_data *d, int n, ac_ref **out)
{
    for (int k = 1; k <= n; k++) {
        char name[32];
        snprintf(name, sizeof name, "routee-%d", k);
        out[k - 1] = ac_spawn(d->sys, ac_props_new(&sg_routee_def, d), name);
        assert_non_null(out[k - 1]);
        if (!ts_wait_ge(&d->starts[k], 1, TS_WAIT_S)) {
            fail_msg("routee-%d did not start", k);
        }
    }
}

static ac_ref *spawn_group(sg_data *d, ac_ref *const *routees, size_t n, int64_t timeout_ms)
{
    ac_scatter_gather_options o = {.timeout_ms = timeout_ms};
    ac_props *p = ac_router_group_scatter_gather_first_completed(routees, n, &o);
    if (p == NULL) {
        fail_msg("factory: %s", ac_last_error());
    }
    ac_ref *r = ac_spawn(d->sys, p, "group");
    assert_non_null(r);
    atomic_store(&d->router, r);
    return r;
}

/* A pool of n beside the group, for comparing messages: its routees are
 * the second incarnation (gen 1) of each index, with the same behaviour. */
static ac_ref *spawn_pool(sg_data *d, int n, int64_t timeout_ms)
{
    ac_scatter_gather_options o = {.timeout_ms = timeout_ms};
    ac_routee_options ro = {.user_data = d};
    ac_ref *r = ac_spawn(d->sys,
                         ac_router_scatter_gather_first_completed(n, &sg_routee_def, &o, &ro),
                         "pool");
    assert_non_null(r);
    for (int k = 1; k <= n; k++) {
        if (!ts_wait_ge(&d->starts[k], 2, TS_WAIT_S)) {
            fail_msg("the pool's routee-%d did not start", k);
        }
    }
    return r;
}

static void expect(char *buf, size_t cap, ac_ref *router, const char *tail)
{
    snprintf(buf, cap, "Scatter/gather router %s%s", ac_ref_path(router), tail);
}

/* `message` with the first `from` replaced by `to`. */
static void replace_path(char *out, size_t cap, const char *message, const char *from,
                         const char *to)
{
    const char *at = strstr(message, from);
    assert_non_null(at);
    snprintf(out, cap, "%.*s%s%s", (int)(at - message), message, to, at + strlen(from));
}

/* Ask and wait until routees 1..n have each seen one more request. */
static ac_future *ask_seen(sg_data *d, ac_ref *router, const char *key, int n)
{
    long long before[SG_MAX + 1];
    for (int k = 1; k <= n; k++) {
        before[k] = atomic_load(&d->seen[k]);
    }
    ac_future *f = ac_ask(router, sg_key_new(key, 1), 10000);
    assert_non_null(f);
    for (int k = 1; k <= n; k++) {
        sg_wait_seen(d, k, before[k] + 1);
    }
    return f;
}

/* Given as routee-3, routee-1, routee-2: routee-3 fails at once, routee-1
 * stays silent, routee-2 answers after 30 ms and wins, as the sender. */
static void test_first_success_wins(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-first", true);
    sg_set(d, 1, SG_SILENT, 0);
    sg_set(d, 2, SG_LATER, 30);
    sg_set(d, 3, SG_ERROR, 0);
    ac_ref *r[3];
    spawn_replicas(d, 3, r);
    ac_ref *order[3] = {r[2], r[0], r[1]};
    ac_ref *router = spawn_group(d, order, 3, 250);

    ac_future *f = ask_seen(d, router, "k", 3);
    assert_eventually(ts_wait_ge(&d->replies[3], 1, TS_WAIT_S), "routee-3's error");
    sg_assert_pending(f, "after routee-3's error");
    assert_status(ac_clock_advance(d->sys, 30), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 2, 0, "k");
    ac_answer_release(&a);
    ac_future_release(f);
    sg_assert_routees_ok(d);
    ac_ref_release(router);
    for (int i = 0; i < 3; i++) {
        ac_ref_release(r[i]);
    }
}

/* Member i is the error reply of routee-k. */
static void assert_error_member(const ac_error *agg, size_t i, int k, const char *key)
{
    ac_error *m = ac_error_member(agg, i);
    char want[96];
    snprintf(want, sizeof want, "routee-%d failed on %s", k, key);
    if (!ac_error_is(m, "RouteeError") || strcmp(ac_error_message(m), want) != 0) {
        fail_msg("member %zu: expected RouteeError \"%s\", got %s: %s", i, want,
                 ac_error_name(m), ac_error_message(m));
    }
}

/* Member i is an AskTimeoutError naming `routee`. */
static void assert_timeout_member(const ac_error *agg, size_t i, const ac_ref *routee)
{
    ac_error *m = ac_error_member(agg, i);
    if (!ac_error_is(m, AC_ASK_TIMEOUT_ERROR) ||
        strstr(ac_error_message(m), ac_ref_path(routee)) == NULL) {
        fail_msg("member %zu: expected an AskTimeoutError naming %s, got %s: %s", i,
                 ac_ref_path(routee), ac_error_name(m), ac_error_message(m));
    }
}

/* The pool's answer to the same scatter, its message with the group's
 * path in place of the pool's: byte for byte the group's. */
static void assert_pool_says_the_same(sg_data *d, ac_ref *pool, ac_ref *group, const char *key,
                                      int n, int64_t advance_ms, const ac_answer *group_answer)
{
    ac_future *f = ac_ask(pool, sg_key_new(key, 1), 10000);
    assert_non_null(f);
    for (int k = 1; k <= n; k++) {
        if (!ts_wait_ge(&d->seen_gen[k][1], 1, TS_WAIT_S)) {
            fail_msg("the pool's routee-%d did not see the request", k);
        }
    }
    if (advance_ms > 0) {
        assert_status(ac_clock_advance(d->sys, advance_ms), AC_OK);
    }
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    assert_status(st, AC_EFAILED);
    char mapped[512];
    replace_path(mapped, sizeof mapped, ac_error_message(a.error), ac_ref_path(pool),
                 ac_ref_path(group));
    assert_string_equal(mapped, ac_error_message(group_answer->error));
    assert_int_equal(ac_error_member_count(a.error), ac_error_member_count(group_answer->error));
    ac_answer_release(&a);
    ac_future_release(f);
}

/* Every routee fails: "all 3 routees failed", members in the group's
 * order (routee-3, routee-1, routee-2); the pool says the same. */
static void test_all_failed(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-allfail", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_ERROR, 0);
    }
    ac_ref *r[3];
    spawn_replicas(d, 3, r);
    ac_ref *order[3] = {r[2], r[0], r[1]};
    ac_ref *router = spawn_group(d, order, 3, 250);
    ac_ref *pool = spawn_pool(d, 3, 250);

    ac_future *f = ac_ask(router, sg_key_new("k", 1), 10000);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    assert_int_equal(ac_clock_now_ms(d->sys), 0);
    char want[256];
    expect(want, sizeof want, router, ": all 3 routees failed");
    sg_assert_aggregate(st, &a, want, 3);
    assert_error_member(a.error, 0, 3, "k");
    assert_error_member(a.error, 1, 1, "k");
    assert_error_member(a.error, 2, 2, "k");
    assert_false(ac_error_all_timeouts(a.error));
    assert_pool_says_the_same(d, pool, router, "k", 3, 0, &a);
    ac_answer_release(&a);
    ac_future_release(f);
    sg_assert_routees_ok(d);
    ac_ref_release(pool);
    ac_ref_release(router);
    for (int i = 0; i < 3; i++) {
        ac_ref_release(r[i]);
    }
}

/* Nobody replies: "none of 3 routees replied within 250ms" at 250 ms,
 * three AskTimeoutErrors in the group's order; the pool says the same. */
static void test_all_timed_out(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-none", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *r[3];
    spawn_replicas(d, 3, r);
    ac_ref *order[3] = {r[1], r[2], r[0]};
    ac_ref *router = spawn_group(d, order, 3, 250);
    ac_ref *pool = spawn_pool(d, 3, 250);

    ac_future *f = ask_seen(d, router, "k", 3);
    assert_status(ac_clock_advance(d->sys, 249), AC_OK);
    sg_assert_pending(f, "at 249 ms");
    assert_status(ac_clock_advance(d->sys, 1), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": none of 3 routees replied within 250ms");
    sg_assert_aggregate(st, &a, want, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_timeout_member(a.error, i, order[i]);
    }
    assert_true(ac_error_all_timeouts(a.error));
    assert_pool_says_the_same(d, pool, router, "k", 3, 250, &a);
    ac_answer_release(&a);
    ac_future_release(f);
    ac_ref_release(pool);
    ac_ref_release(router);
    for (int i = 0; i < 3; i++) {
        ac_ref_release(r[i]);
    }
}

/* A group of none answers at once: "has no routees left to scatter to";
 * so does one whose routees were all removed. */
static void test_no_routees(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-empty", true);
    ac_ref *r[1];
    spawn_replicas(d, 1, r);
    ac_ref *router = spawn_group(d, NULL, 0, 250);
    char want[256];
    expect(want, sizeof want, router, " has no routees left to scatter to");
    ac_answer a;
    ac_status st = ac_ask_wait(router, sg_key_new("k", 0), SG_WAIT_MS, &a);
    sg_assert_aggregate(st, &a, want, 0);
    assert_ptr_equal(a.sender, router);
    ac_answer_release(&a);

    assert_status(ac_tell(router, ac_router_add_routee_msg(r[0]), NULL), AC_OK);
    st = ac_ask_wait(router, sg_key_new("k", 0), SG_WAIT_MS, &a);
    sg_assert_reply_from(d, st, &a, 1, 0, "k");
    ac_answer_release(&a);
    assert_status(ac_tell(router, ac_router_remove_routee_msg(r[0]), NULL), AC_OK);
    st = ac_ask_wait(router, sg_key_new("k", 0), SG_WAIT_MS, &a);
    sg_assert_aggregate(st, &a, want, 0);
    ac_answer_release(&a);
    ac_ref_release(router);
    ac_ref_release(r[0]);
}

/* The router stops mid-scatter: "stopped while the scatter was still
 * open", no members; the routees keep running and answer directly. */
static void test_stopped_mid_scatter(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-stop", true);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_SILENT, 0);
    }
    ac_ref *r[3];
    spawn_replicas(d, 3, r);
    ac_ref *router = spawn_group(d, r, 3, 250);
    ac_future *f = ask_seen(d, router, "k", 3);
    assert_status(ac_stop(router), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, " stopped while the scatter was still open");
    sg_assert_aggregate(st, &a, want, 0);
    ac_answer_release(&a);
    ac_future_release(f);
    for (int k = 1; k <= 3; k++) {
        sg_set(d, k, SG_ECHO, 0);
        st = ac_ask_wait(r[k - 1], sg_key_new("direct", 0), SG_WAIT_MS, &a);
        sg_assert_reply_from(d, st, &a, k, 0, "direct");
        ac_answer_release(&a);
    }
    /* the silent replies' timeouts pass without anyone to answer */
    assert_status(ac_clock_advance(d->sys, 250), AC_OK);
    ac_ref_release(router);
    for (int i = 0; i < 3; i++) {
        ac_ref_release(r[i]);
    }
}

/* routee-1 answers late; it is removed while the scatter is open, and its
 * answer still wins that scatter. The next scatter goes to the others
 * only, and to a routee added meanwhile. */
static void test_changes_and_open_scatters(void **state)
{
    ts_fixture *fx = *state;
    sg_data *d = sg_setup(fx, "sg-group-change", true);
    sg_set(d, 1, SG_LATER, 50);
    sg_set(d, 2, SG_SILENT, 0);
    sg_set(d, 3, SG_SILENT, 0);
    sg_set(d, 4, SG_SILENT, 0);
    ac_ref *r[4];
    spawn_replicas(d, 4, r);
    ac_ref *router = spawn_group(d, r, 3, 250);
    ac_future *f = ask_seen(d, router, "k", 3);

    assert_status(ac_tell(router, ac_router_remove_routee_msg(r[0]), NULL), AC_OK);
    assert_status(ac_tell(router, ac_router_add_routee_msg(r[3]), NULL), AC_OK);
    ac_answer g;
    assert_status(ac_ask_wait(router, ac_router_get_routees_msg(), SG_WAIT_MS, &g), AC_OK);
    assert_int_equal(ac_routees_count(g.reply), 3);
    assert_ptr_equal(ac_routees_at(g.reply, 0), r[1]);
    assert_ptr_equal(ac_routees_at(g.reply, 1), r[2]);
    assert_ptr_equal(ac_routees_at(g.reply, 2), r[3]);
    ac_answer_release(&g);
    sg_assert_pending(f, "after the removal");

    assert_status(ac_clock_advance(d->sys, 50), AC_OK);
    ac_answer a;
    ac_status st = sg_wait_future(f, &a);
    sg_assert_reply_from(d, st, &a, 1, 0, "k");
    ac_answer_release(&a);
    ac_future_release(f);

    /* the next one: routee-2, -3, -4; nobody answers */
    long long seen1 = atomic_load(&d->seen[1]);
    long long before4 = atomic_load(&d->seen[4]);
    f = ac_ask(router, sg_key_new("next", 1), 10000);
    assert_non_null(f);
    sg_wait_seen(d, 4, before4 + 1);
    assert_status(ac_clock_advance(d->sys, 250), AC_OK);
    st = sg_wait_future(f, &a);
    char want[256];
    expect(want, sizeof want, router, ": none of 3 routees replied within 250ms");
    sg_assert_aggregate(st, &a, want, 3);
    assert_timeout_member(a.error, 0, r[1]);
    assert_timeout_member(a.error, 1, r[2]);
    assert_timeout_member(a.error, 2, r[3]);
    ac_answer_release(&a);
    ac_future_release(f);
    sg_set(d, 1, SG_ECHO, 0);
    sg_assert_seen_exactly(d, 1, seen1 + 1); /* its barrier, and nothing more */
    sg_assert_routees_ok(d);
    ac_ref_release(router);
    for (int i = 0; i < 4; i++) {
        ac_ref_release(r[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_first_success_wins),
        TS_UNIT(test_all_failed),
        TS_UNIT(test_all_timed_out),
        TS_UNIT(test_no_routees),
        TS_UNIT(test_stopped_mid_scatter),
        TS_UNIT(test_changes_and_open_scatters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
