#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "config/policies.h"
#include "core/check.h"
#include "core/history.h"
#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/peer_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/workload_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<PeerStatus> Peer(const std::string& name) {
  auto p = std::make_shared<PeerStatus>();
  p->name = name;
  p->address = name;
  return p;
}

Snapshot With(std::vector<std::shared_ptr<PeerStatus>> peers, bool bandwidth = false) {
  PeerFacts f;
  for (auto& p : peers) f.peers.push_back(p);
  f.bandwidth_enabled = bandwidth;
  Snapshot s;
  s.Put(std::move(f));
  return s;
}

PeerLatencyRound Round(double p99_us) {
  PeerLatencyRound r;
  r.min_us = 1.5;
  r.typical_us = 2.0;
  r.average_us = 2.1;
  r.p99_us = p99_us;
  r.p99_9_us = p99_us;
  r.max_us = p99_us + 1;
  r.samples = 999;
  r.clock = "steady";
  return r;
}

TEST(PeerChecksTest, ReachableIsUnknownBeforeTheFirstRoundFailedWithTheReasonAndOkAfterSuccess) {
  auto fresh = Peer("10.0.0.1");
  auto down = Peer("10.0.0.2");
  down->last_latency = PeerProbeResult::kFailure;
  down->latency_failure = PeerProbeFailureFacts{"latency", "connect_timeout", "10.0.0.2: no answer within 1000ms"};
  auto up = Peer("10.0.0.3");
  up->last_latency = PeerProbeResult::kSuccess;
  up->latency = Round(4);
  auto v = RunRegisteredCheck("peer_reachable", With({fresh, down, up}), Config{});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(v[0].subject, "10.0.0.1");
  EXPECT_EQ(v[1].verdict, Verdict::kFailed);
  EXPECT_THAT(v[1].reason, HasSubstr("connect_timeout"));
  EXPECT_THAT(v[1].reason, HasSubstr("no answer within 1000ms"));
  EXPECT_THAT(v[1].fix, HasSubstr("peers.responder"));
  EXPECT_EQ(v[2].verdict, Verdict::kOk);
  EXPECT_THAT(v[2].reason, HasSubstr("t_typical 2.00 us"));
}

TEST(PeerChecksTest, EachFailureReasonHasItsOwnFix) {
  std::set<std::string> fixes;
  for (const char* reason : {"address_resolution", "route_resolution", "connect_timeout", "rejected", "handshake",
                             "local_resources", "wc_retry_exc_err"}) {
    auto p = Peer("node-b");
    p->last_latency = PeerProbeResult::kFailure;
    p->latency_failure = PeerProbeFailureFacts{"latency", reason, "x"};
    auto v = RunRegisteredCheck("peer_reachable", With({p}), Config{});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_FALSE(v[0].fix.empty()) << reason;
    fixes.insert(v[0].fix);
  }
  EXPECT_EQ(fixes.size(), 7u);
}

TEST(PeerChecksTest, LatencyIsJudgedAgainstThePolicyOnlyWhenConfigured) {
  auto fast = Peer("10.0.0.1");
  fast->last_latency = PeerProbeResult::kSuccess;
  fast->latency = Round(8);
  auto slow = Peer("10.0.0.2");
  slow->last_latency = PeerProbeResult::kSuccess;
  slow->latency = Round(25);
  auto failing = Peer("10.0.0.3");
  failing->last_latency = PeerProbeResult::kFailure;
  failing->latency = Round(1);  // an older round: not judged
  Config unset;
  auto v = RunRegisteredCheck("peer_latency", With({fast, slow, failing}), unset);
  ASSERT_EQ(v.size(), 3u);
  for (const auto& r : v) {
    EXPECT_EQ(r.verdict, Verdict::kUnknown);
    EXPECT_THAT(r.reason, HasSubstr("not configured (peers.max_latency_p99_us)"));
  }
  Config c;
  c.Section<PeersPolicy>().max_latency_p99_us = 20;
  v = RunRegisteredCheck("peer_latency", With({fast, slow, failing}), c);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, Verdict::kOk);
  EXPECT_EQ(v[1].verdict, Verdict::kFailed);
  EXPECT_THAT(v[1].reason, HasSubstr("p99 25.00 us"));
  EXPECT_THAT(v[1].reason, HasSubstr("above the limit 20.00 us"));
  EXPECT_FALSE(v[1].fix.empty());
  EXPECT_EQ(v[2].verdict, Verdict::kUnknown);
  EXPECT_THAT(v[2].reason, HasSubstr("see peer_reachable"));
}

TEST(PeerChecksTest, BandwidthIsJudgedOverTheMinimumWhenStreamsRun) {
  auto fast = Peer("10.0.0.1");
  fast->last_bandwidth = PeerProbeResult::kSuccess;
  fast->bandwidth_bytes_per_second = 12.0e9;  // 96 Gb/s
  auto slow = Peer("10.0.0.2");
  slow->last_bandwidth = PeerProbeResult::kSuccess;
  slow->bandwidth_bytes_per_second = 5.0e9;  // 40 Gb/s
  auto none = Peer("10.0.0.3");
  Config c;
  c.Section<PeersPolicy>().min_bandwidth_gbps = 80;
  auto v = RunRegisteredCheck("peer_bandwidth", With({fast, slow, none}, /*bandwidth=*/true), c);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, Verdict::kOk);
  EXPECT_THAT(v[0].reason, HasSubstr("96.00 Gb/s"));
  EXPECT_EQ(v[1].verdict, Verdict::kFailed);
  EXPECT_THAT(v[1].reason, HasSubstr("40.00 Gb/s is below the minimum 80.00 Gb/s"));
  EXPECT_EQ(v[2].verdict, Verdict::kUnknown);
  // Streams off: unknown, saying so.
  v = RunRegisteredCheck("peer_bandwidth", With({fast}, /*bandwidth=*/false), c);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(v[0].reason, HasSubstr("peers.bandwidth: false"));
  // No policy: unknown.
  v = RunRegisteredCheck("peer_bandwidth", With({fast}, true), Config{});
  EXPECT_EQ(v[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(v[0].reason, HasSubstr("not configured (peers.min_bandwidth_gbps)"));
}

TEST(PeerChecksTest, WithoutTheProbesFactsTheChecksSayNothing) {
  Snapshot empty;
  for (const char* check : {"peer_reachable", "peer_latency", "peer_bandwidth"}) {
    EXPECT_TRUE(RunRegisteredCheck(check, empty, Config{}).empty()) << check;
  }
}

// ---- peer_latency explains a round that looks wrong with what moved on this node ----

// This node's counters at one collection.
struct Local {
  std::uint64_t cnp_handled = 0, seq_err = 0, ack_timeout = 0, out_of_buffer = 0, pause = 0;
};

struct LatencyTimeline {
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("peer_latency")->factory();
  std::shared_ptr<PeerStatus> peer = Peer("10.0.0.9");
  std::uint64_t rounds = 0;

  LatencyTimeline() {
    config.Section<PeersPolicy>().max_latency_p99_us = 20.0;
    config.Section<RocePolicy>().priority = 3;
    peer->latency_cpu = 3;
  }
  // A latency round to the peer that ended with `p99_us`.
  void Round(double p99_us) {
    peer->last_latency = PeerProbeResult::kSuccess;
    peer->latency = ::rdmahd::Round(p99_us);
    peer->latency_failure.reset();
    peer->counts = {{"latency", "success", "", ++rounds}};
  }
  void FailedRound(const std::string& reason) {
    peer->last_latency = PeerProbeResult::kFailure;
    peer->latency_failure = PeerProbeFailureFacts{"latency", reason, "10.0.0.9: no completion within 5100ms"};
    peer->counts = {{"latency", "failure", reason, ++rounds}};
  }
  // One collection at `t` seconds; the peer's verdict.
  CheckResult At(int t, const Local& l) {
    Snapshot s = With({std::make_shared<PeerStatus>(*peer)});
    Topology topo;
    TopologyDevice& d = topo.devices.emplace_back();
    d.name = "mlx5_0";
    d.numa_node = 1;
    d.generation = 1;
    s.Put(std::move(topo));
    RdmaDevicesFacts devices;
    RdmaDeviceFacts& dev = devices.devices.emplace_back();
    dev.name = "mlx5_0";
    RdmaPortFacts& port = dev.ports.emplace_back();
    port.port = 1;
    port.device = "mlx5_0";
    port.hw_counters = CounterValues::FromPairs({{"rp_cnp_handled", l.cnp_handled},
                                                 {"packet_seq_err", l.seq_err},
                                                 {"local_ack_timeout_err", l.ack_timeout},
                                                 {"out_of_buffer", l.out_of_buffer},
                                                 {"rx_write_requests", 1000u * static_cast<std::uint64_t>(t)}});
    s.Put(std::move(devices));
    RdmaNetdevFacts netdevs;
    NetdevFacts& n = netdevs.netdevs.emplace_back();
    n.netdev = "ens1f0np0";
    n.present = true;
    n.stats_read = true;
    n.classified_stats = {{"rx_prio3_pause", l.pause}, {"rx_prio0_pause", 77u * static_cast<std::uint64_t>(t)}};
    s.Put(std::move(netdevs));
    WorkloadsFacts w;
    w.node_cpus[0] = *ParseCpuList("0-3");
    w.node_cpus[1] = *ParseCpuList("4-7");
    s.Put(std::move(w));
    std::vector<CheckResult> out;
    RunCheck("peer_latency", *check, s, config, history, History::TimePoint{} + std::chrono::hours(1) + std::chrono::seconds(t), out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  }
};

TEST(PeerLatencyExplainedTest, AFailedRoundNamesTheCountersThatRoseAroundItAndWhereTheProbeRan) {
  LatencyTimeline tl;
  tl.Round(5);
  tl.At(0, {});
  // Before the round: receive discards rise (not the round's doing; not to be named).
  EXPECT_EQ(tl.At(15, {0, 0, 0, 7, 0}).verdict, Verdict::kOk);
  tl.Round(25);
  CheckResult r = tl.At(30, {35, 0, 0, 7, 1200});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("p99 25.00 us (t_typical 2.00 us, t_max 26.00 us) is above the limit 20.00 us; "
                                  "during the round (the 15 s between the collections around the round): "));
  EXPECT_THAT(r.reason, HasSubstr("rp_cnp_handled on mlx5_0/1 +35 (CNPs handled: DCQCN throttled this sender)"));
  EXPECT_THAT(r.reason, HasSubstr("rx_prio3_pause on ens1f0np0 +1200 (pause frames received on the RoCE priority: "
                                  "back-pressure from the fabric)"));
  EXPECT_THAT(r.reason, Not(HasSubstr("out_of_buffer"))) << "moved before the round";
  EXPECT_THAT(r.reason, Not(HasSubstr("packet_seq_err"))) << "did not move";
  EXPECT_THAT(r.reason, Not(HasSubstr("rx_prio0_pause"))) << "not the RoCE priority";
  EXPECT_THAT(r.reason, Not(HasSubstr("rx_write_requests"))) << "traffic, not trouble";
  EXPECT_THAT(r.reason, HasSubstr("; probe thread on CPU 3 (NUMA node 0; RDMA devices on node 1: the probe ran on "
                                  "a remote node)"));
  // A later collection without a new round still explains that round, not what came after.
  r = tl.At(45, {90, 3, 0, 7, 5000});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("rp_cnp_handled on mlx5_0/1 +35 "));
  EXPECT_THAT(r.reason, Not(HasSubstr("packet_seq_err")));
}

TEST(PeerLatencyExplainedTest, AJumpAgainstThePeersRecentRoundsIsExplainedWithinTheLimit) {
  LatencyTimeline tl;
  tl.config.Section<PeersPolicy>().max_latency_p99_us = 100.0;
  int t = 0;
  Local l;
  for (double p99 : {8.0, 9.0, 8.0, 10.0}) {
    tl.Round(p99);
    CheckResult r = tl.At(t, l);
    EXPECT_THAT(r.reason, Not(HasSubstr("jumped")));
    EXPECT_THAT(r.reason, Not(HasSubstr("during the round")));
    t += 15;
  }
  tl.Round(40);
  l.seq_err = 12;
  l.ack_timeout = 4;
  CheckResult r = tl.At(t, l);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("; p99 40.00 us jumped from the median 9.00 us of its last 4 rounds; during the round"));
  EXPECT_THAT(r.reason, HasSubstr("packet_seq_err on mlx5_0/1 +12 (sequence errors: packets lost)"));
  EXPECT_THAT(r.reason, HasSubstr("local_ack_timeout_err on mlx5_0/1 +4 (ack timeouts: packets or their acks lost, "
                                  "then retransmitted)"));
  // Back to normal: a round at 12 us is no jump.
  tl.Round(12);
  r = tl.At(t + 15, l);
  EXPECT_THAT(r.reason, Not(HasSubstr("jumped")));
  EXPECT_THAT(r.reason, Not(HasSubstr("during the round")));
}

TEST(PeerLatencyExplainedTest, ATimedOutOrRetriedProbeIsExplainedARefusedOneIsNot) {
  LatencyTimeline tl;
  tl.Round(5);
  tl.At(0, {});
  tl.FailedRound("wc_retry_exc_err");
  CheckResult r = tl.At(15, {0, 0, 9, 0, 0});
  EXPECT_THAT(r.reason, HasSubstr("the last latency probe failed (see peer_reachable) (wc_retry_exc_err); during the "
                                  "round (the 15 s between the collections around the round): local_ack_timeout_err "
                                  "on mlx5_0/1 +9"));
  tl.FailedRound("timeout");
  r = tl.At(30, {0, 0, 9, 0, 0});
  EXPECT_THAT(r.reason, HasSubstr("(timeout); no local counter moved during the round (the 15 s between the "
                                  "collections around the round: pause frames, CNPs, sequence errors, ack timeouts, "
                                  "receive discards): look at the path and the peer"));
  tl.FailedRound("rejected");
  r = tl.At(45, {0, 5, 9, 0, 0});
  EXPECT_EQ(r.reason, "the last latency probe failed (see peer_reachable)");
}

TEST(PeerLatencyExplainedTest, WithoutACollectionBeforeTheRoundItSaysSo) {
  LatencyTimeline tl;
  tl.Round(25);
  CheckResult r = tl.At(0, {});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("; what this node's counters did during the round is not known yet"));
}

}  // namespace
}  // namespace rdmahd
