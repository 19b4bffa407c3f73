#include "probes/peer_probe.h"

#include "probes/rdma_cm_prober.h"

#include <prometheus/histogram.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include <ifaddrs.h>
#include <netdb.h>
#include <time.h>
#include <unistd.h>

#include "common/net_address.h"
#include "common/thread_name.h"
#include "probes/latency_stats.h"
#include "probes/peer_selection.h"

namespace rdmahd {

namespace {


constexpr const char* kLatency = "latency";
constexpr const char* kBandwidth = "bandwidth";

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

// The `le` label as Prometheus' Go clients print bounds (%g: "1e-06", "0.0001", "+Inf"), so that the
// series match those of other exporters' histograms with the same bounds.
void LeLabel(double bound, char (&out)[32]) {
  if (std::isinf(bound)) {
    std::snprintf(out, sizeof out, "+Inf");
  } else {
    std::snprintf(out, sizeof out, "%g", bound);
  }
}

}  // namespace

const std::vector<double>& PeerLatencyBuckets() {
  static const std::vector<double> kBuckets = {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4,
                                               5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1};
  return kBuckets;
}

// Adds a round's samples (microseconds, sorted ascending) to `histogram` as Observe() would one by
// one (a sample goes to the first bucket whose bound is >= its value in seconds), with one
// ObserveMultiple: Observe takes a mutex and two atomic updates per sample, a cost that adds up
// over every sample of every round (docs/performance.md, "Peer probes: what the probe costs
// around its rounds"). The samples are sorted already, so each bucket's count is one binary
// search.
void ObserveSortedSamples(const std::vector<double>& sorted_us, prometheus::Histogram& histogram) {
  const std::vector<double>& bounds = PeerLatencyBuckets();
  std::vector<double> increments(bounds.size() + 1, 0);
  double sum = 0;
  for (double us : sorted_us) sum += us * 1e-6;
  auto below = sorted_us.begin();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    auto end = std::upper_bound(below, sorted_us.end(), bounds[i], [](double bound, double us) { return bound < us * 1e-6; });
    increments[i] = static_cast<double>(end - below);
    below = end;
  }
  increments.back() = static_cast<double>(sorted_us.end() - below);
  histogram.ObserveMultiple(increments, sum);
}


struct PeerProbe::Peer {
  PeerTarget target;
  std::string address;  // resolved; empty until then (and after a failed probe of a DNS name)
  Clock::time_point resolved_at{};
  Clock::time_point next_latency{};
  Clock::time_point next_bandwidth{};
  // prometheus-cpp's Histogram does the bucket accumulation; Collect() gives cumulative counts.
  prometheus::Histogram histogram{PeerLatencyBuckets()};
  PeerStatus status;  // everything but the histogram, which is filled in at publish
  std::shared_ptr<const PeerStatus> published;
  bool dirty = true;
};

PeerProbe::PeerProbe() : PeerProbe(Options{}) {}

PeerProbe::PeerProbe(Options options)
    : options_(std::move(options)), random_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

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
  const PeersPolicy& p = config.peers;
  // Nothing to probe and nothing to discover: a new config ends the scheduler's wait anyway.
  if (!HasWork(config)) return std::chrono::seconds(60);
  std::chrono::milliseconds shortest = p.interval;
  if (p.bandwidth) shortest = std::min(shortest, p.bandwidth_interval);
  // A tenth of the interval: a probe starts at most that late (its rate holds: the next due time
  // counts from the due time), and the thread wakes at most 100 times a second when idle.
  return std::clamp(shortest / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(500));
}

PeerProbe::Clock::time_point PeerProbe::NextDue(Clock::time_point due, std::chrono::milliseconds interval,
                                                Clock::time_point now) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  const auto step = std::chrono::duration_cast<Clock::duration>(interval * jitter(random_));
  // Late by less than an interval (a busy round, the tick): keep the rate. Later than that (the
  // node was suspended, peers timed out in a row): start a new phase from now instead of bursting.
  return due + step > now ? due + step : now + step;
}

// One pass of discovery lookups, shared by the probe thread and the thread that looks up, so that
// either may be gone first.
struct PeerProbe::DiscoveryPass {
  std::mutex mu;
  bool done = false;                                                               // guarded by mu
  std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers;  // guarded by mu
};

void PeerProbe::Discover(const PeersPolicy& p, Clock::time_point now) {
  if (p.discovery.dns != dns_names_ || p.discovery.dns_server != dns_server_) {
    dns_names_ = p.discovery.dns;
    dns_server_ = p.discovery.dns_server;
    std::erase_if(discovered_, [&](const auto& kv) {
      return std::find(dns_names_.begin(), dns_names_.end(), kv.first) == dns_names_.end();
    });
    dns_at_ = {};
    targets_changed_ = true;
    if (pass_) pass_stale_ = true;
    if (!discovery_error_.empty()) {  // said of the old names or server; the next pass says anew
      discovery_error_.clear();
      set_changed_ = true;
    }
  }
  if (pass_) {
    std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers;
    {
      std::lock_guard lock(pass_->mu);
      if (!pass_->done) return;  // still looking up: probes go on with the last answers
      answers = std::move(pass_->answers);
    }
    pass_.reset();
    if (!pass_stale_) TakeDiscovery(std::move(answers));
    pass_stale_ = false;
  }
  if (dns_names_.empty() || (dns_at_ != Clock::time_point{} && now - dns_at_ < p.discovery.dns_interval)) return;
  dns_at_ = now;
  DnsOptions options;
  options.server = dns_server_;
  options.timeout = std::chrono::seconds(1);
  options.attempts = 2;
  DnsDiscoverer discover = options_.discover;
  if (!discover) {
    discover = [](const std::string& name, const DnsOptions& o) { return ResolveAddresses(name, o); };
  }
  auto pass = std::make_shared<DiscoveryPass>();
  try {
    std::thread([pass, names = dns_names_, options, discover = std::move(discover)] {
      NameThisThread("dns-discovery");
      std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers;
      for (const std::string& name : names) answers.emplace_back(name, discover(name, options));
      std::lock_guard lock(pass->mu);
      pass->answers = std::move(answers);
      pass->done = true;
    }).detach();
  } catch (const std::system_error& e) {
    const std::string error = std::string("dns: cannot start a discovery thread: ") + e.what();
    if (error != discovery_error_) {
      discovery_error_ = error;
      set_changed_ = true;
    }
    return;
  }
  pass_ = std::move(pass);
}

void PeerProbe::TakeDiscovery(std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers) {
  std::string errors;
  for (auto& [name, found] : answers) {
    if (!found.ok()) {
      errors += (errors.empty() ? "" : "; ") + found.error().message;  // keeps the last good answer
      continue;
    }
    if (discovered_[name] != *found) {
      discovered_[name] = std::move(*found);
      targets_changed_ = true;
    }
  }
  if (errors != discovery_error_) {
    discovery_error_ = errors;
    set_changed_ = true;
  }
}

namespace {

// This host's IP addresses (to find itself among discovered peers).
std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    char text[NI_MAXHOST];
    const socklen_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(i->ifa_addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      std::string a = text;
      if (auto pct = a.find('%'); pct != std::string::npos) a.resize(pct);  // fe80::1%eth0
      out.push_back(std::move(a));
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

std::vector<PeerTarget> PeerProbe::Select(std::vector<PeerTarget> targets, const PeerSelectionPolicy& policy) {
  // Who this node is among the targets: as configured, else a target that is one of its addresses,
  // else its host name.
  std::string self = policy.self;
  if (self.empty()) {
    const std::vector<std::string> mine = options_.local_addresses ? options_.local_addresses() : LocalAddresses();
    for (const PeerTarget& t : targets) {
      if (std::find(mine.begin(), mine.end(), t.name) != mine.end()) self = t.name;
    }
  }
  if (self.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) self = host;
  }
  std::vector<PeerCandidate> candidates;
  candidates.reserve(targets.size());
  for (const PeerTarget& t : targets) {
    std::string tor;
    for (const auto& [k, v] : t.labels) {
      if (k == policy.tor_label) tor = v;
    }
    candidates.push_back({t.name, std::move(tor)});
  }
  SelectionPolicy sp;
  sp.max_peers = policy.max_peers;
  sp.same_tor_cap = policy.same_tor_cap;
  sp.epoch = static_cast<std::uint64_t>(selection_epoch_);
  std::set<std::string> chosen;
  for (const SelectedPeer& s : PeerSelector(std::move(candidates)).Select(self, sp)) chosen.insert(s.name);
  std::erase_if(targets, [&](const PeerTarget& t) { return !chosen.contains(t.name); });
  return targets;
}

void PeerProbe::Reconcile(const Config& config, Clock::time_point now) {
  const PeersPolicy& p = config.peers;
  std::uniform_real_distribution<double> phase(0.0, 1.0);
  auto spread = [&](std::chrono::milliseconds d) {
    return now + std::chrono::duration_cast<Clock::duration>(d * phase(random_));
  };

  if (p.file != file_path_) {
    file_path_ = p.file;
    file_ = TargetsFile();
    file_checked_ = {};
    targets_changed_ = true;
    set_changed_ = true;
  }
  // What a check of the file costs this thread, from the stat to the new peer set it may bring.
  std::optional<std::chrono::nanoseconds> file_cpu_start;
  if (!p.file.empty() && (file_checked_ == Clock::time_point{} || now >= file_next_check_)) {
    file_cpu_start = ThreadCpuTime();
    const std::string old_error = file_.error();
    if (file_.Refresh(p.file)) targets_changed_ = true;
    file_checked_ = now;
    if (file_.error() != old_error) set_changed_ = true;
  }
  if (p.targets != static_targets_) {
    static_targets_ = p.targets;
    targets_changed_ = true;
  }

  // Policy changes keep every peer's phase but never leave a due time further out than the new
  // interval allows.
  if (p.interval != interval_) {
    for (auto& [name, peer] : peers_) peer->next_latency = std::min(peer->next_latency, spread(p.interval));
    interval_ = p.interval;
  }
  if (p.bandwidth != bandwidth_ || p.bandwidth_interval != bandwidth_interval_) {
    for (auto& [name, peer] : peers_) {
      if (p.bandwidth && !bandwidth_) {
        peer->next_bandwidth = spread(p.bandwidth_interval);
        AddCount(peer->status.counts, kBandwidth, "success", "", 0);
        peer->dirty = true;
      } else if (!p.bandwidth) {
        // Streams turned off: the last stream's figure is no longer current (the counters stay).
        peer->status.bandwidth_bytes_per_second.reset();
        peer->status.bandwidth_failure.reset();
        peer->status.last_bandwidth = PeerProbeResult::kNone;
        peer->dirty = true;
      } else {
        peer->next_bandwidth = std::min(peer->next_bandwidth, spread(p.bandwidth_interval));
      }
    }
    if (p.bandwidth != bandwidth_) set_changed_ = true;
    bandwidth_ = p.bandwidth;
    bandwidth_interval_ = p.bandwidth_interval;
  }

  Discover(p, now);
  // Selection: a new policy, or the next rotation epoch of this node's own picks.
  const auto rotation = std::max<std::int64_t>(1, p.selection.rotation.count());
  const std::int64_t epoch =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count() /
      rotation;
  if (epoch != selection_epoch_ || p.selection.max_peers != selection_.max_peers ||
      p.selection.same_tor_cap != selection_.same_tor_cap || p.selection.tor_label != selection_.tor_label ||
      p.selection.self != selection_.self) {
    selection_ = p.selection;
    selection_epoch_ = epoch;
    targets_changed_ = true;
  }

  if (targets_changed_) {
    targets_changed_ = false;
    RebuildPeers(p, now);
  }
  if (file_cpu_start) {
    // Changes while the file waits are coalesced into the next read, of the latest version.
    const auto cost = std::chrono::duration_cast<Clock::duration>(ThreadCpuTime() - *file_cpu_start);
    file_next_check_ = file_checked_ + std::max<Clock::duration>(kFileCheckPeriod, cost * kFileCostSpacing);
  }
}

std::chrono::nanoseconds PeerProbe::ThreadCpuTime() const {
  if (options_.thread_cpu_time) return options_.thread_cpu_time();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

void PeerProbe::RebuildPeers(const PeersPolicy& p, Clock::time_point now) {
  std::uniform_real_distribution<double> phase(0.0, 1.0);
  auto spread = [&](std::chrono::milliseconds d) {
    return now + std::chrono::duration_cast<Clock::duration>(d * phase(random_));
  };
  std::vector<PeerTarget> listed = p.file.empty() ? std::vector<PeerTarget>{} : file_.targets();
  for (const auto& [name, addresses] : discovered_) {
    for (const std::string& a : addresses) listed.push_back({a, {{"service", name}}});
  }
  // peers.targets are probed as listed; selection picks from the file's and discovery's targets.
  std::erase_if(listed, [&](const PeerTarget& t) {
    return std::find(static_targets_.begin(), static_targets_.end(), t.name) != static_targets_.end();
  });
  std::vector<PeerTarget> desired = MergeTargets(static_targets_, Select(std::move(listed), p.selection));
  std::map<std::string, std::unique_ptr<Peer>> next;
  for (PeerTarget& t : desired) {
    auto it = peers_.find(t.name);
    if (it != peers_.end()) {
      std::unique_ptr<Peer> peer = std::move(it->second);
      if (peer->target.labels != t.labels) {
        peer->target.labels = t.labels;
        peer->status.labels = t.labels;
        peer->dirty = true;
      }
      next.emplace(t.name, std::move(peer));
      continue;
    }
    auto peer = std::make_unique<Peer>();
    peer->status.name = t.name;
    peer->status.labels = t.labels;
    peer->target = std::move(t);
    peer->next_latency = spread(p.interval);
    peer->next_bandwidth = spread(p.bandwidth_interval);
    AddCount(peer->status.counts, kLatency, "success", "", 0);
    if (p.bandwidth) AddCount(peer->status.counts, kBandwidth, "success", "", 0);
    next.emplace(peer->status.name, std::move(peer));
  }
  peers_ = std::move(next);
  set_changed_ = true;
}

namespace {

// The `reason` label must stay a small set whatever a prober returns: ProbeFailure's documented
// reasons, "wc_" + a lower-case ibv_wc_status name, else "other" (the message keeps the original).
std::string BoundedReason(const std::string& reason) {
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

}  // namespace

void PeerProbe::Count(Peer& peer, const char* kind, const ProbeFailure* failure) {
  const bool latency = std::string_view(kind) == kLatency;
  PeerStatus& s = peer.status;
  (latency ? s.last_latency : s.last_bandwidth) = failure ? PeerProbeResult::kFailure : PeerProbeResult::kSuccess;
  auto& last_failure = latency ? s.latency_failure : s.bandwidth_failure;
  if (failure != nullptr) {
    const std::string reason = BoundedReason(failure->reason);
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

bool PeerProbe::Resolve(Peer& peer, const Config& config, const char* kind, Clock::time_point now) {
  if (IsIpLiteral(peer.target.name)) {
    peer.address = peer.target.name;
  } else if (peer.address.empty() || now - peer.resolved_at >= kResolveTtl) {
    Result<std::string> resolved = resolver_->Resolve(peer.target.name, config.peers.step_timeout);
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

void PeerProbe::RunLatency(Peer& peer, const Config& config, const std::atomic<bool>& stop, Clock::time_point now) {
  if (!Resolve(peer, config, kLatency, now)) return;
  const PeersPolicy& p = config.peers;
  const PeerEndpoint endpoint{peer.target.name, peer.address, p.port};
  const ProbeSource source{p.source_address, p.tos, p.step_timeout};
  LatencyRequest request;
  request.message_size = p.latency_message_size;
  request.iterations = p.latency_iterations;
  request.timeout = LatencyTimeout(p.latency_iterations);
  ProbeOutcome<LatencySamples> outcome = prober_->Latency(endpoint, source, request, stop);
  if (const auto* failure = std::get_if<ProbeFailure>(&outcome)) {
    if (failure->reason == "stopped") return;  // the daemon is stopping: not the peer's doing
    if (!IsIpLiteral(peer.target.name)) peer.address.clear();  // look the name up again next time
    Count(peer, kLatency, failure);
    return;
  }
  LatencySamples& samples = std::get<LatencySamples>(outcome);
  std::vector<double>& us = samples.half_round_trip_us;
  const std::size_t n = us.size();
  std::optional<LatencyStats> stats = ComputeLatencyStatsInPlace(us);  // sorts `us`
  ObserveSortedSamples(us, peer.histogram);
  if (!stats) {
    const ProbeFailure failure{"local_resources", peer.target.name + ": the prober returned " + std::to_string(n) +
                                                      " samples; the statistics need at least 3"};
    Count(peer, kLatency, &failure);
    return;
  }
  peer.status.latency = PeerLatencyRound{stats->min_us,  stats->typical_us, stats->average_us, stats->p99_us,
                                         stats->p99_9_us, stats->max_us,     stats->samples,    samples.clock};
  Count(peer, kLatency, nullptr);
}

void PeerProbe::RunBandwidth(Peer& peer, const Config& config, const std::atomic<bool>& stop) {
  if (!Resolve(peer, config, kBandwidth, Clock::now())) return;
  const PeersPolicy& p = config.peers;
  const PeerEndpoint endpoint{peer.target.name, peer.address, p.port};
  const ProbeSource source{p.source_address, p.tos, p.step_timeout};
  BandwidthRequest request;
  request.message_size = p.bandwidth_message_size;
  request.duration = p.bandwidth_duration;
  request.queue_depth = p.bandwidth_queue_depth;
  ProbeOutcome<BandwidthResult> outcome = prober_->Bandwidth(endpoint, source, request, stop);
  if (const auto* failure = std::get_if<ProbeFailure>(&outcome)) {
    if (failure->reason == "stopped") return;
    if (!IsIpLiteral(peer.target.name)) peer.address.clear();
    Count(peer, kBandwidth, failure);
    return;
  }
  peer.status.bandwidth_bytes_per_second = std::get<BandwidthResult>(outcome).BytesPerSecond();
  Count(peer, kBandwidth, nullptr);
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
    // Earliest due first. A scan per probe: 1,000 peers cost microseconds, far below one probe.
    Peer* next = nullptr;
    bool bandwidth = false;
    Clock::time_point due = Clock::time_point::max();
    for (auto& [name, peer] : peers_) {
      if (peer->next_latency < due) {
        next = peer.get();
        due = peer->next_latency;
        bandwidth = false;
      }
      if (bandwidth_ && peer->next_bandwidth < due) {
        next = peer.get();
        due = peer->next_bandwidth;
        bandwidth = true;
      }
    }
    if (next == nullptr || due > now) break;
    if (bandwidth) {
      next->next_bandwidth = NextDue(due, bandwidth_interval_, now);
      RunBandwidth(*next, ctx.config, ctx.stopping);
    } else {
      next->next_latency = NextDue(due, interval_, now);
      RunLatency(*next, ctx.config, ctx.stopping, now);
    }
  }
  Publish(ctx.config, board);
}

void PeerProbe::Publish(const Config& config, ProbeBoard& board) {
  bool any = set_changed_;
  for (const auto& [name, peer] : peers_) any = any || peer->dirty;
  if (!any) return;
  PeerFacts facts;
  facts.targets_file = config.peers.file;
  facts.targets_file_error = config.peers.file.empty() ? "" : file_.error();
  facts.discovery_error = config.peers.discovery.dns.empty() ? "" : discovery_error_;
  facts.bandwidth_enabled = bandwidth_;
  facts.peers.reserve(peers_.size());
  for (auto& [name, peer] : peers_) {
    if (peer->dirty || !peer->published) {
      auto status = std::make_shared<PeerStatus>(peer->status);
      const prometheus::ClientMetric m = peer->histogram.Collect();
      status->histogram.buckets.reserve(m.histogram.bucket.size());
      for (const auto& b : m.histogram.bucket) status->histogram.buckets.emplace_back(b.upper_bound, b.cumulative_count);
      status->histogram.sum_seconds = m.histogram.sample_sum;
      status->histogram.count = m.histogram.sample_count;
      peer->published = std::move(status);
      peer->dirty = false;
    }
    facts.peers.push_back(peer->published);
  }
  set_changed_ = false;
  board.Publish(std::move(facts));
}

void PeerProbe::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<PeerFacts>();
  if (facts == nullptr || facts->peers.empty()) return;
  auto histogram = sink.Family("rdma_peer_latency_seconds",
                               "Half round trips of RC SEND/RECV ping-pongs to the peer (perftest ib_send_lat samples), "
                               "every sample of every round since the peer was added.",
                               MetricType::Histogram);
  auto quantiles = sink.Gauge("rdma_peer_latency_quantile_seconds",
                              "Last latency round to the peer, perftest statistics: quantile 0 = t_min, 0.5 = "
                              "t_typical, 0.99 and 0.999 = perftest's percentiles, 1 = t_max.");
  auto clock = sink.Gauge("rdma_peer_latency_clock_info",
                          "Always 1; clock says what timed the last latency round: steady (CPU clock around posts) "
                          "or completion (NIC completion timestamps).");
  auto bandwidth = sink.Gauge("rdma_peer_bandwidth_bytes_per_second",
                              "Last RDMA WRITE stream to the peer (perftest ib_write_bw style), bytes per second.");
  auto probes = sink.Counter("rdma_peer_probes_total",
                             "Probes of the peer since it was added, by kind (latency, bandwidth), result and reason.");
  std::vector<Label> labels;
  char le[32];
  for (const auto& shared : facts->peers) {
    const PeerStatus& p = *shared;
    labels.clear();
    labels.emplace_back("peer", p.name);
    for (const auto& [k, v] : p.labels) labels.emplace_back(k, v);
    const std::size_t base = labels.size();

    for (const auto& [bound, count] : p.histogram.buckets) {
      LeLabel(bound, le);
      labels.resize(base);
      labels.emplace_back("le", le);
      histogram.AddSuffixed("_bucket", labels, static_cast<double>(count));
    }
    labels.resize(base);
    histogram.AddSuffixed("_sum", labels, p.histogram.sum_seconds);
    histogram.AddSuffixed("_count", labels, static_cast<double>(p.histogram.count));

    if (p.latency) {
      const PeerLatencyRound& r = *p.latency;
      const std::pair<const char*, double> points[] = {
          {"0", r.min_us}, {"0.5", r.typical_us}, {"0.99", r.p99_us}, {"0.999", r.p99_9_us}, {"1", r.max_us}};
      for (const auto& [q, us] : points) {
        labels.resize(base);
        labels.emplace_back("quantile", q);
        quantiles.Add(labels, us * 1e-6);
      }
      labels.resize(base);
      labels.emplace_back("clock", r.clock);
      clock.Add(labels, 1);
    }
    if (p.bandwidth_bytes_per_second) {
      labels.resize(base);
      bandwidth.Add(labels, *p.bandwidth_bytes_per_second);
    }
    for (const PeerProbeCount& c : p.counts) {
      labels.resize(base);
      labels.emplace_back("kind", c.kind);
      labels.emplace_back("result", c.result);
      labels.emplace_back("reason", c.reason);
      probes.Add(labels, static_cast<double>(c.count));
    }
  }
}

RDMAHD_REGISTER_PROBE("peers", PeerProbe,
                      "RDMA latency (and optionally bandwidth) to the peers in peers.targets and peers.file");

}  // namespace rdmahd
