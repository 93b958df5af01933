/*
 * Logging: a custom sink gets whole lines with the level, the system name
 * and, for lines logged by an actor, the actor's path; levels filter; the
 * ACTORC_LOG_LEVEL environment variable applies when the options leave the
 * level at AC_LOG_DEFAULT; dead-letter lines are rate limited or off.
 */
#define _POSIX_C_SOURCE 200809L

#include <strings.h>

#include "ts_test.h"

typedef struct lg_data {
    ts_recorder *rec;
    atomic_llong done;
} lg_data;

static void lg_receive(ac_ctx *ctx, ac_msg *msg)
{
    lg_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    ts_rec_add(d->rec, "path %s", ac_self_path(ctx));
    ac_log_debug(ctx, "marker-debug %d", 1);
    ac_log_info(ctx, "marker-info %d", 2);
    ac_log_warn(ctx, "marker-warn %s", "three");
    ac_log_error(ctx, "marker-error %d", 4);
    atomic_fetch_add(&d->done, 1);
}

static void lg_logv(ac_ctx *ctx, const char *fmt, ...) AC_PRINTF(2, 3);
static void lg_logv(ac_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_logv(ctx, AC_LOG_WARN, fmt, ap);
    va_end(ap);
}

static void lg_pre_start(ac_ctx *ctx)
{
    lg_logv(ctx, "marker-logv %s=%d", "x", 5);
}

static const ac_actor_def lg_def = {
    .name = "Logger", .pre_start = lg_pre_start, .receive = lg_receive,
};

/* The single captured line containing `needle`; fails unless exactly one. */
static void get_line(ts_log_capture *c, const char *needle, ts_log_line *out)
{
    if (ts_log_count_text(c, needle) != 1) {
        ts_log_dump(c, "captured");
        fail_msg("expected exactly one line with \"%s\", got %zu", needle,
                 ts_log_count_text(c, needle));
    }
    long i = ts_log_find_text(c, needle);
    assert_true(ts_log_get(c, (size_t)i, out));
}

static void run_actor(ts_fixture *fx, lg_data *d, ac_system *sys)
{
    ac_ref *a = ts_spawn(sys, &lg_def, d, "logger");
    assert_non_null(a);
    assert_status(ac_tell(a, ac_msg_int64_new(1), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->done, 1, TS_WAIT_S), "actor logged");
    ac_ref_release(a);
    (void)fx;
}

static void test_sink_gets_actor_lines(void **state)
{
    ts_fixture *fx = *state;
    lg_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_level = AC_LOG_DEBUG, .log_sink = ts_log_sink,
                           .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "logsys", &o);
    assert_non_null(sys);
    run_actor(fx, d, sys);
    /* the actor saw this path */
    assert_true(ts_rec_index_of(d->rec, "path actorc://logsys/user/logger") >= 0);

    /* lines are delivered synchronously on the logging thread, but allow
     * an asynchronous sink too */
    assert_eventually(ts_log_wait_text(cap, "marker-error 4", TS_WAIT_S), "error line");

    static const struct {
        const char *text;
        ac_log_level level;
    } want[] = {
        {"marker-debug 1", AC_LOG_DEBUG},
        {"marker-info 2", AC_LOG_INFO},
        {"marker-warn three", AC_LOG_WARN},
        {"marker-error 4", AC_LOG_ERROR},
        {"marker-logv x=5", AC_LOG_WARN},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ts_log_line l;
        get_line(cap, want[i].text, &l);
        assert_int_equal(l.level, want[i].level);
        assert_non_null(l.system_name);
        assert_string_equal(l.system_name, "logsys");
        assert_non_null(l.path);
        assert_string_equal(l.path, "actorc://logsys/user/logger");
        /* the text is the formatted message (possibly decorated), without a
         * trailing newline */
        size_t n = strlen(l.text);
        assert_true(n > 0);
        assert_true(l.text[n - 1] != '\n');
        ts_log_line_clear(&l);
    }

    /* a system line has no path */
    ac_system_log(sys, AC_LOG_WARN, "marker-system %s", "line");
    assert_eventually(ts_log_wait_text(cap, "marker-system line", TS_WAIT_S), "system line");
    ts_log_line l;
    get_line(cap, "marker-system line", &l);
    assert_int_equal(l.level, AC_LOG_WARN);
    assert_null(l.path);
    assert_string_equal(l.system_name, "logsys");
    ts_log_line_clear(&l);

    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_level_filter(void **state)
{
    ts_fixture *fx = *state;
    lg_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_level = AC_LOG_WARN, .log_sink = ts_log_sink,
                           .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "logsys", &o);
    assert_non_null(sys);
    assert_false(ac_system_log_enabled(sys, AC_LOG_DEBUG));
    assert_false(ac_system_log_enabled(sys, AC_LOG_INFO));
    assert_true(ac_system_log_enabled(sys, AC_LOG_WARN));
    assert_true(ac_system_log_enabled(sys, AC_LOG_ERROR));

    run_actor(fx, d, sys);
    ac_system_log(sys, AC_LOG_INFO, "marker-system-info");
    ac_system_log(sys, AC_LOG_ERROR, "marker-system-error");
    assert_eventually(ts_log_wait_text(cap, "marker-system-error", TS_WAIT_S), "error line");
    assert_eventually(ts_log_wait_text(cap, "marker-error 4", TS_WAIT_S), "actor error line");
    assert_int_equal(ts_log_count_text(cap, "marker-warn three"), 1);
    assert_int_equal(ts_log_count_text(cap, "marker-logv x=5"), 1);
    assert_int_equal(ts_log_count_text(cap, "marker-debug"), 0);
    assert_int_equal(ts_log_count_text(cap, "marker-info"), 0);
    assert_int_equal(ts_log_count_text(cap, "marker-system-info"), 0);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_level_off(void **state)
{
    ts_fixture *fx = *state;
    lg_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_level = AC_LOG_OFF, .log_sink = ts_log_sink,
                           .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "logsys", &o);
    assert_non_null(sys);
    assert_false(ac_system_log_enabled(sys, AC_LOG_ERROR));
    run_actor(fx, d, sys);
    ac_system_log(sys, AC_LOG_ERROR, "marker-system-error");
    assert_status(ts_fx_terminate(fx), AC_OK);
    /* nothing at all reached the sink, not even runtime lines */
    if (ts_log_count(cap) != 0) {
        ts_log_dump(cap, "captured with level off");
        fail_msg("the sink got lines with the level off");
    }
}

/* ---- environment ------------------------------------------------------------ */

typedef struct env_saved {
    bool had;
    char value[64];
} env_saved;

static void env_save(env_saved *s)
{
    const char *v = getenv("ACTORC_LOG_LEVEL");
    s->had = v != NULL;
    if (v != NULL) {
        snprintf(s->value, sizeof s->value, "%s", v);
    }
}

static void env_restore(const env_saved *s)
{
    if (s->had) {
        setenv("ACTORC_LOG_LEVEL", s->value, 1);
    } else {
        unsetenv("ACTORC_LOG_LEVEL");
    }
}

static void check_env_level(ts_fixture *fx, const char *env, ac_log_level opt,
                            ac_log_level expect_lowest_enabled)
{
    env_saved saved;
    env_save(&saved);
    if (env != NULL) {
        setenv("ACTORC_LOG_LEVEL", env, 1);
    } else {
        unsetenv("ACTORC_LOG_LEVEL");
    }
    ac_system_options o = {.log_level = opt, .log_sink = ts_log_sink,
                           .log_sink_user = ts_fx_log(fx)};
    ac_system *sys = ts_fx_system(fx, "envsys", &o);
    env_restore(&saved);
    assert_non_null(sys);
    for (int l = AC_LOG_DEBUG; l <= AC_LOG_ERROR; l++) {
        bool want = expect_lowest_enabled != AC_LOG_OFF && l >= (int)expect_lowest_enabled;
        if (ac_system_log_enabled(sys, (ac_log_level)l) != want) {
            fail_msg("ACTORC_LOG_LEVEL=%s, option %s: level %s should be %s", env ? env : "(unset)",
                     ac_log_level_name(opt), ac_log_level_name((ac_log_level)l),
                     want ? "enabled" : "disabled");
        }
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_env_level(void **state)
{
    ts_fixture *fx = *state;
    check_env_level(fx, NULL, AC_LOG_DEFAULT, AC_LOG_INFO); /* default: info */
    check_env_level(fx, "error", AC_LOG_DEFAULT, AC_LOG_ERROR);
    check_env_level(fx, "debug", AC_LOG_DEFAULT, AC_LOG_DEBUG);
    check_env_level(fx, "WARN", AC_LOG_DEFAULT, AC_LOG_WARN); /* case-insensitive */
    check_env_level(fx, "off", AC_LOG_DEFAULT, AC_LOG_OFF);
    /* an explicit option wins over the environment */
    check_env_level(fx, "error", AC_LOG_DEBUG, AC_LOG_DEBUG);
    check_env_level(fx, "debug", AC_LOG_ERROR, AC_LOG_ERROR);
    /* a malformed value falls back to info, and the system still starts */
    check_env_level(fx, "loud", AC_LOG_DEFAULT, AC_LOG_INFO);
}

/* An unknown ACTORC_LOG_LEVEL: the system starts at info, says so in one
 * warning naming the value and the accepted ones, and leaves no error
 * behind (it succeeded). */
static void test_env_level_unknown_warns(void **state)
{
    ts_fixture *fx = *state;
    ts_log_capture *cap = ts_fx_log(fx);
    env_saved saved;
    env_save(&saved);
    setenv("ACTORC_LOG_LEVEL", "verbose", 1);
    ac_clear_error();
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "envsys", &o);
    env_restore(&saved);
    assert_non_null(sys);
    assert_status(ac_last_status(), AC_OK);
    assert_string_equal(ac_last_error(), "");
    assert_true(ac_system_log_enabled(sys, AC_LOG_INFO));
    assert_false(ac_system_log_enabled(sys, AC_LOG_DEBUG));
    assert_int_equal(ts_log_count_text(cap, "ACTORC_LOG_LEVEL"), 1);
    long i = ts_log_find_text(cap, "\"verbose\" is not a log level");
    assert_true(i >= 0);
    ts_log_line line;
    assert_true(ts_log_get(cap, (size_t)i, &line));
    assert_int_equal(line.level, AC_LOG_WARN);
    assert_non_null(strstr(line.text, "debug, info, warn, error or off"));
    ts_log_line_clear(&line);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* Lines logged by an actor honour the environment level too. */
static void test_env_level_filters_actor_lines(void **state)
{
    ts_fixture *fx = *state;
    lg_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    ts_log_capture *cap = ts_fx_log(fx);
    env_saved saved;
    env_save(&saved);
    setenv("ACTORC_LOG_LEVEL", "error", 1);
    ac_system_options o = {.log_sink = ts_log_sink, .log_sink_user = cap};
    ac_system *sys = ts_fx_system(fx, "envsys", &o);
    env_restore(&saved);
    assert_non_null(sys);
    run_actor(fx, d, sys);
    assert_eventually(ts_log_wait_text(cap, "marker-error 4", TS_WAIT_S), "error line");
    assert_int_equal(ts_log_count_text(cap, "marker-warn"), 0);
    assert_int_equal(ts_log_count_text(cap, "marker-info"), 0);
    assert_int_equal(ts_log_count_text(cap, "marker-logv"), 0);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_level_names(void **state)
{
    (void)state;
    assert_string_equal(ac_log_level_name(AC_LOG_DEBUG), "debug");
    assert_string_equal(ac_log_level_name(AC_LOG_INFO), "info");
    assert_string_equal(ac_log_level_name(AC_LOG_WARN), "warn");
    assert_string_equal(ac_log_level_name(AC_LOG_ERROR), "error");
    assert_string_equal(ac_log_level_name(AC_LOG_OFF), "off");
    static const struct {
        const char *s;
        ac_log_level l;
    } ok[] = {
        {"debug", AC_LOG_DEBUG}, {"info", AC_LOG_INFO}, {"warn", AC_LOG_WARN},
        {"error", AC_LOG_ERROR}, {"off", AC_LOG_OFF},   {"DEBUG", AC_LOG_DEBUG},
        {"Info", AC_LOG_INFO},   {"wArN", AC_LOG_WARN},  {"OFF", AC_LOG_OFF},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ac_log_level l = AC_LOG_DEFAULT;
        assert_int_equal(ac_log_level_parse(ok[i].s, &l), AC_OK);
        assert_int_equal(l, ok[i].l);
    }
    ac_log_level l = AC_LOG_INFO;
    assert_int_equal(ac_log_level_parse("warning!", &l), AC_EINVAL);
    assert_int_equal(l, AC_LOG_INFO);
}

/* ---- dead-letter lines ------------------------------------------------------- */

static void nop_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def nop_def = {.name = "Nop", .receive = nop_receive};

/* Lines about dead letters to the actor named `name`. */
static size_t dead_letter_lines(ts_log_capture *c, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < ts_log_count(c); i++) {
        ts_log_line l;
        if (!ts_log_get(c, i, &l)) {
            continue;
        }
        bool about = (l.text && strstr(l.text, name)) || (l.path && strstr(l.path, name));
        bool dead = l.text && (strstr(l.text, "dead") || strstr(l.text, "Dead") ||
                               strstr(l.text, "DEAD"));
        if (about && dead) {
            k++;
        }
        ts_log_line_clear(&l);
    }
    return k;
}

static uint64_t burst_of_dead_letters(ts_fixture *fx, int per_s, int n, double *took)
{
    ts_log_capture *cap = ts_fx_log(fx);
    ac_system_options o = {.log_level = AC_LOG_DEBUG, .log_sink = ts_log_sink,
                           .log_sink_user = cap, .dead_letter_log_per_s = per_s};
    ac_system *sys = ts_fx_system(fx, "dlsys", &o);
    assert_non_null(sys);
    ac_ref *t = ts_spawn(sys, &nop_def, NULL, "dl-target-xyz");
    assert_non_null(t);
    assert_status(ac_stop(t), AC_OK);
    /* once one message counts as a dead letter, the target is dead */
    double t0 = 0;
    for (int i = 0; i < n; i++) {
        if (i == 1) {
            t0 = ts_now();
        }
        assert_status(ac_tell(t, ac_msg_int64_new(i), NULL), AC_OK);
        if (i == 0) {
            assert_eventually(ts_wait_dead_letters(sys, 1, TS_WAIT_S), "first dead letter");
        }
    }
    *took = ts_now() - t0;
    assert_eventually(ts_wait_dead_letters(sys, (uint64_t)n, TS_WAIT_S), "all dead letters");
    uint64_t count = ac_dead_letter_count(sys);
    ac_ref_release(t);
    assert_status(ts_fx_terminate(fx), AC_OK);
    return count;
}

static void test_dead_letter_lines_rate_limited(void **state)
{
    ts_fixture *fx = *state;
    double took = 0;
    uint64_t count = burst_of_dead_letters(fx, 0 /* default: 10/s */, 200, &took);
    assert_int_equal(count, 200); /* counting sees every one */
    size_t lines = dead_letter_lines(ts_fx_log(fx), "dl-target-xyz");
    if (lines < 1) {
        ts_log_dump(ts_fx_log(fx), "captured");
        fail_msg("no log line about the dead letters");
    }
    /* 10 per second: a burst of about a second allows at most ~2 windows */
    if (took < 0.9 && lines > 20) {
        ts_log_dump(ts_fx_log(fx), "captured");
        fail_msg("%zu dead-letter lines for a burst of %.3f s (limit 10/s)", lines, took);
    }
}

static void test_dead_letter_lines_off(void **state)
{
    ts_fixture *fx = *state;
    double took = 0;
    uint64_t count = burst_of_dead_letters(fx, -1, 50, &took);
    assert_int_equal(count, 50);
    size_t lines = dead_letter_lines(ts_fx_log(fx), "dl-target-xyz");
    if (lines != 0) {
        ts_log_dump(ts_fx_log(fx), "captured");
        fail_msg("%zu dead-letter lines with logging of dead letters off", lines);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_sink_gets_actor_lines),
        TS_UNIT(test_level_filter),
        TS_UNIT(test_level_off),
        TS_UNIT(test_env_level),
        TS_UNIT(test_env_level_unknown_warns),
        TS_UNIT(test_env_level_filters_actor_lines),
        TS_UNIT(test_level_names),
        TS_UNIT(test_dead_letter_lines_rate_limited),
        TS_UNIT(test_dead_letter_lines_off),
    };
    return cmocka_run_group_tests_name("logging", tests, NULL, NULL);
}
