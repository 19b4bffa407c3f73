#include "probes/peer_schedule.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/probe_scheduler.h"
#include "tests/support/peer_probe_harness.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace rdmahd::testing;

TEST(PeerScheduleTest, FirstRoundsAreSpreadOverTheIntervalAndThenKeepItsRate) {
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

TEST(PeerScheduleTest, BandwidthStreamsRunOnlyWhenEnabledAndNeverAlongsideALatencyProbe) {
  Harness h;
  Config c = PeersConfig({"10.0.0.2", "10.0.0.3"});
  c.Section<PeersPolicy>().bandwidth = true;
  c.Section<PeersPolicy>().bandwidth_interval = milliseconds(200);
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
  c.Section<PeersPolicy>().bandwidth = false;
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
  probes.push_back({"peers", std::make_unique<PeerProbe>(FakeProbeOptions(script, 7))});
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


// A probe a little late keeps the rate (the next due time counts from the due time); one later
// than a whole interval starts a new phase from now rather than a burst of catch-up probes.
TEST(PeerScheduleTest, ALateProbeKeepsTheRateAndAVeryLateOneStartsANewPhase) {
  PeerSchedule schedule(42);
  const Clock::time_point t0 = Clock::now();
  const milliseconds interval(1000);
  for (int i = 0; i < 200; ++i) {
    const Clock::time_point first = schedule.FirstDue(t0, interval);
    EXPECT_GE(first, t0);
    EXPECT_LT(first, t0 + interval);
    const Clock::time_point late = schedule.NextDue(t0, interval, t0 + milliseconds(300));
    EXPECT_GE(late, t0 + milliseconds(900));
    EXPECT_LE(late, t0 + milliseconds(1100));
    const Clock::time_point very_late = schedule.NextDue(t0, interval, t0 + std::chrono::seconds(5));
    EXPECT_GE(very_late, t0 + milliseconds(5900));
    EXPECT_LE(very_late, t0 + milliseconds(6100));
  }
}

// Earliest due first; a peer's latency probe before its stream at the same time; streams only
// while bandwidth is on.
TEST(PeerScheduleTest, TheProbeDueFirstRunsNextAndStreamsOnlyWhenOn) {
  const Clock::time_point t0 = Clock::now();
  PeerSet peers;
  EXPECT_FALSE(PeerSchedule::Earliest(peers, true));
  for (const char* name : {"a", "b"}) peers.emplace(name, std::make_unique<PeerState>());
  peers.at("a")->next_latency = t0 + milliseconds(30);
  peers.at("a")->next_bandwidth = t0 + milliseconds(10);
  peers.at("b")->next_latency = t0 + milliseconds(20);
  peers.at("b")->next_bandwidth = t0 + milliseconds(20);

  std::optional<PeerSchedule::Due> next = PeerSchedule::Earliest(peers, false);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->peer, peers.at("b").get());
  EXPECT_FALSE(next->bandwidth);
  EXPECT_EQ(next->at, t0 + milliseconds(20));

  next = PeerSchedule::Earliest(peers, true);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->peer, peers.at("a").get());
  EXPECT_TRUE(next->bandwidth);

  peers.at("a")->next_bandwidth = t0 + milliseconds(40);
  next = PeerSchedule::Earliest(peers, true);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->peer, peers.at("b").get());
  EXPECT_FALSE(next->bandwidth);  // b's latency and stream are both due at 20 ms
}

TEST(PeerScheduleTest, TickIsATenthOfTheShortestIntervalWithinTenToFiveHundredMs) {
  PeersPolicy p;
  p.interval = milliseconds(10000);
  EXPECT_EQ(PeerSchedule::Tick(p), milliseconds(500));
  p.bandwidth_interval = milliseconds(200);
  EXPECT_EQ(PeerSchedule::Tick(p), milliseconds(500));  // streams off: their interval does not count
  p.bandwidth = true;
  EXPECT_EQ(PeerSchedule::Tick(p), milliseconds(20));
  p.interval = milliseconds(50);
  EXPECT_EQ(PeerSchedule::Tick(p), milliseconds(10));
}

}  // namespace
}  // namespace rdmahd
