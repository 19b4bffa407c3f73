// PeerState: what the "peers" probe keeps about one peer between rounds, on the probe's thread:
// the target as configured, the address it resolved to, when its next probes are due
// (probes/peer_schedule.h), its latency histogram, and the status it publishes
// (probes/peer_publication.h). A PeerSet holds the peers by configured name; a peer present
// before and after a change of the set keeps its state (probes/peer_membership.h).
#pragma once

#include <prometheus/histogram.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "facts/peer_facts.h"
#include "probes/latency_histogram.h"
#include "probes/peer_targets.h"

namespace rdmahd {

struct PeerState {
  using Clock = std::chrono::steady_clock;

  PeerTarget target;
  std::string address;  // resolved; empty until then (and after a failed probe of a DNS name)
  Clock::time_point resolved_at{};
  Clock::time_point next_latency{};
  Clock::time_point next_bandwidth{};
  // prometheus-cpp's Histogram does the bucket accumulation; Collect() gives cumulative counts.
  prometheus::Histogram histogram{PeerLatencyBuckets()};
  PeerStatus status;  // everything but the histogram, which is filled in at publish
  std::shared_ptr<const PeerStatus> published;
  bool dirty = true;  // changed since `published`
};

using PeerSet = std::map<std::string, std::unique_ptr<PeerState>>;  // by configured name

}  // namespace rdmahd
