/*
 * The node program's actors (node_serve.h), spawned in a system of their
 * own: in the program's process (node_main.c), or in the tests' own
 * process when they run over the in-process transport.
 */
#include <stdio.h>
#include <string.h>

#include <actorc.h>

#include "node_serve.h"
#include "remote_test.h"

/* ---- actors ------------------------------------------------------------- */

typedef struct echo_state {
    int64_t count;
} echo_state;

static void echo_receive(ac_ctx *ctx, ac_msg *msg)
{
    echo_state *st = ac_ctx_state(ctx);
    const char *s = ac_msg_is(msg, &ac_msg_type_str) ? ac_msg_str(msg) : NULL;
    if (s && strcmp(s, "count") == 0) {
        ac_reply(ctx, ac_msg_int64_new(st->count));
        return;
    }
    st->count++;
    ac_reply(ctx, ac_msg_retain(msg));
}
static const ac_actor_def echo_def = {.name = "Echo", .state_size = sizeof(echo_state),
                                      .receive = echo_receive};

static void fail_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)msg;
    ac_reply(ctx, ac_msg_error_new(rt_aggregate_error()));
}
static const ac_actor_def fail_def = {.name = "Fail", .receive = fail_receive};

static void slow_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}
static const ac_actor_def slow_def = {.name = "Slow", .receive = slow_receive};

static void stopper_receive(ac_ctx *ctx, ac_msg *msg)
{
    const char *s = ac_msg_is(msg, &ac_msg_type_str) ? ac_msg_str(msg) : NULL;
    if (s && strcmp(s, "stop") == 0)
        ac_stop(ac_self(ctx));
    else
        ac_reply(ctx, ac_msg_retain(msg));
}
static const ac_actor_def stopper_def = {.name = "Stopper", .receive = stopper_receive};

typedef struct asker_state {
    ac_ref *reply_to;
} asker_state;

static void asker_answered(ac_ctx *ctx, const ac_answer *answer, void *user)
{
    (void)user;
    asker_state *st = ac_ctx_state(ctx);
    ac_msg *out;
    if (answer->reply && ac_msg_is(answer->reply, &ac_msg_type_str))
        out = ac_msg_printf("%s|%s", ac_msg_str(answer->reply),
                            answer->sender ? ac_ref_path(answer->sender) : "");
    else
        out = ac_msg_printf("error:%s", answer->error ? ac_error_name(answer->error) : "?");
    ac_tell(st->reply_to, out, ac_self(ctx));
    ac_ref_release(st->reply_to);
    st->reply_to = NULL;
}

static void asker_receive(ac_ctx *ctx, ac_msg *msg)
{
    asker_state *st = ac_ctx_state(ctx);
    const char *path = ac_msg_str(msg);
    ac_ref *target = path ? ac_node_resolve(ac_system_node(ac_ctx_system(ctx)), path) : NULL;
    if (!target || st->reply_to) {
        ac_reply(ctx, ac_msg_printf("error:%s", ac_last_error()));
        ac_ref_release(target);
        return;
    }
    st->reply_to = ac_ref_retain(ac_sender(ctx));
    ac_ask_in(ctx, target, ac_msg_str_new("ping"), 3000, asker_answered, NULL, NULL);
    ac_ref_release(target);
}

static void asker_stop(ac_ctx *ctx)
{
    asker_state *st = ac_ctx_state(ctx);
    ac_ref_release(st->reply_to);
}
static const ac_actor_def asker_def = {.name = "Asker", .state_size = sizeof(asker_state),
                                       .receive = asker_receive, .post_stop = asker_stop};

typedef struct watcher_state {
    ac_ref *report_to;
} watcher_state;

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    watcher_state *st = ac_ctx_state(ctx);
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ac_ref *who = ac_terminated_ref(msg);
        if (st->report_to)
            ac_tell(st->report_to,
                    ac_msg_printf("terminated %s lost=%d", ac_ref_path(who),
                                  ac_terminated_node_lost(msg) ? 1 : 0),
                    ac_self(ctx));
        return;
    }
    const char *s = ac_msg_str(msg);
    if (s && strncmp(s, "watch ", 6) == 0) {
        ac_ref *target = ac_node_resolve(ac_system_node(ac_ctx_system(ctx)), s + 6);
        if (!target) {
            ac_reply(ctx, ac_msg_printf("error:%s", ac_last_error()));
            return;
        }
        ac_ref_release(st->report_to);
        st->report_to = ac_ref_retain(ac_sender(ctx));
        ac_status w = ac_watch(ctx, target);
        ac_reply(ctx, ac_msg_printf("watching %s: %s", ac_ref_path(target), ac_status_name(w)));
        ac_ref_release(target);
    }
}

static void watcher_stop(ac_ctx *ctx)
{
    watcher_state *st = ac_ctx_state(ctx);
    ac_ref_release(st->report_to);
}
static const ac_actor_def watcher_def = {.name = "Watcher", .state_size = sizeof(watcher_state),
                                         .receive = watcher_receive, .post_stop = watcher_stop};

static void point_receive(ac_ctx *ctx, ac_msg *msg)
{
    if (!ac_msg_is(msg, &rt_point_type))
        return;
    const rt_point *p = ac_msg_data(msg);
    ac_msg *out = ac_msg_new(&rt_point_type, sizeof(rt_point));
    rt_point *q = ac_msg_payload(out);
    q->x = p->x + 1;
    q->y = p->y + 1;
    ac_reply(ctx, out);
}
static const ac_actor_def point_def = {.name = "Point", .receive = point_receive};

/* ---- spawning them ------------------------------------------------------- */

static bool spawn(ac_system *sys, ac_props *props, const char *name)
{
    ac_ref *r = ac_spawn(sys, props, name);
    if (!r) {
        fprintf(stderr, "test-node: cannot spawn %s: %s\n", name, ac_last_error());
        return false;
    }
    ac_ref_release(r);
    return true;
}

bool rt_serve(ac_system *sys, ac_node *node)
{
    ac_node_register_type(node, &rt_point_type);
    return spawn(sys, ac_props_new(&echo_def, NULL), "echo") &&
           spawn(sys, ac_router_round_robin(3, &echo_def, NULL), "pool") &&
           spawn(sys, ac_props_new(&fail_def, NULL), "fail") &&
           spawn(sys, ac_props_new(&slow_def, NULL), "slow") &&
           spawn(sys, ac_props_new(&stopper_def, NULL), "stopper") &&
           spawn(sys, ac_props_new(&asker_def, NULL), "asker") &&
           spawn(sys, ac_props_new(&watcher_def, NULL), "watcher") &&
           spawn(sys, ac_props_new(&point_def, NULL), "point");
}
