/*
 * The timing wheel (src/core/timer_wheel.c), white-box, in ticks: where a
 * timer is placed on each side of every level boundary and in the
 * overflow list; that each fires exactly at its deadline however time
 * moves (tick by tick, or one long jump past the wheel's whole span);
 * remove of an ARMED timer versus a DUE one; next_event; next_deadline
 * (exact, at every level and in the overflow list, as timers are added,
 * removed, cascade and fire); take_all.
 * (tests/ask/test_wheel.c drives the same wheel through the public
 * timers, on the manual clock.)
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "core/timer_wheel.h"

#define SPAN(l) (1ull << (AC__WHEEL_BITS * (l)))
#define WHEEL_SPAN SPAN(AC__WHEEL_LEVELS)

static void no_op(ac__timer *t) { (void)t; }
static const ac__timer_ops ops = {.fire = no_op, .discard = no_op};

static bool in_list(const ac__timer *head, const ac__timer *t)
{
    for (const ac__timer *p = head->next; p != head; p = p->next)
        if (p == t)
            return true;
    return false;
}

/* The level the timer sits at, AC__WHEEL_LEVELS for the overflow list,
 * or -1 when it is in no list of the wheel. */
static int level_of(const ac__wheel *w, const ac__timer *t)
{
    for (int l = 0; l < AC__WHEEL_LEVELS; l++)
        for (unsigned s = 0; s < AC__WHEEL_SLOTS; s++)
            if (in_list(&w->slots[l][s], t))
                return l;
    return in_list(&w->overflow, t) ? AC__WHEEL_LEVELS : -1;
}

static size_t list_len(const ac__timer *head)
{
    size_t n = 0;
    for (const ac__timer *p = head->next; p != head; p = p->next)
        n++;
    return n;
}

static void test_placement_at_level_boundaries(void **state)
{
    (void)state;
    static ac__wheel w;
    ac__wheel_init(&w, 0);
    static ac__timer t[2 * AC__WHEEL_LEVELS + 1];
    int n = 0;
    /* From now = 0: a deadline below SPAN(l + 1) agrees with now above
     * level l's bits, so it sits at level l; SPAN(l + 1) itself does not. */
    for (int l = 0; l < AC__WHEEL_LEVELS; l++) {
        t[n].ops = &ops;
        ac__wheel_add(&w, &t[n], SPAN(l + 1) - 1);
        assert_int_equal(level_of(&w, &t[n]), l);
        n++;
        t[n].ops = &ops;
        ac__wheel_add(&w, &t[n], SPAN(l + 1));
        assert_int_equal(level_of(&w, &t[n]), l + 1 < AC__WHEEL_LEVELS ? l + 1 : AC__WHEEL_LEVELS);
        n++;
    }
    t[n].ops = &ops;
    ac__wheel_add(&w, &t[n], 0); /* in the past: clamped to now + 1 */
    assert_true(t[n].deadline == 1);
    assert_int_equal(level_of(&w, &t[n]), 0);
    n++;
    assert_int_equal(w.armed, (size_t)n);
    assert_int_equal(list_len(&w.overflow), 1);

    /* Step to each deadline by next_event: each fires exactly then. */
    ac__timer due;
    ac__timer_list_init(&due);
    size_t fired = 0;
    while (w.armed > 0) {
        uint64_t next = ac__wheel_next_event(&w);
        assert_true(next > w.now && next != UINT64_MAX);
        ac__wheel_advance(&w, next, &due);
        ac__timer *d;
        while ((d = ac__timer_list_pop(&due))) {
            assert_true(d->deadline == w.now);
            assert_int_equal(d->state, AC__TIMER_DUE);
            fired++;
        }
    }
    assert_int_equal(fired, (size_t)n);
    assert_true(ac__wheel_next_event(&w) == UINT64_MAX);
}

/* next_event is never later than the earliest deadline, and tells the
 * caller exactly when a level-0 slot fires. */
static void test_next_event(void **state)
{
    (void)state;
    static ac__wheel w;
    ac__wheel_init(&w, 1000);
    assert_true(ac__wheel_next_event(&w) == UINT64_MAX);
    ac__timer a = {.ops = &ops}, b = {.ops = &ops};
    ac__wheel_add(&w, &a, 1005);
    assert_true(ac__wheel_next_event(&w) == 1005);
    ac__wheel_add(&w, &b, 1000 + SPAN(3)); /* a higher level: cascades first */
    assert_true(ac__wheel_next_event(&w) == 1005);
    assert_true(ac__wheel_remove(&w, &a));
    uint64_t e = ac__wheel_next_event(&w);
    assert_true(e > 1000 && e <= b.deadline);
    ac__timer due;
    ac__timer_list_init(&due);
    ac__wheel_advance(&w, b.deadline - 1, &due);
    assert_null(ac__timer_list_pop(&due)); /* one tick early: nothing */
    assert_int_equal(level_of(&w, &b), 0);   /* cascaded down on the way */
    assert_true(ac__wheel_next_event(&w) == b.deadline);
    ac__wheel_advance(&w, b.deadline, &due);
    assert_ptr_equal(ac__timer_list_pop(&due), &b);
}

/* next_deadline is the earliest armed deadline, exactly, where next_event
 * may be a cascade before it (or, for a slot fuller than the scan allows,
 * that slot's start): checked against a scan of every timer while
 * timers at every level (and beyond the wheel) are added, removed and
 * fired, time moving in irregular steps. */
enum { ND_TIMERS = 64 };

static uint64_t earliest_armed(const ac__timer *t, int n)
{
    uint64_t e = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (ac__timer_armed(&t[i]) && t[i].deadline < e)
            e = t[i].deadline;
    return e;
}

static void test_next_deadline(void **state)
{
    (void)state;
    static ac__wheel w;
    static ac__timer t[ND_TIMERS];
    ac__wheel_init(&w, 777);
    assert_true(ac__wheel_next_deadline(&w, ND_TIMERS) == UINT64_MAX);

    /* One timer per level: the deadline, not the cascade before it. */
    for (int l = 0; l <= AC__WHEEL_LEVELS; l++) {
        ac__timer x = {.ops = &ops};
        uint64_t d = 777 + SPAN(l) + 3;
        ac__wheel_add(&w, &x, d);
        assert_int_equal(level_of(&w, &x), l);
        assert_true(ac__wheel_next_deadline(&w, 64) == d);
        assert_true(ac__wheel_next_event(&w) <= d);
        assert_true(ac__wheel_remove(&w, &x));
    }
    assert_true(ac__wheel_next_deadline(&w, ND_TIMERS) == UINT64_MAX);

    /* A slot fuller than the scan allows: its start, below its deadlines. */
    ac__timer full[3] = {{.ops = &ops}, {.ops = &ops}, {.ops = &ops}};
    for (int i = 0; i < 3; i++)
        ac__wheel_add(&w, &full[i], 777 + SPAN(2) + 40 - (uint64_t)i);
    assert_true(ac__wheel_next_deadline(&w, 3) == 777 + SPAN(2) + 38);
    uint64_t bound = ac__wheel_next_deadline(&w, 2);
    assert_true(bound == ac__wheel_next_event(&w));
    assert_true(bound <= 777 + SPAN(2) + 38);
    for (int i = 0; i < 3; i++)
        assert_true(ac__wheel_remove(&w, &full[i]));

    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < ND_TIMERS; i++) {
        t[i].ops = &ops;
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int l = (int)(rng % (AC__WHEEL_LEVELS + 1));
        ac__wheel_add(&w, &t[i], w.now + 1 + (rng >> 8) % (SPAN(l) * 2));
    }
    ac__timer due;
    ac__timer_list_init(&due);
    for (int step = 0; step < 4000 && w.armed > 0; step++) {
        assert_true(ac__wheel_next_deadline(&w, ND_TIMERS) == earliest_armed(t, ND_TIMERS));
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (rng % 7 == 0) { /* remove one, if armed */
            ac__timer *x = &t[(rng >> 8) % ND_TIMERS];
            bool was_armed = ac__timer_armed(x);
            assert_true(ac__wheel_remove(&w, x) == was_armed);
            continue;
        }
        /* Move to the next deadline, or part of the way there. */
        uint64_t next = ac__wheel_next_deadline(&w, ND_TIMERS);
        uint64_t to = rng % 3 == 0 ? next : w.now + (next - w.now) / 2 + 1;
        ac__wheel_advance(&w, to, &due);
        ac__timer *f;
        while ((f = ac__timer_list_pop(&due))) {
            assert_true(f->deadline <= to);
            f->state = AC__TIMER_IDLE;
        }
    }
    /* What is left fires by the latest deadline. */
    uint64_t last = 0;
    for (int i = 0; i < ND_TIMERS; i++)
        if (ac__timer_armed(&t[i]) && t[i].deadline > last)
            last = t[i].deadline;
    ac__wheel_advance(&w, last, &due);
    while (ac__timer_list_pop(&due))
        ;
    assert_int_equal(w.armed, 0);
    assert_true(ac__wheel_next_deadline(&w, ND_TIMERS) == UINT64_MAX);
}

/* ARMED can be removed; DUE (handed to a due list) cannot, and its links
 * are left to whoever fires it; re-armed, it is ARMED again. */
static void test_remove_armed_versus_due(void **state)
{
    (void)state;
    static ac__wheel w;
    ac__wheel_init(&w, 0);
    ac__timer idle = {.ops = &ops}, a = {.ops = &ops}, b = {.ops = &ops};
    assert_false(ac__wheel_remove(&w, &idle)); /* never armed */
    ac__wheel_add(&w, &a, 10);
    ac__wheel_add(&w, &b, 10);
    assert_true(ac__wheel_remove(&w, &a));
    assert_int_equal(a.state, AC__TIMER_IDLE);
    assert_false(ac__wheel_remove(&w, &a)); /* twice: no */
    ac__timer due;
    ac__timer_list_init(&due);
    ac__wheel_advance(&w, 10, &due);
    assert_int_equal(w.armed, 0);
    assert_int_equal(b.state, AC__TIMER_DUE);
    assert_false(ac__wheel_remove(&w, &b));
    assert_ptr_equal(due.next, &b); /* still on the due list, untouched */
    assert_ptr_equal(ac__timer_list_pop(&due), &b);
    ac__wheel_add(&w, &b, 20); /* a repeat re-arms from its fire */
    assert_true(ac__timer_armed(&b));
    assert_true(ac__wheel_remove(&w, &b));
    assert_true(ac__wheel_next_event(&w) == UINT64_MAX);
}

/* take_all empties every level and the overflow list, marking IDLE. */
static void test_take_all(void **state)
{
    (void)state;
    static ac__wheel w;
    ac__wheel_init(&w, 5);
    static ac__timer t[AC__WHEEL_LEVELS + 1];
    for (int l = 0; l <= AC__WHEEL_LEVELS; l++) {
        t[l].ops = &ops;
        ac__wheel_add(&w, &t[l], 5 + SPAN(l) + (uint64_t)l);
    }
    assert_int_equal(level_of(&w, &t[AC__WHEEL_LEVELS]), AC__WHEEL_LEVELS);
    ac__timer out;
    ac__timer_list_init(&out);
    ac__wheel_take_all(&w, &out);
    assert_int_equal(w.armed, 0);
    assert_int_equal(list_len(&out), AC__WHEEL_LEVELS + 1);
    for (int l = 0; l <= AC__WHEEL_LEVELS; l++) {
        assert_int_equal(t[l].state, AC__TIMER_IDLE);
        assert_int_equal(level_of(&w, &t[l]), -1);
        assert_false(ac__wheel_remove(&w, &t[l]));
    }
    assert_true(ac__wheel_next_event(&w) == UINT64_MAX);
}

/* One advance far past the whole span of the wheel makes everything due
 * at once, in deadline order, and leaves later timers armed. */
static void test_long_jump(void **state)
{
    (void)state;
    static ac__wheel w;
    ac__wheel_init(&w, 7);
    enum { N = 64 };
    static ac__timer t[N], late;
    for (int i = 0; i < N; i++) {
        t[i].ops = &ops;
        /* spread over every level and the overflow, out of order */
        uint64_t d = 7 + ((uint64_t)(N - i) * 2654435761u) % (3 * WHEEL_SPAN);
        ac__wheel_add(&w, &t[i], d);
    }
    late.ops = &ops;
    ac__wheel_add(&w, &late, 7 + 10 * WHEEL_SPAN + 3);
    ac__timer due;
    ac__timer_list_init(&due);
    ac__wheel_advance(&w, 7 + 5 * WHEEL_SPAN, &due);
    assert_true(w.now == 7 + 5 * WHEEL_SPAN);
    uint64_t prev = 0;
    size_t n = 0;
    ac__timer *d;
    while ((d = ac__timer_list_pop(&due))) {
        assert_true(d->deadline >= prev);
        assert_int_equal(d->state, AC__TIMER_DUE);
        prev = d->deadline;
        n++;
    }
    assert_int_equal(n, N);
    assert_int_equal(w.armed, 1);
    assert_true(ac__timer_armed(&late));
    assert_true(ac__wheel_next_event(&w) <= late.deadline);
    ac__wheel_advance(&w, late.deadline - 1, &due);
    assert_null(ac__timer_list_pop(&due));
    ac__wheel_advance(&w, late.deadline, &due);
    assert_ptr_equal(ac__timer_list_pop(&due), &late);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_at_level_boundaries),
        cmocka_unit_test(test_next_event),
        cmocka_unit_test(test_next_deadline),
        cmocka_unit_test(test_remove_armed_versus_due),
        cmocka_unit_test(test_take_all),
        cmocka_unit_test(test_long_jump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
