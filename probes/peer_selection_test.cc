#include "probes/peer_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace rdmahd {
namespace {

// `racks` racks of `per_rack` nodes: node "r<R>-n<N>" under ToR "tor<R>".
std::vector<PeerCandidate> Fleet(int racks, int per_rack) {
  std::vector<PeerCandidate> out;
  for (int r = 0; r < racks; ++r) {
    for (int n = 0; n < per_rack; ++n) {
      // (built with snprintf: gcc 12 -O3 warns falsely on chained std::string + here)
      char name[32], tor[32];
      std::snprintf(name, sizeof name, "r%d-n%d", r, n);
      std::snprintf(tor, sizeof tor, "tor%d", r);
      out.push_back({name, tor});
    }
  }
  return out;
}

using Edges = std::set<std::pair<std::string, std::string>>;

Edges AllEdges(const std::vector<PeerCandidate>& fleet, const SelectionPolicy& policy) {
  PeerSelector selector(fleet);
  Edges edges;
  for (const PeerCandidate& c : fleet) {
    for (const SelectedPeer& p : selector.Select(c.name, policy)) edges.insert({c.name, p.name});
  }
  return edges;
}

TEST(PeerSelectionTest, BoundedDeterministicNeverSelfNoDuplicates) {
  const auto fleet = Fleet(20, 12);
  PeerSelector selector(fleet);
  SelectionPolicy policy;
  for (const PeerCandidate& c : fleet) {
    auto picked = selector.Select(c.name, policy);
    EXPECT_LE(picked.size(), policy.max_peers);
    EXPECT_EQ(picked.size(), policy.max_peers);  // 239 candidates: the budget is always filled
    std::set<std::string> names;
    for (const auto& p : picked) {
      EXPECT_NE(p.name, c.name);
      EXPECT_TRUE(names.insert(p.name).second) << p.name;
    }
    // Same answer from a selector built from the same set in another order.
    auto shuffled = fleet;
    std::reverse(shuffled.begin(), shuffled.end());
    auto again = PeerSelector(shuffled).Select(c.name, policy);
    ASSERT_EQ(again.size(), picked.size());
    for (std::size_t i = 0; i < picked.size(); ++i) EXPECT_EQ(again[i].name, picked[i].name);
    if (c.name == "r0-n0") break;  // the order check is the expensive part: one node is enough
  }
}

TEST(PeerSelectionTest, EveryNodeIsProbedByThreeAndEveryTorPairIsCovered) {
  const auto fleet = Fleet(40, 10);
  const Edges edges = AllEdges(fleet, SelectionPolicy{});
  std::map<std::string, int> in_degree;
  std::map<std::string, std::string> tor_of;
  for (const auto& c : fleet) tor_of[c.name] = c.tor;
  std::set<std::pair<std::string, std::string>> tor_pairs;
  for (const auto& [from, to] : edges) {
    ++in_degree[to];
    const std::string& a = tor_of[from];
    const std::string& b = tor_of[to];
    if (a != b) tor_pairs.insert({std::min(a, b), std::max(a, b)});
  }
  for (const auto& c : fleet) EXPECT_GE(in_degree[c.name], 3) << c.name;
  EXPECT_EQ(tor_pairs.size(), 40u * 39u / 2u);
}

TEST(PeerSelectionTest, OneNodeLeavingMovesOnlyTheAssignmentsThatInvolvedIt) {
  const auto fleet = Fleet(30, 10);
  SelectionPolicy policy;
  const Edges before = AllEdges(fleet, policy);
  auto smaller = fleet;
  smaller.erase(smaller.begin() + 57);  // "r5-n7"
  const Edges after = AllEdges(smaller, policy);
  std::size_t moved = 0;
  for (const auto& e : after) moved += !before.contains(e);
  EXPECT_GT(moved, 0u);
  EXPECT_LE(moved, 2 * policy.max_peers) << "of " << after.size() << " assignments";
}

TEST(PeerSelectionTest, EpochRotatesOwnChoicesButNotTheRing) {
  const auto fleet = Fleet(10, 10);
  PeerSelector selector(fleet);
  SelectionPolicy a, b;
  b.epoch = 1;
  auto first = selector.Select("r3-n3", a);
  auto second = selector.Select("r3-n3", b);
  std::set<std::string> ring_a, ring_b, all_a, all_b;
  for (const auto& p : first) {
    all_a.insert(p.name);
    if (p.reason == SelectionReason::kRing) ring_a.insert(p.name);
  }
  for (const auto& p : second) {
    all_b.insert(p.name);
    if (p.reason == SelectionReason::kRing) ring_b.insert(p.name);
  }
  EXPECT_EQ(ring_a.size(), 3u);
  EXPECT_EQ(ring_a, ring_b);
  EXPECT_NE(all_a, all_b);
}

TEST(PeerSelectionTest, AFlatListFillsTheBudgetFromTheOneGroup) {
  std::vector<PeerCandidate> flat;
  for (int i = 0; i < 20; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "n%d", i);
    flat.push_back({name, ""});
  }
  EXPECT_EQ(PeerSelector(flat).Select("n0", SelectionPolicy{}).size(), 19u);  // everyone else, k = 32
  SelectionPolicy ten;
  ten.max_peers = 10;
  EXPECT_EQ(PeerSelector(flat).Select("n0", ten).size(), 10u);
}

TEST(PeerSelectionTest, WithoutTorLabelsAndInTinyFleets) {
  std::vector<PeerCandidate> flat = {{"a", ""}, {"b", ""}, {"c", ""}};
  PeerSelector selector(flat);
  auto picked = selector.Select("a", SelectionPolicy{});
  EXPECT_EQ(picked.size(), 2u);  // everyone else, nothing more
  EXPECT_TRUE(PeerSelector(std::vector<PeerCandidate>{{"solo", "t"}}).Select("solo", SelectionPolicy{}).empty());
  // A node that is not in the set probes samples only, within the budget.
  SelectionPolicy two;
  two.max_peers = 2;
  auto outsider = PeerSelector(Fleet(3, 3)).Select("stranger", two);
  ASSERT_EQ(outsider.size(), 2u);
  for (const auto& p : outsider) EXPECT_EQ(p.reason, SelectionReason::kSample);
}

TEST(PeerSelectionTest, StableHashIsFixedAcrossBuilds) {
  // Every node must agree: the hash is part of the wire contract, not an implementation detail.
  EXPECT_EQ(StableHash("", 0), StableHash("", 0));
  EXPECT_NE(StableHash("a", 0), StableHash("a", 1));
  // Computed independently (FNV-1a 64 seeded with SplitMix64(seed), SplitMix64 finaliser) in Python.
  EXPECT_EQ(StableHash("node-1", 7), 0x5e2bd700cf73f22aull);
}

}  // namespace
}  // namespace rdmahd
