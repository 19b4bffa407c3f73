#include "collectors/collection_engine.h"

#include <algorithm>
#include <array>

namespace rdmahd {

void Report::Render(const std::vector<const Collector*>& collectors, MetricSink& sink) const {
  for (const Collector* c : collectors) c->Render(snapshot, sink);

  auto success = sink.Gauge("rdma_healthd_collector_success",
                            "1 if the collector's last run succeeded, 0 if it failed.");
  auto duration = sink.Gauge("rdma_healthd_collector_duration_seconds",
                             "Wall time of the collector's last run.");
  auto errors = sink.Gauge("rdma_healthd_collector_errors",
                           "Values or devices the collector's last run skipped (see the log).");
  for (const CollectorOutcome& o : snapshot.outcomes) {
    success.Add({{"collector", o.collector}}, o.success ? 1 : 0);
    duration.Add({{"collector", o.collector}}, o.duration.count());
    errors.Add({{"collector", o.collector}}, static_cast<double>(o.errors.size()));
  }

  auto status = sink.Gauge("rdma_check_status",
                           "Verdict of a check for a subject: 1 for the current status, 0 for the others.");
  static constexpr std::array kAll = {Verdict::kOk, Verdict::kWarning, Verdict::kFailed,
                                      Verdict::kUnknown};
  for (const CheckResult& r : verdicts) {
    for (Verdict v : kAll) {
      status.Add({{"check", r.check}, {"subject", r.subject}, {"status", VerdictName(v)}},
                 r.verdict == v ? 1 : 0);
    }
  }
}

CollectionEngine::CollectionEngine(NodeFs fs, std::vector<std::string> only_collectors)
    : fs_(std::move(fs)) {
  for (const auto& reg : RegisteredCollectors()) {
    if (!only_collectors.empty() &&
        std::find(only_collectors.begin(), only_collectors.end(), reg.name) == only_collectors.end()) {
      continue;
    }
    collectors_.push_back(reg.factory());
  }
  for (const auto& reg : RegisteredChecks()) checks_.push_back(reg.factory());
}

std::vector<const Collector*> CollectionEngine::collectors() const {
  std::vector<const Collector*> out;
  for (const auto& c : collectors_) out.push_back(c.get());
  return out;
}

std::shared_ptr<const Report> CollectionEngine::Collect(const std::shared_ptr<const Config>& config) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (last_ && last_->config == config &&
        std::chrono::steady_clock::now() - last_->finished_at <= config->scrape_cache_window) {
      return last_;
    }
    if (!collecting_) break;
    // Another caller is collecting: share its result.
    cv_.wait(lock, [this] { return !collecting_; });
  }
  collecting_ = true;
  lock.unlock();

  std::shared_ptr<const Report> report = CollectNow(config);

  lock.lock();
  last_ = report;
  collecting_ = false;
  cv_.notify_all();
  return report;
}

std::shared_ptr<const Report> CollectionEngine::CollectNow(const std::shared_ptr<const Config>& config) {
  auto report = std::make_shared<Report>();
  report->config = config;
  report->snapshot.taken_at = std::chrono::system_clock::now();
  CollectContext ctx{fs_, *config};
  for (auto& c : collectors_) {
    std::string name(c->Name());
    if (!config->CollectorEnabled(name)) continue;
    CollectorOutcome outcome;
    outcome.collector = name;
    auto start = std::chrono::steady_clock::now();
    Status st = c->Collect(ctx, report->snapshot, outcome);
    outcome.duration = std::chrono::steady_clock::now() - start;
    outcome.success = st.ok();
    if (!st.ok()) outcome.errors.push_back(st.error().message);
    report->snapshot.outcomes.push_back(std::move(outcome));
  }
  for (const auto& check : checks_) check->Evaluate(report->snapshot, *config, report->verdicts);
  report->finished_at = std::chrono::steady_clock::now();
  return report;
}

std::string CollectionEngine::ScrapeText(const std::shared_ptr<const Config>& config) {
  std::shared_ptr<const Report> report = Collect(config);
  MetricSink sink;
  report->Render(collectors(), sink);
  return sink.Serialize();
}

}  // namespace rdmahd
