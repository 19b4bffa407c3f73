// hardware_present over the history, collection after collection as the engine runs it: devices,
// ports and netdevs that leave and come back; the inventory the config expects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "config/config.h"
#include "core/check.h"
#include "core/history.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::hours;
using std::chrono::seconds;

const History::TimePoint kT0 = History::TimePoint{} + hours(100);
// 2026-12-02 22:00:00 UTC
const std::chrono::system_clock::time_point kWall0{seconds(1796248800)};

struct Dev {
  std::string name;
  std::optional<std::string> pci;
  std::vector<std::uint32_t> ports = {1};
  std::vector<std::string> netdevs;  // on port 1
  std::uint64_t rate_gbps = 400;
  bool active = true;
};

Snapshot Collection(const std::vector<Dev>& devs, seconds t) {
  Topology topo;
  topo.class_dir_present = true;
  RdmaDevicesFacts facts;
  for (const Dev& d : devs) {
    TopologyDevice& td = topo.devices.emplace_back();
    td.name = d.name;
    td.pci_address = d.pci;
    RdmaDeviceFacts& fd = facts.devices.emplace_back();
    fd.name = d.name;
    for (std::uint32_t p : d.ports) {
      TopologyPort& tp = td.ports.emplace_back();
      tp.port = p;
      RdmaPortFacts& fp = fd.ports.emplace_back();
      fp.port = p;
      fp.device = d.name;
      fp.state = d.active ? SysfsEnumValue{4, "ACTIVE"} : SysfsEnumValue{1, "DOWN"};
      fp.rate_bytes_per_second = d.rate_gbps * 1000000000 / 8;
    }
    for (const std::string& n : d.netdevs) topo.links.push_back({d.name, 1, n});
  }
  Snapshot s;
  s.Put(std::move(topo));
  s.Put(std::move(facts));
  s.taken_at = kWall0 + t;
  return s;
}

struct Timeline {
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("hardware_present")->factory();

  std::vector<CheckResult> At(seconds t, const Snapshot& s) {
    std::vector<CheckResult> out;
    RunCheck("hardware_present", *check, s, config, history, kT0 + t, out);
    return out;
  }
  std::vector<CheckResult> At(seconds t, const std::vector<Dev>& devs) { return At(t, Collection(devs, t)); }
  CheckResult Of(seconds t, const std::vector<Dev>& devs, const std::string& subject) {
    for (CheckResult& r : At(t, devs)) {
      if (r.subject == subject) return r;
    }
    ADD_FAILURE() << "no verdict for " << subject;
    return {};
  }
};

const Dev kMlx0{"mlx5_0", "0000:3b:00.0", {1}, {"ens1f0np0"}};
const Dev kMlx1{"mlx5_1", "0000:3b:00.1", {1}, {"ens1f1np1"}};

TEST(HardwarePresentTest, PresentDevicesAreOkWithWhatTheyHave) {
  Timeline tl;
  std::vector<CheckResult> out = tl.At(seconds(0), {kMlx0, Dev{"rxe0", std::nullopt, {1}, {"veth0"}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].subject, "mlx5_0");
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_EQ(out[0].reason, "present (PCI 0000:3b:00.0), 1 port, netdev ens1f0np0");
  EXPECT_EQ(out[1].reason, "present (no PCI address), 1 port, netdev veth0");
}

TEST(HardwarePresentTest, AVanishedDeviceFailsUntilItReturnsThenSaysRecovered) {
  Timeline tl;
  tl.At(seconds(0), {kMlx0, kMlx1});
  EXPECT_EQ(tl.Of(seconds(15), {kMlx0, kMlx1}, "mlx5_1").verdict, Verdict::kOk);
  CheckResult r = tl.Of(seconds(30), {kMlx0}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason,
            "mlx5_1 (PCI 0000:3b:00.1) is gone with netdev ens1f1np1, port 1: missing since 2026-12-02 22:00:30 UTC "
            "(last seen 2026-12-02 22:00:15 UTC)");
  EXPECT_THAT(r.fix, HasSubstr("lspci -s 0000:3b:00.1"));
  EXPECT_EQ(tl.Of(seconds(30), {kMlx0}, "mlx5_0").verdict, Verdict::kOk) << "the other device is not affected";
  // Sticky: still failed, still naming the time it went, an hour and more later.
  r = tl.Of(seconds(30) + hours(3), {kMlx0}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("missing since 2026-12-02 22:00:30 UTC"));
  // Back.
  r = tl.Of(seconds(45) + hours(3), {kMlx0, kMlx1}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("recovered: mlx5_1 (PCI 0000:3b:00.1) back since 2026-12-03 01:00:45 UTC"));
  EXPECT_THAT(r.reason, HasSubstr("after 3 h away (missing since 2026-12-02 22:00:30 UTC)"));
  EXPECT_EQ(tl.Of(seconds(60) + hours(3), {kMlx0, kMlx1}, "mlx5_1").reason.rfind("recovered", 0), 0u);
  // After kRecoveredFor (1 h): plain present again.
  r = tl.Of(seconds(50) + hours(4), {kMlx0, kMlx1}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "present (PCI 0000:3b:00.1), 1 port, netdev ens1f1np1");
}

// A node whose hardware stays put is judged from what the last full pass found (no recall of the
// history): every change must still be seen at once, the verdicts must be the ones a full pass gives,
// and the history must still hold what a later full pass needs (the time each object was last seen).
TEST(HardwarePresentTest, ASteadyNodeStillSeesEveryChangeAtOnce) {
  Timeline tl;
  for (int i = 0; i < 5; ++i) {
    std::vector<CheckResult> out = tl.At(seconds(15 * i), {kMlx0, kMlx1});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].reason, "present (PCI 0000:3b:00.1), 1 port, netdev ens1f1np1") << "collection " << i;
  }
  // Gone after steady collections: last seen at the last of them.
  CheckResult r = tl.Of(seconds(75), {kMlx0}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("missing since 2026-12-02 22:01:15 UTC (last seen 2026-12-02 22:01:00 UTC)"));
  // Back; steady again while "recovered" lasts, then plain present.
  EXPECT_THAT(tl.Of(seconds(90), {kMlx0, kMlx1}, "mlx5_1").reason, HasSubstr("recovered: "));
  for (int i = 0; i < 3; ++i) EXPECT_THAT(tl.Of(seconds(105 + 15 * i), {kMlx0, kMlx1}, "mlx5_1").reason, HasSubstr("recovered: "));
  EXPECT_EQ(tl.Of(seconds(95) + hours(1), {kMlx0, kMlx1}, "mlx5_1").reason,
            "present (PCI 0000:3b:00.1), 1 port, netdev ens1f1np1");
  EXPECT_EQ(tl.Of(seconds(110) + hours(1), {kMlx0, kMlx1}, "mlx5_1").reason,
            "present (PCI 0000:3b:00.1), 1 port, netdev ens1f1np1");
  // A new PCI address, a netdev gone, a new port: each seen in the collection it happens in.
  const Dev moved{"mlx5_1", "0000:5e:00.1", {1}, {"ens1f1np1"}};
  EXPECT_THAT(tl.Of(seconds(125) + hours(1), {kMlx0, moved}, "mlx5_1").reason, HasSubstr("(PCI 0000:5e:00.1)"));
  EXPECT_THAT(tl.Of(seconds(140) + hours(1), {kMlx0, moved}, "mlx5_1").reason, HasSubstr("(PCI 0000:5e:00.1)"));
  r = tl.Of(seconds(155) + hours(1), {kMlx0, Dev{"mlx5_1", "0000:5e:00.1", {1}, {}}}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("netdev ens1f1np1 is gone"));
  EXPECT_THAT(r.reason, HasSubstr("(last seen 2026-12-02 23:02:20 UTC)"));
  // A failed discovery between steady collections is unknown, not "present".
  Snapshot broken = Collection({}, seconds(170) + hours(1));
  Topology failed;
  failed.failure = "class/infiniband unreadable";
  broken.Put(std::move(failed));
  tl.At(seconds(170) + hours(1), {kMlx0, moved});
  tl.At(seconds(185) + hours(1), {kMlx0, moved});
  for (const CheckResult& v : tl.At(seconds(200) + hours(1), broken)) EXPECT_EQ(v.verdict, Verdict::kUnknown) << v.subject;
  EXPECT_EQ(tl.Of(seconds(215) + hours(1), {kMlx0, moved}, "mlx5_0").verdict, Verdict::kOk);
}

TEST(HardwarePresentTest, APortOrNetdevGoneWhileTheDeviceStaysFailsNamingIt) {
  Timeline tl;
  const Dev two{"mlx5_0", "0000:3b:00.0", {1, 2}, {"ens1f0np0"}};
  tl.At(seconds(0), {two});
  CheckResult r = tl.Of(seconds(15), {kMlx0}, "mlx5_0");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "of mlx5_0 (PCI 0000:3b:00.0), port 2 is gone: missing since 2026-12-02 22:00:15 UTC "
                      "(last seen 2026-12-02 22:00:00 UTC)");
  r = tl.Of(seconds(30), {Dev{"mlx5_0", "0000:3b:00.0", {1}, {}, 400, true}}, "mlx5_0");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("netdev ens1f0np0, port 2 are gone"));
  r = tl.Of(seconds(45), {two}, "mlx5_0");
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("recovered: "));
}

TEST(HardwarePresentTest, TheFirstCollectionOnlyLearns) {
  Timeline tl;
  tl.At(seconds(0), {kMlx0});
  // A device first seen later is present, never "recovered".
  EXPECT_EQ(tl.Of(seconds(15), {kMlx0, kMlx1}, "mlx5_1").reason, "present (PCI 0000:3b:00.1), 1 port, netdev ens1f1np1");
}

TEST(HardwarePresentTest, ADeviceReturningAtAnotherAddressIsNamedThere) {
  Timeline tl;
  tl.At(seconds(0), {kMlx1});
  tl.At(seconds(15), std::vector<Dev>{});
  CheckResult r = tl.Of(seconds(30), {Dev{"mlx5_1", "0000:5e:00.0", {1}, {"ens1f1np1"}}}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("(PCI 0000:5e:00.0)"));
}

TEST(HardwarePresentTest, FailedDiscoveryIsUnknownAndForgetsNothing) {
  Timeline tl;
  tl.At(seconds(0), {kMlx0, kMlx1});
  tl.At(seconds(15), {kMlx0});
  Snapshot broken = Collection({}, seconds(30));
  Topology failed;
  failed.failure = "class/infiniband unreadable";
  broken.Put(std::move(failed));
  std::vector<CheckResult> out = tl.At(seconds(30), broken);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[1].verdict, Verdict::kUnknown);
  CheckResult r = tl.Of(seconds(45), {kMlx0}, "mlx5_1");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("missing since 2026-12-02 22:00:15 UTC")) << "the time it went is kept";
  EXPECT_EQ(tl.Of(seconds(45), {kMlx0}, "mlx5_0").verdict, Verdict::kOk) << "not marked gone by the failure";
}

TEST(HardwarePresentTest, UnreadablePortsAreNotGone) {
  Timeline tl;
  tl.At(seconds(0), {kMlx0});
  Snapshot s = Collection({Dev{"mlx5_0", "0000:3b:00.0", {}, {"ens1f0np0"}}}, seconds(15));
  Topology topo = *s.Get<Topology>();
  topo.devices[0].ports_unreadable = "ports/: Permission denied";
  topo.links.clear();  // the GID tables that name the netdev are under ports/ too
  s.Put(std::move(topo));
  std::vector<CheckResult> out = tl.At(seconds(15), s);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk) << out[0].reason;
}

TEST(HardwarePresentTest, ADeviceTheFilterNowExcludesIsForgotten) {
  Timeline tl;
  tl.At(seconds(0), {kMlx0, kMlx1});
  tl.config.devices.exclude = {"mlx5_1"};
  std::vector<CheckResult> out = tl.At(seconds(15), {kMlx0});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0");
  EXPECT_TRUE(tl.history.Names("hardware_present/mlx5_1/").empty());
}

std::string Numbered(char prefix, int i) {
  std::string s(1, prefix);
  s += std::to_string(i);
  return s;
}

TEST(HardwarePresentTest, RememberedObjectsAreCappedLongestGoneFirst) {
  Timeline tl;
  std::vector<Dev> first, second;
  for (int i = 0; i < 1000; ++i) first.push_back(Dev{Numbered('a', i), std::nullopt, {}, {}, 400, true});
  for (int i = 0; i < 100; ++i) second.push_back(Dev{Numbered('b', i), std::nullopt, {}, {}, 400, true});
  tl.At(seconds(0), first);
  // All 1000 go; 100 others come: the cap (1024) makes room by forgetting gone ones.
  std::vector<CheckResult> out = tl.At(seconds(15), second);
  EXPECT_EQ(tl.history.Names("hardware_present/").size(), 1024u);
  std::size_t failed = 0;
  for (const CheckResult& r : out) {
    if (r.verdict == Verdict::kFailed) ++failed;
    if (r.subject == "b0") {
      EXPECT_EQ(r.reason, "present (no PCI address), 0 ports");
    }
  }
  EXPECT_EQ(failed, 924u);
  // Full of present objects: a newcomer is not remembered, and says so.
  std::vector<Dev> full;
  for (int i = 0; i < 1024; ++i) full.push_back(Dev{Numbered('c', i), std::nullopt, {}, {}, 400, true});
  tl.At(seconds(30), full);
  full.push_back(Dev{"z", std::nullopt, {}, {}, 400, true});
  out = tl.At(seconds(45), full);
  EXPECT_LE(tl.history.Names("hardware_present/").size(), 1024u);
  bool saw = false;
  for (const CheckResult& r : out) {
    if (r.subject != "z") continue;
    saw = true;
    EXPECT_THAT(r.reason, HasSubstr("not remembered"));
  }
  EXPECT_TRUE(saw);
}

// ---- inventory.expected ----

Config Inventory(const std::string& yaml) {
  Result<Config> c = ParseConfig(yaml, "t.yaml", {});
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? *c : Config{};
}

std::string InventoryError(const std::string& yaml) {
  Result<Config> c = ParseConfig(yaml, "t.yaml", {});
  return c.ok() ? "" : c.error().message;
}

CheckResult Node(const Config& config, const std::vector<Dev>& devs) {
  Timeline tl;
  tl.config = config;
  for (CheckResult& r : tl.At(seconds(0), devs)) {
    if (r.subject == "node") return r;
  }
  return {};
}

TEST(HardwarePresentTest, NoInventoryConfiguredNoNodeVerdict) {
  EXPECT_EQ(Node(Config{}, {kMlx0}).subject, "");
}

TEST(HardwarePresentTest, InventoryCatchesAMissingNicAtTheFirstCollection) {
  const Config c = Inventory("inventory:\n  expected:\n    devices: 2\n    names: ['mlx5_.*']\n");
  CheckResult r = Node(c, {kMlx0, Dev{"rxe0", std::nullopt, {1}, {}, 400, true}});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "expected at least 2 devices matching the names, found 1");
  EXPECT_THAT(r.fix, HasSubstr("lspci"));
  r = Node(c, {kMlx0, kMlx1});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "as expected: 2 devices matching the names");
  r = Node(Inventory("inventory:\n  expected:\n    names: ['mlx5_0', 'mlx5_1']\n"), {kMlx0});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "no device matches \"mlx5_1\"");
}

TEST(HardwarePresentTest, InventoryCatchesAPortThatTrainedLowOrStayedDown) {
  const Config c = Inventory("inventory:\n  expected: {ports: 3, min_rate_gbps: 400}\n");
  Dev slow = kMlx1;
  slow.rate_gbps = 200;
  Dev down{"mlx5_2", "0000:5e:00.0", {1}, {}, 400, true};
  down.active = false;
  CheckResult r = Node(c, {kMlx0, slow, down});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "expected at least 3 ports ACTIVE at 400 Gb/s or more, found 1 (mlx5_1/1 at 200 Gb/s, mlx5_2/1 DOWN)");
  Dev fast = kMlx1;
  fast.rate_gbps = 800;
  r = Node(c, {kMlx0, fast, Dev{"mlx5_2", "0000:5e:00.0", {1}, {}, 400, true}});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "as expected: 3 ports ACTIVE at 400 Gb/s or more");
  // A rate alone: every port.
  r = Node(Inventory("inventory:\n  expected: {min_rate_gbps: 400}\n"), {kMlx0, slow});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("expected every one of 2 ports ACTIVE at 400 Gb/s or more, found 1"));
}

TEST(HardwarePresentTest, InventoryConfigErrorsNameTheFileLineAndKey) {
  EXPECT_THAT(InventoryError("inventory:\n  expected:\n    devices: 0\n"),
              HasSubstr("t.yaml:3:14: inventory.expected.devices"));
  EXPECT_THAT(InventoryError("inventory:\n  expected:\n    names: ['mlx5_(']\n"),
              HasSubstr("t.yaml:3:13: inventory.expected.names[0]: invalid regular expression"));
  EXPECT_THAT(InventoryError("inventory:\n  expected:\n    min_rate_gbps: 400000\n"),
              HasSubstr("t.yaml:3:20: inventory.expected.min_rate_gbps"));
  EXPECT_THAT(InventoryError("inventory:\n  expected:\n    port: 8\n"), HasSubstr("did you mean \"ports\""));
  EXPECT_THAT(InventoryError("inventory:\n  expect: {ports: 8}\n"), HasSubstr("did you mean \"expected\""));
}

}  // namespace
}  // namespace rdmahd
