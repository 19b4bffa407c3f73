// CollectionEngine: runs the enabled collectors, then every check, into one immutable Report.
// Concurrent callers within the cache window share one collection (the window only merges scrapes
// that overlap or follow each other closely; a Report is never served older than the window).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
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

  // Collector metrics, collector outcome metrics and check verdict metrics.
  void Render(const std::vector<const Collector*>& collectors, MetricSink& sink) const;
};

class CollectionEngine {
 public:
  // Instantiates every registered collector (state such as held descriptors lives as long as the
  // engine) and every registered check. `only_collectors`, when non-empty, limits the collectors to
  // these names (for tests).
  explicit CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors = {});

  // A report no older than config->scrape_cache_window. Thread-safe.
  std::shared_ptr<const Report> Collect(const std::shared_ptr<const Config>& config);

  // Collect() + Report::Render + serialisation, as served on /metrics.
  std::string ScrapeText(const std::shared_ptr<const Config>& config);

  std::vector<const Collector*> collectors() const;
  const NodeFs& fs() const { return fs_; }

 private:
  std::shared_ptr<const Report> CollectNow(const std::shared_ptr<const Config>& config);

  NodeFs fs_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::vector<std::unique_ptr<Check>> checks_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool collecting_ = false;                  // guarded by mu_
  std::shared_ptr<const Report> last_;       // guarded by mu_
};

}  // namespace rdmahd
