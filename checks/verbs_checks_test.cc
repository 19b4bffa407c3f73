#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "core/check.h"
#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/verbs_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Check> MakeCheck(const std::string& name) {
  if (const auto* reg = CheckRegistry().Find(name)) return reg->factory();
  ADD_FAILURE() << "check not registered: " << name;
  return nullptr;
}

VerbsDeviceFacts Device(const std::string& name, std::uint32_t active_mtu, std::uint32_t state = 4) {
  VerbsDeviceFacts d;
  d.name = name;
  d.attrs.max_qp = 131072;
  d.attrs.max_cqe = 4194303;
  d.attrs.max_mr_size = 1ull << 40;
  d.attrs.phys_port_cnt = 1;
  VerbsPortAttrs p;
  p.port = 1;
  p.state = state;
  p.active_mtu_bytes = active_mtu;
  p.max_mtu_bytes = 4096;
  d.ports.push_back(p);
  return d;
}

// Verbs facts plus, optionally, the Topology's view of the same port (link layer, netdev) and the
// netdev collector's MTU.
Snapshot SnapshotWith(const VerbsDeviceFacts& d, const std::string& link_layer = "Ethernet",
                      const std::string& netdev = "ens1f0np0", std::optional<std::int64_t> netdev_mtu = 1500) {
  Snapshot s;
  VerbsFacts verbs;
  verbs.queried = true;
  verbs.devices.push_back(d);
  s.Put(verbs);
  Topology topology;
  TopologyDevice dev;
  dev.name = d.name;
  TopologyPort port;
  port.port = 1;
  port.link_layer = link_layer;
  port.netdev = netdev;
  dev.ports.push_back(port);
  topology.devices.push_back(dev);
  s.Put(topology);
  if (!netdev.empty()) {
    RdmaNetdevFacts n;
    NetdevFacts nf;
    nf.netdev = netdev;
    nf.mtu = netdev_mtu;
    n.netdevs.push_back(nf);
    s.Put(n);
  }
  return s;
}

std::vector<CheckResult> Evaluate(const std::string& check, const Snapshot& s, const Config& config) {
  std::vector<CheckResult> out;
  MakeCheck(check)->Evaluate(s, config, out);
  return out;
}

Config WithMinMtu(int mtu) {
  Config c;
  c.Section<PortPolicy>().min_active_mtu = mtu;
  return c;
}

TEST(PortActiveMtuCheckTest, AtOrAboveMinimumIsOk) {
  auto out = Evaluate("port_active_mtu", SnapshotWith(Device("mlx5_0", 4096)), WithMinMtu(4096));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0/1");
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("active MTU 4096"));
  EXPECT_TRUE(out[0].fix.empty());
}

TEST(PortActiveMtuCheckTest, RocePortBelowMinimumFailsAndSaysHowToRaiseTheNetdevMtu) {
  auto out = Evaluate("port_active_mtu", SnapshotWith(Device("mlx5_0", 1024)), WithMinMtu(4096));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("active MTU 1024"));
  EXPECT_THAT(out[0].reason, HasSubstr("netdev ens1f0np0 MTU 1500"));
  EXPECT_THAT(out[0].reason, HasSubstr("below the minimum 4096"));
  EXPECT_THAT(out[0].fix, HasSubstr("ip link set dev ens1f0np0 mtu 4200"));
  EXPECT_THAT(out[0].fix, HasSubstr(">= 4200"));
}

TEST(PortActiveMtuCheckTest, InfinibandPortBelowMinimumPointsAtTheSubnetManager) {
  auto out = Evaluate("port_active_mtu", SnapshotWith(Device("mlx5_2", 2048), "InfiniBand", ""), WithMinMtu(4096));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].fix, HasSubstr("subnet manager"));
  EXPECT_THAT(out[0].fix, ::testing::Not(HasSubstr("ip link")));
}

TEST(PortActiveMtuCheckTest, PortMaximumBelowPolicySaysTheDeviceCannot) {
  VerbsDeviceFacts d = Device("bnxt_re0", 1024);
  d.ports[0].max_mtu_bytes = 2048;
  auto out = Evaluate("port_active_mtu", SnapshotWith(d), WithMinMtu(4096));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].fix, HasSubstr("supports at most 2048"));
}

TEST(PortActiveMtuCheckTest, UnsetPolicyIsUnknownNotConfigured) {
  auto out = Evaluate("port_active_mtu", SnapshotWith(Device("rxe0", 1024)), Config{});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("not configured (ports.min_active_mtu)"));
  EXPECT_THAT(out[0].reason, HasSubstr("active MTU 1024"));
}

TEST(PortActiveMtuCheckTest, PortNotActiveIsUnknown) {
  auto out = Evaluate("port_active_mtu", SnapshotWith(Device("mlx5_0", 1024, 1)), WithMinMtu(4096));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("DOWN"));
}

TEST(PortActiveMtuCheckTest, NoVerbsFactsOrNotQueriedGivesNoVerdicts) {
  EXPECT_TRUE(Evaluate("port_active_mtu", Snapshot{}, WithMinMtu(4096)).empty());
  Snapshot s;
  VerbsFacts not_queried;
  not_queried.not_queried_reason = "verbs not queried: --path.sysfs is not /sys";
  s.Put(not_queried);
  EXPECT_TRUE(Evaluate("port_active_mtu", s, WithMinMtu(4096)).empty());
  EXPECT_TRUE(Evaluate("device_limits", s, Config{}).empty());
}

Config WithLimits(std::optional<std::uint64_t> qp, std::optional<std::uint64_t> cqe,
                  std::optional<std::uint64_t> mr_size) {
  Config c;
  c.Section<DeviceLimitsPolicy>().min_max_qp = qp;
  c.Section<DeviceLimitsPolicy>().min_max_cqe = cqe;
  c.Section<DeviceLimitsPolicy>().min_max_mr_size = mr_size;
  return c;
}

TEST(DeviceLimitsCheckTest, MeetingEveryMinimumIsOk) {
  auto out = Evaluate("device_limits", SnapshotWith(Device("mlx5_0", 4096)), WithLimits(65536, 4194303, 1ull << 34));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0");
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("max_qp 131072"));
}

TEST(DeviceLimitsCheckTest, BelowAnyMinimumFailsNamingEachShortfall) {
  VerbsDeviceFacts d = Device("rxe0", 1024);
  d.attrs.max_cqe = 32767;
  auto out = Evaluate("device_limits", SnapshotWith(d), WithLimits(65536, 1048576, 1ull << 50));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("max_cqe 32767 < 1048576"));
  EXPECT_THAT(out[0].reason, HasSubstr("max_mr_size 1099511627776 < 1125899906842624"));
  EXPECT_THAT(out[0].reason, ::testing::Not(HasSubstr("max_qp")));  // 131072 >= 65536
  EXPECT_THAT(out[0].fix, HasSubstr("ibv_devinfo -v -d rxe0"));
}

TEST(DeviceLimitsCheckTest, OnlyConfiguredMinimumsAreJudged) {
  VerbsDeviceFacts d = Device("mlx5_0", 4096);
  d.attrs.max_cqe = 10;
  auto out = Evaluate("device_limits", SnapshotWith(d), WithLimits(65536, std::nullopt, std::nullopt));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
}

TEST(DeviceLimitsCheckTest, UnsetPolicyIsUnknownNotConfigured) {
  auto out = Evaluate("device_limits", SnapshotWith(Device("mlx5_0", 4096)), Config{});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("not configured (limits.min_max_qp"));
  EXPECT_THAT(out[0].reason, HasSubstr("max_cqe 4194303"));
}

TEST(DeviceLimitsCheckTest, MaxCqAndMaxMrAreJudgedToo) {
  VerbsDeviceFacts d = Device("mlx5_0", 4096);
  d.attrs.max_cq = 1024;
  d.attrs.max_mr = 16777216;
  Config c;
  c.Section<DeviceLimitsPolicy>().min_max_cq = 65536;
  c.Section<DeviceLimitsPolicy>().min_max_mr = 1048576;
  auto out = Evaluate("device_limits", SnapshotWith(d), c);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("max_cq 1024 < 65536"));
  EXPECT_THAT(out[0].reason, ::testing::Not(HasSubstr("max_mr ")));  // 16777216 >= 1048576
  d.attrs.max_cq = 65536;
  out = Evaluate("device_limits", SnapshotWith(d), c);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("max_mr 16777216"));
}

TEST(DeviceLimitsCheckTest, DeviceThatCouldNotBeOpenedIsUnknownWithTheReason) {
  Snapshot s = SnapshotWith(Device("mlx5_0", 4096));
  VerbsFacts verbs = *s.Get<VerbsFacts>();
  verbs.unopened.push_back({"mlx5_1", "open /dev/infiniband/uverbs1: Permission denied"});
  s.Put(verbs);
  Config c;
  c.Section<DeviceLimitsPolicy>().min_max_qp = 1;
  auto out = Evaluate("device_limits", s, c);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_EQ(out[1].subject, "mlx5_1");
  EXPECT_EQ(out[1].verdict, Verdict::kUnknown);
  EXPECT_THAT(out[1].reason, HasSubstr("Permission denied"));
  EXPECT_FALSE(out[1].fix.empty());
}

}  // namespace
}  // namespace rdmahd
