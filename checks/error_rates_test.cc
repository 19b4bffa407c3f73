// The error-rate checks over the history: collection after collection of counter values, as the
// engine runs them, with resets, re-created devices, holds and real values from captured nodes.
#include "checks/error_rates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/node_fs.h"
#include "common/parse.h"
#include "config/config.h"
#include "core/check.h"
#include "core/collection_engine.h"
#include "core/history.h"
#include "facts/ethtool_std_stats_facts.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"
#include "parsers/ethtool_stats.h"
#include "tests/support/heap_in_use.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::minutes;
using std::chrono::seconds;
using Values = std::map<std::string, std::uint64_t>;

const History::TimePoint kT0 = History::TimePoint{} + std::chrono::hours(100);

CounterValues ToCounters(const Values& v) {
  return CounterValues::FromPairs(std::vector<std::pair<std::string, std::uint64_t>>(v.begin(), v.end()));
}

// One check run collection after collection on one port (mlx5_0/1) or one netdev (ens1f0np0).
struct Timeline {
  explicit Timeline(std::string check_name) : name(std::move(check_name)) {}
  std::string name;
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find(name)->factory();
  std::size_t expected = 1;  // results per collection
  // The port's counter files whose text is not a number, as the devices collector names them.
  std::vector<std::string> unparseable;

  // A collection at `t` with these ports/1/counters/ and hw_counters/ values, the device in its
  // `generation`.
  CheckResult Port(seconds t, const Values& counters, const Values& hw = {}, std::uint64_t generation = 1,
                   const std::vector<BackedOffRead>& backoff = {}) {
    Topology topology;
    TopologyDevice& td = topology.devices.emplace_back();
    td.name = "mlx5_0";
    td.generation = generation;
    RdmaDevicesFacts devices;
    RdmaDeviceFacts& d = devices.devices.emplace_back();
    d.name = "mlx5_0";
    RdmaPortFacts& p = d.ports.emplace_back();
    p.device = "mlx5_0";
    p.port = 1;
    p.netdev = "ens1f0np0";
    p.counters = ToCounters(counters);
    p.hw_counters = ToCounters(hw);
    p.read_backoff = backoff;
    p.unparseable = unparseable;
    Snapshot s;
    s.Put(std::move(topology));
    s.Put(std::move(devices));
    return Run(s, t);
  }

  // A collection at `t` of ens1f0np0's driver statistics (the ones the netdev collector keeps).
  CheckResult Netdev(seconds t, const std::vector<DriverStat>& stats) { return NetdevWithStandard(t, stats, true, {}); }

  // The same with the ethtool_std_stats collector's facts: `standard` read when it has counters
  // (else unknown, as for a driver with empty groups); `stats_read` false: no `ethtool -S` either.
  CheckResult NetdevWithStandard(seconds t, const std::vector<DriverStat>& stats, bool stats_read,
                                 const Values& standard) {
    RdmaNetdevFacts facts;
    NetdevFacts& n = facts.netdevs.emplace_back();
    n.netdev = "ens1f0np0";
    n.present = true;
    n.stats_read = stats_read;
    for (const DriverStat& st : stats) {
      if (ClassifyDriverStat(st.name).kind != StatKind::kOther) n.classified_stats.push_back(st);
    }
    Snapshot s;
    s.Put(std::move(facts));
    EthtoolStdStatsFacts std_facts;
    EthtoolStdStatsNetdevFacts& f = std_facts.netdevs.emplace_back();
    f.netdev = "ens1f0np0";
    f.read = !standard.empty();
    if (!f.read) f.note = "the driver of ens1f0np0 fills none of the standard statistics groups eth-phy, eth-mac, rmon";
    for (const auto& [stat, value] : standard) f.stats.counters.push_back({stat, value});
    s.Put(std::move(std_facts));
    return Run(s, t);
  }

  CheckResult Run(const Snapshot& s, seconds t) {
    std::vector<CheckResult> out;
    RunCheck(name, *check, s, config, history, kT0 + t, out);
    EXPECT_EQ(out.size(), expected);
    return out.empty() ? CheckResult{} : out[0];
  }
};

TEST(PortErrorsTest, UnknownUntilTheWindowHasTwoSamplesThenOk) {
  Timeline tl("port_errors");
  CheckResult r = tl.Port(seconds(0), {{"symbol_error", 12}, {"port_rcv_errors", 0}, {"port_rcv_packets", 5000}});
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  // port_rcv_errors at 0 is judged at once (nothing counted since it was cleared).
  EXPECT_THAT(r.reason, HasSubstr("no increase known yet for symbol_error: a rate needs two samples "
                                  "within its window (`rdma-healthd check --sample-interval=10s` takes two)"));
  EXPECT_THAT(r.reason, HasSubstr("counted since the last clear: symbol_error 12"));
  r = tl.Port(seconds(15), {{"symbol_error", 12}, {"port_rcv_errors", 0}, {"port_rcv_packets", 9000}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no error counter over its limit (2 counters, none rose)");
  EXPECT_EQ(r.subject, "mlx5_0/1");
}

// A node with more series than the history keeps: the ports without room are unknown and say why,
// with the setting that makes room, instead of "a rate needs two samples" for ever.
TEST(PortErrorsTest, APortWithoutRoomInTheHistoryIsUnknownAndNamesTheSetting) {
  Timeline tl("port_errors");
  tl.history.SetMaxSeries(2);
  for (int t : {0, 15}) {
    const History::TimePoint at = kT0 + seconds(t);
    tl.history.RecordCounter("other/a", 1, 1, at);  // recorded in the same collection before the port
    tl.history.RecordCounter("other/b", 1, 1, at);
    CheckResult r = tl.Port(seconds(t), {{"symbol_error", 12}, {"port_rcv_packets", 5000}});
    EXPECT_EQ(r.verdict, Verdict::kUnknown);
    EXPECT_THAT(r.reason, HasSubstr("the engine's history is full (it keeps at most 2 series"));
    EXPECT_THAT(r.fix, HasSubstr("raise history.max_series"));
  }
  EXPECT_GE(tl.history.refused(), 2u);
  tl.history.SetMaxSeries(16);
  EXPECT_THAT(tl.Port(seconds(30), {{"symbol_error", 12}, {"port_rcv_packets", 6000}}).reason,
              HasSubstr("a rate needs two samples"));
  EXPECT_EQ(tl.Port(seconds(45), {{"symbol_error", 12}, {"port_rcv_packets", 7000}}).verdict, Verdict::kOk);
}

TEST(PortErrorsTest, SymbolErrorsAboveNvSentinelsHourlyLimitFail) {
  Timeline tl("port_errors");
  tl.Port(seconds(0), {{"symbol_error", 0}});
  // 41 in 20 minutes: 41 within the hour, not more than 120 (a span is never scaled up to an hour).
  CheckResult r = tl.Port(seconds(1200), {{"symbol_error", 41}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("rose: symbol_error +41"));
  // 120 within the hour: the limit, not more than it.
  EXPECT_EQ(tl.Port(seconds(2400), {{"symbol_error", 120}}).verdict, Verdict::kOk);
  // 121 within the hour: more than 120.
  r = tl.Port(seconds(3000), {{"symbol_error", 121}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason,
              HasSubstr("symbol_error +121 in 3000 s, more than 120 within an hour: bit errors on the physical link"));
  EXPECT_THAT(r.fix, HasSubstr("`ethtool -m ens1f0np0`"));
}

// A limit of N within an hour is judged on the increase observed, however short the span that
// observed it: 21 in 2 s is 21, not "more than 120 an hour"; 121 in 2 s is more than 120 at once.
TEST(PortErrorsTest, AShortSpanIsJudgedOnWhatItObservedNeverScaledUp) {
  Timeline tl("port_errors");
  tl.Port(seconds(0), {{"symbol_error", 0}});
  CheckResult r = tl.Port(seconds(2), {{"symbol_error", 21}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no error counter over its limit (1 counter; rose: symbol_error +21)");
  Timeline burst("port_errors");
  burst.Port(seconds(0), {{"symbol_error", 0}});
  r = burst.Port(seconds(2), {{"symbol_error", 121}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("symbol_error +121 in 2 s, more than 120 within an hour"));
  // netdev_errors' PHY symbol errors are judged the same way.
  Timeline phy("netdev_errors");
  phy.Netdev(seconds(0), {{"rx_symbol_err_phy", 7}});
  EXPECT_EQ(phy.Netdev(seconds(2), {{"rx_symbol_err_phy", 28}}).verdict, Verdict::kOk);
  r = phy.Netdev(seconds(4), {{"rx_symbol_err_phy", 128}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("rx_symbol_err_phy +121 in 4 s, more than 120 within an hour"));
}

TEST(PortErrorsTest, AnyBufferOverrunFailsThenHoldsThenOk) {
  Timeline tl("port_errors");
  tl.config.Section<ErrorRatePolicy>().window = std::chrono::milliseconds(60'000);
  tl.config.Section<ErrorRatePolicy>().hold = std::chrono::milliseconds(120'000);
  tl.Port(seconds(0), {{"excessive_buffer_overrun_errors", 2}});
  CheckResult r = tl.Port(seconds(15), {{"excessive_buffer_overrun_errors", 3}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors +1 in 15 s: the port's receive buffer overran"));
  // Out of the 60 s window at 80 s: held until 15 + 120 s.
  r = tl.Port(seconds(80), {{"excessive_buffer_overrun_errors", 3}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "excessive_buffer_overrun_errors was over its limit until 65 s ago (held failed for 120 s "
                      "after it falls back)");
  r = tl.Port(seconds(134), {{"excessive_buffer_overrun_errors", 3}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  r = tl.Port(seconds(136), {{"excessive_buffer_overrun_errors", 3}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
}

// A port whose counters stand still is not judged again from the history (no window can hold an
// increase), but anything that could change its verdict is: a counter that moves, a policy reload
// (a longer hold brings back a failure it had let go), a series the history lost.
// The hold outlives the device object: a failure is still held after the device is re-created (a
// driver reload), whose counters start again from a new baseline. And a port that never failed
// judges without ever asking for a hold.
TEST(PortErrorsTest, AFailureIsHeldAcrossARecreatedDevice) {
  Timeline tl("port_errors");
  tl.config.Section<ErrorRatePolicy>().window = std::chrono::milliseconds(60'000);
  tl.config.Section<ErrorRatePolicy>().hold = std::chrono::milliseconds(120'000);
  tl.Port(seconds(0), {{"excessive_buffer_overrun_errors", 2}});
  EXPECT_EQ(tl.Port(seconds(15), {{"excessive_buffer_overrun_errors", 3}}).verdict, Verdict::kFailed);
  CheckResult r = tl.Port(seconds(30), {{"excessive_buffer_overrun_errors", 0}}, {}, /*generation=*/2);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "excessive_buffer_overrun_errors was over its limit until 15 s ago (held failed for 120 s "
                      "after it falls back)");
  EXPECT_EQ(tl.Port(seconds(136), {{"excessive_buffer_overrun_errors", 0}}, {}, 2).verdict, Verdict::kOk);

  Timeline healthy("port_errors");
  healthy.Port(seconds(0), {{"excessive_buffer_overrun_errors", 2}, {"symbol_error", 1}});
  EXPECT_EQ(healthy.Port(seconds(15), {{"excessive_buffer_overrun_errors", 2}, {"symbol_error", 1}}).verdict,
            Verdict::kOk);
  EXPECT_TRUE(healthy.history.Names("port_errors/mlx5_0/1/failing/").empty());
}

TEST(PortErrorsTest, AQuietPortIsJudgedAgainWhenAnythingCouldChangeItsVerdict) {
  Timeline tl("port_errors");
  tl.config.Section<ErrorRatePolicy>().hold = std::chrono::milliseconds(120'000);
  Values still{{"symbol_error", 12}, {"excessive_buffer_overrun_errors", 3}, {"port_rcv_packets", 9000}};
  tl.Port(seconds(0), still);
  for (int t : {15, 30, 45}) {
    still["port_rcv_packets"] += 100000;  // traffic: the packets move, the error counters do not
    CheckResult r = tl.Port(seconds(t), still);
    EXPECT_EQ(r.verdict, Verdict::kOk) << t;
    EXPECT_EQ(r.reason, "no error counter over its limit (2 counters, none rose)") << t;
  }
  Values moved = still;
  moved["excessive_buffer_overrun_errors"] = 4;
  CheckResult r = tl.Port(seconds(60), moved);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors +1 in 60 s"));
  // Past the window (10 min) and the hold (2 min): ok and quiet again.
  for (int t : {700, 715, 730}) EXPECT_EQ(tl.Port(seconds(t), moved).verdict, Verdict::kOk) << t;
  // A reload whose hold covers the failure at 60 s holds it failed again, though nothing moved.
  tl.config.Section<ErrorRatePolicy>().hold = std::chrono::milliseconds(3'600'000);
  r = tl.Port(seconds(745), moved);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors was over its limit until 685 s ago"));
  tl.config.Section<ErrorRatePolicy>().hold = std::chrono::milliseconds(120'000);
  EXPECT_EQ(tl.Port(seconds(760), moved).verdict, Verdict::kOk);
  EXPECT_EQ(tl.Port(seconds(775), moved).verdict, Verdict::kOk);
  // A series the history dropped starts again: unknown until its window has two samples. So does
  // the steady gauge, which stands for the counters that never moved (symbol_error).
  tl.history.Forget("port_errors/mlx5_0/1/excessive_buffer_overrun_errors");
  r = tl.Port(seconds(790), moved);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  // symbol_error, steady, is still judged.
  EXPECT_THAT(r.reason, HasSubstr("no increase known yet for excessive_buffer_overrun_errors: a rate needs"));
  EXPECT_EQ(tl.Port(seconds(805), moved).verdict, Verdict::kOk);
  tl.history.Forget("port_errors/mlx5_0/1/steady@1");
  r = tl.Port(seconds(820), moved);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("no increase known yet: a rate needs"));
  EXPECT_EQ(tl.Port(seconds(835), moved).verdict, Verdict::kOk);
}

TEST(PortErrorsTest, ACounterThatLeavesZeroIsJudgedFromItsZeros) {
  Timeline tl("port_errors");
  for (int t : {0, 15, 30}) EXPECT_EQ(tl.Port(seconds(t), {{"excessive_buffer_overrun_errors", 0}}).verdict, Verdict::kOk);
  CheckResult r = tl.Port(seconds(45), {{"excessive_buffer_overrun_errors", 1}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors +1 in 45 s"));
  // Zero, then the device re-created with a count already: a new baseline, not an increase.
  Timeline recreated("port_errors");
  recreated.Port(seconds(0), {{"excessive_buffer_overrun_errors", 0}});
  recreated.Port(seconds(15), {{"excessive_buffer_overrun_errors", 0}});
  r = recreated.Port(seconds(30), {{"excessive_buffer_overrun_errors", 3}}, {}, 2);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(recreated.Port(seconds(45), {{"excessive_buffer_overrun_errors", 3}}, {}, 2).verdict, Verdict::kOk);
  // Zero for longer than the window: the window starts at 0.
  Timeline idle("port_errors");
  for (int t = 0; t <= 1200; t += 300) idle.Port(seconds(t), {{"excessive_buffer_overrun_errors", 0}});
  r = idle.Port(seconds(1215), {{"excessive_buffer_overrun_errors", 2}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors +2 in 600 s"));
}

// A count that stands still (a link event long ago) costs no series: the steady gauge's bit and the
// value the check keeps stand for it, until it moves; then its series starts with the collections
// it stood still in, and the increase is judged over them as if they had been recorded.
TEST(PortErrorsTest, ACountThatStandsStillHasNoSeriesUntilItMoves) {
  Timeline tl("port_errors");
  const Values still{{"symbol_error", 12}, {"port_rcv_errors", 5}, {"port_rcv_packets", 9000}};
  EXPECT_EQ(tl.Port(seconds(0), still).verdict, Verdict::kUnknown);
  for (int t : {15, 30}) {
    CheckResult r = tl.Port(seconds(t), still);
    EXPECT_EQ(r.verdict, Verdict::kOk) << t;
    EXPECT_EQ(r.reason, "no error counter over its limit (2 counters, none rose)") << t;
  }
  EXPECT_THAT(tl.history.Names("port_errors/mlx5_0/1/"),
              ::testing::ElementsAre("port_errors/mlx5_0/1/port_rcv_packets", "port_errors/mlx5_0/1/steady@1"));
  Values moved = still;
  moved["symbol_error"] = 133;
  CheckResult r = tl.Port(seconds(45), moved);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("symbol_error +121 in 45 s, more than 120 within an hour"));
  EXPECT_EQ(tl.history.Samples("port_errors/mlx5_0/1/symbol_error").size(), 2u);
  EXPECT_TRUE(tl.history.Names("port_errors/mlx5_0/1/port_rcv_errors").empty());

  // Standing still for longer than the window: the window starts at its start.
  Timeline idle("port_errors");
  for (int t = 0; t <= 1200; t += 300) idle.Port(seconds(t), {{"excessive_buffer_overrun_errors", 7}});
  r = idle.Port(seconds(1215), {{"excessive_buffer_overrun_errors", 9}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("excessive_buffer_overrun_errors +2 in 600 s"));
}

// Between collections the check keeps per port only what is the port's own: where its series are
// in the history (four bytes a counter), its quiet values, its names; where the counters are in a
// name list that a thousand ports of one driver share is kept once, for the list.
TEST(PortErrorsTest, AThousandPortsOfOneDriverCostTheCheckLittleHeap) {
  constexpr int kPorts = 1000;
  CounterValues::Names list = {"excessive_buffer_overrun_errors", "link_error_recovery", "local_link_integrity_errors",
                               "port_rcv_errors",  "port_rcv_packets", "port_rcv_remote_physical_errors",
                               "port_xmit_discards", "port_xmit_packets", "symbol_error"};
  std::sort(list.begin(), list.end());
  const auto names = std::make_shared<const CounterValues::Names>(std::move(list));
  Snapshot s;
  {
    Topology topology;
    RdmaDevicesFacts devices;
    for (int d = 0; d < kPorts; ++d) {
      TopologyDevice& td = topology.devices.emplace_back();
      td.name = "mlx5_" + std::to_string(d);
      td.generation = 1;
      RdmaDeviceFacts& device = devices.devices.emplace_back();
      device.name = td.name;
      RdmaPortFacts& p = device.ports.emplace_back();
      p.device = td.name;
      p.port = 1;
      p.counters = CounterValues(names);
      for (std::size_t slot = 0; slot < names->size(); ++slot) p.counters.Set(slot, 1000 + slot);
    }
    s.Put(std::move(topology));
    s.Put(std::move(devices));
  }
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("port_errors")->factory();
  // Blocks malloc maps apart count too: a vector of a verdict per port is one.
  const std::size_t before = testing::HeapInUse();
  for (int c = 0; c < 2; ++c) {
    std::vector<CheckResult> out;
    RunCheck("port_errors", *check, s, config, history, kT0 + seconds(30 * c), out);
    ASSERT_EQ(out.size(), static_cast<std::size_t>(kPorts));
    EXPECT_EQ(out.back().verdict, c == 0 ? Verdict::kUnknown : Verdict::kOk);
  }
  const std::size_t measured = testing::HeapInUse() - before - history.MemoryBytes();
  RecordProperty("check_bytes_per_port", std::to_string(static_cast<double>(measured) / kPorts));
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_LE(measured, 480u * kPorts);
#endif
}

TEST(PortErrorsTest, LinkErrorRecoveriesPerMinute) {
  // `check --sample-interval=10s`: one recovery in 10 s is one, not "more than 5 a minute".
  Timeline cli("port_errors");
  cli.Port(seconds(0), {{"link_error_recovery", 7}});
  CheckResult r = cli.Port(seconds(10), {{"link_error_recovery", 8}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no error counter over its limit (1 counter; rose: link_error_recovery +1)");
  Timeline tl("port_errors");
  tl.Port(seconds(0), {{"link_error_recovery", 7}});
  EXPECT_EQ(tl.Port(seconds(30), {{"link_error_recovery", 9}}).verdict, Verdict::kOk);
  EXPECT_EQ(tl.Port(seconds(45), {{"link_error_recovery", 12}}).verdict, Verdict::kOk);  // 5: the limit
  r = tl.Port(seconds(60), {{"link_error_recovery", 13}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("link_error_recovery +6 in 60 s, more than 5 within a minute"));
  // Six in 5 s fail at once.
  Timeline burst("port_errors");
  burst.Port(seconds(0), {{"link_error_recovery", 0}});
  EXPECT_THAT(burst.Port(seconds(5), {{"link_error_recovery", 6}}).reason,
              HasSubstr("link_error_recovery +6 in 5 s, more than 5 within a minute"));
}

TEST(PortErrorsTest, AClearedCounterOrARecreatedDeviceStartsANewBaseline) {
  Timeline tl("port_errors");
  tl.Port(seconds(0), {{"local_link_integrity_errors", 9}});
  // Cleared (perfquery -R): down to 0 is a new baseline, not an increase, and nothing negative
  // (a counter at 0 counted nothing since it was cleared: judged at once).
  CheckResult r = tl.Port(seconds(15), {{"local_link_integrity_errors", 0}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no error counter over its limit (1 counter, none rose)");
  EXPECT_EQ(tl.Port(seconds(30), {{"local_link_integrity_errors", 0}}).verdict, Verdict::kOk);
  // The device re-created (driver reload) with a higher count: a new baseline again.
  r = tl.Port(seconds(45), {{"local_link_integrity_errors", 4}}, {}, 2);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(tl.Port(seconds(60), {{"local_link_integrity_errors", 4}}, {}, 2).verdict, Verdict::kOk);
  r = tl.Port(seconds(75), {{"local_link_integrity_errors", 5}}, {}, 2);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("local_link_integrity_errors +1 in 30 s"));
}

TEST(PortErrorsTest, ReceiveErrorsAndDiscardsAsASharesOfPackets) {
  Timeline tl("port_errors");
  tl.Port(seconds(0), {{"port_rcv_errors", 0}, {"port_rcv_packets", 0}, {"port_xmit_discards", 0},
                       {"port_xmit_packets", 0}});
  CheckResult r = tl.Port(seconds(60), {{"port_rcv_errors", 5}, {"port_rcv_packets", 100'000},
                                        {"port_xmit_discards", 50}, {"port_xmit_packets", 100'000}});
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("port_xmit_discards +50 in 60 s, 0.05% of the 100000 packets sent (limit 0.01%)"));
  EXPECT_THAT(r.reason, Not(HasSubstr("port_rcv_errors +5 in")));  // 0.005%: under the limit
  // More errors than packets (a share above 100 %) prints whole.
  Timeline burst("port_errors");
  burst.Port(seconds(0), {{"port_rcv_errors", 0}, {"port_rcv_packets", 0}});
  EXPECT_THAT(burst.Port(seconds(60), {{"port_rcv_errors", 2500}, {"port_rcv_packets", 1000}}).reason,
              HasSubstr("port_rcv_errors +2500 in 60 s, 250% of the 1000 packets received (limit 0.01%)"));
  // Too little traffic to take a share of: not judged.
  Timeline quiet("port_errors");
  quiet.Port(seconds(0), {{"port_rcv_errors", 0}, {"port_rcv_packets", 0}});
  EXPECT_EQ(quiet.Port(seconds(60), {{"port_rcv_errors", 10}, {"port_rcv_packets", 100}}).verdict, Verdict::kOk);
}

TEST(PortErrorsTest, ANodeExporterCaptureWithDiscardsAndNoPmaCounters) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  // mlx4_0/1 of node_exporter's fixture: port_xmit_discards 5; i40iw0's counters say "N/A (no PMA)".
  const std::string base = testing::RealFixture("sysfs/node-exporter-fixtures/sys/class/infiniband/");
  Values mlx4;
  for (const auto& e : std::filesystem::directory_iterator(base + "mlx4_0/ports/1/counters")) {
    auto text = ReadRegularFile(e.path().string(), kMaxAttributeBytes);
    if (auto v = text.ok() ? ParseU64(Trim(*text)) : std::nullopt) mlx4[e.path().filename().string()] = *v;
  }
  ASSERT_EQ(mlx4.at("port_xmit_discards"), 5u);
  Timeline tl("port_errors");
  CheckResult r = tl.Port(seconds(0), mlx4);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("counted since the last clear: port_xmit_discards 5"));
  // 45 more discards over as many packets sent as the capture's share allows.
  Values later = mlx4;
  later["port_xmit_discards"] += 45;
  later["port_xmit_packets"] += 10'000;
  later["port_rcv_packets"] += 10'000;
  r = tl.Port(seconds(60), later);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("port_xmit_discards +45 in 60 s, 0.45% of the 10000 packets sent"));
  // i40iw0's counters all say "N/A (no PMA)": absent, and a port with none of them gets no verdict.
  Timeline none("port_errors");
  none.expected = 0;
  none.Port(seconds(0), {{"port_rcv_packets", 100}});
}

// ports/1/hw_counters of the procfs fixture's mlx5_0: non-zero timeouts, sequence and CQE errors.
Values RealMlx5HwCounters() {
  Values v;
  const std::string dir =
      testing::RealFixture("sysfs/procfs-fixtures/sys/class/infiniband/mlx5_0/ports/1/hw_counters");
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto text = ReadRegularFile(e.path().string(), kMaxAttributeBytes);
    if (auto n = text.ok() ? ParseU64(Trim(*text)) : std::nullopt) v[e.path().filename().string()] = *n;
  }
  return v;
}

// counters/symbol_error in read backoff (its value absent, as the devices collector leaves it):
// the other counters not rising must not read as ok; the verdict names the file and the errno.
// A counter that did trip still decides the verdict.
TEST(PortErrorsTest, ACounterInReadBackoffIsUnknownNamingTheFileAndErrno) {
  Timeline tl("port_errors");
  const std::vector<BackedOffRead> backoff = {{"counters/symbol_error", "EIO"}, {"state", "EIO"}};
  Values v = {{"port_rcv_errors", 0}, {"port_rcv_packets", 1'000'000}, {"excessive_buffer_overrun_errors", 0}};
  tl.Port(seconds(0), v, {}, 1, backoff);
  v["port_rcv_packets"] += 1'000'000;
  CheckResult r = tl.Port(seconds(15), v, {}, 1, backoff);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "cannot judge every error counter: counters/symbol_error: EIO on read, retried with backoff "
                      "(1 min doubling to 1 h; the kernel logs each failed read)");
  EXPECT_THAT(r.fix, HasSubstr("switch mode"));
  // Without the backoff, the same values are ok.
  EXPECT_EQ(tl.Port(seconds(30), v).verdict, Verdict::kOk);
  v["excessive_buffer_overrun_errors"] = 1;
  EXPECT_EQ(tl.Port(seconds(45), v, {}, 1, backoff).verdict, Verdict::kFailed);
  // A file no rule reads (port_rcv_data) in backoff changes nothing.
  Timeline other("port_errors");
  other.Port(seconds(0), v, {}, 1, {{"counters/port_rcv_data", "EIO"}});
  EXPECT_EQ(other.Port(seconds(15), v, {}, 1, {{"counters/port_rcv_data", "EIO"}}).verdict, Verdict::kOk);
}

// A restricted PF: every counters/ file in backoff, so the check has no counter at all; before,
// the port got no verdict.
TEST(PortErrorsTest, EveryCounterInReadBackoffIsUnknownNotSilent) {
  Timeline tl("port_errors");
  const std::vector<BackedOffRead> backoff = {{"counters/excessive_buffer_overrun_errors", "EIO"},
                                              {"counters/local_link_integrity_errors", "EIO"},
                                              {"counters/link_error_recovery", "EIO"},
                                              {"counters/port_rcv_errors", "EIO"},
                                              {"counters/port_rcv_packets", "EIO"},
                                              {"counters/symbol_error", "EIO"}};
  CheckResult r = tl.Port(seconds(0), {}, {}, 1, backoff);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("counters/excessive_buffer_overrun_errors: EIO, counters/local_link_integrity_errors: "
                                  "EIO, counters/link_error_recovery: EIO, counters/port_rcv_errors: EIO and 2 more "
                                  "on read, retried with backoff"));
}

// A counter file whose text is not a number ("13abc", "-1", more than 2^64-1, 60 KB of digits):
// the devices collector leaves its value out and names the file. The other counters not rising
// must not read as "ok: no error counter over its limit"; the verdict names the file, never its text.
TEST(PortErrorsTest, ACounterFileThatIsNotANumberIsUnknownNamingTheFile) {
  Timeline tl("port_errors");
  tl.unparseable = {"counters/symbol_error"};
  Values v = {{"port_rcv_errors", 0}, {"port_rcv_packets", 1'000'000}, {"link_error_recovery", 0}};
  tl.Port(seconds(0), v);
  v["port_rcv_packets"] += 1'000'000;
  CheckResult r = tl.Port(seconds(15), v);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "cannot judge every error counter: counters/symbol_error holds no count (not a number, or unreadable)");
  EXPECT_THAT(r.fix, HasSubstr("od -c"));
  // Read as a number again: judged again.
  tl.unparseable.clear();
  EXPECT_EQ(tl.Port(seconds(30), v).verdict, Verdict::kOk);
  // A counter that did trip still decides the verdict.
  tl.unparseable = {"counters/symbol_error"};
  v["link_error_recovery"] = 6;
  EXPECT_EQ(tl.Port(seconds(45), v).verdict, Verdict::kFailed);
  // A file no rule reads (port_rcv_data) changes nothing.
  Timeline other("port_errors");
  other.unparseable = {"counters/port_rcv_data"};
  other.Port(seconds(0), v);
  EXPECT_EQ(other.Port(seconds(15), v).verdict, Verdict::kOk);
  // Every counter of the port unreadable as a number: unknown, not silent.
  Timeline none("port_errors");
  none.unparseable = {"counters/link_error_recovery", "counters/symbol_error"};
  r = none.Port(seconds(0), {});
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "cannot judge every error counter: counters/link_error_recovery, counters/symbol_error hold no "
                      "count (not numbers, or unreadable)");
}

TEST(RoceTransportErrorsTest, AHwCounterFileThatIsNotANumberIsUnknownBesideOneInBackoff) {
  Timeline tl("roce_transport_errors");
  tl.unparseable = {"hw_counters/local_ack_timeout_err"};
  const std::vector<BackedOffRead> backoff = {{"hw_counters/out_of_sequence", "EIO"}};
  const Values hw = {{"packet_seq_err", 0}, {"req_rnr_retries_exceeded", 0}};
  const Values counters = {{"port_rcv_packets", 1000}, {"port_xmit_packets", 1000}};
  tl.Port(seconds(0), counters, hw, 1, backoff);
  CheckResult r = tl.Port(seconds(15), counters, hw, 1, backoff);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("cannot judge every error counter: hw_counters/local_ack_timeout_err holds no count "
                                  "(not a number, or unreadable); hw_counters/out_of_sequence: EIO on read"));
  EXPECT_THAT(r.fix, HasSubstr("od -c"));
  EXPECT_THAT(r.fix, HasSubstr("switch mode"));
}

TEST(RoceTransportErrorsTest, AHwCounterInReadBackoffIsUnknown) {
  Timeline tl("roce_transport_errors");
  const std::vector<BackedOffRead> backoff = {{"hw_counters/out_of_sequence", "EOPNOTSUPP"}};
  Values hw = {{"local_ack_timeout_err", 0}, {"rnr_nak_retry_err", 0}};
  Values counters = {{"port_rcv_packets", 1000}, {"port_xmit_packets", 1000}};
  tl.Port(seconds(0), counters, hw, 1, backoff);
  CheckResult r = tl.Port(seconds(15), counters, hw, 1, backoff);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("hw_counters/out_of_sequence: EOPNOTSUPP on read, retried with backoff"));
  EXPECT_EQ(tl.Port(seconds(30), counters, hw).verdict, Verdict::kOk);
}

TEST(RoceTransportErrorsTest, RealMlx5CountersThenLossAboveTheFailedShare) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  Values hw = RealMlx5HwCounters();
  ASSERT_EQ(hw.at("local_ack_timeout_err"), 131u);
  ASSERT_EQ(hw.at("resp_cqe_error"), 8109u);
  const Values counters = {{"port_rcv_packets", 541'889'824}, {"port_xmit_packets", 10'907'922'116}};
  Timeline tl("roce_transport_errors");
  CheckResult r = tl.Port(seconds(0), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("local_ack_timeout_err 131, packet_seq_err 1, out_of_sequence 1, "
                                  "duplicate_request 41"));
  // CNPs and ECN marks are congestion signals: rising, they change nothing.
  hw["roce_slow_restart_cnps"] += 1000;
  r = tl.Port(seconds(15), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  // 300 timeouts and 20 sequence errors over 10,000 packets: 3.2% lost.
  hw["local_ack_timeout_err"] += 300;
  hw["packet_seq_err"] += 20;
  Values more = counters;
  more["port_rcv_packets"] += 5'000;
  more["port_xmit_packets"] += 5'000;
  r = tl.Port(seconds(75), more, hw);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("loss (local_ack_timeout_err +300, packet_seq_err +20) in 75 s, 3.2% of the 10000 "
                                  "packets sent and received (limit 1%): packets were lost and retransmitted"));
  EXPECT_THAT(r.fix, HasSubstr("roce_pfc_priority"));
}

TEST(RoceTransportErrorsTest, ApplicationErrorsWarnAndRnrRetriesExceededFail) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  Values hw = RealMlx5HwCounters();
  hw["req_rnr_retries_exceeded"] = 0;  // a kernel with commit b339e0a (2024)
  Values counters = {{"port_rcv_packets", 1'000'000}, {"port_xmit_packets", 1'000'000}};
  Timeline tl("roce_transport_errors");
  tl.Port(seconds(0), counters, hw);
  hw["resp_cqe_error"] += 3;
  counters["port_xmit_packets"] += 100'000;
  CheckResult r = tl.Port(seconds(15), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("application_errors (resp_cqe_error +3) in 15 s: work requests completed in error"));
  EXPECT_THAT(r.fix, HasSubstr("the NIC is not at fault"));
  // An RNR NAK received is flow control: the queue pair waited and retried within its limit.
  hw["rnr_nak_retry_err"] += 1;
  counters["port_xmit_packets"] += 100'000;
  r = tl.Port(seconds(30), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, Not(HasSubstr("rnr_retries_exceeded")));
  // The queue pair that ran out of RNR retries, and went to the error state, fails.
  hw["req_rnr_retries_exceeded"] += 1;
  r = tl.Port(seconds(45), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("rnr_retries_exceeded (req_rnr_retries_exceeded +1) in 45 s: a queue pair ran out "
                                  "of RNR retries"));
  // Failed first, the warning after it.
  EXPECT_LT(r.reason.find("rnr_retries_exceeded"), r.reason.find("application_errors"));
}

// The values of one port in a saved `rdma statistic` output ("link mlx5_1/1 name value name value ...",
// continuation lines starting with a space).
Values RdmaStatisticValues(const std::string& rel) {
  auto text = ReadRegularFile(testing::RealFixture(rel), kMaxAttributeBytes);
  EXPECT_TRUE(text.ok());
  Values v;
  std::istringstream in(text.ok() ? *text : std::string());
  std::string word, name;
  in >> word >> word;  // "link", "mlx5_1/1"
  while (in >> name >> word) {
    if (auto n = ParseU64(word)) v[name] = *n;
  }
  return v;
}

// A real mlx5 port (sonic-buildimage #21891): rnr_nak_retry_err 1,543 beside req_rnr_retries_exceeded
// 0. RNR NAKs received are flow control (kernel commit 0ad17a8: "the QP retry limit was not
// exceeded"), so their rising never fails the port; only a large share of the packets sent warns.
TEST(RoceTransportErrorsTest, ARealMlx5PortsRnrNaksRisingDoNotFailIt) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  Values hw = RdmaStatisticValues(
      "corpus/116_rdma_statistic_mlx5_sender_rp_cnp_handled144_np_ecn0_sonic_s5248f_sonicbuildimage21891.txt");
  ASSERT_EQ(hw.at("rnr_nak_retry_err"), 1543u);
  ASSERT_EQ(hw.at("req_rnr_retries_exceeded"), 0u);
  Values counters = {{"port_rcv_packets", 80'000'000}, {"port_xmit_packets", 90'000'000}};
  Timeline tl("roce_transport_errors");
  tl.Port(seconds(0), counters, hw);
  // 1,543 more over ten million packets sent: 0.015 %, waits the application may want to know of.
  hw["rnr_nak_retry_err"] += 1543;
  counters["port_xmit_packets"] += 10'000'000;
  counters["port_rcv_packets"] += 10'000'000;
  CheckResult r = tl.Port(seconds(60), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("rnr_nak_retry_err +1543"));
  // 1,543 more over 100,000 packets sent: 1.5 % of them waited for a receiver. A warning naming the
  // application's side, never failed.
  Timeline busy("roce_transport_errors");
  busy.Port(seconds(0), counters, hw);
  hw["rnr_nak_retry_err"] += 1543;
  counters["port_xmit_packets"] += 100'000;
  r = busy.Port(seconds(60), counters, hw);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("rnr_naks_received (rnr_nak_retry_err +1543) in 60 s, 1.5% of the 100000 packets "
                                  "sent (limit 0.1%): RNR NAKs received"));
  EXPECT_THAT(r.reason, Not(HasSubstr("rnr_retries_exceeded (")));
  EXPECT_THAT(r.fix, HasSubstr("post receives earlier or deeper"));
}

// Two counters of one rule rising by 2^63 each sum to 2^64: 0 in a uint64, which read as nothing
// counted. The sum saturates instead.
TEST(RoceTransportErrorsTest, TwoCountersRisingByTwoToThe63EachDoNotSumToZero) {
  const Values counters = {{"port_rcv_packets", 0}, {"port_xmit_packets", 0}};
  Values hw = {{"local_ack_timeout_err", 0}, {"packet_seq_err", 0}};
  Timeline tl("roce_transport_errors");
  tl.Port(seconds(0), counters, hw);
  hw["local_ack_timeout_err"] = std::uint64_t{1} << 63;
  hw["packet_seq_err"] = std::uint64_t{1} << 63;
  Values more = counters;
  more["port_rcv_packets"] = 5'000;
  more["port_xmit_packets"] = 5'000;
  CheckResult r = tl.Port(seconds(15), more, hw);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("loss (local_ack_timeout_err +9223372036854775808, packet_seq_err "
                                  "+9223372036854775808) in 15 s"));
}

TEST(RoceTransportErrorsTest, SoftRoceNamesUnderNetemLoss) {
  // rxe's hw_counters (tests/fixtures/rxe): its packets are its own sent_pkts/rcvd_pkts.
  const Values before = {{"sent_pkts", 51'608}, {"rcvd_pkts", 51'608}, {"rcvd_seq_err", 0},
                         {"completer_retry_err", 12}, {"duplicate_request", 371}, {"out_of_seq_request", 0},
                         {"retry_exceeded_err", 0}, {"retry_rnr_exceeded_err", 0}, {"ack_deferred", 0}};
  Timeline tl("roce_transport_errors");
  tl.Port(seconds(0), {}, before);
  Values after = before;
  after["sent_pkts"] += 20'000;
  after["rcvd_pkts"] += 20'000;
  after["rcvd_seq_err"] += 900;
  after["completer_retry_err"] += 150;
  after["duplicate_request"] += 100;
  after["out_of_seq_request"] += 850;
  CheckResult r = tl.Port(seconds(30), {}, after);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("loss (duplicate_request +100, completer_retry_err +150, rcvd_seq_err +900, "
                                  "out_of_seq_request +850) in 30 s, 5% of the 40000 packets sent and received"));
  // A queue pair that gave up: failed on any increase.
  after["retry_exceeded_err"] += 1;
  r = tl.Port(seconds(45), {}, after);
  EXPECT_THAT(r.reason, HasSubstr("transport_retries_exceeded (retry_exceeded_err +1) in 45 s"));
}

TEST(NetdevErrorsTest, RealMlx5EthtoolDumpsPciSignalIntegrityAndSymbolErrors) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  // isc-projects/ethq's ConnectX dump: tx_pci_signal_integrity 34.
  std::vector<DriverStat> stats =
      ParseEthtoolStatsText(testing::ReadRealFixture("outputs/ethtool-S/isc-projects_ethq__tests_mlx5_core.txt"))
          .stats;
  Timeline tl("netdev_errors");
  CheckResult r = tl.Netdev(seconds(0), stats);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("counted since the last clear: tx_pci_signal_integrity 34"));
  EXPECT_EQ(tl.Netdev(seconds(15), stats).verdict, Verdict::kOk);
  // The netdev list's 1471 (Leon Romanovsky's ConnectX) as the next value.
  for (DriverStat& s : stats) {
    if (s.name == "tx_pci_signal_integrity") s.value = 1471;
  }
  r = tl.Netdev(seconds(30), stats);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("pci_signal_integrity (tx_pci_signal_integrity +1437) in 30 s"));
  for (DriverStat& s : stats) {
    if (s.name == "rx_symbol_err_phy") s.value = 500;
  }
  r = tl.Netdev(seconds(45), stats);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("rx_symbol_err_phy +500 in 45 s, more than 120 within an hour"));
  EXPECT_THAT(r.fix, HasSubstr("`ethtool -m ens1f0np0`"));
}

TEST(NetdevErrorsTest, RealDiscardsAndOutOfBufferAsSharesOfPhyPackets) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  // The XDP regression report's ConnectX: huge rx_discards_phy and rx_out_of_buffer totals.
  std::vector<DriverStat> stats = ParseEthtoolStatsText(testing::ReadRealFixture(
      "outputs/ethtool-S/bpf-list_2024-06-19_xdp-regression_mlx5_kernel-6.5.txt")).stats;
  Timeline tl("netdev_errors");
  tl.Netdev(seconds(0), stats);
  for (DriverStat& s : stats) {
    if (s.name == "rx_packets_phy") s.value += 1'000'000;
    if (s.name == "rx_discards_phy") s.value += 600'000;
  }
  CheckResult r = tl.Netdev(seconds(60), stats);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("rx_discards_phy +600000 in 60 s, 60% of the 1000000 packets received"));
  EXPECT_THAT(r.reason, Not(HasSubstr("rx_out_of_buffer +")));
}

// A driver without mlx5's `ethtool -S` names (ice, bnxt_en, ...) judged on the IEEE 802.3 counters
// of ETHTOOL_MSG_STATS_GET: symbol errors over the hourly limit fail, FCS and alignment errors as a
// share of FramesReceivedOK warn, each naming the standard counter.
TEST(NetdevErrorsTest, StandardStatisticsOfADriverWithoutMlx5Names) {
  Timeline tl("netdev_errors");
  Values v = {{"eth-phy-SymbolErrorDuringCarrier", 0},
              {"eth-mac-FramesReceivedOK", 5'000'000},
              {"eth-mac-FramesTransmittedOK", 4'000'000},
              {"eth-mac-FrameCheckSequenceErrors", 10},
              {"eth-mac-AlignmentErrors", 0},
              {"rmon-etherStatsJabbers", 0}};
  CheckResult r = tl.NetdevWithStandard(seconds(0), {}, false, v);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("counted since the last clear: eth-mac-FrameCheckSequenceErrors 10"));
  v["eth-mac-FramesReceivedOK"] += 1'000'000;
  r = tl.NetdevWithStandard(seconds(15), {}, false, v);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("(4 counters, none rose)"));
  v["eth-phy-SymbolErrorDuringCarrier"] = 500;
  v["eth-mac-FrameCheckSequenceErrors"] += 2'000;
  v["eth-mac-AlignmentErrors"] = 300;
  v["eth-mac-FramesReceivedOK"] += 1'000'000;
  r = tl.NetdevWithStandard(seconds(30), {}, false, v);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("rx_symbol_err_phy (eth-phy-SymbolErrorDuringCarrier +500) in 30 s, more than 120 within an hour"));
  EXPECT_THAT(r.reason, HasSubstr("rx_crc_errors_phy (eth-mac-FrameCheckSequenceErrors +2000) in 30 s, 0.1% of the "
                                  "2000000 packets received"));
  EXPECT_THAT(r.reason, HasSubstr("alignment_errors (eth-mac-AlignmentErrors +300)"));
  EXPECT_THAT(r.fix, HasSubstr("`ethtool -m ens1f0np0`"));
}

// mlx5 reports the same PHY registers both ways: an error counts once, under mlx5's name.
TEST(NetdevErrorsTest, AStandardTwinOfAnMlx5CounterCountsOnce) {
  Timeline tl("netdev_errors");
  std::vector<DriverStat> stats = {{"rx_symbol_err_phy", 0}, {"rx_packets_phy", 1'000'000}};
  Values v = {{"eth-phy-SymbolErrorDuringCarrier", 0}, {"eth-mac-FramesReceivedOK", 1'000'000}};
  tl.NetdevWithStandard(seconds(0), stats, true, v);
  stats[0].value = 100;
  v["eth-phy-SymbolErrorDuringCarrier"] = 100;
  // 100 in 50 min is within 120 an hour; counted twice (200) it would not be.
  CheckResult r = tl.NetdevWithStandard(seconds(3000), stats, true, v);
  EXPECT_EQ(r.verdict, Verdict::kOk) << r.reason;
  EXPECT_THAT(r.reason, HasSubstr("rose: rx_symbol_err_phy +100)"));
  EXPECT_THAT(r.reason, Not(HasSubstr("eth-phy")));
}

// A driver that fills none of the groups (this machine's loopback, veth) and has no mlx5 names
// gives no row: nothing is known, which must not read as ok.
TEST(NetdevErrorsTest, NoStandardStatisticsAndNoDriverNamesIsNoRow) {
  Timeline tl("netdev_errors");
  tl.expected = 0;
  tl.NetdevWithStandard(seconds(0), {}, false, {});
  tl.NetdevWithStandard(seconds(15), {{"rx_packets", 10}}, true, {});
  tl.NetdevWithStandard(seconds(30), {{"rx_packets", 20}}, true, {});
}

TEST(ErrorRatesConfigTest, SectionParsesAndRefusesAFailedShareBelowTheWarning) {
  auto ok = ParseConfig(
      "host:\n  error_rates:\n    window: 5m\n    hold: 30s\n    symbol_errors_per_hour: 60\n    loss_share_failed: 0.05\n", "t.yaml", RegisteredPluginNames());
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  const auto& p = ok->Section<ErrorRatePolicy>();
  EXPECT_EQ(p.window, std::chrono::milliseconds(300'000));
  EXPECT_EQ(p.hold, std::chrono::milliseconds(30'000));
  EXPECT_EQ(p.symbol_errors_per_hour, 60u);
  EXPECT_DOUBLE_EQ(p.loss_share_failed, 0.05);
  auto bad = ParseConfig("host:\n  error_rates:\n    loss_share_warning: 0.1\n    loss_share_failed: 0.01\n", "t.yaml", RegisteredPluginNames());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("t.yaml:3:5: host.error_rates: loss_share_failed must not be below"));
}

}  // namespace
}  // namespace rdmahd
