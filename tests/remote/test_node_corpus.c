/*
 * The inbound-path fuzz target (fuzz_node.c) in the plain suite: every
 * input of its committed corpus (corpus-node/), the hand-made seeds and
 * what the fuzzer found, run once against the target's node, in every
 * build and under its sanitizers. An input that hangs the node, crashes
 * it, leaks, or leaves its tables bigger than it found them aborts, as
 * it does in the fuzzer. An input takes milliseconds, or a connect
 * timeout (200 ms) where it names an address that never answers; the
 * whole replay is bounded by the target's own bounds per input.
 *
 * Here the network is the machine's own: the target rewrites every
 * address a fuzzed field names to one of its own loopback sockets before
 * the node sees it (fuzz_node.c says how), so nothing leaves loopback.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>

#include "fuzz_node.h"
#include "ts_test.h"

#define INPUT_MAX 65536

typedef struct input {
    char name[256];
    uint8_t *data;
    size_t len;
} input;

static uint8_t *read_input(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *data = malloc(INPUT_MAX);
    assert_non_null(data);
    *len = fread(data, 1, INPUT_MAX, f);
    assert_true(feof(f));
    fclose(f);
    return data;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const input *)a)->name, ((const input *)b)->name);
}

/* The corpus, in name order (so that a replay is the same every time). */
static input *load_corpus(size_t *n)
{
    input *in = calloc(512, sizeof *in);
    assert_non_null(in);
    DIR *dir = opendir(NODE_CORPUS_DIR);
    assert_non_null(dir);
    struct dirent *e;
    *n = 0;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        assert_true(*n < 512);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", NODE_CORPUS_DIR, e->d_name);
        snprintf(in[*n].name, sizeof in[*n].name, "%s", e->d_name);
        in[*n].data = read_input(path, &in[*n].len);
        (*n)++;
    }
    closedir(dir);
    qsort(in, *n, sizeof *in, by_name);
    return in;
}

static void free_corpus(input *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(in[i].data);
    free(in);
}

/* Every seed node_seeds.c makes is committed, byte for byte. */
static void test_seeds_are_current(void **state)
{
    (void)state;
    size_t n, len;
    input *in = load_corpus(&n);
    const char *name;
    const uint8_t *seed;
    for (size_t i = 0; (seed = fn_seed(i, &len, &name)); i++) {
        input key;
        snprintf(key.name, sizeof key.name, "seed-%s.bin", name);
        const input *found = bsearch(&key, in, n, sizeof *in, by_name);
        if (!found || found->len != len || memcmp(found->data, seed, len) != 0)
            fail_msg("corpus-node/%s is %s: write the seeds again with the node_corpus tool",
                     key.name, found ? "out of date" : "missing");
    }
    free_corpus(in, n);
}

static void test_corpus_replays(void **state)
{
    (void)state;
    size_t n;
    input *in = load_corpus(&n);
    assert_true(n >= fn_seed_count());
    double start = ts_now();
    for (size_t i = 0; i < n; i++) {
        double t = ts_now();
        LLVMFuzzerTestOneInput(in[i].data, in[i].len);
        if (getenv("ACTORC_FUZZ_LOG"))
            print_message("%s: %.3f s\n", in[i].name, ts_now() - t);
    }
    print_message("%zu inputs in %.2f s\n", n, ts_now() - start);
    fuzz_node_teardown();
    free_corpus(in, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_are_current),
        cmocka_unit_test(test_corpus_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
