// RdmaCmProber and ProbeResponder against a real RDMA device, both in this process, so resource
// counts of the process are exact. Needs a RoCE device with an address: the VM tier runs these in
// the Soft-RoCE guest (tests/vm/scenarios/probe-on-rxe.sh sets RDMAHD_PROBE_DEVICE_ADDR); elsewhere
// they skip, since the build machines have no RDMA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "probes/probe_responder.h"
#include "probes/rdma_cm_connection.h"
#include "probes/rdma_cm_prober.h"

namespace rdmahd {
namespace {

const char* DeviceAddr() {
  const char* a = std::getenv("RDMAHD_PROBE_DEVICE_ADDR");
  return a != nullptr && *a != '\0' ? a : nullptr;
}

#define NEED_DEVICE()                                                                               \
  if (DeviceAddr() == nullptr)                                                                      \
  GTEST_SKIP() << "needs a RoCE device: set RDMAHD_PROBE_DEVICE_ADDR (the VM tier's probe-on-rxe does)"

// `rdma -j resource show` summed over devices: pd, cq, qp, mr, cm_id counts.
std::map<std::string, long> ResourceCounts() {
  std::map<std::string, long> out;
  FILE* p = popen("rdma -j resource show 2>/dev/null", "r");
  if (p == nullptr) return out;
  std::string text;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
  pclose(p);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& dev : j)
    for (const char* k : {"pd", "cq", "qp", "mr", "cm_id"})
      if (dev.contains(k) && dev[k].is_number()) out[k] += dev[k].get<long>();
  return out;
}

PeerResponderPolicy Policy(std::uint16_t port, std::vector<std::string> allow) {
  PeerResponderPolicy p;
  p.enabled = true;
  p.port = port;
  p.allow = std::move(allow);
  return p;
}

ProbeSource Source() {
  ProbeSource s;
  s.bind_address = DeviceAddr();
  s.step_timeout = std::chrono::milliseconds(2000);
  return s;
}

TEST(ProbeOnDevice, LatencyAndBandwidthAgainstAResponder) {
  NEED_DEVICE();
  auto responder = ProbeResponder::Start(Policy(18701, {std::string(DeviceAddr()) + "/32"}));
  ASSERT_TRUE(responder.ok()) << responder.error().message;
  auto prober = MakeRdmaCmProber();
  const std::atomic<bool> stop{false};
  const PeerEndpoint peer{"self", DeviceAddr(), 18701};

  LatencyRequest lat;
  lat.iterations = 1000;
  lat.timeout = std::chrono::seconds(30);  // TCG, and TSan on top, make round trips milliseconds
  ProbeOutcome<LatencySamples> got = prober->Latency(peer, Source(), lat, stop);
  ASSERT_TRUE(std::holds_alternative<LatencySamples>(got)) << std::get<ProbeFailure>(got).reason << ": "
                                                           << std::get<ProbeFailure>(got).message;
  const LatencySamples& s = std::get<LatencySamples>(got);
  ASSERT_EQ(s.half_round_trip_us.size(), 999u);
  for (double v : s.half_round_trip_us) {
    EXPECT_GT(v, 0.0);
    EXPECT_LT(v, 5e6);
  }

  BandwidthRequest bw;
  bw.duration = std::chrono::milliseconds(300);
  bw.queue_depth = 32;
  ProbeOutcome<BandwidthResult> b = prober->Bandwidth(peer, Source(), bw, stop);
  ASSERT_TRUE(std::holds_alternative<BandwidthResult>(b)) << std::get<ProbeFailure>(b).message;
  EXPECT_GT(std::get<BandwidthResult>(b).bytes, 0u);
  EXPECT_EQ(std::get<BandwidthResult>(b).bytes % bw.message_size, 0u);  // counted from completions
  EXPECT_GT(std::get<BandwidthResult>(b).seconds, 0.2);
  EXPECT_EQ((*responder)->sessions_accepted(), 2u);
}

TEST(ProbeOnDevice, ResponderRefusalsComeBackAsRejectedWithTheCode) {
  NEED_DEVICE();
  auto prober = MakeRdmaCmProber();
  const std::atomic<bool> stop{false};
  const PeerEndpoint peer{"self", DeviceAddr(), 18702};
  {
    auto responder = ProbeResponder::Start(Policy(18702, {"10.0.0.0/8"}));
    ASSERT_TRUE(responder.ok()) << responder.error().message;
    ProbeOutcome<LatencySamples> got = prober->Latency(peer, Source(), LatencyRequest{}, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeFailure>(got));
    EXPECT_EQ(std::get<ProbeFailure>(got).reason, "rejected");
    EXPECT_NE(std::get<ProbeFailure>(got).message.find("not_allowed"), std::string::npos)
        << std::get<ProbeFailure>(got).message;
    // Reload in place: the same listener now lets us in, with a message-size cap below 2 bytes.
    PeerResponderPolicy next = Policy(18702, {std::string(DeviceAddr())});
    next.max_message_size = 1;
    ASSERT_TRUE((*responder)->CanApplyInPlace(next));
    ASSERT_TRUE((*responder)->Apply(next).ok());
    got = prober->Latency(peer, Source(), LatencyRequest{}, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeFailure>(got));
    EXPECT_NE(std::get<ProbeFailure>(got).message.find("too_large"), std::string::npos);
    next.max_message_size = 1 << 20;
    next.max_sessions = 0;
    ASSERT_TRUE((*responder)->Apply(next).ok());
    got = prober->Latency(peer, Source(), LatencyRequest{}, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeFailure>(got));
    EXPECT_NE(std::get<ProbeFailure>(got).message.find("busy"), std::string::npos);
    EXPECT_EQ((*responder)->sessions_rejected(), 3u);
  }
  // No responder at all: the peer's CM answers for the port.
  ProbeOutcome<LatencySamples> got = prober->Latency(peer, Source(), LatencyRequest{}, stop);
  ASSERT_TRUE(std::holds_alternative<ProbeFailure>(got));
  EXPECT_EQ(std::get<ProbeFailure>(got).reason, "unreachable") << std::get<ProbeFailure>(got).message;
}

// A client that connects with a valid hello and then says nothing holds its session slot for the
// idle bound only; one that leaves at once frees it at once. Meanwhile the cap refuses others.
TEST(ProbeOnDevice, SilentAndVanishingClientsHoldASessionForBoundedTime) {
  NEED_DEVICE();
  PeerResponderPolicy policy = Policy(18704, {std::string(DeviceAddr())});
  policy.max_sessions = 1;
  auto responder = ProbeResponder::Start(policy);
  ASSERT_TRUE(responder.ok()) << responder.error().message;
  const std::atomic<bool> stop{false};
  const PeerEndpoint peer{"self", DeviceAddr(), 18704};
  auto prober = MakeRdmaCmProber();
  LatencyRequest lat;
  lat.iterations = 20;
  {
    VerbsSession silent;
    ConnectPlan plan;
    plan.hello = ProbeHello{ProbeKind::kLatency, 2, 1000, 0, 0};
    plan.buffer_bytes = 4096;
    ProbeOutcome<ProbeAccept> got = ConnectToResponder(silent, peer, Source(), plan, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeAccept>(got)) << std::get<ProbeFailure>(got).message;
    EXPECT_EQ((*responder)->active_sessions(), 1u);
    ProbeOutcome<LatencySamples> busy = prober->Latency(peer, Source(), lat, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeFailure>(busy));
    EXPECT_NE(std::get<ProbeFailure>(busy).message.find("busy"), std::string::npos);
    const auto start = std::chrono::steady_clock::now();
    while ((*responder)->active_sessions() != 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ((*responder)->active_sessions(), 0u) << "the silent session was not ended";
    EXPECT_GT(held, 1.0);  // the idle bound is 2 s
    std::printf("silent client's session ended after %.2f s\n", held);
  }
  ProbeOutcome<LatencySamples> after = prober->Latency(peer, Source(), lat, stop);
  EXPECT_TRUE(std::holds_alternative<LatencySamples>(after));
  {
    VerbsSession vanishing;
    ConnectPlan plan;
    plan.hello = ProbeHello{ProbeKind::kBandwidth, 65536, 0, 60000, 16};
    plan.buffer_bytes = 4096;
    ASSERT_TRUE(std::holds_alternative<ProbeAccept>(ConnectToResponder(vanishing, peer, Source(), plan, stop)));
    rdma_disconnect(vanishing.id.get());
  }  // torn down: the responder sees the disconnect long before the 60 s it was asked for
  const auto start = std::chrono::steady_clock::now();
  while ((*responder)->active_sessions() != 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*responder)->active_sessions(), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// A misbehaving peer costs one probe: 1000 failed probes (nobody listens on the port) and 50
// successful ones leave this process with exactly the verbs objects it had before.
TEST(ProbeOnDevice, ThousandFailedProbesLeaveNoResourcesBehind) {
  NEED_DEVICE();
  auto prober = MakeRdmaCmProber();
  const std::atomic<bool> stop{false};
  const std::map<std::string, long> before = ResourceCounts();
  ASSERT_TRUE(before.count("qp")) << "rdma -j resource show gave nothing";
  std::map<std::string, int> reasons;
  for (int i = 0; i < 1000; ++i) {
    ProbeOutcome<LatencySamples> got = prober->Latency({"self", DeviceAddr(), 18709}, Source(), LatencyRequest{}, stop);
    ASSERT_TRUE(std::holds_alternative<ProbeFailure>(got));
    ++reasons[std::get<ProbeFailure>(got).reason];
  }
  EXPECT_EQ(reasons, (std::map<std::string, int>{{"unreachable", 1000}}));
  EXPECT_EQ(ResourceCounts(), before);
  {
    auto responder = ProbeResponder::Start(Policy(18703, {std::string(DeviceAddr())}));
    ASSERT_TRUE(responder.ok()) << responder.error().message;
    LatencyRequest lat;
    lat.iterations = 20;
    for (int i = 0; i < 50; ++i) {
      ProbeOutcome<LatencySamples> got = prober->Latency({"self", DeviceAddr(), 18703}, Source(), lat, stop);
      ASSERT_TRUE(std::holds_alternative<LatencySamples>(got)) << std::get<ProbeFailure>(got).message;
    }
  }
  const std::map<std::string, long> after = ResourceCounts();
  std::printf("rdma resource counts before/after: qp %ld/%ld cq %ld/%ld mr %ld/%ld pd %ld/%ld cm_id %ld/%ld\n",
              before.at("qp"), after.at("qp"), before.at("cq"), after.at("cq"), before.at("mr"), after.at("mr"),
              before.at("pd"), after.at("pd"), before.at("cm_id"), after.at("cm_id"));
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace rdmahd
