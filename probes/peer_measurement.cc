#include "probes/peer_measurement.h"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "common/net_address.h"
#include "probes/latency_histogram.h"
#include "probes/latency_stats.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;

// The whole ping-pong after connect: 5 s, plus room for very long rounds (100 us per iteration,
// far above any RoCE round trip, so only a stalled peer reaches it).
std::chrono::milliseconds LatencyTimeout(std::uint32_t iterations) {
  return std::chrono::milliseconds(5000 + iterations / 10);
}

void AddCount(std::vector<PeerProbeCount>& counts, const std::string& kind, const std::string& result,
              const std::string& reason, std::uint64_t n) {
  auto key = [](const PeerProbeCount& c) { return std::tie(c.kind, c.result, c.reason); };
  PeerProbeCount probe{kind, result, reason, 0};
  auto it = std::lower_bound(counts.begin(), counts.end(), probe,
                             [&](const PeerProbeCount& a, const PeerProbeCount& b) { return key(a) < key(b); });
  if (it == counts.end() || key(*it) != key(probe)) it = counts.insert(it, std::move(probe));
  it->count += n;
}

// Counts a probe that ended (`failure` null: a success) and keeps or clears the last failure.
void Count(PeerState& peer, const char* kind, const ProbeFailure* failure) {
  const bool latency = std::string_view(kind) == kLatencyProbe;
  PeerStatus& s = peer.status;
  (latency ? s.last_latency : s.last_bandwidth) = failure ? PeerProbeResult::kFailure : PeerProbeResult::kSuccess;
  auto& last_failure = latency ? s.latency_failure : s.bandwidth_failure;
  if (failure != nullptr) {
    const std::string reason = BoundedFailureReason(failure->reason);
    AddCount(s.counts, kind, "failure", reason, 1);
    last_failure = PeerProbeFailureFacts{kind, reason,
                                         reason == failure->reason ? failure->message
                                                                   : failure->message + " (reason " + failure->reason + ")"};
  } else {
    AddCount(s.counts, kind, "success", "", 1);
    last_failure.reset();
  }
  peer.dirty = true;
}

// The address to probe, looking a name up when needed; a counted "address_resolution" failure
// (and false) when it does not resolve.
bool Resolve(PeerState& peer, AddressResolver& resolver, const PeersPolicy& p, const char* kind, Clock::time_point now) {
  if (IsIpLiteral(peer.target.name)) {
    peer.address = peer.target.name;
  } else if (peer.address.empty() || now - peer.resolved_at >= kPeerResolveTtl) {
    Result<std::string> resolved = resolver.Resolve(peer.target.name, p.step_timeout);
    if (!resolved.ok()) {
      peer.address.clear();
      const ProbeFailure failure{"address_resolution", resolved.error().message};
      Count(peer, kind, &failure);
      return false;
    }
    peer.address = *resolved;
    peer.resolved_at = now;
  }
  if (peer.status.address != peer.address) {
    peer.status.address = peer.address;
    peer.dirty = true;
  }
  return true;
}

// Where and how the probe goes (peers.port, source_address, tos, step_timeout).
PeerEndpoint EndpointOf(const PeerState& peer, const PeersPolicy& p) { return {peer.target.name, peer.address, p.port}; }
ProbeSource SourceOf(const PeersPolicy& p) { return {p.source_address, p.tos, p.step_timeout}; }

// True when the prober failed; the failure is counted, unless the daemon is stopping (not the
// peer's doing), and a DNS name is looked up again next time.
template <class T>
bool Failed(PeerState& peer, const char* kind, const ProbeOutcome<T>& outcome) {
  const auto* failure = std::get_if<ProbeFailure>(&outcome);
  if (failure == nullptr) return false;
  if (failure->reason == "stopped") return true;
  if (!IsIpLiteral(peer.target.name)) peer.address.clear();
  Count(peer, kind, failure);
  return true;
}

}  // namespace

std::string BoundedFailureReason(const std::string& reason) {
  static const std::set<std::string> kKnown = {"address_resolution", "route_resolution", "connect_timeout",
                                               "rejected", "unreachable", "handshake", "timeout",
                                               "local_resources", "stopped"};
  if (kKnown.count(reason) > 0) return reason;
  if (reason.size() > 3 && reason.size() <= 40 && reason.rfind("wc_", 0) == 0 &&
      std::all_of(reason.begin() + 3, reason.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; })) {
    return reason;
  }
  return "other";
}

void StartCounting(PeerStatus& status, const char* kind) { AddCount(status.counts, kind, "success", "", 0); }

void MeasureLatency(PeerState& peer, PeerProber& prober, AddressResolver& resolver, const PeersPolicy& p,
                    const std::atomic<bool>& stop, Clock::time_point now, std::string_view placement_warning) {
  if (!Resolve(peer, resolver, p, kLatencyProbe, now)) return;
  LatencyRequest request;
  request.message_size = p.latency_message_size;
  request.iterations = p.latency_iterations;
  request.timeout = LatencyTimeout(p.latency_iterations);
  ProbeOutcome<LatencySamples> outcome = prober.Latency(EndpointOf(peer, p), SourceOf(p), request, stop);
  // Where the round ran, for peer_latency to name beside a slow or failed round.
  const int cpu = sched_getcpu();
  peer.status.latency_cpu = cpu >= 0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(cpu)) : std::nullopt;
  if (Failed(peer, kLatencyProbe, outcome)) return;
  LatencySamples& samples = std::get<LatencySamples>(outcome);
  std::vector<double>& us = samples.half_round_trip_us;
  const std::size_t n = us.size();
  std::optional<LatencyStats> stats = ComputeLatencyStatsInPlace(us);  // sorts `us`
  ObserveSortedSamples(us, peer.histogram);
  if (!stats) {
    const ProbeFailure failure{"local_resources", peer.target.name + ": the prober returned " + std::to_string(n) +
                                                      " samples; the statistics need at least 3"};
    Count(peer, kLatencyProbe, &failure);
    return;
  }
  std::string cpu_warning = std::string(placement_warning);
  if (!samples.cpu_warning.empty()) cpu_warning += (cpu_warning.empty() ? "" : "; ") + samples.cpu_warning;
  peer.status.latency = PeerLatencyRound{stats->min_us,  stats->typical_us, stats->average_us, stats->p99_us,
                                         stats->p99_9_us, stats->max_us,     stats->samples,    samples.clock,
                                         std::move(cpu_warning)};
  Count(peer, kLatencyProbe, nullptr);
}

void MeasureBandwidth(PeerState& peer, PeerProber& prober, AddressResolver& resolver, const PeersPolicy& p,
                      const std::atomic<bool>& stop) {
  if (!Resolve(peer, resolver, p, kBandwidthProbe, Clock::now())) return;
  BandwidthRequest request;
  request.message_size = p.bandwidth_message_size;
  request.duration = p.bandwidth_duration;
  request.queue_depth = p.bandwidth_queue_depth;
  ProbeOutcome<BandwidthResult> outcome = prober.Bandwidth(EndpointOf(peer, p), SourceOf(p), request, stop);
  if (Failed(peer, kBandwidthProbe, outcome)) return;
  peer.status.bandwidth_bytes_per_second = std::get<BandwidthResult>(outcome).BytesPerSecond();
  Count(peer, kBandwidthProbe, nullptr);
}

}  // namespace rdmahd
