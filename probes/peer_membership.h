// PeerMembership: which peers the "peers" probe probes. The targets come from peers.targets (all
// of them, as listed), peers.file (re-read when it changes, its re-reads spaced by what they cost)
// and peers.discovery.dns (looked up on a thread of its own); of the file's and discovery's
// targets, this node probes all, or peers.selection's choice when there are more than max_peers,
// never itself. Called on the probe's thread only.
//
// ReconcilePeers turns the wanted targets into the probe's peer set, keyed by configured name: a
// peer present before and after keeps its schedule, counters and histogram; a removed peer's
// series go away with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "probes/dns_resolver.h"
#include "probes/peer_schedule.h"
#include "probes/peer_state.h"
#include "probes/peer_targets.h"

namespace rdmahd {

// Every address of a discovery name (probes/dns_resolver.h's ResolveAddresses by default).
using DnsDiscoverer = std::function<Result<std::vector<std::string>>(const std::string& name, const DnsOptions& options)>;

class PeerMembership {
 public:
  using Clock = std::chrono::steady_clock;

  // The targets file is checked for changes at most this often, and after a check, not before
  // kFileCostSpacing times what it cost this thread's CPU (the stat, the read and parse, and the
  // new peer set when the list changed): however large the file and however often it is
  // rewritten, its re-reads cost at most a tenth of a core, and the changes made while it waits
  // are taken in one read, of the latest version.
  static constexpr std::chrono::seconds kFileCheckPeriod{1};
  static constexpr int kFileCostSpacing = 10;

  struct Options {
    DnsDiscoverer discover;                                     // empty: ResolveAddresses
    std::function<std::vector<std::string>()> local_addresses;  // empty: getifaddrs
    std::function<std::chrono::nanoseconds()> thread_cpu_time;  // empty: CLOCK_THREAD_CPUTIME_ID
  };

  explicit PeerMembership(Options options);
  ~PeerMembership();
  PeerMembership(const PeerMembership&) = delete;
  PeerMembership& operator=(const PeerMembership&) = delete;

  // Takes `p` at `now`: a new file path or list of targets; the targets file checked when due; a
  // finished discovery pass taken and a new one started when due; a new selection at a new
  // rotation epoch or policy. A file check that starts here ends at EndFileCheck, so that its cost
  // includes the new peer set.
  void Update(const PeersPolicy& p, Clock::time_point now);
  // True when the wanted targets may have changed since the last Wanted().
  bool targets_changed() const { return targets_changed_; }
  // The targets to probe now: peers.targets as listed, then the selection among the file's and
  // discovery's targets.
  std::vector<PeerTarget> Wanted(const PeersPolicy& p);
  // Ends the file check Update started, if any: the next one waits for its cost.
  void EndFileCheck();

  // True once after Update saw the file path or an error the facts carry change.
  bool TakeErrorsChanged() { return std::exchange(errors_changed_, false); }
  // The targets file's error and discovery's, for the facts ("" when that source is not used).
  std::string file_error(const PeersPolicy& p) const { return p.file.empty() ? "" : file_.error(); }
  std::string discovery_error(const PeersPolicy& p) const { return p.discovery.dns.empty() ? "" : discovery_error_; }
  // Times the targets file was read and parsed (not merely checked).
  std::size_t targets_file_reads() const { return file_.reads(); }

 private:
  struct DiscoveryPass;
  std::chrono::nanoseconds ThreadCpuTime() const;

  // peers.discovery.dns, re-resolved every dns_interval: each address a target labelled
  // service=<name>. A name that fails keeps its last good addresses. The lookups run on a thread
  // of their own (`dns-discovery`), one pass over the names at a time, so that a slow or silent
  // DNS server never holds up probes: a round only starts a pass and takes a finished one's
  // answers. A pass started before the names or the server changed is discarded when it ends,
  // and a new one starts then. Destroying the membership leaves a pass in flight to end on its
  // own (each lookup is bounded by its timeout).
  void Discover(const PeersPolicy& p, Clock::time_point now);
  void TakeDiscovery(std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers);
  // Of the file's and discovery's targets, the ones this node probes: all of them, or
  // peers.selection's choice when there are more than max_peers; never this node itself.
  std::vector<PeerTarget> Select(std::vector<PeerTarget> targets, const PeerSelectionPolicy& policy);

  Options options_;
  std::vector<std::string> static_targets_;  // as last taken
  TargetsFile file_;
  std::string file_path_;
  Clock::time_point file_checked_{};
  Clock::time_point file_next_check_{};
  std::optional<std::chrono::nanoseconds> file_cpu_start_;  // a check in progress
  std::vector<std::string> dns_names_;                       // as last resolved
  std::string dns_server_;
  std::map<std::string, std::vector<std::string>> discovered_;  // name -> its addresses
  Clock::time_point dns_at_{};            // when the last pass started
  std::shared_ptr<DiscoveryPass> pass_;   // in flight, or ended and not yet taken
  bool pass_stale_ = false;               // the names or the server changed since pass_ started
  std::string discovery_error_;
  PeerSelectionPolicy selection_;
  std::int64_t selection_epoch_ = -1;
  bool targets_changed_ = true;
  bool errors_changed_ = true;
};

// The peer set for `wanted`: a peer in `current` keeps its state and takes its new labels; a new
// one is first due at a random point of each interval (`schedule`) and its counters start at 0
// (bandwidth's only while `p.bandwidth`); the others are dropped.
PeerSet ReconcilePeers(PeerSet current, std::vector<PeerTarget> wanted, const PeersPolicy& p, PeerSchedule& schedule,
                       std::chrono::steady_clock::time_point now);

}  // namespace rdmahd
