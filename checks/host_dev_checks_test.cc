#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "core/topology.h"
#include "facts/roce_facts.h"
#include "facts/pcie_facts.h"
#include "facts/plumbing_facts.h"
#include "facts/roce_tos_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

std::vector<CheckResult> Evaluate(const std::string& name, const Snapshot& s, const Config& c = Config{}) {
  return RunRegisteredCheck(name, s, c);
}

// ---- pcie_link ------------------------------------------------------------------------------------

PcieLinkFacts Link(double cur, double max, std::uint32_t cur_w, std::uint32_t max_w) {
  PcieLinkFacts f;
  f.device = "mlx5_0";
  f.pci_function = true;
  f.pci_address = "0000:01:00.0";
  f.current_speed_gts = cur;
  f.max_speed_gts = max;
  f.current_width = cur_w;
  f.max_width = max_w;
  f.config_note = "only 64 bytes of config space readable";
  return f;
}

Snapshot With(const PcieLinkFacts& f) {
  Snapshot s;
  s.Put(PcieFacts{{f}});
  return s;
}

TEST(PcieLinkCheckTest, TheRealCapturesDegradedLinkFailsWithBothValues) {
  // node-exporter-fixtures 0000:01:00.0: 8.0 GT/s under 16.0 GT/s, x4 of x4.
  auto out = Evaluate("pcie_link", With(Link(8.0, 16.0, 4, 4)));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("8.0 GT/s x4"));
  EXPECT_THAT(out[0].reason, HasSubstr("16.0 GT/s x4 (speed)"));
  EXPECT_THAT(out[0].reason, HasSubstr("about 50%"));
  EXPECT_THAT(out[0].reason, HasSubstr("MaxReadReq unknown (only 64 bytes"));
  EXPECT_THAT(out[0].fix, HasSubstr("lspci -vv -s 0000:01:00.0"));
}

// A capture whose device/ is a copied folder gives no PCI address: the fix must not hand lspci -s
// the RDMA device name (lspci takes [[domain:]bus:]device.function), it says where the address is.
TEST(PcieLinkCheckTest, WithoutThePciAddressTheFixSaysWhereToFindIt) {
  PcieLinkFacts f = Link(8.0, 16.0, 8, 16);
  f.device = "mlx5_1";
  f.pci_address.reset();
  auto out = Evaluate("pcie_link", With(f));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].fix, ::testing::Not(HasSubstr("-s mlx5_1")));
  EXPECT_THAT(out[0].fix, HasSubstr("lspci -vv -s <PCI address> |"));
  EXPECT_THAT(out[0].fix, HasSubstr("the PCI address of mlx5_1 is not in this tree"));
  EXPECT_THAT(out[0].fix, HasSubstr("/sys/class/infiniband/mlx5_1/device link"));
}

TEST(PcieLinkCheckTest, NarrowLinkFailsFullLinkIsOk) {
  auto out = Evaluate("pcie_link", With(Link(16.0, 16.0, 8, 16)));
  EXPECT_EQ(out.at(0).verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("(width)"));
  PcieLinkFacts f = Link(16.0, 16.0, 16, 16);
  f.max_read_request_bytes = 4096;
  f.max_payload_bytes = 256;
  out = Evaluate("pcie_link", With(f));
  EXPECT_EQ(out.at(0).verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("MaxReadReq 4096 bytes, MaxPayload 256 bytes"));
}

TEST(PcieLinkCheckTest, MissingValuesAndSoftwareDevicesAreUnknown) {
  PcieLinkFacts f = Link(8.0, 16.0, 4, 4);
  f.current_speed_gts.reset();
  f.note = "/sys/.../current_link_speed: not a PCIe link speed: \"Unknown\"";
  auto out = Evaluate("pcie_link", With(f));
  EXPECT_EQ(out.at(0).verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("Unknown"));
  PcieLinkFacts rxe;
  rxe.device = "rxe0";
  rxe.note = "no PCI function";
  EXPECT_EQ(Evaluate("pcie_link", With(rxe)).at(0).verdict, Verdict::kUnknown);
}

// ---- roce_tos -------------------------------------------------------------------------------------

struct TosNode {
  RoceTosPortFacts port;
  std::map<int, int> dscp_priority{{26, 3}};
  std::uint8_t pfc_mask = 1u << 3;
  TrustMode trust = TrustMode::kDscp;

  TosNode() {
    port.device = "mlx5_0";
    port.port = 1;
    port.source = RoceTosSource::kConfigfs;
    port.configfs_tos = 106;
    port.effective_tos = 106;
  }
  Snapshot Build() const {
    Snapshot s;
    s.Put(RoceTosFacts{{port}});
    Topology topology;
    TopologyDevice d;
    d.name = "mlx5_0";
    TopologyPort tp;
    tp.port = 1;
    tp.link_layer = "Ethernet";
    tp.netdev = "ens1f0np0";
    d.ports.push_back(tp);
    topology.devices.push_back(d);
    topology.links.push_back({"mlx5_0", 1, "ens1f0np0"});
    s.Put(topology);
    RoceQosFacts qos;
    RoceNetdevFacts n;
    n.netdev = "ens1f0np0";
    n.trust = trust;
    n.dscp_priority = dscp_priority;
    DcbState dcb;
    dcb.supported = true;
    PfcConfig pfc;
    pfc.enabled_mask = pfc_mask;
    dcb.pfc = pfc;
    n.dcb = std::make_shared<const DcbState>(dcb);
    qos.netdevs.push_back(n);
    s.Put(qos);
    return s;
  }
};

Config RocePolicy326() {
  Config c;
  c.Section<RocePolicy>().priority = 3;
  c.Section<RocePolicy>().dscp = 26;
  return c;
}

TEST(RoceTosCheckTest, Tos106OnDscp26ToPfcPriority3IsOk) {
  auto out = Evaluate("roce_tos", TosNode().Build(), RocePolicy326());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0/1");
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_THAT(out[0].reason, HasSubstr("default ToS 106 (rdma_cm configfs default_roce_tos) = DSCP 26 -> priority 3"));
}

TEST(RoceTosCheckTest, KernelDefaultZeroFailsWithTheConfigfsFix) {
  TosNode n;
  n.port.source = RoceTosSource::kNoDeviceEntry;
  n.port.configfs_tos.reset();
  n.port.effective_tos = 0;
  auto out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_EQ(out.at(0).verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("default ToS 0 (kernel default: no /sys/kernel/config/rdma_cm/mlx5_0) = DSCP 0"));
  EXPECT_THAT(out[0].fix, HasSubstr("mkdir -p /sys/kernel/config/rdma_cm/mlx5_0 && echo 106 > "
                                    "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"));
  EXPECT_THAT(out[0].fix, HasSubstr("cma_roce_tos -d mlx5_0 -p 1 -t 106"));
  // Without configfs the fix loads rdma_cm and mounts configfs first.
  n.port.source = RoceTosSource::kNoConfigfs;
  out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_THAT(out.at(0).fix, HasSubstr("modprobe rdma_cm && (mountpoint -q /sys/kernel/config"));
  // A wrong mlx5 override is fixed where it is.
  n.port.traffic_class = 96;
  n.port.effective_tos = 96;
  out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_THAT(out.at(0).reason, HasSubstr("ToS 96 (tc/1/traffic_class) = DSCP 24"));
  EXPECT_EQ(out[0].fix, "echo 106 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class");
}

TEST(RoceTosCheckTest, DscpOnTheWrongPriorityOrWithoutPfcFails) {
  TosNode n;
  n.dscp_priority = {{26, 4}};
  auto out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_EQ(out.at(0).verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("maps to priority 4 on ens1f0np0, RoCE priority is 3"));
  EXPECT_EQ(out[0].fix, "dcb app replace dev ens1f0np0 dscp-prio 26:3");
  n.dscp_priority.clear();
  out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_EQ(out.at(0).fix, "dcb app add dev ens1f0np0 dscp-prio 26:3");
  n = TosNode();
  n.pfc_mask = 1u << 4;
  out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_EQ(out.at(0).verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("PFC is off there"));
  EXPECT_EQ(out[0].fix, "dcb pfc set dev ens1f0np0 prio-pfc 3:on");
}

TEST(RoceTosCheckTest, UnknownsAreNeverOkOrFailed) {
  EXPECT_EQ(Evaluate("roce_tos", TosNode().Build(), Config{}).at(0).verdict, Verdict::kUnknown);  // no policy
  TosNode n;
  n.port.effective_tos.reset();
  n.port.note = "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos: not a ToS byte";
  auto out = Evaluate("roce_tos", n.Build(), RocePolicy326());
  EXPECT_EQ(out.at(0).verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("not a ToS byte"));
  n = TosNode();
  n.trust = TrustMode::kPcp;
  EXPECT_EQ(Evaluate("roce_tos", n.Build(), RocePolicy326()).at(0).verdict, Verdict::kUnknown);
  Snapshot only_tos;
  only_tos.Put(RoceTosFacts{{TosNode().port}});
  out = Evaluate("roce_tos", only_tos, RocePolicy326());
  EXPECT_EQ(out.at(0).verdict, Verdict::kUnknown);
  EXPECT_THAT(out[0].reason, HasSubstr("no netdev known"));
}

// ---- kernel_modules, device_access, cpu_governor ----------------------------------------------------

Snapshot WithPlumbing(const PlumbingFacts& f) {
  Snapshot s;
  s.Put(f);
  return s;
}

TEST(KernelModulesCheckTest, MissingModuleFailsWithModprobeUncapturedIsUnknown) {
  PlumbingFacts f;
  f.module_dir_present = true;
  f.modules = {{"ib_uverbs", "verbs", true, "/sys/module/ib_uverbs"}, {"rdma_ucm", "rdma_cm", false, "no /sys/module/rdma_ucm"}};
  auto out = Evaluate("kernel_modules", WithPlumbing(f));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_EQ(out[1].subject, "rdma_ucm");
  EXPECT_EQ(out[1].verdict, Verdict::kFailed);
  EXPECT_THAT(out[1].fix, HasSubstr("modprobe rdma_ucm"));
  f.module_dir_present = false;
  EXPECT_EQ(Evaluate("kernel_modules", WithPlumbing(f)).at(1).verdict, Verdict::kUnknown);
}

CharDeviceFacts Node(std::uint32_t mode, std::uint32_t uid, std::uint32_t gid) {
  CharDeviceFacts c;
  c.path = "/dev/infiniband/uverbs0";
  c.device = "mlx5_0";
  c.present = true;
  c.is_char_device = true;
  c.mode = mode;
  c.uid = uid;
  c.gid = gid;
  return c;
}

Verdict Access(const CharDeviceFacts& c, AccessIdentity who) {
  PlumbingFacts f;
  f.dev_root_present = true;
  f.char_devices = {c};
  f.access = std::move(who);
  auto out = Evaluate("device_access", WithPlumbing(f));
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? Verdict::kUnknown : out[0].verdict;
}

TEST(DeviceAccessCheckTest, PermissionBitsDecideForTheConfiguredIdentity) {
  AccessIdentity everyone;
  EXPECT_EQ(Access(Node(0666, 0, 0), everyone), Verdict::kOk);
  EXPECT_EQ(Access(Node(0660, 0, 0), everyone), Verdict::kFailed);
  AccessIdentity rdma_group{"", "rdma", std::nullopt, {1234}, ""};
  EXPECT_EQ(Access(Node(0660, 0, 1234), rdma_group), Verdict::kOk);
  EXPECT_EQ(Access(Node(0640, 0, 1234), rdma_group), Verdict::kFailed);  // group may only read
  EXPECT_EQ(Access(Node(0660, 0, 999), rdma_group), Verdict::kFailed);
  AccessIdentity user{"trainer", "", 1000, {1000}, ""};
  EXPECT_EQ(Access(Node(0600, 1000, 0), user), Verdict::kOk);
  EXPECT_EQ(Access(Node(0066, 1000, 1000), user), Verdict::kFailed);  // owner bits apply to the owner
  AccessIdentity root{"root", "", 0, {0}, ""};
  EXPECT_EQ(Access(Node(0600, 5, 5), root), Verdict::kOk);
  AccessIdentity unresolved{"ghost", "", std::nullopt, {}, "user ghost not found"};
  EXPECT_EQ(Access(Node(0666, 0, 0), unresolved), Verdict::kUnknown);
}

TEST(DeviceAccessCheckTest, MissingNodesFailUncapturedDevIsUnknown) {
  PlumbingFacts f;
  f.dev_root_present = true;
  CharDeviceFacts missing;
  missing.path = "/dev/infiniband/rdma_cm";
  missing.note = "stat /dev/infiniband/rdma_cm: No such file or directory";
  f.char_devices = {missing};
  auto out = Evaluate("device_access", WithPlumbing(f));
  EXPECT_EQ(out.at(0).verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].fix, HasSubstr("modprobe rdma_ucm"));
  f.dev_root_present = false;
  out = Evaluate("device_access", WithPlumbing(f));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[0].subject, "/dev");
}

TEST(CpuGovernorCheckTest, PolicyJudgesEveryLocalCpu) {
  PlumbingFacts f;
  CpuGovernorFacts g;
  g.device = "mlx5_0";
  g.local_cpulist = "0-3";
  g.cpus_by_governor = {{"performance", 4}};
  f.governors = {g};
  EXPECT_EQ(Evaluate("cpu_governor", WithPlumbing(f)).at(0).verdict, Verdict::kUnknown);  // not configured
  Config c;
  c.Section<CpuGovernorPolicy>().governor = "performance";
  EXPECT_EQ(Evaluate("cpu_governor", WithPlumbing(f), c).at(0).verdict, Verdict::kOk);
  f.governors[0].cpus_by_governor = {{"performance", 2}, {"schedutil", 2}};
  auto out = Evaluate("cpu_governor", WithPlumbing(f), c);
  EXPECT_EQ(out.at(0).verdict, Verdict::kWarning);
  EXPECT_EQ(out[0].fix.rfind("cpupower -c 0-3 frequency-set -g performance", 0), 0u);
  f.governors[0].cpus_by_governor.clear();
  f.governors[0].note = "no readable cpufreq/scaling_governor";
  EXPECT_EQ(Evaluate("cpu_governor", WithPlumbing(f), c).at(0).verdict, Verdict::kUnknown);
}

}  // namespace
}  // namespace rdmahd
