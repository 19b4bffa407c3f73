#include "core/probe_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool WaitUntil(const std::function<bool()>& pred) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

// A probe whose second round throws; every round takes `round_time`. It has work while the config
// names a peer target (as the `peers` probe does), and its first round waits for `gate` when set.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return open; });
  }
};

class FlakyProbe : public Probe {
 public:
  FlakyProbe(milliseconds round_time, std::shared_ptr<Gate> gate = nullptr)
      : round_time_(round_time), gate_(std::move(gate)) {}
  std::chrono::milliseconds Interval(const Config&) const override { return milliseconds(5); }
  void RunRound(const ProbeContext&, ProbeBoard&) override {
    const int round = ++rounds_;
    if (round == 1 && gate_) gate_->Wait();
    std::this_thread::sleep_for(round_time_);
    if (round == 2) throw std::runtime_error("peer table corrupt");
  }
  void Render(const Snapshot&, MetricSink&) const override {}
  bool HasWork(const Config& config) const override { return !config.Section<PeersPolicy>().targets.empty(); }

 private:
  milliseconds round_time_;
  std::shared_ptr<Gate> gate_;
  int rounds_ = 0;
};

std::shared_ptr<Config> ConfigWithTargets() {
  auto c = std::make_shared<Config>();
  c->Section<PeersPolicy>().targets = {"192.0.2.1"};
  return c;
}

const ProbeRoundOutcome* Find(const Snapshot& s, const std::string& probe) {
  const auto* facts = s.Get<ProbeRoundFacts>();
  if (facts == nullptr) return nullptr;
  for (const ProbeRoundOutcome& o : facts->probes) {
    if (o.probe == probe) return &o;
  }
  return nullptr;
}

// A round that throws is a failed round with its message, timed like the others, and the probe
// goes on: every collection carries the count, not only the scheduler's own bookkeeping.
TEST(ProbeSchedulerTest, AThrowingRoundIsCountedTimedAndCopiedWithItsMessage) {
  std::vector<Instance<Probe>> probes;
  probes.push_back({"test_flaky", std::make_unique<FlakyProbe>(milliseconds(3))});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  auto config = ConfigWithTargets();
  scheduler.Configure(config);
  ASSERT_TRUE(WaitUntil([&] { return scheduler.counts("test_flaky").rounds >= 3; }));
  scheduler.Stop();

  Snapshot s;
  scheduler.CopyInto(s, *config);
  const ProbeRoundOutcome* o = Find(s, "test_flaky");
  ASSERT_NE(o, nullptr);
  EXPECT_GE(o->rounds, 3u);
  EXPECT_EQ(o->failed, 1u);
  EXPECT_FALSE(o->last_failed);  // the rounds after the second one returned
  EXPECT_EQ(o->last_error, "peer table corrupt");
  EXPECT_GE(o->last_duration, milliseconds(3));
  EXPECT_LT(o->last_duration, std::chrono::seconds(5));
}

// Round outcomes show only for a probe the config enables and gives work, from the end of its
// first round: a node that does not use a probe exports nothing for it.
TEST(ProbeSchedulerTest, OnlyEnabledProbesWithWorkReportTheirRoundsOnceOneEnded) {
  auto gate = std::make_shared<Gate>();
  std::vector<Instance<Probe>> probes;
  probes.push_back({"test_flaky", std::make_unique<FlakyProbe>(milliseconds(0), gate)});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  auto with_work = ConfigWithTargets();
  scheduler.Configure(with_work);
  {
    Snapshot first_round_running;
    scheduler.CopyInto(first_round_running, *with_work);
    EXPECT_EQ(Find(first_round_running, "test_flaky"), nullptr);
  }
  gate->Open();
  ASSERT_TRUE(WaitUntil([&] { return scheduler.counts("test_flaky").rounds >= 1; }));

  Snapshot reported;
  scheduler.CopyInto(reported, *with_work);
  EXPECT_NE(Find(reported, "test_flaky"), nullptr);

  Config idle;  // no targets: nothing to measure
  Snapshot without_work;
  scheduler.CopyInto(without_work, idle);
  EXPECT_EQ(Find(without_work, "test_flaky"), nullptr);

  Config off = *with_work;
  off.probes["test_flaky"] = false;
  Snapshot disabled;
  scheduler.CopyInto(disabled, off);
  EXPECT_EQ(Find(disabled, "test_flaky"), nullptr);
}

TEST(ProbeSchedulerTest, RoundOutcomesRenderAsTheProbeFamilies) {
  Snapshot s;
  ProbeRoundOutcome o;
  o.probe = "peers";
  o.rounds = 7;
  o.failed = 2;
  o.last_failed = true;
  o.last_duration = milliseconds(250);
  o.last_error = "out of memory";
  s.Put(ProbeRoundFacts{{o}});
  MetricSink sink;
  RenderProbeRounds(s, sink);
  EXPECT_EQ(sink.Serialize(),
            "# HELP rdma_healthd_probe_success 1 if the probe's last round ended normally, 0 if it threw.\n"
            "# TYPE rdma_healthd_probe_success gauge\n"
            "rdma_healthd_probe_success{probe=\"peers\"} 0\n"
            "# HELP rdma_healthd_probe_duration_seconds Wall time of the probe's last round.\n"
            "# TYPE rdma_healthd_probe_duration_seconds gauge\n"
            "rdma_healthd_probe_duration_seconds{probe=\"peers\"} 0.25\n"
            "# HELP rdma_healthd_probe_rounds_total Rounds the probe ended since the daemon started.\n"
            "# TYPE rdma_healthd_probe_rounds_total counter\n"
            "rdma_healthd_probe_rounds_total{probe=\"peers\"} 7\n"
            "# HELP rdma_healthd_probe_failed_rounds_total Rounds of the probe that threw since the daemon "
            "started (the log says why).\n"
            "# TYPE rdma_healthd_probe_failed_rounds_total counter\n"
            "rdma_healthd_probe_failed_rounds_total{probe=\"peers\"} 2\n");

  // No probe reporting (none enabled with work, or none ended a round): nothing at all.
  MetricSink empty;
  RenderProbeRounds(Snapshot{}, empty);
  Snapshot none;
  none.Put(ProbeRoundFacts{});
  RenderProbeRounds(none, empty);
  EXPECT_EQ(empty.Serialize(), "");
}

}  // namespace
}  // namespace rdmahd
