// Fleet simulation for peer selection (probes/peer_selection.h): N synthetic nodes in R racks,
// each node's choice computed as the daemon computes it, then the fleet-wide figures the selection
// is judged by. The last line is JSON:
//   in_degree_min / in_degree_median / in_degree_max: how many nodes probe each node
//   tor_pair_coverage: the share of unordered ToR pairs some node probes across (1 = all)
//   moved_assignments_on_one_node_churn: (prober, target) assignments that are new after one node
//     leaves (the node in the middle of the list), out of all assignments
//   peers_per_node_max: the largest choice (bounded by k)
//   series_per_node: what one node exports with 2 NICs and k peers: the daemon's collectors and
//     checks on the 2-NIC fixture tree (tests/fixtures/sysfs/mlx5-roce) plus the peers probe's
//     metrics and the peer checks' verdicts for k peers with latency, bandwidth and a failure
//     reason each, rendered by the real renderers and counted
//
// Usage: rdmahd_fleet_sim [NODES [RACKS [K]]]   (defaults 10000 500 32)
#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/check.h"
#include "core/collection_engine.h"
#include "facts/peer_facts.h"
#include "probes/peer_probe.h"
#include "probes/peer_selection.h"

namespace {

using rdmahd::PeerCandidate;
using rdmahd::PeerSelector;
using rdmahd::SelectionPolicy;

std::vector<PeerCandidate> MakeFleet(int nodes, int racks) {
  std::vector<PeerCandidate> fleet;
  fleet.reserve(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    char name[32], tor[32];
    std::snprintf(name, sizeof name, "node-%05d", i);
    std::snprintf(tor, sizeof tor, "tor-%03d", i % racks);
    fleet.push_back({name, tor});
  }
  return fleet;
}

// Every (prober, target) pair, as "prober\ttarget".
std::vector<std::string> Assignments(const std::vector<PeerCandidate>& fleet, const SelectionPolicy& policy,
                                     std::size_t& max_peers) {
  PeerSelector selector(fleet);
  std::vector<std::string> out;
  max_peers = 0;
  for (const PeerCandidate& c : fleet) {
    auto picked = selector.Select(c.name, policy);
    max_peers = std::max(max_peers, picked.size());
    for (const auto& p : picked) out.push_back(c.name + "\t" + p.name);
  }
  return out;
}

std::size_t CountSeries(const std::string& exposition) {
  std::size_t n = 0;
  std::size_t at = 0;
  while (at < exposition.size()) {
    const std::size_t end = exposition.find('\n', at);
    const std::size_t len = (end == std::string::npos ? exposition.size() : end) - at;
    if (len > 0 && exposition[at] != '#') ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

// One node's series: its collectors and checks on a 2-NIC tree, and the peers probe's metrics and
// verdicts for `peers` peers in the state that has the most series (latency and bandwidth both
// measured, one failure reason counted beside the successes).
std::size_t SeriesPerNode(std::size_t peers) {
  rdmahd::CollectionEngine engine(rdmahd::NodeFs(RDMAHD_SOURCE_DIR "/tests/fixtures/sysfs/mlx5-roce/sys", "/nonexistent"));
  auto config = std::make_shared<rdmahd::Config>();
  config->Section<rdmahd::PeersPolicy>().bandwidth = true;
  std::size_t n = CountSeries(engine.ScrapeText(config));

  rdmahd::PeerFacts facts;
  facts.bandwidth_enabled = true;
  for (std::size_t i = 0; i < peers; ++i) {
    auto p = std::make_shared<rdmahd::PeerStatus>();
    p->name = "10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    p->last_latency = rdmahd::PeerProbeResult::kSuccess;
    p->latency = rdmahd::PeerLatencyRound{1, 2, 2, 5, 9, 9, 999, "steady", ""};
    for (double bound : rdmahd::PeerLatencyBuckets()) p->histogram.buckets.emplace_back(bound, 999);
    p->histogram.buckets.emplace_back(std::numeric_limits<double>::infinity(), 999);
    p->histogram.count = 999;
    p->last_bandwidth = rdmahd::PeerProbeResult::kSuccess;
    p->bandwidth_bytes_per_second = 1e10;
    p->counts = {{"bandwidth", "success", "", 1}, {"latency", "failure", "connect_timeout", 1}, {"latency", "success", "", 9}};
    facts.peers.push_back(std::move(p));
  }
  rdmahd::Snapshot snapshot;
  snapshot.Put(facts);
  rdmahd::MetricSink sink;
  rdmahd::PeerProbe().Render(snapshot, sink);
  n += CountSeries(sink.Serialize());
  for (const char* check : {"peer_reachable", "peer_latency", "peer_bandwidth"}) {
    n += 4 * rdmahd::RunRegisteredCheck(check, snapshot, *config).size();  // one series per status
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int racks = argc > 2 ? std::atoi(argv[2]) : 500;
  SelectionPolicy policy;
  if (argc > 3) policy.max_peers = static_cast<std::size_t>(std::atoi(argv[3]));
  if (nodes < 2 || racks < 1 || racks > nodes || policy.max_peers < 1) {
    std::fprintf(stderr, "usage: %s [NODES [RACKS [K]]] (NODES >= 2, 1 <= RACKS <= NODES, K >= 1)\n", argv[0]);
    return 2;
  }
  const auto fleet = MakeFleet(nodes, racks);
  std::unordered_map<std::string, std::string> tor_of;
  for (const auto& c : fleet) tor_of[c.name] = c.tor;

  const auto t0 = std::chrono::steady_clock::now();
  std::size_t max_peers = 0;
  const std::vector<std::string> before = Assignments(fleet, policy, max_peers);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::unordered_map<std::string, int> in_degree;
  for (const auto& c : fleet) in_degree[c.name] = 0;
  std::set<std::pair<std::string, std::string>> tor_pairs;
  for (const std::string& a : before) {
    const std::string from = a.substr(0, a.find('\t')), to = a.substr(a.find('\t') + 1);
    ++in_degree[to];
    const std::string &x = tor_of[from], &y = tor_of[to];
    if (x != y) tor_pairs.insert({std::min(x, y), std::max(x, y)});
  }
  std::vector<int> degrees;
  for (const auto& [name, d] : in_degree) degrees.push_back(d);
  std::sort(degrees.begin(), degrees.end());
  const double all_pairs = static_cast<double>(racks) * (racks - 1) / 2;

  auto churned = fleet;
  churned.erase(churned.begin() + nodes / 2);
  std::size_t unused = 0;
  const std::vector<std::string> after = Assignments(churned, policy, unused);
  const std::unordered_set<std::string> before_set(before.begin(), before.end());
  std::size_t moved = 0;
  for (const std::string& a : after) moved += !before_set.contains(a);

  std::printf("%d nodes in %d racks, k=%zu: %zu assignments, selection for the whole fleet in %.2f s\n", nodes, racks,
              policy.max_peers, before.size(), seconds);
  std::printf("{\"nodes\": %d, \"racks\": %d, \"k\": %zu, \"in_degree_min\": %d, \"in_degree_median\": %d, "
              "\"in_degree_max\": %d, \"tor_pair_coverage\": %.4f, \"moved_assignments_on_one_node_churn\": %zu, "
              "\"assignments\": %zu, \"peers_per_node_max\": %zu, \"series_per_node\": %zu}\n",
              nodes, racks, policy.max_peers, degrees.front(), degrees[degrees.size() / 2], degrees.back(),
              all_pairs > 0 ? static_cast<double>(tor_pairs.size()) / all_pairs : 1.0, moved, before.size(), max_peers,
              SeriesPerNode(policy.max_peers));
  return 0;
}
