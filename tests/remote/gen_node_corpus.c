/*
 * node_corpus DIR: write the hand-made seeds of the inbound-path fuzz
 * target (node_seeds.c) into DIR as "seed-<name>.bin". The committed
 * corpus (tests/remote/corpus-node) holds them beside what the fuzzer
 * found; the suite fails when a seed there differs from this tool's:
 *
 *     build/release/tests/remote/node_corpus tests/remote/corpus-node
 */
#include <stdio.h>

#include "fuzz_node.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: node_corpus DIR\n");
        return 2;
    }
    size_t len, n = 0;
    const char *name;
    const uint8_t *seed;
    while ((seed = fn_seed(n, &len, &name))) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%s.bin", argv[1], name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(seed, 1, len, f) != len || fclose(f) != 0) {
            perror(path);
            return 1;
        }
        n++;
    }
    printf("node_corpus: %zu seeds in %s\n", n, argv[1]);
    return 0;
}
