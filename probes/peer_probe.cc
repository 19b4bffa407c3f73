#include "probes/peer_probe.h"

#include <algorithm>
#include <utility>

#include "config/config_section.h"
#include "probes/peer_measurement.h"
#include "probes/peer_metrics.h"
#include "probes/peer_publication.h"
#include "probes/rdma_cm_prober.h"

namespace rdmahd {

PeerProbe::PeerProbe() : PeerProbe(Options{}) {}

PeerProbe::PeerProbe(Options options)
    : options_(std::move(options)),
      schedule_(options_.seed),
      membership_(PeerMembership::Options{options_.discover, options_.local_addresses, options_.thread_cpu_time}) {}

PeerProbe::~PeerProbe() = default;

std::optional<std::chrono::steady_clock::time_point> PeerProbe::next_latency_due(const std::string& peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return std::nullopt;
  return it->second->next_latency;
}

bool PeerProbe::HasWork(const Config& config) const {
  const PeersPolicy& p = config.Section<PeersPolicy>();
  return !p.targets.empty() || !p.file.empty() || !p.discovery.dns.empty();
}

std::chrono::milliseconds PeerProbe::Interval(const Config& config) const {
  // Nothing to probe and nothing to discover: a new config ends the scheduler's wait anyway.
  if (!HasWork(config)) return std::chrono::seconds(60);
  return PeerSchedule::Tick(config.Section<PeersPolicy>());
}

void PeerProbe::Reconcile(const Config& config, Clock::time_point now) {
  const PeersPolicy& p = config.Section<PeersPolicy>();
  membership_.Update(p, now);
  if (membership_.TakeErrorsChanged()) set_changed_ = true;
  ApplyIntervals(p, now);
  if (membership_.targets_changed()) {
    peers_ = ReconcilePeers(std::move(peers_), membership_.Wanted(p), p, schedule_, now);
    set_changed_ = true;
  }
  membership_.EndFileCheck();
}

void PeerProbe::ApplyIntervals(const PeersPolicy& p, Clock::time_point now) {
  // Every peer keeps its phase, but no due time is left further out than the new interval allows.
  if (p.interval != interval_) {
    for (auto& [name, peer] : peers_) peer->next_latency = std::min(peer->next_latency, schedule_.FirstDue(now, p.interval));
    interval_ = p.interval;
  }
  if (p.bandwidth != bandwidth_ || p.bandwidth_interval != bandwidth_interval_) {
    for (auto& [name, peer] : peers_) {
      if (p.bandwidth && !bandwidth_) {
        peer->next_bandwidth = schedule_.FirstDue(now, p.bandwidth_interval);
        StartCounting(peer->status, kBandwidthProbe);
        peer->dirty = true;
      } else if (!p.bandwidth) {
        // Streams turned off: the last stream's figure is no longer current (the counters stay).
        peer->status.bandwidth_bytes_per_second.reset();
        peer->status.bandwidth_failure.reset();
        peer->status.last_bandwidth = PeerProbeResult::kNone;
        peer->dirty = true;
      } else {
        peer->next_bandwidth = std::min(peer->next_bandwidth, schedule_.FirstDue(now, p.bandwidth_interval));
      }
    }
    if (p.bandwidth != bandwidth_) set_changed_ = true;
    bandwidth_ = p.bandwidth;
    bandwidth_interval_ = p.bandwidth_interval;
  }
}

void PeerProbe::RunRound(const ProbeContext& ctx, ProbeBoard& board) {
  // The registered probe's prober: librdmacm over the node's RoCE devices (probes/rdma_cm_prober.h).
  if (!prober_) prober_ = options_.prober ? options_.prober() : MakeRdmaCmProber();
  if (!resolver_) resolver_ = options_.resolver ? options_.resolver() : MakeSystemResolver();
  if (!pinning_) pinning_.emplace();  // on the probe's own thread: its CPUs are the ones to go back to
  if (pinning_->Apply(ctx.config.Section<PeersPolicy>().cpus)) {
    pin_warning_ = pinning_->error().empty() ? "" : "peers.cpus not applied, the probe runs on any CPU: " + pinning_->error();
  }
  const Clock::time_point start = Clock::now();
  Reconcile(ctx.config, start);
  while (!ctx.stopping.load()) {
    const Clock::time_point now = Clock::now();
    if (now - start >= kRoundBudget) break;
    const std::optional<PeerSchedule::Due> next = PeerSchedule::Earliest(peers_, bandwidth_);
    if (!next || next->at > now) break;
    if (next->bandwidth) {
      next->peer->next_bandwidth = schedule_.NextDue(next->at, bandwidth_interval_, now);
      MeasureBandwidth(*next->peer, *prober_, *resolver_, ctx.config.Section<PeersPolicy>(), ctx.stopping);
    } else {
      next->peer->next_latency = schedule_.NextDue(next->at, interval_, now);
      MeasureLatency(*next->peer, *prober_, *resolver_, ctx.config.Section<PeersPolicy>(), ctx.stopping, now, pin_warning_);
    }
  }
  Publish(ctx.config, board);
}

void PeerProbe::Publish(const Config& config, ProbeBoard& board) {
  if (!HasUnpublishedChanges(peers_, set_changed_)) return;
  PeerFacts facts;
  facts.targets_file = config.Section<PeersPolicy>().file;
  facts.targets_file_error = membership_.file_error(config.Section<PeersPolicy>());
  facts.discovery_error = membership_.discovery_error(config.Section<PeersPolicy>());
  facts.bandwidth_enabled = bandwidth_;
  AddPeerStatuses(peers_, facts);
  set_changed_ = false;
  board.Publish(std::move(facts));
}

void PeerProbe::Render(const Snapshot& snapshot, MetricSink& sink) const {
  if (const auto* facts = snapshot.Get<PeerFacts>()) RenderPeerFacts(*facts, sink);
}

namespace {

using std::chrono::milliseconds;

// Peer probes. An interval under 100ms would be a load test, not a probe; over a day, no probe.
constexpr milliseconds kMinPeerInterval{100};
constexpr milliseconds kMaxPeerInterval{86'400'000};
// DNS discovery and selection.
constexpr milliseconds kMinDnsInterval{1000};
constexpr milliseconds kMinRotation{60000};
constexpr std::uint32_t kMaxSelectedPeers = 4096;
constexpr milliseconds kMinStepTimeout{10};
constexpr milliseconds kMaxStepTimeout{60'000};
constexpr milliseconds kMinBandwidthInterval{10'000};
constexpr milliseconds kMaxBandwidthInterval{86'400'000};
constexpr milliseconds kMinBandwidthDuration{100};
constexpr milliseconds kMaxBandwidthDuration{60'000};
// perftest refuses fewer than 5 iterations; its statistics need 3 samples after the first.
constexpr std::uint32_t kMinLatencyIterations = 5;
constexpr std::uint32_t kMaxLatencyIterations = 1'000'000;
constexpr std::uint32_t kMaxProbeMessage = 1u << 24;  // 16 MiB: ib_write_bw's usual largest size is 8 MiB
constexpr std::uint32_t kMaxQueueDepth = 8192;
constexpr double kMaxLatencyPolicyUs = 1e6;  // a second: beyond that the value is surely in the wrong unit
constexpr std::uint32_t kMaxResponderSessions = 1024;
constexpr std::uint32_t kMaxResponderMessage = 1u << 30;

Status ParsePeerDiscovery(const ConfigWalker& w, const ConfigNode& v, PeerDiscoveryPolicy& out) {
  return w.VisitMap(v, {
      {"dns", [&](const ConfigNode& f) { return w.ReadTargets(f, out.dns); }},
      {"dns_server", [&](const ConfigNode& f) { return w.ReadString(f, out.dns_server); }},
      {"dns_interval", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinDnsInterval, kMaxPeerInterval, out.dns_interval); }},
  });
}

Status ParsePeerSelection(const ConfigWalker& w, const ConfigNode& v, PeerSelectionPolicy& out) {
  return w.VisitMap(v, {
      {"max_peers", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxSelectedPeers, out.max_peers); }},
      {"same_tor_cap", [&](const ConfigNode& f) { return w.ReadU32(f, 0, kMaxSelectedPeers, out.same_tor_cap); }},
      {"tor_label", [&](const ConfigNode& f) { return w.ReadString(f, out.tor_label); }},
      {"rotation", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinRotation, kMaxPeerInterval, out.rotation); }},
      {"self", [&](const ConfigNode& f) { return w.ReadString(f, out.self); }},
  });
}

// A CPU list in the kernel's format: "3", "2-3", "0,4-7".
Status ReadCpus(const ConfigWalker& w, const ConfigNode& v, CpuList& out) {
  std::string text;
  if (Status st = w.ReadString(v, text); !st.ok() || text.empty()) return st;
  Result<CpuList> cpus = ParseCpuList(text);
  if (!cpus.ok() || cpus->empty()) {
    return w.FailAt(v, "must be a list of CPUs in the kernel's format (\"3\", \"2-3\", \"0,4-7\"; numbers up to " +
                         std::to_string(CpuList::kMaxId) + ")");
  }
  out = std::move(*cpus);
  return Status::Ok();
}

Status ParseResponder(const ConfigWalker& w, const ConfigNode& v, PeerResponderPolicy& out) {
  Status st = w.VisitMap(v, {
      {"enabled", [&](const ConfigNode& f) { return w.ReadBool(f, out.enabled); }},
      {"listen_address", [&](const ConfigNode& f) { return w.ReadIp(f, out.listen_address); }},
      {"port", [&](const ConfigNode& f) { return w.ReadPort(f, out.port); }},
      {"allow", [&](const ConfigNode& f) { return w.ReadCidrList(f, out.allow); }},
      {"max_sessions", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxResponderSessions, out.max_sessions); }},
      {"max_message_size", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxResponderMessage, out.max_message_size); }},
      {"max_registered_bytes", [&](const ConfigNode& f) {
         std::optional<std::uint64_t> n;
         Status s = w.ReadCount(f, n);
         if (s.ok() && n) out.max_registered_bytes = *n;
         return s;
       }},
      {"cpus", [&](const ConfigNode& f) { return ReadCpus(w, f, out.cpus); }},
  });
  if (!st.ok()) return st;
  if (out.enabled && out.allow.empty()) {
    return w.FailAt(v, "enabled is true but allow is empty, so no peer could connect (list the peers' "
                     "addresses or CIDR blocks under allow)");
  }
  if (out.max_registered_bytes < out.max_message_size) {
    return w.FailAt(v, "max_registered_bytes (" + std::to_string(out.max_registered_bytes) +
                         ") is below max_message_size (" + std::to_string(out.max_message_size) +
                         "): not even one probe of the largest size would fit");
  }
  return Status::Ok();
}

Status ParsePeers(const ConfigWalker& w, const ConfigNode& v, PeersPolicy& out) {
  Status st = w.VisitMap(v, {
      {"targets", [&](const ConfigNode& f) { return w.ReadTargets(f, out.targets); }},
      {"file", [&](const ConfigNode& f) { return w.ReadPath(f, out.file); }},
      {"port", [&](const ConfigNode& f) { return w.ReadPort(f, out.port); }},
      {"source_address", [&](const ConfigNode& f) { return w.ReadIp(f, out.source_address); }},
      {"tos", [&](const ConfigNode& f) { return w.ReadTos(f, out.tos); }},
      {"interval", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinPeerInterval, kMaxPeerInterval, out.interval); }},
      {"step_timeout", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinStepTimeout, kMaxStepTimeout, out.step_timeout); }},
      {"latency_message_size", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxProbeMessage, out.latency_message_size); }},
      {"latency_iterations", [&](const ConfigNode& f) { return w.ReadU32(f, kMinLatencyIterations, kMaxLatencyIterations, out.latency_iterations); }},
      {"bandwidth", [&](const ConfigNode& f) { return w.ReadBool(f, out.bandwidth); }},
      {"bandwidth_interval", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinBandwidthInterval, kMaxBandwidthInterval, out.bandwidth_interval); }},
      {"bandwidth_duration", [&](const ConfigNode& f) { return w.ReadDuration(f, kMinBandwidthDuration, kMaxBandwidthDuration, out.bandwidth_duration); }},
      {"bandwidth_message_size", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxProbeMessage, out.bandwidth_message_size); }},
      {"bandwidth_queue_depth", [&](const ConfigNode& f) { return w.ReadU32(f, 1, kMaxQueueDepth, out.bandwidth_queue_depth); }},
      {"max_latency_p99_us", [&](const ConfigNode& f) { return w.ReadPositive(f, kMaxLatencyPolicyUs, "microseconds", out.max_latency_p99_us); }},
      {"min_bandwidth_gbps", [&](const ConfigNode& f) { return w.ReadRateGbps(f, out.min_bandwidth_gbps); }},
      {"cpus", [&](const ConfigNode& f) { return ReadCpus(w, f, out.cpus); }},
      {"responder", [&](const ConfigNode& f) { return ParseResponder(w, f, out.responder); }},
      {"discovery", [&](const ConfigNode& f) { return ParsePeerDiscovery(w, f, out.discovery); }},
      {"selection", [&](const ConfigNode& f) { return ParsePeerSelection(w, f, out.selection); }},
  });
  if (!st.ok()) return st;
  // One stream at a time per node, each bandwidth_duration long: a duration that is not well
  // inside the interval would keep the link saturated.
  if (out.bandwidth_duration * 2 > out.bandwidth_interval) {
    return w.FailAt(v, "bandwidth_duration (" + std::to_string(out.bandwidth_duration.count()) +
                         "ms) must be at most half of bandwidth_interval (" +
                         std::to_string(out.bandwidth_interval.count()) + "ms)");
  }
  return Status::Ok();
}

RDMAHD_REGISTER_CONFIG_SECTION(PeersPolicy, "peers", 60,
    {{"peers.targets", "`[]`"}, {"peers.file", "unset"}, {"peers.port", "`18600`"},
     {"peers.source_address", "unset (rdma_cm picks by route)"}, {"peers.tos", "unset (kernel default)"},
     {"peers.interval", "`10s`"}, {"peers.step_timeout", "`1s`"}, {"peers.latency_message_size", "`2`"},
     {"peers.latency_iterations", "`1000`"}, {"peers.bandwidth", "`false`"}, {"peers.bandwidth_interval", "`10m`"},
     {"peers.bandwidth_duration", "`1s`"}, {"peers.bandwidth_message_size", "`65536`"},
     {"peers.bandwidth_queue_depth", "`128`"}, {"peers.max_latency_p99_us", "unset"},
     {"peers.min_bandwidth_gbps", "unset"}, {"peers.cpus", "unset (any CPU)"}, {"peers.responder.enabled", "`false`"},
     {"peers.responder.listen_address", "unset (every address)"}, {"peers.responder.port", "`18600`"},
     {"peers.responder.allow", "`[]` (nobody)"}, {"peers.responder.max_sessions", "`8`"},
     {"peers.responder.max_message_size", "`1048576`"}, {"peers.responder.max_registered_bytes", "`67108864`"},
     {"peers.responder.cpus", "unset (any CPU)"},
     {"peers.discovery.dns", "`[]`"}, {"peers.discovery.dns_server", "unset (`/etc/resolv.conf`)"},
     {"peers.discovery.dns_interval", "`1m`"}, {"peers.selection.max_peers", "`32`"},
     {"peers.selection.same_tor_cap", "`8`"}, {"peers.selection.tor_label", "`tor`"},
     {"peers.selection.rotation", "`1h`"},
     {"peers.selection.self", "unset (a target that is one of this host's addresses, else its host name)"}},
    ParsePeers);

}  // namespace

RDMAHD_REGISTER_PROBE("peers", PeerProbe,
                      "RDMA latency (and optionally bandwidth) to the peers in peers.targets and peers.file");

}  // namespace rdmahd
