#include "daemon/daemon.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::TempDir;

// One RoCE-less RDMA port with one hw counter, and an empty DCB capture folder so the build
// machine's netlink never answers.
Daemon MakeDaemon(const TempDir& dir, std::chrono::milliseconds cache_window) {
  dir.Write("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  dir.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "1785\n");
  dir.Write("dcb/.keep", "");
  Options options;
  options.sysfs = dir.path() + "/sys";
  options.procfs = dir.path() + "/proc";
  options.dcb_dir = dir.path() + "/dcb";
  auto config = std::make_shared<Config>();
  config->scrape_cache_window = cache_window;
  return Daemon(options, config);
}

constexpr const char* kSeries =
    "rdma_port_hw_counters_total{device=\"mlx5_0\",port=\"1\",counter=\"out_of_buffer\"} ";

TEST(DaemonMetricsTest, ScrapesWithinTheCacheWindowShareOneText) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::shared_ptr<const std::string> first = daemon.Metrics();
  std::shared_ptr<const std::string> second = daemon.Metrics();
  EXPECT_EQ(first.get(), second.get());
  EXPECT_NE(first->find(std::string(kSeries) + "1785\n"), std::string::npos) << *first;
}

TEST(DaemonMetricsTest, ATextStillHeldIsNeverWrittenOver) {
  // A scrape still sending its text while the next collection renders: the new text must go to a
  // new buffer. Once nobody holds the old one, its buffer is reused.
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(0));
  std::shared_ptr<const std::string> held = daemon.Metrics();
  const std::string copy = *held;

  dir.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "7\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::shared_ptr<const std::string> fresh = daemon.Metrics();
  EXPECT_NE(fresh.get(), held.get());
  EXPECT_EQ(*held, copy);
  EXPECT_NE(fresh->find(std::string(kSeries) + "7\n"), std::string::npos) << *fresh;

  const std::string* fresh_address = fresh.get();
  held.reset();
  fresh.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::shared_ptr<const std::string> next = daemon.Metrics();
  EXPECT_EQ(next.get(), fresh_address);  // nobody held it: rendered into the same buffer
  EXPECT_NE(next->find(std::string(kSeries) + "7\n"), std::string::npos);
}

}  // namespace
}  // namespace rdmahd
