/*
 * Updates from many threads at once: 8 threads hammer the same counter,
 * gauge and histogram series and the totals come out exact; 8 threads
 * racing to create the same series all get the same handles; scrapes run
 * concurrently with all of it.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "metrics_test_util.h"
#include "ts_test.h"

#define THREADS 8
#define SERIES 100

static long rounds(void) { return ts_env_long("ACTORC_METRICS_ROUNDS", 50000); }

typedef struct shared {
    ac_metric_family *family; /* labelled counter, for the creation race */
    ac_counter *counter;
    ac_gauge *gauge;
    ac_histogram *histogram;
    ac_counter *created[THREADS][SERIES];
    ac_system *sys;
    atomic_int go;
    atomic_int done;
    atomic_int scrape_failures; /* checked on the test thread */
    long rounds;
} shared;

typedef struct worker_arg {
    shared *sh;
    int index;
} worker_arg;

static void wait_for_go(shared *sh)
{
    while (!atomic_load(&sh->go))
        ;
}

static void *update_worker(void *p)
{
    worker_arg *a = p;
    shared *sh = a->sh;
    wait_for_go(sh);
    for (long i = 0; i < sh->rounds; i++) {
        ac_counter_inc(sh->counter);
        ac_gauge_add(sh->gauge, 1.0);
        if (i % 2)
            ac_gauge_sub(sh->gauge, 1.0);
        ac_histogram_observe(sh->histogram, (double)(i % 4)); /* 0,1,2,3: exact sums */
    }
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}

static void *create_worker(void *p)
{
    worker_arg *a = p;
    shared *sh = a->sh;
    wait_for_go(sh);
    for (int k = 0; k < SERIES; k++) {
        /* Each thread walks the names in its own order. */
        int s = (k * 7 + a->index * 13) % SERIES;
        char name[32];
        snprintf(name, sizeof name, "s%d", s);
        const char *values[] = {name};
        sh->created[a->index][s] = ac_counter_series(sh->family, values);
        ac_counter_inc(sh->created[a->index][s]);
    }
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}

static void *scrape_worker(void *p)
{
    shared *sh = p;
    wait_for_go(sh);
    while (atomic_load(&sh->done) < THREADS) {
        char *text = ac_metrics_format(sh->sys);
        if (!text)
            atomic_fetch_add(&sh->scrape_failures, 1);
        free(text);
    }
    return NULL;
}

static void run_threads(shared *sh, void *(*fn)(void *))
{
    pthread_t t[THREADS], scraper;
    worker_arg args[THREADS];
    atomic_store(&sh->go, 0);
    atomic_store(&sh->done, 0);
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){.sh = sh, .index = i};
        assert_int_equal(pthread_create(&t[i], NULL, fn, &args[i]), 0);
    }
    assert_int_equal(pthread_create(&scraper, NULL, scrape_worker, sh), 0);
    atomic_store(&sh->go, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_join(scraper, NULL);
    assert_int_equal(atomic_load(&sh->scrape_failures), 0);
}

static shared *setup_shared(void **state)
{
    ts_fixture *fx = *state;
    shared *sh = ts_fx_data(fx, sizeof *sh, NULL);
    sh->sys = ts_fx_system(fx, "conc", &(ac_system_options){.workers = 1, .metrics = true});
    assert_non_null(sh->sys);
    sh->rounds = rounds();
    return sh;
}

static void test_eight_threads_sum_exactly(void **state)
{
    shared *sh = setup_shared(state);
    ac_metric_options help = {.help = "h."};
    sh->counter = ac_counter_series(ac_metrics_counter(sh->sys, "app_hits_total", &help), NULL);
    sh->gauge = ac_gauge_series(ac_metrics_gauge(sh->sys, "app_level", &help), NULL);
    static const double buckets[] = {0.5, 1.5, 2.5};
    ac_metric_options hb = {.help = "h.", .buckets = buckets, .bucket_count = 3};
    sh->histogram = ac_histogram_series(ac_metrics_histogram(sh->sys, "app_size", &hb), NULL);
    assert_non_null(sh->counter);
    assert_non_null(sh->gauge);
    assert_non_null(sh->histogram);

    run_threads(sh, update_worker);

    long n = sh->rounds * THREADS;
    assert_int_equal(ac_counter_value(sh->counter), n);
    assert_true(ac_gauge_value(sh->gauge) == (double)(THREADS * (sh->rounds - sh->rounds / 2)));
    assert_int_equal(ac_histogram_count(sh->histogram), n);
    /* i % 4 over 0..rounds-1 from each thread: rounds is a multiple of 4. */
    assert_int_equal(sh->rounds % 4, 0);
    assert_true(ac_histogram_sum(sh->histogram) == (double)(THREADS * (sh->rounds / 4) * 6));

    char *text = ac_metrics_format(sh->sys);
    char line[128];
    snprintf(line, sizeof line, "app_hits_total %ld", n);
    assert_true(mt_has_line(text, line));
    snprintf(line, sizeof line, "app_size_bucket{le=\"0.5\"} %ld", n / 4);
    assert_true(mt_has_line(text, line));
    snprintf(line, sizeof line, "app_size_bucket{le=\"2.5\"} %ld", 3 * n / 4);
    assert_true(mt_has_line(text, line));
    snprintf(line, sizeof line, "app_size_bucket{le=\"+Inf\"} %ld", n);
    assert_true(mt_has_line(text, line));
    snprintf(line, sizeof line, "app_size_count %ld", n);
    assert_true(mt_has_line(text, line));
    free(text);
}

static void test_racing_creation_gives_one_series_each(void **state)
{
    shared *sh = setup_shared(state);
    static const char *const names[] = {"name"};
    ac_metric_options o = {.help = "h.", .label_names = names, .label_count = 1};
    sh->family = ac_metrics_counter(sh->sys, "app_made_total", &o);
    assert_non_null(sh->family);

    run_threads(sh, create_worker);

    for (int s = 0; s < SERIES; s++) {
        assert_non_null(sh->created[0][s]);
        for (int t = 1; t < THREADS; t++)
            assert_ptr_equal(sh->created[t][s], sh->created[0][s]);
        assert_int_equal(ac_counter_value(sh->created[0][s]), THREADS);
    }
    char *text = ac_metrics_format(sh->sys);
    size_t lines = 0;
    for (const char *p = text; (p = strstr(p, "\napp_made_total{")); p++)
        lines++;
    assert_int_equal(lines, SERIES);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_eight_threads_sum_exactly),
        TS_UNIT(test_racing_creation_gives_one_series_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
