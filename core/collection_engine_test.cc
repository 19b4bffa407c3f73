#include "core/collection_engine.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/probe_scheduler.h"
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
RDMAHD_REGISTER_COLLECTOR("test_counting", CountingCollector, "counts its own runs");

class FailingCollector : public Collector {
 public:
  Status Collect(const CollectContext&, Snapshot&, CollectorOutcome&) override {
    return Error{"open /sys/class/test: Permission denied", EACCES};
  }
  void Render(const Snapshot&, MetricSink&) const override {}
};
RDMAHD_REGISTER_COLLECTOR("test_failing", FailingCollector, "always fails");

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

// A request that waited in a queue takes the report made after it arrived, however long it waited,
// and a report older than the window at its arrival never.
TEST(CollectionEngineTest, AReportMadeAfterTheRequestArrivedIsFreshForIt) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  auto cfg = ConfigWithWindow(10);
  const auto arrived = std::chrono::steady_clock::now();
  auto made = engine.Collect(cfg);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(engine.Collect(cfg, arrived), made);  // stale now, not when the request arrived
  auto later = engine.Collect(cfg, std::chrono::steady_clock::now());
  EXPECT_NE(later, made);
  EXPECT_GT(later->snapshot.Get<CountingFacts>()->run, made->snapshot.Get<CountingFacts>()->run);
}

TEST(CollectionEngineTest, NewConfigIsNotAnsweredFromTheOldConfigsCache) {
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  auto first = engine.Collect(ConfigWithWindow(250));
  auto second = engine.Collect(ConfigWithWindow(250));
  EXPECT_NE(first, second);
}


// ---------------------------------------------------------------------------------------------
// Engines built from plug-in instances: deadlines, stuck collectors, exceptions, probes.

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
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome&) override {
    snapshot.Put(FakeFacts<N>{++runs_});
    return Status::Ok();
  }
  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    if (const auto* f = snapshot.Get<FakeFacts<N>>()) sink.Gauge("test_steady" + std::to_string(N) + "_runs", "runs").Add({}, f->run);
  }

 private:
  int runs_ = 0;  // only the collector's worker touches it
};

// Sees the topology it was given and the facts of no other collector.
struct SeenFacts {
  std::size_t topology_devices = 0;
  bool saw_other_facts = false;
};
class TopologyReadingCollector : public Collector {
 public:
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome&) override {
    snapshot.Put(SeenFacts{ctx.topology.devices.size(), snapshot.Get<FakeFacts<1>>() != nullptr});
    return Status::Ok();
  }
  void Render(const Snapshot&, MetricSink&) const override {}
};

class FixedTopology : public TopologySource {
 public:
  Topology Discover(const NodeFs&, const Config&) override {
    Topology t;
    t.class_dir_present = true;
    t.devices.push_back(TopologyDevice{"rxe0", {}, {}, {}, 1, {}, {}, {}});
    return t;
  }
};

using testing::BlockingCollector;
using testing::BlockingFacts;
using testing::Gate;

class ThrowingCollector : public Collector {
 public:
  Status Collect(const CollectContext&, Snapshot& snapshot, CollectorOutcome&) override {
    snapshot.Put(FakeFacts<3>{1});  // stored before throwing: must not survive
    throw std::runtime_error("counter file exploded");
  }
  void Render(const Snapshot&, MetricSink&) const override { throw std::logic_error("renderer exploded"); }
};

class ThrowingCheck : public Check {
 public:
  void Evaluate(const Snapshot&, const Config&, std::vector<CheckResult>& out) const override {
    out.push_back({"", "x", Verdict::kOk, "half done", ""});
    throw std::out_of_range("map::at");
  }
};

class FactsCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    out.push_back({"", "node", snapshot.Get<FakeFacts<1>>() ? Verdict::kOk : Verdict::kUnknown, "", ""});
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

template <class T>
Instance<T> Named(std::string name, std::unique_ptr<T> impl) {
  return Instance<T>{std::move(name), std::move(impl)};
}

template <class... C>
std::vector<Instance<Collector>> Collectors(Instance<C>... c) {
  std::vector<Instance<Collector>> out;
  (out.push_back(Instance<Collector>{std::move(c.name), std::move(c.impl)}), ...);
  return out;
}

std::unique_ptr<CollectionEngine> EngineWith(std::vector<Instance<Collector>> collectors) {
  EnginePlugins plugins;
  plugins.collectors = std::move(collectors);
  plugins.checks.push_back({"test_facts", std::make_unique<FactsCheck>()});
  return std::make_unique<CollectionEngine>(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool WaitUntilIdle(const CollectionEngine& engine) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (engine.busy_collector() != "") {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

TEST(CollectionEngineDeadlineTest, ThrowingCollectorFailsAloneAndLaterCollectionsWork) {
  auto engine = EngineWith(Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()),
                                      Named("test_throwing", std::make_unique<ThrowingCollector>())));
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

  // The engine is not left "collecting": the next collection runs.
  auto second = engine->Collect(ConfigWithTimeout(5000));
  ASSERT_NE(second->snapshot.Get<FakeFacts<1>>(), nullptr);
  EXPECT_EQ(second->snapshot.Get<FakeFacts<1>>()->run, 2);
  EXPECT_EQ(engine->busy_collector(), "");
}

TEST(CollectionEngineDeadlineTest, ThrowingRendererAndCheckCostOnlyTheirOwnOutput) {
  EnginePlugins plugins;
  plugins.collectors = Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()),
                                  Named("test_throwing", std::make_unique<ThrowingCollector>()));
  plugins.checks.push_back({"test_throwing_check", std::make_unique<ThrowingCheck>()});
  plugins.checks.push_back({"test_facts", std::make_unique<FactsCheck>()});
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto report = engine.Collect(ConfigWithTimeout(5000));
  ASSERT_EQ(report->verdicts.size(), 2u);
  EXPECT_EQ(report->verdicts[0].check, "test_throwing_check");
  EXPECT_EQ(report->verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(report->verdicts[0].reason, "the check failed: map::at");
  EXPECT_EQ(report->verdicts[1].check, "test_facts");  // named by the engine, not by the check
  EXPECT_EQ(report->verdicts[1].verdict, Verdict::kOk);

  MetricSink sink;
  std::vector<std::string> errors = engine.Render(*report, sink);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "collector test_throwing failed to render its metrics: renderer exploded");
  std::string text = sink.Serialize();
  EXPECT_NE(text.find("test_steady1_runs 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_throwing\"} 0"), std::string::npos);
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_steady\"} 1"), std::string::npos);
}

TEST(CollectionEngineTest, DisabledCheckGivesNoVerdicts) {
  auto engine = EngineWith(Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>())));
  auto cfg = ConfigWithTimeout(5000);
  cfg->checks["test_facts"] = false;
  EXPECT_TRUE(engine->Collect(cfg)->verdicts.empty());
  EXPECT_EQ(engine->Collect(ConfigWithTimeout(5000))->verdicts.size(), 1u);
}

// Asks the history for the growth of FakeFacts<1>::run between collections, recorded from the
// facts, and publishes what it derived for renderers.
struct RunGrowthFacts {
  std::optional<std::uint64_t> growth;
};
class RunGrowthCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config&, History& history, History::TimePoint now) const override {
    if (const auto* f = snapshot.Get<FakeFacts<1>>()) {
      history.RecordCounter("test_growth/runs", 0, static_cast<std::uint64_t>(f->run), now);
    }
  }
  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto step = ctx.history.LastStep("test_growth/runs");
    out.push_back({"", "node", step ? Verdict::kOk : Verdict::kUnknown, "", ""});
    if (ctx.derived != nullptr) ctx.derived->Put(RunGrowthFacts{step ? std::optional(step->increase) : std::nullopt});
  }
};

// The engine owns the history: every collection, each enabled check records from that collection's
// facts once, and evaluates with the history; what it publishes joins the report.
TEST(CollectionEngineTest, ChecksRecordIntoTheEnginesHistoryOncePerCollection) {
  EnginePlugins plugins;
  plugins.collectors = Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()));
  plugins.checks.push_back({"test_growth", std::make_unique<RunGrowthCheck>()});
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto first = engine.Collect(ConfigWithTimeout(5000));
  ASSERT_EQ(first->verdicts.size(), 1u);
  EXPECT_EQ(first->verdicts[0].verdict, Verdict::kUnknown);  // one sample: no growth yet
  ASSERT_NE(first->snapshot.Get<RunGrowthFacts>(), nullptr);
  EXPECT_FALSE(first->snapshot.Get<RunGrowthFacts>()->growth);
  auto second = engine.Collect(ConfigWithTimeout(5000));
  EXPECT_EQ(second->verdicts.at(0).verdict, Verdict::kOk);
  EXPECT_EQ(second->snapshot.Get<RunGrowthFacts>()->growth, 1u);  // run 1 -> 2
  EXPECT_EQ(engine.history().Samples("test_growth/runs").size(), 2u);
  EXPECT_EQ(engine.history().series(), 1u);
  // A disabled check records nothing.
  auto off = ConfigWithTimeout(5000);
  off->checks["test_growth"] = false;
  (void)engine.Collect(off);
  EXPECT_EQ(engine.history().Samples("test_growth/runs").size(), 2u);
}

// Records `count` series a collection, each under its own name.
class ManySeriesCheck : public Check {
 public:
  explicit ManySeriesCheck(int count) : count_(count) {}
  void Record(const Snapshot&, const Config&, History& history, History::TimePoint now) const override {
    for (int i = 0; i < count_; ++i) history.RecordCounter("test_many/" + std::to_string(i), 0, 1, now);
  }
  void EvaluateOverTime(const CheckContext&, std::vector<CheckResult>& out) const override {
    out.push_back({"", "node", Verdict::kOk, "", ""});
  }

 private:
  int count_;
};

// How full the history is, and what it turned away, reach /metrics: the figures an operator needs
// to size history.max_series.
TEST(CollectionEngineTest, TheHistorysSeriesAndRefusalsAreExported) {
  EnginePlugins plugins;
  plugins.collectors = Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()));
  plugins.checks.push_back({"test_many", std::make_unique<ManySeriesCheck>(1030)});
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto config = ConfigWithTimeout(5000);
  config->Section<HistoryPolicy>().max_series = 1024;
  auto report = engine.Collect(config);
  EXPECT_EQ(report->history_series, 1024u);
  EXPECT_EQ(report->history_refused, 6u);  // the rest, recorded in the same collection
  MetricSink sink;
  (void)engine.Render(*report, sink);
  const std::string text = sink.Serialize();
  EXPECT_NE(text.find("\nrdma_healthd_history_series 1024\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nrdma_healthd_history_series_refused_total 6\n"), std::string::npos) << text;
  // Another collection: the same 1,024 kept, the same six refused again.
  report = engine.Collect(config);
  EXPECT_EQ(report->history_series, 1024u);
  EXPECT_EQ(report->history_refused, 12u);
}

// Every collector gets the collection's topology, and only its own part of the snapshot: the
// report holds both, and the topology too (for checks).
TEST(CollectionEngineTest, CollectorsSeeTheTopologyAndNoOtherCollectorsFacts) {
  EnginePlugins plugins;
  plugins.topology = std::make_unique<FixedTopology>();
  plugins.collectors = Collectors(Named("a_steady", std::make_unique<SteadyCollector<1>>()),
                                  Named("b_reader", std::make_unique<TopologyReadingCollector>()));
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto report = engine.Collect(ConfigWithTimeout(5000));
  const auto* seen = report->snapshot.Get<SeenFacts>();
  ASSERT_NE(seen, nullptr);
  EXPECT_EQ(seen->topology_devices, 1u);
  EXPECT_FALSE(seen->saw_other_facts);
  ASSERT_NE(report->snapshot.Get<FakeFacts<1>>(), nullptr);
  ASSERT_NE(report->snapshot.Get<Topology>(), nullptr);
  EXPECT_EQ(report->snapshot.Get<Topology>()->devices.at(0).name, "rxe0");
  ASSERT_EQ(report->snapshot.outcomes.size(), 2u);  // in registration (name) order
  EXPECT_EQ(report->snapshot.outcomes[0].collector, "a_steady");
  EXPECT_EQ(report->snapshot.outcomes[1].collector, "b_reader");
}

TEST(CollectionEngineDeadlineTest, StuckCollectorCostsOnlyItsOwnFactsAndIsNotWaitedForAgain) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()),
                                      Named("test_blocking", std::make_unique<BlockingCollector>(gate)),
                                      Named("test_z_after", std::make_unique<SteadyCollector<4>>())));
  auto cfg = ConfigWithTimeout(300);

  const Clock::time_point start = Clock::now();
  auto stuck = engine->Collect(cfg);
  const double waited = Seconds(Clock::now() - start);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 0.8);

  // The collectors run side by side: the one after the stuck one finished too.
  ASSERT_NE(stuck->snapshot.Get<FakeFacts<1>>(), nullptr);
  ASSERT_NE(stuck->snapshot.Get<FakeFacts<4>>(), nullptr);
  EXPECT_TRUE(OutcomeOf(*stuck, "test_steady")->success);
  EXPECT_TRUE(OutcomeOf(*stuck, "test_z_after")->success);
  const CollectorOutcome* blocked = OutcomeOf(*stuck, "test_blocking");
  ASSERT_NE(blocked, nullptr);
  EXPECT_FALSE(blocked->success);
  EXPECT_EQ(blocked->errors, std::vector<std::string>{"collector test_blocking did not finish within 300ms"});
  // It ran from its start to the deadline: the 300 ms less the time its worker took to start it
  // after the collection began (11 ms once under ThreadSanitizer on a loaded machine).
  Clock::time_point entered_at;
  {
    std::lock_guard lock(gate->mu);
    entered_at = gate->entered_at;
  }
  EXPECT_GE(blocked->duration.count(), Seconds(start + std::chrono::milliseconds(300) - entered_at));
  EXPECT_LE(blocked->duration.count(), waited);
  ASSERT_EQ(stuck->verdicts.size(), 1u);  // checks ran over what is there
  EXPECT_EQ(stuck->verdicts[0].verdict, Verdict::kOk);
  EXPECT_EQ(engine->busy_collector(), "test_blocking");
  EXPECT_TRUE(engine->stuck());

  // While it is stuck, later collections do not wait for it and do not start it again; the others
  // are collected afresh.
  const Clock::time_point again = Clock::now();
  auto next = engine->Collect(ConfigWithTimeout(300));
  EXPECT_LT(Seconds(Clock::now() - again), 0.1);
  EXPECT_NE(next, stuck);
  EXPECT_EQ(next->snapshot.Get<FakeFacts<1>>()->run, 2);
  EXPECT_EQ(OutcomeOf(*next, "test_blocking")->errors,
            std::vector<std::string>{"collector test_blocking is still stuck in an earlier collection; not run"});
  const std::string text = engine->ScrapeText(cfg);
  EXPECT_NE(text.find("rdma_healthd_collection_timeouts_total{collector=\"test_blocking\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collection_timeouts_total{collector=\"test_steady\"} 0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_collector_success{collector=\"test_blocking\"} 0\n"), std::string::npos);

  // Released, it runs again in the next collection.
  gate->Open();
  const Clock::time_point release = Clock::now();
  while (engine->busy_collector() != "" && Clock::now() - release < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_FALSE(engine->stuck());
  auto fresh = engine->Collect(cfg);
  for (const auto& o : fresh->snapshot.outcomes) EXPECT_TRUE(o.success) << o.collector;
  EXPECT_EQ(fresh->snapshot.Get<BlockingFacts>()->run, 2);  // the stuck run's facts were dropped
  std::lock_guard lock(gate->mu);
  EXPECT_EQ(gate->entered, 2);
  EXPECT_EQ(gate->max_inside, 1);
}

// Discovery that hangs (a sysfs read stuck in a driver) until the gate opens; the first call
// answers at once with one device, so there is a last discovery to fall back on.
class BlockingTopology : public TopologySource {
 public:
  explicit BlockingTopology(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  Topology Discover(const NodeFs&, const Config&) override {
    Topology t;
    t.class_dir_present = true;
    t.devices.push_back(TopologyDevice{"rxe" + std::to_string(calls_), {}, {}, {}, 1, {}, {}, {}});
    if (calls_++ == 0) return t;
    std::unique_lock lock(gate_->mu);
    ++gate_->entered;
    gate_->cv.notify_all();
    gate_->cv.wait(lock, [&] { return gate_->open; });
    return t;
  }

 private:
  std::shared_ptr<Gate> gate_;
  int calls_ = 0;  // one discovery at a time: the engine never runs the stage twice at once
};

TEST(CollectionEngineDeadlineTest, StuckDiscoveryLeavesTheCollectorsTheLastTopologyAndHalfTheDeadline) {
  auto gate = std::make_shared<Gate>();
  EnginePlugins plugins;
  plugins.topology = std::make_unique<BlockingTopology>(gate);
  plugins.collectors = Collectors(Named("a_steady", std::make_unique<SteadyCollector<1>>()),
                                  Named("b_reader", std::make_unique<TopologyReadingCollector>()));
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto first = engine.Collect(ConfigWithTimeout(400));
  ASSERT_EQ(first->snapshot.Get<Topology>()->devices.at(0).name, "rxe0");

  const Clock::time_point start = Clock::now();
  auto stuck = engine.Collect(ConfigWithTimeout(400));
  const double waited = Seconds(Clock::now() - start);
  EXPECT_GE(waited, 0.19);  // the stage had half the deadline
  EXPECT_LT(waited, 0.39);  // and the collectors did not wait for the rest of it
  const Topology* topo = stuck->snapshot.Get<Topology>();
  ASSERT_NE(topo, nullptr);
  EXPECT_EQ(topo->devices.at(0).name, "rxe0");  // the last discovery
  EXPECT_EQ(topo->failure, std::optional<std::string>("device discovery did not finish within 200ms"));
  for (const auto& o : stuck->snapshot.outcomes) EXPECT_TRUE(o.success) << o.collector;
  ASSERT_NE(stuck->snapshot.Get<SeenFacts>(), nullptr);
  EXPECT_EQ(stuck->snapshot.Get<SeenFacts>()->topology_devices, 1u);
  EXPECT_EQ(stuck->snapshot.Get<FakeFacts<1>>()->run, 2);
  EXPECT_EQ(engine.busy_collector(), "topology");
  EXPECT_TRUE(engine.stuck());

  // Still stuck: not started again, and the collection does not wait for it at all.
  const Clock::time_point again = Clock::now();
  auto next = engine.Collect(ConfigWithTimeout(400));
  EXPECT_LT(Seconds(Clock::now() - again), 0.1);
  EXPECT_EQ(next->snapshot.Get<Topology>()->failure,
            std::optional<std::string>("device discovery is still stuck in an earlier collection"));
  EXPECT_EQ(next->snapshot.Get<FakeFacts<1>>()->run, 3);

  // Released: the late answer is not used for a collection that already ended; the next
  // collection discovers afresh.
  gate->Open();
  ASSERT_TRUE(WaitUntilIdle(engine));
  auto fresh = engine.Collect(ConfigWithTimeout(400));
  EXPECT_FALSE(fresh->snapshot.Get<Topology>()->failure.has_value());
  EXPECT_EQ(fresh->snapshot.Get<Topology>()->devices.at(0).name, "rxe2");
  EXPECT_FALSE(engine.stuck());
}

TEST(CollectionEngineTest, ACollectionWithEveryCollectorDisabledEndsWhenDiscoveryDoes) {
  EnginePlugins plugins;
  plugins.topology = std::make_unique<FixedTopology>();
  plugins.collectors = Collectors(Named("a_steady", std::make_unique<SteadyCollector<1>>()));
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto cfg = ConfigWithTimeout(5000);
  cfg->collectors["a_steady"] = false;
  const Clock::time_point start = Clock::now();
  auto report = engine.Collect(cfg);
  EXPECT_LT(Seconds(Clock::now() - start), 0.04);  // not at the next look at the lanes, 50 ms on
  ASSERT_NE(report->snapshot.Get<Topology>(), nullptr);
  EXPECT_EQ(report->snapshot.Get<Topology>()->devices.size(), 1u);
  EXPECT_TRUE(report->snapshot.outcomes.empty());
}

// Records the thread each run is on.
template <int N>
class ThreadRecordingCollector : public Collector {
 public:
  explicit ThreadRecordingCollector(std::shared_ptr<std::vector<std::thread::id>> seen) : seen_(std::move(seen)) {}
  Status Collect(const CollectContext&, Snapshot&, CollectorOutcome&) override {
    seen_->push_back(std::this_thread::get_id());  // one at a time: the engine orders the runs
    return Status::Ok();
  }
  void Render(const Snapshot&, MetricSink&) const override {}

 private:
  std::shared_ptr<std::vector<std::thread::id>> seen_;
};

// Waking a thread per collector cost a futex round trip and a context switch each, every scrape:
// when no plug-in is slow, one thread runs the whole collection, the same one every time.
TEST(CollectionEngineTest, QuickCollectorsShareOneLaneAcrossCollections) {
  auto seen = std::make_shared<std::vector<std::thread::id>>();
  EnginePlugins plugins;
  plugins.topology = std::make_unique<FixedTopology>();
  plugins.collectors = Collectors(Named("a", std::make_unique<ThreadRecordingCollector<1>>(seen)),
                                  Named("b", std::make_unique<ThreadRecordingCollector<2>>(seen)),
                                  Named("c", std::make_unique<ThreadRecordingCollector<3>>(seen)));
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  for (int i = 0; i < 3; ++i) {
    auto report = engine.Collect(ConfigWithTimeout(5000));
    for (const auto& o : report->snapshot.outcomes) EXPECT_TRUE(o.success) << o.collector;
  }
  ASSERT_EQ(seen->size(), 9u);
  for (const std::thread::id& id : *seen) EXPECT_EQ(id, seen->front());
  EXPECT_NE(seen->front(), std::this_thread::get_id());  // never the caller's: it must keep its deadline
}

// Collections run on threads named "collect" (common/thread_name.h), so `top -H` and
// /proc/PID/task/*/comm tell an operator when collection is what keeps the daemon busy.
class ThreadNameCollector : public Collector {
 public:
  explicit ThreadNameCollector(std::shared_ptr<std::string> name) : name_(std::move(name)) {}
  Status Collect(const CollectContext&, Snapshot&, CollectorOutcome&) override {
    char buf[16] = {};
    ::pthread_getname_np(::pthread_self(), buf, sizeof buf);
    *name_ = buf;
    return Status::Ok();
  }
  void Render(const Snapshot&, MetricSink&) const override {}

 private:
  std::shared_ptr<std::string> name_;
};

TEST(CollectionEngineTest, CollectorsRunOnAThreadNamedCollect) {
  auto name = std::make_shared<std::string>();
  EnginePlugins plugins;
  plugins.topology = std::make_unique<FixedTopology>();
  plugins.collectors = Collectors(Named("a", std::make_unique<ThreadNameCollector>(name)));
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  (void)engine.Collect(ConfigWithTimeout(5000));
  EXPECT_EQ(*name, "collect");
}

TEST(CollectionEngineDeadlineTest, ConcurrentCallersShareOneDeadline) {
  auto gate = std::make_shared<Gate>();
  auto engine = EngineWith(Collectors(Named("test_blocking", std::make_unique<BlockingCollector>(gate))));
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
  auto engine = EngineWith(Collectors(Named("test_steady", std::make_unique<SteadyCollector<1>>()),
                                      Named("test_blocking", std::make_unique<BlockingCollector>(gate))));
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
  // The other collector, running beside it, either finished (facts kept) or was cut off too.
  const CollectorOutcome* steady = OutcomeOf(*report, "test_steady");
  ASSERT_NE(steady, nullptr);
  EXPECT_EQ(steady->success, report->snapshot.Get<FakeFacts<1>>() != nullptr);
  if (!steady->success) {
    EXPECT_EQ(steady->errors, std::vector<std::string>{"collector test_steady did not finish before shutdown"});
  }
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
  auto engine = EngineWith(Collectors(Named("test_blocking", std::make_unique<BlockingCollector>(gate))));
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
  // The worker returns, leaves, and frees the collector it kept alive.
  EXPECT_TRUE(gate->WaitFor([&] { return gate->collector_destroyed; }));
}

// ---------------------------------------------------------------------------------------------
// Probes: scheduled producers whose latest results every collection carries.

struct PingFacts {
  int round = 0;
};

class CountingProbe : public Probe {
 public:
  explicit CountingProbe(std::shared_ptr<std::atomic<int>> rounds, bool throw_on_second = false)
      : rounds_(std::move(rounds)), throw_on_second_(throw_on_second) {}
  std::chrono::milliseconds Interval(const Config&) const override { return milliseconds(20); }
  void RunRound(const ProbeContext&, ProbeBoard& board) override {
    const int round = ++*rounds_;
    if (throw_on_second_ && round == 2) throw std::runtime_error("peer went away");
    board.Publish(PingFacts{round});
  }
  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    if (const auto* f = snapshot.Get<PingFacts>()) sink.Gauge("test_probe_round", "round").Add({}, f->round);
  }

 private:
  std::shared_ptr<std::atomic<int>> rounds_;
  bool throw_on_second_;
};

class PingCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* f = snapshot.Get<PingFacts>();
    out.push_back({"", "peer", f ? Verdict::kOk : Verdict::kUnknown, f ? "answered" : "no round yet", ""});
  }
};

bool WaitUntil(const std::function<bool()>& pred) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

TEST(CollectionEngineProbeTest, ProbeResultsReachSnapshotsChecksAndMetrics) {
  auto rounds = std::make_shared<std::atomic<int>>(0);
  EnginePlugins plugins;
  plugins.probes.push_back({"test_ping", std::make_unique<CountingProbe>(rounds, /*throw_on_second=*/true)});
  plugins.checks.push_back({"test_ping_check", std::make_unique<PingCheck>()});
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto cfg = ConfigWithTimeout(5000);

  // Not started: no results, the check says unknown.
  auto before = engine.Collect(cfg);
  EXPECT_EQ(before->snapshot.Get<PingFacts>(), nullptr);
  ASSERT_EQ(before->verdicts.size(), 1u);
  EXPECT_EQ(before->verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(engine.probe_names(), std::vector<std::string>{"test_ping"});

  engine.RunProbes(cfg);
  // Round 2 throws; the probe goes on to round 3 and later.
  ASSERT_TRUE(WaitUntil([&] { return *rounds >= 4; }));
  auto after = engine.Collect(ConfigWithTimeout(5000));
  const auto* ping = after->snapshot.Get<PingFacts>();
  ASSERT_NE(ping, nullptr);
  EXPECT_GE(ping->round, 3);
  ASSERT_EQ(after->verdicts.size(), 1u);
  EXPECT_EQ(after->verdicts[0].check, "test_ping_check");
  EXPECT_EQ(after->verdicts[0].verdict, Verdict::kOk);
  MetricSink sink;
  EXPECT_TRUE(engine.Render(*after, sink).empty());
  EXPECT_NE(sink.Serialize().find("test_probe_round " + std::to_string(ping->round) + "\n"), std::string::npos);

  // Disabled by a new config: its last results leave the collections at once (no frozen metrics or
  // verdicts), and the rounds stop.
  auto off = ConfigWithTimeout(5000);
  off->probes["test_ping"] = false;
  auto disabled = engine.Collect(off);
  EXPECT_EQ(disabled->snapshot.Get<PingFacts>(), nullptr);
  ASSERT_EQ(disabled->verdicts.size(), 1u);
  EXPECT_EQ(disabled->verdicts[0].verdict, Verdict::kUnknown);
  engine.RunProbes(off);
  std::this_thread::sleep_for(milliseconds(60));  // a round in progress may still finish
  const int stopped_at = *rounds;
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(*rounds, stopped_at);
}

TEST(ProbeSchedulerTest, ThrowingRoundIsCountedAndTheProbeRunsOn) {
  auto rounds = std::make_shared<std::atomic<int>>(0);
  std::vector<Instance<Probe>> probes;
  probes.push_back({"test_ping", std::make_unique<CountingProbe>(rounds, /*throw_on_second=*/true)});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  scheduler.Configure(ConfigWithTimeout(5000));
  ASSERT_TRUE(WaitUntil([&] { return scheduler.counts("test_ping").rounds >= 3; }));
  const ProbeScheduler::Counts c = scheduler.counts("test_ping");
  EXPECT_EQ(c.failed, 1u);
  Snapshot s;
  scheduler.CopyInto(s, *ConfigWithTimeout(5000));
  ASSERT_NE(s.Get<PingFacts>(), nullptr);
  EXPECT_GE(s.Get<PingFacts>()->round, 3);
}

// ---------------------------------------------------------------------------------------------
// The registry every kind shares.

struct Widget {
  virtual ~Widget() = default;
};

TEST(RegistryTest, NamesAreUniqueNonEmptyAndInNameOrder) {
  Registry<Widget> r;
  auto make = [] { return std::make_unique<Widget>(); };
  EXPECT_TRUE(r.Add({"zeta", "last", make}).ok());
  EXPECT_TRUE(r.Add({"alpha", "first", make}).ok());
  Status twice = r.Add({"zeta", "again", make});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "plug-in zeta registered twice");
  EXPECT_FALSE(r.Add({"", "nameless", make}).ok());
  EXPECT_FALSE(r.Add({"nofactory", "x", nullptr}).ok());
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"alpha", "zeta"}));
  EXPECT_EQ(r.Find("alpha")->description, "first");
  EXPECT_EQ(r.Find("beta"), nullptr);
  auto some = r.Instantiate([](const std::string& name) { return name != "alpha"; });
  ASSERT_EQ(some.size(), 1u);
  EXPECT_EQ(some[0].name, "zeta");
  EXPECT_NE(some[0].impl, nullptr);
}

TEST(RegistryDeathTest, DoubleRegistrationStopsTheBinaryNamingThePlugin) {
  Registry<Widget> r;
  auto make = [] { return std::make_unique<Widget>(); };
  internal::RegisterOrDie(r, {"gizmo", "", make});
  EXPECT_DEATH(internal::RegisterOrDie(r, {"gizmo", "", make}), "rdma-healthd: plug-in gizmo registered twice");
}

// history.max_series: parsed with the walker's bounds and position, and applied to the engine's
// history at the next collection.
TEST(CollectionEngineTest, HistoryMaxSeriesIsReadAndAppliedAtTheNextCollection) {
  Result<Config> bad = ParseConfig("history:\n  max_series: 100\n", "t.yaml", PluginNames{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("t.yaml:2:15"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("1024"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(ParseConfig("history:\n  max_serie: 2048\n", "t.yaml", PluginNames{}).ok());

  Result<Config> good = ParseConfig("history:\n  max_series: 2048\n", "t.yaml", PluginNames{});
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->Section<HistoryPolicy>().max_series, 2048u);
  EXPECT_EQ(Config{}.Section<HistoryPolicy>().max_series, History::Limits{}.max_series);

  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), {"test_counting"});
  engine.ScrapeText(std::make_shared<Config>(std::move(*good)));
  EXPECT_EQ(engine.history().limits().max_series, 2048u);
}

}  // namespace
}  // namespace rdmahd
