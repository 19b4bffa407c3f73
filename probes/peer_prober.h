// PeerProber: the seam between the peer probe (probes/peer_probe.* and the probes/peer_* files it
// runs: which peers, when, statistics, metrics) and the verbs engine that measures (probes/rdma_cm_prober.*: librdmacm connect,
// RC SEND/RECV ping-pong, RDMA WRITE stream, the versioned handshake). The probe side is tested
// with a fake prober; the verbs side against a real Soft-RoCE device in the VM tier.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rdmahd {

// One peer as the probe knows it. `name` is how it was configured (address or DNS name, the
// `peer` label); `address` the IP literal it resolved to (v4 or v6).
struct PeerEndpoint {
  std::string name;
  std::string address;
  std::uint16_t port = 0;  // rdma_cm port of the peer's responder
};

// Where probes leave from and how they are marked.
struct ProbeSource {
  std::string bind_address;          // local IP to bind (the RoCE netdev's); empty: let rdma_cm choose
  std::optional<std::uint8_t> tos;   // IP ToS (DSCP << 2) so probes ride the lossless priority
  std::chrono::milliseconds step_timeout{1000};  // every rdma_cm step (resolve, route, connect) and the handshake
};

// RC SEND/RECV ping-pong, perftest ib_send_lat style.
struct LatencyRequest {
  std::uint32_t message_size = 2;  // bytes
  std::uint32_t iterations = 1000;
  std::chrono::milliseconds timeout{5000};  // the whole exchange after connect
};

// What perftest's statistics take: one sample per iteration, in microseconds, each the round trip
// between two consecutive post times divided by 2 (iterations - 1 samples).
struct LatencySamples {
  std::vector<double> half_round_trip_us;
  // Which clock timed them: "steady" (CLOCK_MONOTONIC_RAW around posts) or "completion" (NIC
  // completion timestamps, where the device has them).
  std::string clock = "steady";
  // Why these samples may be stretched (probes/cpu_frequency.h): "" when the CPUs look right.
  std::string cpu_warning;
};

// RDMA WRITE stream, perftest ib_write_bw style.
struct BandwidthRequest {
  std::uint32_t message_size = 65536;
  std::chrono::milliseconds duration{1000};
  std::uint32_t queue_depth = 128;  // outstanding writes
};

struct BandwidthResult {
  std::uint64_t bytes = 0;
  double seconds = 0;
  double BytesPerSecond() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

// Why a probe failed. `reason` is one of a small fixed set (the `reason` label):
//   "address_resolution", "route_resolution", "connect_timeout", "rejected", "unreachable",
//   "handshake", "timeout", "local_resources", "stopped", or "wc_<status>" with the lower-case
//   ibv_wc_status name without IBV_WC_ (e.g. "wc_retry_exc_err"). `message` says the rest, naming
//   the peer.
struct ProbeFailure {
  std::string reason;
  std::string message;
};

template <class T>
using ProbeOutcome = std::variant<T, ProbeFailure>;

class PeerProber {
 public:
  virtual ~PeerProber() = default;
  // One connection, one exchange, full teardown. Never throws; `stop` set ends it early
  // ("stopped"). Thread-compatible: one call at a time per prober.
  virtual ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& peer, const ProbeSource& source,
                                               const LatencyRequest& request, const std::atomic<bool>& stop) = 0;
  virtual ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint& peer, const ProbeSource& source,
                                                  const BandwidthRequest& request, const std::atomic<bool>& stop) = 0;
};

}  // namespace rdmahd
