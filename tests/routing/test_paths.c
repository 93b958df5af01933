/*
 * Where routers and routees live and who answers: the router's path is
 * where it was spawned, top level or as a child; its routees are its
 * children routee-1 ... routee-N; a routee sees the original sender, so its
 * reply goes straight to the caller (the answer's sender is the routee).
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_common.h"
#include "ts_test.h"

typedef struct paths_data {
    rt_pool pool; /* its mutex guards the fields below too */
    ac_ref *child_router;    /* spawned by the parent actor; the test's to release */
    ac_ref *router;          /* for the client actor; set before it is told */
    int replies;
    char reply_sender[256];  /* path of who replied to the client */
    char reply_text[256];
    char client_path[256];
} paths_data;

static void paths_free(void *arg)
{
    rt_pool_fini(&((paths_data *)arg)->pool);
}

/* ---- a parent that spawns a pool as its child ----------------------------- */

static void parent_pre_start(ac_ctx *ctx)
{
    paths_data *d = ac_ctx_user_data(ctx);
    ac_routee_options ro = {.user_data = &d->pool};
    ac_ref *r = ac_spawn_child(ctx, ac_router_round_robin(2, &rt_routee_def, &ro), "workers");
    pthread_mutex_lock(&d->pool.mu);
    d->child_router = r;
    pthread_cond_broadcast(&d->pool.cv);
    pthread_mutex_unlock(&d->pool.mu);
}

static void parent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def parent_def = {
    .name = "Parent", .pre_start = parent_pre_start, .receive = parent_receive};

static bool child_router_set(const rt_pool *p, const void *arg)
{
    (void)arg;
    return ((const paths_data *)(const void *)p)->child_router != NULL;
}

/* ---- a client actor that pings the pool with itself as sender ------------- */

static void client_receive(ac_ctx *ctx, ac_msg *msg)
{
    paths_data *d = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_int64)) {
        pthread_mutex_lock(&d->pool.mu);
        snprintf(d->client_path, sizeof d->client_path, "%s", ac_self_path(ctx));
        pthread_mutex_unlock(&d->pool.mu);
        ac_tell(d->router, rt_ping(), ac_self(ctx));
        return;
    }
    pthread_mutex_lock(&d->pool.mu);
    ac_ref *s = ac_sender(ctx);
    snprintf(d->reply_sender, sizeof d->reply_sender, "%s", s ? ac_ref_path(s) : "(none)");
    const char *text = ac_msg_str(msg);
    snprintf(d->reply_text, sizeof d->reply_text, "%s", text ? text : "(not a string)");
    d->replies++;
    pthread_cond_broadcast(&d->pool.cv);
    pthread_mutex_unlock(&d->pool.mu);
}

static const ac_actor_def client_def = {.name = "Client", .receive = client_receive};

static bool client_replied(const rt_pool *p, const void *arg)
{
    (void)arg;
    return ((const paths_data *)(const void *)p)->replies >= 1;
}

static paths_data *setup(ts_fixture *fx)
{
    paths_data *d = ts_fx_data(fx, sizeof *d, paths_free);
    rt_pool_init(&d->pool);
    return d;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_top_level_paths(void **state)
{
    ts_fixture *fx = *state;
    paths_data *d = setup(fx);
    ac_system *sys = ts_fx_system(fx, "paths", NULL);
    assert_non_null(sys);
    ac_routee_options ro = {.user_data = &d->pool};
    ac_ref *router = rt_spawn(sys, ac_router_round_robin(4, &rt_routee_def, &ro), "pool");
    assert_non_null(router);
    assert_string_equal(ac_ref_path(router), "actorc://paths/user/pool");
    assert_string_equal(ac_ref_name(router), "pool");

    for (int k = 1; k <= 4; k++) {
        ac_answer a;
        assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_OK);
        assert_non_null(a.sender);
        char want[300];
        snprintf(want, sizeof want, "actorc://paths/user/pool/routee-%d", k);
        assert_string_equal(ac_ref_path(a.sender), want);
        snprintf(want, sizeof want, "routee-%d", k);
        assert_string_equal(ac_ref_name(a.sender), want);
        /* The routee replied itself (its own path as the text). */
        assert_string_equal(ac_msg_str(a.reply), ac_ref_path(a.sender));
        assert_true(a.sender != router);
        ac_answer_release(&a);
    }
    for (int k = 1; k <= 4; k++) {
        /* A routee counts its ping after replying. */
        assert_eventually(rt_wait_pings(&d->pool, k, 1, TS_WAIT_S), "ping counted");
        assert_int_equal(rt_pings(&d->pool, k), 1);
        assert_int_equal(rt_started(&d->pool, k), 1);
    }
    assert_int_equal(rt_started(&d->pool, 5), 0);

    /* An actor as the caller: the reply comes from the routee, to the
     * caller, without passing through the router. */
    ac_ref *client = ts_spawn(sys, &client_def, d, "client");
    assert_non_null(client);
    d->router = router;
    assert_status(ac_tell(client, ac_msg_int64_new(1), NULL), AC_OK);
    assert_eventually(rt_wait(&d->pool, client_replied, NULL, TS_WAIT_S), "client replied to");
    pthread_mutex_lock(&d->pool.mu);
    assert_string_equal(d->reply_sender, "actorc://paths/user/pool/routee-1");
    assert_string_equal(d->reply_text, "actorc://paths/user/pool/routee-1");
    assert_string_equal(d->client_path, "actorc://paths/user/client");
    pthread_mutex_unlock(&d->pool.mu);
    assert_int_equal(ac_dead_letter_count(sys), 0);

    /* The routees are the router's children: stopping the router stops
     * them. */
    assert_status(ac_stop(router), AC_OK);
    for (int k = 1; k <= 4; k++) {
        assert_eventually(rt_wait_stopped(&d->pool, k, 1, TS_WAIT_S), "routee stopped");
    }
    assert_int_equal(rt_bad(&d->pool, NULL, 0), 0);

    ac_ref_release(client);
    ac_ref_release(router);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_child_router_paths(void **state)
{
    ts_fixture *fx = *state;
    paths_data *d = setup(fx);
    ac_system *sys = ts_fx_system(fx, "nested", NULL);
    assert_non_null(sys);
    ac_ref *parent = ts_spawn(sys, &parent_def, d, "parent");
    assert_non_null(parent);
    assert_eventually(rt_wait(&d->pool, child_router_set, NULL, TS_WAIT_S), "pool spawned");
    pthread_mutex_lock(&d->pool.mu);
    ac_ref *router = d->child_router;
    pthread_mutex_unlock(&d->pool.mu);
    assert_string_equal(ac_ref_path(router), "actorc://nested/user/parent/workers");

    for (int k = 1; k <= 2; k++) {
        ac_answer a;
        assert_status(ac_ask_wait(router, rt_ping(), RT_ASK_MS, &a), AC_OK);
        char want[300];
        snprintf(want, sizeof want, "actorc://nested/user/parent/workers/routee-%d", k);
        assert_string_equal(ac_ref_path(a.sender), want);
        ac_answer_release(&a);
    }
    assert_int_equal(rt_started(&d->pool, 3), 0);

    /* Stopping the parent stops the pool and its routees. */
    assert_status(ac_stop(parent), AC_OK);
    for (int k = 1; k <= 2; k++) {
        assert_eventually(rt_wait_stopped(&d->pool, k, 1, TS_WAIT_S), "routee stopped");
    }
    assert_int_equal(rt_bad(&d->pool, NULL, 0), 0);

    ac_ref_release(router); /* the parent handed its reference over */
    ac_ref_release(parent);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_top_level_paths),
        TS_UNIT(test_child_router_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
