#include "collectors/gid_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

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

// An mlx5 port lists 255 GID slots and uses a few: the table keeps the slots up to the highest set
// one and descriptors for the window only, not 255 of each (an SR-IOV host has thousands of ports).
TEST(GidTableTest, MemoryFollowsTheGidsInUseNotTheTableSize) {
  testing::ScopedHeldFdBudget budget(1'000'000);
  Table t(255);
  for (int i = 0; i < 4; ++i) t.Set(i, "fe80:0000:0000:0000:ba59:9fff:fe00:1a2" + std::to_string(i));
  TopologyPort first = t.Read(false);  // the first read scans the whole table
  EXPECT_EQ(first.gids.size(), 4u);
  EXPECT_EQ(first.roce_v2_gid_count, 4u);
  EXPECT_EQ(t.table.slots_kept(), 4u);
  EXPECT_LE(t.table.held_descriptors(), 5u);  // the window: slots 0..4
  EXPECT_TRUE(t.errors.empty());

  // A GID far up the table is seen by a full rescan and kept; once gone, the slots above the
  // highest set one are dropped again.
  t.Set(200, "fd00:0000:0000:0000:0000:0000:0000:0001");
  EXPECT_EQ(t.Read(true).gids.size(), 5u);
  EXPECT_EQ(t.table.slots_kept(), 201u);
  t.Set(200, kZero);
  EXPECT_EQ(t.Read(true).gids.size(), 4u);
  EXPECT_EQ(t.table.slots_kept(), 4u);
  EXPECT_LE(t.table.held_descriptors(), 5u);
  // A window read keeps seeing the low slots.
  t.Set(3, kZero);
  TopologyPort after = t.Read(false);
  EXPECT_EQ(after.gids.size(), 3u);
  EXPECT_EQ(after.netdev, "ens1f0np0");
}

}  // namespace
}  // namespace rdmahd
