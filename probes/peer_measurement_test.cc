#include "probes/peer_measurement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <string>

#include "tests/support/peer_probe_harness.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace rdmahd::testing;

TEST(PeerMeasurementTest, FailuresAreCountedByReasonAndRecoveryClearsTheLastFailure) {
  Harness h;
  Config c = PeersConfig({"10.0.0.3"});
  {
    std::lock_guard lock(h.script->mu);
    auto& q = h.script->latency["10.0.0.3"];
    q.push_back(ProbeFailure{"connect_timeout", "10.0.0.3: no answer to the connect within 1000ms"});
    q.push_back(ProbeFailure{"wc_retry_exc_err", "10.0.0.3: send completion: transport retry counter exceeded"});
    q.push_back(ProbeFailure{"stopped", "10.0.0.3: stopped"});  // the daemon stopping: not counted
    q.push_back(ProbeFailure{"Weird Reason 42", "10.0.0.3: a prober bug"});  // kept out of the label
  }
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.3") >= 2; }));
  Snapshot snap;
  const PeerFacts* f = h.Facts(snap);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->peers.size(), 1u);
  EXPECT_EQ(f->peers[0]->last_latency, PeerProbeResult::kFailure);
  ASSERT_TRUE(f->peers[0]->latency_failure);
  EXPECT_EQ(f->peers[0]->latency_failure->reason, "wc_retry_exc_err");
  // Where the failed round ran, for peer_latency's reason.
  ASSERT_TRUE(f->peers[0]->latency_cpu);
  EXPECT_LT(*f->peers[0]->latency_cpu, 65536u);
  std::string m = h.Metrics();
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"connect_timeout\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"wc_retry_exc_err\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"success\",reason=\"\"} 0\n"));
  // No round succeeded: no quantiles yet.
  EXPECT_THAT(m, Not(HasSubstr("rdma_peer_latency_quantile_seconds")));

  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.3") >= 5; }));
  m = h.Metrics();
  EXPECT_THAT(m, Not(HasSubstr("reason=\"stopped\"")));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"other\"} 1\n"));
  EXPECT_THAT(m, Not(HasSubstr("Weird")));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"success\",reason=\"\"} 1\n"));
  Snapshot snap2;
  f = h.Facts(snap2);
  EXPECT_EQ(f->peers[0]->last_latency, PeerProbeResult::kSuccess);
  EXPECT_FALSE(f->peers[0]->latency_failure);
}

TEST(PeerMeasurementTest, ANameThatDoesNotResolveIsAProbeFailureNotAConfigError) {
  Harness h(std::map<std::string, std::string>{{"node-b.example", "192.0.2.7"}});
  Config c = PeersConfig({"node-b.example", "gone.example"});
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("node-b.example") >= 1; }));
  ASSERT_TRUE(h.RunUntil(c, [&] {
    return h.Metrics().find("peer=\"gone.example\",kind=\"latency\",result=\"failure\",reason=\"address_resolution\"} 1") !=
           std::string::npos;
  }));
  // The resolved address is what the prober is given; the configured name stays the label.
  std::lock_guard lock(h.script->mu);
  for (const auto& e : h.script->endpoints) {
    EXPECT_EQ(e.name, "node-b.example");  // gone.example never reaches the prober
    EXPECT_EQ(e.address, "192.0.2.7");
  }
}


TEST(PeerMeasurementTest, FailureReasonsStayABoundedSet) {
  for (const char* known : {"address_resolution", "route_resolution", "connect_timeout", "rejected", "unreachable",
                            "handshake", "timeout", "local_resources", "stopped", "wc_retry_exc_err", "wc_rem_access_err"}) {
    EXPECT_EQ(BoundedFailureReason(known), known);
  }
  for (const char* other : {"", "wc_", "wc_Retry", "wc_retry exc", "Weird Reason 42", "timeout ",
                            "wc_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {  // the last: 41 characters
    EXPECT_EQ(BoundedFailureReason(other), "other") << other;
  }
}

// Measured directly, without the probe around it: a probe cut short because the daemon stops is
// not counted at all; a prober that returns too few samples is a local failure, its samples still
// in the histogram; a DNS name's address is looked up again after a failed probe.
TEST(PeerMeasurementTest, StoppedIsNotCountedTooFewSamplesFailAndANameIsLookedUpAgain) {
  auto script = std::make_shared<Script>();
  FakeProber prober(script);
  FakeResolver resolver(std::map<std::string, std::string>{{"node-b.example", "192.0.2.7"}});
  PeerState peer;
  peer.target.name = "node-b.example";
  peer.status.name = "node-b.example";
  StartCounting(peer.status, kLatencyProbe);
  LatencySamples two;
  two.half_round_trip_us = {3, 4};
  {
    std::lock_guard lock(script->mu);
    auto& q = script->latency["node-b.example"];
    q.push_back(ProbeFailure{"stopped", "node-b.example: stopped"});
    q.push_back(two);
  }
  PeersPolicy p;
  std::atomic<bool> stop{false};
  MeasureLatency(peer, prober, resolver, p, stop, Clock::now());
  EXPECT_EQ(peer.status.last_latency, PeerProbeResult::kNone);
  ASSERT_EQ(peer.status.counts.size(), 1u);
  EXPECT_EQ(peer.status.counts[0].count, 0u);
  EXPECT_EQ(peer.address, "192.0.2.7");

  MeasureLatency(peer, prober, resolver, p, stop, Clock::now());
  EXPECT_EQ(peer.status.last_latency, PeerProbeResult::kFailure);
  ASSERT_TRUE(peer.status.latency_failure);
  EXPECT_EQ(peer.status.latency_failure->reason, "local_resources");
  EXPECT_THAT(peer.status.latency_failure->message, HasSubstr("returned 2 samples"));
  EXPECT_FALSE(peer.status.latency);
  EXPECT_EQ(peer.histogram.Collect().histogram.sample_count, 2u);

  {
    std::lock_guard lock(script->mu);
    script->latency["node-b.example"].push_back(ProbeFailure{"unreachable", "node-b.example: no route"});
  }
  MeasureLatency(peer, prober, resolver, p, stop, Clock::now());
  EXPECT_EQ(peer.status.latency_failure->reason, "unreachable");
  EXPECT_EQ(peer.address, "");  // looked up again before the next probe
  MeasureLatency(peer, prober, resolver, p, stop, Clock::now());
  EXPECT_EQ(peer.status.last_latency, PeerProbeResult::kSuccess);
  EXPECT_EQ(peer.address, "192.0.2.7");
}

}  // namespace
}  // namespace rdmahd
