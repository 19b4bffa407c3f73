#include "collectors/rdma_netdevs.h"

#include <gtest/gtest.h>

#include "collectors/collection_engine.h"
#include "collectors/rdma_devices.h"
#include "collectors/roce_qos.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

NodeFs FixtureFs() {
  return NodeFs(testing::ProjectFixture("roce/pfc-off/sys"), testing::ProjectFixture("roce/pfc-off/proc"));
}

TEST(RdmaNetdevsTest, GidTableAndDeviceNetFallbackEthernetOnly) {
  std::vector<std::string> errors;
  auto links = DiscoverRdmaNetdevs(FixtureFs(), DeviceFilter{}, errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // mlx5_0 from gid_attrs/ndevs (duplicates and the empty GID entry folded), mlx5_1 from
  // device/net + dev_port, mlx5_2 (InfiniBand, ib0) skipped.
  EXPECT_EQ(links, (std::vector<RdmaNetdev>{{"mlx5_0", 1, "ens1f0np0"}, {"mlx5_1", 1, "ens1f1np1"}}));
}

// The netdev and roce collectors take the links from what the devices collector already read; the
// answer must be the one a fresh discovery gives, on every fixture with RoCE ports.
TEST(RdmaNetdevsTest, FromDevicesFactsEqualsFreshDiscovery) {
  for (const std::string& sys : {testing::ProjectFixture("roce/pfc-off/sys"),
                                testing::ProjectFixture("sysfs/mlx5-roce/sys"),
                                testing::ProjectFixture("rxe/sys")}) {
    SCOPED_TRACE(sys);
    NodeFs fs(sys, "/nonexistent");
    CollectionEngine engine(fs, {"devices"});
    auto report = engine.Collect(std::make_shared<Config>());
    ASSERT_NE(report->snapshot.Get<RdmaDevicesFacts>(), nullptr);
    std::vector<std::string> e1, e2;
    auto fresh = DiscoverRdmaNetdevs(fs, DeviceFilter{}, e1);
    EXPECT_FALSE(fresh.empty());
    EXPECT_EQ(RdmaNetdevsOf(report->snapshot, fs, DeviceFilter{}, e2), fresh);

    // With the netdev collector's facts present, its links are used as they are.
    Snapshot with_links;
    RdmaNetdevFacts netdevs;
    netdevs.links = {{"x", 1, "y"}};
    with_links.Put(netdevs);
    EXPECT_EQ(RdmaNetdevsOf(with_links, fs, DeviceFilter{}, e2), netdevs.links);
  }
}

TEST(RdmaNetdevsTest, DeviceFilterApplies) {
  std::vector<std::string> errors;
  DeviceFilter filter;
  filter.exclude = {"mlx5_1"};
  auto links = DiscoverRdmaNetdevs(FixtureFs(), filter, errors);
  EXPECT_EQ(links, (std::vector<RdmaNetdev>{{"mlx5_0", 1, "ens1f0np0"}}));
}

TEST(RdmaNetdevsTest, NodeWithoutRdmaIsEmptyNotAnError) {
  std::vector<std::string> errors;
  testing::TempDir dir;
  auto links = DiscoverRdmaNetdevs(NodeFs(dir.path(), dir.path()), DeviceFilter{}, errors);
  EXPECT_TRUE(links.empty());
  EXPECT_TRUE(errors.empty());
}

TEST(RdmaNetdevsTest, MultiPortFallbackUsesDevPort) {
  testing::TempDir dir;
  dir.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/ports/2/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p0/dev_port", "0\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p1/dev_port", "1\n");
  std::vector<std::string> errors;
  auto links = DiscoverRdmaNetdevs(NodeFs(dir.path(), dir.path()), DeviceFilter{}, errors);
  EXPECT_EQ(links, (std::vector<RdmaNetdev>{{"mlx5_0", 1, "p0"}, {"mlx5_0", 2, "p1"}}));
}

// The device/net fallback (ports whose GIDs name no netdev) is listed when the devices collector's
// ports change, after Invalidate() (a netdev read said it is gone) or once kNetdevRelistInterval
// passed; the scrapes in between list nothing and give the same answer.
TEST(RdmaNetdevLinkerTest, FallbackIsListedOnChangeOrAfterTheInterval) {
  testing::TempDir dir;
  dir.Write("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/ports/2/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/mlx5_0/device/net/p0/dev_port", "0\n");
  NodeFs fs(dir.path(), dir.path());
  CollectionEngine engine(fs, {"devices"});
  auto report = engine.Collect(std::make_shared<Config>());
  auto clock = std::make_shared<std::chrono::steady_clock::time_point>();
  RdmaNetdevLinker linker([clock] { return *clock; });
  std::vector<std::string> errors;
  using V = std::vector<RdmaNetdev>;
  EXPECT_EQ(linker.Links(report->snapshot, fs, DeviceFilter{}, errors), (V{{"mlx5_0", 1, "p0"}}));
  const FsWork listed = linker.work();
  EXPECT_EQ(listed.listings, 1u);

  dir.Write("class/infiniband/mlx5_0/device/net/p1/dev_port", "1\n");  // nothing signals this one
  *clock += kNetdevRelistInterval - std::chrono::seconds(1);
  EXPECT_EQ(linker.Links(report->snapshot, fs, DeviceFilter{}, errors), (V{{"mlx5_0", 1, "p0"}}));
  EXPECT_EQ(linker.work(), listed);

  *clock += std::chrono::seconds(1);
  const V both{{"mlx5_0", 1, "p0"}, {"mlx5_0", 2, "p1"}};
  EXPECT_EQ(linker.Links(report->snapshot, fs, DeviceFilter{}, errors), both);
  EXPECT_EQ(linker.work().listings, 2u);
  EXPECT_EQ(linker.Links(report->snapshot, fs, DeviceFilter{}, errors), both);
  EXPECT_EQ(linker.work().listings, 2u);
  linker.Invalidate();
  EXPECT_EQ(linker.Links(report->snapshot, fs, DeviceFilter{}, errors), both);
  EXPECT_EQ(linker.work().listings, 3u);

  // Without the devices collector's facts the whole discovery is kept the same way.
  Snapshot empty;
  RdmaNetdevLinker alone([clock] { return *clock; });
  EXPECT_EQ(alone.Links(empty, fs, DeviceFilter{}, errors), both);
  const FsWork discovered = alone.work();
  EXPECT_EQ(alone.Links(empty, fs, DeviceFilter{}, errors), both);
  EXPECT_EQ(alone.work(), discovered);
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace rdmahd
