/*
 * The fuzz target (fuzz_wire.c) in the plain suite: over the committed
 * corpus (corpus/), then over deterministic mutations of it, bounded in
 * count and in time, so that every build runs it under its sanitizers.
 *
 * The corpus is what gen_corpus.c writes; a test checks that it still is,
 * so that its seeds stay valid frames as the format moves.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>

#include "ts_test.h"
#include "wire_samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many mutated inputs, and for at most this long (the
 * sanitizer builds reach the time first). */
#define MUTATIONS 200000
#define BUDGET_S 4.0
#define SEED_MAX 4096

typedef struct seed {
    char *name;
    uint8_t *data;
    size_t len;
} seed;

typedef struct corpus {
    seed *seeds;
    size_t n;
} corpus;

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *data = malloc(SEED_MAX);
    assert_non_null(data);
    *len = fread(data, 1, SEED_MAX, f);
    assert_true(feof(f));
    fclose(f);
    return data;
}

static corpus load_corpus(void)
{
    corpus c = {.seeds = calloc(256, sizeof(seed))};
    assert_non_null(c.seeds);
    DIR *dir = opendir(WIRE_CORPUS_DIR);
    assert_non_null(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        assert_true(c.n < 256);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", WIRE_CORPUS_DIR, e->d_name);
        seed *s = &c.seeds[c.n++];
        s->name = strdup(e->d_name);
        s->data = read_file(path, &s->len);
    }
    closedir(dir);
    return c;
}

static void free_corpus(corpus *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->seeds[i].name);
        free(c->seeds[i].data);
    }
    free(c->seeds);
}

static const seed *find_seed(const corpus *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->seeds[i].name, name) == 0)
            return &c->seeds[i];
    return NULL;
}

/* Every seed gen_corpus.c writes is committed, byte for byte. */
static void test_corpus_is_current(void **state)
{
    (void)state;
    corpus c = load_corpus();
    size_t i = 0, len;
    const char *name;
    uint8_t *expected;
    while ((expected = ws_corpus_seed(i++, &len, &name))) {
        const seed *s = find_seed(&c, name);
        if (!s || s->len != len || memcmp(s->data, expected, len) != 0)
            fail_msg("corpus/%s is %s: regenerate the corpus with the wire_corpus tool", name,
                     s ? "out of date" : "missing");
        free(expected);
    }
    assert_true(c.n >= ws_sample_count() + 3);
    free_corpus(&c);
}

static void test_corpus_replays(void **state)
{
    (void)state;
    corpus c = load_corpus();
    for (size_t i = 0; i < c.n; i++)
        LLVMFuzzerTestOneInput(c.seeds[i].data, c.seeds[i].len);
    free_corpus(&c);
}

/* ---- mutations -------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

static size_t below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

/* Bytes that change what a CBOR head means: small values, the width
 * markers of every major type, indefinite lengths, tags, null, break. */
static uint8_t interesting(void)
{
    static const uint8_t v[] = {0x00, 0x01, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x20, 0x3b,
                                0x40, 0x5b, 0x5f, 0x60, 0x7b, 0x7f, 0x80, 0x8b, 0x9b, 0x9f,
                                0xa0, 0xbf, 0xc0, 0xd9, 0xdb, 0xf4, 0xf6, 0xf7, 0xf9, 0xff};
    return v[below(sizeof v)];
}

typedef struct input {
    uint8_t data[SEED_MAX];
    size_t len;
} input;

static void insert_bytes(input *in, size_t at, const uint8_t *src, size_t n)
{
    if (in->len + n > SEED_MAX)
        n = SEED_MAX - in->len;
    memmove(in->data + at + n, in->data + at, in->len - at);
    memcpy(in->data + at, src, n);
    in->len += n;
}

static void mutate_once(input *in, const corpus *c)
{
    size_t at = below(in->len);
    uint8_t b;
    switch (below(8)) {
    case 0: /* flip a bit */
        if (in->len)
            in->data[at] ^= (uint8_t)(1u << below(8));
        break;
    case 1: /* an interesting byte */
        if (in->len)
            in->data[at] = interesting();
        break;
    case 2: /* insert one */
        b = rng() & 1 ? interesting() : (uint8_t)rng();
        insert_bytes(in, below(in->len + 1), &b, 1);
        break;
    case 3: /* delete a run */
        if (in->len) {
            size_t n = 1 + below(in->len - at < 8 ? in->len - at : 8);
            memmove(in->data + at, in->data + at + n, in->len - at - n);
            in->len -= n;
        }
        break;
    case 4: /* truncate */
        in->len = below(in->len + 1);
        break;
    case 5: { /* repeat a chunk */
        uint8_t chunk[64];
        size_t n = below(in->len - at < sizeof chunk ? in->len - at : sizeof chunk) + 1;
        if (in->len) {
            memcpy(chunk, in->data + at, n);
            insert_bytes(in, below(in->len + 1), chunk, n);
        }
        break;
    }
    case 6: { /* splice another seed's tail on */
        const seed *other = &c->seeds[below(c->n)];
        size_t from = below(other->len + 1);
        in->len = at;
        insert_bytes(in, at, other->data + from, other->len - from);
        break;
    }
    default: /* overwrite a few bytes */
        for (size_t i = at, end = at + 1 + below(8); i < end && i < in->len; i++)
            in->data[i] = (uint8_t)rng();
        break;
    }
}

static void test_mutations_never_crash(void **state)
{
    (void)state;
    corpus c = load_corpus();
    assert_true(c.n > 0);
    input *in = malloc(sizeof *in);
    assert_non_null(in);
    double start = ts_now();
    size_t runs = 0;
    while (runs < MUTATIONS && (runs % 1024 || ts_now() - start < BUDGET_S)) {
        const seed *s = &c.seeds[below(c.n)];
        memcpy(in->data, s->data, s->len);
        in->len = s->len;
        for (size_t k = 1 + below(4); k > 0; k--)
            mutate_once(in, &c);
        LLVMFuzzerTestOneInput(in->data, in->len);
        runs++;
    }
    print_message("%zu mutated inputs in %.2f s\n", runs, ts_now() - start);
    free(in);
    free_corpus(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_is_current),
        cmocka_unit_test(test_corpus_replays),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
