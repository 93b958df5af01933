/*
 * Paths to local actors, as actorc's optional libraries reach them
 * (core/extension.h): a message delivered by path reaches a nested actor
 * through its ancestors, and a missing one is a dead letter; a locate
 * answers with the actor at the path, top-level or nested, or with none,
 * and is never a dead letter itself.
 *
 * The tree: /user/a, its child b, b's child c. Each records what it is
 * told; the asker records each Located answer as "<path> -> <actor's
 * path>" or "<path> -> none".
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "core/extension.h"
#include "ts_test.h"

typedef struct tree_node {
    ts_recorder *rec;
    const char *children; /* "b/c": the child's name, then its own */
} tree_node;

static void tree_pre_start(ac_ctx *ctx);

static void tree_receive(ac_ctx *ctx, ac_msg *msg)
{
    tree_node *t = ac_ctx_user_data(ctx);
    if (ac_msg_is(msg, &ac_msg_type_str))
        ts_rec_add(t->rec, "%s got %s", ac_self_path(ctx), ac_msg_str(msg));
}

static const ac_actor_def tree_def = {
    .name = "Tree", .pre_start = tree_pre_start, .receive = tree_receive};

static void tree_pre_start(ac_ctx *ctx)
{
    tree_node *t = ac_ctx_user_data(ctx);
    if (!t->children || !*t->children)
        return;
    const char *slash = strchr(t->children, '/');
    char name[16];
    size_t n = slash ? (size_t)(slash - t->children) : strlen(t->children);
    memcpy(name, t->children, n);
    name[n] = '\0';
    tree_node *child = t + 1; /* the nodes lie in an array, parent first */
    child->rec = t->rec;
    child->children = slash ? slash + 1 : "";
    ac_ref_release(ac_spawn_child(ctx, ac_props_new(&tree_def, child), name));
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    ac_ref *actor;
    const char *path;
    if (ac__ext_located_read(msg, &actor, &path))
        ts_rec_add(ac_ctx_user_data(ctx), "%s -> %s", path, actor ? ac_ref_path(actor) : "none");
}

static const ac_actor_def asker_def = {.name = "Asker", .receive = asker_receive};

typedef struct paths_fx {
    ac_system *sys;
    ts_recorder *rec;
    tree_node nodes[3];
    ac_ref *a, *asker;
} paths_fx;

static paths_fx *fx_tree(ts_fixture *fx)
{
    paths_fx *p = ts_fx_data(fx, sizeof *p, NULL);
    p->sys = ts_fx_system(fx, "paths", NULL);
    p->rec = ts_fx_rec(fx);
    p->nodes[0] = (tree_node){.rec = p->rec, .children = "b/c"};
    p->a = ts_spawn(p->sys, &tree_def, &p->nodes[0], "a");
    p->asker = ts_spawn(p->sys, &asker_def, p->rec, "asker");
    assert_non_null(p->a);
    assert_non_null(p->asker);
    /* c exists once a told "/user/a/b/c" something reaches it */
    const char path[] = "/user/a/b/c";
    assert_status(ac__ext_deliver_path(p->sys, path, strlen(path), ac_msg_str_new("hi"), NULL),
                  AC_OK);
    assert_true(ts_rec_wait_for(p->rec, "actorc://paths/user/a/b/c got hi", TS_WAIT_S));
    return p;
}

static void fx_release(paths_fx *p)
{
    ac_ref_release(p->a);
    ac_ref_release(p->asker);
}

static void locate(paths_fx *p, const char *path)
{
    assert_status(ac__ext_locate(p->sys, path, strlen(path), p->asker), AC_OK);
}

static void test_locate_top_level_and_nested(void **state)
{
    paths_fx *p = fx_tree(*state);
    locate(p, "/user/a");
    locate(p, "/user/a/b");
    locate(p, "/user/a/b/c");
    assert_true(ts_rec_wait_for(p->rec, "/user/a -> actorc://paths/user/a", TS_WAIT_S));
    assert_true(ts_rec_wait_for(p->rec, "/user/a/b -> actorc://paths/user/a/b", TS_WAIT_S));
    assert_true(ts_rec_wait_for(p->rec, "/user/a/b/c -> actorc://paths/user/a/b/c", TS_WAIT_S));
    assert_int_equal(ts_rec_count_of(p->rec, "actorc://paths/user/a/b/c got hi"), 1);
    fx_release(p);
}

/* No actor at some name of the path: the answer is none, and no dead
 * letter is counted. A delivery to such a path is one. */
static void test_locate_missing_is_none_not_a_dead_letter(void **state)
{
    paths_fx *p = fx_tree(*state);
    locate(p, "/user/nobody");
    locate(p, "/user/a/x/c");
    locate(p, "/user/a/b/c/d");
    assert_true(ts_rec_wait_for(p->rec, "/user/nobody -> none", TS_WAIT_S));
    assert_true(ts_rec_wait_for(p->rec, "/user/a/x/c -> none", TS_WAIT_S));
    assert_true(ts_rec_wait_for(p->rec, "/user/a/b/c/d -> none", TS_WAIT_S));
    assert_int_equal(ac_dead_letter_count(p->sys), 0);
    const char path[] = "/user/a/x";
    assert_status(ac__ext_deliver_path(p->sys, path, strlen(path), ac_msg_str_new("lost"), NULL),
                  AC_OK);
    assert_true(ts_wait_dead_letters(p->sys, 1, TS_WAIT_S));
    fx_release(p);
}

/* Locate `path` until the answer is none (a stop takes its time). */
static bool none_eventually(paths_fx *p, const char *path)
{
    char none[64];
    snprintf(none, sizeof none, "%s -> none", path);
    double end = ts_now() + TS_WAIT_S;
    while (ts_rec_index_of(p->rec, none) < 0 && ts_now() < end) {
        locate(p, path);
        ts_sleep_ms(10);
    }
    return ts_rec_index_of(p->rec, none) >= 0;
}

/* A stopped actor is no longer found at its path, nor are its children. */
static void test_locate_after_a_stop(void **state)
{
    paths_fx *p = fx_tree(*state);
    assert_status(ac_stop(p->a), AC_OK);
    assert_true(none_eventually(p, "/user/a"));
    assert_true(none_eventually(p, "/user/a/b/c"));
    fx_release(p);
}

static void test_locate_bad_input(void **state)
{
    paths_fx *p = fx_tree(*state);
    assert_status(ac__ext_locate(p->sys, "/system/x", 9, p->asker), AC_EINVAL);
    assert_status(ac__ext_locate(p->sys, "/user/", 6, p->asker), AC_EINVAL);
    assert_status(ac__ext_locate(p->sys, "/user/a", 7, NULL), AC_EINVAL);
    assert_status(ac__ext_locate(NULL, "/user/a", 7, p->asker), AC_EINVAL);
    fx_release(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_locate_top_level_and_nested),
        TS_UNIT(test_locate_missing_is_none_not_a_dead_letter),
        TS_UNIT(test_locate_after_a_stop),
        TS_UNIT(test_locate_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
