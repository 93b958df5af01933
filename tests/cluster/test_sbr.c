/*
 * The split-brain resolver's decision (src/cluster/sbr.c), alone: every
 * strategy over partitions seen from both sides, ties, unknown ages,
 * a whole cluster reachable, a lone node, and strategies out of range.
 * Each partition is checked from each side: the rules promise opposite
 * answers (one side keeps) except where they say every side goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/sbr.h"

#define MAX 8

/* A cluster of n members, addresses a[i], ages age[i]; side[i] says
 * which side of the partition member i is on (0 or 1). The view of
 * member `me`: the members of its side reachable, the others not. */
static ac__sbr_decision view_of(ac_cluster_downing s, size_t quorum, size_t n,
                                const char *const *a, const uint64_t *age, const int *side, size_t me)
{
    ac__sbr_member m[MAX];
    for (size_t i = 0; i < n; i++)
        m[i] = (ac__sbr_member){.address = a[i],
                                .up_since = age ? age[i] : 0,
                                .reachable = side[i] == side[me],
                                .self = i == me};
    return ac__sbr_decide(s, quorum, m, n);
}

/* The decision of side 0 and of side 1 (from the first member of each). */
static void both(ac_cluster_downing s, size_t quorum, size_t n, const char *const *a,
                 const uint64_t *age, const int *side, ac__sbr_decision *d0, ac__sbr_decision *d1)
{
    size_t m0 = n, m1 = n;
    for (size_t i = 0; i < n; i++) {
        if (side[i] == 0 && m0 == n)
            m0 = i;
        if (side[i] == 1 && m1 == n)
            m1 = i;
    }
    assert_true(m0 < n && m1 < n);
    *d0 = view_of(s, quorum, n, a, age, side, m0);
    *d1 = view_of(s, quorum, n, a, age, side, m1);
    /* Every member of a side decides as the first of it does. */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(view_of(s, quorum, n, a, age, side, i), side[i] ? *d1 : *d0);
}

static const char *const five[] = {"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000",
                                   "10.0.0.4:7000", "10.0.0.5:7000"};

static void test_keep_majority(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const int two_one[] = {1, 0, 0}; /* the lowest address is in the minority */
    both(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, 3, five, NULL, two_one, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
    const int three_two[] = {0, 1, 0, 1, 0};
    both(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, 5, five, NULL, three_two, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
}

/* Half and half: the side of the lowest address keeps, whichever it is. */
static void test_keep_majority_tie(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const int low_on_0[] = {0, 1, 1, 0};
    both(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, 4, five, NULL, low_on_0, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
    const int low_on_1[] = {1, 0, 0, 1};
    both(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, 4, five, NULL, low_on_1, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_KEEP);
    /* Two nodes: the lower address keeps (compared as text, as every
     * node does: "10.0.0.10" sorts before "10.0.0.9"). */
    const char *const pair[] = {"10.0.0.9:7000", "10.0.0.10:7000"};
    const int apart[] = {0, 1};
    both(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, 2, pair, NULL, apart, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_KEEP);
}

static void test_static_quorum(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const int three_two[] = {0, 0, 0, 1, 1};
    both(AC_CLUSTER_DOWNING_STATIC_QUORUM, 3, 5, five, NULL, three_two, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
    /* Both below the quorum: every side goes. */
    both(AC_CLUSTER_DOWNING_STATIC_QUORUM, 4, 5, five, NULL, three_two, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
    /* Both at the quorum (too small a quorum for the cluster): every
     * side goes rather than two clusters serving. */
    both(AC_CLUSTER_DOWNING_STATIC_QUORUM, 2, 5, five, NULL, three_two, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
}

static void test_keep_oldest(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const uint64_t age[] = {500, 100, 300, 400, 200}; /* member 1 is the oldest */
    const int with_oldest_few[] = {0, 1, 0, 0, 1};
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 5, five, age, with_oldest_few, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF); /* the majority, without the oldest */
    assert_int_equal(d1, AC__SBR_KEEP);
    /* The oldest alone against two or more: it goes, the others keep. */
    const int oldest_alone[] = {0, 1, 0, 0, 0};
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 5, five, age, oldest_alone, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
    /* Two nodes, one each: the oldest keeps (the other is alone too). */
    const int pair[] = {0, 1};
    const uint64_t young_first[] = {900, 100};
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 2, five, young_first, pair, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_KEEP);
}

/* Same ages or unknown ones: the lowest address is the oldest; a known
 * age is older than an unknown one. */
static void test_keep_oldest_ties(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const int low_side[] = {1, 1, 0};
    const uint64_t same[] = {7, 7, 7};
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 3, five, same, low_side, &d0, &d1);
    assert_int_equal(d1, AC__SBR_KEEP); /* five[0], on side 1 */
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 3, five, NULL, low_side, &d0, &d1);
    assert_int_equal(d1, AC__SBR_KEEP);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    const int side[] = {1, 0, 0};
    const uint64_t known_last[] = {0, 0, 9}; /* member 2, on side 0 */
    both(AC_CLUSTER_DOWNING_KEEP_OLDEST, 0, 3, five, known_last, side, &d0, &d1);
    assert_int_equal(d0, AC__SBR_KEEP);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
}

static void test_down_all(void **state)
{
    (void)state;
    ac__sbr_decision d0, d1;
    const int three_two[] = {0, 0, 0, 1, 1};
    both(AC_CLUSTER_DOWNING_DOWN_ALL, 0, 5, five, NULL, three_two, &d0, &d1);
    assert_int_equal(d0, AC__SBR_DOWN_SELF);
    assert_int_equal(d1, AC__SBR_DOWN_SELF);
}

/* Nothing unreachable: nothing to resolve, whatever the strategy (a
 * quorum larger than the cluster included); a lone node keeps; off and
 * out-of-range strategies never down. */
static void test_edges(void **state)
{
    (void)state;
    const int all[] = {0, 0, 0, 0, 0};
    const ac_cluster_downing every[] = {
        AC_CLUSTER_DOWNING_KEEP_MAJORITY, AC_CLUSTER_DOWNING_STATIC_QUORUM,
        AC_CLUSTER_DOWNING_KEEP_OLDEST, AC_CLUSTER_DOWNING_DOWN_ALL, AC_CLUSTER_DOWNING_OFF};
    for (size_t s = 0; s < sizeof every / sizeof every[0]; s++) {
        assert_int_equal(view_of(every[s], 9, 5, five, NULL, all, 2), AC__SBR_KEEP);
        assert_int_equal(view_of(every[s], 9, 1, five, NULL, all, 0), AC__SBR_KEEP);
    }
    assert_int_equal(ac__sbr_decide(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, NULL, 0), AC__SBR_KEEP);
    const int split[] = {0, 1, 1, 1, 1};
    assert_int_equal(view_of(AC_CLUSTER_DOWNING_OFF, 0, 5, five, NULL, split, 0), AC__SBR_KEEP);
    assert_int_equal(view_of((ac_cluster_downing)99, 0, 5, five, NULL, split, 0), AC__SBR_KEEP);
    /* This node counts on its own side even if the caller says otherwise. */
    ac__sbr_member m[] = {{.address = five[0], .reachable = false, .self = true},
                          {.address = five[1], .reachable = false}};
    assert_int_equal(ac__sbr_decide(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, m, 2), AC__SBR_KEEP);
    m[0].address = five[2];
    assert_int_equal(ac__sbr_decide(AC_CLUSTER_DOWNING_KEEP_MAJORITY, 0, m, 2),
                     AC__SBR_DOWN_SELF);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ac__sbr_strategy_name(AC_CLUSTER_DOWNING_KEEP_MAJORITY), "keep-majority");
    assert_string_equal(ac__sbr_strategy_name(AC_CLUSTER_DOWNING_STATIC_QUORUM), "static-quorum");
    assert_string_equal(ac__sbr_strategy_name(AC_CLUSTER_DOWNING_KEEP_OLDEST), "keep-oldest");
    assert_string_equal(ac__sbr_strategy_name(AC_CLUSTER_DOWNING_DOWN_ALL), "down-all");
    assert_string_equal(ac__sbr_strategy_name(AC_CLUSTER_DOWNING_OFF), "off");
    assert_string_equal(ac__sbr_strategy_name((ac_cluster_downing)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_majority),   cmocka_unit_test(test_keep_majority_tie),
        cmocka_unit_test(test_static_quorum),   cmocka_unit_test(test_keep_oldest),
        cmocka_unit_test(test_keep_oldest_ties), cmocka_unit_test(test_down_all),
        cmocka_unit_test(test_edges),           cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
