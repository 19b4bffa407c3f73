#include "collectors/collection_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tests/support/blocking_collector.h"

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


// ---------------------------------------------------------------------------------------------
// Engines built from collector instances: deadlines, stuck collectors, exceptions.

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

template <int N>
struct FakeFacts {
  int run = 0;
};

// Records every run; its facts carry the run number.
template <int N>
class SteadyCollector : public Collector {
 public:
  explicit SteadyCollector(std::string name) : name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  std::string_view Description() const override { return "answers at once"; }
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome&) override {
    snapshot.Put(FakeFacts<N>{++runs_});
    return Status::Ok();
  }
  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    if (const auto* f = snapshot.Get<FakeFacts<N>>()) sink.Gauge(name_ + "_runs", "runs").Add({}, f->run);
  }

 private:
  std::string name_;
  int runs_ = 0;  // only the engine's worker touches it
};

using testing::BlockingCollector;
using testing::BlockingFacts;
using testing::Gate;

class ThrowingCollector : public Collector {
 public:
  std::string_view Name() const override { return "test_throwing"; }
  std::string_view Description() const override { return "throws"; }
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome&) override {
    snapshot.Put(FakeFacts<3>{1});  // stored before throwing: must not survive
    throw std::runtime_error("counter file exploded");
  }
  void Render(const Snapshot&, MetricSink&) const override { throw std::logic_error("renderer exploded"); }
};

class ThrowingCheck : public Check {
 public:
  std::string_view Name() const override { return "test_throwing_check"; }
  std::string_view Description() const override { return "throws after one verdict"; }
  void Evaluate(const Snapshot&, const Config&, std::vector<CheckResult>& out) const override {
    out.push_back({"test_throwing_check", "x", Verdict::kOk, "half done", ""});
    throw std::out_of_range("map::at");
  }
};

class FactsCheck : public Check {
 public:
  std::string_view Name() const override { return "test_facts"; }
  std::string_view Description() const override { return "ok with facts 1, unknown without"; }
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    out.push_back({"test_facts", "node", snapshot.Get<FakeFacts<1>>() ? Verdict::kOk : Verdict::kUnknown,
                   "", ""});
  }
};

std::shared_ptr<Config> ConfigWithTimeout(int timeout_ms, int window_ms = 0) {
  auto c = std::make_shared<Config>();
  c->scrape_cache_window = milliseconds(window_ms);
  c->collection_timeout = milliseconds(timeout_ms);
  return c;
}

const CollectorOutcome* OutcomeOf(const Report& r, std::string_view name) {
  for (const auto& o : r.snapshot.outcomes) {
    if (o.collector == name) return &o;
  }
  return nullptr;
}

std::unique_ptr<CollectionEngine> EngineWith(std::vector<std::unique_ptr<Collector>> collectors) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<FactsCheck>());
  return std::make_unique<CollectionEngine>(NodeFs("/nonexistent", "/nonexistent"), std::move(collectors),
                                            std::move(checks));
}

template <class... C>
std::vector<std::unique_ptr<Collector>> Collectors(std::unique_ptr<C>... c) {
  std::vector<std::unique_ptr<Collector>> out;
  (out.push_back(std::move(c)), ...);
  return out;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(CollectionEngineDeadlineTest, ThrowingCollectorFailsAloneAndLaterCollectionsWork) {
  auto engine = EngineWith(Collectors(std::make_unique<SteadyCollector<1>>("test_steady"),
                                      std::make_unique<ThrowingCollector>()));
  auto cfg = ConfigWithTimeout(5000);
  auto first = engine->Collect(cfg);
  const CollectorOutcome* thrown = OutcomeOf(*first, "test_throwing");
  ASSERT_NE(thrown, nullptr);
  EXPECT_FALSE(thrown->success);
  ASSERT_EQ(thrown->errors.size(), 1u);
  EXPECT_EQ(thrown->errors[0], "collector test_throwing failed: counter file exploded");
  EXPECT_EQ(first->snapshot.Get<FakeFacts<3>>(), nullptr);
  ASSERT_NE(first->snapshot.Get<FakeFacts<1>>(), nullptr);
  EXPECT_TRUE(OutcomeOf(*first, "test_steady")->success);

  // The engine is not left "collecting": the next collection runs (it used to hang here).
  auto second = engine->Collect(ConfigWithTimeout(5000));
  ASSERT_NE(second->snapshot.Get<FakeFacts<1>>(), nullptr);
  EXPECT_EQ(second->snapshot.Get<FakeFacts<1>>()->run, 2);
  EXPECT_EQ(engine->busy_collector(), "");
}

TEST(CollectionEngineDeadlineTest, ThrowingRendererAndCheckCostOnlyTheirOwnOutput) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<ThrowingCheck>());
  checks.push_back(std::make_unique<FactsCheck>());
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"),
                          Collectors(std::make_unique<SteadyCollector<1>>("test_steady"),
                                     std::make_unique<ThrowingCollector>()),
                          std::move(checks));
  auto report = engine.Collect(ConfigWithTimeout(5000));
  ASSERT_EQ(report->verdicts.size(), 2u);
  EXPECT_EQ(report->verdicts[0].check, "test_throwing_check");
  EXPECT_EQ(report->verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(report->verdicts[0].reason, "the check failed: map::at");
  EXPECT_EQ(report->verdicts[1].verdict, Verdict::kOk);

  MetricSink sink;
  std::vector<std::string> errors = report->Render(engine.collectors(), sink);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "collector test_throwing failed to render its metrics: renderer exploded");
  std::string text = sink.Serialize();
  EXPECT_NE(text.find("test_steady_runs 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_throwing\"} 0"), std::string::npos);
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_steady\"} 1"), std::string::npos);
}

TEST(CollectionEngineDeadlineTest, StuckCollectorCostsItsOwnFactsAndNoCallerWaitsTwice) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(std::make_unique<SteadyCollector<1>>("test_steady"),
                                      std::make_unique<BlockingCollector>(gate),
                                      std::make_unique<SteadyCollector<4>>("test_after")));
  auto cfg = ConfigWithTimeout(300);

  const Clock::time_point start = Clock::now();
  auto stuck = engine->Collect(cfg);
  const double waited = Seconds(Clock::now() - start);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 0.8);

  // The collector that finished keeps its facts; the stuck one and the one after it are named.
  ASSERT_NE(stuck->snapshot.Get<FakeFacts<1>>(), nullptr);
  EXPECT_TRUE(OutcomeOf(*stuck, "test_steady")->success);
  const CollectorOutcome* blocked = OutcomeOf(*stuck, "test_blocking");
  ASSERT_NE(blocked, nullptr);
  EXPECT_FALSE(blocked->success);
  EXPECT_EQ(blocked->errors, std::vector<std::string>{"collector test_blocking did not finish within 300ms"});
  EXPECT_GE(blocked->duration.count(), 0.29);
  const CollectorOutcome* after = OutcomeOf(*stuck, "test_after");
  ASSERT_NE(after, nullptr);
  EXPECT_FALSE(after->success);
  EXPECT_EQ(after->errors, std::vector<std::string>{"not run: collector test_blocking did not finish within 300ms"});
  EXPECT_EQ(stuck->snapshot.Get<FakeFacts<4>>(), nullptr);
  // Checks ran over what is there.
  ASSERT_EQ(stuck->verdicts.size(), 1u);
  EXPECT_EQ(stuck->verdicts[0].verdict, Verdict::kOk);
  EXPECT_EQ(engine->busy_collector(), "test_blocking");

  // While it is stuck, callers (any config) are answered at once with that report, and the
  // collector is not started a second time.
  const Clock::time_point again = Clock::now();
  EXPECT_EQ(engine->Collect(cfg), stuck);
  EXPECT_EQ(engine->Collect(ConfigWithTimeout(300)), stuck);
  EXPECT_LT(Seconds(Clock::now() - again), 0.1);
  const std::string text = engine->ScrapeText(cfg);
  EXPECT_NE(text.find("rdma_healthd_collection_timeouts_total{collector=\"test_blocking\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collection_timeouts_total{collector=\"test_steady\"} 0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_blocking\"} 0\n"), std::string::npos);

  // Released, the worker resumes normal service: full reports again.
  gate->Open();
  const Clock::time_point release = Clock::now();
  while (engine->busy_collector() != "" && Clock::now() - release < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  auto fresh = engine->Collect(cfg);
  EXPECT_NE(fresh, stuck);
  for (const auto& o : fresh->snapshot.outcomes) EXPECT_TRUE(o.success) << o.collector;
  ASSERT_NE(fresh->snapshot.Get<FakeFacts<4>>(), nullptr);
  EXPECT_EQ(fresh->snapshot.Get<BlockingFacts>()->run, 2);  // the stuck run's facts were dropped
  std::lock_guard lock(gate->mu);
  EXPECT_EQ(gate->entered, 2);
  EXPECT_EQ(gate->max_inside, 1);
}

TEST(CollectionEngineDeadlineTest, ConcurrentCallersShareOneDeadline) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(std::make_unique<BlockingCollector>(gate)));
  auto cfg = ConfigWithTimeout(300);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Report>> reports(4);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { reports[i] = engine->Collect(cfg); });
  for (auto& t : threads) t.join();
  EXPECT_LT(Seconds(Clock::now() - start), 0.8);
  for (auto& r : reports) EXPECT_EQ(r, reports[0]);
  gate->Open();
  std::lock_guard lock(gate->mu);
  EXPECT_EQ(gate->max_inside, 1);
}

TEST(CollectionEngineDeadlineTest, StopAnswersWaitingCallersAtOnce) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(std::make_unique<SteadyCollector<1>>("test_steady"),
                                      std::make_unique<BlockingCollector>(gate)));
  std::shared_ptr<const Report> report;
  Clock::time_point returned;
  std::thread caller([&] {
    report = engine->Collect(ConfigWithTimeout(30'000));
    returned = Clock::now();
  });
  ASSERT_TRUE(gate->WaitFor([&] { return gate->entered == 1; }));
  const Clock::time_point stop = Clock::now();
  engine->Stop();
  caller.join();
  EXPECT_LT(Seconds(returned - stop), 0.2);
  ASSERT_NE(report, nullptr);
  EXPECT_NE(report->snapshot.Get<FakeFacts<1>>(), nullptr);
  EXPECT_EQ(OutcomeOf(*report, "test_blocking")->errors,
            std::vector<std::string>{"collector test_blocking did not finish before shutdown"});
  // After Stop nothing waits and nothing new starts.
  const Clock::time_point later = Clock::now();
  engine->Collect(ConfigWithTimeout(30'000));
  EXPECT_LT(Seconds(Clock::now() - later), 0.1);
  gate->Open();
}

TEST(CollectionEngineDeadlineTest, EngineDestroyedWhileStuckDoesNotWaitAndFreesItsStateLater) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(std::make_unique<BlockingCollector>(gate)));
  engine->Collect(ConfigWithTimeout(100));
  ASSERT_EQ(engine->busy_collector(), "test_blocking");

  const Clock::time_point start = Clock::now();
  engine.reset();
  EXPECT_LT(Seconds(Clock::now() - start), 0.1);
  {
    std::lock_guard lock(gate->mu);
    EXPECT_FALSE(gate->collector_destroyed);  // still in use by the worker
  }
  gate->Open();
  // The worker returns, leaves, and frees the collectors it kept alive.
  EXPECT_TRUE(gate->WaitFor([&] { return gate->collector_destroyed; }));
}

}  // namespace
}  // namespace rdmahd
