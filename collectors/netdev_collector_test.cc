#include "collectors/netdev_collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/support/stat_list_driver.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"
#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

TEST(RoceCollectorsTest, PauseStormGrowthBetweenCollectionsWarns) {
  testing::TempDir dir;
  testing::WriteOneRocePort(dir, "ens1");
  auto stats = std::make_shared<std::vector<DriverStat>>(std::vector<DriverStat>{
      {"tx_pause_storm_warning_events", 0}, {"rx_prio3_pause_duration", 0}});
  NetdevCollector collector(std::make_unique<testing::StatListDriver>(stats));
  NodeFs fs = NodeFs(dir.path(), dir.path()).AskingKernelForTest();  // the fake is its kernel
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  // The check records the totals into the history the engine would own, collection after
  // collection, 20 s apart.
  History history;
  auto check = CheckRegistry().Find("roce_pause_storm")->factory();
  History::TimePoint at = History::Clock::now();
  auto run_check = [&](Snapshot& s) {
    CollectorOutcome o;
    EXPECT_TRUE(collector.Collect(ctx, s, o).ok());
    at += std::chrono::seconds(20);
    std::vector<CheckResult> out;
    RunCheck("roce_pause_storm", *check, s, config, history, at, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  };
  Snapshot s1;
  CheckResult first = run_check(s1);
  EXPECT_EQ(first.verdict, Verdict::kOk) << first.reason;
  EXPECT_EQ(first.reason, "no pause-storm events since the driver loaded (pause growth needs two collections)");
  ASSERT_TRUE(s1.Get<RdmaNetdevFacts>()->netdevs[0].global_pause_note.find("EOPNOTSUPP") != std::string::npos);

  (*stats)[0].value = 3;  // the storm detector fired 3 times
  Snapshot s2;
  CheckResult second = run_check(s2);
  EXPECT_EQ(second.verdict, Verdict::kWarning);
  EXPECT_EQ(second.reason, "3 pause-storm events in the last 20 s");

  (*stats)[1].value = 10'000'000;  // paused 10 s (in microseconds) within 20 s: sustained pause
  Snapshot s3;
  CheckResult third = run_check(s3);
  EXPECT_EQ(third.verdict, Verdict::kWarning);
  EXPECT_EQ(third.reason, "paused 50% of the last 20 s");

  Snapshot s4;
  CheckResult fourth = run_check(s4);
  EXPECT_EQ(fourth.verdict, Verdict::kOk);  // nothing grew
  EXPECT_EQ(fourth.reason, "no pause-storm events and pause below 1% in the last 20 s");

  // The driver reloaded: its totals start again. No growth from the old baseline; the total since
  // the reload is judged as on a first collection.
  (*stats)[0].value = 1;
  (*stats)[1].value = 0;
  Snapshot s5;
  CheckResult fifth = run_check(s5);
  EXPECT_EQ(fifth.verdict, Verdict::kWarning);
  EXPECT_EQ(fifth.reason, "1 pause-storm events since the driver loaded");
  Snapshot s6;
  EXPECT_EQ(run_check(s6).reason, "no pause-storm events and pause below 1% in the last 20 s");
}

// A paused share is judged over at least 10 s between collections: 1% of 2 s is one 20 ms burst of
// PFC doing its job. Below that, pause that grew makes the verdict unknown saying so (storm events,
// a count, still warn at once); no pause at all is below any share.
TEST(RoceCollectorsTest, APausedShareNeedsTenSecondsBetweenCollections) {
  auto check = CheckRegistry().Find("roce_pause_storm")->factory();
  Config config;
  History history;
  const History::TimePoint t0 = History::Clock::now();
  auto at = [&](std::chrono::milliseconds t, std::uint64_t storms, double paused_seconds) {
    RdmaNetdevFacts facts;
    NetdevFacts& f = facts.netdevs.emplace_back();
    f.netdev = "ens1";
    f.present = true;
    f.stats_read = true;
    f.storm_events_total = storms;
    f.rx_paused_seconds_total = paused_seconds;
    Snapshot s;
    s.Put(std::move(facts));
    std::vector<CheckResult> out;
    RunCheck("roce_pause_storm", *check, s, config, history, t0 + t, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  };
  at(std::chrono::milliseconds(0), 0, 0);
  CheckResult r = at(std::chrono::milliseconds(2'000), 0, 1.5);  // paused 1.5 s of 2 s
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "paused 1500 ms in the last 2 s; the paused share needs 10 s between collections, has 2 s");
  r = at(std::chrono::milliseconds(4'000), 0, 1.5);  // no more pause
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no pause-storm events and pause below 1% in the last 2 s");
  r = at(std::chrono::milliseconds(6'000), 2, 3.0);  // a storm counted: a count, judged at once
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_EQ(r.reason, "2 pause-storm events in the last 2 s");
  r = at(std::chrono::milliseconds(16'000), 2, 8.0);  // 5 s of 10 s
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_EQ(r.reason, "paused 50% of the last 10 s");
}

TEST(RoceCollectorsTest, DriverStatLayoutFollowsTheDriversNames) {
  // Which stats matter is worked out from the names once and kept while the driver returns the same
  // names; values are read fresh every time. When the names change, even at the same count (mlx5
  // swaps per-priority stats when PFC moves to another priority), or the allowlist changes, it is
  // worked out again.
  testing::TempDir dir;
  testing::WriteOneRocePort(dir, "ens1");
  auto stats = std::make_shared<std::vector<DriverStat>>(std::vector<DriverStat>{
      {"rx_bytes", 100}, {"rx_prio3_pause", 7}, {"tx_prio3_pause", 8}, {"rx_packets", 1}});
  NetdevCollector collector(std::make_unique<testing::StatListDriver>(stats));
  NodeFs fs = NodeFs(dir.path(), dir.path()).AskingKernelForTest();  // the fake is its kernel
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  auto collect = [&] {
    Snapshot s;
    CollectorOutcome o;
    EXPECT_TRUE(collector.Collect(ctx, s, o).ok());
    EXPECT_TRUE(o.errors.empty());
    const NetdevFacts& f = s.Get<RdmaNetdevFacts>()->netdevs.at(0);
    std::vector<DriverStat> all = f.classified_stats;
    all.insert(all.end(), f.allowlisted_stats.begin(), f.allowlisted_stats.end());
    return all;
  };
  using V = std::vector<DriverStat>;
  EXPECT_EQ(collect(), (V{{"rx_prio3_pause", 7}, {"tx_prio3_pause", 8}}));

  (*stats)[1].value = 17;  // same names, new values
  (*stats)[2].value = 18;
  EXPECT_EQ(collect(), (V{{"rx_prio3_pause", 17}, {"tx_prio3_pause", 18}}));

  // PFC moved from priority 3 to 4: the same count, other names in other places.
  *stats = {{"rx_prio4_pause", 5}, {"rx_bytes", 100}, {"rx_packets", 1}, {"tx_prio4_pause", 6}};
  EXPECT_EQ(collect(), (V{{"rx_prio4_pause", 5}, {"tx_prio4_pause", 6}}));

  config.Section<RocePolicy>().extra_ethtool_stats = {"rx_packets"};  // a reload adds an allowlist
  EXPECT_EQ(collect(), (V{{"rx_prio4_pause", 5}, {"tx_prio4_pause", 6}, {"rx_packets", 1}}));

  stats->push_back({"rx_prio5_pause", 9});  // the set grows
  EXPECT_EQ(collect(), (V{{"rx_prio4_pause", 5}, {"tx_prio4_pause", 6}, {"rx_prio5_pause", 9}, {"rx_packets", 1}}));
}

}  // namespace
}  // namespace rdmahd
