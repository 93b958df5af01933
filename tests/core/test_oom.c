/*
 * Out of memory, under the injection hook of builds without NDEBUG: a call
 * whose allocation fails returns NULL or AC_ENOMEM with a message and
 * leaks nothing (the sanitizers' leak checks watch), and a sweep that
 * fails each allocation of a small scenario in turn ends every time in a
 * clean failure, or in the abort the out-of-memory rule allows. Skipped
 * (exit 77) where the hook is compiled out.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#ifdef NDEBUG

int main(void)
{
    fputs("test_oom: the allocation hook exists only without NDEBUG; skipped\n", stderr);
    return 77;
}

#else

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (ac_msg_is(msg, &ac_msg_type_int64))
        ac_reply(ctx, ac_msg_int64_new(ac_msg_int64(msg)));
}

static const ac_actor_def echo_def = {.name = "echo", .receive = echo_receive};

static void assert_enomem(void)
{
    assert_status(ac_last_status(), AC_ENOMEM);
    assert_true(ts_nonempty(ac_last_error()));
}

/* A system with one worker and nothing running: the next allocation the
 * test arms is the test thread's own. */
static ac_system *quiet_system(ts_fixture *fx, const char *name)
{
    ac_system_options o = {.workers = 1, .manual_clock = true, .log_level = AC_LOG_OFF,
                           .metrics = true};
    ac_system *sys = ts_fx_system(fx, name, &o);
    assert_non_null(sys);
    return sys;
}

/* Spawn an echo actor and wait for it to answer once, so it is idle. */
static ac_ref *idle_echo(ac_system *sys)
{
    ac_ref *r = ac_spawn(sys, ac_props_new(&echo_def, NULL), NULL);
    assert_non_null(r);
    ac_answer a;
    assert_status(ac_ask_wait(r, ac_msg_int64_new(1), 10000, &a), AC_OK);
    ac_answer_release(&a);
    return r;
}

static void test_constructors_fail_cleanly(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = quiet_system(fx, "oom-ctor");

    ac__alloc_fail_after(1);
    assert_null(ac_props_new(&echo_def, NULL));
    assert_enomem();

    ac__alloc_fail_after(1);
    assert_null(ac_msg_str_new("hello"));
    assert_enomem();

    ac__alloc_fail_after(1);
    assert_null(ac_error_new("E", "e"));
    assert_enomem();

    ac__alloc_fail_after(1);
    assert_null(ac_router_scatter_gather_first_completed(3, &echo_def, NULL, NULL));
    assert_enomem();

    ac__alloc_fail_after(1);
    assert_null(ac_router_hedged(3, &echo_def, NULL, NULL));
    assert_enomem();

    ac__alloc_fail_after(1);
    assert_null(ac_metrics_counter(sys, "oom_total", NULL));
    assert_enomem();

    ac_ref *member = idle_echo(sys);
    ac__alloc_fail_after(1);
    assert_null(ac_router_group_round_robin(&member, 1));
    assert_enomem();
    ac__alloc_fail_after(3); /* the scatter's shared state, after the group's copy */
    assert_null(ac_router_group_scatter_gather_first_completed(&member, 1, NULL));
    assert_enomem();
    ac__alloc_fail_after(1);
    assert_null(ac_router_add_routee_msg(member));
    assert_enomem();
    ac_ref_release(member);

    ac_props *p = ac_props_new(&echo_def, NULL);
    assert_non_null(p);
    ac__alloc_fail_after(1);
    assert_null(ac_spawn(sys, p, "s")); /* consumes p: the leak check watches */
    assert_enomem();
    ac__alloc_fail_after(0);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_ask_fails_cleanly(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = quiet_system(fx, "oom-ask");
    ac_ref *r = idle_echo(sys);
    ac_msg *m = ac_msg_int64_new(2);
    assert_non_null(m);
    ac__alloc_fail_after(1);
    assert_null(ac_ask(r, m, 100)); /* consumes m */
    assert_enomem();
    ac__alloc_fail_after(0);
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ac_stop and ac_system_terminate make their system message first: out of
 * memory, they report AC_ENOMEM and change nothing. */
static void test_stop_and_terminate_report_enomem(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = quiet_system(fx, "oom-stop");
    ac_ref *r = idle_echo(sys);
    ac__alloc_fail_after(1);
    assert_status(ac_stop(r), AC_ENOMEM);
    assert_enomem();
    ac_answer a; /* still running */
    assert_status(ac_ask_wait(r, ac_msg_int64_new(3), 10000, &a), AC_OK);
    assert_int_equal(ac_msg_int64(a.reply), 3);
    ac_answer_release(&a);
    ac_ref_release(r);

    ac__alloc_fail_after(1);
    assert_status(ac_system_terminate(sys), AC_ENOMEM);
    assert_enomem();
    r = ac_spawn(sys, ac_props_new(&echo_def, NULL), "after"); /* still usable */
    assert_non_null(r);
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

typedef struct reply_probe {
    atomic_llong done;
    atomic_int status;
} reply_probe;

/* With no sender, ac_reply goes to dead letters; a shared message needs an
 * envelope of its own, which the hook makes fail. */
static void probe_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    reply_probe *p = ac_ctx_user_data(ctx);
    ac_msg *m = ac_msg_str_new("reply");
    ac_msg_retain(m);
    ac__alloc_fail_after(1);
    atomic_store(&p->status, (int)ac_reply(ctx, m));
    ac__alloc_fail_after(0);
    ac_msg_release(m);
    atomic_fetch_add(&p->done, 1);
}

static const ac_actor_def probe_def = {.name = "probe", .receive = probe_receive};

static void test_reply_reports_enomem(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = quiet_system(fx, "oom-reply");
    reply_probe *p = ts_fx_data(fx, sizeof *p, NULL);
    atomic_store(&p->status, -1);
    ac_ref *r = ac_spawn(sys, ac_props_new(&probe_def, p), "probe");
    assert_non_null(r);
    assert_status(ac_tell(r, ac_msg_int64_new(1), NULL), AC_OK);
    assert_true(ts_wait_ge(&p->done, 1, 10.0));
    assert_status((ac_status)atomic_load(&p->status), AC_ENOMEM);
    assert_int_equal(ac_dead_letter_count(sys), 0);
    ac_ref_release(r);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- the sweep -------------------------------------------------------- */

/* The last call failed, and said why; otherwise the child exits 3. */
static void must_explain(const char *call)
{
    if (ac_last_status() == AC_OK || !ts_nonempty(ac_last_error())) {
        fprintf(stderr, "%s failed without an error\n", call);
        _exit(3);
    }
}

/* Ask `target` for an echo of 7: a success must be the echo, anything else
 * is a failure reported as such (a reply that could not be made times
 * out). */
static void ask_echo(ac_ref *target)
{
    ac_msg *m = ac_msg_int64_new(7);
    if (!m)
        must_explain("ac_msg_int64_new");
    ac_answer a;
    if (ac_ask_wait(target, m, 500, &a) == AC_OK && ac_msg_int64(a.reply) != 7)
        _exit(4);
    ac_answer_release(&a);
}

/* Spawn `props` (NULL when its factory failed) and ask it once. */
static void spawn_and_ask(ac_system *sys, ac_props *props, const char *factory, const char *name)
{
    if (!props)
        must_explain(factory);
    ac_ref *r = ac_spawn(sys, props, name);
    if (!r) {
        must_explain("ac_spawn");
        return;
    }
    ask_echo(r);
    ac_ref_release(r);
}

/* Tell `router` a change of its routees; it may fail cleanly. */
static void tell_change(ac_ref *router, ac_msg *change, const char *constructor)
{
    if (!change)
        must_explain(constructor);
    else if (ac_tell(router, change, NULL) != AC_OK)
        must_explain("ac_tell");
}

/* A scatter/gather group over an actor of its own: the routee removed and
 * added again, then asked through the group. */
static void group_step(ac_system *sys)
{
    ac_ref *member = ac_spawn(sys, ac_props_new(&echo_def, NULL), "member");
    if (!member) {
        must_explain("ac_spawn");
        return;
    }
    ac_props *props = ac_router_group_scatter_gather_first_completed(&member, 1, NULL);
    ac_ref *group = props ? ac_spawn(sys, props, "group") : NULL;
    if (!group)
        must_explain(props ? "ac_spawn" : "ac_router_group_scatter_gather_first_completed");
    if (group) {
        tell_change(group, ac_router_remove_routee_msg(member), "ac_router_remove_routee_msg");
        tell_change(group, ac_router_add_routee_msg(member), "ac_router_add_routee_msg");
        ask_echo(group);
        ac_ref_release(group);
    }
    ac_ref_release(member);
}

/* Create a system with metrics, spawn an actor, a pool router, a
 * scatter/gather router, a hedged one and a group, ask each, terminate;
 * each step may fail cleanly. */
static void scenario(void)
{
    ac_system_options o = {.workers = 1, .log_level = AC_LOG_OFF, .metrics = true};
    ac_system *sys = ac_system_create("sweep", &o);
    if (!sys) {
        must_explain("ac_system_create");
        return;
    }
    spawn_and_ask(sys, ac_props_new(&echo_def, NULL), "ac_props_new", "echo");
    spawn_and_ask(sys, ac_router_round_robin(2, &echo_def, NULL), "ac_router_round_robin",
                  "pool");
    spawn_and_ask(sys, ac_router_scatter_gather_first_completed(2, &echo_def, NULL, NULL),
                  "ac_router_scatter_gather_first_completed", "scatter");
    static const ac_hedge_budget budget = {.ratio = 0.5};
    ac_hedged_options hedged = {.delay_kind = AC_HEDGE_DELAY_ADAPTIVE, .budget = &budget};
    spawn_and_ask(sys, ac_router_hedged(2, &echo_def, &hedged, NULL), "ac_router_hedged",
                  "hedged");
    group_step(sys);
    if (!ac_metrics_counter(sys, "sweep_total", NULL))
        must_explain("ac_metrics_counter");
    ac_status st = ac_system_terminate(sys);
    if (st == AC_ENOMEM) { /* the system is untouched: terminate it again */
        must_explain("ac_system_terminate");
        st = ac_system_terminate(sys);
    }
    if (st != AC_OK)
        _exit(5);
}

/* Run the scenario in a child with the k-th allocation failing. True when
 * it ended cleanly or in the abort the rule allows; *aborted says which. */
static bool run_child(long k, bool *aborted)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        ac__alloc_fail_after(k);
        scenario();
        exit(0); /* exit, not _exit: the leak check runs at exit */
    }
    close(fds[1]);
    char err[4096];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], err + len, sizeof err - 1 - len)) > 0)
        len += (size_t)n;
    err[len] = '\0';
    close(fds[0]);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    *aborted = WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT &&
               strstr(err, "actorc: out of memory: ") != NULL;
    bool clean = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    if (!clean && !*aborted)
        fprintf(stderr, "sweep: allocation %ld: status %d, stderr:\n%s\n", k, ws, err);
    return clean || *aborted;
}

static void test_sweep_every_allocation(void **state)
{
    (void)state;
    ac__alloc_count_start();
    scenario();
    long total = ac__alloc_count_stop();
    assert_true(total > 0);
    long step = total > 400 ? total / 400 + 1 : 1; /* bounded */
    long aborted = 0;
    for (long k = 1; k <= total + 2; k += step) {
        bool a = false;
        if (!run_child(k, &a))
            fail_msg("failing allocation %ld of %ld did not end cleanly", k, total);
        aborted += a;
    }
    fprintf(stderr, "sweep: %ld allocations, %ld of the failures aborted as the rule allows\n",
            total, aborted);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_every_allocation),
        cmocka_unit_test_setup_teardown(test_constructors_fail_cleanly, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_ask_fails_cleanly, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_reply_reports_enomem, ts_setup, ts_teardown),
        cmocka_unit_test_setup_teardown(test_stop_and_terminate_report_enomem, ts_setup,
                                        ts_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
