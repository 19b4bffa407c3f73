// Checks over the "peers" probe's facts (facts/peer_facts.h): peer_reachable (the last latency
// probe to each peer got through), peer_latency (its p99 under peers.max_latency_p99_us) and
// peer_bandwidth (the last stream over peers.min_bandwidth_gbps). One verdict per configured peer;
// without the probe's facts (probe disabled, or no peers) the checks say nothing.
#include <cstdio>
#include <string>

#include "core/check.h"
#include "facts/peer_facts.h"

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
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<PeerFacts>();
    if (facts == nullptr) return;
    const auto& limit = config.Section<PeersPolicy>().max_latency_p99_us;
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
