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
#include <cstdint>
#include <string>
#include <vector>

#include "common/metric_sink.h"
#include "common/mutex.h"
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
    MutexLock lock(mu_);
    latest_.PutShared(std::move(shared));
  }

  // Adds every published result to `snapshot` (shared, not copied).
  void CopyInto(Snapshot& snapshot) const {
    MutexLock lock(mu_);
    snapshot.Merge(latest_);
  }

 private:
  mutable Mutex mu_;
  Snapshot latest_ GUARDED_BY(mu_);  // facts only; no outcomes
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
  // itself. A round that throws is a failed round (exported and logged: ProbeRoundOutcome); the
  // probe runs again at the next interval.
  virtual void RunRound(const ProbeContext& ctx, ProbeBoard& board) = 0;
  // Renders the probe's published facts from a collection's snapshot. Called concurrently from
  // several scrapes, and while a round runs: must read only `snapshot`.
  virtual void Render(const Snapshot& snapshot, MetricSink& sink) const = 0;
  // False when `config` gives the probe nothing to measure (the `peers` probe without targets, a
  // targets file or discovery names): its rounds still run, to see a new config, but are not
  // exported, so a node that does not use the probe shows no series for it. Called concurrently
  // with a round: must read only `config`.
  virtual bool HasWork(const Config& config) const {
    (void)config;
    return true;
  }
};

// How a probe's rounds went since the daemon started, as the ProbeScheduler counts them.
struct ProbeRoundOutcome {
  std::string probe;          // the registered name (the `probe` label)
  std::uint64_t rounds = 0;   // rounds that ended, returning or throwing
  std::uint64_t failed = 0;   // rounds that threw
  bool last_failed = false;   // the last round threw
  std::chrono::duration<double> last_duration{};  // wall time of the last round
  std::string last_error;     // what the last round that threw said; empty until one did
};

// In every collection's Snapshot: the outcomes of the probes its config enables and gives work
// (Probe::HasWork), each from the end of its first round, in registration order.
struct ProbeRoundFacts {
  std::vector<ProbeRoundOutcome> probes;
};

// Renders a snapshot's ProbeRoundFacts as the rdma_healthd_probe_* families (docs/metrics.md):
// success and duration of the last round, rounds and failed rounds since the start.
void RenderProbeRounds(const Snapshot& snapshot, MetricSink& sink);

// Every probe kind linked into the binary.
Registry<Probe>& ProbeRegistry();

#define RDMAHD_REGISTER_PROBE(name, Type, description)                                   \
  [[maybe_unused]] static const bool rdmahd_probe_registered_##Type =                    \
      ::rdmahd::internal::RegisterOrDie(::rdmahd::ProbeRegistry(),                        \
                                        {name, description, [] { return std::make_unique<Type>(); }})

}  // namespace rdmahd
