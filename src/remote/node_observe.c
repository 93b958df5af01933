/*
 * The node in the system's view (actorc/observe.h): one element of the
 * "node" section, its address and what it counts (ac_node_stats_get:
 * relaxed loads, no lock), so an operator sees peers, traffic, pending
 * asks and nodes lost beside the actors. Added when the node is up,
 * removed when it is freed (after the system's actors, at terminate);
 * a stopped node shows its last counts.
 */
#include <inttypes.h>
#include <stdio.h>

#include "remote/node_internal.h"

static void field(ac_json *j, const char *key, uint64_t value)
{
    ac_json_key(j, key);
    ac_json_uint(j, value);
}

static void node_write(ac_json *j, void *arg)
{
    ac_node *node = arg;
    ac_node_stats s;
    (void)ac_node_stats_get(node, &s);
    ac_json_object(j);
    ac_json_key(j, "address");
    ac_json_string(j, ac_node_address(node));
    ac_json_key(j, "endpoint");
    ac_json_string(j, ac_node_endpoint(node));
    ac_json_key(j, "incarnation");
    ac_json_uint(j, ac_node_incarnation(node));
    ac_json_key(j, "incarnation_hex"); /* whole, where a double would round it */
    char hex[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, ac_node_incarnation(node));
    ac_json_string(j, hex);
    field(j, "peers", s.peers);
    field(j, "connections", s.connections);
    field(j, "frames_out", s.frames_out);
    field(j, "frames_in", s.frames_in);
    field(j, "bytes_out", s.bytes_out);
    field(j, "bytes_in", s.bytes_in);
    field(j, "pending_asks", s.pending_asks);
    field(j, "nodes_lost", s.nodes_down);
    field(j, "asks_failed_by_node_loss", s.asks_failed_by_node_loss);
    field(j, "decode_errors", s.decode_errors);
    field(j, "dropped_backpressure", s.dropped_backpressure);
    field(j, "dropped_stale", s.dropped_stale);
    ac_json_object_end(j);
}

void ac__node_observe_start(ac_node *node)
{
    node->observed = ac_observe_add(node->system, "node", node_write, node);
    ac_clear_error(); /* out of the view is all a failure costs */
}
