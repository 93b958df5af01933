#define _POSIX_C_SOURCE 200809L

#include "sg_support.h"

/* ---- the counted message ------------------------------------------------ */

atomic_llong sg_created, sg_destroyed;

static void sg_key_destroy(void *payload, size_t size)
{
    (void)payload;
    (void)size;
    atomic_fetch_add(&sg_destroyed, 1);
}

const ac_msg_type sg_key_type = {.name = "test.SgKey", .destroy = sg_key_destroy};

ac_msg *sg_key_new(const char *text, int64_t n)
{
    ac_msg *m = ac_msg_new(&sg_key_type, sizeof(sg_key));
    if (m == NULL) {
        abort();
    }
    sg_key *k = ac_msg_payload(m);
    snprintf(k->text, sizeof k->text, "%s", text);
    k->n = n;
    atomic_fetch_add(&sg_created, 1);
    return m;
}

const char *sg_key_text(const ac_msg *msg)
{
    if (!ac_msg_is(msg, &sg_key_type)) {
        return NULL;
    }
    return ((const sg_key *)ac_msg_data(msg))->text;
}

int64_t sg_key_n(const ac_msg *msg)
{
    if (!ac_msg_is(msg, &sg_key_type)) {
        return -1;
    }
    return ((const sg_key *)ac_msg_data(msg))->n;
}

void sg_reply_text(char *buf, size_t cap, int k, const char *key)
{
    snprintf(buf, cap, "routee-%d:%s", k, key);
}

int sg_routee_index(const ac_ref *ref)
{
    int k = 0;
    char tail;
    if (ref == NULL || sscanf(ac_ref_name(ref), "routee-%d%c", &k, &tail) != 1) {
        return 0;
    }
    return k;
}

/* ---- the routee ----------------------------------------------------------- */

/* A delayed reply: scheduled by a routee to itself, with the request's
 * sender kept as the scheduled message's sender. */
typedef struct sg_later {
    char key[64];
    int64_t n;
    bool error;
} sg_later;

static const ac_msg_type sg_later_type = {.name = "test.SgLater"};

typedef struct routee_state {
    int k;
    int gen;
} routee_state;

static void routee_pre_start(ac_ctx *ctx)
{
    sg_data *d = ac_ctx_user_data(ctx);
    routee_state *st = ac_ctx_state(ctx);
    st->k = sg_routee_index(ac_self(ctx));
    if (st->k < 1 || st->k > SG_MAX) {
        atomic_fetch_add(&d->bad, 1);
        ts_rec_add(d->rec, "unexpected routee name %s", ac_self_name(ctx));
        st->k = 0;
        return;
    }
    /* only this routee's own incarnations touch next_gen[k], one at a time */
    long long gen = atomic_fetch_add(&d->next_gen[st->k], 1);
    st->gen = gen < SG_GENS ? (int)gen : SG_GENS - 1;
    if (gen < SG_GENS) {
        atomic_store(&d->refs[st->k][gen], ac_ref_retain(ac_self(ctx)));
    }
    ts_rec_add(d->rec, "start %s gen %lld", ac_self_name(ctx), gen);
    /* counted last: a test that saw the count sees the ref */
    atomic_fetch_add(&d->starts[st->k], 1);
}

static void routee_reply(ac_ctx *ctx, sg_data *d, int k, const char *key, int64_t n, bool error)
{
    ac_msg *m;
    if (error) {
        m = ac_msg_error_new(ac_error_new("RouteeError", "routee-%d failed on %s", k, key));
    } else {
        char text[64];
        sg_reply_text(text, sizeof text, k, key);
        m = sg_key_new(text, n * 16 + k);
    }
    if (ac_reply(ctx, m) != AC_OK) {
        atomic_fetch_add(&d->bad, 1);
    }
    atomic_fetch_add(&d->replies[k], 1);
}

/* A RouteeError on top of a chain of causes, AC_ERROR_MAX_DEPTH deep. */
static void routee_reply_deep(ac_ctx *ctx, sg_data *d, int k, const char *key)
{
    ac_error *e = ac_error_new("RootCause", "at the bottom");
    for (int level = 2; e != NULL && level < AC_ERROR_MAX_DEPTH; level++) {
        ac_error *next = ac_error_new_caused("Wrapped", e, "level %d", level);
        ac_error_release(e);
        e = next;
    }
    ac_error *top = ac_error_new_caused("RouteeError", e, "routee-%d failed on %s", k, key);
    ac_error_release(e);
    if (ac_error_depth(top) != AC_ERROR_MAX_DEPTH) {
        atomic_fetch_add(&d->bad, 1);
        ac_error_release(top);
    } else if (ac_reply(ctx, ac_msg_error_new(top)) != AC_OK) {
        atomic_fetch_add(&d->bad, 1);
    }
    atomic_fetch_add(&d->replies[k], 1);
}

static void routee_later(ac_ctx *ctx, sg_data *d, const char *key, int64_t n, bool error,
                         int64_t delay_ms)
{
    ac_msg *m = ac_msg_new(&sg_later_type, sizeof(sg_later));
    if (m == NULL) {
        abort();
    }
    sg_later *l = ac_msg_payload(m);
    snprintf(l->key, sizeof l->key, "%s", key);
    l->n = n;
    l->error = error;
    ac_cancellable *c = ac_schedule_once(ac_self(ctx), delay_ms, m, ac_sender(ctx));
    if (c == NULL) {
        atomic_fetch_add(&d->bad, 1);
        return;
    }
    ac_cancellable_release(c);
}

static void routee_receive(ac_ctx *ctx, ac_msg *msg)
{
    sg_data *d = ac_ctx_user_data(ctx);
    routee_state *st = ac_ctx_state(ctx);
    int k = st->k;
    if (k == 0) {
        return;
    }
    if (ac_msg_is(msg, &sg_later_type)) {
        const sg_later *l = ac_msg_data(msg);
        routee_reply(ctx, d, k, l->key, l->n, l->error);
        return;
    }
    const char *key = sg_key_text(msg);
    if (key == NULL) {
        atomic_fetch_add(&d->bad, 1);
        ts_rec_add(d->rec, "routee-%d got a %s", k, ac_msg_type_name(msg));
        return;
    }
    if (strcmp(key, SG_BOOM) == 0) {
        ac_fail(ctx, ac_error_new("Boom", "%s was told to fail", ac_self_path(ctx)));
        return;
    }
    ac_ref *sender = ac_sender(ctx);
    if (sender == NULL) {
        atomic_fetch_add(&d->no_sender, 1);
    } else if (sender == ac_parent(ctx)) {
        atomic_fetch_add(&d->router_sender, 1);
    } else if (sender == atomic_load(&d->caller)) {
        /* the caller itself, not a reply ref of the router */
        atomic_fetch_add(&d->bad, 1);
        ts_rec_add(d->rec, "routee-%d: request from the caller itself", k);
    }
    int64_t n = sg_key_n(msg);
    sg_beh beh = (sg_beh)atomic_load(&d->beh[k]);
    if (strncmp(key, SG_STALL, strlen(SG_STALL)) == 0) {
        beh = SG_SILENT; /* nobody answers these */
    }
    switch (beh) {
    case SG_ECHO:
        routee_reply(ctx, d, k, key, n, false);
        break;
    case SG_SILENT:
        break;
    case SG_ERROR:
        routee_reply(ctx, d, k, key, n, true);
        break;
    case SG_LATER:
        routee_later(ctx, d, key, n, false, atomic_load(&d->delay_ms[k]));
        break;
    case SG_ERROR_LATER:
        routee_later(ctx, d, key, n, true, atomic_load(&d->delay_ms[k]));
        break;
    case SG_FAIL:
        ac_fail(ctx, ac_error_new("Boom", "routee-%d failed its handler on %s", k, key));
        break;
    case SG_ERROR_DEEP:
        routee_reply_deep(ctx, d, k, key);
        break;
    }
    /* counted once handled: a test that saw the count may move the manual
     * clock, and a delayed reply's schedule is armed by then */
    atomic_fetch_add(&d->seen_gen[k][st->gen], 1);
    atomic_fetch_add(&d->seen[k], 1);
}

const ac_actor_def sg_routee_def = {
    .name = "Replica",
    .state_size = sizeof(routee_state),
    .pre_start = routee_pre_start,
    .receive = routee_receive,
};

/* ---- the caller ------------------------------------------------------------ */

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void record_answer(ac_ctx *ctx, sg_data *d, const ac_answer *a)
{
    atomic_store(&d->ask_reply, ac_msg_retain(a->reply));
    atomic_store(&d->ask_error, ac_error_retain(a->error));
    atomic_store(&d->ask_sender, ac_ref_retain(a->sender));
    atomic_store(&d->ask_ctx_sender, ac_ref_retain(ac_sender(ctx)));
    atomic_fetch_add(&d->asks_done, 1);
}

static void on_answer(ac_ctx *ctx, const ac_answer *a, void *user)
{
    record_answer(ctx, user, a);
}

static void caller_pre_start(ac_ctx *ctx)
{
    sg_data *d = ac_ctx_user_data(ctx);
    atomic_store(&d->caller, ac_self(ctx));
}

static void caller_receive(ac_ctx *ctx, ac_msg *msg)
{
    sg_data *d = ac_ctx_user_data(ctx);
    ac_ref *router = atomic_load(&d->router);
    const char *t = sg_key_text(msg);
    if (t != NULL && ac_sender(ctx) == NULL) {
        if (has_prefix(t, SG_CMD_TELL)) {
            ac_tell(router, sg_key_new(t + strlen(SG_CMD_TELL), 0), ac_self(ctx));
            return;
        }
        if (has_prefix(t, SG_CMD_TELL_NOSENDER)) {
            ac_tell(router, sg_key_new(t + strlen(SG_CMD_TELL_NOSENDER), 0), NULL);
            return;
        }
        if (has_prefix(t, SG_CMD_ASK_IN)) {
            ac_status st = ac_ask_in(ctx, router, sg_key_new(t + strlen(SG_CMD_ASK_IN), 0), 0,
                                     on_answer, d, NULL);
            atomic_store(&d->ask_status, (int)st);
            return;
        }
        if (has_prefix(t, SG_CMD_ASK_MSG)) {
            ac_status st = ac_ask_in(ctx, router, sg_key_new(t + strlen(SG_CMD_ASK_MSG), 0), 0,
                                     NULL, NULL, NULL);
            atomic_store(&d->ask_status, (int)st);
            return;
        }
    }
    if (ac_msg_is(msg, &ac_msg_type_answer)) {
        record_answer(ctx, d, ac_answer_of(msg));
        return;
    }
    ac_ref *sender = ac_sender(ctx);
    if (atomic_fetch_add(&d->caller_got, 1) == 0) {
        atomic_store(&d->caller_first, ac_msg_retain(msg));
        atomic_store(&d->caller_first_sender, ac_ref_retain(sender));
    }
    ac_error *err = ac_msg_is(msg, &ac_msg_type_error) ? ac_msg_error(msg) : NULL;
    ts_rec_add(d->rec, "caller got %s from %s", err ? ac_error_name(err) : t ? t : "?",
               sender ? ac_ref_name(sender) : "nobody");
}

const ac_actor_def sg_caller_def = {
    .name = "Caller",
    .pre_start = caller_pre_start,
    .receive = caller_receive,
};

/* ---- the parent of a router ------------------------------------------------ */

static void parent_pre_start(ac_ctx *ctx)
{
    sg_data *d = ac_ctx_user_data(ctx);
    ac_routee_options ro = {.user_data = d, .supervisor = d->routee_sup};
    ac_props *p = ac_router_scatter_gather_first_completed(d->size, &sg_routee_def, &d->opts, &ro);
    ac_ref *r = p ? ac_spawn_child(ctx, p, "replicas") : NULL;
    if (r == NULL) {
        atomic_fetch_add(&d->bad, 1);
        ts_rec_add(d->rec, "parent could not spawn the router: %s", ac_last_error());
        return;
    }
    atomic_store(&d->router, r); /* the spawn's reference; the system frees it */
}

static void parent_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

const ac_actor_def sg_parent_def = {
    .name = "Parent",
    .pre_start = parent_pre_start,
    .receive = parent_receive,
};

/* ---- set-up -------------------------------------------------------------- */

static void sg_data_free(void *p)
{
    /* The system is gone: refs went with it; messages and errors did not. */
    sg_data *d = p;
    ac_msg_release(atomic_load(&d->caller_first));
    ac_msg_release(atomic_load(&d->ask_reply));
    ac_error_release(atomic_load(&d->ask_error));
}

sg_data *sg_setup(ts_fixture *fx, const char *name, bool manual)
{
    return sg_setup_workers(fx, name, manual, 0);
}

sg_data *sg_setup_workers(ts_fixture *fx, const char *name, bool manual, int workers)
{
    sg_data *d = ts_fx_data(fx, sizeof *d, sg_data_free);
    d->rec = ts_fx_rec(fx);
    ac_system_options o = {
        .workers = workers, .manual_clock = manual, .log_level = AC_LOG_DEBUG};
    d->sys = ts_fx_system(fx, name, &o);
    assert_non_null(d->sys);
    atomic_store(&sg_created, 0);
    atomic_store(&sg_destroyed, 0);
    return d;
}

void sg_set(sg_data *d, int k, sg_beh beh, int64_t delay_ms)
{
    atomic_store(&d->beh[k], (int)beh);
    atomic_store(&d->delay_ms[k], delay_ms);
}

static void wait_started(sg_data *d, int size, long long starts)
{
    for (int k = 1; k <= size; k++) {
        if (!ts_wait_ge(&d->starts[k], starts, TS_WAIT_S)) {
            ts_rec_dump(d->rec, "events");
            fail_msg("routee-%d started %lld times, expected %lld", k,
                     (long long)atomic_load(&d->starts[k]), starts);
        }
    }
}

ac_ref *sg_spawn_pool(sg_data *d, int size, const ac_scatter_gather_options *opts)
{
    ac_routee_options ro = {.user_data = d};
    ac_props *p = ac_router_scatter_gather_first_completed(size, &sg_routee_def, opts, &ro);
    if (p == NULL) {
        fail_msg("factory: %s (%s)", ac_status_name(ac_last_status()), ac_last_error());
    }
    ac_ref *r = ac_spawn(d->sys, p, "replicas");
    if (r == NULL) {
        fail_msg("spawn: %s (%s)", ac_status_name(ac_last_status()), ac_last_error());
    }
    atomic_store(&d->router, r);
    wait_started(d, size, 1);
    return r;
}

void sg_wait_seen(sg_data *d, int k, long long n)
{
    if (!ts_wait_ge(&d->seen[k], n, TS_WAIT_S)) {
        ts_rec_dump(d->rec, "events");
        fail_msg("routee-%d saw %lld requests, expected %lld", k,
                 (long long)atomic_load(&d->seen[k]), n);
    }
}

void sg_wait_seen_all(sg_data *d, int size, long long n)
{
    for (int k = 1; k <= size; k++) {
        sg_wait_seen(d, k, n);
    }
}

void sg_caller_cmd(sg_data *d, const char *prefix, const char *key)
{
    char text[64];
    snprintf(text, sizeof text, "%s%s", prefix, key);
    assert_status(ac_tell(atomic_load(&d->caller), sg_key_new(text, 0), NULL), AC_OK);
}

ac_ref *sg_spawn_caller(sg_data *d, ac_ref *router)
{
    atomic_store(&d->router, router);
    ac_ref *c = ts_spawn(d->sys, &sg_caller_def, d, "caller");
    assert_non_null(c);
    /* pre_start publishes the caller's ref; wait for it so that routees
     * can tell the caller from a reply ref */
    for (double end = ts_now() + TS_WAIT_S; atomic_load(&d->caller) == NULL;) {
        if (ts_now() > end) {
            fail_msg("the caller did not start");
        }
        ts_sleep_ms(1);
    }
    return c;
}

/* ---- checks ------------------------------------------------------------------ */

ac_status sg_wait_future(ac_future *f, ac_answer *a)
{
    assert_non_null(f);
    ac_status st = ac_future_wait(f, SG_WAIT_MS, a);
    if (st == AC_EPENDING) {
        fail_msg("the ask was not answered within %.0f s", TS_WAIT_S);
    }
    return st;
}

ac_status sg_wait_future_until(ac_future *f, ac_answer *a, double deadline)
{
    assert_non_null(f);
    double left = deadline - ts_now();
    ac_status st = ac_future_wait(f, left > 0 ? (int64_t)(left * 1000) : 0, a);
    if (st == AC_EPENDING) {
        fail_msg("the ask was not answered in time");
    }
    return st;
}

void sg_assert_pending(ac_future *f, const char *what)
{
    ac_answer a = {0};
    if (ac_future_poll(f, &a)) {
        char *e = ac_error_to_string(a.error);
        fail_msg("%s: expected the ask to be still open, but it settled (%s; reply %s)", what,
                 e ? e : "no error", ac_msg_type_name(a.reply));
    }
}

void sg_assert_seen_exactly(sg_data *d, int k, long long seen)
{
    ac_answer a;
    ac_status st = ac_ask_wait(atomic_load(&d->refs[k][0]), sg_key_new("barrier", 0), SG_WAIT_MS,
                               &a);
    ac_answer_release(&a);
    assert_status(st, AC_OK);
    /* counted just after the reply: wait for it, then it must be exact */
    if (!ts_wait_ge(&d->seen[k], seen, TS_WAIT_S) || atomic_load(&d->seen[k]) != seen) {
        fail_msg("routee-%d saw %lld requests, expected %lld", k,
                 (long long)atomic_load(&d->seen[k]), seen);
    }
}

void sg_assert_aggregate(ac_status st, const ac_answer *a, const char *message, size_t members)
{
    if (a->error == NULL) {
        fail_msg("expected an AggregateError \"%s\", got %s with a %s reply (%s)", message,
                 ac_status_name(st), ac_msg_type_name(a->reply),
                 sg_key_text(a->reply) ? sg_key_text(a->reply) : "");
    }
    if (st != AC_EFAILED || !ac_error_is(a->error, AC_AGGREGATE_ERROR) ||
        strcmp(ac_error_message(a->error), message) != 0 ||
        ac_error_member_count(a->error) != members || a->reply != NULL) {
        char *e = ac_error_to_string(a->error);
        fail_msg("expected %s with AggregateError \"%s\" and %zu members;\n got %s with:\n%s",
                 ac_status_name(AC_EFAILED), message, members, ac_status_name(st),
                 e ? e : "(no text)");
    }
}

void sg_assert_reply_from(sg_data *d, ac_status st, const ac_answer *a, int k, int gen,
                          const char *key)
{
    char expected[64];
    sg_reply_text(expected, sizeof expected, k, key);
    if (st != AC_OK || a->reply == NULL) {
        char *e = ac_error_to_string(a->error);
        fail_msg("expected the reply \"%s\", got %s: %s", expected, ac_status_name(st),
                 e ? e : "(no error)");
    }
    const char *got = sg_key_text(a->reply);
    if (got == NULL || strcmp(got, expected) != 0) {
        fail_msg("expected the reply \"%s\", got \"%s\"", expected, got ? got : ac_msg_type_name(a->reply));
    }
    ac_ref *want = atomic_load(&d->refs[k][gen]);
    if (a->sender != want) {
        fail_msg("the reply's sender is %s, expected routee-%d (%s)",
                 a->sender ? ac_ref_path(a->sender) : "NULL", k, want ? ac_ref_path(want) : "?");
    }
}

void sg_assert_routees_ok(sg_data *d)
{
    if (atomic_load(&d->no_sender) != 0 || atomic_load(&d->router_sender) != 0 ||
        atomic_load(&d->bad) != 0) {
        ts_rec_dump(d->rec, "events");
        fail_msg("routees saw %lld requests without a sender, %lld with the router as sender, "
                 "%lld other problems",
                 (long long)atomic_load(&d->no_sender), (long long)atomic_load(&d->router_sender),
                 (long long)atomic_load(&d->bad));
    }
}
