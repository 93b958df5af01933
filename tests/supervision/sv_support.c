#define _POSIX_C_SOURCE 200809L

#include "sv_support.h"

#define SV_MAGIC 0x5e1f5e1fu

typedef struct sv_state {
    uint32_t magic;
    int64_t count;
    unsigned char pad[40];
} sv_state;

static sv_node *N(ac_ctx *ctx)
{
    return ac_ctx_user_data(ctx);
}

/* ---- spawning ----------------------------------------------------------- */

static void keep_ref(sv_node *node, ac_ref *ref)
{
    int i = atomic_load(&node->nrefs);
    if (i >= SV_MAX_REFS) {
        ts_rec_add(node->w->rec, "%s too many incarnations", node->name);
        ac_ref_release(ref);
        return;
    }
    node->refs[i] = ref;
    atomic_store(&node->nrefs, i + 1);
}

static ac_props *node_props(sv_node *node)
{
    ac_props *p = ac_props_new(node->def, node);
    if (p != NULL && node->has_strategy &&
        ac_props_set_supervisor(p, &node->strategy) != AC_OK) {
        ac_props_free(p);
        return NULL;
    }
    return p;
}

static void spawn_kids(ac_ctx *ctx)
{
    sv_node *node = N(ctx);
    for (int i = 0; i < node->nkids; i++) {
        sv_node *kid = node->kids[i];
        ac_ref *r = ac_spawn_child(ctx, node_props(kid), kid->name);
        if (r == NULL) {
            ts_rec_add(node->w->rec, "%s spawn %s failed: %s", node->name, kid->name,
                       ac_status_name(ac_last_status()));
            continue;
        }
        keep_ref(kid, r);
    }
}

/* ---- the node's handlers ------------------------------------------------ */

static void node_init(ac_ctx *ctx, void *state)
{
    sv_node *node = N(ctx);
    const unsigned char *b = state;
    bool zeroed = true;
    for (size_t i = 0; i < sizeof(sv_state); i++) {
        if (b[i] != 0) {
            zeroed = false;
        }
    }
    ts_rec_add(node->w->rec, "%s init %s", node->name, zeroed ? "zeroed" : "dirty");
    sv_state *s = state;
    s->magic = SV_MAGIC;
    memset(s->pad, 0xa5, sizeof s->pad);
    atomic_fetch_add(&node->inits, 1);
}

static void node_pre_start(ac_ctx *ctx)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    ts_rec_add(w->rec, "%s pre_start", node->name);
    if (w->pre_start_fail_name != NULL && strcmp(w->pre_start_fail_name, node->name) == 0) {
        int left = atomic_load(&w->pre_start_failures);
        if (left != 0) {
            if (left > 0) {
                atomic_fetch_sub(&w->pre_start_failures, 1);
            }
            ac_fail(ctx, ac_error_new("StartError", "%s failed to start", node->name));
            return;
        }
    }
    spawn_kids(ctx);
}

static void node_post_stop(ac_ctx *ctx)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    atomic_store(&node->dl_at_post_stop, (long long)ac_dead_letter_count(w->sys));
    ts_rec_add(w->rec, "%s post_stop", node->name);
    if (w->note_post_stop_name != NULL && strcmp(w->note_post_stop_name, node->name) == 0) {
        ac_status st = ac_tell(w->note_to, ac_msg_printf("note post_stop %s", node->name), NULL);
        if (st != AC_OK) {
            ts_rec_add(w->rec, "%s note failed: %s", node->name, ac_status_name(st));
        }
    }
    if (w->block_post_stop_name != NULL && strcmp(w->block_post_stop_name, node->name) == 0 &&
        atomic_exchange(&w->block_post_stop, 0) > 0) {
        ts_gate_wait(&w->hook_gate, TS_WAIT_S);
    }
}

static void node_pre_restart(ac_ctx *ctx, const ac_error *cause, ac_msg *msg)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    const char *m = "none";
    if (msg != NULL) {
        m = ac_msg_is(msg, &ac_msg_type_str) ? ac_msg_str(msg) : ac_msg_type_name(msg);
    }
    ts_rec_add(w->rec, "%s pre_restart %s [%s]", node->name, ac_error_name(cause), m);
    if (atomic_exchange(&w->block_pre_restart, 0) > 0) {
        ts_gate_wait(&w->hook_gate, TS_WAIT_S);
    }
}

static void node_post_restart(ac_ctx *ctx, const ac_error *cause)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    ts_rec_add(w->rec, "%s post_restart %s", node->name, ac_error_name(cause));
    if (atomic_exchange(&w->block_post_restart, 0) > 0) {
        ts_gate_wait(&w->hook_gate, TS_WAIT_S);
    }
    spawn_kids(ctx); /* what the default (pre_start) would do */
}

static void fail_with(ac_ctx *ctx, const char *err_name)
{
    sv_node *node = N(ctx);
    ac_status st = ac_fail(ctx, ac_error_new(err_name, "%s failed on purpose", node->name));
    if (st != AC_OK) {
        ts_rec_add(node->w->rec, "%s ac_fail returned %s", node->name, ac_status_name(st));
    }
}

static void probe_children(ac_ctx *ctx, sv_node *node)
{
    for (int i = 0; i < node->nkids; i++) {
        sv_node *kid = node->kids[i];
        ac_ref *r = ac_child(ctx, kid->name);
        int n = atomic_load(&kid->nrefs);
        const char *what = "unknown";
        const char *path = "";
        if (r == NULL) {
            what = "missing";
        } else if (n > 0) {
            if (r == kid->refs[n - 1]) {
                what = n == 1 ? "first" : "new";
            } else if (r == kid->refs[0]) {
                what = "old";
            }
            path = strcmp(ac_ref_path(r), ac_ref_path(kid->refs[0])) == 0 ? " same_path"
                                                                         : " other_path";
        }
        ts_rec_add(node->w->rec, "%s child %s %s%s", node->name, kid->name, what, path);
    }
}

/* "<cmd> <word>": the word, when text starts with cmd (which ends in a space). */
static bool arg1(const char *text, const char *cmd, char out[64])
{
    size_t n = strlen(cmd);
    return strncmp(text, cmd, n) == 0 && sscanf(text + n, "%63s", out) == 1;
}

static void node_receive(ac_ctx *ctx, ac_msg *msg)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    sv_state *s = ac_ctx_state(ctx);
    const char *text = ac_msg_str(msg);
    char a[64] = "", b[64] = "";
    long long v = 0;
    if (text == NULL) {
        ts_rec_add(w->rec, "%s unexpected %s", node->name, ac_msg_type_name(msg));
        return;
    }
    if (s->magic != SV_MAGIC) {
        ts_rec_add(w->rec, "%s state not initialised", node->name);
    }
    if (strcmp(text, "inc") == 0) {
        s->count++;
        ts_rec_add(w->rec, "%s recv %lld", node->name, (long long)s->count);
    } else if (arg1(text, "fail ", a)) {
        ts_rec_add(w->rec, "%s saw fail %s", node->name, a);
        fail_with(ctx, a);
    } else if (arg1(text, "block_fail ", a)) {
        ts_rec_add(w->rec, "%s saw fail %s", node->name, a);
        ts_gate_wait(&w->gate, TS_WAIT_S);
        fail_with(ctx, a);
    } else if (strncmp(text, "seq ", 4) == 0 && sscanf(text + 4, "%lld", &v) == 1) {
        long long n = atomic_load(&w->nseq);
        if (n < SV_SEQ_MAX) {
            w->seq[n] = v;
            w->seq_gen[n] = atomic_load(&node->inits);
            atomic_store(&w->nseq, n + 1);
        }
    } else if (strcmp(text, "probe_children") == 0) {
        probe_children(ctx, node);
    } else if (strcmp(text, "children") == 0) {
        ts_rec_add(w->rec, "%s children %zu", node->name, ac_children(ctx, NULL, 0));
    } else if (strcmp(text, "bad_fail") == 0) {
        ac_status st1 = ac_fail(ctx, NULL);
        ac_status st2 = ac_fail(NULL, ac_error_new("OrphanError", "never reported"));
        ts_rec_add(w->rec, "%s bad_fail %s %s", node->name, ac_status_name(st1),
                   ac_status_name(st2));
    } else if (strncmp(text, "fail_twice ", 11) == 0 && sscanf(text + 11, "%63s %63s", a, b) == 2) {
        ts_rec_add(w->rec, "%s saw fail_twice", node->name);
        fail_with(ctx, a);
        ac_fail(ctx, ac_error_new(b, "%s failed again", node->name));
    } else {
        ts_rec_add(w->rec, "%s unknown command %s", node->name, text);
    }
}

const ac_actor_def sv_plain_def = {
    .name = "SvPlain",
    .state_size = sizeof(sv_state),
    .init = node_init,
    .pre_start = node_pre_start,
    .receive = node_receive,
    .post_stop = node_post_stop,
};

const ac_actor_def sv_full_def = {
    .name = "SvFull",
    .state_size = sizeof(sv_state),
    .init = node_init,
    .pre_start = node_pre_start,
    .receive = node_receive,
    .post_stop = node_post_stop,
    .pre_restart = node_pre_restart,
    .post_restart = node_post_restart,
};

const ac_actor_def sv_pre_only_def = {
    .name = "SvPreOnly",
    .state_size = sizeof(sv_state),
    .init = node_init,
    .pre_start = node_pre_start,
    .receive = node_receive,
    .post_stop = node_post_stop,
    .pre_restart = node_pre_restart,
};

const ac_actor_def sv_post_only_def = {
    .name = "SvPostOnly",
    .state_size = sizeof(sv_state),
    .init = node_init,
    .pre_start = node_pre_start,
    .receive = node_receive,
    .post_stop = node_post_stop,
    .post_restart = node_post_restart,
};

/* ---- watcher ------------------------------------------------------------- */

static void watcher_receive(ac_ctx *ctx, ac_msg *msg)
{
    sv_node *node = N(ctx);
    sv_world *w = node->w;
    if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ts_rec_add(w->rec, "%s terminated %s", node->name, ac_ref_name(ac_terminated_ref(msg)));
    } else if (ac_msg_is(msg, &ac_msg_type_dead_letter)) {
        ac_msg *inner = ac_dead_letter_msg(msg);
        const char *m = ac_msg_is(inner, &ac_msg_type_str) ? ac_msg_str(inner)
                                                            : ac_msg_type_name(inner);
        ts_rec_add(w->rec, "%s dead letter %s [%s]", node->name,
                   ac_ref_name(ac_dead_letter_recipient(msg)), m);
    } else if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), "watch") == 0) {
        ac_status st = ac_watch(ctx, w->watch_target);
        ts_rec_add(w->rec, "%s watching %s %s", node->name, ac_ref_name(w->watch_target),
                   ac_status_name(st));
    } else if (ac_msg_is(msg, &ac_msg_type_str) && strncmp(ac_msg_str(msg), "note ", 5) == 0) {
        ts_rec_add(w->rec, "%s %s", node->name, ac_msg_str(msg));
    } else if (ac_msg_is(msg, &ac_msg_type_str) && strcmp(ac_msg_str(msg), "subscribe") == 0) {
        ac_status st = ac_dead_letters_subscribe(ac_ctx_system(ctx), ac_self(ctx));
        ts_rec_add(w->rec, "%s subscribed %s", node->name, ac_status_name(st));
    } else {
        ts_rec_add(w->rec, "%s unexpected %s", node->name, ac_msg_type_name(msg));
    }
}

const ac_actor_def sv_watcher_def = {.name = "SvWatcher", .receive = watcher_receive};

/* ---- decider ------------------------------------------------------------- */

ac_directive sv_decide_by_name(const ac_error *cause, ac_ref *child, void *user)
{
    sv_node *parent = user;
    ts_rec_add(parent->w->rec, "%s decide %s %s: %s", parent->name, ac_ref_name(child),
               ac_error_name(cause), ac_error_message(cause));
    if (ac_error_is(cause, "ResumeError")) {
        return AC_RESUME;
    }
    if (ac_error_is(cause, "StopError")) {
        return AC_STOP;
    }
    if (ac_error_is(cause, "EscalateError")) {
        return AC_ESCALATE;
    }
    return AC_RESTART;
}

/* ---- world --------------------------------------------------------------- */

sv_world *sv_world_new(ts_fixture *fx, const char *sys_name, bool manual_clock)
{
    sv_world *w = ts_fx_data(fx, sizeof *w, NULL);
    w->rec = ts_fx_rec(fx);
    w->log = ts_fx_log(fx);
    ts_gate_init(&w->gate);
    ts_gate_init(&w->hook_gate);
    ac_system_options o = {
        .log_level = AC_LOG_INFO,
        .log_sink = ts_log_sink,
        .log_sink_user = w->log,
        .manual_clock = manual_clock,
    };
    w->sys = ts_fx_system(fx, sys_name, &o);
    assert_non_null(w->sys);
    return w;
}

sv_node *sv_node_add(sv_world *w, const char *name, const ac_actor_def *def,
                     const ac_supervisor_strategy *strategy, sv_node *parent)
{
    assert_true(w->nnodes < SV_MAX_NODES);
    sv_node *n = &w->nodes[w->nnodes++];
    n->w = w;
    n->name = name;
    n->def = def;
    if (strategy != NULL) {
        n->has_strategy = true;
        n->strategy = *strategy;
        if (n->strategy.decider == sv_decide_by_name && n->strategy.decider_user == NULL) {
            n->strategy.decider_user = n;
        }
    }
    if (parent != NULL) {
        assert_true(parent->nkids < SV_MAX_KIDS);
        parent->kids[parent->nkids++] = n;
    }
    return n;
}

ac_ref *sv_spawn(sv_node *node)
{
    ac_props *p = node_props(node);
    assert_non_null(p);
    ac_ref *r = ac_spawn(node->w->sys, p, node->name);
    if (r == NULL) {
        fail_msg("ac_spawn(%s): %s (%s)", node->name, ac_status_name(ac_last_status()),
                 ac_last_error());
    }
    keep_ref(node, r);
    return r;
}

ac_ref *sv_ref(sv_node *node)
{
    int n = atomic_load(&node->nrefs);
    return n > 0 ? node->refs[n - 1] : NULL;
}

ac_ref *sv_ref_at(sv_node *node, int i)
{
    return i < atomic_load(&node->nrefs) ? node->refs[i] : NULL;
}

typedef struct spawned_goal {
    sv_node *node;
    int n;
} spawned_goal;

static bool spawned_enough(void *arg)
{
    spawned_goal *g = arg;
    return atomic_load(&g->node->nrefs) >= g->n;
}

ac_ref *sv_wait_spawned(sv_node *node, int n)
{
    spawned_goal g = {node, n};
    if (!ts_wait_until(spawned_enough, &g, TS_WAIT_S)) {
        ts_rec_dump(node->w->rec, "events");
        fail_msg("timed out waiting for %s to be spawned %d times (%d so far)", node->name, n,
                 atomic_load(&node->nrefs));
    }
    return sv_ref(node);
}

void sv_world_release_refs(sv_world *w)
{
    for (int i = 0; i < w->nnodes; i++) {
        sv_node *n = &w->nodes[i];
        int k = atomic_exchange(&n->nrefs, 0);
        for (int j = 0; j < k; j++) {
            ac_ref_release(n->refs[j]);
            n->refs[j] = NULL;
        }
    }
}

/* ---- checks -------------------------------------------------------------- */

void sv_tell(ac_ref *to, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    assert_non_null(to);
    assert_status(ac_tell(to, ac_msg_str_new(buf), NULL), AC_OK);
}

void sv_wait_event(sv_world *w, const char *label, size_t n)
{
    if (!ts_rec_wait_count_of(w->rec, label, n, TS_WAIT_S)) {
        ts_rec_dump(w->rec, "events");
        ts_log_dump(w->log, "log");
        fail_msg("timed out waiting for \"%s\" x%zu (seen %zu)", label, n,
                 ts_rec_count_of(w->rec, label));
    }
}

long sv_index_nth(sv_world *w, const char *label, size_t n)
{
    char buf[TS_REC_LABEL];
    size_t seen = 0;
    size_t total = ts_rec_count(w->rec);
    for (size_t i = 0; i < total; i++) {
        ts_rec_get(w->rec, i, buf, sizeof buf);
        if (strcmp(buf, label) == 0 && ++seen == n) {
            return (long)i;
        }
    }
    return -1;
}

void sv_assert_events(sv_world *w, const char *name, const char *const *expected)
{
    char buf[TS_REC_LABEL];
    char prefix[TS_REC_LABEL];
    snprintf(prefix, sizeof prefix, "%s ", name);
    size_t plen = strlen(prefix);
    size_t total = ts_rec_count(w->rec);
    size_t k = 0;
    bool ok = true;
    char first_diff[3 * TS_REC_LABEL] = "";
    for (size_t i = 0; i < total; i++) {
        ts_rec_get(w->rec, i, buf, sizeof buf);
        if (strncmp(buf, prefix, plen) != 0) {
            continue;
        }
        const char *ev = buf + plen;
        if (expected[k] == NULL || strcmp(expected[k], ev) != 0) {
            if (ok) {
                snprintf(first_diff, sizeof first_diff, "event %zu of %s: got \"%s\", expected \"%s\"",
                         k, name, ev, expected[k] ? expected[k] : "(no more events)");
            }
            ok = false;
        }
        if (expected[k] != NULL) {
            k++;
        }
    }
    if (ok && expected[k] != NULL) {
        snprintf(first_diff, sizeof first_diff, "event %zu of %s: missing, expected \"%s\"", k,
                 name, expected[k]);
        ok = false;
    }
    if (!ok) {
        ts_rec_dump(w->rec, "events");
        fail_msg("%s", first_diff);
    }
}

size_t sv_count(sv_world *w, const char *name, const char *event)
{
    char label[TS_REC_LABEL];
    snprintf(label, sizeof label, "%s %s", name, event);
    return ts_rec_count_of(w->rec, label);
}

void sv_wait_children(sv_world *w, sv_node *node, int n)
{
    char label[TS_REC_LABEL];
    snprintf(label, sizeof label, "%s children %d", node->name, n);
    double deadline = ts_now() + TS_WAIT_S;
    do {
        sv_tell(sv_ref(node), "children");
        if (ts_rec_wait_for(w->rec, label, 0.05)) {
            return;
        }
    } while (ts_now() < deadline);
    ts_rec_dump(w->rec, "events");
    fail_msg("timed out waiting for \"%s\"", label);
}
