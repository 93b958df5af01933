/*
 * The view of a running system (actorc/observe.h), without HTTP: the
 * document parses and says what the system holds (the system, the actor
 * tree, the gathering routers with their routees, hedges, breakers and
 * latency); pages of the tree cover it once; the query's limits; sources
 * added and removed, also while views are being taken; what the JSON
 * writer does with awkward strings and numbers, and with a source that
 * writes malformed JSON.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>
#include <pthread.h>

#include "ob_demo.h"
#include "ts_test.h"

static ac_system *make_system(void **state)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "view", &(ac_system_options){.workers = 2});
    assert_non_null(sys);
    return sys;
}

/* The view parsed; fails the test when it is not JSON. */
static json_t *view_of(ac_system *sys, const ac_observe_query *q)
{
    char *text = ac_observe_json(sys, q);
    if (!text)
        fail_msg("ac_observe_json: %s", ac_last_error());
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    if (!doc)
        fail_msg("not JSON (%s at %d): %.300s", err.text, err.position, text);
    free(text);
    return doc;
}

static json_t *router_at(json_t *doc, const char *path_suffix)
{
    json_t *routers = json_object_get(doc, "routers"), *r;
    size_t i;
    json_array_foreach(routers, i, r) {
        const char *path = json_string_value(json_object_get(r, "path"));
        size_t n = path ? strlen(path) : 0, m = strlen(path_suffix);
        if (n >= m && strcmp(path + n - m, path_suffix) == 0)
            return r;
    }
    return NULL;
}

static json_t *routee_of(json_t *router, const char *name)
{
    json_t *routees = json_object_get(router, "routees"), *r;
    size_t i;
    json_array_foreach(routees, i, r) {
        const char *path = json_string_value(json_object_get(r, "path"));
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (slash && strcmp(slash + 1, name) == 0)
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

static json_t *actor_at(json_t *doc, const char *path_suffix)
{
    json_t *items = json_object_get(json_object_get(doc, "actors"), "items"), *a;
    size_t i;
    json_array_foreach(items, i, a) {
        const char *path = json_string_value(json_object_get(a, "path"));
        size_t n = path ? strlen(path) : 0, m = strlen(path_suffix);
        if (n >= m && strcmp(path + n - m, path_suffix) == 0)
            return a;
    }
    return NULL;
}

/* ---- the document ----------------------------------------------------- */

static void test_plain_system(void **state)
{
    ac_system *sys = make_system(state);
    json_t *doc = view_of(sys, NULL);
    assert_int_equal(num(doc, "version"), 1);
    json_t *system = json_object_get(doc, "system");
    assert_string_equal(json_string_value(json_object_get(system, "name")), "view");
    assert_int_equal(num(system, "workers"), 2);
    assert_int_equal(num(system, "actors"), 0); /* the runtime's own cells are not counted */
    assert_true(num(system, "time_ms") > 0);
    assert_true(json_is_integer(json_object_get(system, "dead_letters")));
    assert_true(json_is_integer(json_object_get(system, "timers_armed")));
    assert_true(json_is_false(json_object_get(system, "metrics")));
    assert_true(json_is_null(json_object_get(system, "messages_processed")));
    json_t *actors = json_object_get(doc, "actors");
    assert_int_equal(num(actors, "total"), num(system, "actors"));
    assert_int_equal(num(actors, "offset"), 0);
    assert_int_equal(num(actors, "limit"), AC_OBSERVE_DEFAULT_PAGE);
    /* No router, node or cluster: no such sections. */
    assert_null(json_object_get(doc, "routers"));
    assert_null(json_object_get(doc, "node"));
    json_decref(doc);
}

static void test_demo_system(void **state)
{
    ac_system *sys = make_system(state);
    assert_status(ac_metrics_enable(sys), AC_OK);
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    int rounds = 12;
    for (int i = 0; i < rounds; i++)
        assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
    /* Slot outcomes are counted when their gathers are freed: the slow
     * routee's late answers come after the round; wait for them. */
    ts_sleep_ms(OB_SLOW_MS * 3);
    json_t *doc = view_of(sys, NULL);

    /* The tree: the supervisor, its children, the routers' routees. */
    json_t *workers = actor_at(doc, "/user/workers");
    assert_non_null(workers);
    assert_string_equal(json_string_value(json_object_get(workers, "kind")), "Supervisor");
    assert_string_equal(json_string_value(json_object_get(workers, "state")), "running");
    assert_int_equal(num(workers, "children"), OB_TREE_WORKERS);
    assert_int_equal(num(workers, "restarts"), 0);
    json_t *routee = actor_at(doc, "/user/hedged/routee-1");
    assert_non_null(routee);
    /* Counted for the routees of a smallest-mailbox pool; null here. */
    json_t *mailbox = json_object_get(routee, "mailbox");
    assert_true(json_is_null(mailbox) || json_is_integer(mailbox));
    assert_true(json_is_boolean(json_object_get(routee, "scheduled")));
    assert_true(num(json_object_get(doc, "system"), "messages_processed") > 0);

    /* The routers. */
    json_t *scatter = router_at(doc, "/user/scatter");
    json_t *hedged = router_at(doc, "/user/hedged");
    json_t *flaky = router_at(doc, "/user/flaky");
    assert_non_null(scatter);
    assert_non_null(hedged);
    assert_non_null(flaky);
    assert_string_equal(json_string_value(json_object_get(scatter, "kind")), "scatter-gather");
    assert_string_equal(json_string_value(json_object_get(hedged, "kind")), "hedged");
    assert_int_equal(num(scatter, "pool_size"), 3);
    assert_int_equal(json_array_size(json_object_get(scatter, "routees")), 3);
    assert_int_equal(num(json_object_get(scatter, "messages"), "first"), rounds);
    assert_true(json_is_null(json_object_get(scatter, "hedges")));
    long long calls = 0;
    for (int k = 1; k <= 3; k++) {
        char name[24];
        snprintf(name, sizeof name, "routee-%d", k);
        json_t *r = routee_of(scatter, name);
        assert_non_null(r);
        assert_true(json_is_false(json_object_get(r, "stopped")));
        assert_true(json_is_null(json_object_get(r, "breaker")));
        assert_int_equal(num(r, "wins") + num(r, "losses") + num(r, "cancelled"), num(r, "calls"));
        calls += num(r, "calls");
    }
    assert_int_equal(calls, 3 * rounds); /* every routee, every message */

    /* The hedged router: routee-1 is slow, so its requests are hedged and
     * the hedges win. Which routee a message starts with moves, so
     * routee-1 is first for about a third of them. */
    json_t *hedges = json_object_get(hedged, "hedges");
    assert_true(num(hedges, "sent") > 0);
    assert_true(num(hedges, "won") > 0);
    json_t *slow = routee_of(hedged, "routee-1");
    assert_non_null(slow);
    /* It may win now and then, when a hedge is slower still (a loaded
     * machine, a sanitizer), but it loses most. */
    assert_true(num(slow, "wins") < num(slow, "losses"));
    assert_true(num(slow, "losses") > 0);
    long long hedges_sent = 0, hedges_won = 0;
    for (int k = 1; k <= 3; k++) {
        char name[24];
        snprintf(name, sizeof name, "routee-%d", k);
        json_t *r = routee_of(hedged, name);
        hedges_sent += num(r, "hedges_sent");
        hedges_won += num(r, "hedges_won");
    }
    assert_int_equal(hedges_sent, num(hedges, "sent"));
    assert_int_equal(hedges_won, num(hedges, "won"));
    /* The winners' latency: one per message answered first. */
    json_t *latency = json_object_get(hedged, "latency");
    assert_int_equal(num(latency, "count"), num(json_object_get(hedged, "messages"), "first"));
    json_t *buckets = json_object_get(latency, "buckets");
    assert_true(json_array_size(buckets) > 2);
    assert_true(json_is_null(json_object_get(json_array_get(buckets, json_array_size(buckets) - 1),
                                             "le")));
    assert_true(json_real_value(json_object_get(latency, "sum")) > 0 ||
                json_integer_value(json_object_get(latency, "sum")) > 0);

    /* The flaky router: routee-2's breaker opened after its failures. */
    json_t *bad = routee_of(flaky, "routee-2");
    assert_non_null(bad);
    json_t *breaker = json_object_get(bad, "breaker");
    assert_true(json_is_object(breaker));
    assert_string_equal(json_string_value(json_object_get(breaker, "state")), "open");
    assert_true(num(breaker, "opened") >= 1);
    assert_true(num(bad, "errors") >= OB_BREAKER_FAILURES);
    json_t *good = routee_of(flaky, "routee-1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(good, "breaker"), "state")), "closed");
    json_decref(doc);
    ob_demo_release(&d);
}

/* Without metrics, a router's winners are timed from the first time the
 * view is taken: none before, every one after; the counts are kept all
 * along. */
static void test_latency_from_the_first_view(void **state)
{
    ac_system *sys = make_system(state);
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    for (int i = 0; i < 5; i++)
        assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
    json_t *doc = view_of(sys, NULL);
    json_t *hedged = router_at(doc, "/user/hedged");
    assert_non_null(hedged);
    long long first = num(json_object_get(hedged, "messages"), "first");
    assert_int_equal(first, 5);
    assert_int_equal(num(json_object_get(hedged, "latency"), "count"), 0);
    json_decref(doc);

    for (int i = 0; i < 7; i++)
        assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
    doc = view_of(sys, NULL);
    hedged = router_at(doc, "/user/hedged");
    assert_int_equal(num(json_object_get(hedged, "messages"), "first"), first + 7);
    json_t *latency = json_object_get(hedged, "latency");
    assert_int_equal(num(latency, "count"), 7);
    assert_true(json_real_value(json_object_get(latency, "sum")) > 0);
    json_decref(doc);
    ob_demo_release(&d);
}

/* ---- paging ----------------------------------------------------------- */

static void test_pages_cover_the_tree(void **state)
{
    ac_system *sys = make_system(state);
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS); /* every actor started */
    json_t *whole = view_of(sys, &(ac_observe_query){.limit = AC_OBSERVE_MAX_PAGE});
    json_t *all = json_object_get(json_object_get(whole, "actors"), "items");
    size_t total = (size_t)num(json_object_get(whole, "actors"), "total");
    assert_int_equal(json_array_size(all), total);
    assert_true(total > 10);
    /* Spawn order: a parent before its children. */
    for (size_t i = 0; i < total; i++) {
        const char *path = json_string_value(json_object_get(json_array_get(all, i), "path"));
        const char *slash = strrchr(path, '/');
        for (size_t k = i + 1; k < total; k++) {
            const char *later = json_string_value(json_object_get(json_array_get(all, k), "path"));
            /* a later actor is not the parent of an earlier one */
            size_t n = (size_t)(slash - path);
            assert_false(strlen(later) == n && strncmp(later, path, n) == 0);
        }
    }
    /* Pages of 3 give the same actors, once each. */
    size_t seen = 0;
    for (uint64_t offset = 0; offset < total + 3; offset += 3) {
        char *text = ac_observe_actors_json(sys, &(ac_observe_query){.offset = offset, .limit = 3});
        assert_non_null(text);
        json_t *page = json_loads(text, 0, NULL);
        assert_non_null(page);
        free(text);
        assert_int_equal(num(page, "total"), total);
        assert_int_equal(num(page, "offset"), offset);
        assert_int_equal(num(page, "limit"), 3);
        json_t *items = json_object_get(page, "items");
        size_t want = offset >= total ? 0 : (total - offset < 3 ? total - offset : 3);
        assert_int_equal(json_array_size(items), want);
        for (size_t i = 0; i < json_array_size(items); i++, seen++)
            assert_string_equal(
                json_string_value(json_object_get(json_array_get(items, i), "path")),
                json_string_value(json_object_get(json_array_get(all, offset + i), "path")));
        json_decref(page);
    }
    assert_int_equal(seen, total);
    json_decref(whole);
    ob_demo_release(&d);
}

static void test_query_limits(void **state)
{
    ac_system *sys = make_system(state);
    assert_null(ac_observe_json(sys, &(ac_observe_query){.limit = AC_OBSERVE_MAX_PAGE + 1}));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "limit = 1001"));
    assert_null(ac_observe_actors_json(sys, &(ac_observe_query){.limit = UINT64_MAX}));
    assert_last_error(AC_EINVAL);
    assert_null(ac_observe_json(NULL, NULL));
    assert_last_error(AC_EINVAL);
    /* An offset far beyond the tree: an empty page, not an error. */
    char *text = ac_observe_actors_json(sys, &(ac_observe_query){.offset = UINT64_MAX - 1});
    assert_non_null(text);
    assert_non_null(strstr(text, "\"items\":[]"));
    free(text);
}

/* ---- sources and the writer ------------------------------------------- */

static void awkward_source(ac_json *j, void *arg)
{
    (void)arg;
    ac_json_object(j);
    ac_json_key(j, "quote\"and\\slash");
    ac_json_string(j, "line\nbreak\ttab\x01<script>");
    ac_json_key(j, "bad utf8");
    ac_json_string(j, "a\xff" "b\xc3(c\xe2\x82" "d\xed\xa0\x80" "e");
    ac_json_key(j, "utf8");
    ac_json_string(j, "caf\xc3\xa9 \xe5\x90\x8d \xf0\x9f\x98\x80");
    ac_json_key(j, "nan");
    ac_json_double(j, NAN);
    ac_json_key(j, "inf");
    ac_json_double(j, -INFINITY);
    ac_json_key(j, "third");
    ac_json_double(j, 1.0 / 3.0);
    ac_json_key(j, "min");
    ac_json_int(j, INT64_MIN);
    ac_json_key(j, "max");
    ac_json_uint(j, UINT64_MAX);
    ac_json_key(j, "null");
    ac_json_string(j, NULL);
    ac_json_key(j, "flags");
    ac_json_array(j);
    ac_json_bool(j, true);
    ac_json_bool(j, false);
    ac_json_null(j);
    ac_json_array_end(j);
    ac_json_object_end(j);
}

static void test_writer(void **state)
{
    ac_system *sys = make_system(state);
    ac_observe_source *src = ac_observe_add(sys, "mine", awkward_source, NULL);
    assert_non_null(src);
    char *text = ac_observe_json(sys, NULL);
    assert_non_null(text);
    assert_null(strchr(text, '<')); /* safe inside a page */
    assert_non_null(strstr(text, "\\u003cscript\\u003e"));
    json_error_t err; /* UINT64_MAX is beyond jansson's integers */
    json_t *doc = json_loads(text, JSON_DECODE_INT_AS_REAL, &err);
    if (!doc)
        fail_msg("not JSON (%s): %s", err.text, text);
    json_t *mine = json_array_get(json_object_get(doc, "mine"), 0);
    assert_non_null(mine);
    assert_string_equal(json_string_value(json_object_get(mine, "quote\"and\\slash")),
                        "line\nbreak\ttab\x01<script>");
    /* Every byte outside a valid sequence is U+FFFD. */
    assert_string_equal(json_string_value(json_object_get(mine, "bad utf8")),
                        "a\xef\xbf\xbd" "b\xef\xbf\xbd(c\xef\xbf\xbd\xef\xbf\xbd"
                        "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "e");
    assert_string_equal(json_string_value(json_object_get(mine, "utf8")),
                        "caf\xc3\xa9 \xe5\x90\x8d \xf0\x9f\x98\x80");
    assert_true(json_is_null(json_object_get(mine, "nan")));
    assert_true(json_is_null(json_object_get(mine, "inf")));
    assert_true(fabs(json_real_value(json_object_get(mine, "third")) - 1.0 / 3.0) < 1e-15);
    assert_true(json_is_null(json_object_get(mine, "null")));
    assert_non_null(strstr(text, "\"min\":-9223372036854775808"));
    assert_non_null(strstr(text, "\"max\":18446744073709551615"));
    assert_non_null(strstr(text, "\"flags\":[true,false,null]"));
    json_decref(doc);
    free(text);
    ac_observe_remove(src);
    text = ac_observe_json(sys, NULL);
    assert_null(strstr(text, "\"mine\""));
    free(text);
}

static void malformed_source(ac_json *j, void *arg)
{
    (void)arg;
    ac_json_object(j);
    ac_json_string(j, "a value without a key");
    ac_json_object_end(j);
}

static void unclosed_source(ac_json *j, void *arg)
{
    (void)arg;
    ac_json_array(j);
}

static void test_malformed_source(void **state)
{
    ac_system *sys = make_system(state);
    ac_observe_source *src = ac_observe_add(sys, "bad", malformed_source, NULL);
    assert_null(ac_observe_json(sys, NULL));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "malformed"));
    ac_observe_remove(src);
    src = ac_observe_add(sys, "bad", unclosed_source, NULL);
    assert_null(ac_observe_json(sys, NULL));
    assert_last_error(AC_EINVAL);
    ac_observe_remove(src);
    char *text = ac_observe_json(sys, NULL);
    assert_non_null(text);
    free(text);
}

static void counting_source(ac_json *j, void *arg)
{
    ac_json_int(j, *(int *)arg);
}

static void test_sections(void **state)
{
    ac_system *sys = make_system(state);
    static const char *const refused[] = {"", "system", "actors", "version", "Upper", "a-b",
                                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    int one = 1, two = 2, three = 3;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        assert_null(ac_observe_add(sys, refused[i], counting_source, &one));
        assert_last_error(AC_EINVAL);
    }
    assert_null(ac_observe_add(sys, "x", NULL, &one));
    assert_last_error(AC_EINVAL);
    assert_null(ac_observe_add(NULL, "x", counting_source, &one));
    assert_last_error(AC_EINVAL);
    ac_observe_remove(NULL);
    ac_observe_source *a = ac_observe_add(sys, "zeta", counting_source, &one);
    ac_observe_source *b = ac_observe_add(sys, "alpha", counting_source, &two);
    ac_observe_source *c = ac_observe_add(sys, "zeta", counting_source, &three);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    char *text = ac_observe_json(sys, NULL);
    /* In the order of each section's first source. */
    const char *zeta = strstr(text, "\"zeta\":[1,3]"), *alpha = strstr(text, "\"alpha\":[2]");
    assert_non_null(zeta);
    assert_non_null(alpha);
    assert_true(zeta < alpha);
    free(text);
    ac_observe_remove(a);
    text = ac_observe_json(sys, NULL);
    assert_non_null(strstr(text, "\"zeta\":[3]"));
    free(text);
    ac_observe_remove(b);
    ac_observe_remove(c);
}

/* Views taken on one thread while another adds and removes sources, and
 * routers come and go: every view parses, nothing is read after its
 * source is removed (the sanitizers watch). */
typedef struct churn {
    ac_system *sys;
    atomic_int stop;
    atomic_llong views;
} churn;

static void *take_views(void *arg)
{
    churn *c = arg;
    while (!atomic_load(&c->stop)) {
        char *text = ac_observe_json(c->sys, NULL);
        if (!text)
            fail_msg("ac_observe_json: %s", ac_last_error());
        json_t *doc = json_loads(text, 0, NULL);
        if (!doc)
            fail_msg("not JSON: %.200s", text);
        json_decref(doc);
        free(text);
        atomic_fetch_add(&c->views, 1);
    }
    return NULL;
}

static void slow_source(ac_json *j, void *arg)
{
    ts_sleep_ms(1);
    ac_json_int(j, *(int *)arg);
}

static void test_sources_while_viewed(void **state)
{
    ac_system *sys = make_system(state);
    churn c = {.sys = sys};
    ob_demo d;
    assert_true(ob_demo_start(&d, sys));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, take_views, &c), 0);
    for (int i = 0; i < 40; i++) {
        int *value = malloc(sizeof *value);
        *value = i;
        ac_observe_source *src = ac_observe_add(sys, "churn", slow_source, value);
        assert_non_null(src);
        assert_int_equal(ob_demo_round(&d), OB_ROUND_ASKS);
        ac_ref *router = ac_spawn(sys, ob_demo_router_props(), NULL);
        assert_non_null(router);
        ac_answer a = {0};
        assert_status(ac_ask_wait(router, ac_msg_str_new("ping"), 5000, &a), AC_OK);
        ac_answer_release(&a);
        ac_stop(router);
        ac_ref_release(router);
        ac_observe_remove(src);
        free(value); /* the source is gone: nothing reads it now */
    }
    assert_eventually(ts_wait_ge(&c.views, 5, TS_WAIT_S), "views");
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    ob_demo_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_plain_system),
        TS_UNIT(test_demo_system),
        TS_UNIT(test_latency_from_the_first_view),
        TS_UNIT(test_pages_cover_the_tree),
        TS_UNIT(test_query_limits),
        TS_UNIT(test_writer),
        TS_UNIT(test_malformed_source),
        TS_UNIT(test_sections),
        TS_UNIT(test_sources_while_viewed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
