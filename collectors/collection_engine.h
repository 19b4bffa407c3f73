// CollectionEngine: runs the enabled collectors, then every check, into one immutable Report.
// Concurrent callers share one collection; a caller arriving within the cache window of the last
// report gets that report (the window only merges scrapes that overlap or follow each other
// closely; a Report is never served older than the window).
//
// Collections run on a worker thread the engine owns, and a caller waits at most
// config->collection_timeout for one. When the deadline passes the caller gets a partial report:
// the collectors that finished keep their facts, the one still running and those not yet run are
// failed with an error saying so, and the checks run over what is there. Collectors keep state
// without locking, so one never runs concurrently with itself: until the stuck collector returns,
// every Collect() answers at once with that partial report (no caller waits another deadline),
// and the next collection starts only after it returned.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checks/check.h"
#include "collectors/collector.h"
#include "collectors/snapshot.h"
#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "config/config.h"

namespace rdmahd {

struct Report {
  Snapshot snapshot;
  std::vector<CheckResult> verdicts;
  std::chrono::steady_clock::time_point finished_at{};
  std::shared_ptr<const Config> config;  // the config this report was made with
  // Collector name -> collections, since the engine started, that reached their deadline while
  // that collector was running (as of this report).
  std::map<std::string, std::uint64_t> collection_timeouts;

  // Collector metrics, collector outcome metrics and check verdict metrics. A collector whose
  // Render throws is reported as failed (the other collectors still render); the returned
  // messages (one per such collector, with the exception's text) are for the log.
  std::vector<std::string> Render(const std::vector<const Collector*>& collectors, MetricSink& sink) const;
};

class CollectionEngine {
 public:
  // Instantiates every registered collector (state such as held descriptors lives as long as the
  // engine) and every registered check. `only_collectors`, when non-empty, limits the collectors to
  // these names (for tests).
  explicit CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors = {});
  // These collectors (run in this order) and checks instead of the registered ones (for tests).
  CollectionEngine(NodeFs fs, std::vector<std::unique_ptr<Collector>> collectors,
                   std::vector<std::unique_ptr<Check>> checks);
  // Never waits for a collector: a worker still inside one is detached and keeps the collectors,
  // checks and its job alive until it returns, then frees them. (At process exit, leave with
  // _exit instead while busy_collector() is non-empty: static destructors would run under it.)
  ~CollectionEngine();
  CollectionEngine(const CollectionEngine&) = delete;
  CollectionEngine& operator=(const CollectionEngine&) = delete;

  // A report no older than config->scrape_cache_window, made within config->collection_timeout
  // (partial when the deadline passed; see above). Thread-safe.
  std::shared_ptr<const Report> Collect(const std::shared_ptr<const Config>& config);

  // Collect() + Report::Render + serialisation, as served on /metrics.
  std::string ScrapeText(const std::shared_ptr<const Config>& config);

  // For shutdown: from now on Collect() never waits and never starts a collection (it answers
  // with the last report, or a partial one); callers waiting now return at once. Thread-safe.
  void Stop();

  // The collector the worker is running now; empty when it is idle. Thread-safe.
  std::string busy_collector() const;
  // True from the moment a collection misses its deadline until its stuck collector returns.
  bool stuck() const;

  std::vector<const Collector*> collectors() const;
  const NodeFs& fs() const;

 private:
  struct Shared;  // everything the worker thread uses; outlives the engine while the worker is stuck
  std::shared_ptr<Shared> shared_;
  std::thread worker_;
};

}  // namespace rdmahd
