// ProbeScheduler: runs each probe on a thread of its own, one round per the probe's interval,
// while the current config enables it. A round that throws costs that round: it is counted, timed
// and its message kept, like any round (ProbeRoundOutcome), and the probe runs again at its next
// interval. Each probe publishes on a board of its own; the CollectionEngine (the owner) copies the
// boards of the probes the collection's config enables into every collection, with their round
// outcomes, so a probe turned off stops showing its last results at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/node_fs.h"
#include "config/config.h"
#include "core/probe.h"

namespace rdmahd {

class ProbeScheduler {
 public:
  ProbeScheduler(NodeFs fs, std::vector<Instance<Probe>> probes);
  // Stops every probe; a probe inside a round is detached (it ends after the round) instead of
  // waited for.
  ~ProbeScheduler();
  ProbeScheduler(const ProbeScheduler&) = delete;
  ProbeScheduler& operator=(const ProbeScheduler&) = delete;

  // Starts the threads on the first call; later calls swap the config (read at each round).
  void Configure(std::shared_ptr<const Config> config);
  // Probes finish their current round and run no more.
  void Stop();

  // Adds the latest results of every probe `config` enables to `snapshot`, and a ProbeRoundFacts
  // with the round outcomes of those of them that have work under `config` and have ended a
  // round. Thread-safe.
  void CopyInto(Snapshot& snapshot, const Config& config) const;
  // Registered names and instances, for rendering (Probe::Render reads only the snapshot).
  const std::vector<std::pair<std::string, std::shared_ptr<const Probe>>>& probes() const { return views_; }
  // Probes inside a round now, comma-separated.
  std::string busy() const;
  // How `probe`'s rounds went so far (empty for a name not scheduled here).
  using Counts = ProbeRoundOutcome;
  Counts counts(const std::string& probe) const;

 private:
  struct Slot;
  std::vector<std::shared_ptr<Slot>> slots_;
  std::vector<std::pair<std::string, std::shared_ptr<const Probe>>> views_;
};

}  // namespace rdmahd
