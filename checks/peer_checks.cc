// Checks over the "peers" probe's facts (facts/peer_facts.h): peer_reachable (the last latency
// probe to each peer got through), peer_latency (its p99 under peers.max_latency_p99_us) and
// peer_bandwidth (the last stream over peers.min_bandwidth_gbps). One verdict per configured peer;
// without the probe's facts (probe disabled, or no peers) the checks say nothing.
//
// peer_latency also says what this node's counters did during a round that looks wrong (p99 over
// the limit, p99 jumped against the peer's recent rounds, or a probe that failed with a timeout or
// a retry error): it records, every collection, the counters that explain a slow or lost round
// (pause frames received on the RoCE priority, CNPs, sequence errors, ack timeouts, receive
// discards) and each peer's round count and p99 into the history, and names those that rose
// between the two collections around the round, with the CPU and NUMA node the probe ran on.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration_text.h"
#include "config/policies.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/peer_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/workload_facts.h"

namespace rdmahd {
namespace {

std::string Us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", us);
  return buf;
}

std::string Gbps(double bytes_per_second) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f Gb/s", bytes_per_second * 8 / 1e9);
  return buf;
}

std::string Where(const PeerStatus& p) {
  return p.address.empty() || p.address == p.name ? "" : " (" + p.address + ")";
}

// What to do about a failed probe, by its bounded reason.
std::string FixFor(const std::string& reason, const PeerStatus& p) {
  if (reason == "address_resolution") {
    return "check the name in peers.targets / peers.file and this node's resolver: getent ahosts " + p.name;
  }
  if (reason == "route_resolution" || reason == "unreachable") {
    return "check the route to " + p.name + " over the RoCE netdev (ip route get <peer address>) and peers.source_address; "
           "rping -c -a <peer address> tests the RDMA path";
  }
  if (reason == "connect_timeout" || reason == "timeout") {
    return "check that the peer is up and runs rdma-healthd with peers.responder enabled on peers.port, and that the "
           "path is lossless (PFC on the RoCE priority); `rping -c -a <peer address>` tests the RDMA path";
  }
  if (reason == "rejected") {
    return "the peer's responder refused: add this node's address to the peer's peers.responder.allow, or raise its "
           "max_sessions";
  }
  if (reason == "handshake") return "run the same rdma-healthd version on both nodes (the probe handshake differs)";
  if (reason == "local_resources") {
    return "this node could not set up the probe (RDMA device, memory registration limits: `ulimit -l`); the message says "
           "what failed";
  }
  if (reason.rfind("wc_", 0) == 0) {
    return "completions failed with " + reason.substr(3) + ": check the link and PFC/ECN on the path (retry and RNR "
           "errors mean drops or a stalled peer)";
  }
  return "run `rdma-healthd probe " + p.name + "` for details";
}

// ---- What moved on this node during a latency round --------------------------------------------

using TimePoint = History::TimePoint;

struct LocalCounter {
  std::string_view name;
  std::string_view meaning;
};

// RDMA port hw_counters (mlx5's names, then rxe's).
constexpr LocalCounter kPortCounters[] = {
    {"rp_cnp_handled", "CNPs handled: DCQCN throttled this sender"},
    {"np_cnp_sent", "CNPs sent: packets arrived ECN-marked, the path is congested"},
    {"packet_seq_err", "sequence errors: packets lost"},
    {"out_of_sequence", "out-of-sequence packets: packets lost"},
    {"implied_nak_seq_err", "implied NAK sequence errors: packets lost"},
    {"local_ack_timeout_err", "ack timeouts: packets or their acks lost, then retransmitted"},
    {"out_of_buffer", "receive discards: no receive buffer posted, this host too slow"},
    {"rcvd_seq_err", "sequence errors: packets lost"},
    {"out_of_seq_request", "out-of-sequence requests: packets lost"},
    {"retry_exceeded_err", "retries exhausted: packets or their acks lost"},
    {"completer_retry_err", "retransmissions: packets or their acks lost"},
};
// Netdev driver stats (mlx5's names); the pause counter of the RoCE priority is added by name.
constexpr LocalCounter kNetdevCounters[] = {
    {"rx_discards_phy", "receive discards at the port: the NIC's buffer was full, this host too slow to drain it"},
    {"rx_out_of_buffer", "receive discards: no receive buffer posted, this host too slow"},
};
constexpr std::string_view kPauseMeaning = "pause frames received on the RoCE priority: back-pressure from the fabric";
constexpr std::string_view kLocalPrefix = "peer_latency/local/";
// At most this many moved counters in a reason.
constexpr std::size_t kMaxMoved = 8;
// A round's p99 "jumped" when it is more than kJumpFactor times the median of the peer's previous
// rounds (at least kJumpMinRounds of them, the last kJumpRounds) and kJumpMinNs above it.
constexpr double kJumpFactor = 2.0;
constexpr std::size_t kJumpMinRounds = 3;
constexpr std::size_t kJumpRounds = 16;
constexpr std::uint64_t kJumpMinNs = 5000;

// "rx_prio3_pause" (mlx5), or nothing when the RoCE priority is not configured.
std::string PauseStat(const Config& config) {
  const auto& priority = config.Section<RocePolicy>().priority;
  return priority ? "rx_prio" + std::to_string(*priority) + "_pause" : std::string();
}

// A peer's series names: its configured name, hashed when too long for the history.
std::string PeerSeries(const PeerStatus& p, std::string_view what) {
  std::string key = p.name.size() <= 160 ? p.name : "#" + std::to_string(std::hash<std::string>{}(p.name));
  return "peer_latency/peer/" + key + "/" + std::string(what);
}

std::uint64_t LatencyRounds(const PeerStatus& p) {
  std::uint64_t n = 0;
  for (const PeerProbeCount& c : p.counts) {
    if (c.kind == "latency") n += c.count;
  }
  return n;
}

// One counter's series in the history, with what to call it in a reason.
struct LocalSeries {
  std::string series, where;  // where: "mlx5_0/1", "ens1f0np0"
  std::string_view name, meaning;
};

std::vector<LocalSeries> LocalSeriesOf(const Snapshot& snapshot) {
  std::vector<LocalSeries> out;
  if (const auto* devices = snapshot.Get<RdmaDevicesFacts>()) {
    for (const RdmaDeviceFacts& d : devices->devices) {
      for (const RdmaPortFacts& port : d.ports) {
        for (const LocalCounter& c : kPortCounters) {
          if (!port.hw_counters.contains(c.name)) continue;
          out.push_back({std::string(kLocalPrefix) + port.Subject() + "/" + std::string(c.name), port.Subject(), c.name,
                         c.meaning});
        }
      }
    }
  }
  return out;
}

// The round's window: the two collections around the newest change of the peer's round count.
struct RoundWindow {
  TimePoint from, to;
};

std::optional<RoundWindow> LastRoundWindow(const History& history, const PeerStatus& p) {
  const std::vector<History::Sample> s = history.Samples(PeerSeries(p, "rounds"));
  if (s.size() < 2 || s[s.size() - 1].baseline != s[s.size() - 2].baseline) return std::nullopt;
  return RoundWindow{s[s.size() - 2].last, s.back().first};
}

// The sample a collection at `t` saw.
const History::Sample* SampleAt(const std::vector<History::Sample>& samples, TimePoint t) {
  for (const History::Sample& s : samples) {
    if (s.first <= t && t <= s.last) return &s;
  }
  return nullptr;
}

// Where the probe thread ran: "probe thread on CPU 3 (NUMA node 0; RDMA devices on node 1)".
std::string Placement(const Snapshot& snapshot, const PeerStatus& p) {
  if (!p.latency_cpu) return "";
  std::string out = "probe thread on CPU " + std::to_string(*p.latency_cpu);
  std::optional<int> node;
  if (const auto* w = snapshot.Get<WorkloadsFacts>()) {
    for (const auto& [n, cpus] : w->node_cpus) {
      if (cpus.Contains(*p.latency_cpu)) node = n;
    }
  }
  std::vector<int> device_nodes;
  if (const auto* topology = snapshot.Get<Topology>()) {
    for (const TopologyDevice& d : topology->devices) {
      if (d.numa_node && *d.numa_node >= 0) device_nodes.push_back(*d.numa_node);
    }
  }
  std::sort(device_nodes.begin(), device_nodes.end());
  device_nodes.erase(std::unique(device_nodes.begin(), device_nodes.end()), device_nodes.end());
  if (!node && device_nodes.empty()) return out;
  out += " (";
  if (node) out += "NUMA node " + std::to_string(*node);
  if (!device_nodes.empty()) {
    out += node ? "; " : "";
    out += "RDMA devices on node";
    out += device_nodes.size() == 1 ? " " : "s ";
    for (std::size_t i = 0; i < device_nodes.size(); ++i) out += (i ? ", " : "") + std::to_string(device_nodes[i]);
    if (node && std::find(device_nodes.begin(), device_nodes.end(), *node) == device_nodes.end()) {
      out += ": the probe ran on a remote node";
    }
  }
  return out + ")";
}

// "; during the round (...): rp_cnp_handled on mlx5_0/1 +35 (CNPs handled: ...); probe thread on ..."
std::string Explain(const CheckContext& ctx, const PeerStatus& p) {
  std::string out;
  const std::optional<RoundWindow> window = LastRoundWindow(ctx.history, p);
  if (!window) {
    out = "; what this node's counters did during the round is not known yet (it needs a collection before it)";
  } else {
    std::vector<std::string> moved;
    std::size_t more = 0;
    std::vector<LocalSeries> series = LocalSeriesOf(ctx.snapshot);
    const std::string pause = PauseStat(ctx.config);
    if (const auto* netdevs = ctx.snapshot.Get<RdmaNetdevFacts>()) {
      for (const NetdevFacts& n : netdevs->netdevs) {
        for (const LocalCounter& c : kNetdevCounters) {
          series.push_back({std::string(kLocalPrefix) + n.netdev + "/" + std::string(c.name), n.netdev, c.name, c.meaning});
        }
        if (!pause.empty()) {
          series.push_back({std::string(kLocalPrefix) + n.netdev + "/" + pause, n.netdev, "", kPauseMeaning});
        }
      }
    }
    for (const LocalSeries& l : series) {
      const std::vector<History::Sample> samples = ctx.history.Samples(l.series);
      const History::Sample* before = SampleAt(samples, window->from);
      const History::Sample* after = SampleAt(samples, window->to);
      if (before == nullptr || after == nullptr || before->baseline != after->baseline || after->value <= before->value) {
        continue;
      }
      if (moved.size() == kMaxMoved) {
        ++more;
        continue;
      }
      const std::string name = l.name.empty() ? pause : std::string(l.name);
      moved.push_back(name + " on " + l.where + " +" + std::to_string(after->value - before->value) + " (" +
                      std::string(l.meaning) + ")");
    }
    const std::string span = "the " + FormatSeconds(std::chrono::duration<double>(window->to - window->from).count()) +
                             " between the collections around the round";
    if (moved.empty()) {
      out = "; no local counter moved during the round (" + span +
            ": pause frames, CNPs, sequence errors, ack timeouts, receive discards): look at the path and the peer";
    } else {
      out = "; during the round (" + span + "): ";
      for (std::size_t i = 0; i < moved.size(); ++i) out += (i ? ", " : "") + moved[i];
      if (more > 0) out += " and " + std::to_string(more) + " more";
    }
  }
  const std::string placement = Placement(ctx.snapshot, p);
  if (!placement.empty()) out += "; " + placement;
  return out;
}

// A failure the fabric or this host can cause (a round that timed out, or whose packets were
// retried until the NIC gave up), as opposed to a refused connection or a name that does not resolve.
bool LossLikeFailure(const PeerStatus& p) {
  if (p.last_latency != PeerProbeResult::kFailure || !p.latency_failure) return false;
  const std::string& r = p.latency_failure->reason;
  return r == "timeout" || r == "connect_timeout" || (r.rfind("wc_", 0) == 0 && r.find("retry") != std::string::npos);
}

// "p99 38.00 us jumped from the median 9.00 us of its last 5 rounds", or "" when it did not.
std::string Jump(const History& history, const PeerStatus& p) {
  if (p.last_latency != PeerProbeResult::kSuccess || !p.latency) return "";
  const std::vector<History::Sample> s = history.Samples(PeerSeries(p, "p99_ns"));
  if (s.size() < kJumpMinRounds + 1) return "";
  const std::uint64_t now = s.back().value;
  std::vector<std::uint64_t> before;
  for (std::size_t i = s.size() - 1; i-- > 0 && before.size() < kJumpRounds;) before.push_back(s[i].value);
  std::nth_element(before.begin(), before.begin() + before.size() / 2, before.end());
  const std::uint64_t median = before[before.size() / 2];
  if (static_cast<double>(now) <= kJumpFactor * static_cast<double>(median) || now < median + kJumpMinNs) return "";
  return "p99 " + Us(static_cast<double>(now) / 1000) + " jumped from the median " +
         Us(static_cast<double>(median) / 1000) + " of its last " + std::to_string(before.size()) + " rounds";
}

class PeerReachableCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<PeerFacts>();
    if (facts == nullptr) return;
    if (!facts->targets_file_error.empty()) {
      out.push_back({"", "file " + facts->targets_file, Verdict::kWarning,
                     "the targets file could not be used: " + facts->targets_file_error,
                     "fix the file (a YAML or JSON list of {targets: [...], labels: {...}}); it is read again when it changes"});
    }
    if (!facts->discovery_error.empty()) {
      out.push_back({"", "discovery", Verdict::kWarning,
                     "peer discovery over DNS failed (the last good addresses stay): " + facts->discovery_error,
                     "check the names under peers.discovery.dns (`getent ahosts <name>`, `dig <name>`) and "
                     "peers.discovery.dns_server"});
    }
    for (const auto& shared : facts->peers) {
      const PeerStatus& p = *shared;
      CheckResult r{"", p.name, Verdict::kUnknown, "", ""};
      if (p.last_latency == PeerProbeResult::kNone) {
        r.reason = "not probed yet (the first round comes within peers.interval)";
      } else if (p.last_latency == PeerProbeResult::kFailure && p.latency_failure) {
        r.verdict = Verdict::kFailed;
        r.reason = "last latency probe failed (" + p.latency_failure->reason + "): " + p.latency_failure->message;
        r.fix = FixFor(p.latency_failure->reason, p);
      } else {
        r.verdict = Verdict::kOk;
        r.reason = "last latency probe" + Where(p) + " succeeded";
        if (p.latency) r.reason += ", t_typical " + Us(p.latency->typical_us);
      }
      out.push_back(std::move(r));
    }
  }
};

class PeerLatencyCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history, TimePoint now) const override {
    const auto* facts = snapshot.Get<PeerFacts>();
    if (facts == nullptr || facts->peers.empty()) return;
    for (const auto& shared : facts->peers) {
      const PeerStatus& p = *shared;
      history.RecordCounter(PeerSeries(p, "rounds"), 0, LatencyRounds(p), now);
      if (p.last_latency == PeerProbeResult::kSuccess && p.latency && p.latency->p99_us >= 0) {
        history.RecordGauge(PeerSeries(p, "p99_ns"), static_cast<std::uint64_t>(p.latency->p99_us * 1000 + 0.5), now);
      }
    }
    // This node's counters, once for all peers. A re-created device is another counter.
    const auto* topology = snapshot.Get<Topology>();
    if (const auto* devices = snapshot.Get<RdmaDevicesFacts>()) {
      for (const RdmaDeviceFacts& d : devices->devices) {
        const TopologyDevice* td = topology != nullptr ? topology->FindDevice(d.name) : nullptr;
        const std::uint64_t instance = td != nullptr ? td->generation : 0;
        for (const RdmaPortFacts& port : d.ports) {
          for (const LocalCounter& c : kPortCounters) {
            if (auto v = port.hw_counters.Find(c.name)) {
              history.RecordCounter(std::string(kLocalPrefix) + port.Subject() + "/" + std::string(c.name), instance, *v, now);
            }
          }
        }
      }
    }
    const std::string pause = PauseStat(config);
    if (const auto* netdevs = snapshot.Get<RdmaNetdevFacts>()) {
      for (const NetdevFacts& n : netdevs->netdevs) {
        if (!n.stats_read) continue;
        for (const DriverStat& stat : n.classified_stats) {
          const bool wanted = stat.name == pause || std::any_of(std::begin(kNetdevCounters), std::end(kNetdevCounters),
                                                                 [&](const LocalCounter& c) { return c.name == stat.name; });
          if (wanted) history.RecordCounter(std::string(kLocalPrefix) + n.netdev + "/" + stat.name, 0, stat.value, now);
        }
      }
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto* facts = ctx.snapshot.Get<PeerFacts>();
    if (facts == nullptr) return;
    const auto& limit = ctx.config.Section<PeersPolicy>().max_latency_p99_us;
    for (const auto& shared : facts->peers) {
      const PeerStatus& p = *shared;
      CheckResult r{"", p.name, Verdict::kUnknown, "", ""};
      const bool current = p.latency && p.last_latency == PeerProbeResult::kSuccess;
      const std::string observed =
          current ? "p99 " + Us(p.latency->p99_us) + " (t_typical " + Us(p.latency->typical_us) + ", t_max " +
                        Us(p.latency->max_us) + ")"
                  : "";
      if (!limit) {
        r.reason = (current ? observed + "; " : "") + "not configured (peers.max_latency_p99_us)";
        r.fix = "set peers.max_latency_p99_us in the config (a few times the fabric's usual p99)";
      } else if (!current) {
        r.reason = p.last_latency == PeerProbeResult::kNone ? "not probed yet"
                                                            : "the last latency probe failed (see peer_reachable)";
      } else if (p.latency->p99_us > *limit) {
        r.verdict = Verdict::kFailed;
        r.reason = observed + " is above the limit " + Us(*limit);
        r.fix = "look for congestion on the path: pause frames and ECN marks (rdma_roce_* metrics, `ethtool -S <netdev>`) on both "
                "nodes and the switch ports between them; compare with `ib_send_lat -R -T <tos> " + p.name + "`";
      } else {
        r.verdict = Verdict::kOk;
        r.reason = observed + " is within the limit " + Us(*limit);
      }
      // A stretched sample is the CPU's, not the fabric's: say so beside any figure.
      if (current && !p.latency->cpu_warning.empty()) r.reason += "; " + p.latency->cpu_warning;
      // A round that looks wrong: what moved on this node while it ran.
      const std::string jump = Jump(ctx.history, p);
      if (!jump.empty()) r.reason += "; " + jump;
      if (r.verdict == Verdict::kFailed || !jump.empty()) {
        r.reason += Explain(ctx, p);
      } else if (LossLikeFailure(p)) {
        r.reason += " (" + p.latency_failure->reason + ")" + Explain(ctx, p);
      }
      out.push_back(std::move(r));
    }
  }
};

class PeerBandwidthCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<PeerFacts>();
    if (facts == nullptr) return;
    const auto& limit = config.Section<PeersPolicy>().min_bandwidth_gbps;
    for (const auto& shared : facts->peers) {
      const PeerStatus& p = *shared;
      CheckResult r{"", p.name, Verdict::kUnknown, "", ""};
      const bool current = p.bandwidth_bytes_per_second && p.last_bandwidth == PeerProbeResult::kSuccess;
      const std::string observed = current ? "last stream " + Gbps(*p.bandwidth_bytes_per_second) : "";
      if (!limit) {
        r.reason = (current ? observed + "; " : "") + "not configured (peers.min_bandwidth_gbps)";
        r.fix = "set peers.min_bandwidth_gbps (and peers.bandwidth: true) in the config";
      } else if (!facts->bandwidth_enabled) {
        r.reason = "bandwidth probes are off (peers.bandwidth: false)";
        r.fix = "set peers.bandwidth: true to measure it";
      } else if (!current) {
        r.reason = p.last_bandwidth == PeerProbeResult::kNone
                       ? "no bandwidth stream yet (one per peers.bandwidth_interval)"
                       : "the last bandwidth stream failed (" +
                             (p.bandwidth_failure ? p.bandwidth_failure->reason + ": " + p.bandwidth_failure->message
                                                  : std::string("no reason")) + ")";
      } else if (*p.bandwidth_bytes_per_second * 8 / 1e9 < *limit) {
        r.verdict = Verdict::kFailed;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f Gb/s", *limit);
        r.reason = observed + " is below the minimum " + buf;
        r.fix = "check the port rate and errors on both ends (rdma_port_rate_bytes_per_second, symbol and link "
                "errors), PFC pause counters and competing traffic; compare with `ib_write_bw -R " + p.name + "`";
      } else {
        r.verdict = Verdict::kOk;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f Gb/s", *limit);
        r.reason = observed + " meets the minimum " + buf;
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("peer_reachable", PeerReachableCheck, "the last latency probe to each peer got through");
RDMAHD_REGISTER_CHECK("peer_latency", PeerLatencyCheck, "each peer's last p99 latency is under peers.max_latency_p99_us");
RDMAHD_REGISTER_CHECK("peer_bandwidth", PeerBandwidthCheck, "each peer's last bandwidth stream is over peers.min_bandwidth_gbps");

}  // namespace rdmahd
