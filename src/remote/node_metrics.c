/*
 * A node's counts (ac_node_stats), its metric series when the system's
 * metrics are on, and its rate-limited warnings.
 *
 * The counts of frames and bytes are written by the transport thread
 * only (a plain load and store, no locked update per frame); a peer gets
 * its series once it has said hello, so that an address a stranger named
 * leaves none behind.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "remote/node_internal.h"

/* The per-peer families and the node's counters, registered at start when
 * the system's metrics are on. */
void ac__node_metrics_register(ac_node *node)
{
    if (!ac_metrics_enabled(node->system))
        return;
    static const char *const peer_label[] = {"peer"};
    ac_metric_options po = {.label_names = peer_label, .label_count = 1, .max_series = 1000};
    po.help = "Frames sent to a peer node.";
    node->f_frames_out = ac_metrics_counter(node->system, "actorc_remote_frames_sent_total", &po);
    po.help = "Bytes of frames sent to a peer node.";
    node->f_bytes_out = ac_metrics_counter(node->system, "actorc_remote_bytes_sent_total", &po);
    po.help = "Frames received from a peer node.";
    node->f_frames_in = ac_metrics_counter(node->system, "actorc_remote_frames_received_total", &po);
    po.help = "Bytes of frames received from a peer node.";
    node->f_bytes_in = ac_metrics_counter(node->system, "actorc_remote_bytes_received_total", &po);
    ac_metric_options o = {.help = "Malformed frames and bodies dropped."};
    node->c_decode_errors = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_decode_errors_total", &o), NULL);
    o.help = "Peer nodes lost (connection dropped, heartbeats stopped, new incarnation, left).";
    node->c_nodes_down = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_nodes_down_total", &o), NULL);
    o.help = "Asks failed with NodeDownError because their node was lost.";
    node->c_asks_failed = ac_counter_series(
        ac_metrics_counter(node->system, "actorc_remote_asks_failed_node_down_total", &o), NULL);
    static const char *const reason_label[] = {"reason"};
    ac_metric_options ro = {.help = "Frames not sent or not handled, by reason.",
                            .label_names = reason_label, .label_count = 1};
    ac_metric_family *dropped = ac_metrics_counter(node->system, "actorc_remote_frames_dropped_total", &ro);
    static const char *const bp[] = {"backpressure"}, *const stale[] = {"stale"};
    node->c_dropped_backpressure = ac_counter_series(dropped, bp);
    node->c_dropped_stale = ac_counter_series(dropped, stale);
    if (node->fault) { /* the fault layer's (ac_node_link_fault) */
        static const char *const fdrop[] = {"fault_drop"}, *const fhole[] = {"fault_blackhole"};
        node->c_fault_dropped = ac_counter_series(dropped, fdrop);
        node->c_fault_blackholed = ac_counter_series(dropped, fhole);
        o.help = "Frames a link fault held (a delay or a rate) before they went on.";
        node->c_fault_delayed = ac_counter_series(
            ac_metrics_counter(node->system, "actorc_remote_frames_delayed_total", &o), NULL);
    }
    ac_clear_error();
}

/* The series of one peer (transport thread, once it is known). */
static void metrics_peer(ac_node *node, ac__peer *p)
{
    if (p->metered || !node->f_frames_out)
        return;
    p->metered = true;
    char label[320];
    pthread_mutex_lock(&node->lock);
    snprintf(label, sizeof label, "%s@%s", p->system ? p->system : "", p->address);
    pthread_mutex_unlock(&node->lock);
    const char *v[] = {label};
    p->m_frames_out = ac_counter_series(node->f_frames_out, v);
    p->m_bytes_out = ac_counter_series(node->f_bytes_out, v);
    p->m_frames_in = ac_counter_series(node->f_frames_in, v);
    p->m_bytes_in = ac_counter_series(node->f_bytes_in, v);
    ac_counter_add(p->m_frames_out, p->early_frames);
    ac_counter_add(p->m_bytes_out, p->early_bytes);
}

/* Add to a count only the transport thread writes (others read it): a
 * plain load and store, no locked read-modify-write per frame. */
static void own_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Count what left for `p`: `frames` frames of `bytes` bytes in all. */
void ac__node_count_out(ac_node *node, ac__peer *p, size_t frames, size_t bytes)
{
    own_add(&node->m.frames_out, frames);
    own_add(&node->m.bytes_out, bytes);
    p->last_used_ns = node->loop_ns;
    /* Series only for nodes that said hello: an address a stranger named
     * must not leave a series behind for good. */
    if (atomic_load_explicit(&p->state, memory_order_relaxed) != AC__PEER_UP) {
        p->early_frames += frames; /* added to its series once it has one */
        p->early_bytes += bytes;
        return;
    }
    metrics_peer(node, p);
    ac_counter_add(p->m_frames_out, frames);
    ac_counter_add(p->m_bytes_out, bytes);
}

/* Count a frame that came (before it is handled: whoever it reaches may
 * read the counts). */
void ac__node_count_in(ac_node *node, ac__peer *from, size_t bytes)
{
    own_add(&node->m.frames_in, 1);
    own_add(&node->m.bytes_in, bytes);
    if (from && from != node->self) {
        from->last_used_ns = node->loop_ns;
        metrics_peer(node, from);
        ac_counter_inc(from->m_frames_in);
        ac_counter_add(from->m_bytes_in, bytes);
    }
}

/* A line a second at most per *last_ns; with `unlogged`, saying how many
 * lines were left out since the last. */
void ac__node_log_counted(ac_node *node, int64_t *last_ns, uint64_t *unlogged, const char *fmt, ...)
{
    int64_t t = ac__node_now_ns();
    if (*last_ns && t - *last_ns < 1000000000ll) {
        if (unlogged)
            (*unlogged)++;
        return;
    }
    *last_ns = t;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (unlogged && *unlogged)
        ac_system_log(node->system, AC_LOG_WARN, "node %s: %s (and %" PRIu64 " more like it "
                      "since the last such line)", node->address, line, *unlogged);
    else
        ac_system_log(node->system, AC_LOG_WARN, "node %s: %s", node->address, line);
    if (unlogged)
        *unlogged = 0;
}
