/*
 * Every router and every breaker in the view (actorc/observe.h): pool
 * and group routers of each one-shot kind with their routees and the
 * messages routed to each, counts that move with tells, a smallest-
 * mailbox router's depths, a breaker that guards a routee opening (in
 * the router's row and in the breakers section), a breaker of the
 * program's own there for its life, and a hedged router's delay and
 * policy.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>

#include "ts_test.h"

static ac_system *make_system(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "routers", &(ac_system_options){.workers = 2});
    assert_non_null(sys);
    return sys;
}

static json_t *view_of(ac_system *sys)
{
    char *text = ac_observe_json(sys, NULL);
    if (!text)
        fail_msg("ac_observe_json: %s", ac_last_error());
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    if (!doc)
        fail_msg("not JSON (%s at %d): %.300s", err.text, err.position, text);
    free(text);
    return doc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The element of `section` whose `key` ends with `suffix`. */
static json_t *find_in(json_t *doc, const char *section, const char *key, const char *suffix)
{
    json_t *items = json_object_get(doc, section), *x;
    size_t i;
    json_array_foreach(items, i, x) {
        if (ends_with(json_string_value(json_object_get(x, key)), suffix))
            return x;
    }
    return NULL;
}

static json_t *routee_of(json_t *router, const char *suffix)
{
    json_t *routees = json_object_get(router, "routees"), *r;
    size_t i;
    json_array_foreach(routees, i, r) {
        if (ends_with(json_string_value(json_object_get(r, "path")), suffix))
            return r;
    }
    return NULL;
}

static long long num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return (long long)json_integer_value(v);
}

static const char *str(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (!s)
        fail_msg("%s is not a string", key);
    return s;
}

/* ---- routees that count what they receive ---- */

static void count_receive(ac_ctx *ctx, ac_msg *msg)
{
    atomic_llong *received = ac_ctx_user_data(ctx);
    atomic_fetch_add(received, 1);
    if (ac_sender(ctx))
        ac_reply(ctx, ac_msg_str_new(ac_msg_str(msg) ? ac_msg_str(msg) : "ok"));
}

static const ac_actor_def counter_def = {.name = "Counter", .receive = count_receive};

/* Routee-2 of a pool fails every request; the others answer. */
static void flaky_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    if (!ac_sender(ctx))
        return;
    if (strcmp(ac_self_name(ctx), "routee-2") == 0)
        ac_reply(ctx, ac_msg_error_new(ac_error_new("RouteeError", "routee-2 always fails")));
    else
        ac_reply(ctx, ac_msg_str_new("ok"));
}

static const ac_actor_def flaky_def = {.name = "Flaky", .receive = flaky_receive};

/* Counters the routees write, one per router, owned by the fixture: they
 * outlive the system, so a message handled after the test's checks (a
 * late hedge) never writes into a frame that has gone. */
enum { COUNTERS = 8 };

static atomic_llong *counter_of(void **state, int i)
{
    ts_fixture *fx = *state;
    if (!fx->data)
        ts_fx_data(fx, COUNTERS * sizeof(atomic_llong), NULL);
    assert_true(i < COUNTERS);
    return (atomic_llong *)fx->data + i;
}

static void tell_n(ac_ref *router, int n)
{
    for (int i = 0; i < n; i++)
        assert_status(ac_tell(router, ac_msg_int64_new(i), NULL), AC_OK);
}

static long long routed_sum(json_t *router)
{
    long long sum = 0;
    json_t *routees = json_object_get(router, "routees"), *r;
    size_t i;
    json_array_foreach(routees, i, r) {
        sum += num(r, "routed");
    }
    return sum;
}

/* ---- pools ------------------------------------------------------------ */

typedef struct pool_case {
    const char *name, *kind;
    ac_props *(*make)(int n, const ac_actor_def *def, const ac_routee_options *ro);
    int copies; /* routees each message reaches */
} pool_case;

static void check_pool(void **state, ac_system *sys, const pool_case *c, int which)
{
    enum { ROUTEES = 3, N = 30 };
    atomic_llong *received = counter_of(state, which);
    ac_routee_options ro = {.user_data = received};
    ac_ref *router = ac_spawn(sys, c->make(ROUTEES, &counter_def, &ro), c->name);
    assert_non_null(router);
    tell_n(router, N);
    assert_eventually(ts_wait_ge(received, (long long)N * c->copies, TS_WAIT_S), "routees");

    json_t *doc = view_of(sys);
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/user/%s", c->name);
    json_t *r = find_in(doc, "routers", "path", suffix);
    if (!r)
        fail_msg("%s is not in the view's routers", c->name);
    assert_string_equal(str(r, "kind"), c->kind);
    assert_true(json_is_false(json_object_get(r, "group")));
    assert_int_equal(num(r, "size"), ROUTEES);
    assert_int_equal(num(r, "dead_letters"), 0);
    assert_int_equal(json_array_size(json_object_get(r, "routees")), ROUTEES);
    for (int k = 1; k <= ROUTEES; k++) {
        char name[96];
        snprintf(name, sizeof name, "/user/%s/routee-%d", c->name, k);
        json_t *row = routee_of(r, name);
        if (!row)
            fail_msg("%s has no routee %s", c->name, name);
        assert_true(json_is_false(json_object_get(row, "stopped")));
        assert_true(json_is_null(json_object_get(row, "breaker")));
        assert_int_equal(num(row, "refused"), 0);
        json_t *mailbox = json_object_get(row, "mailbox");
        if (strcmp(c->kind, "smallest-mailbox") == 0)
            assert_true(json_is_integer(mailbox) && json_integer_value(mailbox) >= 0);
        else
            assert_true(json_is_null(mailbox));
        if (strcmp(c->kind, "round-robin") == 0)
            assert_int_equal(num(row, "routed"), N / ROUTEES);
        if (strcmp(c->kind, "broadcast") == 0)
            assert_int_equal(num(row, "routed"), N);
    }
    assert_int_equal(routed_sum(r), (long long)N * c->copies);
    assert_int_equal(num(r, "routed"), (long long)N * c->copies);
    json_decref(doc);

    /* Counts move with more tells. */
    tell_n(router, N);
    assert_eventually(ts_wait_ge(received, 2LL * N * c->copies, TS_WAIT_S), "routees");
    doc = view_of(sys);
    r = find_in(doc, "routers", "path", suffix);
    assert_non_null(r);
    assert_int_equal(routed_sum(r), 2LL * N * c->copies);
    json_decref(doc);

    /* A stopped router leaves the view. */
    assert_status(ac_stop(router), AC_OK);
    for (int i = 0; i < 1000; i++) {
        doc = view_of(sys);
        bool gone = !find_in(doc, "routers", "path", suffix);
        json_decref(doc);
        if (gone)
            break;
        if (i == 999)
            fail_msg("%s stayed in the view after it stopped", c->name);
        ts_sleep_ms(10);
    }
    ac_ref_release(router);
}

static void test_pool_kinds(void **state)
{
    ac_system *sys = make_system(state);
    static const pool_case cases[] = {
        {"rr", "round-robin", ac_router_round_robin, 1},
        {"random", "random", ac_router_random, 1},
        {"smallest", "smallest-mailbox", ac_router_smallest_mailbox, 1},
        {"everyone", "broadcast", ac_router_broadcast, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_pool(state, sys, &cases[i], (int)i);
}

/* ---- groups ----------------------------------------------------------- */

static uint64_t key_of(const ac_msg *msg, void *user)
{
    (void)user;
    return (uint64_t)ac_msg_int64(msg);
}

static void test_groups(void **state)
{
    enum { N = 40 };
    ac_system *sys = make_system(state);
    atomic_llong *received = counter_of(state, 0);
    ac_ref *members[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "member-%d", i + 1);
        members[i] = ac_spawn(sys, ac_props_new(&counter_def, received), name);
        assert_non_null(members[i]);
    }
    ac_ref *hashing =
        ac_spawn(sys, ac_router_group_consistent_hashing(members, 3, key_of, NULL), "hashing");
    ac_ref *rr = ac_spawn(sys, ac_router_group_round_robin(members, 3), "group-rr");
    assert_non_null(hashing);
    assert_non_null(rr);
    tell_n(hashing, N);
    tell_n(rr, N);
    assert_eventually(ts_wait_ge(received, 2 * N, TS_WAIT_S), "members");

    json_t *doc = view_of(sys);
    json_t *h = find_in(doc, "routers", "path", "/user/hashing");
    json_t *g = find_in(doc, "routers", "path", "/user/group-rr");
    assert_non_null(h);
    assert_non_null(g);
    assert_string_equal(str(h, "kind"), "consistent-hashing");
    assert_string_equal(str(g, "kind"), "round-robin");
    assert_true(json_is_true(json_object_get(h, "group")));
    assert_int_equal(num(h, "size"), 3);
    assert_int_equal(routed_sum(h), N);
    assert_int_equal(routed_sum(g), N);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "/user/member-%d", i + 1);
        assert_non_null(routee_of(h, name));
        assert_int_equal(num(routee_of(g, name), "routed"), N / 3 + (i < N % 3));
    }
    json_decref(doc);

    /* A routee removed from a group leaves the router's row set. */
    assert_status(ac_tell(rr, ac_router_remove_routee_msg(members[2]), NULL), AC_OK);
    ac_answer a = {0};
    assert_status(ac_ask_wait(rr, ac_router_get_routees_msg(), 5000, &a), AC_OK);
    ac_answer_release(&a);
    doc = view_of(sys);
    g = find_in(doc, "routers", "path", "/user/group-rr");
    assert_int_equal(num(g, "size"), 2);
    assert_null(routee_of(g, "/user/member-3"));
    json_decref(doc);

    ac_ref_release(hashing);
    ac_ref_release(rr);
    for (int i = 0; i < 3; i++)
        ac_ref_release(members[i]);
}

/* ---- breakers --------------------------------------------------------- */

static void test_breaker_opens(void **state)
{
    ac_system *sys = make_system(state);
    ac_breaker_options breaker = {.max_failures = 2, .reset_timeout_ms = 3600000};
    ac_routee_options ro = {.breaker = &breaker};
    ac_ref *router = ac_spawn(sys, ac_router_round_robin(3, &flaky_def, &ro), "guarded");
    assert_non_null(router);
    /* Round robin sends every third request to routee-2: its two
     * failures open its breaker within a few rounds; the later ones are
     * refused and sent on to the next routee. */
    for (int i = 0; i < 30; i++) {
        ac_answer a = {0};
        ac_status st = ac_ask_wait(router, ac_msg_str_new("ping"), 5000, &a);
        assert_true(st == AC_OK || st == AC_EFAILED);
        ac_answer_release(&a);
    }
    json_t *doc = view_of(sys);
    json_t *r = find_in(doc, "routers", "path", "/user/guarded");
    assert_non_null(r);
    json_t *bad = routee_of(r, "/user/guarded/routee-2");
    json_t *good = routee_of(r, "/user/guarded/routee-1");
    assert_non_null(bad);
    assert_non_null(good);
    json_t *b = json_object_get(bad, "breaker");
    assert_true(json_is_object(b));
    assert_string_equal(str(b, "state"), "open");
    assert_int_equal(num(b, "opened"), 1);
    assert_string_equal(str(b, "name"), "actorc://routers/user/guarded/routee-2");
    assert_true(num(bad, "refused") > 0);
    assert_int_equal(num(bad, "routed"), 2); /* the two that failed */
    assert_string_equal(str(json_object_get(good, "breaker"), "state"), "closed");
    assert_int_equal(num(good, "refused"), 0);
    assert_int_equal(routed_sum(r), 30);

    /* The breakers section: each routee's breaker, named by its path. */
    json_t *open = find_in(doc, "breakers", "name", "/user/guarded/routee-2");
    json_t *closed = find_in(doc, "breakers", "name", "/user/guarded/routee-3");
    assert_non_null(open);
    assert_non_null(closed);
    assert_string_equal(str(open, "state"), "open");
    assert_int_equal(num(open, "opened"), 1);
    assert_int_equal(num(open, "max_failures"), 2);
    assert_int_equal(num(open, "refused"), num(bad, "refused"));
    assert_int_equal(num(open, "reset_timeout_ms"), 3600000);
    assert_string_equal(str(closed, "state"), "closed");
    assert_int_equal(num(closed, "failures"), 0);
    assert_int_equal(num(closed, "refused"), 0);
    json_decref(doc);
    ac_ref_release(router);
}

static void test_own_breaker(void **state)
{
    ac_system *sys = make_system(state);
    ac_breaker *b = ac_breaker_create(
        sys, &(ac_breaker_options){.name = "db", .max_failures = 1, .reset_timeout_ms = 600000});
    assert_non_null(b);
    json_t *doc = view_of(sys);
    json_t *x = find_in(doc, "breakers", "name", "db");
    assert_non_null(x);
    assert_string_equal(str(x, "state"), "closed");
    assert_int_equal(num(x, "opened"), 0);
    json_decref(doc);

    /* One failure opens it; a refused call is counted. */
    ac_breaker_permit p;
    assert_true(ac_breaker_acquire(b, &p, NULL));
    ac_error *err = ac_error_new("DbError", "down");
    ac_breaker_record(b, &p, err);
    ac_error_release(err);
    assert_false(ac_breaker_acquire(b, &p, NULL));
    doc = view_of(sys);
    x = find_in(doc, "breakers", "name", "db");
    assert_non_null(x);
    assert_string_equal(str(x, "state"), "open");
    assert_int_equal(num(x, "opened"), 1);
    assert_int_equal(num(x, "refused"), 1);
    json_decref(doc);

    /* Released, it leaves the view. */
    ac_breaker_release(b);
    doc = view_of(sys);
    assert_null(find_in(doc, "breakers", "name", "db"));
    json_decref(doc);
}

/* ---- the hedge delay -------------------------------------------------- */

static void test_hedge_delay(void **state)
{
    ac_system *sys = make_system(state);
    ac_routee_options ro = {.user_data = counter_of(state, 0)};
    ac_hedged_options fixed = {.delay_us = 7000, .timeout_ms = 2000};
    ac_hedged_options adaptive = {.delay_kind = AC_HEDGE_DELAY_ADAPTIVE,
                                  .delay_us = 3000,
                                  .percentile = 90,
                                  .window = 100,
                                  .min_samples = 50,
                                  .timeout_ms = 2000};
    ac_ref *f = ac_spawn(sys, ac_router_hedged(2, &counter_def, &fixed, &ro), "fixed");
    ac_ref *a = ac_spawn(sys, ac_router_hedged(2, &counter_def, &adaptive, &ro), "adaptive");
    assert_non_null(f);
    assert_non_null(a);
    for (int i = 0; i < 3; i++) {
        ac_answer ans = {0};
        assert_status(ac_ask_wait(f, ac_msg_str_new("x"), 5000, &ans), AC_OK);
        ac_answer_release(&ans);
        assert_status(ac_ask_wait(a, ac_msg_str_new("x"), 5000, &ans), AC_OK);
        ac_answer_release(&ans);
    }
    json_t *doc = view_of(sys);
    json_t *hf = json_object_get(find_in(doc, "routers", "path", "/user/fixed"), "hedge_delay");
    json_t *ha = json_object_get(find_in(doc, "routers", "path", "/user/adaptive"), "hedge_delay");
    assert_true(json_is_object(hf));
    assert_true(json_is_object(ha));
    assert_string_equal(str(hf, "policy"), "fixed");
    assert_true(fabs(json_number_value(json_object_get(hf, "delay_ms")) - 7.0) < 1e-9);
    assert_null(json_object_get(hf, "percentile"));
    /* Fewer successes than min_samples: still the initial delay. */
    assert_string_equal(str(ha, "policy"), "adaptive");
    assert_true(fabs(json_number_value(json_object_get(ha, "delay_ms")) - 3.0) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(ha, "percentile")) - 90.0) < 1e-9);
    assert_int_equal(num(ha, "window"), 100);
    assert_int_equal(num(ha, "min_samples"), 50);
    long long samples = num(ha, "samples");
    assert_true(samples >= 3 && samples <= 6); /* each success, winners' and losers' */
    assert_true(json_is_false(json_object_get(ha, "learned")));
    json_decref(doc);
    ac_ref_release(f);
    ac_ref_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_pool_kinds),
        TS_UNIT(test_groups),
        TS_UNIT(test_breaker_opens),
        TS_UNIT(test_own_breaker),
        TS_UNIT(test_hedge_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
