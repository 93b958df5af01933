/*
 * The mailbox (src/core/mailbox.c), white-box: FIFO from one producer,
 * emptiness as pop and maybe_nonempty report it, the stub going round
 * when the last node is handed out (and the queue reused after), and
 * several producer threads pushing at once, each keeping its own order.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include "core/internal.h"

typedef struct item {
    ac__mailbox_node node; /* first: a node's link is its first member */
    int producer;
    long seq;
} item;

static item *item_of(ac__mailbox_node *n) { return (item *)(void *)n; }

static void test_fifo_and_empty(void **state)
{
    (void)state;
    ac__mailbox mb;
    ac__mailbox_init(&mb);
    assert_null(ac__mailbox_pop(&mb));
    assert_false(ac__mailbox_maybe_nonempty(&mb));

    item items[5];
    for (int round = 0; round < 3; round++) { /* the stub goes round each time */
        for (int i = 0; i < 5; i++) {
            items[i].seq = i;
            ac__mailbox_push(&mb, &items[i].node);
            assert_true(ac__mailbox_maybe_nonempty(&mb));
        }
        for (int i = 0; i < 5; i++) {
            ac__mailbox_node *n = ac__mailbox_pop(&mb);
            assert_non_null(n);
            assert_ptr_equal(n, &items[i].node);
            assert_int_equal(i < 4, ac__mailbox_maybe_nonempty(&mb));
        }
        assert_null(ac__mailbox_pop(&mb));
        assert_false(ac__mailbox_maybe_nonempty(&mb));
    }
}

/* One node at a time: the last node is handed out by pushing the stub
 * behind it, and the stub is never handed out. */
static void test_single_node_and_stub(void **state)
{
    (void)state;
    ac__mailbox mb;
    ac__mailbox_init(&mb);
    item a, b;
    for (int i = 0; i < 100; i++) {
        ac__mailbox_push(&mb, &a.node);
        assert_ptr_equal(ac__mailbox_pop(&mb), &a.node);
        assert_null(ac__mailbox_pop(&mb));
        assert_false(ac__mailbox_maybe_nonempty(&mb));
    }
    /* interleaved: push while a node is queued behind the stub */
    ac__mailbox_push(&mb, &a.node);
    assert_ptr_equal(ac__mailbox_pop(&mb), &a.node);
    ac__mailbox_push(&mb, &b.node);
    ac__mailbox_push(&mb, &a.node);
    assert_ptr_equal(ac__mailbox_pop(&mb), &b.node);
    assert_ptr_equal(ac__mailbox_pop(&mb), &a.node);
    assert_null(ac__mailbox_pop(&mb));
}

/* ---- several producers -------------------------------------------------- */

#define PRODUCERS 4
#if defined(__SANITIZE_THREAD__)
#define PER_PRODUCER 5000
#else
#define PER_PRODUCER 20000
#endif

typedef struct producer_arg {
    ac__mailbox *mb;
    item *items;
    int id;
    atomic_int *go;
} producer_arg;

static void *produce(void *p)
{
    producer_arg *a = p;
    while (!atomic_load(a->go)) {
    }
    for (long i = 0; i < PER_PRODUCER; i++) {
        a->items[i].producer = a->id;
        a->items[i].seq = i;
        ac__mailbox_push(a->mb, &a->items[i].node);
    }
    return NULL;
}

static void test_many_producers_keep_their_order(void **state)
{
    (void)state;
    ac__mailbox mb;
    ac__mailbox_init(&mb);
    item *items = calloc((size_t)PRODUCERS * PER_PRODUCER, sizeof *items);
    assert_non_null(items);
    atomic_int go = 0;
    pthread_t th[PRODUCERS];
    producer_arg args[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        args[p] = (producer_arg){&mb, items + (size_t)p * PER_PRODUCER, p, &go};
        assert_int_equal(pthread_create(&th[p], NULL, produce, &args[p]), 0);
    }
    atomic_store(&go, 1);
    long next[PRODUCERS] = {0};
    long got = 0;
    double end = ts_now() + TS_WAIT_S * 3;
    while (got < (long)PRODUCERS * PER_PRODUCER) {
        ac__mailbox_node *n = ac__mailbox_pop(&mb);
        if (!n) {
            /* empty, or a push half done: maybe_nonempty sees the latter */
            if (ts_now() > end) {
                fail_msg("only %ld of %ld nodes came out", got, (long)PRODUCERS * PER_PRODUCER);
            }
            continue;
        }
        item *it = item_of(n);
        assert_true(it->producer >= 0 && it->producer < PRODUCERS);
        if (it->seq != next[it->producer]) {
            fail_msg("producer %d: got %ld, expected %ld", it->producer, it->seq,
                     next[it->producer]);
        }
        next[it->producer]++;
        got++;
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(th[p], NULL);
        assert_int_equal(next[p], PER_PRODUCER);
    }
    assert_null(ac__mailbox_pop(&mb));
    assert_false(ac__mailbox_maybe_nonempty(&mb));
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_empty),
        cmocka_unit_test(test_single_node_and_stub),
        cmocka_unit_test(test_many_producers_keep_their_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
