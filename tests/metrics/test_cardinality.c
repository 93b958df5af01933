/*
 * The cardinality cap: a family holds at most max_series series (1,000 by
 * default); beyond it new series are dropped (NULL, ignored by updates)
 * and one warning per family goes to the system's log.
 */
#define _POSIX_C_SOURCE 200809L

#include "metrics_test_util.h"
#include "ts_test.h"

#define CAP_WARNING "new series are dropped"

static ac_system *metrics_system(void **state, ts_log_capture **log)
{
    ts_fixture *fx = *state;
    ac_system *sys = ts_fx_system(fx, "cap", &(ac_system_options){.workers = 1, .metrics = true});
    assert_non_null(sys);
    *log = fx->log;
    return sys;
}

static ac_counter *series_n(ac_metric_family *f, int i)
{
    char name[24];
    snprintf(name, sizeof name, "user-%d", i);
    const char *values[] = {name};
    return ac_counter_series(f, values);
}

static size_t family_lines(ac_system *sys, const char *prefix)
{
    char *text = ac_metrics_format(sys);
    size_t n = 0, len = strlen(prefix);
    for (const char *p = text; p && *p;) {
        n += strncmp(p, prefix, len) == 0;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    free(text);
    return n;
}

static void test_default_cap_drops_the_1001st(void **state)
{
    ts_log_capture *log;
    ac_system *sys = metrics_system(state, &log);
    static const char *const names[] = {"user"};
    ac_metric_options o = {.help = "Logins.", .label_names = names, .label_count = 1};
    ac_metric_family *f = ac_metrics_counter(sys, "app_logins_total", &o);
    assert_non_null(f);

    for (int i = 0; i < AC_METRICS_DEFAULT_MAX_SERIES; i++) {
        ac_counter *c = series_n(f, i);
        if (!c)
            fail_msg("series %d: %s", i, ac_last_error());
        ac_counter_inc(c);
    }
    assert_int_equal(ts_log_count_text(log, CAP_WARNING), 0);

    /* The 1,001st is dropped, and said so once. */
    assert_null(series_n(f, AC_METRICS_DEFAULT_MAX_SERIES));
    assert_last_error(AC_EINVAL);
    assert_non_null(strstr(ac_last_error(), "app_logins_total"));
    ac_counter_inc(series_n(f, AC_METRICS_DEFAULT_MAX_SERIES)); /* a no-op */
    assert_null(series_n(f, AC_METRICS_DEFAULT_MAX_SERIES + 1));
    assert_int_equal(ts_log_count_text(log, CAP_WARNING), 1);
    long at = ts_log_find_text(log, CAP_WARNING);
    ts_log_line line;
    assert_true(ts_log_get(log, (size_t)at, &line));
    assert_int_equal(line.level, AC_LOG_WARN);
    assert_non_null(strstr(line.text, "app_logins_total"));
    assert_non_null(strstr(line.text, "1000"));
    ts_log_line_clear(&line);

    /* Series that exist still work. */
    ac_counter *first = series_n(f, 0);
    assert_non_null(first);
    ac_counter_inc(first);
    assert_int_equal(ac_counter_value(first), 2);

    assert_int_equal(family_lines(sys, "app_logins_total{"), AC_METRICS_DEFAULT_MAX_SERIES);
    char *text = ac_metrics_format(sys);
    assert_null(strstr(text, "user-1000\""));
    free(text);
}

static void test_custom_cap_and_one_warning_per_family(void **state)
{
    ts_log_capture *log;
    ac_system *sys = metrics_system(state, &log);
    static const char *const names[] = {"user"};
    ac_metric_options o = {.help = "a.", .label_names = names, .label_count = 1, .max_series = 3};
    ac_metric_family *a = ac_metrics_gauge(sys, "app_a", &o);
    ac_metric_family *b = ac_metrics_counter(sys, "app_b_total", &o);
    for (int i = 0; i < 3; i++) {
        assert_non_null(series_n(b, i));
        char name[24];
        snprintf(name, sizeof name, "user-%d", i);
        assert_non_null(ac_gauge_series(a, (const char *const[]){name}));
    }
    for (int i = 3; i < 10; i++) {
        assert_null(series_n(b, i));
        assert_null(ac_gauge_series(a, (const char *const[]){"more"}));
    }
    assert_int_equal(ts_log_count_text(log, CAP_WARNING), 2);
    assert_int_equal(ts_log_count_text(log, "app_a has reached its limit of 3"), 1);
    assert_int_equal(ts_log_count_text(log, "app_b_total has reached its limit of 3"), 1);
    assert_int_equal(family_lines(sys, "app_b_total{"), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_default_cap_drops_the_1001st),
        TS_UNIT(test_custom_cap_and_one_warning_per_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
