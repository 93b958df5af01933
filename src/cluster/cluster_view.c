/*
 * Members as the API hands them out: a member list in one allocation
 * (the members, then each one's role pointers, then the strings), and
 * MemberEvent messages laid out the same way inside their payload, so
 * that a member's strings live exactly as long as what holds them. Also
 * the notes the cluster actor takes, and ac_member_has_role.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

/* ---- packing -------------------------------------------------------------- */

static size_t strings_size(const ac__member_rec *r)
{
    size_t n = strlen(r->system) + 1 + strlen(r->address) + 1;
    for (size_t i = 0; i < r->roles_count; i++)
        n += strlen(r->roles[i]) + 1;
    return n;
}

static char *put_string(char **at, const char *s)
{
    size_t n = strlen(s) + 1;
    char *dst = *at;
    memcpy(dst, s, n);
    *at += n;
    return dst;
}

/* Fill m from r: role pointers at *ptrs, strings at *text. */
static void pack_one(ac_member *m, const ac__member_rec *r, const char ***ptrs, char **text)
{
    m->system = put_string(text, r->system);
    m->address = put_string(text, r->address);
    m->incarnation = r->incarnation;
    m->status = r->status;
    m->self = r->self;
    m->roles_count = r->roles_count;
    m->roles = r->roles_count ? *ptrs : NULL;
    for (size_t i = 0; i < r->roles_count; i++)
        (*ptrs)[i] = put_string(text, r->roles[i]);
    *ptrs += r->roles_count;
}

ac_member_list ac__member_list_pack(const ac__member_rec *const *recs, size_t n)
{
    ac_member_list list = {0};
    size_t roles = 0, text = 0;
    for (size_t i = 0; i < n; i++) {
        roles += recs[i]->roles_count;
        text += strings_size(recs[i]);
    }
    size_t size = n * sizeof(ac_member) + roles * sizeof(char *) + text;
    char *block = ac__malloc(size ? size : 1);
    if (!block)
        return list;
    ac_member *members = (ac_member *)(void *)block;
    const char **ptrs = (const char **)(void *)(block + n * sizeof(ac_member));
    char *at = (char *)(ptrs + roles);
    for (size_t i = 0; i < n; i++)
        pack_one(&members[i], recs[i], &ptrs, &at);
    list.members = members;
    list.count = n;
    return list;
}

bool ac_member_has_role(const ac_member *member, const char *role)
{
    if (!member || !role)
        return false;
    for (size_t i = 0; i < member->roles_count; i++)
        if (member->roles[i] && strcmp(member->roles[i], role) == 0)
            return true;
    return false;
}

void ac_member_list_free(ac_member_list *list)
{
    if (!list)
        return;
    free(list->members);
    list->members = NULL;
    list->count = 0;
}

/* ---- MemberEvent ------------------------------------------------------------ */

const ac_msg_type ac_msg_type_member_event = {.name = "actorc.MemberEvent"};

ac_msg *ac__member_event_new(ac_member_event_kind kind, const ac__member_rec *rec)
{
    size_t head = sizeof(ac_member_event);
    size_t size = head + rec->roles_count * sizeof(char *) + strings_size(rec);
    ac_msg *msg = ac_msg_new(&ac_msg_type_member_event, size);
    if (!msg)
        return NULL;
    char *payload = ac_msg_payload(msg);
    ac_member_event *ev = (ac_member_event *)(void *)payload;
    const char **ptrs = (const char **)(void *)(payload + head);
    char *text = (char *)(ptrs + rec->roles_count);
    ev->kind = kind;
    pack_one(&ev->member, rec, &ptrs, &text);
    return msg;
}

const ac_member_event *ac_member_event_get(const ac_msg *msg)
{
    if (!ac_msg_is(msg, &ac_msg_type_member_event) ||
        ac_msg_size(msg) < sizeof(ac_member_event))
        return NULL;
    return ac_msg_data(msg);
}

/* ---- notes ---------------------------------------------------------------- */

static void note_destroy(void *payload, size_t size)
{
    (void)size;
    ac__note *n = payload;
    free(n->system);
    free(n->address);
    free(n->why);
    free(n->data);
}

const ac_msg_type ac__msg_type_cluster_note = {.name = "actorc.cluster.Note",
                                               .destroy = note_destroy};

static bool copy_text(char **dst, const char *src)
{
    if (!src)
        return true;
    *dst = ac__strdup(src);
    return *dst != NULL;
}

ac_msg *ac__note_new(ac__note_kind kind, const char *system, const char *address,
                     uint64_t incarnation, const char *why, const void *data, size_t len)
{
    ac_msg *msg = ac_msg_new(&ac__msg_type_cluster_note, sizeof(ac__note));
    if (!msg)
        return NULL;
    ac__note *n = ac_msg_payload(msg);
    n->kind = kind;
    n->incarnation = incarnation;
    bool ok = copy_text(&n->system, system) && copy_text(&n->address, address) &&
              copy_text(&n->why, why);
    if (ok && data && len) {
        n->data = ac__malloc(len);
        ok = n->data != NULL;
        if (ok) {
            memcpy(n->data, data, len);
            n->len = len;
        }
    }
    if (!ok) {
        ac_msg_release(msg);
        return NULL;
    }
    return msg;
}
