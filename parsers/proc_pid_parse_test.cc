#include "parsers/proc_pid_parse.h"

#include <gtest/gtest.h>

#include "common/node_fs.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::RealFixture;

std::string ReadReal(const std::string& rel) { return testing::ReadRealFixture(rel); }

TEST(ProcPidParseTest, RealLimitsFiles) {
  auto near_max = ParseMemlockLimit(ReadReal("sysfs/procfs-fixtures/proc/26231/limits"));
  ASSERT_TRUE(near_max.ok()) << near_max.error().message;
  // A number just below RLIM_INFINITY is a number, not "unlimited".
  EXPECT_EQ(near_max->soft, (LimitValue{false, 18446744073708503040u}));
  EXPECT_EQ(near_max->hard, (LimitValue{false, 18446744073708503040u}));
  auto small = ParseMemlockLimit(ReadReal("sysfs/procfs-fixtures/proc/26232/limits"));
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(small->soft, (LimitValue{false, 65536}));
  EXPECT_EQ(small->hard, (LimitValue{false, 65536}));
}

TEST(ProcPidParseTest, UnlimitedAndMixedLimits) {
  const std::string head = "Limit                     Soft Limit           Hard Limit           Units     \n";
  auto r = ParseMemlockLimit(head + "Max locked memory         unlimited            unlimited            bytes     \n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->soft.unlimited);
  EXPECT_TRUE(r->hard.unlimited);
  auto mixed = ParseMemlockLimit("Max locked memory         8388608              unlimited            bytes");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->soft, (LimitValue{false, 8388608}));
  EXPECT_TRUE(mixed->hard.unlimited);
}

TEST(ProcPidParseTest, MalformedLimitsAreErrors) {
  for (std::string_view bad : {
           "",
           "Limit                     Soft Limit           Hard Limit           Units\n"
           "Max cpu time              unlimited            unlimited            seconds\n",  // truncated before the row
           "Max locked memory         65536\n",                                             // truncated row
           "Max locked memory         lots                 65536                bytes\n",
           "Max locked memory         -1                   65536                bytes\n",
           "Max locked memory         18446744073709551616 65536                bytes\n",   // > 64 bits
           "Max locked memory         65536                65536                pages\n",
           "Max locked memory         65536                65536                bytes extra\n",
       }) {
    auto r = ParseMemlockLimit(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) { EXPECT_EQ(r.error().message.rfind("limits: ", 0), 0u) << r.error().message; }
  }
}

TEST(ProcPidParseTest, Status) {
  auto s = ParseProcStatus(
      "Name:\tib_write_bw\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
      "CapInh:\t0000000000000000\nCapPrm:\t0000000000004000\nCapEff:\t0000000000004000\n"
      "Cpus_allowed:\tffff,00000000\nCpus_allowed_list:\t32-47\nMems_allowed_list:\t0-1\n");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "ib_write_bw");
  EXPECT_EQ(s->state, 'S');
  ASSERT_TRUE(s->cpus_allowed);
  EXPECT_EQ(s->cpus_allowed->ToString(), "32-47");
  EXPECT_TRUE(s->cpus_note.empty());
  ASSERT_TRUE(s->cap_effective);
  EXPECT_TRUE((*s->cap_effective >> kCapIpcLock) & 1);

  auto bad_list = ParseProcStatus("Name:\tx\nCpus_allowed_list:\t3-1\n");
  ASSERT_TRUE(bad_list.ok());
  EXPECT_FALSE(bad_list->cpus_allowed);
  EXPECT_NE(bad_list->cpus_note.find("reversed"), std::string::npos) << bad_list->cpus_note;

  auto truncated = ParseProcStatus("Name:\tx\nUmask:\t00");
  ASSERT_TRUE(truncated.ok());
  EXPECT_FALSE(truncated->cpus_allowed);
  EXPECT_NE(truncated->cpus_note.find("no Cpus_allowed_list"), std::string::npos);
  EXPECT_FALSE(truncated->cap_effective);
  EXPECT_FALSE(ParseProcStatus("Name:\tx\nCapEff:\tzz\n")->cap_effective);

  EXPECT_FALSE(ParseProcStatus("").ok());
  EXPECT_FALSE(ParseProcStatus("Umask:\t0022\n").ok());
}

TEST(ProcPidParseTest, NumaMapsBytesPerNode) {
  // Lines as the kernel prints them (fs/proc/task_mmu.c show_numa_map): 4 KiB pages, a 2 MiB
  // hugetlb mapping, a mapping with nothing resident (no N fields), an escaped file path.
  const std::string text =
      "55d0c6a00000 default file=/usr/bin/ib_write_bw mapped=12 active=0 N0=10 N1=2 kernelpagesize_kB=4\n"
      "7f1c00000000 bind:1 file=/dev/hugepages/rdma\\040buf huge dirty=8 N1=8 kernelpagesize_kB=2048\n"
      "7f1c40000000 default anon=300 dirty=300 active=0 N0=100 N1=200 kernelpagesize_kB=4\n"
      "7f1c50000000 default\n"
      "7ffd1e5c9000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4\n";
  auto r = ParseNumaMapsBytesByNode(text, 4096);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->size(), 2u);
  EXPECT_EQ(r->at(0), (10u + 100 + 3) * 4096);
  EXPECT_EQ(r->at(1), (2u + 200) * 4096 + 8u * 2 * 1024 * 1024);

  // Old kernels print no kernelpagesize_kB: the caller's page size.
  auto old = ParseNumaMapsBytesByNode("00400000 default file=/bin/cat mapped=5 N0=5\n", 65536);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->at(0), 5u * 65536);

  EXPECT_TRUE(ParseNumaMapsBytesByNode("", 4096)->empty());  // a kernel thread has no mappings
}

TEST(ProcPidParseTest, MalformedNumaMapsAreErrors) {
  for (std::string_view bad : {
           "zzzz default N0=1\n",
           "7f00 default N0=abc kernelpagesize_kB=4\n",
           "7f00 default N0=-1\n",
           "7f00 default N99999999=1\n",
           "7f00 default N0=1 kernelpagesize_kB=x\n",
           "7f00 default N0=18446744073709551615 kernelpagesize_kB=2048\n",  // bytes overflow
           "7f00\n",
       }) {
    auto r = ParseNumaMapsBytesByNode(bad, 4096);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) { EXPECT_EQ(r.error().message.rfind("numa_maps: ", 0), 0u) << r.error().message; }
  }
  // Tokens that only look like node counts are not: "NX=1", "N=1".
  auto r = ParseNumaMapsBytesByNode("7f00 default NX=1 N=2 N0=1 kernelpagesize_kB=4\n", 4096);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->at(0), 4096u);
}

}  // namespace
}  // namespace rdmahd
