#include "probes/peer_membership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "tests/support/peer_probe_harness.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace rdmahd::testing;

TEST(PeerMembershipTest, ReconciliationKeepsUnchangedPeersAndDropsRemovedOnesSeries) {
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

TEST(PeerMembershipTest, TargetsFileIsReadReReadOnChangeAndABadFileKeepsTheLastGoodList) {
  testing::TempDir dir;
  dir.Write("peers.yaml", "- targets: [10.0.0.5, 10.0.0.6]\n  labels: {rack: r1}\n");
  Harness h;
  Config c = PeersConfig({"10.0.0.9"});
  c.Section<PeersPolicy>().file = dir.path() + "/peers.yaml";
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
TEST(PeerMembershipTest, RewritesOfAnExpensiveTargetsFileAreCoalescedByItsCost) {
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
  PeerProbe::Options options = FakeProbeOptions(script);
  options.thread_cpu_time = [cpu] { return *cpu += milliseconds(300); };  // every check costs 300 ms
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c;
  c.Section<PeersPolicy>().file = path;
  c.Section<PeersPolicy>().interval = std::chrono::hours(1);
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

// Fleet discovery: a headless-Service-like name gives 60 addresses; this node (one of them)
// probes at most max_peers of them, never itself; a DNS failure keeps the last good set and shows
// as a warning; a shrunk answer drops the gone peers.
TEST(PeerMembershipTest, DnsDiscoveryFeedsSelectionAndKeepsTheLastGoodAnswer) {
  std::vector<std::string> fleet;
  for (int i = 1; i <= 60; ++i) {
    char a[32];
    std::snprintf(a, sizeof a, "10.1.0.%d", i);
    fleet.push_back(a);
  }
  auto dns = std::make_shared<DnsScript>();
  dns->Set(fleet);
  auto script = std::make_shared<Script>();
  PeerProbe::Options options = FakeProbeOptions(script);
  options.discover = dns->Discoverer(dns);
  options.local_addresses = [] { return std::vector<std::string>{"127.0.0.1", "10.1.0.7"}; };
  PeerProbe probe(std::move(options));
  ProbeBoard board;
  NodeFs fs{"/nonexistent", "/nonexistent"};
  std::atomic<bool> stopping{false};
  Config c;
  c.Section<PeersPolicy>().interval = std::chrono::hours(1);  // discovery and selection only, no probe due soon
  c.Section<PeersPolicy>().discovery.dns = {"rdma-healthd.monitoring.svc"};
  c.Section<PeersPolicy>().discovery.dns_server = "127.0.0.1:5353";
  c.Section<PeersPolicy>().discovery.dns_interval = milliseconds(1000);
  c.Section<PeersPolicy>().selection.max_peers = 20;
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

// A DNS server that never answers (each lookup hangs until released) while a static target is due
// every 100 ms: lookups run beside the probes, never in front of them, and one lookup pass at a
// time. When the server answers, the discovered peers join.
TEST(PeerMembershipTest, ASilentDnsServerNeverHoldsUpProbes) {
  auto dns = std::make_shared<DnsScript>();
  dns->hang = true;
  dns->Set(std::vector<std::string>{"10.8.0.1"});
  Harness d(dns);
  Config c = PeersConfig({"10.0.0.2"}, milliseconds(100));
  c.Section<PeersPolicy>().discovery.dns = {"silent-a.test", "silent-b.test"};
  c.Section<PeersPolicy>().discovery.dns_interval = milliseconds(200);
  const auto start = Clock::now();
  milliseconds longest{0};
  while (Clock::now() - start < milliseconds(2000)) {
    const auto before = Clock::now();
    d.Round(c);
    longest = std::max(longest, std::chrono::duration_cast<milliseconds>(Clock::now() - before));
    std::this_thread::sleep_for(milliseconds(10));
  }
  // 20 rounds due in 2 s; a loaded machine may miss a few.
  EXPECT_GE(d.script->Calls("10.0.0.2"), 15u);
  EXPECT_LT(longest, milliseconds(500));
  {
    std::lock_guard lock(dns->mu);
    EXPECT_EQ(dns->asked.size(), 1u);  // one pass in flight, stuck at its first name
    dns->hang = false;
  }
  dns->released.notify_all();
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (d.probe.peer_count() < 2 && Clock::now() < deadline) {
    d.Round(c);
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(d.probe.peer_count(), 2u);  // 10.0.0.2 and the discovered 10.8.0.1
  EXPECT_TRUE(d.probe.next_latency_due("10.8.0.1"));
}

// A warning about names no longer configured goes at once, not when the new names' pass ends.
TEST(PeerMembershipTest, ChangedDiscoveryNamesDropTheOldWarningAtOnce) {
  auto dns = std::make_shared<DnsScript>();
  dns->Set(Error{"dns: old.test does not exist (NXDOMAIN from 127.0.0.1:5353)"});
  Harness d(dns);
  Config c = PeersConfig({"10.0.0.2"}, std::chrono::hours(1));
  c.Section<PeersPolicy>().discovery.dns = {"old.test"};
  auto error = [&] {
    d.Round(c);
    Snapshot snap;
    d.board.CopyInto(snap);
    return snap.Get<PeerFacts>()->discovery_error;
  };
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (error().empty() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_THAT(error(), HasSubstr("old.test"));
  {
    std::lock_guard lock(dns->mu);
    dns->hang = true;  // the new name's pass does not end during the test
  }
  c.Section<PeersPolicy>().discovery.dns = {"new.test"};
  EXPECT_EQ(error(), "");
  {
    std::lock_guard lock(dns->mu);
    dns->hang = false;
  }
  dns->released.notify_all();
}

// The wanted targets: peers.targets as listed (a target the file lists too keeps no file labels),
// then the file's; only a change makes them new.
TEST(PeerMembershipTest, WantedIsTheStaticTargetsAndTheFilesOnlyNewAfterAChange) {
  TempDir dir;
  dir.Write("peers.yaml", "- targets: [10.0.0.1, 10.0.0.5]\n  labels: {rack: r1}\n");
  PeerMembership m({{}, [] { return std::vector<std::string>{"127.0.0.1"}; }, {}});
  PeersPolicy p;
  p.targets = {"10.0.0.9", "10.0.0.1"};
  p.file = dir.path() + "/peers.yaml";
  const Clock::time_point t0 = Clock::now();
  m.Update(p, t0);
  EXPECT_TRUE(m.targets_changed());
  EXPECT_TRUE(m.TakeErrorsChanged());  // a new file: the facts say which
  EXPECT_FALSE(m.TakeErrorsChanged());
  EXPECT_EQ(m.Wanted(p), (std::vector<PeerTarget>{{"10.0.0.1", {}}, {"10.0.0.5", {{"rack", "r1"}}}, {"10.0.0.9", {}}}));
  EXPECT_FALSE(m.targets_changed());
  m.EndFileCheck();
  EXPECT_EQ(m.targets_file_reads(), 1u);
  EXPECT_EQ(m.file_error(p), "");

  m.Update(p, t0 + milliseconds(10));  // nothing changed, and the file is not due for a check
  EXPECT_FALSE(m.targets_changed());
  p.targets = {"10.0.0.9"};
  m.Update(p, t0 + milliseconds(20));
  EXPECT_TRUE(m.targets_changed());
  EXPECT_EQ(m.Wanted(p), (std::vector<PeerTarget>{{"10.0.0.1", {{"rack", "r1"}}}, {"10.0.0.5", {{"rack", "r1"}}},
                                                  {"10.0.0.9", {}}}));
  EXPECT_EQ(m.targets_file_reads(), 1u);
}

// A peer kept by name keeps its state and takes its new labels; a new one starts its schedule
// within each interval and its counters at 0; a dropped one goes.
TEST(PeerMembershipTest, ReconcilePeersKeepsStateByNameAndStartsNewPeers) {
  PeerSchedule schedule(5);
  PeersPolicy p;
  p.interval = milliseconds(1000);
  p.bandwidth = true;
  p.bandwidth_interval = milliseconds(10000);
  const Clock::time_point now = Clock::now();
  PeerSet peers = ReconcilePeers({}, {{"10.0.0.1", {}}, {"10.0.0.2", {}}}, p, schedule, now);
  ASSERT_EQ(peers.size(), 2u);
  PeerState* kept = peers.at("10.0.0.1").get();
  EXPECT_GE(kept->next_latency, now);
  EXPECT_LT(kept->next_latency, now + milliseconds(1000));
  EXPECT_GE(kept->next_bandwidth, now);
  EXPECT_LT(kept->next_bandwidth, now + milliseconds(10000));
  ASSERT_EQ(kept->status.counts.size(), 2u);  // bandwidth and latency successes, at 0
  EXPECT_EQ(kept->status.counts[0].kind, "bandwidth");
  EXPECT_EQ(kept->status.counts[1].kind, "latency");
  EXPECT_EQ(kept->status.counts[1].count, 0u);
  kept->next_latency = now + std::chrono::hours(5);
  kept->status.counts[1].count = 7;
  kept->dirty = false;

  p.bandwidth = false;
  peers = ReconcilePeers(std::move(peers), {{"10.0.0.1", {{"rack", "r2"}}}, {"10.0.0.3", {}}}, p, schedule, now);
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers.at("10.0.0.1").get(), kept);
  EXPECT_EQ(kept->next_latency, now + std::chrono::hours(5));
  EXPECT_EQ(kept->status.counts[1].count, 7u);
  EXPECT_EQ(kept->status.labels, (PeerLabels{{"rack", "r2"}}));
  EXPECT_TRUE(kept->dirty);
  EXPECT_FALSE(peers.contains("10.0.0.2"));
  ASSERT_EQ(peers.at("10.0.0.3")->status.counts.size(), 1u);  // streams off: latency only
  EXPECT_EQ(peers.at("10.0.0.3")->status.counts[0].kind, "latency");
}

}  // namespace
}  // namespace rdmahd
