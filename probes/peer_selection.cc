#include "probes/peer_selection.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace rdmahd {
namespace {

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t kRingSeed = 0x72696e67;    // "ring"
constexpr std::uint64_t kPairSeed = 0x70616972;    // "pair"
constexpr std::uint64_t kOwnerSeed = 0x6f776e72;   // "ownr"
constexpr std::uint64_t kTargetSeed = 0x74617267;  // "targ"
constexpr std::uint64_t kExtraSeed = 0x65787472;   // "extr"

// The member of `group` with the highest rendezvous weight for `key` (names break ties).
const PeerCandidate* Rendezvous(const std::vector<const PeerCandidate*>& group, std::uint64_t key) {
  const PeerCandidate* best = nullptr;
  std::uint64_t best_weight = 0;
  for (const PeerCandidate* c : group) {
    const std::uint64_t w = StableHash(c->name, key);
    if (best == nullptr || w > best_weight || (w == best_weight && c->name < best->name)) {
      best = c;
      best_weight = w;
    }
  }
  return best;
}

}  // namespace

std::uint64_t StableHash(std::string_view text, std::uint64_t seed) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ Mix(seed);
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return Mix(h);
}

std::string_view SelectionReasonName(SelectionReason r) {
  switch (r) {
    case SelectionReason::kRing: return "ring";
    case SelectionReason::kTorPair: return "tor_pair";
    case SelectionReason::kSameTor: return "same_tor";
    case SelectionReason::kSample: return "sample";
  }
  return "sample";
}

PeerSelector::PeerSelector(std::vector<PeerCandidate> all) : all_(std::move(all)) {
  std::set<std::string_view> seen;
  std::map<std::string_view, std::vector<Member>> groups;
  for (const PeerCandidate& c : all_) {
    if (!seen.insert(c.name).second) continue;
    groups[c.tor].push_back({&c, StableHash(c.name, kRingSeed)});
  }
  for (auto& [tor, members] : groups) {
    std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
      return a.ring_key != b.ring_key ? a.ring_key < b.ring_key : a.candidate->name < b.candidate->name;
    });
    tor_names_.emplace_back(tor);
    auto& ring = tors_.emplace_back();
    ring.reserve(members.size());
    for (const Member& m : members) {
      where_[m.candidate->name] = {tors_.size() - 1, ring.size()};
      ring.push_back(m.candidate);
    }
  }
}

std::vector<SelectedPeer> PeerSelector::Select(std::string_view self, const SelectionPolicy& policy) const {
  std::vector<SelectedPeer> out;
  std::set<std::string_view> chosen;
  auto take = [&](const PeerCandidate* c, SelectionReason why) {
    if (c == nullptr || c->name == self || !chosen.insert(c->name).second) return;
    out.push_back({c->name, why});
  };

  // Where `self` sits: its ToR group and ring position.
  std::size_t my_tor = tors_.size(), at = 0;
  if (auto it = where_.find(self); it != where_.end()) std::tie(my_tor, at) = it->second;
  const std::uint64_t epoch_key = Mix(policy.epoch);
  const std::uint64_t self_key = StableHash(self, epoch_key);

  if (my_tor < tors_.size()) {
    const auto& mates = tors_[my_tor];
    const PeerCandidate* me = mates[at];
    const std::string& my_name = tor_names_[my_tor];
    // 1. Ring successors in the own ToR: the in-degree guarantee.
    const std::size_t ring = std::min(policy.ring_successors, mates.size() - 1);
    for (std::size_t i = 1; i <= ring; ++i) take(mates[(at + i) % mates.size()], SelectionReason::kRing);

    // 2. The ToR pairs this node owns: coverage of every pair.
    for (std::size_t t = 0; t < tors_.size(); ++t) {
      if (t == my_tor) continue;
      const std::string& lo = std::min(tor_names_[t], my_name);
      const std::string& hi = std::max(tor_names_[t], my_name);
      const std::uint64_t pair = StableHash(hi, StableHash(lo, kPairSeed));
      if (((Mix(pair) & 1) ? lo : hi) != my_name) continue;  // the other side owns it
      if (Rendezvous(mates, pair ^ kOwnerSeed) != me) continue;  // another member of this ToR does
      take(Rendezvous(tors_[t], pair ^ kTargetSeed ^ epoch_key), SelectionReason::kTorPair);
    }

    // 3. More of the own ToR, in this node's own rendezvous order.
    std::vector<std::pair<std::uint64_t, const PeerCandidate*>> extra;
    for (const PeerCandidate* c : mates) extra.emplace_back(StableHash(c->name, self_key ^ kExtraSeed), c);
    std::sort(extra.begin(), extra.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::size_t same = ring;
    for (const auto& [weight, c] : extra) {
      if (same >= policy.same_tor_cap || out.size() >= policy.max_peers) break;
      const std::size_t before = out.size();
      take(c, SelectionReason::kSameTor);
      same += out.size() - before;
    }
  }

  // 4. Samples from the other ToRs (from everyone when `self` has no ToR here).
  if (out.size() < policy.max_peers) {
    std::vector<std::pair<std::uint64_t, const PeerCandidate*>> ranked;
    for (std::size_t t = 0; t < tors_.size(); ++t) {
      if (t == my_tor) continue;
      for (const PeerCandidate* c : tors_[t]) ranked.emplace_back(StableHash(c->name, self_key), c);
    }
    const std::size_t n = std::min(ranked.size(), policy.max_peers - out.size() + chosen.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < n && out.size() < policy.max_peers; ++i) take(ranked[i].second, SelectionReason::kSample);
  }
  // 5. Budget left and no other ToR to draw from (a flat list, one rack): more of the own ToR after
  // all, so that a node probes min(max_peers, everyone else).
  if (out.size() < policy.max_peers && my_tor < tors_.size()) {
    std::vector<std::pair<std::uint64_t, const PeerCandidate*>> rest;
    for (const PeerCandidate* c : tors_[my_tor]) rest.emplace_back(StableHash(c->name, self_key ^ kExtraSeed), c);
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [weight, c] : rest) {
      if (out.size() >= policy.max_peers) break;
      take(c, SelectionReason::kSameTor);
    }
  }
  if (out.size() > policy.max_peers) out.resize(policy.max_peers);
  return out;
}

}  // namespace rdmahd
