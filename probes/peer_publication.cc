#include "probes/peer_publication.h"

#include <memory>
#include <utility>

namespace rdmahd {

bool HasUnpublishedChanges(const PeerSet& peers, bool set_changed) {
  bool any = set_changed;
  for (const auto& [name, peer] : peers) any = any || peer->dirty;
  return any;
}

void AddPeerStatuses(PeerSet& peers, PeerFacts& facts) {
  facts.peers.reserve(peers.size());
  for (auto& [name, peer] : peers) {
    if (peer->dirty || !peer->published) {
      auto status = std::make_shared<PeerStatus>(peer->status);
      const prometheus::ClientMetric m = peer->histogram.Collect();
      status->histogram.buckets.reserve(m.histogram.bucket.size());
      for (const auto& b : m.histogram.bucket) status->histogram.buckets.emplace_back(b.upper_bound, b.cumulative_count);
      status->histogram.sum_seconds = m.histogram.sample_sum;
      status->histogram.count = m.histogram.sample_count;
      peer->published = std::move(status);
      peer->dirty = false;
    }
    facts.peers.push_back(peer->published);
  }
}

}  // namespace rdmahd
