#include "checks/link_flaps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/topology.h"
#include "facts/kernel_log_facts.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using std::chrono::seconds;
using TimePoint = History::TimePoint;
const TimePoint kT0 = TimePoint{} + seconds(100000);

// One port (mlx5_0/1, netdev eth0) collection after collection: the facts the devices and netdev
// collectors would have, the check recording them into a history and evaluating, as the engine
// runs it.
struct Timeline {
  Config config;  // host.link_flaps: 30 s drop window, 600 s window, threshold 1, 900 s recovery
  History history;
  std::uint64_t generation = 1;
  bool listed = true;
  std::unique_ptr<Check> check = CheckRegistry().Find("link_flaps")->factory();
  std::vector<CheckResult> verdicts;
  std::optional<KernelLogFacts> kernel_log;  // put in the snapshot when set

  std::vector<BackedOffRead> read_backoff;  // the port's, as the devices collector records them

  LinkFlapPortFacts At(int t, std::optional<bool> active, std::optional<std::uint64_t> link_downed = std::nullopt,
                       std::optional<std::uint64_t> carrier = std::nullopt) {
    Snapshot s;
    auto topology = std::make_shared<Topology>();
    RdmaDevicesFacts devices;
    if (listed) {
      TopologyDevice& d = topology->devices.emplace_back();
      d.name = "mlx5_0";
      d.generation = generation;
      TopologyPort& tp = d.ports.emplace_back();
      tp.port = 1;
      tp.link_layer = "Ethernet";
      tp.netdev = "eth0";
      RdmaDeviceFacts& df = devices.devices.emplace_back();
      df.name = "mlx5_0";
      RdmaPortFacts& p = df.ports.emplace_back();
      p.device = "mlx5_0";
      p.port = 1;
      if (active) p.state = *active ? SysfsEnumValue{4, "ACTIVE"} : SysfsEnumValue{1, "DOWN"};
      if (link_downed) p.counters = CounterValues::FromPairs({{"link_downed", *link_downed}});
      p.read_backoff = read_backoff;
    }
    RdmaNetdevFacts netdevs;
    NetdevFacts& nf = netdevs.netdevs.emplace_back();
    nf.netdev = "eth0";
    nf.present = true;
    nf.carrier_changes = carrier;
    s.PutShared(std::shared_ptr<const Topology>(std::move(topology)));
    s.Put(std::move(devices));
    s.Put(std::move(netdevs));
    if (kernel_log) s.Put(KernelLogFacts(*kernel_log));
    Snapshot derived;
    verdicts.clear();
    RunCheck("link_flaps", *check, s, config, history, kT0 + seconds(t), verdicts, &derived);
    const auto* facts = derived.Get<LinkFlapFacts>();
    return facts != nullptr && facts->ports.size() == 1 ? facts->ports[0] : LinkFlapPortFacts{};
  }
};

TEST(LinkFlapsTest, DownAndBackWithinTheDropWindowIsAFlapStickyForRecovery) {
  Timeline tl;
  EXPECT_FALSE(tl.At(0, true).flapping);
  EXPECT_FALSE(tl.At(10, false).flapping);  // down: not yet known which
  LinkFlapPortFacts f = tl.At(20, true);     // back after 10 s < 30 s
  EXPECT_TRUE(f.flapping);
  EXPECT_FALSE(f.link_dropped);
  EXPECT_EQ(f.flaps_in_window, 1u);
  ASSERT_EQ(tl.verdicts.size(), 1u);
  EXPECT_EQ(tl.verdicts[0].verdict, Verdict::kFailed);
  EXPECT_EQ(tl.verdicts[0].reason, "1 flap in the last 600 s (threshold 1), last 0 s ago (netdev eth0)");
  for (int t = 30; t < 700; t += 30) tl.At(t, true);  // quiet collections in between
  f = tl.At(700, true);  // out of the 600 s window, within 900 s of the flap
  EXPECT_EQ(f.flaps_in_window, 0u);
  EXPECT_TRUE(f.flapping);
  EXPECT_FALSE(tl.At(921, true).flapping);  // 901 s after the flap
  EXPECT_EQ(tl.verdicts[0].verdict, Verdict::kOk);
}

TEST(LinkFlapsTest, DownLongerThanTheDropWindowIsADropUntilRecoveryAfterComingBack) {
  Timeline tl;
  tl.At(0, true);
  tl.At(10, false);
  EXPECT_FALSE(tl.At(35, false).link_dropped);  // 25 s down
  LinkFlapPortFacts f = tl.At(41, false);       // 31 s down
  EXPECT_TRUE(f.link_dropped);
  EXPECT_DOUBLE_EQ(*f.down_for_seconds, 31);
  f = tl.At(100, true);  // back: a drop, not a flap
  EXPECT_TRUE(f.link_dropped);
  EXPECT_FALSE(f.flapping);
  EXPECT_FALSE(f.down_for_seconds);
  EXPECT_TRUE(tl.At(999, true).link_dropped);
  EXPECT_FALSE(tl.At(1000, true).link_dropped);
}

TEST(LinkFlapsTest, PortNeverActiveIsNoDropAndComingUpIsNoFlap) {
  Timeline tl;
  tl.At(0, false);
  EXPECT_FALSE(tl.At(3600, false).link_dropped);
  Timeline starting;
  starting.At(0, false);  // the daemon starts while the link trains
  LinkFlapPortFacts f = starting.At(10, true);
  EXPECT_FALSE(f.flapping);
  EXPECT_EQ(f.flaps_in_window, 0u);
}

// The kernel log's "Link down" lines (collector kernel_log) as of `now_unix`, `ages` seconds old.
KernelLogFacts KernelLinkDowns(std::int64_t now_unix, const std::vector<std::int64_t>& ages,
                               const std::string& netdev = "eth0") {
  KernelLogFacts log;
  log.readable = true;
  log.now_unix_s = now_unix;
  KernelLogDeviceFacts& d = log.devices.emplace_back();
  d.device = "mlx5_0";
  for (std::int64_t age : ages) {
    KernelEvent& e = d.recent.emplace_back();
    e.name = "link_down";
    e.netdev = netdev;
    e.realtime_s = now_unix - age;
  }
  return log;
}

TEST(LinkFlapsTest, TheKernelLogConfirmsAFlapAndTellsOfOneTheCountersCouldNotSee) {
  // A flap the port's state showed: the kernel's lines are quoted beside it.
  Timeline tl;
  tl.At(0, true);
  tl.At(10, false);
  tl.kernel_log = KernelLinkDowns(1'780'000'000, {12, 700});  // one in the 600 s window, one before it
  tl.At(20, true);
  ASSERT_EQ(tl.verdicts.size(), 1u);
  EXPECT_EQ(tl.verdicts[0].verdict, Verdict::kFailed);
  EXPECT_EQ(tl.verdicts[0].reason,
            "1 flap in the last 600 s (threshold 1), last 0 s ago; the kernel logged 1 link down in the last "
            "600 s, last 12 s ago (netdev eth0)");

  // The daemon started after the flap: no baseline, nothing in the counters, the kernel log says it.
  Timeline started;
  started.kernel_log = KernelLinkDowns(1'780'000'000, {240, 250});
  const LinkFlapPortFacts f = started.At(0, true);
  EXPECT_EQ(f.kernel_link_downs, 2u);
  ASSERT_EQ(started.verdicts.size(), 1u);
  EXPECT_EQ(started.verdicts[0].verdict, Verdict::kWarning);
  EXPECT_THAT(started.verdicts[0].reason, HasSubstr("the kernel logged 2 link downs in the last 600 s, last 240 s ago, "
                                                    "but the port's state and counters showed no flap"));
  EXPECT_THAT(started.verdicts[0].fix, HasSubstr("ethtool -m eth0"));

  // Another netdev's lines, or lines older than the window, are not this port's.
  Timeline other;
  other.kernel_log = KernelLinkDowns(1'780'000'000, {5}, "eth1");
  other.At(0, true);
  EXPECT_EQ(other.verdicts.at(0).verdict, Verdict::kOk);
  other.kernel_log = KernelLinkDowns(1'780'000'000, {601});
  other.At(30, true);
  EXPECT_EQ(other.verdicts.at(0).verdict, Verdict::kOk);
}

TEST(LinkFlapsTest, CounterGrowthBetweenActiveSamplesCountsUnseenFlaps) {
  Timeline tl;
  tl.config.Section<HostLinkFlapPolicy>().threshold = 3;
  tl.At(0, true, 5, 10);
  LinkFlapPortFacts f = tl.At(15, true, 7, 10);  // link_downed +2
  EXPECT_EQ(f.flaps_in_window, 2u);
  EXPECT_FALSE(f.flapping);  // threshold 3
  f = tl.At(30, true, 7, 13);  // carrier_changes +3: two down/up cycles, rounded up
  EXPECT_EQ(f.flaps_in_window, 4u);
  EXPECT_TRUE(f.flapping);
  // A counter going backwards (reset) is no growth, and the flaps counted before stay.
  EXPECT_EQ(tl.At(45, true, 0, 0).flaps_in_window, 4u);
  // Counters after an observed down/up are that flap, not more.
  tl.At(50, false, 0, 1);
  EXPECT_EQ(tl.At(55, true, 1, 2).flaps_in_window, 5u);
}

TEST(LinkFlapsTest, ARecreatedDeviceIsNoCounterGrowthEvenWhenItsCounterIsHigher) {
  Timeline tl;
  tl.config.Section<HostLinkFlapPolicy>().threshold = 3;
  tl.At(0, true, 1, 2);
  tl.At(15, true, 2, 2);  // one unseen flap
  ++tl.generation;        // re-created between collections, its counters already higher
  EXPECT_EQ(tl.At(30, true, 9, 40).flaps_in_window, 1u);
  EXPECT_EQ(tl.At(45, true, 10, 40).flaps_in_window, 2u);  // growth of the new device counts
}

TEST(LinkFlapsTest, UnreadableStateLeavesTheHistoryAlone) {
  Timeline tl;
  tl.At(0, true);
  tl.At(10, false);
  LinkFlapPortFacts f = tl.At(20, std::nullopt);
  EXPECT_FALSE(f.active);
  ASSERT_EQ(tl.verdicts.size(), 1u);
  EXPECT_EQ(tl.verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(tl.verdicts[0].reason, HasSubstr("mlx5_0/ports/1/state unreadable"));
  EXPECT_TRUE(tl.At(25, true).flapping);  // 15 s down
}

// A port in switch mode answers EINVAL on state: the reason names the file and the errno.
TEST(LinkFlapsTest, AStateInReadBackoffSaysSo) {
  Timeline tl;
  tl.read_backoff = {{"state", "EINVAL"}};
  tl.At(0, std::nullopt);
  ASSERT_EQ(tl.verdicts.size(), 1u);
  EXPECT_EQ(tl.verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(tl.verdicts[0].reason,
              HasSubstr("mlx5_0/ports/1/state unreadable (see the devices collector's errors): state: EINVAL on read, "
                        "retried with backoff"));
}

TEST(LinkFlapsTest, APortGoneAndBackWithinTheDropWindowFlappedAndIsForgottenAfterLong) {
  Timeline tl;
  tl.At(0, true);
  tl.listed = false;  // device removed: not reported, counted as down
  tl.At(10, std::nullopt);
  EXPECT_TRUE(tl.verdicts.empty());
  tl.listed = true;
  EXPECT_TRUE(tl.At(20, true).flapping);
  // Gone for longer than drop window + recovery: its history is forgotten.
  tl.listed = false;
  tl.At(30, std::nullopt);
  EXPECT_FALSE(tl.history.Names("link_flaps/mlx5_0/1/").empty());
  tl.At(30 + 931, std::nullopt);
  EXPECT_TRUE(tl.history.Names("link_flaps/mlx5_0/1/").empty());
  tl.listed = true;
  LinkFlapPortFacts f = tl.At(1000, true);  // back as a new port: neither flapped nor dropped
  EXPECT_FALSE(f.flapping);
  EXPECT_FALSE(f.link_dropped);
}

TEST(LinkFlapsTest, DisablingTheCollectorTurnsTheCheckOff) {
  Timeline tl;
  tl.config.collectors["link_flaps"] = false;
  tl.At(0, true);
  EXPECT_TRUE(tl.verdicts.empty());
  EXPECT_EQ(tl.history.series(), 0u);
}

// A port that stays down or up for a long time costs one sample per series, not one per collection.
TEST(LinkFlapsTest, HistoryHoldsChangesNotCollections) {
  Timeline tl;
  tl.At(0, true, 0, 0);
  tl.At(10, false, 1, 1);
  for (int t = 20; t < 20 + 3600 * 24; t += 15) tl.At(t, false, 1, 1);
  EXPECT_EQ(tl.history.Samples("link_flaps/mlx5_0/1/active").size(), 2u);
  EXPECT_TRUE(tl.At(20 + 3600 * 24, false, 1, 1).link_dropped);  // down a day: still a drop
}

// ---- verdicts ------------------------------------------------------------------------------------------

// The windows these tests read reasons against: a 30 s drop window, flaps counted
// over 600 s, a 900 s recovery, flap threshold 1.
LinkFlapFacts FlapWindows() {
  LinkFlapFacts facts;
  facts.drop_window_seconds = 30;
  facts.window_seconds = 600;
  facts.recovery_seconds = 900;
  facts.threshold = 1;
  return facts;
}

TEST(LinkFlapsCheckTest, FlappingAndDroppedFailQuietPortIsOk) {
  LinkFlapFacts facts = FlapWindows();
  LinkFlapPortFacts quiet;
  quiet.device = "mlx5_0";
  quiet.port = 1;
  quiet.netdev = "ens1f0np0";
  quiet.active = true;
  quiet.link_downed = 0;
  LinkFlapPortFacts flapping = quiet;
  flapping.device = "mlx5_1";
  flapping.flapping = true;
  flapping.flaps_in_window = 2;
  flapping.last_flap_age_seconds = 42;
  LinkFlapPortFacts dropped = quiet;
  dropped.device = "mlx5_2";
  dropped.active = false;
  dropped.link_dropped = true;
  dropped.down_for_seconds = 75;
  LinkFlapPortFacts unread = quiet;
  unread.device = "mlx5_3";
  unread.active.reset();
  unread.note = "read /sys/class/infiniband/mlx5_3/ports/1/state: No such device";
  facts.ports = {quiet, flapping, dropped, unread};
  std::vector<CheckResult> out;
  AppendLinkFlapVerdicts(facts, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("no flaps in the last 600 s"));
  EXPECT_EQ(out[1].verdict, Verdict::kFailed);
  EXPECT_THAT(out[1].reason, HasSubstr("2 flaps in the last 600 s (threshold 1), last 42 s ago"));
  EXPECT_THAT(out[1].fix, HasSubstr("ethtool -m ens1f0np0"));
  EXPECT_EQ(out[2].verdict, Verdict::kFailed);
  EXPECT_THAT(out[2].reason, HasSubstr("link down for 75 s, longer than the 30 s drop window"));
  EXPECT_EQ(out[3].verdict, Verdict::kUnknown);
}

TEST(LinkFlapsCheckTest, ReasonTextsAreExact) {
  // The whole reason, for each combination of the optional parts (netdev, link_downed,
  // carrier_changes, port down): operators and log searches read these verbatim.
  LinkFlapFacts facts = FlapWindows();
  LinkFlapPortFacts both;
  both.device = "mlx5_0";
  both.port = 1;
  both.netdev = "ens1f0np0";
  both.active = true;
  both.link_downed = 0;
  both.carrier_changes = 3;
  LinkFlapPortFacts carrier_only_down;
  carrier_only_down.device = "mlx5_1";
  carrier_only_down.port = 2;
  carrier_only_down.active = false;
  carrier_only_down.carrier_changes = 5;
  LinkFlapPortFacts bare;
  bare.device = "mlx5_2";
  bare.port = 1;
  bare.active = true;
  LinkFlapPortFacts flapping = both;
  flapping.device = "mlx5_3";
  flapping.carrier_changes.reset();
  flapping.link_downed = 7;
  flapping.flapping = true;
  flapping.flaps_in_window = 2;
  facts.ports = {both, carrier_only_down, bare, flapping};
  std::vector<CheckResult> out;
  AppendLinkFlapVerdicts(facts, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].subject, "mlx5_0/1");
  EXPECT_EQ(out[0].reason, "no flaps in the last 600 s (netdev ens1f0np0) [link_downed 0, carrier_changes 3]");
  EXPECT_EQ(out[0].fix, "");
  EXPECT_EQ(out[1].subject, "mlx5_1/2");
  EXPECT_EQ(out[1].reason,
            "no flaps in the last 600 s (port down, not yet past the drop window, or never up since the daemon "
            "started) [carrier_changes 5]");
  EXPECT_EQ(out[2].reason, "no flaps in the last 600 s");
  EXPECT_EQ(out[3].verdict, Verdict::kFailed);
  EXPECT_EQ(out[3].reason, "2 flaps in the last 600 s (threshold 1) (netdev ens1f0np0) [link_downed 7]");
  EXPECT_EQ(out[3].fix,
            "check the cable, transceiver and switch port: `ethtool ens1f0np0`, `ethtool -m ens1f0np0` (optical "
            "power), the switch port's error counters and `rdma link show mlx5_3/1`; reseat or replace the "
            "cable/transceiver");
}

}  // namespace
}  // namespace rdmahd
