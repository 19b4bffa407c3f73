// PeerProbe: the "peers" probe kind. On its one thread (core/probe_scheduler.h) it keeps the set of
// configured peers (peers.targets, peers.file and peers.discovery.dns, reconciled on every config
// and file change and every new DNS answer),
// runs each peer's latency probe every peers.interval and, when peers.bandwidth is on, each
// peer's bandwidth stream every peers.bandwidth_interval, through a PeerProber
// (probes/peer_prober.h); turns the samples into perftest's statistics (probes/latency_stats.h)
// and publishes PeerFacts (facts/peer_facts.h), rendered as the rdma_peer_* metrics.
//
// Scheduling: every peer has its own due times, spread with random jitter (the first round
// anywhere in the first interval, then interval +-10%), so that peers added together, and nodes
// started together, do not probe in step. Probes run one at a time, earliest due first: at most
// one bandwidth stream per node, never overlapping a latency probe it would disturb. The
// scheduler wakes the probe every tick (interval / 10, 10 ms .. 500 ms; whenever there are targets,
// a file or discovery names) and a round runs what is due, at most for kRoundBudget, so a new
// config is picked up within about a second even when peers time out.
//
// Reconciliation keys peers by their configured name: a peer present before and after keeps its
// schedule, counters and histogram; a removed peer's series go away with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/probe.h"
#include "facts/peer_facts.h"
#include "probes/dns_resolver.h"
#include "probes/peer_prober.h"
#include "probes/peer_targets.h"

namespace prometheus {
class Histogram;
}

namespace rdmahd {

using PeerProberFactory = std::function<std::unique_ptr<PeerProber>()>;
// Every address of a discovery name (probes/dns_resolver.h's ResolveAddresses by default).
using DnsDiscoverer = std::function<Result<std::vector<std::string>>(const std::string& name, const DnsOptions& options)>;
using AddressResolverFactory = std::function<std::unique_ptr<AddressResolver>()>;

// The latency histogram's bucket bounds, in seconds: 1 us .. 100 ms in 1-2-5 steps.
const std::vector<double>& PeerLatencyBuckets();
// Adds one round's samples (microseconds, sorted ascending) to a histogram with PeerLatencyBuckets,
// counting exactly as prometheus::Histogram::Observe would sample by sample, in one update.
void ObserveSortedSamples(const std::vector<double>& sorted_us, prometheus::Histogram& histogram);

class PeerProbe : public Probe {
 public:
  // Longest a round keeps running due probes before it returns to the scheduler.
  static constexpr std::chrono::milliseconds kRoundBudget{1000};
  // A DNS name is looked up again after this long (and after a failed probe).
  static constexpr std::chrono::seconds kResolveTtl{60};
  // The targets file is checked for changes at most this often, and after a check, not before
  // kFileCostSpacing times what it cost this thread's CPU (the stat, the read and parse, and the
  // new peer set when the list changed): however large the file and however often it is
  // rewritten, its re-reads cost at most a tenth of a core, and the changes made while it waits
  // are taken in one read, of the latest version.
  static constexpr std::chrono::seconds kFileCheckPeriod{1};
  static constexpr int kFileCostSpacing = 10;

  struct Options {
    PeerProberFactory prober;         // empty: MakeRdmaCmProber (librdmacm)
    AddressResolverFactory resolver;  // empty: MakeSystemResolver
    std::uint64_t seed = 0;           // jitter; 0: from std::random_device
    DnsDiscoverer discover;           // empty: ResolveAddresses
    std::function<std::vector<std::string>()> local_addresses;  // empty: getifaddrs
    std::function<std::chrono::nanoseconds()> thread_cpu_time;  // empty: CLOCK_THREAD_CPUTIME_ID
  };

  PeerProbe();
  explicit PeerProbe(Options options);
  ~PeerProbe() override;

  std::chrono::milliseconds Interval(const Config& config) const override;
  void RunRound(const ProbeContext& ctx, ProbeBoard& board) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;
  // Targets, a targets file or discovery names.
  bool HasWork(const Config& config) const override;

  // Peers in the current set, and when a peer's next latency probe is due (tests and the bench;
  // call between rounds, on the thread that runs them).
  std::size_t peer_count() const { return peers_.size(); }
  // Times the targets file was read and parsed (not merely checked).
  std::size_t targets_file_reads() const { return file_.reads(); }
  std::optional<std::chrono::steady_clock::time_point> next_latency_due(const std::string& peer) const;

 private:
  struct Peer;
  using Clock = std::chrono::steady_clock;

  void Reconcile(const Config& config, Clock::time_point now);
  // The peer set from the targets, the file's and discovery's targets and selection.
  void RebuildPeers(const PeersPolicy& p, Clock::time_point now);
  std::chrono::nanoseconds ThreadCpuTime() const;
  void RunLatency(Peer& peer, const Config& config, const std::atomic<bool>& stop, Clock::time_point now);
  void RunBandwidth(Peer& peer, const Config& config, const std::atomic<bool>& stop);
  // The address to probe, looking a name up when needed; a ProbeFailure when it does not resolve.
  bool Resolve(Peer& peer, const Config& config, const char* kind, Clock::time_point now);
  void Count(Peer& peer, const char* kind, const ProbeFailure* failure);
  Clock::time_point NextDue(Clock::time_point due, std::chrono::milliseconds interval, Clock::time_point now);
  void Publish(const Config& config, ProbeBoard& board);

  // peers.discovery.dns, re-resolved every dns_interval: each address a target labelled
  // service=<name>. A name that fails keeps its last good addresses. The lookups run on a thread
  // of their own (`dns-discovery`), one pass over the names at a time, so that a slow or silent
  // DNS server never holds up probes: a round only starts a pass and takes a finished one's
  // answers. A pass started before the names or the server changed is discarded when it ends,
  // and a new one starts then. Destroying the probe leaves a pass in flight to end on its own
  // (each lookup is bounded by its timeout).
  void Discover(const PeersPolicy& p, Clock::time_point now);
  struct DiscoveryPass;
  void TakeDiscovery(std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers);
  // Of the file's and discovery's targets, the ones this node probes: all of them, or
  // peers.selection's choice when there are more than max_peers; never this node itself.
  // (peers.targets are always probed as listed.)
  std::vector<PeerTarget> Select(std::vector<PeerTarget> targets, const PeerSelectionPolicy& policy);

  Options options_;
  std::unique_ptr<PeerProber> prober_;
  std::unique_ptr<AddressResolver> resolver_;
  std::mt19937_64 random_;
  std::map<std::string, std::unique_ptr<Peer>> peers_;  // by name
  std::vector<std::string> static_targets_;           // as last reconciled
  std::chrono::milliseconds interval_{0}, bandwidth_interval_{0};
  bool bandwidth_ = false;
  TargetsFile file_;
  std::string file_path_;
  Clock::time_point file_checked_{};
  Clock::time_point file_next_check_{};
  std::vector<std::string> dns_names_;                          // as last resolved
  std::string dns_server_;
  std::map<std::string, std::vector<std::string>> discovered_;  // name -> its addresses
  Clock::time_point dns_at_{};  // when the last pass started
  std::shared_ptr<DiscoveryPass> pass_;  // in flight, or ended and not yet taken
  bool pass_stale_ = false;              // the names or the server changed since pass_ started
  std::string discovery_error_;
  PeerSelectionPolicy selection_;
  std::int64_t selection_epoch_ = -1;
  bool targets_changed_ = true;
  bool set_changed_ = true;  // peers added or removed, or the file's error changed: publish
};

}  // namespace rdmahd
