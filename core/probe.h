// Probe: a scheduled producer of facts that take time to measure (peer latency and bandwidth over
// RoCE, ...). Unlike a collector it does not run at scrape time: the ProbeScheduler runs each
// enabled probe on its own thread, on the probe's own interval, and the probe publishes its
// latest results on a ProbeBoard. Every collection copies the board into its Snapshot, so checks
// over probe results look like any other check, and a slow round never delays a scrape.
//
// Adding a probe kind = one .cc file ending in RDMAHD_REGISTER_PROBE, its facts in a data-only
// header under facts/, its _test.cc and one line in CMakeLists.txt (RDMAHD_PROBE_SOURCES).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "config/config.h"
#include "core/registry.h"
#include "core/snapshot.h"

namespace rdmahd {

// The latest results of one probe (each has a board of its own). Thread-safe; results are
// immutable once published.
class ProbeBoard {
 public:
  // Replaces the published facts of type Facts.
  template <class Facts>
  void Publish(Facts facts) {
    auto shared = std::make_shared<const Facts>(std::move(facts));
    std::lock_guard lock(mu_);
    latest_.PutShared(std::move(shared));
  }

  // Adds every published result to `snapshot` (shared, not copied).
  void CopyInto(Snapshot& snapshot) const {
    std::lock_guard lock(mu_);
    snapshot.Merge(latest_);
  }

 private:
  mutable std::mutex mu_;
  Snapshot latest_;  // facts only; no outcomes
};

struct ProbeContext {
  const NodeFs& fs;
  const Config& config;
  // Set when the daemon stops or the probe is disabled: a long round should return early.
  const std::atomic<bool>& stopping;
};

class Probe {
 public:
  virtual ~Probe() = default;
  // Time from the start of one round to the start of the next.
  virtual std::chrono::milliseconds Interval(const Config& config) const = 0;
  // One round; may take seconds. Publishes its results on `board`. Never runs concurrently with
  // itself. A round that throws is counted as failed; the probe runs again at the next interval.
  virtual void RunRound(const ProbeContext& ctx, ProbeBoard& board) = 0;
  // Renders the probe's published facts from a collection's snapshot. Called concurrently from
  // several scrapes, and while a round runs: must read only `snapshot`.
  virtual void Render(const Snapshot& snapshot, MetricSink& sink) const = 0;
};

// Every probe kind linked into the binary.
Registry<Probe>& ProbeRegistry();

#define RDMAHD_REGISTER_PROBE(name, Type, description)                                   \
  [[maybe_unused]] static const bool rdmahd_probe_registered_##Type =                    \
      ::rdmahd::internal::RegisterOrDie(::rdmahd::ProbeRegistry(),                        \
                                        {name, description, [] { return std::make_unique<Type>(); }})

}  // namespace rdmahd
