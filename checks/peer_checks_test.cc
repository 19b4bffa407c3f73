#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "core/check.h"
#include "facts/peer_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace rdmahd
