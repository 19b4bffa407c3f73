// The host-readiness collectors pcie, roce_tos, plumbing and link_flaps on the project's host
// fixture, the real captures and generated trees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "core/collector.h"
#include "collectors/host_devices.h"
#include "collectors/link_flaps.h"
#include "collectors/pcie_link.h"
#include "collectors/roce_tos.h"
#include "facts/link_flap_facts.h"
#include "facts/pcie_facts.h"
#include "facts/plumbing_facts.h"
#include "facts/roce_tos_facts.h"
#include "core/check.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::seconds;

std::unique_ptr<Collector> Make(const std::string& name) {
  if (const auto* reg = CollectorRegistry().Find(name)) return reg->factory();
  ADD_FAILURE() << "collector not registered: " << name;
  return nullptr;
}

struct CollectRun {
  Snapshot snapshot;
  CollectorOutcome outcome;
  std::string text;
  Status status;
};

CollectRun CollectWith(Collector& c, const NodeFs& fs, const Config& config = Config{}) {
  CollectRun r;
  const Topology topology = testing::DiscoverTopology(fs, config);
  r.status = c.Collect(CollectContext{fs, config, topology}, r.snapshot, r.outcome);
  MetricSink sink;
  c.Render(r.snapshot, sink);
  r.text = sink.Serialize();
  return r;
}

std::string Host(const std::string& rel) { return testing::ProjectFixture("host/device-readiness/" + rel); }
NodeFs HostFs() { return NodeFs(Host("sys"), Host("proc"), "", Host("dev")); }

// ---- pcie -----------------------------------------------------------------------------------------

TEST(PcieLinkTest, RealCaptureDegradedLink) {
  ASSERT_TRUE(testing::RealFixturesAvailable());
  NodeFs fs(testing::RealFixture("sysfs/node-exporter-fixtures/sys"), "/nonexistent");
  PcieLinkFacts f = ReadPcieLink(fs, "mlx5_0", fs.Sys("devices/pci0000:00/0000:00:02.1/0000:01:00.0"));
  ASSERT_TRUE(f.current_speed_gts && f.max_speed_gts && f.current_width && f.max_width) << f.note;
  EXPECT_DOUBLE_EQ(*f.current_speed_gts, 8.0);
  EXPECT_DOUBLE_EQ(*f.max_speed_gts, 16.0);
  EXPECT_EQ(*f.current_width, 4u);
  EXPECT_EQ(*f.max_width, 4u);
  EXPECT_EQ(f.current_speed_text, "8.0 GT/s PCIe");
  // No config file in the capture: MaxReadReq unknown, naming the file as the kernel's path.
  EXPECT_FALSE(f.max_read_request_bytes);
  EXPECT_THAT(f.config_note, HasSubstr("/sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0/config"));
}

TEST(PcieLinkTest, HostFixtureDevicesAndMetrics) {
  auto c = Make("pcie");
  NodeFs fs = HostFs();
  CollectRun r = CollectWith(*c, fs);
  ASSERT_TRUE(r.status.ok());
  const auto* facts = r.snapshot.Get<PcieFacts>();
  ASSERT_NE(facts, nullptr);
  ASSERT_EQ(facts->devices.size(), 2u);
  const PcieLinkFacts& ok = facts->devices[0];
  EXPECT_EQ(ok.pci_address, "0000:3b:00.0");
  EXPECT_FALSE(ok.max_read_request_bytes);  // a 64-byte config space, as non-root sees it
  EXPECT_THAT(ok.config_note, HasSubstr("only 64 bytes"));
  const PcieLinkFacts& slow = facts->devices[1];
  EXPECT_EQ(slow.max_read_request_bytes, 4096u);
  EXPECT_EQ(slow.max_payload_bytes, 256u);
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_link_degraded{device=\"mlx5_1\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_link_degraded{device=\"mlx5_0\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_link_current_transfers_per_second{device=\"mlx5_1\"} 8000000000\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_max_read_request_bytes{device=\"mlx5_1\"} 4096\n"));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("rdma_pcie_max_read_request_bytes{device=\"mlx5_0\"}")));
}

// A small tree: one device whose PCI function has the given link files.
void WritePciDevice(const testing::TempDir& t, const std::string& speed) {
  t.MkDir("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/ports/1");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  t.Symlink("../../../0000:01:00.0", "sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/device");
  t.Symlink("../../devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0", "sys/class/infiniband/mlx5_0");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/current_link_speed", speed);
  t.Write("sys/devices/pci0000:00/0000:01:00.0/max_link_speed", "16.0 GT/s PCIe\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/current_link_width", "16\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/max_link_width", "16\n");
}

std::string ConfigWithMrrs(unsigned code) {
  std::string cfg(256, '\0');
  cfg[0x06] = 0x10;
  cfg[0x34] = 0x40;
  cfg[0x40] = 0x10;
  cfg[0x48] = 0;
  cfg[0x49] = static_cast<char>(code << 4);
  return cfg;
}

TEST(PcieLinkTest, UnknownSpeedTextIsUnknownAndConfigIsReadAtMostEveryInterval) {
  testing::TempDir t;
  WritePciDevice(t, "Unknown\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/config", ConfigWithMrrs(2));  // 512
  auto now = std::chrono::steady_clock::time_point{} + seconds(1000);
  PcieLinkCollector c([&] { return now; });
  NodeFs fs(t.path() + "/sys", "/nonexistent");
  CollectRun r = CollectWith(c, fs);
  const PcieLinkFacts& f = r.snapshot.Get<PcieFacts>()->devices.at(0);
  EXPECT_FALSE(f.current_speed_gts);
  EXPECT_THAT(f.note, HasSubstr("/sys/class/infiniband/mlx5_0/device/current_link_speed: not a PCIe link speed"));
  EXPECT_EQ(f.max_read_request_bytes, 512u);
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("rdma_pcie_link_degraded")));  // unknown, not 0 or 1

  t.Write("sys/devices/pci0000:00/0000:01:00.0/config", ConfigWithMrrs(5));  // setpci to 4096
  now += seconds(10);
  EXPECT_EQ(CollectWith(c, fs).snapshot.Get<PcieFacts>()->devices.at(0).max_read_request_bytes, 512u);
  now += PcieLinkCollector::kConfigRereadInterval;
  EXPECT_EQ(CollectWith(c, fs).snapshot.Get<PcieFacts>()->devices.at(0).max_read_request_bytes, 4096u);
}

// The pcie collector's run over a tree holding one RDMA device, `name`, without a device/ link.
CollectRun PcieOfDeviceWithoutDeviceLink(const std::string& name) {
  testing::TempDir t;
  t.Write("sys/class/infiniband/" + name + "/ports/1/link_layer", "Ethernet\n");
  auto c = Make("pcie");
  return CollectWith(*c, NodeFs(t.path() + "/sys", "/nonexistent"));
}

TEST(PcieLinkTest, SoftwareDeviceHasNoPciFunction) {
  CollectRun r = PcieOfDeviceWithoutDeviceLink("rxe0");
  const PcieLinkFacts& f = r.snapshot.Get<PcieFacts>()->devices.at(0);
  EXPECT_FALSE(f.pci_function);
  EXPECT_THAT(f.note, HasSubstr("software RDMA device"));
  EXPECT_EQ(r.text, "");
}

// A hardware device whose device/ link a capture left out is not called a software device.
TEST(PcieLinkTest, HardwareDeviceWithoutDeviceLinkIsNotCalledSoftware) {
  CollectRun r = PcieOfDeviceWithoutDeviceLink("mlx5_0");
  const PcieLinkFacts& f = r.snapshot.Get<PcieFacts>()->devices.at(0);
  EXPECT_FALSE(f.pci_function);
  EXPECT_THAT(f.note, Not(HasSubstr("software")));
  EXPECT_THAT(f.note, HasSubstr("mlx5_0 has no device/ link: not captured"));
}

// ---- roce_tos -------------------------------------------------------------------------------------

TEST(RoceTosTest, HostFixtureConfigfsAndKernelDefault) {
  auto c = Make("roce_tos");
  NodeFs fs = HostFs();
  CollectRun r = CollectWith(*c, fs);
  const auto* facts = r.snapshot.Get<RoceTosFacts>();
  ASSERT_NE(facts, nullptr);
  ASSERT_EQ(facts->ports.size(), 2u);
  EXPECT_EQ(facts->ports[0].source, RoceTosSource::kConfigfs);
  EXPECT_EQ(facts->ports[0].effective_tos, 106u);
  EXPECT_EQ(facts->ports[1].source, RoceTosSource::kNoDeviceEntry);
  EXPECT_EQ(facts->ports[1].effective_tos, 0u);
  EXPECT_THAT(facts->ports[1].note, HasSubstr("no /sys/kernel/config/rdma_cm/mlx5_1"));
  EXPECT_THAT(r.text, HasSubstr("rdma_roce_default_tos{device=\"mlx5_0\",port=\"1\",source=\"configfs\"} 106\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_roce_default_tos{device=\"mlx5_1\",port=\"1\",source=\"kernel_default\"} 0\n"));
}

TEST(RoceTosTest, TrafficClassOverridesAndBadFilesAreUnknown) {
  testing::TempDir t;
  WritePciDevice(t, "16.0 GT/s PCIe\n");
  auto now = std::chrono::steady_clock::time_point{} + seconds(100000);
  auto c = std::make_unique<RoceTosCollector>([&] { return now; });
  NodeFs fs(t.path() + "/sys", "/nonexistent");
  // No configfs at all: the kernel default.
  CollectRun r = CollectWith(*c, fs);
  EXPECT_EQ(r.snapshot.Get<RoceTosFacts>()->ports.at(0).source, RoceTosSource::kNoConfigfs);
  EXPECT_EQ(r.snapshot.Get<RoceTosFacts>()->ports.at(0).effective_tos, 0u);
  // mlx5's per-port override wins over configfs. configfs is looked up on every collection; a
  // traffic_class file that was absent is looked up again after kNetdevRelistInterval.
  t.Write("sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=106\n");
  now += kNetdevRelistInterval - seconds(1);
  r = CollectWith(*c, fs);
  EXPECT_EQ(r.snapshot.Get<RoceTosFacts>()->ports.at(0).source, RoceTosSource::kConfigfs);
  EXPECT_FALSE(r.snapshot.Get<RoceTosFacts>()->ports.at(0).traffic_class_file);
  now += seconds(1);
  r = CollectWith(*c, fs);
  EXPECT_EQ(r.snapshot.Get<RoceTosFacts>()->ports.at(0).effective_tos, 106u);
  EXPECT_THAT(r.text, HasSubstr("source=\"traffic_class\"} 106"));
  // An unset override (-1) leaves configfs in force.
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=-1\n");
  EXPECT_EQ(CollectWith(*c, fs).snapshot.Get<RoceTosFacts>()->ports.at(0).effective_tos, 0u);
  // A malformed override: unknown, not whatever configfs says.
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=x\n");
  EXPECT_FALSE(CollectWith(*c, fs).snapshot.Get<RoceTosFacts>()->ports.at(0).effective_tos);
  t.Write("sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=-1\n");
  // A malformed configfs value: unknown, not 0.
  t.Write("sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "lots\n");
  r = CollectWith(*c, fs);
  const RoceTosPortFacts& p = r.snapshot.Get<RoceTosFacts>()->ports.at(0);
  EXPECT_FALSE(p.effective_tos);
  EXPECT_THAT(p.note, HasSubstr("not a ToS byte"));
  EXPECT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("rdma_roce_default_tos{")));
}

// ---- plumbing -------------------------------------------------------------------------------------

TEST(PlumbingTest, HostFixture) {
  auto c = Make("plumbing");
  NodeFs fs = HostFs();
  CollectRun r = CollectWith(*c, fs);
  const auto* f = r.snapshot.Get<PlumbingFacts>();
  ASSERT_NE(f, nullptr);
  std::map<std::string, bool> loaded;
  for (const ModuleFacts& m : f->modules) loaded[m.name] = m.loaded;
  EXPECT_EQ(loaded, (std::map<std::string, bool>{
                        {"ib_core", true}, {"ib_uverbs", true}, {"rdma_ucm", false}, {"mlx5_core", true}}));
  ASSERT_EQ(f->char_devices.size(), 3u);
  EXPECT_EQ(f->char_devices[0].path, "/dev/infiniband/uverbs0");
  EXPECT_EQ(f->char_devices[0].device, "mlx5_0");
  EXPECT_TRUE(f->char_devices[0].present);
  EXPECT_FALSE(f->char_devices[0].is_char_device);  // a regular file stands in for it
  EXPECT_EQ(f->char_devices[2].path, "/dev/infiniband/rdma_cm");
  ASSERT_EQ(f->governors.size(), 2u);
  EXPECT_EQ(f->governors[0].cpus_by_governor,
            (std::map<std::string, std::uint32_t>{{"performance", 2}, {"powersave", 2}}));
  EXPECT_EQ(f->iommu.mode, "passthrough");
  EXPECT_EQ(f->iommu.options, "intel_iommu=on iommu=pt");
  EXPECT_THAT(r.text, HasSubstr("rdma_kernel_module_loaded{module=\"rdma_ucm\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_cpu_governor_cpus{device=\"mlx5_1\",governor=\"powersave\"} 2\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_host_iommu_info{mode=\"passthrough\",options=\"intel_iommu=on iommu=pt\"} 1\n"));
}

// A uverbs entry that goes missing while the daemon runs (a device being registered or removed) is
// settling for 10 s, not failed at once; one missing at the first collection is judged at once.
TEST(PlumbingTest, UverbsMissingWhileRunningSettlesButMissingAtStartIsJudged) {
  testing::TempDir t;
  const std::string host = Host("");
  std::filesystem::copy(host, t.path(), std::filesystem::copy_options::recursive |
                                             std::filesystem::copy_options::copy_symlinks);
  NodeFs fs(t.path() + "/sys", t.path() + "/proc", "", t.path() + "/dev");
  auto settling_of = [](const CollectRun& r, const std::string& device) -> std::optional<bool> {
    for (const CharDeviceFacts& c : r.snapshot.Get<PlumbingFacts>()->char_devices) {
      if (c.device == device) return c.path.empty() ? std::optional<bool>(c.settling) : std::nullopt;
    }
    return std::nullopt;
  };
  auto running = Make("plumbing");
  CollectRun first = CollectWith(*running, fs);
  EXPECT_EQ(settling_of(first, "mlx5_1"), std::nullopt);  // uverbs1 names it: present
  std::filesystem::remove_all(t.path() + "/sys/class/infiniband_verbs/uverbs1");
  CollectRun going = CollectWith(*running, fs);
  EXPECT_EQ(settling_of(going, "mlx5_1"), true);
  auto verdicts = RunRegisteredCheck("device_access", going.snapshot, Config{});
  bool unknown = false;
  for (const auto& v : verdicts) unknown |= v.subject == "mlx5_1" && v.verdict == Verdict::kUnknown;
  EXPECT_TRUE(unknown);

  auto fresh = Make("plumbing");  // a daemon starting (or `check`) on the same tree
  EXPECT_EQ(settling_of(CollectWith(*fresh, fs), "mlx5_1"), false);
  EXPECT_EQ(settling_of(CollectWith(*fresh, fs), "mlx5_1"), false);  // and stays judged
}

TEST(PlumbingTest, UncapturedPartsAreAbsentNotMissing) {
  testing::TempDir t;
  WritePciDevice(t, "16.0 GT/s PCIe\n");
  t.Write("sys/devices/pci0000:00/0000:01:00.0/local_cpulist", "0-3,2x\n");
  auto c = Make("plumbing");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  CollectRun r = CollectWith(*c, fs);
  const auto* f = r.snapshot.Get<PlumbingFacts>();
  EXPECT_FALSE(f->module_dir_present);
  EXPECT_FALSE(f->dev_root_present);
  EXPECT_EQ(f->dev_root, t.path() + "/dev");  // beside the sysfs root, never this machine's /dev
  EXPECT_FALSE(f->iommu.cmdline_read);
  EXPECT_THAT(f->iommu.note, HasSubstr("/proc/cmdline"));
  EXPECT_THAT(f->governors.at(0).note, HasSubstr("local_cpulist: cpulist \"0-3,2x\": bad number"));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("rdma_kernel_module_loaded")));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("rdma_char_device_present")));
}

TEST(PlumbingTest, DeviceNodesAreStattedNotFollowedAndIdentitiesResolve) {
  testing::TempDir t;
  WritePciDevice(t, "16.0 GT/s PCIe\n");
  t.Write("sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
  t.MkDir("dev/infiniband");
  t.Symlink("/dev/null", "dev/infiniband/uverbs0");  // lstat: a symlink, not the host's /dev/null
  Config config;
  config.Section<HostDeviceAccessPolicy>().user = "root";
  config.Section<HostDeviceAccessPolicy>().group = "4242";
  config.Section<HostDeviceAccessPolicy>().user = "4243";
  auto c = Make("plumbing");
  NodeFs fs(t.path() + "/sys", "/nonexistent", "", t.path() + "/dev");
  CollectRun r = CollectWith(*c, fs, config);
  const auto* f = r.snapshot.Get<PlumbingFacts>();
  ASSERT_EQ(f->char_devices.size(), 2u);
  EXPECT_TRUE(f->char_devices[0].present);
  EXPECT_FALSE(f->char_devices[0].is_char_device);
  EXPECT_FALSE(f->char_devices[1].present);  // rdma_cm
  EXPECT_THAT(f->char_devices[1].note, HasSubstr("stat /dev/infiniband/rdma_cm: No such file"));
  // Numeric ids need no passwd entry.
  EXPECT_EQ(f->access.uid, 4243u);
  EXPECT_EQ(f->access.gids, std::vector<std::uint32_t>{4242});

  // A name on a captured tree would be this machine's account, not the node's: not looked up.
  config.Section<HostDeviceAccessPolicy>().user = "root";
  config.Section<HostDeviceAccessPolicy>().group = "root";
  r = CollectWith(*c, fs, config);
  EXPECT_FALSE(r.snapshot.Get<PlumbingFacts>()->access.uid);
  EXPECT_TRUE(r.snapshot.Get<PlumbingFacts>()->access.gids.empty());
  EXPECT_THAT(r.snapshot.Get<PlumbingFacts>()->access.note,
              HasSubstr("user root is a name, not looked up for a captured node"));
  EXPECT_THAT(r.snapshot.Get<PlumbingFacts>()->access.note, HasSubstr("; group root is a name"));
}

TEST(PlumbingTest, AccessNamesAreLookedUpOnTheLiveNodeOnly) {
  HostDeviceAccessPolicy p;
  p.user = "root";
  AccessIdentity live = ResolveAccess(p, /*look_up_names=*/true);
  EXPECT_EQ(live.uid, 0u);
  EXPECT_TRUE(live.note.empty());
  AccessIdentity captured = ResolveAccess(p, /*look_up_names=*/false);
  EXPECT_FALSE(captured.uid);
  EXPECT_THAT(captured.note, HasSubstr("give the numeric id in host.device_access"));
  p.user = "no-such-user-rdmahd";
  EXPECT_THAT(ResolveAccess(p, true).note, HasSubstr("user no-such-user-rdmahd not found"));
  p.user = "0";
  p.group = "4242";
  captured = ResolveAccess(p, false);
  EXPECT_EQ(captured.uid, 0u);
  EXPECT_EQ(captured.gids, std::vector<std::uint32_t>{4242});
}

// ---- link_flaps -----------------------------------------------------------------------------------
// The link history is the link_flaps check's (checks/link_flaps_test.cc); the collector renders the
// facts the check publishes and reads no file of its own.
TEST(LinkFlapsTest, CollectorReadsNothingAndRendersTheChecksFacts) {
  testing::TempDir t;
  NodeFs fs(t.path() + "/sys", "/nonexistent");
  LinkFlapCollector c;
  CollectRun r = CollectWith(c, fs);
  EXPECT_EQ(r.snapshot.Get<LinkFlapFacts>(), nullptr);
  EXPECT_EQ(r.text, "");
  LinkFlapFacts facts;
  LinkFlapPortFacts& p = facts.ports.emplace_back();
  p.device = "mlx5_0";
  p.port = 1;
  p.flapping = true;
  p.flaps_in_window = 2;
  Snapshot s;
  s.Put(facts);
  MetricSink sink;
  c.Render(s, sink);
  const std::string text = sink.Serialize();
  EXPECT_THAT(text, HasSubstr("rdma_port_flapping{device=\"mlx5_0\",port=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("rdma_port_link_dropped{device=\"mlx5_0\",port=\"1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("rdma_port_flaps_in_window{device=\"mlx5_0\",port=\"1\"} 2\n"));
}

}  // namespace
}  // namespace rdmahd
