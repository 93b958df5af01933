/*
 * wire_corpus DIR: write the fuzz corpus's seeds (wire_samples.h) into
 * DIR, one file each. The committed corpus (tests/remote/corpus) is its
 * output; the corpus test fails when the two differ, so a change of the
 * wire format comes with a regenerated corpus:
 *
 *     build/release/tests/remote/wire_corpus tests/remote/corpus
 */
#include <stdio.h>
#include <stdlib.h>

#include "wire_samples.h"

static int write_seed(const char *dir, const char *name, const uint8_t *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: wire_corpus DIR\n");
        return 2;
    }
    size_t len, n = 0;
    const char *name;
    uint8_t *seed;
    while ((seed = ws_corpus_seed(n, &len, &name))) {
        int rc = write_seed(argv[1], name, seed, len);
        free(seed);
        if (rc)
            return 1;
        n++;
    }
    printf("wire_corpus: %zu seeds in %s\n", n, argv[1]);
    return 0;
}
