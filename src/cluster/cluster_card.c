/*
 * A node's card: how its cluster layer describes it to the others, in
 * the body of its HELLO and of each beat it sends. Text, one field a
 * line, so that it reads in a capture and parses without a library:
 *
 *   actorc-cluster 1
 *   <cluster name>
 *   <system name>
 *   <address>            host:port
 *   <incarnation>        16 hex digits
 *   <flags>              decimal; 1: the node leaves the cluster; 2: the
 *                        node it is sent to was downed by the sender's side
 *   <role>,<role>,...    may be empty
 *   <up since>           decimal ms of its wall clock at join (optional:
 *                        keep-oldest's age; a card without it is of
 *                        unknown age)
 *
 * Every field is checked as the options are at join; a card that breaks
 * any rule is refused whole.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

#define CARD_MAGIC "actorc-cluster 1"
#define CARD_MAX 4096

bool ac__cluster_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > AC__CLUSTER_MAX_TEXT)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* A system name as the card carries it: printable, no line break. */
static bool system_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > AC__CLUSTER_MAX_TEXT)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
            return false;
    return true;
}

char *ac__card_encode(const ac__card *card, size_t *len)
{
    char roles[AC__CLUSTER_MAX_ROLES * (AC__CLUSTER_MAX_TEXT + 1) + 1] = "";
    size_t at = 0;
    for (size_t i = 0; i < card->roles_count; i++)
        at += (size_t)snprintf(roles + at, sizeof roles - at, "%s%s", i ? "," : "",
                               card->roles[i]);
    char *text = ac__malloc(CARD_MAX);
    if (!text)
        return NULL;
    int n = snprintf(text, CARD_MAX, CARD_MAGIC "\n%s\n%s\n%s\n%016" PRIx64 "\n%u\n%s\n%" PRIu64
                     "\n", card->cluster, card->system, card->address, card->incarnation,
                     card->flags, roles, card->up_since);
    if (n < 0 || n >= CARD_MAX) {
        free(text);
        return NULL;
    }
    *len = (size_t)n;
    return text;
}

/* The next line of [*p, end) into out (cap bytes with its NUL); false
 * when there is none or it is too long. */
static bool next_line(const char **p, const char *end, char *out, size_t cap)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl || (size_t)(nl - *p) >= cap)
        return false;
    memcpy(out, *p, (size_t)(nl - *p));
    out[nl - *p] = '\0';
    *p = nl + 1;
    return true;
}

static bool parse_hex64(const char *s, uint64_t *out)
{
    if (strlen(s) != 16)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return v != 0;
}

static bool parse_roles(char *line, ac__card *out)
{
    out->roles_count = 0;
    if (!*line)
        return true;
    for (char *r = line; r;) {
        char *comma = strchr(r, ',');
        if (comma)
            *comma = '\0';
        if (out->roles_count == AC__CLUSTER_MAX_ROLES || !ac__cluster_name_ok(r))
            return false;
        memcpy(out->roles[out->roles_count++], r, strlen(r) + 1); /* checked: fits */
        r = comma ? comma + 1 : NULL;
    }
    return true;
}

/* The optional last line, the age; true when it is well formed or absent
 * and nothing follows. */
static bool up_since_line(const char **p, const char *end, ac__card *out)
{
    char text[24], *tend;
    if (*p == end)
        return true;
    if (!next_line(p, end, text, sizeof text) || *p != end || !*text || *text == '-')
        return false;
    out->up_since = strtoull(text, &tend, 10);
    return *tend == '\0';
}

bool ac__card_decode(const uint8_t *body, size_t len, ac__card *out)
{
    char line[AC__CLUSTER_MAX_ROLES * (AC__CLUSTER_MAX_TEXT + 1) + 1];
    char inc[32], flags[16];
    if (!body || len == 0 || len > CARD_MAX)
        return false;
    const char *p = (const char *)body, *end = p + len;
    memset(out, 0, sizeof *out);
    if (memchr(p, '\0', len) || !next_line(&p, end, line, sizeof line) ||
        strcmp(line, CARD_MAGIC) != 0)
        return false;
    if (!next_line(&p, end, out->cluster, sizeof out->cluster) ||
        !next_line(&p, end, out->system, sizeof out->system) ||
        !next_line(&p, end, out->address, sizeof out->address) ||
        !next_line(&p, end, inc, sizeof inc) || !next_line(&p, end, flags, sizeof flags) ||
        !next_line(&p, end, line, sizeof line) || !up_since_line(&p, end, out))
        return false;
    if (!ac__cluster_name_ok(out->cluster) || !system_ok(out->system) ||
        !ac__host_port_ok(out->address) || !parse_hex64(inc, &out->incarnation))
        return false;
    char *fend;
    unsigned long f = strtoul(flags, &fend, 10);
    if (!*flags || *fend || f > 0xffff)
        return false;
    out->flags = (unsigned)f;
    return parse_roles(line, out);
}
