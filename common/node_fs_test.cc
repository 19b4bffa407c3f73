#include "common/node_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <memory>

#include "tests/support/held_fd_budget.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::ScopedHeldFdBudget;
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
  NodeFs fs(dir.path(), "/nonexistent-proc");
  auto names = fs.ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));

  auto missing = fs.ListDir(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(dir.path() + "/nope"), std::string::npos);
  EXPECT_EQ(missing.error().errno_value, ENOENT);
}

TEST(NodeFsTest, ReadFileReadsLargeFilesWhole) {
  TempDir dir;
  std::string big(20000, 'x');
  dir.Write("big", big);
  NodeFs fs(dir.path(), "/nonexistent-proc");
  auto r = fs.ReadFile(dir.path() + "/big");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), big.size());
}

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

// The test layer sees every read (whole-file and held) and fails one as the kernel would; a held
// descriptor failed so is closed, like after any failed read, and reads again once let through.
TEST(FsFaultsTest, ReadsGoThroughTheLayerWhichCanFailThem) {
  ScopedHeldFdBudget budget(100);
  class FailState : public FsFaults {
   public:
    int BeforeRead(const std::string& path) override {
      ++reads;
      return path.ends_with("/state") ? err : 0;
    }
    int err = 0;
    int reads = 0;
  };
  auto faults = std::make_shared<FailState>();
  TempDir dir;
  dir.Write("state", "4: ACTIVE\n");
  NodeFs fs = NodeFs(dir.path(), "/nonexistent-proc").WithFaultsForTest(faults);
  EXPECT_EQ(NodeFs(dir.path(), "/nonexistent-proc").faults(), nullptr);
  HeldFile file(dir.path() + "/state");
  std::string buf;
  ASSERT_TRUE(file.Read(fs, buf).ok());
  EXPECT_TRUE(file.is_open());
  faults->err = EINVAL;
  auto failed = file.Read(fs, buf);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().errno_value, EINVAL);
  EXPECT_EQ(failed.error().message, "read " + dir.path() + "/state: Invalid argument");
  EXPECT_FALSE(file.is_open());
  auto whole = fs.ReadFile(dir.path() + "/state");
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().errno_value, EINVAL);
  faults->err = 0;
  auto again = file.Read(fs, buf);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, "4: ACTIVE\n");
  EXPECT_EQ(faults->reads, 4);
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

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Runs `read` on another thread; fails the test (and unblocks the reader by opening the FIFO for
// writing) if it has not returned within 5 s.
template <class F>
void ExpectReturnsPromptly(const std::string& fifo, F read) {
  auto done = std::async(std::launch::async, read);
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    done.wait();
    if (w >= 0) ::close(w);
    FAIL() << "a read of the FIFO " << fifo << " blocked";
  }
  done.get();
}

TEST(NodeFsTest, AFifoIsRefusedWithoutBlocking) {
  // A counter file that is a FIFO with no writer: a plain open(O_RDONLY) waits for a writer forever.
  TempDir dir;
  dir.MkDir("hw_counters");
  const std::string fifo = dir.path() + "/hw_counters/out_of_buffer";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  NodeFs fs(dir.path(), "/nonexistent-proc");
  ExpectReturnsPromptly(fifo, [&] {
    auto r = fs.ReadFile(fifo);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Has(r.error().message, fifo)) << r.error().message;
    EXPECT_TRUE(Has(r.error().message, "not a regular file (a FIFO)")) << r.error().message;
  });
  ExpectReturnsPromptly(fifo, [&] {
    HeldFile held(fifo);
    std::string buf;
    auto r = held.Read(fs, buf);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Has(r.error().message, "not a regular file")) << r.error().message;
    EXPECT_FALSE(held.is_open());
  });
  ExpectReturnsPromptly(fifo, [&] {
    HeldFiles files;
    EXPECT_FALSE(files.Read(fs, fifo).ok());
    auto r = ReadRegularFile(fifo, 100);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Has(r.error().message, "not a regular file")) << r.error().message;
  });
}

TEST(NodeFsTest, DirectoriesAndDevicesAreNotReadAsFiles) {
  TempDir dir;
  dir.MkDir("ports");
  NodeFs fs(dir.path(), "/nonexistent-proc");
  auto d = fs.ReadFile(dir.path() + "/ports");
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(Has(d.error().message, dir.path() + "/ports: not a regular file (a directory)")) << d.error().message;
  auto dev = ReadRegularFile("/dev/zero", 100);  // would never reach EOF
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(Has(dev.error().message, "/dev/zero: not a regular file (a character device)")) << dev.error().message;
}

// The refusal as data, for callers that word it their own way (the config loader).
TEST(NodeFsTest, ReadRegularFileSaysWhyItRefusedAFile) {
  TempDir dir;
  dir.MkDir("sub");
  dir.Write("big", std::string(200, 'x'));
  dir.Write("fits", std::string(100, 'x'));
  RegularFileRefusal directory;
  EXPECT_FALSE(ReadRegularFile(dir.path() + "/sub", 100, &directory).ok());
  EXPECT_STREQ(directory.not_regular, "a directory");
  EXPECT_FALSE(directory.too_large);
  RegularFileRefusal big;
  auto r = ReadRegularFile(dir.path() + "/big", 100, &big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errno_value, EFBIG);
  EXPECT_EQ(r.error().message, "read " + dir.path() + "/big: larger than 100 bytes, the cap for this file");
  EXPECT_EQ(big.too_large, 200u);  // fstat's size, refused before reading
  EXPECT_EQ(big.not_regular, nullptr);
  RegularFileRefusal missing;
  EXPECT_FALSE(ReadRegularFile(dir.path() + "/none", 100, &missing).ok());
  EXPECT_EQ(missing.not_regular, nullptr);
  EXPECT_FALSE(missing.too_large);
  RegularFileRefusal none;
  auto fits = ReadRegularFile(dir.path() + "/fits", 100, &none);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_EQ(fits->size(), 100u);
}

TEST(NodeFsTest, ReadsAreCappedAndTheErrorNamesFileAndCap) {
  TempDir dir;
  dir.Write("big", std::string(kMaxAttributeBytes + 1, 'x'));
  dir.Write("fits", std::string(kMaxAttributeBytes, 'x'));
  NodeFs fs(dir.path(), "/nonexistent-proc");
  auto big = fs.ReadFile(dir.path() + "/big");
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(Has(big.error().message, "read " + dir.path() + "/big: larger than 65536 bytes")) << big.error().message;
  EXPECT_EQ(fs.ReadFile(dir.path() + "/fits")->size(), kMaxAttributeBytes);
  // A reader of a bigger procfs file asks for more.
  EXPECT_EQ(fs.ReadFile(dir.path() + "/big", 1 << 20)->size(), kMaxAttributeBytes + 1);
  HeldFile held(dir.path() + "/big");
  std::string buf;
  auto h = held.Read(fs, buf);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(Has(h.error().message, "larger than 65536 bytes")) << h.error().message;
  EXPECT_FALSE(held.is_open());
}

// A captured tree (root/) next to a private file (outside/secret) that symlinks try to reach.
struct CapturedTree {
  TempDir dir;
  std::string root = dir.path() + "/root";
  std::string secret = dir.path() + "/outside/secret";
  CapturedTree() {
    dir.Write("outside/secret", "root:x:0:0\n");
    dir.Write("root/devices/pci/mlx5_0/fw_ver_real", "16.35.2000\n");
    dir.Write("root/devices/pci/mlx5_0/ports/1/state", "4: ACTIVE\n");
    dir.Symlink("../../devices/pci/mlx5_0", "root/class/infiniband/mlx5_0");   // relative, inside
    dir.Symlink(secret, "root/devices/pci/mlx5_0/fw_ver");                     // absolute, outside
    dir.Symlink("../../../../outside/secret", "root/devices/pci/mlx5_0/board_id");  // ".." past the root
    dir.Symlink("/devices/pci/mlx5_0/fw_ver_real", "root/devices/pci/mlx5_0/hca_type");  // absolute, as if root
    dir.Symlink(dir.path() + "/outside", "root/class/leak");                   // a folder outside
  }
};

void ExpectContainment(const CapturedTree& t, bool absolute_links_from_root) {
  NodeFs fs(t.root, "/nonexistent-proc");
  const std::string dev = t.root + "/class/infiniband/mlx5_0";
  // Relative symlinks inside the tree work, as in every real capture.
  EXPECT_EQ(*fs.ReadFile(dev + "/fw_ver_real"), "16.35.2000\n");
  EXPECT_TRUE(fs.IsDir(dev + "/ports"));
  EXPECT_EQ(*fs.ListDir(dev + "/ports"), std::vector<std::string>{"1"});
  EXPECT_EQ(*fs.ReadLink(dev), "../../devices/pci/mlx5_0");
  // Leaving the root: refused, the private file is not read, the error names path and reason.
  for (const std::string leaf : {"fw_ver", "board_id"}) {
    auto r = fs.ReadFile(dev + "/" + leaf);
    ASSERT_FALSE(r.ok()) << leaf << " read: " << *r;
    EXPECT_EQ(r.error().errno_value, EXDEV) << r.error().message;
    EXPECT_TRUE(Has(r.error().message, dev + "/" + leaf + ": resolves outside the root " + t.root))
        << r.error().message;
    HeldFile held(dev + "/" + leaf);
    std::string buf;
    auto h = held.Read(fs, buf);
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().errno_value, EXDEV);
    EXPECT_FALSE(fs.Exists(dev + "/" + leaf));
  }
  // ".." in the path itself stops at the root.
  auto up = fs.ReadFile(t.root + "/../outside/secret");
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.error().errno_value, EXDEV);
  // Listings and existence checks are contained too.
  auto leak = fs.ListDir(t.root + "/class/leak");
  ASSERT_FALSE(leak.ok());
  EXPECT_TRUE(Has(leak.error().message, "resolves outside the root")) << leak.error().message;
  EXPECT_FALSE(fs.IsDir(t.root + "/class/leak"));
  EXPECT_FALSE(fs.Exists(t.root + "/class/leak/secret"));
  // An absolute symlink is resolved from the root (openat2), as the captured node saw it.
  auto abs = fs.ReadFile(dev + "/hca_type");
  if (absolute_links_from_root) {
    ASSERT_TRUE(abs.ok()) << abs.error().message;
    EXPECT_EQ(*abs, "16.35.2000\n");
  } else {
    EXPECT_FALSE(abs.ok());
  }
}

TEST(NodeFsContainmentTest, CapturedTreeReadsStayInsideTheRoot) {
  CapturedTree t;
  ExpectContainment(t, /*absolute_links_from_root=*/true);
}

TEST(NodeFsContainmentTest, KernelsWithoutOpenat2GetTheUserSpaceCheck) {
  CapturedTree t;
  NodeFs::SetOpenat2UnavailableForTest(true);
  ExpectContainment(t, /*absolute_links_from_root=*/false);
  NodeFs::SetOpenat2UnavailableForTest(false);
}

TEST(NodeFsContainmentTest, LiveRootsAndPathsUnderNoRootAreReadDirectly) {
  CapturedTree t;
  // The live /sys is the kernel's own tree: no containment (and no cost for it).
  NodeFs live("/sys", "/proc");
  auto r = live.ReadFile(t.root + "/devices/pci/mlx5_0/fw_ver");  // under no root: read as asked
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "root:x:0:0\n");
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

namespace rdmahd {
namespace {

// --path.dev's default never points a captured tree at the analysing machine's /dev.
TEST(NodeFsDevRootTest, DefaultIsLiveDevOrInsideTheCapture) {
  EXPECT_EQ(NodeFs::DefaultDevRoot("/sys"), "/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("/sys/"), "/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("/captures/node7/sys"), "/captures/node7/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("/captures/node7/sys/"), "/captures/node7/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("/nonexistent"), "/nonexistent/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("tree"), "tree/dev");
  EXPECT_EQ(NodeFs::DefaultDevRoot("sys"), "dev");
  EXPECT_EQ(NodeFs("/captures/node7/sys", "/proc").dev_root(), "/captures/node7/dev");
  EXPECT_EQ(NodeFs("/captures/node7/sys", "/proc", "", "/srv/dev/").dev_root(), "/srv/dev");
  EXPECT_EQ(NodeFs("/sys", "/proc").Dev("infiniband/rdma_cm"), "/dev/infiniband/rdma_cm");
}

}  // namespace
}  // namespace rdmahd
