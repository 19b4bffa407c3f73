#include "collectors/gid_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "parsers/ib_sysfs_parse.h"
#include "tests/support/held_fd_budget.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

constexpr const char* kZero = "0000:0000:0000:0000:0000:0000:0000:0000";
constexpr const char* kPort = "class/infiniband/mlx5_0/ports/1";

struct Table {
  testing::TempDir dir;
  NodeFs fs{dir.path(), dir.path()};
  GidTable table;
  std::string buf, path_buf;
  std::vector<std::string> errors;

  explicit Table(int slots) {
    for (int i = 0; i < slots; ++i) dir.Write(std::string(kPort) + "/gids/" + std::to_string(i), std::string(kZero) + "\n");
    bool complete = true;
    table = GidTable::Discover(fs, dir.path() + "/" + kPort, errors, complete);
  }
  void Set(int i, const std::string& gid) const {
    const std::string n = std::to_string(i);
    std::ofstream(dir.path() + "/" + kPort + "/gids/" + n, std::ios::trunc) << gid << "\n";  // in place: held descriptors see it
    if (gid != kZero) {
      dir.Write(std::string(kPort) + "/gid_attrs/types/" + n, "RoCE v2\n");
      dir.Write(std::string(kPort) + "/gid_attrs/ndevs/" + n, "ens1f0np0\n");
    }
  }
  TopologyPort Read(bool full_rescan) {
    TopologyPort port;
    port.link_layer = "Ethernet";
    DeviceReader reader(fs, buf, errors, dir.path(), 0);
    table.Read(full_rescan, path_buf, reader, errors, port);
    return port;
  }
};

// An mlx5 port lists 255 GID slots and uses a few: the table keeps the GIDs in use and descriptors
// for the window only, not 255 of each (an SR-IOV host has thousands of ports).
TEST(GidTableTest, MemoryFollowsTheGidsInUseNotTheTableSize) {
  testing::ScopedHeldFdBudget budget(1'000'000);
  Table t(255);
  for (int i = 0; i < 4; ++i) t.Set(i, "fe80:0000:0000:0000:ba59:9fff:fe00:1a2" + std::to_string(i));
  TopologyPort first = t.Read(false);  // the first read scans the whole table
  EXPECT_EQ(first.gids.size(), 4u);
  EXPECT_EQ(first.roce_v2_gid_count, 4u);
  EXPECT_EQ(t.table.gids_kept(), 4u);
  EXPECT_LE(t.table.held_descriptors(), 5u);  // the window: slots 0..4
  EXPECT_TRUE(t.errors.empty());

  // A GID far up the table is seen by a full rescan and kept; once gone, it is dropped again.
  t.Set(200, "fd00:0000:0000:0000:0000:0000:0000:0001");
  EXPECT_EQ(t.Read(true).gids.size(), 5u);
  EXPECT_EQ(t.table.gids_kept(), 5u);
  t.Set(200, kZero);
  EXPECT_EQ(t.Read(true).gids.size(), 4u);
  EXPECT_EQ(t.table.gids_kept(), 4u);
  EXPECT_LE(t.table.held_descriptors(), 5u);
  // A window read keeps seeing the low slots.
  t.Set(3, kZero);
  TopologyPort after = t.Read(false);
  EXPECT_EQ(after.gids.size(), 3u);
  EXPECT_EQ(after.netdev, "ens1f0np0");
}

// A GID is kept as its 16 bytes, read back as the kernel prints it. A slot whose text is not a GID
// costs that slot (an error naming its file, not its contents), and the window still covers it.
TEST(GidTableTest, GidsAreKeptAsBytesAndASlotThatIsNotAGidIsAnErrorOfItsOwn) {
  testing::ScopedHeldFdBudget budget(1'000'000);
  Table t(16);
  t.Set(0, "fe80:0000:0000:0000:BA59:9fff:fe00:1a20");
  t.Set(1, "0000:0000:0000:0000:0000:ffff:c0a8:010a");
  t.Set(2, "fe80::1\x1b[2J");
  TopologyPort port = t.Read(false);
  ASSERT_EQ(port.gids.size(), 2u);
  EXPECT_EQ(FormatGid(port.gids[0].gid), "fe80:0000:0000:0000:ba59:9fff:fe00:1a20");
  EXPECT_EQ(port.gids[1].gid[15], 0x0a);
  EXPECT_EQ(port.gids[1].gid[12], 0xc0);
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("ports/1/gids/2: not a GID"), std::string::npos) << t.errors[0];
  EXPECT_EQ(t.errors[0].find("fe80::1"), std::string::npos) << "the file's contents are not echoed";
  EXPECT_LE(t.table.held_descriptors(), 4u);
  // Fixed in place, the slot is read again (it stayed in the window) and becomes a GID.
  t.errors.clear();
  t.Set(2, "fe80:0000:0000:0000:0000:0000:0000:0002");
  port = t.Read(false);
  ASSERT_EQ(port.gids.size(), 3u);
  EXPECT_EQ(port.gids[2].index, 2u);
  EXPECT_TRUE(t.errors.empty());
}

// A GID's type and netdev are read when the GID appears or changes, then kept with it; attributes
// that could not be read are read again at the next read, and only then kept.
TEST(GidTableTest, AttributesAreReadOnceAndAgainOnlyAfterAFailure) {
  testing::ScopedHeldFdBudget budget(1'000'000);
  Table t(8);
  t.Set(0, "fe80:0000:0000:0000:ba59:9fff:fe00:1a20");
  const std::string type0 = t.dir.path() + "/" + kPort + "/gid_attrs/types/0";
  ASSERT_EQ(::unlink(type0.c_str()), 0);
  const TopologyPort failed = t.Read(false);
  ASSERT_EQ(failed.gids.size(), 1u);
  EXPECT_EQ(failed.gids[0].type, "");
  EXPECT_EQ(failed.roce_v2_gid_count, 0u);
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("gid_attrs/types/0"), std::string::npos) << t.errors[0];

  t.errors.clear();
  t.dir.Write(std::string(kPort) + "/gid_attrs/types/0", "RoCE v2\n");
  const TopologyPort retried = t.Read(false);
  EXPECT_EQ(retried.gids[0].type, "RoCE v2");
  EXPECT_EQ(retried.roce_v2_gid_count, 1u);
  EXPECT_TRUE(t.errors.empty());

  // Read once it was read: a change under the same GID is not seen until a refresh.
  t.dir.Write(std::string(kPort) + "/gid_attrs/types/0", "IB/RoCE v1\n");
  EXPECT_EQ(t.Read(true).gids[0].type, "RoCE v2");
  EXPECT_TRUE(t.Read(false).gids.SharesWith(retried.gids));
  t.table.RefreshAttributes();
  EXPECT_EQ(t.Read(false).gids[0].type, "IB/RoCE v1");
}

// The list of GIDs is shared by every port read while the table is unchanged, and replaced (never
// changed in place) when a GID, its type or its netdev changes, or a GID is removed: a port read
// earlier keeps what it was read as.
TEST(GidTableTest, AnUnchangedTableSharesOneListAndAChangeMakesANewOne) {
  testing::ScopedHeldFdBudget budget(1'000'000);
  Table t(16);
  t.Set(0, "fe80:0000:0000:0000:ba59:9fff:fe00:1a20");
  t.Set(1, "0000:0000:0000:0000:0000:ffff:c0a8:010a");
  const TopologyPort first = t.Read(false);
  ASSERT_EQ(first.gids.size(), 2u);
  const TopologyPort second = t.Read(false);
  EXPECT_TRUE(second.gids.SharesWith(first.gids));
  EXPECT_TRUE(t.Read(true).gids.SharesWith(first.gids)) << "a full rescan that finds the same GIDs";

  // A new GID above the others.
  t.Set(2, "0000:0000:0000:0000:0000:ffff:c0a8:010b");
  const TopologyPort added = t.Read(false);
  ASSERT_EQ(added.gids.size(), 3u);
  EXPECT_FALSE(added.gids.SharesWith(first.gids));
  EXPECT_EQ(added.gids[2].index, 2u);
  EXPECT_EQ(first.gids.size(), 2u) << "a port read earlier is not changed";

  // Its netdev renamed under the same GID (seen once the attributes are refreshed).
  t.dir.Write(std::string(kPort) + "/gid_attrs/ndevs/1", "ens1f0v1\n");
  t.table.RefreshAttributes();
  const TopologyPort renamed = t.Read(false);
  ASSERT_EQ(renamed.gids.size(), 3u);
  EXPECT_FALSE(renamed.gids.SharesWith(added.gids));
  EXPECT_EQ(renamed.gids[1].ndev, "ens1f0v1");
  EXPECT_EQ(added.gids[1].ndev, "ens1f0np0");

  // The last GID removed: a shorter list; the first GIDs are as they were.
  t.Set(2, kZero);
  const TopologyPort removed = t.Read(false);
  ASSERT_EQ(removed.gids.size(), 2u);
  EXPECT_FALSE(removed.gids.SharesWith(renamed.gids));
  EXPECT_EQ(removed.gids[0], renamed.gids[0]);
  EXPECT_EQ(removed.gids[1], renamed.gids[1]);
  EXPECT_TRUE(t.Read(false).gids.SharesWith(removed.gids));

  // All removed: an empty list.
  t.Set(0, kZero);
  t.Set(1, kZero);
  EXPECT_TRUE(t.Read(false).gids.empty());
  EXPECT_TRUE(t.errors.empty());
}

}  // namespace
}  // namespace rdmahd
