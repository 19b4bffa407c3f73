#include "daemon/probe_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace rdmahd {
namespace {

class FakeProber : public PeerProber {
 public:
  ProbeOutcome<LatencySamples> latency = LatencySamples{};
  ProbeOutcome<BandwidthResult> bandwidth = BandwidthResult{};
  PeerEndpoint peer;
  ProbeSource source;
  LatencyRequest latency_request;
  BandwidthRequest bandwidth_request;

  ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& p, const ProbeSource& s, const LatencyRequest& r,
                                       const std::atomic<bool>&) override {
    peer = p;
    source = s;
    latency_request = r;
    return latency;
  }
  ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint& p, const ProbeSource& s, const BandwidthRequest& r,
                                          const std::atomic<bool>&) override {
    peer = p;
    source = s;
    bandwidth_request = r;
    return bandwidth;
  }
};

Options ProbeOptions(const std::string& peer) {
  Options o;
  o.mode = Mode::kProbe;
  o.probe_peer = peer;
  return o;
}

TEST(RunProbeCommand, LatencyPrintsAPerftestLineWithTheRequestedParameters) {
  FakeProber prober;
  LatencySamples samples;
  for (int i = 0; i < 9; ++i) samples.half_round_trip_us.push_back(10 + i);
  std::get<LatencySamples>(prober.latency) = samples;
  Options o = ProbeOptions("192.0.2.1");
  o.probe_port = 18700;
  o.probe_iterations = 10;
  o.probe_source = "192.0.2.2";
  o.probe_tos = 106;
  std::ostringstream out, err;
  EXPECT_EQ(RunProbeCommand(o, prober, out, err), 0) << err.str();
  EXPECT_EQ(prober.peer.address, "192.0.2.1");
  EXPECT_EQ(prober.peer.port, 18700);
  EXPECT_EQ(prober.source.bind_address, "192.0.2.2");
  EXPECT_EQ(prober.source.tos, std::optional<std::uint8_t>(106));
  EXPECT_EQ(prober.latency_request.message_size, 2u);  // ib_send_lat's default
  EXPECT_EQ(prober.latency_request.iterations, 10u);
  const std::string text = out.str();
  EXPECT_NE(text.find("t_typical[usec]"), std::string::npos);
  EXPECT_NE(text.find("99.9% percentile[usec]"), std::string::npos);
  // 9 samples 10..18, m = 7: t_min 10.00, t_max = sorted[7] = 17.00, t_typical = sorted[3] = 13.00.
  std::istringstream lines(text);
  std::string line, values;
  while (std::getline(lines, line)) {
    if (line.rfind(" 2 ", 0) == 0) values = line;
  }
  std::istringstream v(values);
  double bytes, iterations, tmin, tmax, typical;
  ASSERT_TRUE(v >> bytes >> iterations >> tmin >> tmax >> typical) << text;
  EXPECT_EQ(iterations, 10);
  EXPECT_DOUBLE_EQ(tmin, 10.0);
  EXPECT_DOUBLE_EQ(tmax, 17.0);
  EXPECT_DOUBLE_EQ(typical, 13.0);
}

TEST(RunProbeCommand, FailureExitsOneWithTheReason) {
  FakeProber prober;
  prober.latency = ProbeFailure{"rejected", "peer 192.0.2.1 (192.0.2.1): responder refused: not_allowed: ..."};
  std::ostringstream out, err;
  EXPECT_EQ(RunProbeCommand(ProbeOptions("192.0.2.1"), prober, out, err), 1);
  EXPECT_NE(err.str().find("failed (rejected)"), std::string::npos) << err.str();
}

TEST(RunProbeCommand, BandwidthReportsBytesOverSeconds) {
  FakeProber prober;
  std::get<BandwidthResult>(prober.bandwidth) = BandwidthResult{1'250'000'000, 1.0};  // 10 Gb/s (in place: gcc 12 -O2 warns falsely on the variant assignment)
  Options o = ProbeOptions("192.0.2.1");
  o.probe_bandwidth = true;
  o.probe_duration_s = 2;
  std::ostringstream out, err;
  EXPECT_EQ(RunProbeCommand(o, prober, out, err), 0) << err.str();
  EXPECT_EQ(prober.bandwidth_request.message_size, 65536u);  // ib_write_bw's default
  EXPECT_EQ(prober.bandwidth_request.duration, std::chrono::milliseconds(2000));
  EXPECT_NE(out.str().find("10.00"), std::string::npos) << out.str();       // Gb/sec
  EXPECT_NE(out.str().find("1192.09"), std::string::npos) << out.str();     // MB/sec (2^20), as perftest
}

}  // namespace
}  // namespace rdmahd
