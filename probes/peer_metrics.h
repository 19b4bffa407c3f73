// The rdma_peer_* families (docs/metrics.md, "Peer probes"), rendered from the PeerFacts a round
// published: per peer, the latency histogram, the last round's perftest statistics as quantiles
// and the clock that timed them, the last bandwidth stream, and the probe counters. Every series
// carries `peer` and the labels the targets file gives the peer's group.
#pragma once

#include "common/metric_sink.h"
#include "facts/peer_facts.h"

namespace rdmahd {

// Nothing for no peers.
void RenderPeerFacts(const PeerFacts& facts, MetricSink& sink);

}  // namespace rdmahd
