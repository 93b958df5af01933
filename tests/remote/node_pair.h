/*
 * What the remote tests that run both nodes in their own process share: a
 * system with a node bound where asked, resolving a path on another node,
 * and an ask of the echo actor (node_serve.h) that must come back.
 * cmocka assertions: call from the test thread only.
 */
#ifndef ACTORC_TESTS_NODE_PAIR_H
#define ACTORC_TESTS_NODE_PAIR_H

#include <stdint.h>

#include <actorc.h>

/* A system named `name` (two workers) with a node at `bind`, started with
 * `o` (its bind replaced); fails the test when either cannot be made. */
ac_system *rt_node_system(const char *name, const char *bind, ac_node_options o, ac_node **node);

/* actorc://<system>@<address of at><path>, resolved on `from`. */
ac_ref *rt_resolve(ac_node *from, const char *system, ac_node *at, const char *path);

/* Ask the echo actor `r` for `text` within `timeout_ms`; fails the test
 * unless the same text comes back. */
void rt_ask_echo(ac_ref *r, const char *text, int64_t timeout_ms);

#endif
