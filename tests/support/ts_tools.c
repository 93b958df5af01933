/*
 * Programs a test needs (test_support.h): finding them, and what a test
 * does when one is missing. One rule for every such test (etcd's,
 * dnsmasq's): a missing program fails the test, loudly, unless the
 * person running it asked to skip (ACTORC_TEST_SKIP_MISSING=1), so a
 * suite never passes by not running.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Try dir/name for each directory of a ':'-separated list. */
static const char *find_in(const char *list, const char *name, char *buf, size_t cap)
{
    while (list && *list) {
        const char *colon = strchr(list, ':');
        size_t n = colon ? (size_t)(colon - list) : strlen(list);
        if (n > 0 && n + strlen(name) + 2 <= cap) {
            snprintf(buf, cap, "%.*s/%s", (int)n, list, name);
            if (access(buf, X_OK) == 0)
                return buf;
        }
        list = colon ? colon + 1 : NULL;
    }
    return NULL;
}

const char *ts_find_program(const char *name, const char *also, char *buf, size_t cap)
{
    const char *found = find_in(getenv("PATH"), name, buf, cap);
    return found ? found : find_in(also, name, buf, cap);
}

int ts_missing_program(const char *test, const char *program, const char *package)
{
    const char *skip = getenv("ACTORC_TEST_SKIP_MISSING");
    bool skipping = skip && strcmp(skip, "1") == 0;
    fprintf(stderr,
            "%s: %s: no %s program on this machine (Debian package %s; `make deps` installs "
            "it)%s\n",
            test, skipping ? "SKIPPED" : "FAILED", program, package,
            skipping ? "" : ". Set ACTORC_TEST_SKIP_MISSING=1 to skip such tests instead.");
    return skipping ? TS_SKIP : 1;
}
