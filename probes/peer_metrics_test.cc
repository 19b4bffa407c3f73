#include "probes/peer_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/collection_engine.h"
#include "core/probe_scheduler.h"
#include "tests/support/peer_probe_harness.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace rdmahd::testing;

// docs/metrics.md's peers section lists exactly the families a node with peers exposes for the
// probe: its own and its rounds' (the daemon e2e test cannot see them: on fixture trees no peer is
// configured).
TEST(PeerMetricsTest, MetricsDocSectionListsExactlyTheRenderedFamilies) {
  auto script = std::make_shared<Script>();
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(FakeProbeOptions(script))});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  auto c = std::make_shared<Config>(PeersConfig({"10.0.0.2"}));
  c->Section<PeersPolicy>().bandwidth = true;
  c->Section<PeersPolicy>().bandwidth_interval = milliseconds(100);
  scheduler.Configure(c);
  auto wait = [](const std::function<bool()>& done) {
    for (const auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return false;
  };
  ASSERT_TRUE(wait([&] {
    std::lock_guard lock(script->mu);
    return !script->bandwidth_calls.empty() && !script->latency_calls.empty();
  }));
  // The round that made both calls has ended (and published) once one more round has.
  const std::uint64_t rounds = scheduler.counts("peers").rounds;
  ASSERT_TRUE(wait([&] { return scheduler.counts("peers").rounds > rounds; }));
  scheduler.Stop();

  Snapshot snapshot;
  scheduler.CopyInto(snapshot, *c);
  MetricSink sink;
  for (const auto& [name, probe] : scheduler.probes()) probe->Render(snapshot, sink);
  RenderProbeRounds(snapshot, sink);
  const std::set<std::string> rendered = testing::RenderedFamilies(sink.Serialize());
  const std::set<std::string> documented = testing::DocumentedFamilies("(probe `peers`)");
  EXPECT_EQ(documented, rendered);
  EXPECT_EQ(rendered.size(), 9u);
}

// The fleet's series budget: a node with 2 NICs (the mlx5-roce fixture: devices, netdev, roce and
// host collectors, every check) and 32 peers probed for latency and bandwidth, one of them failing
// too, exports at most 2,000 series, histogram buckets included. The figure is printed for
// docs/fleet.md.
TEST(PeerMetricsTest, SeriesBudgetOfANodeWithTwoNicsAndThirtyTwoPeers) {
  Harness h;
  std::vector<std::string> targets;
  for (int i = 1; i <= 32; ++i) {
    char a[32];
    std::snprintf(a, sizeof a, "10.2.0.%d", i);
    targets.push_back(a);
  }
  Config c = PeersConfig(targets, milliseconds(100));
  c.Section<PeersPolicy>().bandwidth = true;
  c.Section<PeersPolicy>().bandwidth_interval = std::chrono::seconds(10);
  c.Section<PeersPolicy>().bandwidth_duration = milliseconds(100);
  {
    std::lock_guard lock(h.script->mu);
    h.script->latency["10.2.0.1"].emplace_back(std::in_place_type<ProbeFailure>, "connect_timeout", "no answer");
  }
  ASSERT_TRUE(h.RunUntil(c, [&] {
    for (const auto& t : targets) {
      if (h.script->Calls(t) < 2) return false;
    }
    return true;
  }));
  auto count_series = [](const std::string& text) {
    std::size_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) n += !line.empty() && line[0] != '#';
    return n;
  };
  const std::size_t peers = count_series(h.Metrics());
  // The peer checks' verdicts: 3 checks x 4 statuses per peer.
  Snapshot snap;
  h.board.CopyInto(snap);
  std::size_t verdicts = 0;
  for (const char* check : {"peer_reachable", "peer_latency", "peer_bandwidth"}) {
    verdicts += RunRegisteredCheck(check, snap, c).size() * 4;
  }
  CollectionEngine engine(NodeFs(testing::ProjectFixture("sysfs/mlx5-roce/sys"), "/nonexistent"));
  auto node_config = std::make_shared<Config>();
  const std::size_t node = count_series(engine.ScrapeText(node_config));
  const std::size_t total = node + peers + verdicts;
  std::printf("series: node with 2 NICs %zu + 32 peers' metrics %zu + their verdicts %zu = %zu (%.1f per peer)\n",
              node, peers, verdicts, total, static_cast<double>(peers + verdicts) / 32);
  EXPECT_LE(total, 2000u);
  EXPECT_GT(peers, 32u * 20u);  // the histogram really is in there (19 series per peer alone)
}


// Every series of a peer: `peer`, then its group's labels, then the family's own; `le` as
// Prometheus' Go clients print bounds; no peers, no families.
TEST(PeerMetricsTest, APeersSeriesCarryItsGroupLabelsAndLeAsGoClientsPrintIt) {
  auto peer = std::make_shared<PeerStatus>();
  peer->name = "10.0.0.2";
  peer->labels = {{"rack", "r1"}};
  peer->histogram.buckets = {{1e-6, 1}, {1e-4, 2}, {std::numeric_limits<double>::infinity(), 3}};
  peer->histogram.sum_seconds = 0.25;
  peer->histogram.count = 3;
  peer->latency = PeerLatencyRound{1, 4.5, 5, 9, 9, 9, 10, "completion", ""};
  peer->bandwidth_bytes_per_second = 1.25e9;
  peer->counts = {{"latency", "failure", "timeout", 2}, {"latency", "success", "", 5}};
  PeerFacts facts;
  facts.peers.push_back(peer);
  MetricSink sink;
  RenderPeerFacts(facts, sink);
  const std::string m = sink.Serialize();
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",rack=\"r1\",le=\"1e-06\"} 1\n"
                           "rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",rack=\"r1\",le=\"0.0001\"} 2\n"
                           "rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",rack=\"r1\",le=\"+Inf\"} 3\n"
                           "rdma_peer_latency_seconds_sum{peer=\"10.0.0.2\",rack=\"r1\"} 0.25\n"
                           "rdma_peer_latency_seconds_count{peer=\"10.0.0.2\",rack=\"r1\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",rack=\"r1\",quantile=\"0.5\"} 4.5e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_clock_info{peer=\"10.0.0.2\",rack=\"r1\",clock=\"completion\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_bandwidth_bytes_per_second{peer=\"10.0.0.2\",rack=\"r1\"} 1250000000\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_probes_total{peer=\"10.0.0.2\",rack=\"r1\",kind=\"latency\",result=\"failure\","
                           "reason=\"timeout\"} 2\n"));

  MetricSink none;
  RenderPeerFacts(PeerFacts{}, none);
  EXPECT_EQ(none.Serialize(), "");
}

}  // namespace
}  // namespace rdmahd
