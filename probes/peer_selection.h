// Peer selection for fleets: which of the discovered peers this node probes, so that no node
// probes thousands and no fleet exports millions of series.
//
// Every node computes its own choice from the same discovered set (names + ToR labels), with no
// coordination, and the choices add up to fleet-wide guarantees:
//  - in-degree: within each ToR the members sit on a ring ordered by a stable hash of their name,
//    and every node probes its `ring_successors` next members: every node of a ToR with more than
//    `ring_successors` members is probed by at least that many others;
//  - ToR-pair coverage: each unordered pair of ToRs is owned by one side (by a hash of the pair),
//    and within that ToR by one member (rendezvous hashing); that member probes one node of the
//    other ToR (rendezvous again), so every ToR pair is covered by some node;
//  - the rest of the budget (`max_peers`) goes to more members of the own ToR (up to
//    `same_tor_cap`) and to sampled nodes of other ToRs, by rendezvous hashing; when other ToRs
//    run out (a flat list, one rack), to the rest of the own ToR: a node probes
//    min(max_peers, everyone else).
// Rendezvous (highest-random-weight) hashing makes churn cheap: a node joining or leaving moves
// only the choices that involved it, O(max_peers) assignments, not all of them. What a node picks
// alone (pair targets, extras, samples) is keyed by `epoch` as well, so it rotates slowly when
// the caller advances the epoch (e.g. hourly); the ring and pair ownership never rotate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rdmahd {

struct PeerCandidate {
  std::string name;  // unique within the set (address or host name)
  std::string tor;   // ToR / rack label; empty = unknown (all unknowns form one group)
};

struct SelectionPolicy {
  std::size_t max_peers = 32;
  std::size_t ring_successors = 3;
  std::size_t same_tor_cap = 8;  // own-ToR peers at most (ring included)
  std::uint64_t epoch = 0;
};

enum class SelectionReason { kRing, kTorPair, kSameTor, kSample };
std::string_view SelectionReasonName(SelectionReason r);  // "ring", "tor_pair", "same_tor", "sample"

struct SelectedPeer {
  std::string name;
  SelectionReason reason;
};

// The discovered set, grouped by ToR in ring order once; Select() is then cheap enough to run for
// every node of a 10,000-node fleet in a simulation, and again whenever discovery changes.
class PeerSelector {
 public:
  // Names listed twice count once (the first entry's ToR).
  explicit PeerSelector(std::vector<PeerCandidate> all);

  // The peers `self` probes, at most policy.max_peers, never itself, no duplicates; in priority
  // order (ring, ToR pairs, own ToR, samples), so truncation drops samples first. A `self` missing
  // from the set has no ToR and probes samples only.
  std::vector<SelectedPeer> Select(std::string_view self, const SelectionPolicy& policy) const;

  std::size_t size() const { return all_.size(); }

 private:
  struct Member {
    const PeerCandidate* candidate;
    std::uint64_t ring_key;
  };
  std::vector<PeerCandidate> all_;
  std::vector<std::string> tor_names_;           // sorted
  std::vector<std::vector<const PeerCandidate*>> tors_;  // parallel to tor_names_, each in ring order
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> where_;  // name -> (ToR, ring index)
};

// The stable 64-bit hash selection is built on (FNV-1a, then a SplitMix64 finaliser): the same on
// every node and every build, unlike std::hash.
std::uint64_t StableHash(std::string_view text, std::uint64_t seed = 0);

}  // namespace rdmahd
