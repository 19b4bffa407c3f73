#include "common/node_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::TempDir;

TEST(NodeFsTest, PathsAreRootRelative) {
  NodeFs fs("/fixture/sys/", "/fixture/proc");
  EXPECT_EQ(fs.Sys("class/infiniband"), "/fixture/sys/class/infiniband");
  EXPECT_EQ(fs.Proc("/meminfo"), "/fixture/proc/meminfo");
}

TEST(NodeFsTest, ListDirIsSortedAndErrorsNameThePath) {
  TempDir dir;
  dir.Write("b", "1");
  dir.Write("a", "2");
  dir.MkDir("c");
  auto names = NodeFs::ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));

  auto missing = NodeFs::ListDir(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(dir.path() + "/nope"), std::string::npos);
  EXPECT_EQ(missing.error().errno_value, ENOENT);
}

TEST(NodeFsTest, ReadFileReadsLargeFilesWhole) {
  TempDir dir;
  std::string big(20000, 'x');
  dir.Write("big", big);
  auto r = NodeFs::ReadFile(dir.path() + "/big");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), big.size());
}

TEST(HeldFilesTest, RereadSeesNewContentThroughTheSameDescriptor) {
  TempDir dir;
  dir.Write("counter", "1\n");
  HeldFiles held;
  auto first = held.Read(dir.path() + "/counter");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "1\n");
  // Rewrite in place (same inode), as the kernel regenerates a sysfs attribute.
  {
    FILE* f = std::fopen((dir.path() + "/counter").c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fputs("2\n", f);
    std::fclose(f);
  }
  auto second = held.Read(dir.path() + "/counter");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "2\n");
  EXPECT_EQ(held.size(), 1u);
}

TEST(HeldFilesTest, FailedOpenIsReportedAndNotHeld) {
  TempDir dir;
  HeldFiles held;
  auto r = held.Read(dir.path() + "/missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errno_value, ENOENT);
  EXPECT_EQ(held.size(), 0u);
}

TEST(HeldFilesTest, ForgetPrefixClosesOnlyThatSubtree) {
  TempDir dir;
  dir.Write("dev0/a", "1");
  dir.Write("dev1/a", "1");
  HeldFiles held;
  ASSERT_TRUE(held.Read(dir.path() + "/dev0/a").ok());
  ASSERT_TRUE(held.Read(dir.path() + "/dev1/a").ok());
  held.ForgetPrefix(dir.path() + "/dev0/");
  EXPECT_EQ(held.size(), 1u);
}

TEST(HeldFileTest, KeepsOneDescriptorAndReopensAfterAFailedRead) {
  TempDir dir;
  dir.Write("state", "4: ACTIVE\n");
  HeldFile file(dir.path() + "/state");
  std::string buf;
  EXPECT_FALSE(file.is_open());
  auto first = file.Read(buf);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "4: ACTIVE\n");
  {
    FILE* f = std::fopen((dir.path() + "/state").c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fputs("1: DOWN  \n", f);
    std::fclose(f);
  }
  auto second = file.Read(buf);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "1: DOWN  \n");

  HeldFile missing(dir.path() + "/nope");
  auto err = missing.Read(buf);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().errno_value, ENOENT);
  EXPECT_NE(err.error().message.find(dir.path() + "/nope"), std::string::npos);
  EXPECT_FALSE(missing.is_open());

  HeldFile moved = std::move(file);  // the descriptor moves with it
  EXPECT_TRUE(moved.is_open());
  EXPECT_FALSE(file.is_open());  // NOLINT(bugprone-use-after-move)
}

TEST(HeldFileTest, PollingDoesNotTouchTheFilesAccessTime) {
  // A monitor reading a file every few seconds must not keep marking it accessed. The access time
  // is set two days back, which relatime (the usual mount default) would otherwise move forward.
  TempDir dir;
  dir.Write("counter", "42\n");
  const std::string path = dir.path() + "/counter";
  const timespec times[2] = {{std::time(nullptr) - 2 * 86400, 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  HeldFile file(path);
  HeldFiles files;
  std::string buf;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(file.Read(buf).ok());
    ASSERT_TRUE(files.Read(path).ok());
  }
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  if (::geteuid() != 0 && before.st_uid != ::geteuid()) GTEST_SKIP() << "O_NOATIME needs ownership";
  EXPECT_EQ(after.st_atim.tv_sec, before.st_atim.tv_sec);
}

TEST(HeldFileTest, FilesOfASharedFolderNameTheirWholePath) {
  TempDir dir;
  dir.Write("hw_counters/out_of_buffer", "7\n");
  auto folder = std::make_shared<const std::string>(dir.path() + "/hw_counters");
  HeldFile present(folder, "out_of_buffer");
  HeldFile missing(folder, "nope");
  EXPECT_EQ(present.path(), dir.path() + "/hw_counters/out_of_buffer");
  std::string buf;
  auto v = present.Read(buf);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "7\n");
  auto err = missing.Read(buf);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message.rfind("open " + dir.path() + "/hw_counters/nope", 0), 0u) << err.error().message;
  HeldFile moved = std::move(present);
  EXPECT_EQ(moved.path(), dir.path() + "/hw_counters/out_of_buffer");
  EXPECT_TRUE(moved.is_open());
}

}  // namespace
}  // namespace rdmahd
