#include "probes/peer_probe.h"

#include "core/check.h"

#include <dirent.h>
#include <malloc.h>
#include <prometheus/histogram.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common/node_fs.h"
#include "core/check.h"
#include "core/collection_engine.h"
#include "core/probe_scheduler.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Scripted outcomes shared between a test and the FakeProber the probe owns (and its thread).
struct Script {
  std::mutex mu;
  std::map<std::string, std::deque<ProbeOutcome<LatencySamples>>> latency;  // per peer; then `fallback`
  std::map<std::string, std::deque<ProbeOutcome<BandwidthResult>>> bandwidth;
  std::vector<std::pair<std::string, Clock::time_point>> latency_calls;
  std::vector<std::string> bandwidth_calls;
  std::vector<PeerEndpoint> endpoints;
  milliseconds delay{0};
  int in_call = 0;
  int max_in_call = 0;

  // {1..9, 100} us: perftest stats min 1, typical 4.5, p99 9, p99.9 9, max 9 (latency_stats_test).
  static LatencySamples Default() {
    LatencySamples s;
    s.half_round_trip_us = {5, 3, 9, 1, 7, 2, 8, 4, 6, 100};
    return s;
  }
  std::size_t Calls(const std::string& peer) {
    std::lock_guard lock(mu);
    return static_cast<std::size_t>(std::count_if(latency_calls.begin(), latency_calls.end(),
                                                  [&](const auto& c) { return c.first == peer; }));
  }
};

class FakeProber : public PeerProber {
 public:
  explicit FakeProber(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  ProbeOutcome<LatencySamples> Latency(const PeerEndpoint& peer, const ProbeSource&, const LatencyRequest&,
                                       const std::atomic<bool>&) override {
    ProbeOutcome<LatencySamples> out = Script::Default();
    milliseconds delay;
    {
      std::lock_guard lock(s_->mu);
      s_->latency_calls.emplace_back(peer.name, Clock::now());
      s_->endpoints.push_back(peer);
      s_->max_in_call = std::max(s_->max_in_call, ++s_->in_call);
      auto& q = s_->latency[peer.name];
      if (!q.empty()) {
        out = std::move(q.front());
        q.pop_front();
      }
      delay = s_->delay;
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    std::lock_guard lock(s_->mu);
    --s_->in_call;
    return out;
  }
  ProbeOutcome<BandwidthResult> Bandwidth(const PeerEndpoint& peer, const ProbeSource&, const BandwidthRequest&,
                                          const std::atomic<bool>&) override {
    std::lock_guard lock(s_->mu);
    s_->bandwidth_calls.push_back(peer.name);
    s_->max_in_call = std::max(s_->max_in_call, s_->in_call + 1);
    auto& q = s_->bandwidth[peer.name];
    if (!q.empty()) {
      auto out = std::move(q.front());
      q.pop_front();
      return out;
    }
    return BandwidthResult{12'500'000'000, 1.0};  // 100 Gb/s
  }

 private:
  std::shared_ptr<Script> s_;
};

class FakeResolver : public AddressResolver {
 public:
  explicit FakeResolver(std::map<std::string, std::string> names) : names_(std::move(names)) {}
  Result<std::string> Resolve(const std::string& target, milliseconds) override {
    auto it = names_.find(target);
    if (it == names_.end()) return Error{target + ": Name or service not known"};
    return it->second;
  }

 private:
  std::map<std::string, std::string> names_;
};

struct Harness {
  std::shared_ptr<Script> script = std::make_shared<Script>();
  PeerProbe probe;
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};

  explicit Harness(std::map<std::string, std::string> names = {})
      : probe(PeerProbe::Options{[s = script] { return std::make_unique<FakeProber>(s); },
                                 [names] { return std::make_unique<FakeResolver>(names); }, 42, {}, {}, {}}) {}

  void Round(const Config& config) { probe.RunRound(ProbeContext{fs, config, stopping}, board); }

  // Runs rounds (as the scheduler would, every few ms) until `done` or 5 s.
  template <class Pred>
  bool RunUntil(const Config& config, Pred done) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      Round(config);
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return false;
  }

  std::string Metrics() const {
    Snapshot snap;
    board.CopyInto(snap);
    MetricSink sink;
    probe.Render(snap, sink);
    return sink.Serialize();
  }
  const PeerFacts* Facts(Snapshot& snap) const {
    board.CopyInto(snap);
    return snap.Get<PeerFacts>();
  }
};

Config PeersConfig(std::vector<std::string> targets, milliseconds interval = milliseconds(100)) {
  Config c;
  c.peers.targets = std::move(targets);
  c.peers.interval = interval;
  return c;
}

TEST(PeerProbeTest, LatencyRoundBecomesQuantileGaugesHistogramAndCounters) {
  Harness h;
  Config c = PeersConfig({"10.0.0.2"});
  c.peers.port = 18601;
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.2") >= 1; }));
  {
    std::lock_guard lock(h.script->mu);
    EXPECT_EQ(h.script->endpoints.front().address, "10.0.0.2");
    EXPECT_EQ(h.script->endpoints.front().port, 18601);
  }
  const std::string m = h.Metrics();
  // perftest statistics of {1..9,100} us, in seconds.
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0\"} 1e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.5\"} 4.5e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.99\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"0.999\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_quantile_seconds{peer=\"10.0.0.2\",quantile=\"1\"} 9e-06\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_clock_info{peer=\"10.0.0.2\",clock=\"steady\"} 1\n"));
  // Every sample of the round in the histogram (10 of them: 1,2 <= 2us; 1..5 <= 5us; 1..9 <= 10us;
  // 100 us only in le=0.0001), counted with prometheus-cpp's upper-inclusive buckets.
  EXPECT_THAT(m, HasSubstr("# TYPE rdma_peer_latency_seconds histogram\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"1e-06\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"2e-06\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"5e-06\"} 5\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"1e-05\"} 9\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"5e-05\"} 9\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"0.0001\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_bucket{peer=\"10.0.0.2\",le=\"+Inf\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_latency_seconds_count{peer=\"10.0.0.2\"} 10\n"));
  EXPECT_THAT(m, HasSubstr("rdma_peer_probes_total{peer=\"10.0.0.2\",kind=\"latency\",result=\"success\",reason=\"\"} 1\n"));
  // Bandwidth is off by default: no stream, no series.
  EXPECT_THAT(m, Not(HasSubstr("rdma_peer_bandwidth_bytes_per_second")));
  std::lock_guard lock(h.script->mu);
  EXPECT_TRUE(h.script->bandwidth_calls.empty());
}

TEST(PeerProbeTest, FailuresAreCountedByReasonAndRecoveryClearsTheLastFailure) {
  Harness h;
  Config c = PeersConfig({"10.0.0.3"});
  {
    std::lock_guard lock(h.script->mu);
    auto& q = h.script->latency["10.0.0.3"];
    q.push_back(ProbeFailure{"connect_timeout", "10.0.0.3: no answer to the connect within 1000ms"});
    q.push_back(ProbeFailure{"wc_retry_exc_err", "10.0.0.3: send completion: transport retry counter exceeded"});
    q.push_back(ProbeFailure{"stopped", "10.0.0.3: stopped"});  // the daemon stopping: not counted
    q.push_back(ProbeFailure{"Weird Reason 42", "10.0.0.3: a prober bug"});  // kept out of the label
  }
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.3") >= 2; }));
  Snapshot snap;
  const PeerFacts* f = h.Facts(snap);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->peers.size(), 1u);
  EXPECT_EQ(f->peers[0]->last_latency, PeerProbeResult::kFailure);
  ASSERT_TRUE(f->peers[0]->latency_failure);
  EXPECT_EQ(f->peers[0]->latency_failure->reason, "wc_retry_exc_err");
  std::string m = h.Metrics();
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"connect_timeout\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"wc_retry_exc_err\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"success\",reason=\"\"} 0\n"));
  // No round succeeded: no quantiles yet.
  EXPECT_THAT(m, Not(HasSubstr("rdma_peer_latency_quantile_seconds")));

  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.3") >= 5; }));
  m = h.Metrics();
  EXPECT_THAT(m, Not(HasSubstr("reason=\"stopped\"")));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"failure\",reason=\"other\"} 1\n"));
  EXPECT_THAT(m, Not(HasSubstr("Weird")));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"latency\",result=\"success\",reason=\"\"} 1\n"));
  Snapshot snap2;
  f = h.Facts(snap2);
  EXPECT_EQ(f->peers[0]->last_latency, PeerProbeResult::kSuccess);
  EXPECT_FALSE(f->peers[0]->latency_failure);
}

TEST(PeerProbeTest, ANameThatDoesNotResolveIsAProbeFailureNotAConfigError) {
  Harness h(std::map<std::string, std::string>{{"node-b.example", "192.0.2.7"}});
  Config c = PeersConfig({"node-b.example", "gone.example"});
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("node-b.example") >= 1; }));
  ASSERT_TRUE(h.RunUntil(c, [&] {
    return h.Metrics().find("peer=\"gone.example\",kind=\"latency\",result=\"failure\",reason=\"address_resolution\"} 1") !=
           std::string::npos;
  }));
  // The resolved address is what the prober is given; the configured name stays the label.
  std::lock_guard lock(h.script->mu);
  for (const auto& e : h.script->endpoints) {
    EXPECT_EQ(e.name, "node-b.example");  // gone.example never reaches the prober
    EXPECT_EQ(e.address, "192.0.2.7");
  }
}

TEST(PeerProbeTest, ReconciliationKeepsUnchangedPeersAndDropsRemovedOnesSeries) {
  Harness h;
  Config before = PeersConfig({"10.0.0.1", "10.0.0.2"}, milliseconds(200));
  ASSERT_TRUE(h.RunUntil(before, [&] { return h.script->Calls("10.0.0.1") >= 1 && h.script->Calls("10.0.0.2") >= 1; }));
  const auto due = h.probe.next_latency_due("10.0.0.2");
  ASSERT_TRUE(due);
  const std::size_t calls = h.script->Calls("10.0.0.2");

  Config after = PeersConfig({"10.0.0.2", "10.0.0.3"}, milliseconds(200));
  h.Round(after);
  EXPECT_EQ(h.probe.peer_count(), 2u);
  if (h.script->Calls("10.0.0.2") == calls) {
    // Not due during that round: the schedule is exactly the one it had.
    EXPECT_EQ(h.probe.next_latency_due("10.0.0.2"), due);
  }
  EXPECT_FALSE(h.probe.next_latency_due("10.0.0.1"));
  const std::string m = h.Metrics();
  EXPECT_THAT(m, Not(HasSubstr("peer=\"10.0.0.1\"")));
  // Counters and histogram carried over: at least the rounds before the reload.
  Snapshot snap;
  const PeerFacts* f = h.Facts(snap);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->peers.size(), 2u);
  EXPECT_EQ(f->peers[0]->name, "10.0.0.2");
  EXPECT_GE(f->peers[0]->histogram.count, 10u * calls);
  EXPECT_EQ(f->peers[1]->name, "10.0.0.3");
}

TEST(PeerProbeTest, FirstRoundsAreSpreadOverTheIntervalAndThenKeepItsRate) {
  Harness h;
  std::vector<std::string> targets;
  for (int i = 0; i < 100; ++i) targets.push_back("10.1.0." + std::to_string(i));
  Config c = PeersConfig(targets, milliseconds(400));
  const auto start = Clock::now();
  h.Round(c);
  std::vector<double> phase;
  for (const auto& t : targets) {
    auto due = h.probe.next_latency_due(t);
    ASSERT_TRUE(due);
    phase.push_back(std::chrono::duration<double>(*due - start).count());
  }
  std::sort(phase.begin(), phase.end());
  EXPECT_GE(phase.front(), -0.001);
  EXPECT_LT(phase.back(), 0.401);
  // Uniform over 400 ms: the 100 first rounds are not bunched in any 100 ms.
  EXPECT_GT(phase[74] - phase[25], 0.1);
}

TEST(PeerProbeTest, TargetsFileIsReadReReadOnChangeAndABadFileKeepsTheLastGoodList) {
  testing::TempDir dir;
  dir.Write("peers.yaml", "- targets: [10.0.0.5, 10.0.0.6]\n  labels: {rack: r1}\n");
  Harness h;
  Config c = PeersConfig({"10.0.0.9"});
  c.peers.file = dir.path() + "/peers.yaml";
  h.Round(c);
  EXPECT_EQ(h.probe.peer_count(), 3u);
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.script->Calls("10.0.0.5") >= 1; }));
  EXPECT_THAT(h.Metrics(), HasSubstr("rdma_peer_probes_total{peer=\"10.0.0.5\",rack=\"r1\",kind=\"latency\""));

  // A bad file: the last good list stays and the facts say why.
  std::this_thread::sleep_for(milliseconds(10));  // a new mtime even on coarse clocks
  dir.Write("peers.yaml", "- targets: [10.0.0.5\n");
  ASSERT_TRUE(h.RunUntil(c, [&] {
    Snapshot s;
    const PeerFacts* f = h.Facts(s);
    return f != nullptr && !f->targets_file_error.empty();
  }));
  EXPECT_EQ(h.probe.peer_count(), 3u);
  Snapshot s;
  EXPECT_THAT(h.Facts(s)->targets_file_error, HasSubstr("peers.yaml:"));
  auto verdicts = RunRegisteredCheck("peer_reachable", s, c);
  EXPECT_TRUE(std::any_of(verdicts.begin(), verdicts.end(), [](const CheckResult& r) {
    return r.verdict == Verdict::kWarning && r.subject.rfind("file ", 0) == 0;
  }));

  // Fixed: re-read, 10.0.0.6 removed, its series gone; 10.0.0.5's schedule kept.
  const auto due5 = h.probe.next_latency_due("10.0.0.5");
  dir.Write("peers.yaml", "[{\"targets\": [\"10.0.0.5\"], \"labels\": {\"rack\": \"r1\"}}]\n");
  ASSERT_TRUE(h.RunUntil(c, [&] { return h.probe.peer_count() == 2u; }));
  EXPECT_THAT(h.Metrics(), Not(HasSubstr("10.0.0.6")));
  Snapshot s2;
  EXPECT_EQ(h.Facts(s2)->targets_file_error, "");
  EXPECT_TRUE(h.probe.next_latency_due("10.0.0.5"));
  static_cast<void>(due5);
}

// A targets file rewritten 50 times a second, whose checks cost (on a fake CPU clock) 300 ms each:
// the next check waits 10 x 300 ms, not the 1 s minimum, so the rewrites in between cost nothing,
// and the check after the wait takes the latest version in one read.
TEST(PeerProbeTest, RewritesOfAnExpensiveTargetsFileAreCoalescedByItsCost) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/peers.yaml";
  auto version = [](int n) { return "- targets: [10.9.0." + std::to_string(n) + "]\n"; };
  auto write = [&](int n) {
    std::ofstream(path + ".new") << version(n);
    ASSERT_EQ(std::rename((path + ".new").c_str(), path.c_str()), 0);  // a new inode, as orchestrators write
  };
  write(0);
  auto cpu = std::make_shared<std::chrono::nanoseconds>(0);
  auto script = std::make_shared<Script>();
  PeerProbe::Options options{[s = script] { return std::make_unique<FakeProber>(s); },
                             [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); }, 42, {}, {}, {}};
  options.thread_cpu_time = [cpu] { return *cpu += milliseconds(300); };  // every check costs 300 ms
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c;
  c.peers.file = path;
  c.peers.interval = std::chrono::hours(1);
  auto round = [&] { probe.RunRound(ProbeContext{fs, c, stopping}, board); };

  const auto start = Clock::now();
  round();
  ASSERT_EQ(probe.targets_file_reads(), 1u);
  ASSERT_TRUE(probe.next_latency_due("10.9.0.0"));
  int written = 0;
  while (Clock::now() - start < milliseconds(2500)) {  // 50 rewrites a second, a round every 10 ms
    if (Clock::now() - start >= milliseconds(20 * (written + 1))) write(++written % 250);
    round();
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GE(written, 60);
  EXPECT_EQ(probe.targets_file_reads(), 1u) << "re-read while the last check's cost says wait";
  EXPECT_TRUE(probe.next_latency_due("10.9.0.0"));
  const std::string latest = "10.9.0." + std::to_string(written % 250);
  while (!probe.next_latency_due(latest) && Clock::now() - start < std::chrono::seconds(6)) {
    round();
    std::this_thread::sleep_for(milliseconds(10));
  }
  const auto taken = Clock::now() - start;
  EXPECT_TRUE(probe.next_latency_due(latest));
  EXPECT_EQ(probe.peer_count(), 1u);
  EXPECT_EQ(probe.targets_file_reads(), 2u);  // every rewrite since, in one read
  EXPECT_GE(taken, milliseconds(2990));       // 10 x 300 ms after the first check
  EXPECT_LT(taken, milliseconds(4500));       // and then at the next round (a loaded machine: later)
}

TEST(PeerProbeTest, BandwidthStreamsRunOnlyWhenEnabledAndNeverAlongsideALatencyProbe) {
  Harness h;
  Config c = PeersConfig({"10.0.0.2", "10.0.0.3"});
  c.peers.bandwidth = true;
  c.peers.bandwidth_interval = milliseconds(200);
  {
    std::lock_guard lock(h.script->mu);
    h.script->bandwidth["10.0.0.3"].push_back(ProbeFailure{"rejected", "10.0.0.3: the responder refused"});
  }
  ASSERT_TRUE(h.RunUntil(c, [&] {
    std::lock_guard lock(h.script->mu);
    return h.script->bandwidth_calls.size() >= 4;
  }));
  const std::string m = h.Metrics();
  EXPECT_THAT(m, HasSubstr("rdma_peer_bandwidth_bytes_per_second{peer=\"10.0.0.2\"} 12500000000\n"));
  EXPECT_THAT(m, HasSubstr("{peer=\"10.0.0.3\",kind=\"bandwidth\",result=\"failure\",reason=\"rejected\"} 1\n"));
  {
    std::lock_guard lock(h.script->mu);
    EXPECT_EQ(h.script->max_in_call, 1);
  }
  // Turned off: no more streams, and the last figure is no longer exported as current.
  c.peers.bandwidth = false;
  h.Round(c);
  const std::size_t streams = [&] {
    std::lock_guard lock(h.script->mu);
    return h.script->bandwidth_calls.size();
  }();
  std::this_thread::sleep_for(milliseconds(450));
  h.Round(c);
  EXPECT_THAT(h.Metrics(), Not(HasSubstr("rdma_peer_bandwidth_bytes_per_second")));
  std::lock_guard lock(h.script->mu);
  EXPECT_EQ(h.script->bandwidth_calls.size(), streams);
}

// Slow peers (each probe 150 ms, all due at once) cost rounds their budget, not more: a round
// returns after about a second so a new config applies, and the peers left over run next round.
// Stopping ends a round before its next probe.
TEST(PeerProbeTest, SlowPeersKeepRoundsWithinTheirBudgetAndStopEndsARound) {
  Harness h;
  std::vector<std::string> targets;
  for (int i = 0; i < 20; ++i) targets.push_back("10.4.0." + std::to_string(i));
  Config c = PeersConfig(targets, milliseconds(100));
  h.Round(c);  // reconcile: every first round is due within 100 ms
  std::this_thread::sleep_for(milliseconds(120));
  {
    std::lock_guard lock(h.script->mu);
    h.script->delay = milliseconds(150);
  }
  auto start = Clock::now();
  h.Round(c);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, PeerProbe::kRoundBudget);
  EXPECT_LT(took, PeerProbe::kRoundBudget + milliseconds(400));
  const std::size_t first = [&] {
    std::lock_guard lock(h.script->mu);
    return h.script->latency_calls.size();
  }();
  EXPECT_GE(first, 6u);
  EXPECT_LE(first, 9u);
  // The next round picks up where this one stopped (earliest due first: peers not yet probed).
  h.Round(c);
  std::set<std::string> probed;
  {
    std::lock_guard lock(h.script->mu);
    for (const auto& [peer, at] : h.script->latency_calls) probed.insert(peer);
  }
  EXPECT_GE(probed.size(), 2 * first - 1);

  h.stopping = true;
  start = Clock::now();
  h.Round(c);
  EXPECT_LT(Clock::now() - start, milliseconds(100));
}

int ThreadCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// 1,000 peers on the real scheduler: one probe thread, every peer probed at its own rate.
TEST(PeerProbeSchedulerTest, ThousandPeersOnOneThreadStayOnSchedule) {
  auto script = std::make_shared<Script>();
  std::vector<std::string> targets;
  for (int i = 0; i < 1000; ++i) targets.push_back("10.2." + std::to_string(i / 250) + "." + std::to_string(i % 250));
  auto config = std::make_shared<Config>(PeersConfig(targets, milliseconds(1000)));
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(PeerProbe::Options{
                                 [script] { return std::make_unique<FakeProber>(script); },
                                 [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); },
                                 7, {}, {}, {}})});
  const int threads_before = ThreadCount();
  auto scheduler = std::make_unique<ProbeScheduler>(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  const auto start = Clock::now();
  scheduler->Configure(config);
  std::this_thread::sleep_for(milliseconds(1500));
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's runtime starts a background thread of its own on first need.
  EXPECT_LE(ThreadCount(), threads_before + 2);
  EXPECT_GE(ThreadCount(), threads_before + 1);
#else
  EXPECT_EQ(ThreadCount(), threads_before + 1);
#endif
  std::this_thread::sleep_until(start + milliseconds(3500));
  scheduler->Stop();
  // Let the round in progress end (it sees `stopping` before its next probe) so that the thread
  // is joined, not detached.
  while (!scheduler->busy().empty()) std::this_thread::sleep_for(milliseconds(1));
  scheduler.reset();

  std::map<std::string, std::vector<Clock::time_point>> calls;
  {
    std::lock_guard lock(script->mu);
    for (const auto& [peer, at] : script->latency_calls) calls[peer].push_back(at);
    EXPECT_EQ(script->max_in_call, 1);
  }
  ASSERT_EQ(calls.size(), 1000u);
  std::vector<double> gaps;
  std::size_t on_time = 0;
  for (const auto& [peer, at] : calls) {
    // First round within the first interval, then one per interval +-10%: 3 or 4 rounds in 3.5 s
    // (a loaded machine may push a peer's third round past the end: at least 2, and 95% with 3).
    EXPECT_GE(at.size(), 2u) << peer;
    EXPECT_LE(at.size(), 4u) << peer;
    on_time += at.size() >= 3;
    EXPECT_LT(at.front() - start, milliseconds(1600)) << peer;
    for (std::size_t i = 1; i < at.size(); ++i) gaps.push_back(std::chrono::duration<double>(at[i] - at[i - 1]).count());
  }
  EXPECT_GE(on_time, 950u);
  std::sort(gaps.begin(), gaps.end());
  // Jitter is +-10%; the tick (100 ms) adds up to 0.1 s of lateness to a round, and a loaded
  // machine (2 cores shared with compilers) can stall the thread for half a second. A late round
  // makes one gap longer and the next one shorter: the rate holds because the next due time
  // counts from the previous due time, not from the late start. So: the median gap is the
  // interval, and no gap is anywhere near 0 (a burst) or 2 intervals (a skipped round).
  EXPECT_GT(gaps.front(), 0.3);
  EXPECT_LT(gaps[gaps.size() / 2], 1.06);
  EXPECT_GT(gaps[gaps.size() / 2], 0.94);
  EXPECT_LT(gaps[gaps.size() * 99 / 100], 1.6);
}

// docs/metrics.md's peers section lists exactly the families a node with peers exposes for the
// probe: its own and its rounds' (the daemon e2e test cannot see them: on fixture trees no peer is
// configured).
TEST(PeerProbeTest, MetricsDocSectionListsExactlyTheRenderedFamilies) {
  auto script = std::make_shared<Script>();
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(PeerProbe::Options{
                                 [script] { return std::make_unique<FakeProber>(script); },
                                 [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); },
                                 42, {}, {}, {}})});
  ProbeScheduler scheduler(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  auto c = std::make_shared<Config>(PeersConfig({"10.0.0.2"}));
  c->peers.bandwidth = true;
  c->peers.bandwidth_interval = milliseconds(100);
  scheduler.Configure(c);
  auto wait = [](const std::function<bool()>& done) {
    for (const auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return false;
  };
  ASSERT_TRUE(wait([&] {
    std::lock_guard lock(script->mu);
    return !script->bandwidth_calls.empty() && !script->latency_calls.empty();
  }));
  // The round that made both calls has ended (and published) once one more round has.
  const std::uint64_t rounds = scheduler.counts("peers").rounds;
  ASSERT_TRUE(wait([&] { return scheduler.counts("peers").rounds > rounds; }));
  scheduler.Stop();

  Snapshot snapshot;
  scheduler.CopyInto(snapshot, *c);
  MetricSink sink;
  for (const auto& [name, probe] : scheduler.probes()) probe->Render(snapshot, sink);
  RenderProbeRounds(snapshot, sink);
  const std::set<std::string> rendered = testing::RenderedFamilies(sink.Serialize());
  const std::set<std::string> documented = testing::DocumentedFamilies("(probe `peers`)");
  EXPECT_EQ(documented, rendered);
  EXPECT_EQ(rendered.size(), 9u);
}

// What a fake discovery answers, and the names it was asked, shared with the discovery thread.
struct DnsScript {
  std::mutex mu;
  Result<std::vector<std::string>> answer = std::vector<std::string>{};
  std::vector<std::string> asked;  // "name@server"
  std::size_t passes = 0;          // answers given
  std::chrono::milliseconds delay{0};
  bool hang = false;               // lookups wait until released (or 10 s)
  std::condition_variable released;

  DnsDiscoverer Discoverer(std::shared_ptr<DnsScript> self) {
    return [self](const std::string& name, const DnsOptions& o) -> Result<std::vector<std::string>> {
      std::unique_lock lock(self->mu);
      self->asked.push_back(name + "@" + o.server);
      if (self->hang) self->released.wait_for(lock, std::chrono::seconds(10), [&] { return !self->hang; });
      if (self->delay.count() > 0) {
        lock.unlock();
        std::this_thread::sleep_for(self->delay);
        lock.lock();
      }
      ++self->passes;
      return self->answer;
    };
  }
  void Set(Result<std::vector<std::string>> a) {
    std::lock_guard lock(mu);
    answer = std::move(a);
  }
  std::size_t Passes() {
    std::lock_guard lock(mu);
    return passes;
  }
};

// Fleet discovery: a headless-Service-like name gives 60 addresses; this node (one of them)
// probes at most max_peers of them, never itself; a DNS failure keeps the last good set and shows
// as a warning; a shrunk answer drops the gone peers.
TEST(PeerProbeTest, DnsDiscoveryFeedsSelectionAndKeepsTheLastGoodAnswer) {
  std::vector<std::string> fleet;
  for (int i = 1; i <= 60; ++i) {
    char a[32];
    std::snprintf(a, sizeof a, "10.1.0.%d", i);
    fleet.push_back(a);
  }
  auto dns = std::make_shared<DnsScript>();
  dns->Set(fleet);
  auto script = std::make_shared<Script>();
  PeerProbe::Options options{[s = script] { return std::make_unique<FakeProber>(s); },
                             [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); }, 42, {}, {}, {}};
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1", "10.1.0.7"}; };
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c;
  c.peers.interval = std::chrono::hours(1);  // discovery and selection only, no probe due soon
  c.peers.discovery.dns = {"rdma-healthd.monitoring.svc"};
  c.peers.discovery.dns_server = "127.0.0.1:5353";
  c.peers.discovery.dns_interval = milliseconds(1000);
  c.peers.selection.max_peers = 20;
  auto round = [&] { probe.RunRound(ProbeContext{fs, c, stopping}, board); };
  // Rounds, as the scheduler runs them, until the lookups have answered `passes` times in all and
  // a round has taken the answer.
  auto rounds_until_pass = [&](std::size_t passes) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (dns->Passes() < passes && Clock::now() < deadline) {
      round();
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_GE(dns->Passes(), passes);
    // The pass hands its answers over just after the lookup returns; the next pass is a second away.
    for (int i = 0; i < 20; ++i) {
      round();
      std::this_thread::sleep_for(milliseconds(10));
    }
  };
  auto names = [&] {
    Snapshot snap;
    board.CopyInto(snap);
    std::set<std::string> out;
    for (const auto& p : snap.Get<PeerFacts>()->peers) out.insert(p->name);
    return out;
  };
  rounds_until_pass(1);
  {
    std::lock_guard lock(dns->mu);
    ASSERT_EQ(dns->asked, std::vector<std::string>{"rdma-healthd.monitoring.svc@127.0.0.1:5353"});
  }
  std::set<std::string> first = names();
  EXPECT_EQ(first.size(), 20u);
  EXPECT_FALSE(first.contains("10.1.0.7"));  // itself, found among its own addresses
  {
    Snapshot snap;
    board.CopyInto(snap);
    EXPECT_EQ(snap.Get<PeerFacts>()->peers.front()->labels,
              (PeerLabels{{"service", "rdma-healthd.monitoring.svc"}}));
  }

  // The DNS server fails: the set stays, the failure is a warning.
  dns->Set(Error{"dns: no answer for rdma-healthd.monitoring.svc (timeout or SERVFAIL)"});
  rounds_until_pass(2);
  EXPECT_EQ(names(), first);
  Snapshot snap;
  board.CopyInto(snap);
  EXPECT_THAT(snap.Get<PeerFacts>()->discovery_error, HasSubstr("timeout or SERVFAIL"));
  auto verdicts = RunRegisteredCheck("peer_reachable", snap, c);
  EXPECT_TRUE(std::any_of(verdicts.begin(), verdicts.end(),
                          [](const CheckResult& r) { return r.subject == "discovery" && r.verdict == Verdict::kWarning; }));
  for (const char* other : {"peer_latency", "peer_bandwidth"}) {  // said once, by peer_reachable
    for (const CheckResult& r : RunRegisteredCheck(other, snap, c)) EXPECT_NE(r.subject, "discovery") << other;
  }

  // The service shrinks to 5 pods: everyone else is probed, the rest dropped.
  dns->Set(std::vector<std::string>(fleet.begin(), fleet.begin() + 5));
  rounds_until_pass(3);
  EXPECT_EQ(names(), (std::set<std::string>{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5"}));
  std::lock_guard lock(dns->mu);
  EXPECT_EQ(dns->asked.size(), 3u);  // once per dns_interval, not once per round
}

// A config whose only peer source is discovery is scheduled at its own intervals: the scheduler
// ticks at interval / 10, lookups run every dns_interval and the discovered peers every interval
// (not once a minute, as when the probe counted only targets and the file as work).
TEST(PeerProbeSchedulerTest, DiscoveryOnlyConfigRunsAtItsIntervals) {
  auto script = std::make_shared<Script>();
  auto dns = std::make_shared<DnsScript>();
  dns->Set(std::vector<std::string>{"10.7.0.1", "10.7.0.2"});
  PeerProbe::Options options{[script] { return std::make_unique<FakeProber>(script); },
                             [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); }, 7, {}, {}, {}};
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
  auto config = std::make_shared<Config>();
  config->peers.interval = milliseconds(200);
  config->peers.discovery.dns = {"fleet.test"};
  config->peers.discovery.dns_interval = milliseconds(1000);
  std::vector<Instance<Probe>> probes;
  probes.push_back({"peers", std::make_unique<PeerProbe>(std::move(options))});
  auto scheduler = std::make_unique<ProbeScheduler>(NodeFs("/nonexistent", "/nonexistent"), std::move(probes));
  const auto start = Clock::now();
  scheduler->Configure(config);
  std::this_thread::sleep_for(milliseconds(3500));
  const auto took = Clock::now() - start;
  scheduler->Stop();
  while (!scheduler->busy().empty()) std::this_thread::sleep_for(milliseconds(1));
  scheduler.reset();
  const double seconds = std::chrono::duration<double>(took).count();
  // Lookups at 0, 1, 2 and 3 s (each within a tick, 20 ms, of being due); each peer every 200 ms
  // from its first probe within the first 200 ms: ~17 rounds in 3.5 s. Loose bounds for a loaded
  // machine, far from once a minute (1 lookup, at most 1 probe each).
  EXPECT_GE(dns->Passes(), 3u) << seconds << " s";
  EXPECT_LE(dns->Passes(), 5u) << seconds << " s";
  EXPECT_GE(script->Calls("10.7.0.1"), 8u) << seconds << " s";
  EXPECT_GE(script->Calls("10.7.0.2"), 8u) << seconds << " s";
}

// A DNS server that never answers (each lookup hangs until released) while a static target is due
// every 100 ms: lookups run beside the probes, never in front of them, and one lookup pass at a
// time. When the server answers, the discovered peers join.
TEST(PeerProbeTest, ASilentDnsServerNeverHoldsUpProbes) {
  auto dns = std::make_shared<DnsScript>();
  dns->hang = true;
  dns->Set(std::vector<std::string>{"10.8.0.1"});
  auto script = std::make_shared<Script>();
  PeerProbe::Options options{[s = script] { return std::make_unique<FakeProber>(s); },
                             [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); }, 42, {}, {}, {}};
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c = PeersConfig({"10.0.0.2"}, milliseconds(100));
  c.peers.discovery.dns = {"silent-a.test", "silent-b.test"};
  c.peers.discovery.dns_interval = milliseconds(200);
  const auto start = Clock::now();
  milliseconds longest{0};
  while (Clock::now() - start < milliseconds(2000)) {
    const auto before = Clock::now();
    probe.RunRound(ProbeContext{fs, c, stopping}, board);
    longest = std::max(longest, std::chrono::duration_cast<milliseconds>(Clock::now() - before));
    std::this_thread::sleep_for(milliseconds(10));
  }
  // 20 rounds due in 2 s; a loaded machine may miss a few.
  EXPECT_GE(script->Calls("10.0.0.2"), 15u);
  EXPECT_LT(longest, milliseconds(500));
  {
    std::lock_guard lock(dns->mu);
    EXPECT_EQ(dns->asked.size(), 1u);  // one pass in flight, stuck at its first name
    dns->hang = false;
  }
  dns->released.notify_all();
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (probe.peer_count() < 2 && Clock::now() < deadline) {
    probe.RunRound(ProbeContext{fs, c, stopping}, board);
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(probe.peer_count(), 2u);  // 10.0.0.2 and the discovered 10.8.0.1
  EXPECT_TRUE(probe.next_latency_due("10.8.0.1"));
}

// A warning about names no longer configured goes at once, not when the new names' pass ends.
TEST(PeerProbeTest, ChangedDiscoveryNamesDropTheOldWarningAtOnce) {
  auto dns = std::make_shared<DnsScript>();
  dns->Set(Error{"dns: old.test does not exist (NXDOMAIN from 127.0.0.1:5353)"});
  auto script = std::make_shared<Script>();
  PeerProbe::Options options{[s = script] { return std::make_unique<FakeProber>(s); },
                             [] { return std::make_unique<FakeResolver>(std::map<std::string, std::string>{}); }, 42, {}, {}, {}};
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c = PeersConfig({"10.0.0.2"}, std::chrono::hours(1));
  c.peers.discovery.dns = {"old.test"};
  auto error = [&] {
    probe.RunRound(ProbeContext{fs, c, stopping}, board);
    Snapshot snap;
    board.CopyInto(snap);
    return snap.Get<PeerFacts>()->discovery_error;
  };
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (error().empty() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_THAT(error(), HasSubstr("old.test"));
  {
    std::lock_guard lock(dns->mu);
    dns->hang = true;  // the new name's pass does not end during the test
  }
  c.peers.discovery.dns = {"new.test"};
  EXPECT_EQ(error(), "");
  {
    std::lock_guard lock(dns->mu);
    dns->hang = false;
  }
  dns->released.notify_all();
}

// The fleet's series budget: a node with 2 NICs (the mlx5-roce fixture: devices, netdev, roce and
// host collectors, every check) and 32 peers probed for latency and bandwidth, one of them failing
// too, exports at most 2,000 series, histogram buckets included. The figure is printed for
// docs/fleet.md.
TEST(PeerProbeTest, SeriesBudgetOfANodeWithTwoNicsAndThirtyTwoPeers) {
  Harness h;
  std::vector<std::string> targets;
  for (int i = 1; i <= 32; ++i) {
    char a[32];
    std::snprintf(a, sizeof a, "10.2.0.%d", i);
    targets.push_back(a);
  }
  Config c = PeersConfig(targets, milliseconds(100));
  c.peers.bandwidth = true;
  c.peers.bandwidth_interval = std::chrono::seconds(10);
  c.peers.bandwidth_duration = milliseconds(100);
  {
    std::lock_guard lock(h.script->mu);
    h.script->latency["10.2.0.1"].push_back(ProbeFailure{"connect_timeout", "no answer"});
  }
  ASSERT_TRUE(h.RunUntil(c, [&] {
    for (const auto& t : targets) {
      if (h.script->Calls(t) < 2) return false;
    }
    return true;
  }));
  auto count_series = [](const std::string& text) {
    std::size_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) n += !line.empty() && line[0] != '#';
    return n;
  };
  const std::size_t peers = count_series(h.Metrics());
  // The peer checks' verdicts: 3 checks x 4 statuses per peer.
  Snapshot snap;
  h.board.CopyInto(snap);
  std::size_t verdicts = 0;
  for (const char* check : {"peer_reachable", "peer_latency", "peer_bandwidth"}) {
    verdicts += RunRegisteredCheck(check, snap, c).size() * 4;
  }
  CollectionEngine engine(NodeFs(testing::ProjectFixture("sysfs/mlx5-roce/sys"), "/nonexistent"));
  auto node_config = std::make_shared<Config>();
  const std::size_t node = count_series(engine.ScrapeText(node_config));
  const std::size_t total = node + peers + verdicts;
  std::printf("series: node with 2 NICs %zu + 32 peers' metrics %zu + their verdicts %zu = %zu (%.1f per peer)\n",
              node, peers, verdicts, total, static_cast<double>(peers + verdicts) / 32);
  EXPECT_LE(total, 2000u);
  EXPECT_GT(peers, 32u * 20u);  // the histogram really is in there (19 series per peer alone)
}

TEST(PeerProbeTest, ThePeersProbeIsRegistered) { EXPECT_NE(ProbeRegistry().Find("peers"), nullptr); }

// The one-update bucketing counts exactly as prometheus-cpp's per-sample Observe, bounds included.
TEST(PeerProbeTest, SortedSamplesFillTheHistogramAsObserveDoes) {
  std::vector<double> us = {0.5, 1.0, 1.0000001, 2.0, 3.7, 5.0, 9.99, 10.0, 150.0, 100000.0, 250000.0};
  std::mt19937 random(3);
  std::uniform_real_distribution<double> wide(0.1, 2000.0);
  for (int i = 0; i < 2000; ++i) us.push_back(wide(random));
  std::sort(us.begin(), us.end());
  prometheus::Histogram one_by_one(PeerLatencyBuckets());
  for (double v : us) one_by_one.Observe(v * 1e-6);
  prometheus::Histogram at_once(PeerLatencyBuckets());
  ObserveSortedSamples(us, at_once);
  const auto a = one_by_one.Collect().histogram;
  const auto b = at_once.Collect().histogram;
  ASSERT_EQ(a.bucket.size(), b.bucket.size());
  for (std::size_t i = 0; i < a.bucket.size(); ++i) {
    EXPECT_EQ(a.bucket[i].cumulative_count, b.bucket[i].cumulative_count) << "le " << a.bucket[i].upper_bound;
  }
  EXPECT_EQ(a.sample_count, b.sample_count);
  EXPECT_NEAR(a.sample_sum, b.sample_sum, 1e-12);
}

// The fleet budget is 16 KiB of bookkeeping per peer: schedule, counters, histogram, published facts.
// (bench/peer_bench prints the figure; glibc's mallinfo2 says nothing under a sanitizer's allocator.)
TEST(PeerProbeTest, BookkeepingStaysUnder16KiBPerPeer) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "mallinfo2 does not see a sanitizer's allocator";
#else
  std::vector<std::string> targets;
  for (int i = 0; i < 500; ++i) targets.push_back("10.3." + std::to_string(i / 250) + "." + std::to_string(i % 250));
  Config c = PeersConfig(targets, milliseconds(100));
  c.peers.bandwidth = true;
  c.peers.bandwidth_interval = milliseconds(10000);
  { Harness warm_up; }  // one-time allocations (registries, locale) outside the measurement
  const std::size_t before = mallinfo2().uordblks;
  auto h = std::make_unique<Harness>();
  ASSERT_TRUE(h->RunUntil(c, [&] {
    std::lock_guard lock(h->script->mu);
    return h->script->latency_calls.size() >= 1000;
  }));
  {
    // The fake's own call log is not the probe's bookkeeping.
    std::lock_guard lock(h->script->mu);
    std::vector<std::pair<std::string, Clock::time_point>>().swap(h->script->latency_calls);
    std::vector<PeerEndpoint>().swap(h->script->endpoints);
    h->script->latency.clear();
  }
  const std::size_t after = mallinfo2().uordblks;
  const double per_peer = static_cast<double>(after - before) / 500;
  RecordProperty("bytes_per_peer", static_cast<int>(per_peer));
  EXPECT_LT(per_peer, 16 * 1024);
  EXPECT_GT(per_peer, 256);  // the measurement sees the peers at all
#endif
}

TEST(PeerProbeTest, IntervalIsATickOfThePeerIntervalAndLongWithoutPeers) {
  PeerProbe probe;
  Config none;
  EXPECT_EQ(probe.Interval(none), std::chrono::seconds(60));
  Config discovery_only;
  discovery_only.peers.discovery.dns = {"fleet.test"};
  discovery_only.peers.interval = milliseconds(1000);
  EXPECT_EQ(probe.Interval(discovery_only), milliseconds(100));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(10000))), milliseconds(500));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(1000))), milliseconds(100));
  EXPECT_EQ(probe.Interval(PeersConfig({"10.0.0.2"}, milliseconds(100))), milliseconds(10));
}

}  // namespace
}  // namespace rdmahd
