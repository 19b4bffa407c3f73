#include "probes/peer_probe.h"

#include <algorithm>
#include <utility>

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
  const PeersPolicy& p = config.peers;
  return !p.targets.empty() || !p.file.empty() || !p.discovery.dns.empty();
}

std::chrono::milliseconds PeerProbe::Interval(const Config& config) const {
  // Nothing to probe and nothing to discover: a new config ends the scheduler's wait anyway.
  if (!HasWork(config)) return std::chrono::seconds(60);
  return PeerSchedule::Tick(config.peers);
}

void PeerProbe::Reconcile(const Config& config, Clock::time_point now) {
  const PeersPolicy& p = config.peers;
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
  const Clock::time_point start = Clock::now();
  Reconcile(ctx.config, start);
  while (!ctx.stopping.load()) {
    const Clock::time_point now = Clock::now();
    if (now - start >= kRoundBudget) break;
    const std::optional<PeerSchedule::Due> next = PeerSchedule::Earliest(peers_, bandwidth_);
    if (!next || next->at > now) break;
    if (next->bandwidth) {
      next->peer->next_bandwidth = schedule_.NextDue(next->at, bandwidth_interval_, now);
      MeasureBandwidth(*next->peer, *prober_, *resolver_, ctx.config.peers, ctx.stopping);
    } else {
      next->peer->next_latency = schedule_.NextDue(next->at, interval_, now);
      MeasureLatency(*next->peer, *prober_, *resolver_, ctx.config.peers, ctx.stopping, now);
    }
  }
  Publish(ctx.config, board);
}

void PeerProbe::Publish(const Config& config, ProbeBoard& board) {
  if (!HasUnpublishedChanges(peers_, set_changed_)) return;
  PeerFacts facts;
  facts.targets_file = config.peers.file;
  facts.targets_file_error = membership_.file_error(config.peers);
  facts.discovery_error = membership_.discovery_error(config.peers);
  facts.bandwidth_enabled = bandwidth_;
  AddPeerStatuses(peers_, facts);
  set_changed_ = false;
  board.Publish(std::move(facts));
}

void PeerProbe::Render(const Snapshot& snapshot, MetricSink& sink) const {
  if (const auto* facts = snapshot.Get<PeerFacts>()) RenderPeerFacts(*facts, sink);
}

RDMAHD_REGISTER_PROBE("peers", PeerProbe,
                      "RDMA latency (and optionally bandwidth) to the peers in peers.targets and peers.file");

}  // namespace rdmahd
