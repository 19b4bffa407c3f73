#include "collectors/topology_discovery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "config/config.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using V = std::vector<RdmaNetdev>;

NodeFs FixtureFs() {
  return NodeFs(testing::ProjectFixture("roce/pfc-off/sys"), testing::ProjectFixture("roce/pfc-off/proc"));
}

Topology DiscoverOnce(const NodeFs& fs, const Config& config = Config{}) {
  TopologyDiscovery discovery;
  return discovery.Discover(fs, config);
}

TEST(TopologyDiscoveryTest, GidTableAndDeviceNetFallbackEthernetOnly) {
  Topology t = DiscoverOnce(FixtureFs());
  // The capture lacks some GIDs' gid_attrs (mlx5_0's ndevs/3, ...): each costs that value only.
  EXPECT_FALSE(t.errors.empty());
  for (const std::string& e : t.errors) EXPECT_NE(e.find("/gid_attrs/"), std::string::npos) << e;
  EXPECT_FALSE(t.failure);
  // mlx5_0 from gid_attrs/ndevs (duplicates and the empty GID entry folded), mlx5_1 from
  // device/net + dev_port, mlx5_2 (InfiniBand, ib0) skipped.
  EXPECT_EQ(t.links, (V{{"mlx5_0", 1, "ens1f0np0"}, {"mlx5_1", 1, "ens1f1np1"}}));
  EXPECT_EQ(t.Netdevs(), (std::vector<std::string>{"ens1f0np0", "ens1f1np1"}));
  ASSERT_EQ(t.devices.size(), 3u);
  EXPECT_EQ(t.devices[2].name, "mlx5_2");
  EXPECT_EQ(t.devices[2].ports.at(0).link_layer, "InfiniBand");
}

// Every fixture with RoCE ports names its netdevs, and the GID-derived port netdev is one of them.
TEST(TopologyDiscoveryTest, EveryRoceFixtureLinksItsPortsToNetdevs) {
  for (const std::string& sys : {testing::ProjectFixture("roce/pfc-off/sys"),
                                testing::ProjectFixture("sysfs/mlx5-roce/sys"),
                                testing::ProjectFixture("rxe/sys")}) {
    SCOPED_TRACE(sys);
    Topology t = DiscoverOnce(NodeFs(sys, "/nonexistent"));
    EXPECT_FALSE(t.links.empty());
    for (const TopologyDevice& d : t.devices) {
      for (const TopologyPort& p : d.ports) {
        if (!p.IsEthernet() || p.netdev.empty()) continue;
        EXPECT_NE(std::find(t.links.begin(), t.links.end(), RdmaNetdev{d.name, static_cast<int>(p.port), p.netdev}),
                  t.links.end())
            << d.name << "/" << p.port;
      }
    }
  }
}

TEST(TopologyDiscoveryTest, DeviceFilterApplies) {
  Config config;
  config.devices.exclude = {"mlx5_1"};
  Topology t = DiscoverOnce(FixtureFs(), config);
  EXPECT_EQ(t.links, (V{{"mlx5_0", 1, "ens1f0np0"}}));
  EXPECT_EQ(t.FindDevice("mlx5_1"), nullptr);
}

TEST(TopologyDiscoveryTest, NodeWithoutRdmaIsEmptyNotAnError) {
  testing::TempDir dir;
  Topology t = DiscoverOnce(NodeFs(dir.path(), dir.path()));
  EXPECT_FALSE(t.class_dir_present);
  EXPECT_TRUE(t.devices.empty());
  EXPECT_TRUE(t.links.empty());
  EXPECT_TRUE(t.errors.empty());
  EXPECT_FALSE(t.failure);
}

TEST(TopologyDiscoveryTest, UnlistableClassDirIsAFailureNamingIt) {
  testing::TempDir dir;
  dir.Write("class/infiniband", "not a directory\n");
  Topology t = DiscoverOnce(NodeFs(dir.path(), dir.path()));
  ASSERT_TRUE(t.failure);
  EXPECT_NE(t.failure->find("class/infiniband"), std::string::npos) << *t.failure;
}

TEST(TopologyDiscoveryTest, MultiPortFallbackUsesDevPort) {
  testing::TempDir dir;
  dir.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/ports/2/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p0/dev_port", "0\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p1/dev_port", "1\n");
  Topology t = DiscoverOnce(NodeFs(dir.path(), dir.path()));
  EXPECT_EQ(t.links, (V{{"mlx5_0", 1, "p0"}, {"mlx5_0", 2, "p1"}}));
}

// The device/net fallback (ports whose GIDs name no netdev) is listed when the device is discovered
// or once kNetdevRelistInterval passed; the collections in between list nothing and give the same
// answer.
TEST(TopologyDiscoveryTest, FallbackIsListedOnDiscoveryOrAfterTheInterval) {
  testing::TempDir dir;
  dir.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/ports/2/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p0/dev_port", "0\n");
  NodeFs fs(dir.path(), dir.path());
  auto clock = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  TopologyDiscovery discovery([clock] { return *clock; });
  const Config config;
  EXPECT_EQ(discovery.Discover(fs, config).links, (V{{"mlx5_0", 1, "p0"}}));
  const FsWork listed = discovery.work();
  EXPECT_EQ(discovery.Discover(fs, config).links, (V{{"mlx5_0", 1, "p0"}}));
  EXPECT_EQ(discovery.work(), listed);  // steady state: nothing listed or opened

  dir.Write("class/infiniband/mlx5_0/device/net/p1/dev_port", "1\n");  // nothing signals this one
  *clock += kNetdevRelistInterval - std::chrono::seconds(1);
  EXPECT_EQ(discovery.Discover(fs, config).links, (V{{"mlx5_0", 1, "p0"}}));
  EXPECT_EQ(discovery.work(), listed);

  *clock += std::chrono::seconds(1);
  const V both{{"mlx5_0", 1, "p0"}, {"mlx5_0", 2, "p1"}};
  EXPECT_EQ(discovery.Discover(fs, config).links, both);
  EXPECT_EQ(discovery.work().listings, listed.listings + 1);
  const FsWork relisted = discovery.work();
  EXPECT_EQ(discovery.Discover(fs, config).links, both);
  EXPECT_EQ(discovery.work(), relisted);
}

// A netdev renamed under an unchanged GID (udev renaming eth0 after the GID was made) is seen
// within kNetdevRelistInterval, not only when the GID changes.
TEST(TopologyDiscoveryTest, RenamedNetdevUnderAnUnchangedGidIsSeenAfterTheInterval) {
  testing::TempDir dir;
  const std::string port = "class/infiniband/rxe0/ports/1/";
  dir.Write(port + "link_layer", "Ethernet\n");
  dir.Write(port + "gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
  dir.Write(port + "gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  dir.Write(port + "gid_attrs/types/0", "RoCE v2\n");
  dir.Write(port + "gid_attrs/ndevs/0", "eth0\n");
  NodeFs fs(dir.path(), dir.path());
  auto clock = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  TopologyDiscovery discovery([clock] { return *clock; });
  const Config config;
  EXPECT_EQ(discovery.Discover(fs, config).links, (V{{"rxe0", 1, "eth0"}}));
  dir.Write(port + "gid_attrs/ndevs/0", "ens3\n");
  EXPECT_EQ(discovery.Discover(fs, config).links, (V{{"rxe0", 1, "eth0"}}));  // cached with the GID
  *clock += kNetdevRelistInterval;
  Topology t = discovery.Discover(fs, config);
  EXPECT_EQ(t.links, (V{{"rxe0", 1, "ens3"}}));
  EXPECT_EQ(t.devices.at(0).ports.at(0).netdev, "ens3");
}

// A device re-created under the same name gets a new generation (collectors drop what they hold).
TEST(TopologyDiscoveryTest, RecreatedDeviceGetsANewGeneration) {
  testing::TempDir dir;
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  dir.Symlink("../../devices/virtual/infiniband/rxe0", "class/infiniband/rxe0");
  NodeFs fs(dir.path(), dir.path());
  TopologyDiscovery discovery;
  const Config config;
  const std::uint64_t first = discovery.Discover(fs, config).devices.at(0).generation;
  EXPECT_EQ(discovery.Discover(fs, config).devices.at(0).generation, first);
  const std::string base = dir.path() + "/devices/virtual/infiniband/";
  std::filesystem::rename(base + "rxe0", base + "rxe0-old");
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  EXPECT_NE(discovery.Discover(fs, config).devices.at(0).generation, first);
}

// A device's device/ folder (the PCI function's) is found when the device is discovered and handed
// on with every collection: the host collectors no longer look it up per collection.
TEST(TopologyDiscoveryTest, DeviceFolderIsFoundOnDiscoveryOnly) {
  testing::TempDir dir;
  dir.Write("devices/pci0000:00/0000:01:00.0/numa_node", "0\n");
  dir.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  dir.Symlink("../../../devices/pci0000:00/0000:01:00.0", "class/infiniband/mlx5_0/device");
  dir.Write("class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");  // software: no device/
  NodeFs fs(dir.path(), dir.path());
  TopologyDiscovery discovery;
  const Config config;
  Topology t = discovery.Discover(fs, config);
  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].device_dir, dir.path() + "/class/infiniband/mlx5_0/device");
  EXPECT_EQ(t.devices[0].pci_address, "0000:01:00.0");
  EXPECT_FALSE(t.devices[1].device_dir);
  const FsWork discovered = discovery.work();
  t = discovery.Discover(fs, config);
  EXPECT_EQ(discovery.work(), discovered);  // steady state: no lookup of device/
  EXPECT_EQ(t.devices[0].device_dir, dir.path() + "/class/infiniband/mlx5_0/device");
  EXPECT_FALSE(t.devices[1].device_dir);
}

}  // namespace
}  // namespace rdmahd
