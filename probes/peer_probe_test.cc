#include "probes/peer_probe.h"

#include <malloc.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/probe_scheduler.h"
#include "tests/support/peer_probe_harness.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace rdmahd::testing;

TEST(PeerProbeTest, LatencyRoundBecomesQuantileGaugesHistogramAndCounters) {
  Harness h;
  Config c = PeersConfig({"10.0.0.2"});
  c.Section<PeersPolicy>().port = 18601;
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.2") >= 1; }));
  {
    std::lock_guard lock(h.script->mu);
    EXPECT_EQ(h.script->endpoints.front().address, "10.0.0.2");
    EXPECT_EQ(h.script->endpoints.front().port, 18601);
  }
  const std::string m = h.Metrics();
  // perftest statistics of {1..9,100} us, in seconds.
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0\"} 1e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.5\"} 4.5e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.99\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.999\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"1\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_clock_info{peer=\"10.0.0.2\",clock=\"steady\"} 1\n"));
  // Every sample of the round in the histogram (10 of them: 1,2 <= 2us; 1..5 <= 5us; 1..9 <= 10us;
  // 100 us only in le=0.0001), counted with prometheus-cpp's upper-inclusive buckets.
  EXPECT_THAT(m, HasSubstr("# TYPE rdma_peer_latency_seconds histogram\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"1e-06\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"2e-06\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"5e-06\"} 5\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"1e-05\"} 9\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"5e-05\"} 9\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"0.0001\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"+Inf\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_count{peer=\"10.0.0.2\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_probes_total{peer=\"10.0.0.2\",kind=\"latency\",result=\"success\",reason=\"\"} 1\n"));
  // Bandwidth is off by default: no stream, no series.
  EXPECT_THAT(m, Not(HasSubstr("rdma_peer_bandwidth_bytes_per_second")));
  std::lock_guard lock(h.script->mu);
  EXPECT_TRUE(h.script->bandwidth_calls.empty());
}

// Slow peers (each probe 150 ms, all due at once) cost rounds their budget, not more: a round
// returns after about a second so a new config applies, and the peers left over run next round.
// Stopping ends a round before its next probe.
TEST(PeerProbeTest, SlowPeersKeepRoundsWithinTheirBudgetAndStopEndsARound) {
  Harness h;
  std::vector<std::string> targets;
  for (int i = 0; i < 20; ++i) targets.push_back("10.4.0." + std::to_string(i));
  Config c = PeersConfig(targets, milliseconds(100));
  h.Round(c);  // reconcile: every first round is due within 100 ms
  std::this_thread::sleep_for(milliseconds(120));
  {
    // The reconciling round may already have probed the peers whose phase fell inside it (a slow
    // machine makes that round long); only the calls of the timed round below are counted.
    std::lock_guard lock(h.script->mu);
    h.script->delay = milliseconds(150);
    h.script->latency_calls.clear();
  }
  auto start = Clock::now();
  h.Round(c);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, PeerProbe::kRoundBudget);
  EXPECT_LT(took, PeerProbe::kRoundBudget + milliseconds(400));
  const std::size_t first = [&] {
    std::lock_guard lock(h.script->mu);
    return h.script->latency_calls.size();
  }();
  EXPECT_GE(first, 6u);
  EXPECT_LE(first, 9u);
  // The next round picks up where this one stopped (earliest due first: peers not yet probed).
  h.Round(c);
  std::set<std::string> probed;
  {
    std::lock_guard lock(h.script->mu);
    for (const auto& [peer, at] : h.script->latency_calls) probed.insert(peer);
  }
  EXPECT_GE(probed.size(), 2 * first - 1);

  h.stopping = true;
  start = Clock::now();
  h.Round(c);
  EXPECT_LT(Clock::now() - start, milliseconds(100));
}

// A config whose only peer source is discovery is scheduled at its own intervals: the scheduler
// ticks at interval / 10, lookups run every dns_interval and the discovered peers every interval
// (not once a minute, as when the probe counted only targets and the file as work).
TEST(PeerProbeSchedulerTest, DiscoveryOnlyConfigRunsAtItsIntervals) {
  auto script = std::make_shared<Script>();
  auto dns = std::make_shared<DnsScript>();
  dns->Set(std::vector<std::string>{"10.7.0.1", "10.7.0.2"});
  PeerProbe::Options options = WithDiscovery(FakeProbeOptions(script, 7), dns);
  auto config = std::make_shared<Config>();
  config->Section<PeersPolicy>().interval = milliseconds(200);
  config->Section<PeersPolicy>().discovery.dns = {"fleet.test"};
  config->Section<PeersPolicy>().discovery.dns_interval = milliseconds(1000);
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(std::move(options))});
  auto scheduler = std::make_unique<ProbeScheduler>(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  const auto start = Clock::now();
  scheduler->Configure(config);
  std::this_thread::sleep_for(milliseconds(3500));
  const auto took = Clock::now() - start;
  scheduler->Stop();
  while (!scheduler->busy().empty()) std::this_thread::sleep_for(milliseconds(1));
  scheduler.reset();
  const double seconds = std::chrono::duration<double>(took).count();
  // Lookups at 0, 1, 2 and 3 s (each within a tick, 20 ms, of being due); each peer every 200 ms
  // from its first probe within the first 200 ms: ~17 rounds in 3.5 s. Loose bounds for a loaded
  // machine, far from once a minute (1 lookup, at most 1 probe each).
  EXPECT_GE(dns->Passes(), 3u) << seconds << " s";
  EXPECT_LE(dns->Passes(), 5u) << seconds << " s";
  EXPECT_GE(script->Calls("10.7.0.1"), 8u) << seconds << " s";
  EXPECT_GE(script->Calls("10.7.0.2"), 8u) << seconds << " s";
}

// peers.cpus pins the probe thread (the rounds run there); a list this host cannot use leaves the
// thread where it was and says so beside the round's figures, in the peer_latency reason.
TEST(PeerProbeTest, CpusPinTheProbeThreadAndAnUnusableListIsSaidInTheRound) {
  const CpuList mine = CallingThreadCpus();
  const std::uint32_t last = mine.ranges().back().last;
  std::thread([&] {
    Harness h;
    Config c = PeersConfig({"10.0.0.2"});
    c.Section<PeersPolicy>().cpus = CpuList({{last, last}});
    ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.2") >= 1; }));
    {
      std::lock_guard lock(h.script->mu);
      ASSERT_FALSE(h.script->latency_cpus.empty());
      EXPECT_EQ(h.script->latency_cpus.back(), CpuList({{last, last}}));
    }
    c.Section<PeersPolicy>().cpus = CpuList({{CpuList::kMaxId, CpuList::kMaxId}});
    ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.2") >= 2; }));
    {
      std::lock_guard lock(h.script->mu);
      EXPECT_EQ(h.script->latency_cpus.back(), mine);  // back on every CPU it started with
    }
    Snapshot snap;
    const PeerFacts* facts = h.Facts(snap);
    ASSERT_NE(facts, nullptr);
    ASSERT_EQ(facts->peers.size(), 1u);
    ASSERT_TRUE(facts->peers[0]->latency);
    EXPECT_THAT(facts->peers[0]->latency->cpu_warning, HasSubstr("peers.cpus not applied, the probe runs on any CPU: "));
    EXPECT_THAT(facts->peers[0]->latency->cpu_warning, HasSubstr("65535"));
    // Unset again: the thread runs anywhere it started with, and the warning is gone.
    c.Section<PeersPolicy>().cpus = CpuList();
    ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.2") >= 3; }));
    Snapshot again;
    facts = h.Facts(again);
    ASSERT_NE(facts, nullptr);
    EXPECT_EQ(facts->peers[0]->latency->cpu_warning, "");
  }).join();
}

TEST(PeerProbeTest, IntervalIsATickOfThePeerIntervalAndLongWithoutPeers) {
  PeerProbe probe;
  Config none;
  EXPECT_EQ(probe.Interval(none), std::chrono::seconds(60));
  Config discovery_only;
  discovery_only.Section<PeersPolicy>().discovery.dns = {"fleet.test"};
  discovery_only.Section<PeersPolicy>().interval = milliseconds(1000);
  EXPECT_EQ(probe.Interval(discovery_only), milliseconds(100));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(10000))), milliseconds(500));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(1000))), milliseconds(100));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(100))), milliseconds(10));
}

// The fleet budget is 16 KiB of bookkeeping per peer: schedule, counters, histogram, published facts.
// (bench/peer_bench prints the figure; glibc's mallinfo2 says nothing under a sanitizer's allocator.)
TEST(PeerProbeTest, BookkeepingStaysUnder16KiBPerPeer) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "mallinfo2 does not see a sanitizer's allocator";
#else
  std::vector<std::string> targets;
  for (int i = 0; i < 500; ++i) targets.push_back("10.3." + std::to_string(i / 250) + "." + std::to_string(i % 250));
  Config c = PeersConfig(targets, milliseconds(100));
  c.Section<PeersPolicy>().bandwidth = true;
  c.Section<PeersPolicy>().bandwidth_interval = milliseconds(10000);
  { Harness warm_up; }  // one-time allocations (registries, locale) outside the measurement
  const std::size_t before = mallinfo2().uordblks;
  auto h = std::make_unique<Harness>();
  ASSERT_TRUE(h->RunUntil(c, [&] {
    std::lock_guard lock(h->script->mu);
    return h->script->latency_calls.size() >= 1000;
  }));
  {
    // The fake's own call log is not the probe's bookkeeping.
    std::lock_guard lock(h->script->mu);
    std::vector<std::pair<std::string, Clock::time_point>>().swap(h->script->latency_calls);
    std::vector<PeerEndpoint>().swap(h->script->endpoints);
    h->script->latency.clear();
  }
  const std::size_t after = mallinfo2().uordblks;
  const double per_peer = static_cast<double>(after - before) / 500;
  RecordProperty("bytes_per_peer", static_cast<int>(per_peer));
  EXPECT_LT(per_peer, 16 * 1024);
  EXPECT_GT(per_peer, 256);  // the measurement sees the peers at all
#endif
}

TEST(PeerProbeTest, ThePeersProbeIsRegistered) { EXPECT_NE(ProbeRegistry().Find("peers"), nullptr); }

}  // namespace
}  // namespace rdmahd
