#include "common/node_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <memory>

#include "common/held_files.h"
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
