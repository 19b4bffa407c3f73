// Facts published by the "peers" probe (probes/peer_probe.*): per configured peer, the last
// latency round's perftest statistics, the latency histogram since the peer was added, the last
// bandwidth stream, probe counters by outcome and the last failure. Data only.
//
// Each peer's entry is shared: a publish replaces only the entries of peers whose state changed,
// so publishing with 1,000 peers copies 1,000 pointers, not 1,000 histograms.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rdmahd {

// perftest's ib_send_lat figures of one round (probes/latency_stats.h), in microseconds.
struct PeerLatencyRound {
  double min_us = 0;
  double typical_us = 0;  // the median
  double average_us = 0;
  double p99_us = 0;
  double p99_9_us = 0;
  double max_us = 0;
  std::uint64_t samples = 0;
  std::string clock;  // "steady" or "completion" (the prober says which timed the samples)
  std::string cpu_warning;  // the probe thread's CPUs at conflicting or governed-down frequencies; "" if not
};

// Cumulative bucket counts, Prometheus style (the last bound is +Inf).
struct PeerLatencyHistogram {
  std::vector<std::pair<double, std::uint64_t>> buckets;  // upper bound in seconds, cumulative count
  double sum_seconds = 0;
  std::uint64_t count = 0;
};

// Probes of one kind that ended one way, since the peer was added.
struct PeerProbeCount {
  std::string kind;    // "latency" or "bandwidth"
  std::string result;  // "success" or "failure"
  std::string reason;  // "" for success; ProbeFailure::reason otherwise (a bounded set)
  std::uint64_t count = 0;
};

struct PeerProbeFailureFacts {
  std::string kind;
  std::string reason;
  std::string message;
};

enum class PeerProbeResult { kNone, kSuccess, kFailure };

struct PeerStatus {
  std::string name;     // as configured (the `peer` label)
  std::string address;  // the IP it last resolved to; empty before that
  std::vector<std::pair<std::string, std::string>> labels;  // from the targets file, sorted by name
  PeerProbeResult last_latency = PeerProbeResult::kNone;  // the last latency probe's outcome
  std::optional<PeerLatencyRound> latency;                // the last successful latency round
  PeerLatencyHistogram histogram;
  PeerProbeResult last_bandwidth = PeerProbeResult::kNone;
  std::optional<double> bandwidth_bytes_per_second;  // the last successful stream
  // Why the last latency / bandwidth probe failed, when it did (cleared by a success).
  std::optional<PeerProbeFailureFacts> latency_failure;
  std::optional<PeerProbeFailureFacts> bandwidth_failure;
  std::vector<PeerProbeCount> counts;
  // The CPU the probe thread ran on when the last latency probe ended (sched_getcpu), success or
  // failure; absent before the first, or when the kernel would not say.
  std::optional<std::uint32_t> latency_cpu;
};

struct PeerFacts {
  std::vector<std::shared_ptr<const PeerStatus>> peers;  // sorted by name
  std::string targets_file;        // peers.file; empty when none
  std::string targets_file_error;  // why the last read of it failed (the last good list stays)
  std::string discovery_error;     // DNS discovery names that did not resolve, and why (last good kept)
  bool bandwidth_enabled = false;
};

}  // namespace rdmahd
