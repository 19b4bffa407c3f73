#include "parsers/host_memory_parse.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/node_fs.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::RealFixture;

std::string ReadReal(const std::string& rel) { return testing::ReadRealFixture(rel); }

// The Ubuntu Forums capture holds two command outputs: /proc/meminfo | grep Huge, then every
// node's meminfo | fgrep Huge. Split them by their shell lines.
struct ForumCapture {
  std::string meminfo, node_meminfo;
};
ForumCapture SplitForumCapture() {
  std::istringstream in(ReadReal("outputs/meminfo/ubuntu-forums_2021-09-29_8-numa-nodes_hugepages-only-on-node1-node5.txt"));
  ForumCapture out;
  std::string line;
  std::string* part = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("cat /proc/meminfo", 0) == 0) part = &out.meminfo;
    else if (line.rfind("cat /sys/devices/system/node", 0) == 0) part = &out.node_meminfo;
    else if (part) *part += line + "\n";
  }
  return out;
}

TEST(HostMemoryParseTest, RealMeminfoWithoutHugepagesInUse) {
  for (const char* tree : {"procfs-fixtures", "node-exporter-fixtures"}) {
    SCOPED_TRACE(tree);
    auto m = ParseMeminfoHugepages(ReadReal(std::string("sysfs/") + tree + "/proc/meminfo"));
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->total, 0u);
    EXPECT_EQ(m->free, 0u);
    EXPECT_EQ(m->reserved, 0u);
    EXPECT_EQ(m->surplus, 0u);
    EXPECT_EQ(m->page_size_bytes, 2097152u);  // node_exporter: node_memory_Hugepagesize_bytes 2.097152e+06
    EXPECT_FALSE(m->hugetlb_bytes);           // these kernels print no Hugetlb line
  }
}

TEST(HostMemoryParseTest, RealEightNodeHostWithHugepagesOnTwoNodes) {
  const ForumCapture c = SplitForumCapture();
  auto m = ParseMeminfoHugepages(c.meminfo);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->total, 1024u);
  EXPECT_EQ(m->free, 1024u);
  EXPECT_EQ(m->page_size_bytes, 2097152u);
  // 1024 x 2 MiB + 8 x 1 GiB: the 1 GiB pool shows only in Hugetlb.
  EXPECT_EQ(m->hugetlb_bytes, std::uint64_t{10485760} * 1024);
  EXPECT_EQ(*m->hugetlb_bytes, 1024 * (std::uint64_t{2} << 20) + 8 * (std::uint64_t{1} << 30));

  auto nodes = ParseNodeMeminfoHugepages(c.node_meminfo);
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 8u);
  for (const auto& [node, pool] : *nodes) {
    SCOPED_TRACE(node);
    const std::uint64_t want = node == 1 || node == 5 ? 512 : 0;
    EXPECT_EQ(pool.total, want);
    EXPECT_EQ(pool.free, want);
    EXPECT_EQ(pool.surplus, 0u);
    EXPECT_FALSE(pool.reserved);
  }
}

TEST(HostMemoryParseTest, RealPerNodeMeminfoFiles) {
  for (int n = 0; n <= 2; ++n) {
    auto nodes = ParseNodeMeminfoHugepages(
        ReadReal("sysfs/node-exporter-fixtures/sys/devices/system/node/node" + std::to_string(n) + "/meminfo"));
    ASSERT_TRUE(nodes.ok()) << nodes.error().message;
    ASSERT_EQ(nodes->count(n), 1u);
    EXPECT_EQ(nodes->at(n).total, 0u);  // node_memory_numa_HugePages_Total{node="N"} 0
  }
  auto cadvisor = ParseNodeMeminfoHugepages(ReadReal("outputs/meminfo/google_cadvisor__machine_testdata_numa_meminfo.txt"));
  ASSERT_TRUE(cadvisor.ok()) << cadvisor.error().message;
  EXPECT_EQ(cadvisor->at(0).free, 0u);
}

TEST(HostMemoryParseTest, MeminfoBadInput) {
  EXPECT_FALSE(ParseMeminfoHugepages("").ok());
  EXPECT_FALSE(ParseMeminfoHugepages("cat /proc/meminfo | grep Huge\n").ok());  // a shell line
  auto r = ParseMeminfoHugepages("MemTotal: 1 kB\nHugePages_Total:   x1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HugePages_Total"), std::string::npos) << r.error().message;
  EXPECT_FALSE(ParseMeminfoHugepages("Hugepagesize: 2048\n").ok());              // no kB
  EXPECT_FALSE(ParseMeminfoHugepages("Hugepagesize: 99999999999999999999 kB\n").ok());
  EXPECT_FALSE(ParseMeminfoHugepages("Hugetlb: 18446744073709551615 kB\n").ok());  // bytes overflow
  // No hugetlb in the kernel: nothing known, not zero.
  auto none = ParseMeminfoHugepages("MemTotal: 1024 kB\nMemFree: 10 kB\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->total);
  EXPECT_FALSE(none->page_size_bytes);
  // Truncated mid-file: what was read is kept.
  auto cut = ParseMeminfoHugepages("HugePages_Total: 4\nHugePages_Fr");
  EXPECT_FALSE(cut.ok());
  EXPECT_FALSE(ParseNodeMeminfoHugepages("HugePages_Total: 4\n").ok());
  EXPECT_FALSE(ParseNodeMeminfoHugepages("Node x HugePages_Total: 4\n").ok());
  EXPECT_FALSE(ParseNodeMeminfoHugepages("Node 0 HugePages_Total: -4\n").ok());
}

TEST(HostMemoryParseTest, HugepageFolderNamesAndCounts) {
  EXPECT_EQ(ParseHugepageDirName("hugepages-2048kB"), 2097152u);
  EXPECT_EQ(ParseHugepageDirName("hugepages-1048576kB"), 1073741824u);
  EXPECT_EQ(ParseHugepageDirName("hugepages-64kB"), 65536u);
  for (std::string_view bad : {"hugepages-kB", "hugepages-0kB", "hugepages-2048", "hugepages--1kB", "hugepages-2MB",
                               "transparent_hugepage", "hugepages-99999999999999999999kB"}) {
    EXPECT_FALSE(ParseHugepageDirName(bad)) << bad;
  }
  EXPECT_EQ(*ParseHugepageCount("512\n"), 512u);
  EXPECT_FALSE(ParseHugepageCount("").ok());
  EXPECT_FALSE(ParseHugepageCount("-1\n").ok());
  EXPECT_FALSE(ParseHugepageCount("18446744073709551616").ok());
}

TEST(HostMemoryParseTest, ThpModeAndNumaBalancing) {
  EXPECT_EQ(*ParseThpMode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(*ParseThpMode("[always] madvise never\n"), "always");
  EXPECT_EQ(*ParseThpMode("always madvise [never]"), "never");
  for (std::string_view bad : {"", "always madvise never", "[always] [never]", "[]", "[a b]", "always ]madvise[", "[<script>]", "[averyveryverylongmode]"}) {
    EXPECT_FALSE(ParseThpMode(bad).ok()) << bad;
  }
  EXPECT_EQ(*ParseNumaBalancing("1\n"), 1u);
  EXPECT_EQ(*ParseNumaBalancing("0\n"), 0u);
  EXPECT_FALSE(ParseNumaBalancing("on").ok());
}

}  // namespace
}  // namespace rdmahd
