#include "node_pair.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

ac_system *rt_node_system(const char *name, const char *bind, ac_node_options o, ac_node **node)
{
    ac_system_options so = {.workers = 2};
    ac_system *sys = ac_system_create(name, &so);
    if (!sys)
        fail_msg("ac_system_create %s: %s", name, ac_last_error());
    o.bind = bind;
    *node = ac_node_start(sys, &o);
    if (!*node)
        fail_msg("ac_node_start %s: %s", bind, ac_last_error());
    return sys;
}

ac_ref *rt_resolve(ac_node *from, const char *system, ac_node *at, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "actorc://%s@%s%s", system, ac_node_address(at), path);
    ac_ref *r = ac_node_resolve(from, buf);
    if (!r)
        fail_msg("resolve %s: %s", buf, ac_last_error());
    return r;
}

void rt_ask_echo(ac_ref *r, const char *text, int64_t timeout_ms)
{
    ac_answer a = {0};
    ac_status st = ac_ask_wait(r, ac_msg_str_new(text), timeout_ms, &a);
    if (st != AC_OK)
        fail_msg("ask %s: %s", text, a.error ? ac_error_message(a.error) : ac_last_error());
    assert_string_equal(ac_msg_str(a.reply), text);
    ac_answer_release(&a);
}
