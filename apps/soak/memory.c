/*
 * Resident memory over the run, from /proc/self/statm.
 *
 * A sampler thread reads the resident set every 250 ms. The sample taken
 * when warm-up ends is the baseline (by then every pool has been spawned,
 * every cache filled and the ledger is as full as the load makes it); the
 * highest sample after it must stay within rss_pct percent plus
 * rss_slack_mb of the baseline. Growth beyond that over a steady load is a
 * leak or a queue that never drains.
 */
#include <pthread.h>
#include <unistd.h>

#include "soak.h"

static pthread_t sampler;
static atomic_bool sampler_stop;
static double baseline_mb, peak_mb;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

double memory_rss_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static void *sampler_main(void *arg)
{
    (void)arg;
    uint64_t warm_until = soak_now_ns() + (uint64_t)(g_cfg.warmup_s * 1e9);
    while (!atomic_load(&sampler_stop)) {
        soak_sleep_us(250000);
        double mb = memory_rss_mb();
        pthread_mutex_lock(&lock);
        if (soak_now_ns() < warm_until || baseline_mb == 0)
            baseline_mb = peak_mb = mb;
        else if (mb > peak_mb)
            peak_mb = mb;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

void memory_start(void) { pthread_create(&sampler, NULL, sampler_main, NULL); }

void memory_stop(void)
{
    atomic_store(&sampler_stop, true);
    pthread_join(sampler, NULL);
}

void memory_levels(double *base, double *peak)
{
    pthread_mutex_lock(&lock);
    *base = baseline_mb;
    *peak = peak_mb;
    pthread_mutex_unlock(&lock);
}

bool memory_verify(double *growth_pct)
{
    pthread_mutex_lock(&lock);
    double base = baseline_mb, peak = peak_mb;
    pthread_mutex_unlock(&lock);
    *growth_pct = base > 0 ? (peak - base) * 100.0 / base : 0;
    if (g_cfg.rss_pct <= 0 || base == 0)
        return true;
    if (peak > base * (1 + g_cfg.rss_pct / 100.0) + g_cfg.rss_slack_mb) {
        soak_violation("resident memory grew from %.1f MB after warm-up to %.1f MB (+%.1f%%), "
                       "beyond +%.0f%% + %.0f MB",
                       base, peak, *growth_pct, g_cfg.rss_pct, g_cfg.rss_slack_mb);
        return false;
    }
    return true;
}
