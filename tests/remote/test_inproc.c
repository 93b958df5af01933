/*
 * The in-process transport's own rules (inproc://<name>:<port>): how names
 * are bound and refused, a dial to a name nothing is bound at, a stopped
 * node as its peers' loss, and backpressure against a node that stops
 * taking frames. The cases both transports share run in remote.nodes and
 * remote.nodes.inproc.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <actorc.h>

#include "node_pair.h"
#include "node_serve.h"
#include "test_support.h"
#include "remote/node_internal.h"
#include "remote_test.h"

/* ---- names ------------------------------------------------------------------ */

static void test_names_are_bound_once(void **state)
{
    (void)state;
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", "inproc://names:0", (ac_node_options){0}, &a);
    ac_system *sb = rt_node_system("b", "inproc://names:0", (ac_node_options){0}, &b);
    /* Port 0 takes the lowest free number under the name. */
    assert_string_equal(ac_node_address(a), "names:1");
    assert_string_equal(ac_node_address(b), "names:2");
    assert_string_equal(ac_node_endpoint(a), "inproc://names:1");

    ac_system *sc = ac_system_create("c", NULL);
    ac_node_options o = {.bind = "inproc://names:1"};
    assert_null(ac_node_start(sc, &o));
    assert_int_equal(ac_last_status(), AC_EEXIST);
    assert_non_null(strstr(ac_last_error(), "inproc://names:1"));
    assert_non_null(strstr(ac_last_error(), "bound there"));

    static const char *const bad[] = {"inproc://", "inproc://names", "inproc://:1",
                                      "inproc://names:x", "inproc://na/mes:1",
                                      "inproc://names:70000", "inproc://na@mes:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.bind = bad[i];
        assert_null(ac_node_start(sc, &o));
        assert_int_equal(ac_last_status(), AC_EINVAL);
        assert_non_null(strstr(ac_last_error(), "inproc://<name>:<port>"));
    }
    o.bind = "udp://names:1";
    assert_null(ac_node_start(sc, &o));
    assert_int_equal(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "names no transport"));
    o.bind = "inproc://names:0";
    o.advertise = "names:9";
    assert_null(ac_node_start(sc, &o));
    assert_non_null(strstr(ac_last_error(), "advertise"));
    o.advertise = NULL;
    ac_node_curve c = {0};
    o.curve = &c;
    assert_null(ac_node_start(sc, &o));
    assert_non_null(strstr(ac_last_error(), "curve"));

    /* A stopped node's name is free again. */
    ac_system_terminate(sa);
    o = (ac_node_options){.bind = "inproc://names:1"};
    ac_node *c1 = ac_node_start(sc, &o);
    assert_non_null(c1);
    assert_string_equal(ac_node_address(c1), "names:1");
    ac_system_terminate(sc);
    ac_system_terminate(sb);
}

/* A name nothing is bound at refuses the dial, as a closed port does:
 * what waits for it fails when the connect timeout passes. */
static void test_an_unbound_name_is_refused(void **state)
{
    (void)state;
    ac_node *a;
    ac_system *sa = rt_node_system("a", "inproc://refuse:0",
                                (ac_node_options){.connect_timeout_ms = 300}, &a);
    ac_ref *r = ac_node_resolve(a, "actorc://b@nobody:1/user/echo");
    assert_non_null(r);
    int64_t t0 = ts_now_ms();
    ac_answer ans = {0};
    assert_int_equal(ac_ask_wait(r, ac_msg_str_new("x"), 20000, &ans), AC_EFAILED);
    assert_string_equal(ac_error_name(ans.error), AC_NODE_DOWN_ERROR);
    int64_t took = ts_now_ms() - t0;
    assert_true(took >= 250 && took < 5000);
    ac_answer_release(&ans);
    ac_node_stats s;
    ac_node_stats_get(a, &s);
    assert_true(s.nodes_down >= 1);
    assert_int_equal(s.connections, 0);
    ac_ref_release(r);
    ac_system_terminate(sa);
}

/* ---- loss ------------------------------------------------------------------- */

typedef struct seen {
    atomic_int terminated, lost;
} seen;

static void watch_receive(ac_ctx *ctx, ac_msg *msg)
{
    seen *s = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        atomic_fetch_add(&s->lost, ac_terminated_node_lost(msg) ? 1 : 0);
        atomic_fetch_add(&s->terminated, 1);
        return;
    }
    const char *path = ac_msg_str(msg);
    ac_ref *t = path ? ac_node_resolve(ac_system_node(ac_ctx_system(ctx)), path) : NULL;
    assert_non_null(t);
    assert_int_equal(ac_watch(ctx, t), AC_OK);
    ac_reply(ctx, ac_msg_str_new("ok"));
    ac_ref_release(t);
}
static const ac_actor_def watch_def = {.name = "Watch", .receive = watch_receive};

/* Stopping a node is its loss to every peer that knew it, at once: asks
 * fail with NodeDownError, watchers hear node-lost; and its name takes a
 * new incarnation. */
static void test_a_stopped_node_is_lost_at_once(void **state)
{
    (void)state;
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", "inproc://loss-a:0", (ac_node_options){0}, &a);
    ac_system *sb = rt_node_system("b", "inproc://loss-b:0", (ac_node_options){0}, &b);
    assert_true(rt_serve(sb, b));
    ac_ref *echo = rt_resolve(a, "b", b, "/user/echo");
    ac_ref *slow = rt_resolve(a, "b", b, "/user/slow");
    rt_ask_echo(echo, "up", 10000);
    seen s = {0};
    ac_ref *w = ac_spawn(sa, ac_props_new(&watch_def, &s), "w");
    char path[256];
    snprintf(path, sizeof path, "actorc://b@%s/user/echo", ac_node_address(b));
    ac_answer ans = {0};
    assert_int_equal(ac_ask_wait(w, ac_msg_str_new(path), 10000, &ans), AC_OK);
    ac_answer_release(&ans);
    rt_ask_echo(echo, "watched", 10000); /* the watch went out before this */
    ac_future *fu = ac_ask(slow, ac_msg_str_new("x"), 30000);
    ts_sleep_ms(50);
    int64_t t0 = ts_now_ms();
    assert_int_equal(ac_node_stop(b), AC_OK);
    assert_int_equal(ac_future_wait(fu, 20000, &ans), AC_EFAILED);
    assert_string_equal(ac_error_name(ans.error), AC_NODE_DOWN_ERROR);
    ac_answer_release(&ans);
    ac_future_release(fu);
    int64_t took = ts_now_ms() - t0;
    print_message("a stopped node seen in %lld ms\n", (long long)took);
    assert_true(took < 2000);
    for (int i = 0; i < 500 && atomic_load(&s.terminated) == 0; i++)
        ts_sleep_ms(10);
    assert_int_equal(atomic_load(&s.terminated), 1);
    assert_int_equal(atomic_load(&s.lost), 1);
    assert_int_equal(ac_ask_wait(echo, ac_msg_str_new("x"), 10000, &ans), AC_EFAILED);
    assert_string_equal(ac_error_name(ans.error), AC_NODE_DOWN_ERROR);
    ac_answer_release(&ans);

    /* The same name again: a new incarnation, reached by a fresh ref. */
    char bind[128];
    snprintf(bind, sizeof bind, "inproc://%s", ac_node_address(b));
    ac_system_terminate(sb);
    ac_node *b2;
    ac_system *sb2 = rt_node_system("b", bind, (ac_node_options){0}, &b2);
    assert_true(rt_serve(sb2, b2));
    ac_ref *fresh = rt_resolve(a, "b", b2, "/user/echo");
    assert_ptr_not_equal(fresh, echo);
    rt_ask_echo(fresh, "again", 10000);
    ac_ref_release(fresh);
    ac_ref_release(echo);
    ac_ref_release(slow);
    ac_ref_release(w);
    ac_system_terminate(sb2);
    ac_system_terminate(sa);
}

/* ---- backpressure ----------------------------------------------------------- */

/* A hook that holds b's transport thread: b takes no frame meanwhile. */
static atomic_int held, release_it;

static void hold_tell(void *ctx, const ac__node_peer_info *from, ac__wire_span path,
                      ac__wire_span type, ac__wire_span body)
{
    (void)ctx, (void)from, (void)path, (void)type, (void)body;
    atomic_store(&held, 1);
    while (!atomic_load(&release_it))
        ts_sleep_ms(1);
}
static const ac__node_hooks hold_hooks = {.system_tell = hold_tell};

/* A node that stops taking frames: at most max_queue wait for it, then
 * sends are refused, counted, and their messages are dead letters, as
 * over ZeroMQ. */
static void test_backpressure_is_bounded(void **state)
{
    (void)state;
    ac_node *a, *b;
    ac_system *sa = rt_node_system("a", "inproc://bp-a:0", (ac_node_options){.max_queue = 64}, &a);
    ac_system *sb = rt_node_system("b", "inproc://bp-b:0", (ac_node_options){0}, &b);
    assert_true(rt_serve(sb, b));
    assert_int_equal(ac__node_hooks_set(b, &hold_hooks), AC_OK);
    ac_ref *echo = rt_resolve(a, "b", b, "/user/echo");
    rt_ask_echo(echo, "up", 10000);
    assert_int_equal(ac__node_tell_system(a, ac_node_address(b), 0, "/system/hold", "t", NULL, 0),
                     AC_OK);
    for (int i = 0; i < 1000 && !atomic_load(&held); i++)
        ts_sleep_ms(5);
    assert_true(atomic_load(&held));
    static uint8_t blob[16384];
    uint64_t dead0 = ac_dead_letter_count(sa);
    int refused = 0, sent = 0;
    for (int i = 0; i < 20000 && refused == 0; i++) {
        bool no = ac_tell(echo, ac_msg_bytes_new(blob, sizeof blob), NULL) != AC_OK;
        refused += no;
        sent += !no;
    }
    for (int i = 0; i < 1000; i++)
        refused += ac_tell(echo, ac_msg_bytes_new(blob, sizeof blob), NULL) != AC_OK;
    ac_node_stats s;
    ac_node_stats_get(a, &s);
    print_message("%d sent, %d refused, %llu dropped for backpressure\n", sent, refused,
                  (unsigned long long)s.dropped_backpressure);
    assert_true(refused > 0);
    assert_true(s.dropped_backpressure >= (uint64_t)refused);
    assert_true(ac_dead_letter_count(sa) >= dead0 + (uint64_t)refused);
    /* Let go: what was taken drains, and the peer is still up. */
    atomic_store(&release_it, 1);
    ac_answer ans = {0};
    ac_status st = AC_EFAILED;
    for (int i = 0; i < 1000 && st != AC_OK; i++) {
        st = ac_ask_wait(echo, ac_msg_str_new("after"), 10000, &ans);
        if (st != AC_OK)
            assert_non_null(strstr(ac_error_message(ans.error), "falls behind"));
        ac_answer_release(&ans);
        if (st != AC_OK)
            ts_sleep_ms(10);
    }
    assert_int_equal(st, AC_OK);
    ac_node_stats_get(a, &s);
    assert_int_equal(s.nodes_down, 0);
    ac_ref_release(echo);
    ac_system_terminate(sa);
    ac_system_terminate(sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_are_bound_once),
        cmocka_unit_test(test_an_unbound_name_is_refused),
        cmocka_unit_test(test_a_stopped_node_is_lost_at_once),
        cmocka_unit_test(test_backpressure_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
