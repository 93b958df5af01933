/*
 * A group's routees at run time: AddRoutee appends, RemoveRoutee takes
 * out, the order stays the order of adding, and GetRoutees shows the set.
 * A group given no routees answers as an empty pool until one is added;
 * a pool ignores both messages with a warning; the router refuses itself.
 * The props and the router hold references to the routees and give them
 * back (white-box: the test reads reference counts).
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

#include "core/internal.h"

static void assert_no_bad(rt_pool *p)
{
    char what[160];
    if (rt_bad(p, what, sizeof what) != 0) {
        fail_msg("routees saw something wrong: %s", what);
    }
}

static void tell(ac_ref *router, ac_msg *msg)
{
    assert_non_null(msg);
    assert_status(ac_tell(router, msg, NULL), AC_OK);
}

static void expect_routees(ac_ref *router, ac_ref *const *want, size_t n)
{
    /* The changes were told before this ask, from the same thread: the
     * router has handled them when it answers. */
    ac_ref *got[16];
    long k = rt_routees(router, got, 16);
    bool same = k == (long)n;
    for (size_t i = 0; same && i < n; i++) {
        same = got[i] == want[i];
    }
    if (!same) {
        char text[512] = "";
        for (long i = 0; i < k && i < 16; i++) {
            strncat(text, ac_ref_name(got[i]), sizeof text - strlen(text) - 2);
            strncat(text, " ", sizeof text - strlen(text) - 1);
        }
        fail_msg("the router lists %ld routees: %s(expected %zu)", k, text, n);
    }
}

/* Add at the end, remove closing the gap, re-add at the end; a second add
 * of a routee and a removal of a stranger change nothing. Round-robin
 * follows the set in that order. */
static void test_add_remove_keep_order(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_changes", NULL);
    assert_non_null(sys);
    ac_ref *r[5];
    assert_true(rt_spawn_routees(sys, p, 5, r));
    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(r, 2), "group");
    assert_non_null(router);
    expect_routees(router, (ac_ref *[]){r[0], r[1]}, 2);

    tell(router, ac_router_add_routee_msg(r[2]));
    tell(router, ac_router_add_routee_msg(r[3]));
    expect_routees(router, (ac_ref *[]){r[0], r[1], r[2], r[3]}, 4);
    tell(router, ac_router_remove_routee_msg(r[1]));
    expect_routees(router, (ac_ref *[]){r[0], r[2], r[3]}, 3);
    tell(router, ac_router_add_routee_msg(r[1]));
    tell(router, ac_router_add_routee_msg(r[0])); /* already there */
    tell(router, ac_router_remove_routee_msg(r[4])); /* never was */
    ac_ref *now[4] = {r[0], r[2], r[3], r[1]};
    expect_routees(router, now, 4);

    assert_true(rt_tell_ints(router, 0, 400));
    assert_eventually(rt_wait_total(p, 400, TS_WAIT_S), "400 handled");
    const int ids[4] = {1, 3, 4, 2};
    long long before[4] = {0, 0, 0, 0};
    char why[160];
    if (!rt_check_round_robin(p, ids, 4, before, 100, why, sizeof why)) {
        fail_msg("over routee-1, -3, -4, -2: %s", why);
    }
    assert_int_equal(rt_got(p, 5), 0);

    /* Removed routees keep running: they were never the router's. */
    tell(router, ac_router_remove_routee_msg(r[2]));
    expect_routees(router, (ac_ref *[]){r[0], r[3], r[1]}, 3);
    ac_status st;
    ac_ref *who = rt_ask_routee(r[2], &st);
    assert_status(st, AC_OK);
    assert_ptr_equal(who, r[2]);
    ac_ref_release(who);
    assert_int_equal(rt_stopped(p, 3), 0);
    assert_no_bad(p);
    ac_ref_release(router);
    rt_release_all(r, 5);
}

/* A group of none: an ask fails at once as for a pool with no routees
 * left, and one warning is logged; once a routee is added it answers;
 * emptied again, the router warns again. */
static void test_empty_group(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "group_empty", &o);
    assert_non_null(sys);
    ac_ref *r[1];
    assert_true(rt_spawn_routees(sys, p, 1, r));
    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(NULL, 0), "group");
    assert_non_null(router);
    const char *path = ac_ref_path(router);

    expect_routees(router, NULL, 0);
    uint64_t dl = ac_dead_letter_count(sys);
    ac_answer a;
    assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_EDEAD);
    assert_true(ac_error_is(a.error, AC_UNDELIVERABLE_ERROR));
    char want[256];
    snprintf(want, sizeof want, "Ask to %s failed: the router has no routees left", path);
    assert_string_equal(ac_error_message(a.error), want);
    assert_null(a.sender);
    ac_answer_release(&a);
    assert_int_equal(ac_dead_letter_count(sys), dl + 1);
    assert_int_equal(rt_log_count_at(cap, AC_LOG_WARN, path), 1);

    tell(router, ac_router_add_routee_msg(r[0]));
    ac_status st;
    ac_ref *who = rt_ask_routee(router, &st);
    assert_status(st, AC_OK);
    assert_ptr_equal(who, r[0]);
    ac_ref_release(who);

    tell(router, ac_router_remove_routee_msg(r[0]));
    assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_EDEAD);
    assert_true(ac_error_is(a.error, AC_UNDELIVERABLE_ERROR));
    ac_answer_release(&a);
    if (rt_log_count_at(cap, AC_LOG_WARN, path) != 2) {
        ts_log_dump(cap, "captured");
        fail_msg("expected a second warning from %s once emptied again", path);
    }
    assert_no_bad(p);
    ac_ref_release(router);
    rt_release_all(r, 1);
}

/* A routee that had already stopped is added, then pruned. */
static void test_add_stopped_routee(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_add_dead", NULL);
    assert_non_null(sys);
    ac_ref *r[2];
    assert_true(rt_spawn_routees(sys, p, 2, r));
    assert_status(ac_stop(r[1]), AC_OK);
    assert_eventually(rt_wait_stopped(p, 2, 1, TS_WAIT_S), "routee-2 stopped");
    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(r, 1), "group");
    assert_non_null(router);
    tell(router, ac_router_add_routee_msg(r[1]));
    assert_eventually(rt_wait_routees(router, r, 1, TS_WAIT_S), "routee-2 pruned");
    for (int i = 0; i < 4; i++) { /* all to routee-1 */
        ac_status st;
        ac_ref *who = rt_ask_routee(router, &st);
        assert_status(st, AC_OK);
        assert_ptr_equal(who, r[0]);
        ac_ref_release(who);
    }
    ac_ref_release(router);
    rt_release_all(r, 2);
}

/* The router itself, or another system's actor, is refused with a
 * warning; a pool ignores both messages with a warning. */
static void test_refused_changes(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "group_refused", &o);
    assert_non_null(sys);
    ac_system *other = ac_system_create("group_other", &o);
    assert_non_null(other);
    ac_ref *stranger = ts_spawn(other, &rt_routee_def, p, "routee-8");
    assert_non_null(stranger);
    ac_ref *r[1];
    assert_true(rt_spawn_routees(sys, p, 1, r));
    ac_ref *group = rt_spawn(sys, ac_router_group_round_robin(r, 1), "group");
    assert_non_null(group);

    tell(group, ac_router_add_routee_msg(group));
    tell(group, ac_router_add_routee_msg(stranger));
    expect_routees(group, r, 1);
    char line[512];
    snprintf(line, sizeof line, "AddRoutee refused for %s: it is the router itself",
             ac_ref_path(group));
    assert_int_equal(ts_log_count_text(cap, line), 1);
    snprintf(line, sizeof line, "AddRoutee refused for %s: it belongs to another actor system",
             ac_ref_path(stranger));
    assert_int_equal(ts_log_count_text(cap, line), 1);

    ac_routee_options ro = {.user_data = p};
    ac_ref *pool = rt_spawn(sys, ac_router_round_robin(2, &rt_routee_def, &ro), "pool");
    assert_non_null(pool);
    ac_ref *children[2];
    assert_int_equal(rt_routees(pool, children, 2), 2);
    tell(pool, ac_router_add_routee_msg(r[0]));
    tell(pool, ac_router_remove_routee_msg(children[0]));
    expect_routees(pool, children, 2);
    snprintf(line, sizeof line,
             "AddRoutee of %s ignored: a pool spawns and owns its routees; only a group "
             "router's routees change at run time",
             ac_ref_path(r[0]));
    assert_int_equal(ts_log_count_text(cap, line), 1);
    snprintf(line, sizeof line, "RemoveRoutee of %s ignored", ac_ref_path(children[0]));
    assert_int_equal(ts_log_count_text(cap, line), 1);
    assert_int_equal(rt_log_count_at(cap, AC_LOG_WARN, ac_ref_path(pool)), 2);

    ac_ref_release(pool);
    ac_ref_release(group);
    rt_release_all(r, 1);
    ac_ref_release(stranger);
    assert_status(ac_system_terminate(other), AC_OK);
}

/* The constructors refuse NULL; the Broadcast wrapper refuses both. */
static void test_change_messages_bad_input(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_msgs", NULL);
    assert_non_null(sys);
    ac_clear_error();
    assert_null(ac_router_add_routee_msg(NULL));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), "ac_router_add_routee_msg: routee is NULL");
    assert_null(ac_router_remove_routee_msg(NULL));
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), "ac_router_remove_routee_msg: routee is NULL");

    ac_ref *r[1];
    assert_true(rt_spawn_routees(sys, p, 1, r));
    ac_msg *add = ac_router_add_routee_msg(r[0]);
    assert_non_null(add);
    assert_true(ac_msg_is(add, &ac_msg_type_add_routee));
    assert_string_equal(ac_msg_type_name(add), "actorc.AddRoutee");
    assert_null(ac_broadcast_new(add)); /* consumed */
    assert_last_error(AC_EINVAL);
    assert_string_equal(ac_last_error(), "ac_broadcast_new: AddRoutee is handled by the router "
                                         "itself; send it unwrapped");
    ac_msg *rm = ac_router_remove_routee_msg(r[0]);
    assert_non_null(rm);
    assert_string_equal(ac_msg_type_name(rm), "actorc.RemoveRoutee");
    assert_null(ac_broadcast_new(rm));
    assert_last_error(AC_EINVAL);
    assert_null(ac_broadcast_new(ac_router_get_routees_msg()));
    assert_string_equal(ac_last_error(), "ac_broadcast_new: GetRoutees is answered by the router "
                                         "itself; send it unwrapped");
    rt_release_all(r, 1);
}

static unsigned refs_of(const ac_ref *r)
{
    return atomic_load(&r->refs);
}

/* The count of an actor nothing else talks to, once its last turn has
 * ended and let go of the scheduler's reference. */
static unsigned quiet_refs(const ac_ref *r)
{
    double end = ts_now() + TS_WAIT_S;
    unsigned last = 0;
    for (;;) {
        while (ac__mailbox_len(r) != 0 && ts_now() < end) {
            ts_sleep_ms(1);
        }
        unsigned now = refs_of(r);
        if (now == last || ts_now() > end) {
            return now;
        }
        last = now;
        ts_sleep_ms(20);
    }
}

static bool refs_back_to(const ac_ref *const *r, const unsigned *base, int n, double timeout_s)
{
    double end = ts_now() + timeout_s;
    for (;;) {
        bool back = true;
        for (int i = 0; i < n; i++) {
            back = back && refs_of(r[i]) == base[i];
        }
        if (back || ts_now() > end) {
            return back;
        }
        ts_sleep_ms(1);
    }
}

/* The props hold one reference to each routee, given back when they are
 * freed unspawned; the router's references (the set, the watch) are given
 * back when it stops, whatever was added or removed meanwhile. */
static void test_references_given_back(void **state)
{
    ts_fixture *fx = *state;
    rt_pool *p = rt_fx_pool(fx);
    ac_system *sys = ts_fx_system(fx, "group_refs", NULL);
    assert_non_null(sys);
    ac_ref *r[3];
    assert_true(rt_spawn_routees(sys, p, 3, r));
    for (int k = 1; k <= 3; k++) {
        assert_eventually(rt_wait_started(p, k, 1, TS_WAIT_S), "routee started");
    }
    unsigned base[3];
    for (int i = 0; i < 3; i++) {
        base[i] = quiet_refs(r[i]);
    }
    ac_props *props = ac_router_group_scatter_gather_first_completed(r, 2, NULL);
    assert_non_null(props);
    assert_int_equal(refs_of(r[0]), base[0] + 1);
    assert_int_equal(refs_of(r[2]), base[2]);
    ac_props_free(props);
    assert_int_equal(refs_of(r[0]), base[0]);
    assert_int_equal(refs_of(r[1]), base[1]);

    ac_ref *router = rt_spawn(sys, ac_router_group_round_robin(r, 2), "group");
    assert_non_null(router);
    tell(router, ac_router_add_routee_msg(r[2]));
    tell(router, ac_router_remove_routee_msg(r[0]));
    expect_routees(router, (ac_ref *[]){r[1], r[2]}, 2);
    assert_true(refs_of(r[2]) > base[2]);
    assert_status(ac_stop(router), AC_OK);
    if (!refs_back_to((const ac_ref *const *)r, base, 3, TS_WAIT_S)) {
        fail_msg("references not given back: %u/%u %u/%u %u/%u", refs_of(r[0]), base[0],
                 refs_of(r[1]), base[1], refs_of(r[2]), base[2]);
    }
    ac_ref_release(router);
    rt_release_all(r, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_add_remove_keep_order),
        TS_UNIT(test_empty_group),
        TS_UNIT(test_add_stopped_routee),
        TS_UNIT(test_refused_changes),
        TS_UNIT(test_change_messages_bad_input),
        TS_UNIT(test_references_given_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
