/*
 * The replica model's options (model_options.h). What model_args writes
 * model_apply reads back: the option names live here once.
 */
#include <stdio.h>
#include <string.h>

#include "app_args.h"
#include "model_options.h"

bool model_is_option(int opt) { return opt >= MODEL_OPT_MEDIAN && opt <= MODEL_OPT_DEAD_REPLICA; }

/* "P%:Dms": a share of stalls and their length. */
static bool parse_tail(const char *s, replica_model *m)
{
    char buf[64];
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf)
        return false;
    char *colon = strchr(buf, ':');
    if (!colon)
        return false;
    *colon = '\0';
    double pct, ms;
    if (!app_parse_double(buf, 0, 100, "%", &pct) ||
        !app_parse_double(colon + 1, 0, 60000, "ms", &ms))
        return false;
    m->tail_pct = pct;
    m->tail_ms = ms;
    return true;
}

bool model_apply(int opt, const char *arg, replica_model *m)
{
    switch (opt) {
    case MODEL_OPT_MEDIAN:
        return app_parse_double(arg, 0, 60000, "ms", &m->median_ms);
    case MODEL_OPT_SIGMA:
        return app_parse_double(arg, 0, 5, NULL, &m->sigma);
    case MODEL_OPT_TAIL:
        return parse_tail(arg, m);
    case MODEL_OPT_ERROR_RATE:
        return app_parse_double(arg, 0, 100, "%", &m->error_pct);
    case MODEL_OPT_DEAD_REPLICA:
        return app_parse_int(arg, 1, MODEL_MAX_REPLICAS, &m->dead_replica);
    default:
        return false;
    }
}

void model_args(const replica_model *m, char buf[MODEL_ARGC / 2][64], const char **argv)
{
    snprintf(buf[0], 64, "%.17g", m->median_ms);
    snprintf(buf[1], 64, "%.17g", m->sigma);
    snprintf(buf[2], 64, "%.17g%%:%.17gms", m->tail_pct, m->tail_ms);
    snprintf(buf[3], 64, "%.17g%%", m->error_pct);
    const char *names[] = {"--median-ms", "--sigma", "--tail", "--error-rate"};
    for (int i = 0; i < MODEL_ARGC / 2; i++) {
        argv[2 * i] = names[i];
        argv[2 * i + 1] = buf[i];
    }
}
