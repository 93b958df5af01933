/*
 * Names and paths: sibling clashes (AC_EEXIST), invalid names (AC_ENAME),
 * among them names that are not printable UTF-8 text, anonymous names,
 * paths of top-level actors and children. A failed spawn
 * consumes its props (the user data free function runs; ASan checks that
 * nothing leaks).
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

typedef struct nm_data {
    ac_system *sys;
    ts_recorder *rec;
    atomic_llong frees;
    atomic_llong got;
} nm_data;

static void nm_receive(ac_ctx *ctx, ac_msg *msg)
{
    nm_data *d = ac_ctx_user_data(ctx);
    (void)msg;
    atomic_fetch_add(&d->got, 1);
}

static void nm_free(void *user)
{
    nm_data *d = user;
    atomic_fetch_add(&d->frees, 1);
}

static const ac_actor_def nm_def = {.name = "Named", .receive = nm_receive};

static ac_props *props(nm_data *d)
{
    ac_props *p = ac_props_new(&nm_def, d);
    assert_non_null(p);
    assert_status(ac_props_set_user_data_free(p, nm_free), AC_OK);
    return p;
}

static nm_data *setup(ts_fixture *fx)
{
    nm_data *d = ts_fx_data(fx, sizeof *d, NULL);
    d->rec = ts_fx_rec(fx);
    d->sys = ts_fx_system(fx, "names", NULL);
    assert_non_null(d->sys);
    return d;
}

static void test_duplicate_top_level(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    ac_ref *a = ac_spawn(d->sys, props(d), "a");
    assert_non_null(a);

    ac_clear_error();
    ac_ref *b = ac_spawn(d->sys, props(d), "a");
    assert_null(b);
    assert_last_error(AC_EEXIST);
    /* the failed spawn consumed its props */
    assert_int_equal(atomic_load(&d->frees), 1);

    /* the first actor is untouched */
    assert_status(ac_tell(a, ac_msg_int64_new(1), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->got, 1, TS_WAIT_S), "message to the first actor");

    /* the same name is fine elsewhere: a different top-level name works */
    ac_ref *c = ac_spawn(d->sys, props(d), "A");
    assert_non_null(c);

    ac_ref_release(a);
    ac_ref_release(c);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->frees), 3);
}

static void test_invalid_names(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    char too_long[257];
    memset(too_long, 'x', 256);
    too_long[256] = '\0';
    const char *bad[] = {
        "",          /* empty */
        "a/b",       /* slash */
        "/",
        "a/",
        "$x",        /* reserved prefix */
        "$",
        "has space",
        " lead",
        "tab\there",
        "new\nline",
        "del\x7f",
        too_long,    /* 256 characters */
    };
    const size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        ac_clear_error();
        ac_ref *r = ac_spawn(d->sys, props(d), bad[i]);
        if (r != NULL) {
            fail_msg("spawn with invalid name #%zu \"%s\" succeeded", i, bad[i]);
        }
        if (ac_last_status() != AC_ENAME) {
            fail_msg("invalid name #%zu: got %s, expected AC_ENAME", i,
                     ac_status_name(ac_last_status()));
        }
        assert_true(ts_nonempty(ac_last_error()));
    }
    assert_int_equal(atomic_load(&d->frees), (long long)n);

    /* 255 characters is the longest valid name */
    char longest[256];
    memset(longest, 'y', 255);
    longest[255] = '\0';
    ac_ref *ok = ac_spawn(d->sys, props(d), longest);
    assert_non_null(ok);
    assert_string_equal(ac_ref_name(ok), longest);

    /* punctuation other than '/' is fine, and '$' is fine past the start */
    ac_ref *punct = ac_spawn(d->sys, props(d), "a-b_c.d:e$f");
    assert_non_null(punct);
    assert_string_equal(ac_ref_name(punct), "a-b_c.d:e$f");

    ac_ref_release(ok);
    ac_ref_release(punct);
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->frees), (long long)n + 2);
}

static void test_anonymous_names(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    ac_ref *a = ac_spawn(d->sys, props(d), NULL);
    ac_ref *b = ac_spawn(d->sys, props(d), NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(ac_ref_name(a)[0], '$');
    assert_int_equal(ac_ref_name(b)[0], '$');
    assert_true(strlen(ac_ref_name(a)) > 1);
    assert_string_not_equal(ac_ref_name(a), ac_ref_name(b));
    char want[300];
    snprintf(want, sizeof want, "actorc://names/user/%s", ac_ref_name(a));
    assert_string_equal(ac_ref_path(a), want);

    /* both are real actors */
    assert_status(ac_tell(a, ac_msg_int64_new(1), NULL), AC_OK);
    assert_status(ac_tell(b, ac_msg_int64_new(1), NULL), AC_OK);
    assert_eventually(ts_wait_eq(&d->got, 2, TS_WAIT_S), "messages to anonymous actors");

    ac_ref_release(a);
    ac_ref_release(b);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_paths(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    ac_ref *a = ac_spawn(d->sys, props(d), "top");
    assert_non_null(a);
    assert_string_equal(ac_ref_path(a), "actorc://names/user/top");
    assert_string_equal(ac_ref_name(a), "top");
    assert_ptr_equal(ac_ref_system(a), d->sys);
    assert_string_equal(ac_system_name(d->sys), "names");

    /* a retained ref is the same actor */
    ac_ref *again = ac_ref_retain(a);
    assert_non_null(again);
    assert_string_equal(ac_ref_path(again), "actorc://names/user/top");
    ac_ref_release(again);

    assert_string_equal(ac_ref_path(NULL), "");
    assert_string_equal(ac_ref_name(NULL), "");
    ac_ref_release(NULL); /* accepted */
    assert_null(ac_ref_retain(NULL));

    ac_ref_release(a);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

/* ---- names are printable UTF-8 -------------------------------------------- */

/* Spawning `name` fails with AC_ENAME, and the message says `why` and is
 * printable ASCII: the name's other bytes are escaped, not copied. */
static void expect_refused(nm_data *d, const char *name, const char *why)
{
    ac_clear_error();
    ac_ref *r = ac_spawn(d->sys, props(d), name);
    if (r != NULL) {
        fail_msg("a name to be refused (\"%s\") was accepted", why);
    }
    const char *msg = ac_last_error();
    if (ac_last_status() != AC_ENAME || strstr(msg, why) == NULL) {
        fail_msg("expected AC_ENAME saying \"%s\"; got %s: %s", why,
                 ac_status_name(ac_last_status()), msg);
    }
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
        if (*c < 0x20 || *c >= 0x7f) {
            fail_msg("the message for a bad name holds byte 0x%02x: %s", *c, msg);
        }
    }
}

static void test_names_are_valid_utf8(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    static const struct {
        const char *name;
        const char *why;
    } bad[] = {
        {"\xff\xfe", "byte 0 (0xff) cannot start a UTF-8 character"},
        /* a lone continuation byte; a five-byte sequence */
        {"ok\x80", "byte 2 (0x80) cannot start a UTF-8 character"},
        {"\xf8\x88\x80\x80\x80", "byte 0 (0xf8) cannot start a UTF-8 character"},
        {"\xc0\xaf", "overlong"},                                  /* '/' in two bytes */
        {"\xc1\xbf", "overlong"},
        {"\xe0\x80\xaf", "overlong"},
        {"\xe0\x9f\xbf", "overlong"},                              /* U+07FF in three */
        {"\xf0\x80\x80\xaf", "overlong"},
        {"\xf0\x8f\xbf\xbf", "overlong"},                          /* U+FFFF in four */
        {"\xed\xa0\x80", "U+D800, a UTF-16 surrogate"},
        {"x\xed\xbf\xbf", "U+DFFF, a UTF-16 surrogate"},
        {"\xf4\x90\x80\x80", "beyond U+10FFFF"},
        {"\xf7\xbf\xbf\xbf", "beyond U+10FFFF"},
        {"ab\xc3", "at byte 2 is cut short"},                      /* at the end */
        {"\xe2\x82", "at byte 0 is cut short"},
        {"\xe2\x82x", "at byte 0 is cut short"},                   /* a byte too few */
        {"\xf0\x9f\x98", "at byte 0 is cut short"},
        {"\x01", "control character U+0001"},
        {"\x1b[31mred", "control character U+001B"},               /* a terminal escape */
        {"del\x7f", "control character U+007F"},
        {"a\xc2\x85" "b", "control character U+0085"},              /* C1: NEL */
        {"\xc2\x9f", "control character U+009F"},
        {"a\xc2\xa0" "b", "whitespace (U+00A0)"},                   /* no-break space */
        {"\xe2\x80\x83", "whitespace (U+2003)"},                    /* em space */
        {"a\xe2\x80\xa8" "b", "whitespace (U+2028)"},               /* line separator */
        {"\xe3\x80\x80", "whitespace (U+3000)"},                    /* ideographic space */
        {"has space", "whitespace (U+0020)"},
        {"caf\xc3\xa9/x", "'/' (byte 5) separates path segments"},
    };
    const size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        expect_refused(d, bad[i].name, bad[i].why);
    }
    assert_int_equal(atomic_load(&d->frees), (long long)n);

    /* The message quotes the name, bad bytes escaped. */
    expect_refused(d, "\xff\xfe", "invalid actor name \"\\xff\\xfe\"");
    expect_refused(d, "caf\xc3\xa9\xc2\xa0", "invalid actor name \"caf\\xc3\\xa9\\xc2\\xa0\"");
    assert_int_equal(atomic_load(&d->frees), (long long)n + 2);
    assert_status(ts_fx_terminate(fx), AC_OK);
}

static void test_printable_utf8_names_are_fine(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    char euros[260] = ""; /* 85 three-byte characters: 255 bytes, the most */
    for (int i = 0; i < 85; i++) {
        strcat(euros, "\xe2\x82\xac");
    }
    const char *good[] = {
        "caf\xc3\xa9",         /* café */
        "\xe5\x90\x8d\xe5\x89\x8d", /* 名前 */
        "\xf0\x9f\x98\x80",    /* U+1F600, four bytes */
        "\xc2\xa1",            /* U+00A1, the first character past C1 */
        "\xed\x9f\xbf",        /* U+D7FF, just below the surrogates */
        "\xee\x80\x80",        /* U+E000, just above them */
        "\xef\xbf\xbd",        /* U+FFFD */
        "\xf4\x8f\xbf\xbf",    /* U+10FFFF, the last code point */
        "\xe2\x80\x8b",        /* U+200B zero width space: not White_Space */
        "a$b",
        euros,
    };
    const size_t n = sizeof good / sizeof good[0];
    ac_ref *refs[sizeof good / sizeof good[0]];
    for (size_t i = 0; i < n; i++) {
        ac_clear_error();
        refs[i] = ac_spawn(d->sys, props(d), good[i]);
        if (refs[i] == NULL) {
            fail_msg("spawn with the valid name #%zu failed: %s", i, ac_last_error());
        }
        assert_string_equal(ac_ref_name(refs[i]), good[i]);
    }
    char path[400];
    snprintf(path, sizeof path, "actorc://names/user/%s", good[0]);
    assert_string_equal(ac_ref_path(refs[0]), path);

    /* One more euro sign is 258 bytes: too long. */
    strcat(euros, "\xe2\x82\xac");
    expect_refused(d, euros, "longer than 255 bytes");
    for (size_t i = 0; i < n; i++) {
        ac_ref_release(refs[i]);
    }
    assert_status(ts_fx_terminate(fx), AC_OK);
    assert_int_equal(atomic_load(&d->frees), (long long)n + 1);
}

/* System names are the ASCII [A-Za-z0-9_-] whatever the locale, and a
 * refusal quotes the name in plain ASCII too. */
static void test_system_names_are_ascii(void **state)
{
    (void)state;
    /* The last one is "a", a no-break space, "b" (\x62: a hex escape would
     * swallow a plain 'b'). */
    const char *bad[] = {"caf\xe9", "caf\xc3\xa9", "\xff", "a\x1b[2Jb", "a\xc2\xa0\x62"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ac_clear_error();
        ac_system *s = ac_system_create(bad[i], NULL);
        if (s != NULL) {
            ac_system_terminate(s);
            fail_msg("system name #%zu was accepted", i);
        }
        assert_last_error(AC_EINVAL);
        for (const unsigned char *c = (const unsigned char *)ac_last_error(); *c; c++) {
            if (*c < 0x20 || *c >= 0x7f) {
                fail_msg("system name #%zu: the message holds byte 0x%02x: %s", i, *c,
                         ac_last_error());
            }
        }
    }
}

/* ---- children ------------------------------------------------------------ */

static void child_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
}

static const ac_actor_def child_def = {.name = "Child", .receive = child_receive};

static void record_spawn(ac_ctx *ctx, const char *label, const char *name)
{
    nm_data *d = ac_ctx_user_data(ctx);
    ac_props *p = ac_props_new(&child_def, d);
    ac_props_set_user_data_free(p, nm_free);
    ac_clear_error();
    ac_ref *c = ac_spawn_child(ctx, p, name);
    if (c != NULL) {
        ts_rec_add(d->rec, "%s: ok %s", label, ac_ref_path(c));
        ac_ref_release(c);
    } else {
        ts_rec_add(d->rec, "%s: %s%s", label, ac_status_name(ac_last_status()),
                   ts_nonempty(ac_last_error()) ? "" : " (no error text)");
    }
}

static void parent_pre_start(ac_ctx *ctx)
{
    record_spawn(ctx, "kid", "kid");
    record_spawn(ctx, "kid again", "kid");
    record_spawn(ctx, "slash", "a/b");
    record_spawn(ctx, "dollar", "$kid");
    record_spawn(ctx, "empty", "");
    record_spawn(ctx, "same as parent", "p1");
    record_spawn(ctx, "anonymous", NULL);
    nm_data *d = ac_ctx_user_data(ctx);
    ts_rec_add(d->rec, "%s done", ac_self_name(ctx));
}

static const ac_actor_def parent_def = {
    .name = "Parent", .pre_start = parent_pre_start, .receive = child_receive,
};

static void expect_event(ts_recorder *rec, const char *label)
{
    if (ts_rec_index_of(rec, label) < 0) {
        ts_rec_dump(rec, "events");
        fail_msg("missing event \"%s\"", label);
    }
}

static void test_child_names(void **state)
{
    ts_fixture *fx = *state;
    nm_data *d = setup(fx);
    ac_ref *p1 = ts_spawn(d->sys, &parent_def, d, "p1");
    assert_non_null(p1);
    assert_eventually(ts_rec_wait_for(d->rec, "p1 done", TS_WAIT_S), "p1's spawns");
    ac_ref *p2 = ts_spawn(d->sys, &parent_def, d, "p2");
    assert_non_null(p2);
    assert_eventually(ts_rec_wait_for(d->rec, "p2 done", TS_WAIT_S), "p2's spawns");

    expect_event(d->rec, "kid: ok actorc://names/user/p1/kid");
    expect_event(d->rec, "kid: ok actorc://names/user/p2/kid"); /* other parent: fine */
    assert_int_equal(ts_rec_count_of(d->rec, "kid again: AC_EEXIST"), 2);
    assert_int_equal(ts_rec_count_of(d->rec, "slash: AC_ENAME"), 2);
    assert_int_equal(ts_rec_count_of(d->rec, "dollar: AC_ENAME"), 2);
    assert_int_equal(ts_rec_count_of(d->rec, "empty: AC_ENAME"), 2);
    expect_event(d->rec, "same as parent: ok actorc://names/user/p1/p1");
    /* anonymous children get a "$" name under their parent */
    bool anon = false;
    for (size_t i = 0; i < ts_rec_count(d->rec); i++) {
        char ev[TS_REC_LABEL];
        ts_rec_get(d->rec, i, ev, sizeof ev);
        if (strncmp(ev, "anonymous: ok actorc://names/user/p1/$", 38) == 0) {
            anon = true;
        }
    }
    if (!anon) {
        ts_rec_dump(d->rec, "events");
        fail_msg("no anonymous child under p1");
    }
    /* 4 failed spawns per parent consumed their props right away */
    assert_int_equal(atomic_load(&d->frees), 8);

    ac_ref_release(p1);
    ac_ref_release(p2);
    assert_status(ts_fx_terminate(fx), AC_OK);
    /* plus 3 children per parent after terminate (parents have no free fn) */
    assert_int_equal(atomic_load(&d->frees), 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_UNIT(test_duplicate_top_level),
        TS_UNIT(test_invalid_names),
        TS_UNIT(test_names_are_valid_utf8),
        TS_UNIT(test_printable_utf8_names_are_fine),
        TS_UNIT(test_system_names_are_ascii),
        TS_UNIT(test_anonymous_names),
        TS_UNIT(test_paths),
        TS_UNIT(test_child_names),
    };
    return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
