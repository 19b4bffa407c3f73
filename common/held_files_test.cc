#include "common/held_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>

#include "tests/support/held_fd_budget.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::ScopedHeldFdBudget;
using testing::TempDir;

TEST(HeldFilesTest, RereadSeesNewContentThroughTheSameDescriptor) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("counter", "1\n");
  HeldFiles held;
  auto first = held.Read(fs, dir.path() + "/counter");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "1\n");
  // Rewrite in place (same inode), as the kernel regenerates a sysfs attribute.
  {
    FILE* f = std::fopen((dir.path() + "/counter").c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fputs("2\n", f);
    std::fclose(f);
  }
  auto second = held.Read(fs, dir.path() + "/counter");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "2\n");
  EXPECT_EQ(held.size(), 1u);
}

TEST(HeldFilesTest, FailedOpenIsReportedAndNotHeld) {
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  HeldFiles held;
  auto r = held.Read(fs, dir.path() + "/missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errno_value, ENOENT);
  EXPECT_EQ(held.size(), 0u);
}

TEST(HeldFilesTest, ForgetPrefixClosesOnlyThatSubtree) {
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("dev0/a", "1");
  dir.Write("dev1/a", "1");
  HeldFiles held;
  ASSERT_TRUE(held.Read(fs, dir.path() + "/dev0/a").ok());
  ASSERT_TRUE(held.Read(fs, dir.path() + "/dev1/a").ok());
  held.ForgetPrefix(dir.path() + "/dev0/");
  EXPECT_EQ(held.size(), 1u);
}

TEST(HeldFileTest, KeepsOneDescriptorAndReopensAfterAFailedRead) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("state", "4: ACTIVE\n");
  HeldFile file(dir.path() + "/state");
  std::string buf;
  EXPECT_FALSE(file.is_open());
  auto first = file.Read(fs, buf);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "4: ACTIVE\n");
  {
    FILE* f = std::fopen((dir.path() + "/state").c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fputs("1: DOWN  \n", f);
    std::fclose(f);
  }
  auto second = file.Read(fs, buf);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "1: DOWN  \n");

  HeldFile missing(dir.path() + "/nope");
  auto err = missing.Read(fs, buf);
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
  NodeFs fs(dir.path(), "/nonexistent-proc");
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
    ASSERT_TRUE(file.Read(fs, buf).ok());
    ASSERT_TRUE(files.Read(fs, path).ok());
  }
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  if (::geteuid() != 0 && before.st_uid != ::geteuid()) GTEST_SKIP() << "O_NOATIME needs ownership";
  EXPECT_EQ(after.st_atim.tv_sec, before.st_atim.tv_sec);
}

TEST(HeldFileTest, FilesOfASharedFolderNameTheirWholePath) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("hw_counters/out_of_buffer", "7\n");
  auto folder = std::make_shared<const HeldFile::Folder>(
      HeldFile::Folder{dir.path() + "/hw_counters", ShareNames({"nope", "out_of_buffer"})});
  HeldFile present(folder, 1);
  HeldFile missing(folder, 0);
  static_assert(sizeof(HeldFile) == 24);  // a node holds 200,000 of them
  EXPECT_EQ(present.path(), dir.path() + "/hw_counters/out_of_buffer");
  std::string buf;
  auto v = present.Read(fs, buf);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "7\n");
  auto err = missing.Read(fs, buf);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message.rfind("open " + dir.path() + "/hw_counters/nope", 0), 0u) << err.error().message;
  HeldFile moved = std::move(present);
  EXPECT_EQ(moved.path(), dir.path() + "/hw_counters/out_of_buffer");
  EXPECT_TRUE(moved.is_open());
}


TEST(HeldFolderTest, HoldsADescriptorPerNameAndReadsAsHeldFilesDo) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("hw_counters/out_of_buffer", "7\n");
  HeldFolder files(HeldFile::MakeFolder(dir.path() + "/hw_counters", ShareNames({"nope", "out_of_buffer"})));
  // The folder once and four bytes a file, not a HeldFile (24 bytes) per file.
  static_assert(sizeof(HeldFolder) == 24);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files.path(1), dir.path() + "/hw_counters/out_of_buffer");
  EXPECT_EQ(files.open_count(), 0u);
  std::string buf;
  auto v = files.Read(1, fs, buf);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "7\n");
  EXPECT_TRUE(files.is_open(1));
  EXPECT_EQ(HeldFdBudget::Process().held(), 1u);
  auto err = files.Read(0, fs, buf);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message.rfind("open " + dir.path() + "/hw_counters/nope", 0), 0u) << err.error().message;
  EXPECT_FALSE(files.is_open(0));
  dir.Write("hw_counters/out_of_buffer", "8\n");
  HeldFolder moved = std::move(files);  // the descriptors move with it
  EXPECT_EQ(moved.open_count(), 1u);
  v = moved.Read(1, fs, buf);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "8\n");
  moved.Close();
  EXPECT_EQ(moved.open_count(), 0u);
  EXPECT_EQ(HeldFdBudget::Process().held(), 0u);
  EXPECT_EQ(HeldFolder().size(), 0u);
  EXPECT_EQ(HeldFolder().names(), nullptr);
}

// A skipped file gives its descriptor back and stays skipped, through Close() and a move; the
// other files are held and read as before.
TEST(HeldFolderTest, ASkippedFileStaysSkippedUntilTheFolderIsMadeAgain) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  NodeFs fs(dir.path(), "/nonexistent-proc");
  dir.Write("ecn/roce_rp/rpg_gd", "11\n");
  dir.Write("ecn/roce_rp/rpg_min_rate", "1\n");
  const auto folder = HeldFile::MakeFolder(dir.path() + "/ecn/roce_rp", ShareNames({"rpg_gd", "rpg_min_rate"}));
  HeldFolder files(folder);
  std::string buf;
  ASSERT_TRUE(files.Read(0, fs, buf).ok());
  ASSERT_TRUE(files.Read(1, fs, buf).ok());
  EXPECT_EQ(HeldFdBudget::Process().held(), 2u);
  files.Skip(0);
  EXPECT_TRUE(files.skipped(0));
  EXPECT_FALSE(files.is_open(0));
  EXPECT_FALSE(files.skipped(1));
  EXPECT_EQ(files.open_count(), 1u);
  EXPECT_EQ(HeldFdBudget::Process().held(), 1u);
  files.Close();
  EXPECT_TRUE(files.skipped(0)) << "Close() gives descriptors back, it does not un-skip";
  EXPECT_EQ(HeldFdBudget::Process().held(), 0u);
  HeldFolder moved = std::move(files);
  EXPECT_TRUE(moved.skipped(0));
  auto v = moved.Read(1, fs, buf);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "1\n");
  EXPECT_FALSE(HeldFolder(folder).skipped(0)) << "a folder made again reads every file";
}

TEST(HeldFdBudgetTest, LimitFollowsTheSoftLimitMinusTheReserve) {
  EXPECT_EQ(HeldFdBudget::ForLimit(256), 0u);
  EXPECT_EQ(HeldFdBudget::ForLimit(1024), 0u);
  EXPECT_EQ(HeldFdBudget::ForLimit(1024 + 64 + 10), 10u);
  EXPECT_EQ(HeldFdBudget::ForLimit(1048576), 1048576u - 1088u);
}

TEST(HeldFdBudgetTest, PastTheBudgetReadsAreTransientAndCounted) {
  TempDir dir;
  const std::vector<std::string> values = {"0\n", "1\n", "2\n", "3\n", "4\n"};
  const std::vector<std::string> names = {"c0", "c1", "c2", "c3", "c4"};
  for (std::size_t i = 0; i < values.size(); ++i) dir.Write(names[i], values[i]);
  NodeFs fs(dir.path(), "/nonexistent-proc");
  HeldFdBudget& budget = HeldFdBudget::Process();
  ScopedHeldFdBudget scoped(budget.held() + 2);
  const std::size_t held_before = budget.held();
  {
    std::vector<HeldFile> files;
    for (const std::string& n : names) files.emplace_back(dir.path() + "/" + n);
    std::string buf;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 5; ++i) {
        auto v = files[static_cast<std::size_t>(i)].Read(fs, buf);
        ASSERT_TRUE(v.ok()) << v.error().message;
        EXPECT_EQ(*v, values[static_cast<std::size_t>(i)]);  // every value read, held or not
      }
      EXPECT_EQ(budget.held(), held_before + 2);
    }
    EXPECT_TRUE(files[0].is_open());
    EXPECT_TRUE(files[1].is_open());
    EXPECT_FALSE(files[4].is_open());
    EXPECT_EQ(budget.unheld_reads(), 9u);  // 3 files x 3 rounds
    EXPECT_TRUE(budget.TakeExhaustedNotice());
    EXPECT_FALSE(budget.TakeExhaustedNotice());  // once
    // A freed slot is taken by the next read that needs one.
    files[0].Close();
    ASSERT_TRUE(files[4].Read(fs, buf).ok());
    EXPECT_TRUE(files[4].is_open());
  }
  EXPECT_EQ(budget.held(), held_before);  // destruction gives the slots back
}

}  // namespace
}  // namespace rdmahd
