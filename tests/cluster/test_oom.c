/*
 * Out of memory while joining, under the allocation hook of builds
 * without NDEBUG: ac_cluster_join with each of its allocations failing
 * in turn ends in AC_ENOMEM with a message, or succeeds; either way the
 * system terminates cleanly and nothing leaks (the sanitizers' leak check
 * watches). A join that failed after its actor started leaves the
 * cluster left, not half made: the system's cluster refuses every call
 * but its status. Skipped (exit 77) where the hook is compiled out.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#ifdef NDEBUG

int main(void)
{
    fputs("cluster.oom: the allocation hook exists only without NDEBUG; skipped\n", stderr);
    return 77;
}

#else

#include <actorc.h>
#include <actorc/cluster.h>

#include "core/alloc.h"

#define SWEEP_MAX 400

static void test_join(void **state)
{
    (void)state;
    const char *roles[] = {"a", "b"};
    const char *seeds[] = {"127.0.0.1:1", "127.0.0.1:2"};
    ac_cluster_static_options seed_opts = {.seeds = seeds, .seeds_count = 2};
    ac_cluster_options o = {.name = "oom", .roles = roles, .roles_count = 2,
                            .static_options = &seed_opts};
    for (long n = 1; n < SWEEP_MAX; n++) {
        ac_system_options so = {.workers = 1, .log_level = AC_LOG_OFF};
        ac_system *sys = ac_system_create("oom", &so);
        assert_non_null(sys);
        ac_node_options no = {.bind = "tcp://127.0.0.1:0"};
        assert_non_null(ac_node_start(sys, &no));
        ac__alloc_fail_after(n);
        ac_cluster *c = ac_cluster_join(sys, &o);
        ac__alloc_fail_after(0);
        if (c) {
            print_message("join: %ld allocations, each failed once\n", n - 1);
            ac_cluster_status st;
            assert_int_equal(ac_cluster_status_get(c, &st), AC_OK);
            assert_int_equal(ac_cluster_leave(c), AC_OK);
            ac_system_terminate(sys);
            return;
        }
        assert_int_equal(ac_last_status(), AC_ENOMEM);
        assert_true(strlen(ac_last_error()) > 0);
        ac_cluster *left = ac_system_cluster(sys);
        if (left) {
            ac_cluster_status st;
            assert_int_equal(ac_cluster_status_get(left, &st), AC_OK);
            assert_int_equal(st.state, AC_CLUSTER_LEFT);
            assert_int_equal(ac_cluster_leave(left), AC_ESTOPPED);
        }
        ac_system_terminate(sys);
    }
    fail_msg("join still failing after %d allocations", SWEEP_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
