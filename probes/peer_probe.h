// PeerProbe: the "peers" probe kind. On its one thread (core/probe_scheduler.h) each round
//   1. takes the config: the peer set (probes/peer_membership.h: peers.targets, peers.file and
//      peers.discovery.dns, reconciled on every config and file change and every new DNS answer)
//      and the intervals (a new interval never leaves a due time further out than it allows);
//   2. runs the probes that are due, earliest first, one at a time (probes/peer_schedule.h): each
//      peer's latency probe every peers.interval and, when peers.bandwidth is on, its bandwidth
//      stream every peers.bandwidth_interval, through a PeerProber (probes/peer_prober.h), each
//      outcome recorded in the peer's state (probes/peer_measurement.h), for at most kRoundBudget;
//   3. publishes PeerFacts (facts/peer_facts.h) when something changed
//      (probes/peer_publication.h), rendered as the rdma_peer_* metrics (probes/peer_metrics.h).
// The scheduler wakes the probe every tick (PeerSchedule::Tick) whenever there are targets, a file
// or discovery names, so a new config is picked up within about a second even when peers time out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/thread_affinity.h"
#include "core/probe.h"
#include "facts/peer_facts.h"
#include "probes/dns_resolver.h"
#include "probes/latency_histogram.h"
#include "probes/peer_membership.h"
#include "probes/peer_prober.h"
#include "probes/peer_schedule.h"
#include "probes/peer_state.h"
#include "probes/peer_targets.h"

namespace rdmahd {

using PeerProberFactory = std::function<std::unique_ptr<PeerProber>()>;
using AddressResolverFactory = std::function<std::unique_ptr<AddressResolver>()>;

class PeerProbe : public Probe {
 public:
  // Longest a round keeps running due probes before it returns to the scheduler.
  static constexpr std::chrono::milliseconds kRoundBudget{1000};

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
  std::size_t targets_file_reads() const { return membership_.targets_file_reads(); }
  std::optional<std::chrono::steady_clock::time_point> next_latency_due(const std::string& peer) const;

 private:
  using Clock = std::chrono::steady_clock;

  // Step 1 of a round.
  void Reconcile(const Config& config, Clock::time_point now);
  // A new interval, or bandwidth streams turned on or off or given a new interval.
  void ApplyIntervals(const PeersPolicy& p, Clock::time_point now);
  // Step 3.
  void Publish(const Config& config, ProbeBoard& board);

  Options options_;
  std::unique_ptr<PeerProber> prober_;
  std::unique_ptr<AddressResolver> resolver_;
  std::optional<ThreadPinning> pinning_;  // peers.cpus, applied when it changes
  std::string pin_warning_;              // why peers.cpus is not applied; "" when it is
  PeerSchedule schedule_;
  PeerMembership membership_;
  PeerSet peers_;
  std::chrono::milliseconds interval_{0}, bandwidth_interval_{0};
  bool bandwidth_ = false;
  bool set_changed_ = true;  // peers added or removed, or something else the facts say: publish
};

}  // namespace rdmahd
