#include "collectors/collection_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace rdmahd {
namespace {

// Registered only into this test binary: counts its runs so the cache behaviour is observable.
struct CountingFacts {
  int run = 0;
};

std::atomic<int> g_runs{0};

class CountingCollector : public Collector {
 public:
  std::string_view Name() const override { return "test_counting"; }
  std::string_view Description() const override { return "counts its own runs"; }
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome& outcome) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    snapshot.Put(CountingFacts{++g_runs});
    outcome.errors.push_back("test_value: skipped on purpose");
    return Status::Ok();
  }
  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    if (const auto* f = snapshot.Get<CountingFacts>()) {
      sink.Gauge("test_counting_runs", "runs").Add({}, f->run);
    }
  }
};
RDMAHD_REGISTER_COLLECTOR("test_counting", CountingCollector);

class FailingCollector : public Collector {
 public:
  std::string_view Name() const override { return "test_failing"; }
  std::string_view Description() const override { return "always fails"; }
  Status Collect(const CollectContext&, Snapshot&, CollectorOutcome&) override {
    return Error{"open /sys/class/test: Permission denied", EACCES};
  }
  void Render(const Snapshot&, MetricSink&) const override {}
};
RDMAHD_REGISTER_COLLECTOR("test_failing", FailingCollector);

std::shared_ptr<const Config> ConfigWithWindow(int ms) {
  auto c = std::make_shared<Config>();
  c->scrape_cache_window = std::chrono::milliseconds(ms);
  return c;
}

TEST(CollectionEngineTest, FailingCollectorCostsOnlyItsOwnMetrics) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting", "test_failing"});
  std::string text = engine.ScrapeText(ConfigWithWindow(0));
  EXPECT_NE(text.find("test_counting_runs"), std::string::npos);
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_failing\"} 0"), std::string::npos);
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_counting\"} 1"), std::string::npos);
  EXPECT_NE(text.find("rdma_healthd_collector_errors{collector=\"test_counting\"} 1"), std::string::npos);
}

TEST(CollectionEngineTest, DisabledCollectorDoesNotRun) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting", "test_failing"});
  auto cfg = std::make_shared<Config>();
  cfg->collectors["test_failing"] = false;
  auto report = engine.Collect(cfg);
  ASSERT_EQ(report->snapshot.outcomes.size(), 1u);
  EXPECT_EQ(report->snapshot.outcomes[0].collector, "test_counting");
}

TEST(CollectionEngineTest, ConcurrentScrapesShareOneCollection) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  auto cfg = ConfigWithWindow(250);
  int before = g_runs;
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Report>> reports(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { reports[i] = engine.Collect(cfg); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(g_runs - before, 1);
  for (auto& r : reports) EXPECT_EQ(r, reports[0]);
}

TEST(CollectionEngineTest, ReportIsNeverServedOlderThanTheWindow) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  auto cfg = ConfigWithWindow(10);
  auto first = engine.Collect(cfg);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto second = engine.Collect(cfg);
  EXPECT_NE(first, second);
  EXPECT_GT(second->snapshot.Get<CountingFacts>()->run, first->snapshot.Get<CountingFacts>()->run);
}

TEST(CollectionEngineTest, NewConfigIsNotAnsweredFromTheOldConfigsCache) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  auto first = engine.Collect(ConfigWithWindow(250));
  auto second = engine.Collect(ConfigWithWindow(250));
  EXPECT_NE(first, second);
}

}  // namespace
}  // namespace rdmahd
