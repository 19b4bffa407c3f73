#include "common/cpulist.h"

#include <gtest/gtest.h>

#include "common/node_fs.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::RealFixture;

std::string ReadReal(const std::string& rel) { return testing::ReadRealFixture(rel); }

TEST(CpuListTest, RealNodeCpulistsIncludingTheEmptyMemoryOnlyNode) {
  const std::string base = "sysfs/node-exporter-fixtures/sys/devices/system/node/";
  auto n0 = ParseCpuList(ReadReal(base + "node0/cpulist"));
  auto n1 = ParseCpuList(ReadReal(base + "node1/cpulist"));
  auto n2 = ParseCpuList(ReadReal(base + "node2/cpulist"));  // "\n": memory-only node
  ASSERT_TRUE(n0.ok() && n1.ok() && n2.ok());
  EXPECT_EQ(n0->ToString(), "0-1");
  EXPECT_EQ(n1->ToString(), "2-3");
  EXPECT_TRUE(n2->empty());
  EXPECT_EQ(n2->count(), 0u);
}

TEST(CpuListTest, RealDeviceLocalCpulist) {
  auto l = ParseCpuList(ReadReal("sysfs/node-exporter-fixtures/sys/devices/pci0000:40/0000:40:01.3/0000:45:00.0/local_cpulist"));
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(l->ToString(), "0-63,128-191");
  EXPECT_EQ(l->count(), 128u);
  EXPECT_TRUE(l->Contains(128));
  EXPECT_FALSE(l->Contains(64));
}

TEST(CpuListTest, SetOperations) {
  auto a = ParseCpuList("0-7,16");
  auto b = ParseCpuList("4-20\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->CountIn(*b), 5u);  // 4..7 and 16
  EXPECT_EQ(b->CountIn(*a), 5u);
  EXPECT_EQ(a->Union(*b).ToString(), "0-20");
  // Overlapping and adjacent input ranges are merged.
  EXPECT_EQ(ParseCpuList("3,0-1,2,8-9,5-6")->ToString(), "0-3,5-6,8-9");
}

TEST(CpuListTest, BadInputIsAClearErrorNotACrash) {
  for (std::string_view bad : {"0-", "-3", "a", "1,,2", "0-3,", "7-3", "0-7:2/4", "99999999999999999999",
                               "65536", "1 2", "0--1", ","}) {
    auto r = ParseCpuList(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) { EXPECT_NE(r.error().message.find("cpulist \""), std::string::npos) << r.error().message; }
  }
  EXPECT_NE(ParseCpuList("7-3").error().message.find("reversed"), std::string::npos);
  EXPECT_NE(ParseCpuList("0-7:2/4").error().message.find("stride"), std::string::npos);
  EXPECT_TRUE(ParseCpuList("65535").ok());
  EXPECT_TRUE(ParseCpuList("   ").ok());
}

}  // namespace
}  // namespace rdmahd
