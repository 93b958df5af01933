/*
 * The JSON writer (json.c) behind the public ac_json_* calls of
 * actorc/observe.h: its struct, for the view (observe.c) to keep on its
 * stack. One writer, one thread.
 */
#ifndef AC_METRICS_JSON_H
#define AC_METRICS_JSON_H

#include "actorc/observe.h"
#include "core/base.h"

#define JSON_MAX_DEPTH 32

typedef struct json_level {
    bool object;
    bool keyed;     /* an object's key is written, its value not yet */
    uint32_t count; /* members or elements so far */
} json_level;

struct ac_json {
    char *buf;
    size_t len, cap;
    ac_status status; /* the first failure; AC_OK */
    int depth;
    bool done; /* the top-level value is written */
    json_level stack[JSON_MAX_DEPTH];
};

void ac__json_init(ac_json *j);
/* The document (the caller frees it), or NULL with the error recorded
 * for `fn` when the writer failed or the document is not complete. */
char *ac__json_finish(ac_json *j, const char *fn);

#endif
