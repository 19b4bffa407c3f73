// CollectionEngine: one collection = the topology stage, then every enabled collector, then the
// probes' latest results, then every enabled check, into one immutable Report. The engine owns the
// History (core/history.h): each enabled check records the series it needs from the collection's
// facts before it evaluates, and asks for past collections' values through its CheckContext. Concurrent callers
// share one collection; a caller arriving within the cache window of the last report gets that
// report (the window only merges scrapes that overlap or follow each other closely; a Report is
// never served older than the window).
//
// Lanes: the topology stage and the collectors run on worker threads the engine owns ("lanes"),
// never on the caller's, so the caller can always leave at the deadline. One lane runs a whole
// collection, collector after collector: waking a thread per collector costs a context switch each,
// which is work a scrape does for nothing (bench/engine_bench.cc measures a scrape's CPU per phase,
// bench/scrape_bench.py per thread). When a lane has started nothing for 50 ms (a quarter of the
// timeout if that is shorter), because a plug-in is slow or hung, another lane takes over the
// collectors not yet started; so a slow collector costs only its own facts.
//
// Deadlines: a collection takes at most config->collection_timeout. The topology stage gets half
// of it; past that the collectors work from the last discovery (its `failure` says why). At the
// deadline, whatever has not finished is reported failed ("did not finish within 5s"), and the
// collectors that finished keep their facts. A collector (or the topology stage) still stuck at
// the next collection is not started again (it keeps state without locking): it is reported
// failed at once while the others collect as usual.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "config/config.h"
#include "core/check.h"
#include "core/collector.h"
#include "core/history.h"
#include "core/probe.h"
#include "core/snapshot.h"
#include "core/topology.h"
#include "core/verdict_list.h"

namespace rdmahd {

// The plug-ins of one engine.
struct EnginePlugins {
  std::unique_ptr<TopologySource> topology;  // nullptr: every collection sees an empty Topology
  std::vector<Instance<Collector>> collectors;
  std::vector<Instance<Check>> checks;
  std::vector<Instance<Probe>> probes;

  // Every registered plug-in; `only_collectors`, when non-empty, limits the collectors (tests).
  static EnginePlugins Registered(const std::vector<std::string>& only_collectors = {});
};

struct Report {
  Snapshot snapshot;  // collector facts, the Topology, probe results, collector outcomes
  VerdictList verdicts;  // in the order the checks gave them
  std::chrono::steady_clock::time_point finished_at{};
  std::shared_ptr<const Config> config;  // the config this report was made with
  // Collector name -> collections, since the engine started, that reached their deadline while
  // that collector was running (as of this report).
  std::map<std::string, std::uint64_t> collection_timeouts;
  // The engine's history after this collection's checks: the series it holds, and the new series
  // it has refused since the engine started because it was full (history.max_series).
  std::size_t history_series = 0;
  std::uint64_t history_refused = 0;
};

class ProbeScheduler;

// The names of every registered collector, check and probe (what a config may switch on or off).
PluginNames RegisteredPluginNames();

class CollectionEngine {
 public:
  explicit CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors = {});
  CollectionEngine(NodeFs fs, EnginePlugins plugins);
  // Never waits for plug-in code: workers still inside a collector or probe are detached and free
  // what they use when they return. (At process exit, leave with _exit instead while
  // busy_collector() is non-empty: static destructors would run under them.)
  ~CollectionEngine();
  CollectionEngine(const CollectionEngine&) = delete;
  CollectionEngine& operator=(const CollectionEngine&) = delete;

  // A report no older than config->scrape_cache_window, made within config->collection_timeout
  // (partial when the deadline passed; see above). Thread-safe.
  std::shared_ptr<const Report> Collect(const std::shared_ptr<const Config>& config);
  // A report no older than config->scrape_cache_window at `asked_at` (when a request arrived):
  // requests that waited in a queue share the report made after they arrived instead of each
  // finding it stale and starting another collection. Otherwise as Collect(config).
  std::shared_ptr<const Report> Collect(const std::shared_ptr<const Config>& config,
                                        std::chrono::steady_clock::time_point asked_at);

  // Renders a report: every collector's and probe's metrics, the collector outcome metrics and the
  // check verdicts. A plug-in whose Render throws is reported as failed (the others still render);
  // the returned messages (one per such plug-in) are for the log.
  std::vector<std::string> Render(const Report& report, MetricSink& sink) const;
  // Collect() + Render + serialisation, as served on /metrics.
  std::string ScrapeText(const std::shared_ptr<const Config>& config);

  // Starts the probe threads on the first call; later calls hand them a new config (a probe the
  // config disables stops after its current round). Thread-safe.
  void RunProbes(const std::shared_ptr<const Config>& config);

  // For shutdown: from now on Collect() never waits and never starts a collection (it answers
  // with the last report, or an empty one); callers waiting now return at once; probes stop after
  // their current round. Thread-safe.
  void Stop();

  // The plug-ins running now (collectors, "topology", probes in a round), comma-separated; empty
  // when idle. Thread-safe.
  std::string busy_collector() const;
  // True while a collector or the topology stage is still running past a collection's deadline.
  bool stuck() const;

  // Registered names of the collectors and probes, in order.
  std::vector<std::string> collector_names() const;
  std::vector<std::string> probe_names() const;
  const NodeFs& fs() const;
  // The history the checks record into (thread-safe to read).
  const History& history() const;

 private:
  struct Shared;  // what the workers use; outlives the engine while one is stuck
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<ProbeScheduler> probes_;
};

}  // namespace rdmahd
