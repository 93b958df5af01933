/*
 * ac_error: construction, accessors, kinds, aggregates, causes, reference
 * counting, the printed form, errors as messages, bad input and the cap on
 * nesting (AC_ERROR_MAX_DEPTH).
 *
 * Leaks and use-after-free are left to the sanitizer builds: every test
 * releases exactly what it owns, and reads shared parts after the other
 * owners let go.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

/* The text ac_error_fprint writes, read back through a temporary file. */
static char *fprint_to_string(const ac_error *err, int *written)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    *written = ac_error_fprint(err, f);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)len, f);
    assert_int_equal(got, (size_t)len);
    fclose(f);
    return buf;
}

static void assert_text(const ac_error *err, const char *expected)
{
    char *s = ac_error_to_string(err);
    assert_non_null(s);
    assert_string_equal(s, expected);
    free(s);
    int written = 0;
    char *p = fprint_to_string(err, &written);
    assert_string_equal(p, expected);
    assert_int_equal(written, (int)strlen(expected));
    free(p);
}

static void test_new_name_and_message(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("DbError", "connection %d refused by %s", 7, "db-1");
    assert_non_null(e);
    assert_string_equal(ac_error_name(e), "DbError");
    assert_string_equal(ac_error_message(e), "connection 7 refused by db-1");
    assert_null(ac_error_cause(e));
    assert_int_equal(ac_error_member_count(e), 0);
    assert_null(ac_error_member(e, 0));
    assert_true(ac_error_is(e, "DbError"));
    assert_false(ac_error_is(e, "dberror"));
    assert_false(ac_error_is(e, "Db"));
    assert_false(ac_error_is(e, AC_ASK_TIMEOUT_ERROR));
    assert_false(ac_error_all_timeouts(e));
    ac_error_release(e);

    /* An empty message is fine; the name is what must be there. */
    ac_error *quiet = ac_error_new("Quiet", "%s", "");
    assert_non_null(quiet);
    assert_string_equal(ac_error_message(quiet), "");
    assert_text(quiet, "Quiet: \n");
    ac_error_release(quiet);
}

static void test_null_accessors(void **state)
{
    (void)state;
    assert_string_equal(ac_error_name(NULL), "");
    assert_string_equal(ac_error_message(NULL), "");
    assert_null(ac_error_cause(NULL));
    assert_int_equal(ac_error_member_count(NULL), 0);
    assert_null(ac_error_member(NULL, 0));
    assert_false(ac_error_is(NULL, "X"));
    assert_false(ac_error_all_timeouts(NULL));
    assert_null(ac_error_retain(NULL));
    ac_error_release(NULL);

    ac_error *e = ac_error_new("X", "x");
    assert_non_null(e);
    assert_false(ac_error_is(e, NULL));
    ac_error_release(e);
}

static void test_caused(void **state)
{
    (void)state;
    ac_error *io = ac_error_new("IoError", "reset by peer");
    assert_non_null(io);
    ac_error *db = ac_error_new_caused("DbError", io, "query %s failed", "q1");
    assert_non_null(db);
    /* The cause was borrowed: the caller still owns its reference. */
    ac_error_release(io);
    assert_ptr_equal(ac_error_cause(db), io);
    assert_string_equal(ac_error_name(ac_error_cause(db)), "IoError");
    assert_string_equal(ac_error_message(ac_error_cause(db)), "reset by peer");
    assert_string_equal(ac_error_name(db), "DbError");
    assert_string_equal(ac_error_message(db), "query q1 failed");
    assert_int_equal(ac_error_member_count(db), 0);
    assert_text(db, "DbError: query q1 failed\n"
                    "  caused by IoError: reset by peer\n");
    ac_error_release(db);

    /* A NULL cause is simply no cause. */
    ac_error *plain = ac_error_new_caused("Plain", NULL, "no cause");
    assert_non_null(plain);
    assert_null(ac_error_cause(plain));
    assert_text(plain, "Plain: no cause\n");
    ac_error_release(plain);
}

static void test_aggregate_members_in_order(void **state)
{
    (void)state;
    ac_error *m[3];
    m[0] = ac_error_new(AC_ASK_TIMEOUT_ERROR, "replica-0 slow");
    m[1] = ac_error_new("DbError", "replica-1 refused");
    m[2] = ac_error_new("Boom", "replica-2 crashed");
    for (int i = 0; i < 3; i++) {
        assert_non_null(m[i]);
    }
    ac_error *agg = ac_error_aggregate(m, 3, "%d of %d replicas failed", 3, 5);
    assert_non_null(agg);
    /* Members were borrowed: drop ours; the aggregate keeps them alive. */
    for (int i = 0; i < 3; i++) {
        ac_error_release(m[i]);
    }
    assert_string_equal(ac_error_name(agg), AC_AGGREGATE_ERROR);
    assert_string_equal(ac_error_name(agg), "AggregateError");
    assert_true(ac_error_is(agg, AC_AGGREGATE_ERROR));
    assert_string_equal(ac_error_message(agg), "3 of 5 replicas failed");
    assert_null(ac_error_cause(agg));
    assert_int_equal(ac_error_member_count(agg), 3);
    assert_ptr_equal(ac_error_member(agg, 0), m[0]);
    assert_ptr_equal(ac_error_member(agg, 1), m[1]);
    assert_ptr_equal(ac_error_member(agg, 2), m[2]);
    assert_null(ac_error_member(agg, 3));
    assert_null(ac_error_member(agg, (size_t)-1));
    assert_string_equal(ac_error_name(ac_error_member(agg, 0)), AC_ASK_TIMEOUT_ERROR);
    assert_string_equal(ac_error_message(ac_error_member(agg, 1)), "replica-1 refused");
    assert_string_equal(ac_error_name(ac_error_member(agg, 2)), "Boom");
    assert_false(ac_error_all_timeouts(agg));
    assert_text(agg, "AggregateError: 3 of 5 replicas failed\n"
                     "  [0] AskTimeoutError: replica-0 slow\n"
                     "  [1] DbError: replica-1 refused\n"
                     "  [2] Boom: replica-2 crashed\n");
    ac_error_release(agg);
}

static void test_all_timeouts(void **state)
{
    (void)state;
    ac_error *t1 = ac_error_new(AC_ASK_TIMEOUT_ERROR, "a");
    ac_error *t2 = ac_error_new(AC_ASK_TIMEOUT_ERROR, "b");
    ac_error *other = ac_error_new("DbError", "c");
    assert_non_null(t1);
    assert_non_null(t2);
    assert_non_null(other);

    /* A lone timeout is not an aggregate of timeouts. */
    assert_false(ac_error_all_timeouts(t1));

    ac_error *none = ac_error_aggregate(NULL, 0, "nothing");
    assert_non_null(none);
    assert_int_equal(ac_error_member_count(none), 0);
    assert_false(ac_error_all_timeouts(none));
    assert_text(none, "AggregateError: nothing\n");

    ac_error *one[] = {t1};
    ac_error *agg1 = ac_error_aggregate(one, 1, "one");
    assert_non_null(agg1);
    assert_true(ac_error_all_timeouts(agg1));

    ac_error *two[] = {t1, t2};
    ac_error *agg2 = ac_error_aggregate(two, 2, "two");
    assert_non_null(agg2);
    assert_true(ac_error_all_timeouts(agg2));

    ac_error *mixed_first[] = {other, t1, t2};
    ac_error *agg3 = ac_error_aggregate(mixed_first, 3, "mixed");
    assert_non_null(agg3);
    assert_false(ac_error_all_timeouts(agg3));

    ac_error *mixed_last[] = {t1, t2, other};
    ac_error *agg4 = ac_error_aggregate(mixed_last, 3, "mixed");
    assert_non_null(agg4);
    assert_false(ac_error_all_timeouts(agg4));

    /* A timeout caused by something else is still a timeout. */
    ac_error *caused_timeout = ac_error_new_caused(AC_ASK_TIMEOUT_ERROR, other, "slow");
    assert_non_null(caused_timeout);
    ac_error *ct[] = {caused_timeout, t2};
    ac_error *agg5 = ac_error_aggregate(ct, 2, "caused");
    assert_non_null(agg5);
    assert_true(ac_error_all_timeouts(agg5));

    ac_error *all[] = {t1, t2, other, none, agg1, agg2, agg3, agg4, caused_timeout, agg5};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ac_error_release(all[i]);
    }
}

static void test_nested_text(void **state)
{
    (void)state;
    ac_error *io = ac_error_new("IoError", "reset");
    ac_error *db = ac_error_new_caused("DbError", io, "refused");
    ac_error *slow = ac_error_new(AC_ASK_TIMEOUT_ERROR, "slow");
    ac_error *inner_members[] = {slow, db};
    ac_error *inner = ac_error_aggregate(inner_members, 2, "inner");
    ac_error *root_cause = ac_error_new("Config", "bad quorum");
    ac_error *outer_members[] = {inner, slow};
    ac_error *outer = ac_error_aggregate(outer_members, 2, "outer");
    ac_error *top = ac_error_new_caused("QuorumError", outer, "no quorum");
    ac_error *caused_agg = ac_error_new_caused("Wrapped", root_cause, "wrapped");
    assert_non_null(top);
    assert_non_null(caused_agg);

    assert_text(outer, "AggregateError: outer\n"
                       "  [0] AggregateError: inner\n"
                       "    [0] AskTimeoutError: slow\n"
                       "    [1] DbError: refused\n"
                       "      caused by IoError: reset\n"
                       "  [1] AskTimeoutError: slow\n");
    assert_text(top, "QuorumError: no quorum\n"
                     "  caused by AggregateError: outer\n"
                     "    [0] AggregateError: inner\n"
                     "      [0] AskTimeoutError: slow\n"
                     "      [1] DbError: refused\n"
                     "        caused by IoError: reset\n"
                     "    [1] AskTimeoutError: slow\n");
    assert_text(caused_agg, "Wrapped: wrapped\n"
                            "  caused by Config: bad quorum\n");

    /* Release the parts first: the whole must still print the same. */
    ac_error_release(io);
    ac_error_release(db);
    ac_error_release(slow);
    ac_error_release(inner);
    ac_error_release(outer);
    ac_error_release(root_cause);
    assert_text(top, "QuorumError: no quorum\n"
                     "  caused by AggregateError: outer\n"
                     "    [0] AggregateError: inner\n"
                     "      [0] AskTimeoutError: slow\n"
                     "      [1] DbError: refused\n"
                     "        caused by IoError: reset\n"
                     "    [1] AskTimeoutError: slow\n");
    ac_error_release(top);
    ac_error_release(caused_agg);
}

static void test_fprint_null_stream(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("X", "x");
    assert_non_null(e);
    ac_clear_error();
    assert_int_equal(ac_error_fprint(e, NULL), -1);
    ac_error_release(e);
}

static void test_refcount(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("Shared", "shared by %d", 3);
    assert_non_null(e);
    assert_ptr_equal(ac_error_retain(e), e);
    assert_ptr_equal(ac_error_retain(e), e);
    ac_error_release(e);
    ac_error_release(e);
    /* Still ours: one reference left. */
    assert_string_equal(ac_error_message(e), "shared by 3");

    /* A member and a cause outlive every other holder through the error. */
    ac_error *m = ac_error_new("Member", "m");
    ac_error *agg = ac_error_aggregate(&m, 1, "agg");
    ac_error *c = ac_error_new("Cause", "c");
    ac_error *top = ac_error_new_caused("Top", c, "top");
    ac_error_release(m);
    ac_error_release(c);
    assert_string_equal(ac_error_message(ac_error_member(agg, 0)), "m");
    assert_string_equal(ac_error_message(ac_error_cause(top)), "c");
    /* The same member twice, and one error both member and cause. */
    ac_error *twice[] = {e, e};
    ac_error *agg2 = ac_error_aggregate(twice, 2, "twice");
    ac_error *both = ac_error_new_caused("Both", e, "both");
    assert_non_null(agg2);
    assert_non_null(both);
    ac_error_release(e);
    assert_string_equal(ac_error_name(ac_error_member(agg2, 1)), "Shared");
    ac_error_release(agg2);
    assert_string_equal(ac_error_name(ac_error_cause(both)), "Shared");
    ac_error_release(both);
    ac_error_release(agg);
    ac_error_release(top);
}

#define RC_THREADS 4
#define RC_ROUNDS 20000

static void *retain_release_loop(void *arg)
{
    ac_error *e = arg;
    for (int i = 0; i < RC_ROUNDS; i++) {
        ac_error *mine = ac_error_retain(e);
        if (strcmp(ac_error_name(mine), "Shared") != 0) {
            abort();
        }
        ac_error_release(mine);
    }
    ac_error_release(e); /* the reference the test thread handed over */
    return NULL;
}

/* One error shared by many threads: retain/release from any thread. */
static void test_refcount_threads(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("Shared", "by threads");
    assert_non_null(e);
    pthread_t th[RC_THREADS];
    for (int i = 0; i < RC_THREADS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, retain_release_loop, ac_error_retain(e)), 0);
    }
    for (int i = 0; i < RC_THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    assert_string_equal(ac_error_message(e), "by threads");
    ac_error_release(e);
}

static void test_error_messages(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("UserError", "bad %s", "input");
    assert_non_null(e);
    ac_error_retain(e); /* keep one past the message */
    ac_msg *m = ac_msg_error_new(e); /* consumes one reference */
    assert_non_null(m);
    assert_true(ac_msg_is(m, &ac_msg_type_error));
    assert_ptr_equal(ac_msg_type_of(m), &ac_msg_type_error);
    assert_string_equal(ac_msg_type_name(m), "actorc.Error");
    assert_ptr_equal(ac_msg_error(m), e);
    assert_string_equal(ac_error_name(ac_msg_error(m)), "UserError");
    assert_string_equal(ac_error_message(ac_msg_error(m)), "bad input");
    ac_msg_release(m);
    /* Our own reference is still good after the message is gone. */
    assert_string_equal(ac_error_message(e), "bad input");
    ac_error_release(e);

    /* The message alone owns its error: releasing it frees everything. */
    ac_error *solo = ac_error_new("Solo", "s");
    ac_msg *sm = ac_msg_error_new(solo);
    assert_non_null(sm);
    ac_msg *again = ac_msg_retain(sm);
    ac_msg_release(sm);
    assert_string_equal(ac_error_name(ac_msg_error(again)), "Solo");
    ac_msg_release(again);

    /* Not an error message. */
    ac_msg *s = ac_msg_str_new("hello");
    assert_non_null(s);
    ac_clear_error();
    assert_null(ac_msg_error(s));
    assert_last_error(AC_ETYPE);
    assert_false(ac_msg_is(s, &ac_msg_type_error));
    ac_msg_release(s);

    ac_clear_error();
    assert_null(ac_msg_error(NULL));
    assert_true(ac_last_status() != AC_OK);

    ac_clear_error();
    assert_null(ac_msg_error_new(NULL));
    assert_true(ac_last_status() != AC_OK);
}

static void test_bad_input(void **state)
{
    (void)state;
    ac_clear_error();
    assert_null(ac_error_new(NULL, "x"));
    assert_last_error(AC_EINVAL);

    ac_clear_error();
    assert_null(ac_error_new("", "x"));
    assert_last_error(AC_EINVAL);

    ac_error *c = ac_error_new("Cause", "c");
    assert_non_null(c);
    ac_clear_error();
    assert_null(ac_error_new_caused(NULL, c, "x"));
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_null(ac_error_new_caused("", c, "x"));
    assert_last_error(AC_EINVAL);

    /* A NULL member is a bad argument, and nothing is retained. */
    ac_error *members[] = {c, NULL};
    ac_clear_error();
    assert_null(ac_error_aggregate(members, 2, "x"));
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_null(ac_error_aggregate(NULL, 2, "x"));
    assert_last_error(AC_EINVAL);

    /* The cause was only borrowed by the failed calls: one release frees it
     * (the sanitizer build reports a leak otherwise). */
    ac_error_release(c);

    /* A good call after a failure works. */
    ac_error *ok = ac_error_new("Ok", "fine");
    assert_non_null(ok);
    ac_error_release(ok);
}

/* ---- nesting ------------------------------------------------------------- */

/* Wrap `e` (consumed) in a cause chain until the library refuses or
 * `tries` wraps are done; *levels counts the errors in the chain. */
static ac_error *wrap_until_refused(ac_error *e, int tries, int *levels)
{
    *levels = 1;
    for (int i = 1; i < tries; i++) {
        ac_error *next = ac_error_new_caused("Wrap", e, "level %d", i);
        if (!next) {
            break;
        }
        ac_error_release(e);
        e = next;
        ++*levels;
    }
    return e;
}

/* A cause chain half a million deep once crashed its release (and a
 * decoder could build one from a peer's bytes): nesting stops at
 * AC_ERROR_MAX_DEPTH, the refusal explains itself, and what was built
 * releases cleanly. */
static void test_deep_cause_chain_refused(void **state)
{
    (void)state;
    ac_clear_error();
    int levels = 0;
    ac_error *e = wrap_until_refused(ac_error_new("Root", "level 0"), 500000, &levels);
    assert_int_equal(levels, AC_ERROR_MAX_DEPTH);
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "AC_ERROR_MAX_DEPTH"));
    assert_int_equal(ac_error_depth(e), AC_ERROR_MAX_DEPTH);
    assert_string_equal(ac_error_message(e), "level 63");
    ac_error_release(e);
}

/* The same for aggregates nested in aggregates, and for an aggregate one
 * of whose members is too deep: refused, nothing retained. */
static void test_deep_aggregate_refused(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("Leaf", "leaf");
    assert_non_null(e);
    int levels = 1;
    ac_clear_error();
    for (int i = 1; i < 200000; i++) {
        ac_error *next = ac_error_aggregate(&e, 1, "level %d", i);
        if (!next) {
            break;
        }
        ac_error_release(e);
        e = next;
        levels++;
    }
    assert_int_equal(levels, AC_ERROR_MAX_DEPTH);
    assert_last_error(AC_EINVAL);

    ac_error *shallow = ac_error_new("Shallow", "s");
    ac_error *members[] = {shallow, e, shallow};
    ac_clear_error();
    assert_null(ac_error_aggregate(members, 3, "too deep"));
    assert_last_error(AC_EINVAL);
    ac_clear_error();
    assert_null(ac_error_new_caused("TooDeep", e, "too deep"));
    assert_last_error(AC_EINVAL);

    /* One level less fits under an aggregate, beside shallow members. */
    ac_error *inner = ac_error_member(e, 0);
    ac_error *fits[] = {shallow, inner};
    ac_error *agg = ac_error_aggregate(fits, 2, "fits");
    assert_non_null(agg);
    assert_int_equal(ac_error_depth(agg), AC_ERROR_MAX_DEPTH);
    ac_error_release(e);
    ac_error_release(shallow);
    ac_error_release(agg); /* the sanitizer build checks that all is freed */
}

static void test_depth(void **state)
{
    (void)state;
    assert_int_equal(ac_error_depth(NULL), 0);
    ac_error *leaf = ac_error_new("Leaf", "l");
    ac_error *caused = ac_error_new_caused("Caused", leaf, "c");
    ac_error *members[] = {leaf, caused, leaf};
    ac_error *agg = ac_error_aggregate(members, 3, "a");
    ac_error *empty = ac_error_aggregate(NULL, 0, "none");
    assert_int_equal(ac_error_depth(leaf), 1);
    assert_int_equal(ac_error_depth(caused), 2);
    assert_int_equal(ac_error_depth(agg), 3); /* the deepest member counts */
    assert_int_equal(ac_error_depth(empty), 1);
    ac_error *all[] = {leaf, caused, agg, empty};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ac_error_release(all[i]);
    }
}

/* Printing the deepest chain there can be: one line per error, indented two
 * spaces per level as always, so the text grows linearly with the chain
 * (a 10,000-deep chain once printed 100 MB). */
static void test_deep_print_is_linear(void **state)
{
    (void)state;
    int levels = 0;
    ac_error *e = wrap_until_refused(ac_error_new("Root", "level 0"), 10000, &levels);
    char *s = ac_error_to_string(e);
    assert_non_null(s);
    size_t line_max = 2 * AC_ERROR_MAX_DEPTH + sizeof "caused by Wrap: level 99999\n";
    assert_true(strlen(s) <= (size_t)levels * line_max);

    /* Line k is the error k levels down, indented by 2k. */
    char *line = s;
    for (int k = 0; k < levels; k++) {
        char want[300];
        snprintf(want, sizeof want, "%*s%s%s: level %d\n", 2 * k, "", k ? "caused by " : "",
                 k == levels - 1 ? "Root" : "Wrap", levels - 1 - k);
        assert_memory_equal(line, want, strlen(want));
        line += strlen(want);
    }
    assert_string_equal(line, "");
    free(s);
    ac_error_release(e);
}

/* Sharing: one error under many parents at every level. Each is freed once,
 * when its last holder lets go; the sanitizer build checks the rest. */
static void test_release_shared_and_wide(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("Leaf", "leaf");
    for (int i = 1; i < AC_ERROR_MAX_DEPTH; i++) {
        ac_error *both[] = {e, e};
        /* shared at every fourth level: 2^16 leaves, within AC_ERROR_MAX_NODES */
        ac_error *next = i % 4 == 0 ? ac_error_aggregate(both, 2, "level %d", i)
                               : ac_error_new_caused("Wrap", e, "level %d", i);
        assert_non_null(next);
        ac_error_release(e);
        e = next;
    }
    assert_int_equal(ac_error_depth(e), AC_ERROR_MAX_DEPTH);
    ac_error_release(e);

    /* Wide: 100,000 members, each with a cause. */
    enum { WIDE = 100000 };
    ac_error **members = calloc(WIDE, sizeof *members);
    assert_non_null(members);
    ac_error *cause = ac_error_new("Cause", "c");
    for (int i = 0; i < WIDE; i++) {
        members[i] = ac_error_new_caused("Member", cause, "%d", i);
        assert_non_null(members[i]);
    }
    ac_error_release(cause);
    ac_error *wide = ac_error_aggregate(members, WIDE, "wide");
    assert_non_null(wide);
    for (int i = 0; i < WIDE; i++) {
        ac_error_release(members[i]);
    }
    free(members);
    assert_int_equal(ac_error_member_count(wide), WIDE);
    ac_error_release(wide);
}

/* One error shared twice at every level unfolds to 2^depth lines: it is
 * refused once the unfolded size passes AC_ERROR_MAX_NODES, long before
 * the depth cap, and what was built prints in bounded space. */
static void test_shared_doubling_refused(void **state)
{
    (void)state;
    ac_error *e = ac_error_new("Leaf", "x");
    assert_non_null(e);
    int levels = 0;
    for (;;) {
        ac_error *pair[2] = {e, e};
        ac_error *up = ac_error_aggregate(pair, 2, "level %d", levels + 1);
        if (!up)
            break;
        ac_error_release(e);
        e = up;
        levels++;
        assert_true(levels < AC_ERROR_MAX_DEPTH);
    }
    assert_status(ac_last_status(), AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "AC_ERROR_MAX_NODES"));
    /* 2^(levels+1) - 1 nodes fit, 2^(levels+2) - 1 do not */
    assert_true((1L << (levels + 1)) - 1 <= AC_ERROR_MAX_NODES);
    assert_true((1L << (levels + 2)) - 1 > AC_ERROR_MAX_NODES);
    char *text = ac_error_to_string(e);
    assert_non_null(text);
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, (1L << (levels + 1)) - 1);
    free(text);
    ac_error_release(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_new_name_and_message),
        TS_UNIT(test_null_accessors),
        TS_UNIT(test_caused),
        TS_UNIT(test_aggregate_members_in_order),
        TS_UNIT(test_all_timeouts),
        TS_UNIT(test_nested_text),
        TS_UNIT(test_fprint_null_stream),
        TS_UNIT(test_refcount),
        TS_UNIT(test_refcount_threads),
        TS_UNIT(test_error_messages),
        TS_UNIT(test_bad_input),
        TS_UNIT(test_deep_cause_chain_refused),
        TS_UNIT(test_deep_aggregate_refused),
        TS_UNIT(test_depth),
        TS_UNIT(test_deep_print_is_linear),
        TS_UNIT(test_release_shared_and_wide),
        TS_UNIT(test_shared_doubling_refused),
    };
    return cmocka_run_group_tests_name("errors", tests, NULL, NULL);
}
