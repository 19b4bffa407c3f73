// ProbeScheduler: runs each probe on a thread of its own, one round per the probe's interval,
// while the current config enables it, and publishes through one ProbeBoard. A round that throws
// costs that round. Owned by the CollectionEngine, which copies the board into every collection.
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

  const ProbeBoard& board() const { return *board_; }
  // Registered names and instances, for rendering (Probe::Render reads only the snapshot).
  const std::vector<std::pair<std::string, std::shared_ptr<const Probe>>>& probes() const { return views_; }
  // Probes inside a round now, comma-separated.
  std::string busy() const;
  // Rounds run and rounds that threw, per probe (tests and logs).
  struct Counts {
    std::uint64_t rounds = 0;
    std::uint64_t failed = 0;
  };
  Counts counts(const std::string& probe) const;

 private:
  struct Slot;
  std::shared_ptr<ProbeBoard> board_;
  std::vector<std::shared_ptr<Slot>> slots_;
  std::vector<std::pair<std::string, std::shared_ptr<const Probe>>> views_;
};

}  // namespace rdmahd
